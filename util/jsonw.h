/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonw: a tiny append-only JSON writer whose string escaping matches Go's
 * encoding/json, which is what kube-apiserver uses. yajl's generator escapes
 * differently (it leaves '&', '<' and '>' alone, which Go writes as \u0026,
 * \u003c and \u003e), and the published bytes must be identical, so the
 * documents are written with this instead. Reading is util/json.h.
 */
#ifndef OIDC_JSONW_H
#define OIDC_JSONW_H

#include <stddef.h>

#include "util/strbuf.h"

/* The text is a strbuf's: an allocation failure is remembered (sb.failed)
 * and later calls do nothing. */
struct jsonw {
    struct strbuf sb;
};

/* Appends n raw bytes (punctuation, pre-rendered JSON). */
void jsonw_raw(struct jsonw *w, const char *s, size_t n);

/* Appends a NUL-terminated literal. */
void jsonw_lit(struct jsonw *w, const char *s);

/* Appends s as a quoted JSON string escaped exactly as Go does, invalid
 * UTF-8 included. */
void jsonw_str(struct jsonw *w, const char *s);

/* jsonw_str, or null when s is NULL: a member that may be absent. */
void jsonw_str_or_null(struct jsonw *w, const char *s);

/* The same for the n bytes at s, which need not be NUL-terminated; a NUL
 * among them is written as \u0000. */
void jsonw_strn(struct jsonw *w, const char *s, size_t n);

/* Appends "name": with the name quoted and escaped. */
void jsonw_key(struct jsonw *w, const char *name);

/* Hands the NUL-terminated buffer to the caller (free() it). Returns 0, or -1
 * when an allocation failed (the buffer is freed then). */
int jsonw_finish(struct jsonw *w, char **out, size_t *len);

#endif
