/*
 * jwt: the untrusted-input half of token verification. Splits a compact JWS
 * into its three segments, decodes them, and parses the JSON of the header
 * and the payload into a small owned tree, strictly: no duplicate member at
 * any level, nesting at most TOKEN_MAX_DEPTH, no trailing bytes, no string
 * holding U+0000, and the top level must be an object (the parser is
 * util/json.c). Nothing here knows what the members mean; token.c does.
 */
#ifndef OIDC_JWT_H
#define OIDC_JWT_H

#include <stddef.h>

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

enum jwt_type { JWT_NULL, JWT_BOOL, JWT_NUMBER, JWT_STRING, JWT_ARRAY, JWT_OBJECT };

/* One JSON value. Containers keep their children as a list in input order. */
struct jwt_value {
    enum jwt_type type;
    char *name;                     /* member name when the parent is an object, else NULL */
    char *str;                      /* JWT_STRING: NUL-terminated, no embedded NUL */
    double num;                     /* JWT_NUMBER (may be +-inf when out of range) */
    int boolean;                    /* JWT_BOOL */
    struct jwt_value *child, *last; /* containers: first and last child */
    struct jwt_value *next;         /* next sibling */
};

/* Parses len bytes of JSON into a tree, all of it in memory owned by the
 * root. Returns the root (an object), or NULL with the reason in err. */
struct jwt_value *jwt_parse(const unsigned char *json, size_t len, char *err, size_t errlen);

/* The member called name of object obj, or NULL (also when obj is NULL or
 * not an object), so that lookups can be chained. */
const struct jwt_value *jwt_get(const struct jwt_value *obj, const char *name);

/* The exact header kube-apiserver writes: {"alg":"<5 letters or
 * digits>","kid":"<43 base64url characters>"}, byte for byte. */
#define JWT_COMPACT_ALG_LEN 5
#define JWT_COMPACT_KID_LEN 43

/* The tree of a compact header, held by the caller (no allocation). */
struct jwt_compact_header {
    struct jwt_value root, alg, kid;
    char alg_str[JWT_COMPACT_ALG_LEN + 1], kid_str[JWT_COMPACT_KID_LEN + 1];
};

/* When json is exactly the compact header form, fills h with the tree
 * jwt_parse would build for it and returns its root (never to be passed to
 * jwt_value_free); otherwise NULL, and json must go through jwt_parse. */
const struct jwt_value *jwt_parse_compact_header(const unsigned char *json, size_t len, struct jwt_compact_header *h);

/* Frees the whole tree of a root jwt_parse returned (only a root); NULL is
 * a no-op. */
void jwt_value_free(struct jwt_value *root);

#endif
