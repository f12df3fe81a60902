#include "jwt.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "b64url.h"
#include "token.h"

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

/* The memory of one tree: its values and strings are carved from chunks
 * that are freed all at once, so that a parse costs a malloc or two rather
 * than one per value and string. The root is the first value of the first
 * chunk, which is how jwt_value_free finds the chunks. */
struct jwt_chunk {
    struct jwt_chunk *next;
    size_t size, used; /* bytes of data */
    max_align_t data[];
};

#define JWT_ALIGN       _Alignof(struct jwt_value)
#define JWT_CHUNK_FIRST (64 * 1024) /* cap of the first chunk, sized from the input */

/* State of one parse: the chunks, the open containers and the member name
 * waiting for its value. */
struct jwt_parser {
    struct jwt_chunk *first, *last;
    struct jwt_value *root;
    struct jwt_value *open[TOKEN_MAX_DEPTH];
    int depth;
    char *name;
    const char *error; /* why a callback stopped the parse */
};

static struct jwt_chunk *jwt_chunk_new(size_t size)
{
    struct jwt_chunk *c = malloc(sizeof(*c) + size);

    if (c != NULL) {
        c->next = NULL;
        c->size = size;
        c->used = 0;
    }
    return c;
}

static void jwt_chunks_free(struct jwt_chunk *c)
{
    while (c != NULL) {
        struct jwt_chunk *next = c->next;
        free(c);
        c = next;
    }
}

/* size bytes from the parse's chunks, aligned for any value, or NULL; a
 * full chunk is followed by one twice its size (or as big as needed). */
static void *jwt_alloc(struct jwt_parser *p, size_t size)
{
    struct jwt_chunk *c = p->last;
    void *mem;

    if (size > SIZE_MAX / 4)
        return NULL;
    size = (size + JWT_ALIGN - 1) / JWT_ALIGN * JWT_ALIGN;
    if (c->size - c->used < size) {
        struct jwt_chunk *next = jwt_chunk_new(c->size > SIZE_MAX / 4 ? size : 2 * c->size + size);
        if (next == NULL)
            return NULL;
        c = p->last = c->next = next;
    }
    mem = (char *)c->data + c->used;
    c->used += size;
    return mem;
}

/* Stops the parse with a reason (yajl callbacks return 0 to cancel). */
static int jwt_stop(struct jwt_parser *p, const char *why)
{
    p->error = why;
    return 0;
}

/* Creates a value of type t where the parser is: the root, the next element
 * of the open array, or the value of the pending member. NULL (with
 * p->error) when it cannot be placed. */
static struct jwt_value *jwt_add(struct jwt_parser *p, enum jwt_type t)
{
    struct jwt_value *v, *parent;

    if (p->depth == 0 && t != JWT_OBJECT) {
        jwt_stop(p, "the top level is not a JSON object");
        return NULL;
    }
    if (p->depth == 0) {
        v = p->root; /* reserved by jwt_parse */
    } else if ((v = jwt_alloc(p, sizeof(*v))) == NULL) {
        jwt_stop(p, "out of memory");
        return NULL;
    }
    memset(v, 0, sizeof(*v));
    v->type = t;
    if (p->depth == 0)
        return v;
    parent = p->open[p->depth - 1];
    if (parent->type == JWT_OBJECT) {
        v->name = p->name;
        p->name = NULL;
    }
    if (parent->last)
        parent->last->next = v;
    else
        parent->child = v;
    parent->last = v;
    return v;
}

/* Adds a container and makes it the innermost open one. */
static int jwt_open(struct jwt_parser *p, enum jwt_type t)
{
    struct jwt_value *v;

    if (p->depth == TOKEN_MAX_DEPTH)
        return jwt_stop(p, "JSON nested too deeply");
    if ((v = jwt_add(p, t)) == NULL)
        return 0;
    p->open[p->depth++] = v;
    return 1;
}

static int jwt_on_start_map(void *ctx)
{
    return jwt_open(ctx, JWT_OBJECT);
}

static int jwt_on_start_array(void *ctx)
{
    return jwt_open(ctx, JWT_ARRAY);
}

static int jwt_on_end(void *ctx)
{
    struct jwt_parser *p = ctx;

    p->depth--;
    return 1;
}

