/* SPDX-License-Identifier: Apache-2.0 */
/* The reference fuzz_token holds json_parse (util/json.c) to: yajl 2.1,
 * which the project parsed tokens with before, plus the checks json_parse
 * makes on top (no duplicate member, at most JSON_MAX_DEPTH containers, no
 * U+0000, an object at the top level, nothing but whitespace after it).
 * Both sides write what they read in one canonical form, so that the
 * target can check that they accept the same inputs and read the same
 * tree from them.
 *
 * Canonical form: '{' (name value)* '}', '[' value* ']', a string (or
 * name) as 's' LENGTH ':' BYTES, a number as 'n' and its double in %a, and
 * 't', 'f', 'z' for true, false and null. */
#ifndef OIDC_FUZZ_JWT_ORACLE_H
#define OIDC_FUZZ_JWT_ORACLE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "util/json.h"

/* A growing byte buffer; the fuzzer aborts when memory runs out. */
struct oracle_buf {
    char *s;
    size_t len, cap;
};

static void oracle_put(struct oracle_buf *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = 2 * (b->len + n);
        if ((b->s = realloc(b->s, b->cap)) == NULL)
            abort();
    }
    memcpy(b->s + b->len, data, n);
    b->len += n;
}

static void oracle_put_string(struct oracle_buf *b, const void *s, size_t len)
{
    char head[32];

    oracle_put(b, head, (size_t)snprintf(head, sizeof(head), "s%zu:", len));
    oracle_put(b, s, len);
}

static void oracle_put_number(struct oracle_buf *b, double num)
{
    char text[64];

    oracle_put(b, text, (size_t)snprintf(text, sizeof(text), "n%a", num));
}

/* json_parse's tree in canonical form. */
static void oracle_write_tree(struct oracle_buf *b, const struct json_value *v)
{
    if (v->name != NULL)
        oracle_put_string(b, v->name, strlen(v->name));
    switch (v->type) {
    case JSON_NULL:
        oracle_put(b, "z", 1);
        break;
    case JSON_BOOL:
        oracle_put(b, v->boolean ? "t" : "f", 1);
        break;
    case JSON_NUMBER:
        oracle_put_number(b, v->num);
        break;
    case JSON_STRING:
        oracle_put_string(b, v->str, strlen(v->str));
        break;
    case JSON_ARRAY:
    case JSON_OBJECT:
        oracle_put(b, v->type == JSON_OBJECT ? "{" : "[", 1);
        for (const struct json_value *c = v->child; c != NULL; c = c->next)
            oracle_write_tree(b, c);
        oracle_put(b, v->type == JSON_OBJECT ? "}" : "]", 1);
        break;
    }
}

/* yajl's side: the canonical form as the callbacks arrive, the member
 * names of each open object, and where the top-level object ended. */
struct oracle {
    yajl_handle h;
    struct oracle_buf out, names[JSON_MAX_DEPTH];
    int depth;
    size_t top_end; /* 0 until the top-level object is complete */
};

/* 0 (cancelling the parse) for a scalar at the top level. */
static int oracle_scalar(struct oracle *o)
{
    return o->depth > 0;
}

static int oracle_null(void *ctx)
{
    struct oracle *o = ctx;

    oracle_put(&o->out, "z", 1);
    return oracle_scalar(o);
}

static int oracle_boolean(void *ctx, int b)
{
    struct oracle *o = ctx;

    oracle_put(&o->out, b ? "t" : "f", 1);
    return oracle_scalar(o);
}

static int oracle_number(void *ctx, const char *s, size_t len)
{
    struct oracle *o = ctx;
    char *text = strndup(s, len);

    if (text == NULL)
        abort();
    oracle_put_number(&o->out, strtod(text, NULL));
    free(text);
    return oracle_scalar(o);
}

static int oracle_string(void *ctx, const unsigned char *s, size_t len)
{
    struct oracle *o = ctx;

    oracle_put_string(&o->out, s, len);
    return oracle_scalar(o) && memchr(s, '\0', len) == NULL;
}

/* Refuses U+0000 and a name the innermost object already has (its names
 * are kept as a size_t length, then the bytes, one after the other). */
