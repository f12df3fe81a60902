/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sync: one push of a key set's two documents to one target, in the safe
 * order: the JWKS first, the discovery document only once the JWKS holds
 * our bytes, so that a relying party never finds a discovery document (or
 * a key's algorithm in it) ahead of the keys. Each object is read, decided
 * on (plan.h), written only under the condition that it is still what was
 * read (If-Match on its ETag, or If-None-Match: * when there was none),
 * and read back to compare bytes and headers. The same call is the drift
 * check: with nothing changed, it only reads.
 *
 * No threads, clocks or HTTP of its own: the store's ops do the I/O.
 */
#ifndef OIDC_PUSH_SYNC_H
#define OIDC_PUSH_SYNC_H

#include <stddef.h>

#include "publish/snapshot.h"
#include "push/plan.h"
#include "push/store.h"

/* The objects of a target, in the order they are pushed. */
#define PUSH_NOBJECTS 2

/* What happened to one object. */
enum push_action {
    PUSH_ACT_NONE,      /* not reached (an earlier object failed or yielded) */
    PUSH_ACT_UNCHANGED, /* it held our bytes */
    PUSH_ACT_WRITTEN,   /* written and read back */
    PUSH_ACT_YIELDED,   /* a newer key set was there */
    PUSH_ACT_FAILED,
};

/* The documents of one snapshot, in push order (JWKS first). */
struct push_docs {
    const char *keys[PUSH_NOBJECTS];
    struct push_local docs[PUSH_NOBJECTS];
    char generation[PUSH_GEN_MAX];
    char sha256[PUSH_NOBJECTS][PUSH_SHA_HEX];
};

struct push_report {
    enum push_outcome outcome;
    enum push_action actions[PUSH_NOBJECTS];
    const char *why[PUSH_NOBJECTS];       /* a written or yielded object's reason (plan.h) */
    char remote_generation[PUSH_GEN_MAX]; /* when yielded: the newer set's */
    unsigned written;                     /* objects written */
    char err[768];                        /* when failed */
};

/* The documents of s with its headers, hashes and the generation gen_ms
 * (plan.h); d points into s, which must outlive it. */
void push_docs_init(struct push_docs *d, const struct snapshot *s, int64_t gen_ms);

/* A write that meets a change between its read and its write is read
 * and decided on again, this many times in all. */
#define PUSH_CONFLICT_TRIES 3

/* Pushes docs through ops (store is their state) and fills *rep. */
void push_sync(const struct push_store_ops *ops, void *store, const struct push_docs *docs, struct push_report *rep);

/* What a target holds of one document, read only (for keys). */
enum push_seen { PUSH_SEEN_CURRENT, PUSH_SEEN_MISSING, PUSH_SEEN_DIFFERS, PUSH_SEEN_NEWER, PUSH_SEEN_ERROR };

struct push_inspection {
    enum push_seen seen;
    const char *why;               /* PUSH_SEEN_DIFFERS: what differs (plan.h) */
    char generation[PUSH_GEN_MAX]; /* the object's generation metadata, or "" */
    char last_modified[40];        /* as the store said, or "" */
    char err[768];                 /* PUSH_SEEN_ERROR */
};

/* Reads each document from the target and says how it compares with docs,
 * writing nothing. */
void push_inspect(const struct push_store_ops *ops, void *store, const struct push_docs *docs,
                  struct push_inspection out[PUSH_NOBJECTS]);

/* "current", "missing", "differs", "newer" or "error". */
const char *push_seen_name(enum push_seen s);

#endif