static int jwt_on_null(void *ctx)
{
    return jwt_add(ctx, JWT_NULL) != NULL;
}

static int jwt_on_boolean(void *ctx, int b)
{
    struct jwt_value *v = jwt_add(ctx, JWT_BOOL);

    if (v != NULL)
        v->boolean = b;
    return v != NULL;
}

/* Reads a plain integer of at most 15 digits (every NumericDate) into
 * *num: it is exact in a double (below 2^53), so this is what strtod would
 * return, at a fraction of its cost. 0, and nothing read, for any other
 * number. */
static int jwt_small_integer(const char *s, size_t len, double *num)
{
    size_t i = len > 0 && s[0] == '-';
    int64_t n = 0;

    if (len == i || len - i > 15)
        return 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        n = n * 10 + (s[i] - '0');
    }
    *num = s[0] == '-' ? -(double)n : (double)n;
    return 1;
}

/* yajl hands numbers over as text, so that no integer overflows on the way;
 * strtod yields +-inf for what a double cannot hold, and the claim readers
 * refuse that. */
static int jwt_on_number(void *ctx, const char *s, size_t len)
{
    struct jwt_value *v = jwt_add(ctx, JWT_NUMBER);
    char *text;

    if (v == NULL)
        return 0;
    if (jwt_small_integer(s, len, &v->num))
        return 1;
    /* strtod needs the text NUL-terminated. */
    if ((text = jwt_alloc(ctx, len + 1)) == NULL)
        return jwt_stop(ctx, "out of memory");
    memcpy(text, s, len);
    text[len] = '\0';
    v->num = strtod(text, NULL);
    return 1;
}

/* Copies a JSON string. U+0000 is refused: C strings cannot hold it, so a
 * name or value with one would compare equal to its prefix. */