static int oracle_key(void *ctx, const unsigned char *s, size_t len)
{
    struct oracle *o = ctx;
    struct oracle_buf *names = &o->names[o->depth - 1];
    int fresh = 1;

    for (size_t at = 0, n; at < names->len && fresh; at += sizeof(n) + n) {
        memcpy(&n, names->s + at, sizeof(n));
        fresh = !(n == len && memcmp(names->s + at + sizeof(n), s, len) == 0);
    }
    oracle_put(names, &len, sizeof(len));
    oracle_put(names, s, len);
    oracle_put_string(&o->out, s, len);
    return fresh && memchr(s, '\0', len) == NULL;
}

/* Opens a container: never beyond JSON_MAX_DEPTH, nor an array at the top
 * level. */
static int oracle_open(struct oracle *o, const char *mark)
{
    if (o->depth == JSON_MAX_DEPTH || (o->depth == 0 && *mark == '['))
        return 0;
    oracle_put(&o->out, mark, 1);
    o->names[o->depth++].len = 0;
    return 1;
}

static int oracle_start_map(void *ctx)
{
    return oracle_open(ctx, "{");
}

static int oracle_start_array(void *ctx)
{
    return oracle_open(ctx, "[");
}

/* Closes a container; the end of the top-level one is where only
 * whitespace may follow (yajl lets an unterminated string through there). */
static int oracle_close(struct oracle *o, const char *mark)
{
    oracle_put(&o->out, mark, 1);
    if (--o->depth == 0)
        o->top_end = yajl_get_bytes_consumed(o->h);
    return 1;
}

static int oracle_end_map(void *ctx)
{
    return oracle_close(ctx, "}");
}

static int oracle_end_array(void *ctx)
{
    return oracle_close(ctx, "]");
}

static const yajl_callbacks oracle_callbacks = {
    .yajl_null = oracle_null,
    .yajl_boolean = oracle_boolean,
    .yajl_number = oracle_number,
    .yajl_string = oracle_string,
    .yajl_start_map = oracle_start_map,
    .yajl_map_key = oracle_key,
    .yajl_end_map = oracle_end_map,
    .yajl_start_array = oracle_start_array,
    .yajl_end_array = oracle_end_array,
};

/* 1 when the reference accepts the len bytes of json; o->out is then its
 * canonical form. Free o with oracle_free either way. */
static int oracle_parse(struct oracle *o, const unsigned char *json, size_t len)
{
    memset(o, 0, sizeof(*o));
    if ((o->h = yajl_alloc(&oracle_callbacks, NULL, o)) == NULL)
        abort();
    if (yajl_parse(o->h, json, len) != yajl_status_ok || yajl_complete_parse(o->h) != yajl_status_ok || o->top_end == 0)
        return 0;
    for (size_t i = o->top_end; i < len; i++)
        if (strchr(" \t\n\v\f\r", json[i]) == NULL || json[i] == '\0')
            return 0;
    return 1;
}

static void oracle_free(struct oracle *o)
{
    yajl_free(o->h);
    free(o->out.s);
    for (int i = 0; i < JSON_MAX_DEPTH; i++)
        free(o->names[i].s);
}

/* Aborts (a fuzzer finding) unless json_parse's result root for json is the
 * reference's: both refuse, or both accept with the same tree. */
static void oracle_check(const unsigned char *json, size_t len, const struct json_value *root)
{
    struct oracle o;
    struct oracle_buf tree = {0};
    int ok = oracle_parse(&o, json, len);

    if (ok != (root != NULL)) {
        fprintf(stderr, "json_parse %s what yajl %s\n", root ? "accepts" : "refuses", ok ? "accepts" : "refuses");
        abort();
    }
    if (root != NULL) {
        oracle_write_tree(&tree, root);
        if (tree.len != o.out.len || memcmp(tree.s, o.out.s, tree.len) != 0) {
            fprintf(stderr, "json_parse and yajl read different trees:\n%.*s\n%.*s\n", (int)tree.len, tree.s,
                    (int)o.out.len, o.out.s);
            abort();
        }
    }
    free(tree.s);
    oracle_free(&o);
}

#endif
