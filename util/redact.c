/* SPDX-License-Identifier: Apache-2.0 */
#include "util/redact.h"

#include <string.h>

#define REDACTED "<redacted>"

/* The longest query parameter name shown; a longer one could be a secret
 * passed without a value. */
#define REDACT_NAME_MAX 32

/* A URL cut where its secrets may be: each part is a pointer into the URL
 * and a length, the pointer NULL when the URL has no such part. */
struct redact_parts {
    const char *head; /* "scheme://" (or nothing for a URL without one) */
    size_t head_len;
    const char *userinfo; /* before the "@" */
    size_t userinfo_len;
    const char *rest; /* host, port and path */
    size_t rest_len;
    const char *query; /* after the "?" */
    size_t query_len;
    const char *fragment; /* after the "#" */
};

/* Splits url as RFC 3986 does: the authority (and its userinfo) only
 * after a scheme's "://", the fragment at the first "#", the query at the
 * first "?" before it. */
static void redact_split(const char *url, struct redact_parts *p)
{
    const char *scheme_end = strstr(url, "://");
    const char *rest = url, *end;

    memset(p, 0, sizeof(*p));
    p->head = url;
    if (scheme_end != NULL && strcspn(url, "/?#@") == (size_t)(scheme_end - url) + 1) {
        const char *at;
        rest = scheme_end + 3;
        p->head_len = (size_t)(rest - url);
        if ((at = memchr(rest, '@', strcspn(rest, "/?#"))) != NULL) {
            p->userinfo = rest;
            p->userinfo_len = (size_t)(at - rest);
            rest = at + 1;
        }
    }
    end = rest + strcspn(rest, "#");
    if (*end == '#')
        p->fragment = end + 1;
    p->rest = rest;
    p->rest_len = strcspn(rest, "?#");
    if (rest[p->rest_len] == '?') {
        p->query = rest + p->rest_len + 1;
        p->query_len = (size_t)(end - p->query);
    }
}

/* Where the bytes of a shown URL go: at most max of them, each outside
 * printable ASCII as '?', as printable_copy writes. */
struct redact_out {
    char *p;
    size_t len, max;
    int cut;
};

static void redact_put(struct redact_out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (o->len == o->max) {
            o->cut = 1;
            return;
        }
        o->p[o->len++] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
    }
}

static void redact_puts(struct redact_out *o, const char *s)
{
    redact_put(o, s, strlen(s));
}

/* The length of the name a query parameter (n bytes) may be shown by: it
 * is short, made of the characters parameter names use, and followed by
 * "=". 0 otherwise: a part without "=" may be a bare token. */
static size_t redact_name_len(const char *part, size_t n)
{
    size_t name = 0;

    while (name < n && name <= REDACT_NAME_MAX &&
           strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.", part[name]) != NULL)
        name++;
    return name > 0 && name <= REDACT_NAME_MAX && name < n && part[name] == '=' ? name : 0;
}

/* Writes "?<redacted: NAME, NAME, *>" for the query q (n bytes). */
static void redact_query(struct redact_out *o, const char *q, size_t n)
{
    const char *end = q + n;
    int first = 1;

    redact_puts(o, "?<redacted");
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        size_t part = amp != NULL ? (size_t)(amp - q) : (size_t)(end - q);
        size_t name = redact_name_len(q, part);

        if (part > 0) {
            redact_puts(o, first ? ": " : ", ");
            redact_put(o, name > 0 ? q : "*", name > 0 ? name : 1);
            first = 0;
        }
        q += part + (amp != NULL);
    }
    redact_puts(o, ">");
}

const char *redact_url(const char *url, char *out, size_t max)
{
    struct redact_out o = {.p = out, .max = max};
    struct redact_parts p;

    redact_split(url, &p);
    redact_put(&o, p.head, p.head_len);
    if (p.userinfo != NULL)
        redact_puts(&o, REDACTED "@");
    redact_put(&o, p.rest, p.rest_len);
    if (p.query != NULL)
        redact_query(&o, p.query, p.query_len);
    if (p.fragment != NULL)
        redact_puts(&o, "#" REDACTED);
    strcpy(out + o.len, o.cut ? "..." : "");
    return out;
}

/* Replaces every occurrence in s of the n bytes at secret with REDACTED. */
static void redact_secret_in(char *s, const char *secret, size_t n)
{
    char *hit;

    if (secret == NULL || n < REDACT_SECRET_MIN)
        return;
    while ((hit = memmem(s, strlen(s), secret, n)) != NULL) {
        memcpy(hit, REDACTED, strlen(REDACTED));
        memmove(hit + strlen(REDACTED), hit + n, strlen(hit + n) + 1);
        s = hit + strlen(REDACTED);
    }
}

void redact_url_parts_in(char *s, const char *url)
{
    struct redact_parts p;

    redact_split(url, &p);
    redact_secret_in(s, p.userinfo, p.userinfo_len);
    redact_secret_in(s, p.query, p.query_len);
    redact_secret_in(s, p.fragment, p.fragment ? strlen(p.fragment) : 0);
}
