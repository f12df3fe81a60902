/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/jwt.h"

#include <stdlib.h>
#include <string.h>

#include "util/b64url.h"

int jwt_split(const char *token, size_t len, struct jwt_parts *parts)
{
    const char *start[3], *end = token + len;
    const char *dot1, *dot2;
    size_t n[3], size = 0;
    unsigned char *out;

    memset(parts, 0, sizeof(*parts));
    /* Exactly two dots: the third search must find none. */
    if ((dot1 = memchr(token, '.', len)) == NULL || (dot2 = memchr(dot1 + 1, '.', (size_t)(end - dot1 - 1))) == NULL ||
        memchr(dot2 + 1, '.', (size_t)(end - dot2 - 1)) != NULL)
        return -1;
    start[0] = token;
    start[1] = dot1 + 1;
    start[2] = dot2 + 1;
    n[0] = (size_t)(dot1 - token);
    n[1] = (size_t)(dot2 - start[1]);
    n[2] = (size_t)(end - start[2]);
    /* One buffer for the three segments; +1 each: even an empty segment
     * gets a distinct, non-NULL place. */
    for (int i = 0; i < 3; i++)
        size += B64URL_DECODED_MAX(n[i]) + 1;
    if ((out = malloc(size)) == NULL)
        return -2;
    for (int i = 0; i < 3; i++) {
        parts->seg[i] = out;
        if (b64url_decode(start[i], n[i], out, &parts->seglen[i]) != 0) {
            jwt_parts_clear(parts);
            return -2;
        }
        out += B64URL_DECODED_MAX(n[i]) + 1;
    }
    parts->signing_input = token;
    parts->signing_input_len = n[0] + 1 + n[1];
    return 0;
}

void jwt_parts_clear(struct jwt_parts *parts)
{
    free(parts->seg[0]); /* the one buffer of all three */
    memset(parts, 0, sizeof(*parts));
}

/* The fixed bytes of the compact header around its two values. */
#define JWT_COMPACT_OPEN "{\"alg\":\""
#define JWT_COMPACT_MID  "\",\"kid\":\""
#define JWT_COMPACT_END  "\"}"
#define JWT_COMPACT_LEN                                                                                                \
    (sizeof(JWT_COMPACT_OPEN) - 1 + JWT_COMPACT_ALG_LEN + sizeof(JWT_COMPACT_MID) - 1 + JWT_COMPACT_KID_LEN +          \
     sizeof(JWT_COMPACT_END) - 1)

/* 1 when the len bytes of s are all ASCII letters or digits, plus '-' and
 * '_' when b64url: characters that stand for themselves inside a JSON
 * string (no quote, backslash, control character or multi-byte UTF-8). */
static int jwt_plain_chars(const unsigned char *s, size_t len, int b64url)
{
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              (b64url && (s[i] == '-' || s[i] == '_'))))
            return 0;
    return 1;
}

/* A string member of the compact header's root, its text copied out. */
static void jwt_compact_member(struct json_value *v, const char *name, char *str, const unsigned char *text, size_t len)
{
    memset(v, 0, sizeof(*v));
    v->type = JSON_STRING;
    v->name = (char *)name; /* static; the tree is read-only to its users */
    v->str = str;
    memcpy(str, text, len);
    str[len] = '\0';
}

/* Why this returns exactly what json_parse would: the input is one JSON
 * object with two members whose names ("alg", "kid") differ, at depth 1,
 * with nothing after it; both values are strings of characters that need
 * no escaping and are not U+0000, so each decodes to itself. No other
 * member (crit, jku, x5u, jwk, x5c, a duplicate) can be present, so every
 * check on the tree decides as it would on json_parse's. Anything else
 * (whitespace, another order, an escape, another member) misses here and
 * takes the strict parser. */
const struct json_value *jwt_parse_compact_header(const unsigned char *json, size_t len, struct jwt_compact_header *h)
{
    const unsigned char *alg, *mid, *kid, *end;

    if (len != JWT_COMPACT_LEN)
        return NULL;
    alg = json + sizeof(JWT_COMPACT_OPEN) - 1;
    mid = alg + JWT_COMPACT_ALG_LEN;
    kid = mid + sizeof(JWT_COMPACT_MID) - 1;
    end = kid + JWT_COMPACT_KID_LEN;
    if (memcmp(json, JWT_COMPACT_OPEN, sizeof(JWT_COMPACT_OPEN) - 1) != 0 ||
        memcmp(mid, JWT_COMPACT_MID, sizeof(JWT_COMPACT_MID) - 1) != 0 ||
        memcmp(end, JWT_COMPACT_END, sizeof(JWT_COMPACT_END) - 1) != 0 ||
        !jwt_plain_chars(alg, JWT_COMPACT_ALG_LEN, 0) || !jwt_plain_chars(kid, JWT_COMPACT_KID_LEN, 1))
        return NULL;
    memset(&h->root, 0, sizeof(h->root));
    h->root.type = JSON_OBJECT;
    jwt_compact_member(&h->alg, "alg", h->alg_str, alg, JWT_COMPACT_ALG_LEN);
    jwt_compact_member(&h->kid, "kid", h->kid_str, kid, JWT_COMPACT_KID_LEN);
    h->root.child = &h->alg;
    h->alg.next = h->root.last = &h->kid;
    return &h->root;
}

