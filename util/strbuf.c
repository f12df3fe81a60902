/* SPDX-License-Identifier: Apache-2.0 */
#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grows *p, an allocation of *cap bytes, to hold at least need bytes,
 * doubling (from 256) so that appending stays amortised O(1). Returns 0,
 * or -1 with *p unchanged. */
static int strbuf_grow(char **p, size_t *cap, size_t need)
{
    size_t n = *cap ? *cap : 256;
    char *q;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    if ((q = realloc(*p, n)) == NULL)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Room for extra more bytes and a NUL. */
static int strbuf_reserve(struct strbuf *b, size_t extra)
{
    if (!b->failed && strbuf_grow(&b->p, &b->cap, b->len + extra + 1) != 0)
        b->failed = 1;
    return b->failed ? -1 : 0;
}

void strbuf_add(struct strbuf *b, const char *s, size_t n)
{
    if (strbuf_reserve(b, n) != 0)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void strbuf_puts(struct strbuf *b, const char *s)
{
    strbuf_add(b, s, strlen(s));
}

void strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if (strbuf_reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *strbuf_finish(struct strbuf *b, size_t *len)
{
    char *p = b->p;

    if (b->failed || (p == NULL && (p = calloc(1, 1)) == NULL)) {
        free(b->p);
        p = NULL;
    } else {
        *len = b->len;
    }
    memset(b, 0, sizeof(*b));
    return p;
}
