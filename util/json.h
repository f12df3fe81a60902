/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json: the project's strict JSON reader. It parses a whole document into a
 * small owned tree, strictly: no duplicate member at any level, nesting at
 * most JSON_MAX_DEPTH, no trailing bytes, no string holding U+0000, and the
 * top level must be an object. Tokens, TokenReview bodies, JWKS documents,
 * the retention state and the config file all go through it, so untrusted
 * JSON is read one way everywhere.
 */
#ifndef OIDC_JSON_H
#define OIDC_JSON_H

#include <stddef.h>
#include <stdint.h>

/* Containers nested deeper than this are refused (the trees are freed
 * without recursion, but their readers recurse). */
#define JSON_MAX_DEPTH 32

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

/* One JSON value. Containers keep their children as a list in input order. */
struct json_value {
    enum json_type type;
    char *name;                      /* member name when the parent is an object, else NULL */
    char *str;                       /* JSON_STRING: NUL-terminated, no embedded NUL; JSON_NUMBER: its text,
                                        or NULL for an integer of at most 15 digits (num is exact) */
    double num;                      /* JSON_NUMBER (may be +-inf when out of range) */
    int boolean;                     /* JSON_BOOL */
    struct json_value *child, *last; /* containers: first and last child */
    struct json_value *next;         /* next sibling */
};

/* Parses len bytes of JSON into a tree, all of it in memory owned by the
 * root. Returns the root (an object), or NULL with the reason in err. */
struct json_value *json_parse(const unsigned char *json, size_t len, char *err, size_t errlen);

/* json_parse, which on failure also writes to *stop the offset of the
 * byte where the parse stopped (the end of the input when it ended early),
 * for messages that point into a file. */
struct json_value *json_parse_at(const unsigned char *json, size_t len, size_t *stop, char *err, size_t errlen);

/* The member called name of object obj, or NULL (also when obj is NULL or
 * not an object), so that lookups can be chained. */
const struct json_value *json_get(const struct json_value *obj, const char *name);

/* The string member called name of obj, or NULL when it is absent or of
 * another type (obj may be NULL too): what a reader of a document that may
 * be wrong looks a string up with. */
const char *json_get_str(const struct json_value *obj, const char *name);

/* Whether v (which may be NULL) is a whole number in [min, max], both
 * exactly representable as doubles; 0 with it in *out, or -1. The double
 * is compared before any conversion, which could overflow. For the
 * numbers of this program's own state files. */
int json_whole(const struct json_value *v, int64_t min, int64_t max, int64_t *out);

/* Frees the whole tree of a root json_parse returned (only a root); NULL is
 * a no-op. */
void json_free(struct json_value *root);

#endif
