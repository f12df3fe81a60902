/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strbuf: a growable buffer for documents written piece by piece
 * (/metrics, the status page, util/jsonw's JSON) and for the external
 * signer's outgoing HTTP/2 bytes. An allocation failure is remembered, later
 * appends do nothing, and strbuf_finish reports it once, so writers need
 * no error check per line.
 */
#ifndef OIDC_STRBUF_H
#define OIDC_STRBUF_H

#include <stddef.h>

struct strbuf {
    char *p;
    size_t len, cap;
    int failed;
};

/* Appends n bytes of s. */
void strbuf_add(struct strbuf *b, const char *s, size_t n);

/* Appends the NUL-terminated s. */
void strbuf_puts(struct strbuf *b, const char *s);

/* Appends printf-formatted text. */
void strbuf_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The text written (malloc'ed, NUL-terminated; the caller frees it) and
 * its length, or NULL when an allocation failed. b is empty again. */
char *strbuf_finish(struct strbuf *b, size_t *len);

#endif
