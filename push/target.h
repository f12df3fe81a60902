/* SPDX-License-Identifier: Apache-2.0 */
/*
 * target: one --publish-to (or publish --to) URL, opened as the store it
 * names (s3.h or azblob.h) with the credentials that store takes.
 */
#ifndef OIDC_PUSH_TARGET_H
#define OIDC_PUSH_TARGET_H

#include <stdatomic.h>
#include <stddef.h>

#include "config/config.h"
#include "push/store.h"

/* How much of a target URL messages show (redact_url's max). */
#define PUSH_TARGET_SHOWN_MAX 296

struct push_target {
    char *url; /* as redact_url shows it, for logs, metrics and reports */
    const struct push_store_ops *ops;
    void *store;
    void (*close)(void *store);
};

/* Opens url (already checked by config) for cfg's store flags; a request
 * stops when *cancel turns non-zero (cancel may be NULL). Returns 0, or -1
 * with "URL: reason" in err (credentials missing, out of memory). */
int push_target_open(const struct config *cfg, const char *url, const atomic_int *cancel, struct push_target *t,
                     char *err, size_t errlen);

/* Frees what the target holds; a zeroed target is fine. */
void push_target_close(struct push_target *t);

#endif
