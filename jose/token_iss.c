/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/token_iss.h"

#include <string.h>

#include "util/b64url.h"

/* The end of the JSON string starting after its opening quote at s (the
 * closing quote), or NULL. */
static const unsigned char *string_end(const unsigned char *s, const unsigned char *end)
{
    for (; s < end; s++) {
        if (*s == '\\')
            s++;
        else if (*s == '"')
            return s;
    }
    return NULL;
}

static const unsigned char *skip_blank(const unsigned char *s, const unsigned char *end)
{
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
        s++;
    return s;
}

/* Copies the JSON string s..e (without quotes) into out, unescaping \/,
 * \\ and \". Returns its length, or -1. */
static long copy_string(const unsigned char *s, const unsigned char *e, char *out, size_t cap)
{
    size_t n = 0;

    for (; s < e; s++) {
        if (*s == '\\' && (++s >= e || (*s != '/' && *s != '\\' && *s != '"')))
            return -1;
        if (n + 1 >= cap)
            return -1;
        out[n++] = (char)*s;
    }
    out[n] = '\0';
    return (long)n;
}

/* Finds the top-level member "iss" of the object json..end: a member name
 * is a string at depth 1 that follows '{' or ','. Strings are skipped
 * whole so that brackets inside them do not count. */
static long find_iss(const unsigned char *s, const unsigned char *end, char *out, size_t cap)
{
    int depth = 0, want_name = 0;

    s = skip_blank(s, end);
    if (s >= end || *s != '{')
        return -1;
    for (; s < end; s++) {
        const unsigned char *e, *v;
        switch (*s) {
        case '{':
        case '[':
            want_name = ++depth == 1 && *s == '{';
            break;
        case '}':
        case ']':
            if (--depth <= 0)
                return -1;
            break;
        case ',':
            want_name = depth == 1;
            break;
        case '"':
            if ((e = string_end(s + 1, end)) == NULL)
                return -1;
            if (want_name && e - s - 1 == 3 && memcmp(s + 1, "iss", 3) == 0) {
                v = skip_blank(e + 1, end);
                if (v >= end || *v != ':' || (v = skip_blank(v + 1, end)) >= end || *v != '"' ||
                    (e = string_end(v + 1, end)) == NULL)
                    return -1;
                return copy_string(v + 1, e, out, cap);
            }
            want_name = 0;
            s = e;
            break;
        default:
            break;
        }
    }
    return -1;
}

long token_iss_peek(const char *token, size_t len, char *iss, size_t cap)
{
    unsigned char json[TOKEN_ISS_PAYLOAD_MAX];
    const char *p = memchr(token, '.', len), *q;
    size_t n;

    if (p == NULL || (q = memchr(p + 1, '.', len - (size_t)(p + 1 - token))) == NULL)
        return -1;
    p++;
    if (B64URL_DECODED_MAX((size_t)(q - p)) > sizeof(json) || b64url_decode(p, (size_t)(q - p), json, &n) != 0)
        return -1;
    return find_iss(json, json + n, iss, cap);
}
