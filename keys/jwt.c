#include "jwt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "b64url.h"
#include "token.h"

int jwt_split(const char *token, size_t len, struct jwt_parts *parts)
{
    const char *start[3], *end = token + len;
    size_t n[3], found = 0;

    memset(parts, 0, sizeof(*parts));
    start[0] = token;
    for (const char *p = token; p < end; p++) {
        if (*p != '.')
            continue;
        if (++found > 2)
            return -1;
        start[found] = p + 1;
    }
    if (found != 2)
        return -1;
    n[0] = (size_t)(start[1] - 1 - start[0]);
    n[1] = (size_t)(start[2] - 1 - start[1]);
    n[2] = (size_t)(end - start[2]);
    for (int i = 0; i < 3; i++) {
        /* +1: even an empty segment gets a buffer, so NULL means failure. */
        parts->seg[i] = malloc(B64URL_DECODED_MAX(n[i]) + 1);
        if (parts->seg[i] == NULL || b64url_decode(start[i], n[i], parts->seg[i], &parts->seglen[i]) != 0) {
            jwt_parts_clear(parts);
            return -2;
        }
    }
    parts->signing_input = token;
    parts->signing_input_len = n[0] + 1 + n[1];
    return 0;
}

void jwt_parts_clear(struct jwt_parts *parts)
{
    for (int i = 0; i < 3; i++)
        free(parts->seg[i]);
    memset(parts, 0, sizeof(*parts));
}

/* State of one parse: the open containers and the member name waiting for
 * its value. */
struct jwt_parser {
    struct jwt_value *root;
    struct jwt_value *open[TOKEN_MAX_DEPTH];
    int depth;
    char *name;
    const char *error; /* why a callback stopped the parse */
};

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
    if ((v = calloc(1, sizeof(*v))) == NULL) {
        jwt_stop(p, "out of memory");
        return NULL;
    }
    v->type = t;
    if (p->depth == 0) {
        p->root = v;
        return v;
    }
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

/* yajl hands numbers over as text, so that no integer overflows on the way;
 * strtod yields +-inf for what a double cannot hold, and the claim readers
 * refuse that. */
static int jwt_on_number(void *ctx, const char *s, size_t len)
{
    struct jwt_value *v = jwt_add(ctx, JWT_NUMBER);
    char *text;

    if (v == NULL)
        return 0;
    if ((text = strndup(s, len)) == NULL)
        return jwt_stop(ctx, "out of memory");
    v->num = strtod(text, NULL);
    free(text);
    return 1;
}

/* Copies a JSON string. U+0000 is refused: C strings cannot hold it, so a
 * name or value with one would compare equal to its prefix. */
static char *jwt_copy_string(struct jwt_parser *p, const unsigned char *s, size_t len)
{
    char *copy = NULL;

    if (memchr(s, '\0', len) != NULL)
        jwt_stop(p, "JSON string holds U+0000");
    else if ((copy = strndup((const char *)s, len)) == NULL)
        jwt_stop(p, "out of memory");
    return copy;
}

static int jwt_on_string(void *ctx, const unsigned char *s, size_t len)
{
    struct jwt_value *v;
    char *copy = jwt_copy_string(ctx, s, len);

    if (copy == NULL)
        return 0;
    if ((v = jwt_add(ctx, JWT_STRING)) == NULL) {
        free(copy);
        return 0;
    }
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
    if (jwt_get(p->open[p->depth - 1], name) != NULL) {
        free(name);
        return jwt_stop(p, "duplicate member in a JSON object");
    }
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

struct jwt_value *jwt_parse(const unsigned char *json, size_t len, char *err, size_t errlen)
{
    struct jwt_parser p = {0};
    yajl_handle h = yajl_alloc(&jwt_callbacks, NULL, &p);
    int ok;

    /* yajl's defaults are already strict (no comments, no trailing garbage,
     * one value, UTF-8 validated); nothing is relaxed here. */
    ok = h != NULL && yajl_parse(h, json, len) == yajl_status_ok && yajl_complete_parse(h) == yajl_status_ok &&
         p.root != NULL;
    if (!ok) {
        snprintf(err, errlen, "%s", p.error ? p.error : h ? "invalid JSON" : "out of memory");
        jwt_value_free(p.root);
        p.root = NULL;
    }
    free(p.name);
    if (h != NULL)
        yajl_free(h);
    return p.root;
}

const struct jwt_value *jwt_get(const struct jwt_value *obj, const char *name)
{
    if (obj == NULL || obj->type != JWT_OBJECT)
        return NULL;
    for (const struct jwt_value *v = obj->child; v != NULL; v = v->next)
        if (strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

void jwt_value_free(struct jwt_value *v)
{
    while (v != NULL) {
        struct jwt_value *next = v->next;
        jwt_value_free(v->child);
        free(v->name);
        free(v->str);
        free(v);
        v = next;
    }
}