static char *jwt_copy_string(struct jwt_parser *p, const unsigned char *s, size_t len)
{
    char *copy = NULL;

    if (memchr(s, '\0', len) != NULL) {
        jwt_stop(p, "JSON string holds U+0000");
    } else if ((copy = jwt_alloc(p, len + 1)) == NULL) {
        jwt_stop(p, "out of memory");
    } else {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

static int jwt_on_string(void *ctx, const unsigned char *s, size_t len)
{
    struct jwt_value *v;
    char *copy = jwt_copy_string(ctx, s, len);

    if (copy == NULL || (v = jwt_add(ctx, JWT_STRING)) == NULL)
        return 0;
    v->str = copy;
    return 1;
}

/* Refuses a member name already used in the same object: two parsers that
 * keep the first or the last occurrence would see different tokens. */
static int jwt_on_map_key(void *ctx, const unsigned char *s, size_t len)
{
    struct jwt_parser *p = ctx;
    char *name = jwt_copy_string(p, s, len);

    if (name == NULL)
        return 0;
    if (jwt_get(p->open[p->depth - 1], name) != NULL)
        return jwt_stop(p, "duplicate member in a JSON object");
    p->name = name;
    return 1;
}

static const yajl_callbacks jwt_callbacks = {
    .yajl_null = jwt_on_null,
    .yajl_boolean = jwt_on_boolean,
    .yajl_number = jwt_on_number,
    .yajl_string = jwt_on_string,
    .yajl_start_map = jwt_on_start_map,
    .yajl_map_key = jwt_on_map_key,
    .yajl_end_map = jwt_on_end,
    .yajl_start_array = jwt_on_start_array,
    .yajl_end_array = jwt_on_end,
};

/* yajl's own allocations (its handle, lexer and buffers) come from the
 * parse's chunks too, each after its size so that realloc can copy it.
 * They are dropped with the tree: yajl_free only returns them. */
static void *jwt_yajl_malloc(void *ctx, size_t size)
{
    size_t *m = size > SIZE_MAX / 2 ? NULL : jwt_alloc(ctx, sizeof(size_t) + size);

    if (m == NULL)
        return NULL;
    *m = size;
    return m + 1;
}

static void *jwt_yajl_realloc(void *ctx, void *ptr, size_t size)
{
    size_t old = ptr ? ((size_t *)ptr)[-1] : 0;
    void *mem;

    if (ptr != NULL && size <= old)
        return ptr;
    if ((mem = jwt_yajl_malloc(ctx, size)) != NULL && old != 0)
        memcpy(mem, ptr, old);
    return mem;
}

static void jwt_yajl_free(void *ctx, void *ptr)
{
    (void)ctx;
    (void)ptr;
}

/* Size of the first chunk for len bytes of JSON: room for a typical
 * token's values and strings, and for yajl's state (about 3 KB: its lexer
 * always takes a 2 KB buffer at the end of the input), in one go; capped
 * for large documents. */
static size_t jwt_first_chunk_size(size_t len)
{
    return len < JWT_CHUNK_FIRST / 8 ? 6 * len + 3072 : JWT_CHUNK_FIRST;
}

struct jwt_value *jwt_parse(const unsigned char *json, size_t len, char *err, size_t errlen)
{
    struct jwt_parser p = {0};
    yajl_alloc_funcs funcs = {jwt_yajl_malloc, jwt_yajl_realloc, jwt_yajl_free, &p};
    yajl_handle h = NULL;
    int ok = 0;

    /* The root takes the first slot of the first chunk (see struct
     * jwt_chunk); it only becomes a value once the top-level object opens. */
    if ((p.first = p.last = jwt_chunk_new(jwt_first_chunk_size(len))) != NULL &&
        (p.root = jwt_alloc(&p, sizeof(*p.root))) != NULL) {
        memset(p.root, 0, sizeof(*p.root)); /* JWT_NULL: not a parse result */
        h = yajl_alloc(&jwt_callbacks, &funcs, &p);
    }
    /* yajl's defaults are already strict (no comments, no trailing garbage,
     * one value, UTF-8 validated); nothing is relaxed here. */
    ok = h != NULL && yajl_parse(h, json, len) == yajl_status_ok && yajl_complete_parse(h) == yajl_status_ok &&
         p.root->type == JWT_OBJECT;
    if (!ok)
        snprintf(err, errlen, "%s", p.error ? p.error : h ? "invalid JSON" : "out of memory");
    if (h != NULL)
        yajl_free(h); /* before the chunks it lives in */
    if (!ok)
        jwt_chunks_free(p.first);
    return ok ? p.root : NULL;
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
static void jwt_compact_member(struct jwt_value *v, const char *name, char *str, const unsigned char *text, size_t len)
{
    memset(v, 0, sizeof(*v));
    v->type = JWT_STRING;
    v->name = (char *)name; /* static; the tree is read-only to its users */
    v->str = str;
    memcpy(str, text, len);
    str[len] = '\0';
}

/* Why this returns exactly what jwt_parse would: the input is one JSON
 * object with two members whose names ("alg", "kid") differ, at depth 1,
 * with nothing after it; both values are strings of characters that need
 * no escaping and are not U+0000, so each decodes to itself. No other
 * member (crit, jku, x5u, jwk, x5c, a duplicate) can be present, so every
 * check on the tree decides as it would on jwt_parse's. Anything else
 * (whitespace, another order, an escape, another member) misses here and
 * takes the strict parser. */
const struct jwt_value *jwt_parse_compact_header(const unsigned char *json, size_t len, struct jwt_compact_header *h)
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
    h->root.type = JWT_OBJECT;
    jwt_compact_member(&h->alg, "alg", h->alg_str, alg, JWT_COMPACT_ALG_LEN);
    jwt_compact_member(&h->kid, "kid", h->kid_str, kid, JWT_COMPACT_KID_LEN);
    h->root.child = &h->alg;
    h->alg.next = h->root.last = &h->kid;
    return &h->root;
}

const struct jwt_value *jwt_get(const struct jwt_value *obj, const char *name)
{
    if (obj == NULL || obj->type != JWT_OBJECT)
        return NULL;
    /* The first byte alone tells most members apart without a call. */
    for (const struct jwt_value *v = obj->child; v != NULL; v = v->next)
        if (v->name[0] == name[0] && strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

void jwt_value_free(struct jwt_value *root)
{
    if (root != NULL)
        jwt_chunks_free((struct jwt_chunk *)((char *)root - offsetof(struct jwt_chunk, data)));
}
