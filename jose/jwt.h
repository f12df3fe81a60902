/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jwt: the untrusted-input half of token verification. Splits a compact JWS
 * into its three segments and decodes them; the JSON of the header and the
 * payload is read by the strict reader (util/json.h), with a fast path for
 * the one header form kube-apiserver writes. Nothing here knows what the
 * members mean; token.c does.
 */
#ifndef OIDC_JWT_H
#define OIDC_JWT_H

#include <stddef.h>

#include "util/json.h"

/* The three segments of a compact JWS, base64url-decoded, in one owned
 * buffer that starts at seg[0]. The signing input (header "." payload, as
 * sent) points into the token. */
struct jwt_parts {
    unsigned char *seg[3]; /* header, payload, signature */
    size_t seglen[3];
    const char *signing_input;
    size_t signing_input_len;
};

/* Splits token at its dots and decodes each segment. Returns 0, -1 when
 * there are not exactly three segments, -2 when a segment is not strict
 * base64url or memory ran out (parts is left empty then). */
int jwt_split(const char *token, size_t len, struct jwt_parts *parts);

void jwt_parts_clear(struct jwt_parts *parts);

/* The exact header kube-apiserver writes: {"alg":"<5 letters or
 * digits>","kid":"<43 base64url characters>"}, byte for byte. */
#define JWT_COMPACT_ALG_LEN 5
#define JWT_COMPACT_KID_LEN 43

/* The tree of a compact header, held by the caller (no allocation). */
struct jwt_compact_header {
    struct json_value root, alg, kid;
    char alg_str[JWT_COMPACT_ALG_LEN + 1], kid_str[JWT_COMPACT_KID_LEN + 1];
};

/* When json is exactly the compact header form, fills h with the tree
 * json_parse would build for it and returns its root (never to be passed to
 * json_free); otherwise NULL, and json must go through json_parse. */
const struct json_value *jwt_parse_compact_header(const unsigned char *json, size_t len, struct jwt_compact_header *h);

#endif
