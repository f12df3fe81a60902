/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file.c: reads the config file (see file.h) through file_read, which
 * opens without blocking and refuses anything but a regular file (a FIFO
 * left at the path cannot hang the start), and json_parse, the reader that
 * tokens and TokenReview bodies go through.
 */
#include "config/file.h"

#include <stdio.h>
#include <string.h>

#include "util/file.h"
#include "util/json.h"
#include "util/printable.h"

/* A key name as a message quotes it: long enough for every real key. */
#define KEY_SHOWN 80

/* The state of one read, for the messages. */
struct config_read {
    const char *path;
    config_file_put_fn *put;
    void *ctx;
    unsigned keys; /* the row flag of the file's keys: CONFIG_FILE_KEY or CONFIG_ISSUER */
    char *err;
    size_t errlen;
};

int config_file_key_error(char *err, size_t errlen, const char *path, const char *name, const char *problem)
{
    snprintf(err, errlen, "config file %s: key \"%s\": %s", path, name, problem);
    return -1;
}

/* Hands one value over, or says the host is out of memory. */
static int put_value(struct config_read *r, const struct config_option *o, const char *value)
{
    if (r->put(r->ctx, o, value) == 0)
        return 0;
    snprintf(r->err, r->errlen, "out of memory");
    return -1;
}

/* Refuses a value of the wrong JSON type for key o. */
static int wrong_type(struct config_read *r, const struct config_option *o)
{
    char problem[CONFIG_PROBLEM_MAX];

    config_option_problem(o, problem);
    return config_file_key_error(r->err, r->errlen, r->path, o->name, problem);
}

/* Hands over a number as it was written: json_parse keeps the text of any
 * number but a plain integer of up to 15 digits, which "%.0f" writes back
 * exactly ("-5" stays negative and fails the checks as typed). */
static int put_number(struct config_read *r, const struct config_option *o, const struct json_value *v)
{
    char text[32];

    if (v->str != NULL)
        return put_value(r, o, v->str);
    snprintf(text, sizeof(text), "%.0f", v->num);
    return put_value(r, o, text);
}

/* Hands over the values of a list key: one string, or an array of them. */
static int put_list(struct config_read *r, const struct config_option *o, const struct json_value *v)
{
    if (v->type == JSON_STRING)
        return put_value(r, o, v->str);
    if (v->type != JSON_ARRAY)
        return wrong_type(r, o);
    for (const struct json_value *e = v->child; e != NULL; e = e->next)
        if (e->type != JSON_STRING)
            return wrong_type(r, o);
    for (const struct json_value *e = v->child; e != NULL; e = e->next)
        if (put_value(r, o, e->str) < 0)
            return -1;
    return 0;
}

/* Hands over the value of key o after checking its JSON type against the
 * row's kind; a duration may be a string ("15m") or a number of seconds. */
static int put_member(struct config_read *r, const struct config_option *o, const struct json_value *v)
{
    switch (o->kind) {
    case CONFIG_KIND_BOOL:
        return v->type == JSON_BOOL ? put_value(r, o, v->boolean ? "true" : "false") : wrong_type(r, o);
    case CONFIG_KIND_UINT:
        return v->type == JSON_NUMBER ? put_number(r, o, v) : wrong_type(r, o);
    case CONFIG_KIND_DURATION:
        if (v->type == JSON_NUMBER)
            return put_number(r, o, v);
        return v->type == JSON_STRING ? put_value(r, o, v->str) : wrong_type(r, o);
    case CONFIG_KIND_LIST:
    case CONFIG_KIND_COMMAS:
    case CONFIG_KIND_LISTEN:
        return put_list(r, o, v);
    default:
        return v->type == JSON_STRING ? put_value(r, o, v->str) : wrong_type(r, o);
    }
}

/* Refuses a key that is no row's config-file key, saying which key was
 * likely meant, or that a flag of that name is one only on the command
 * line (verify's, token's and export's own). */
static int unknown_key(struct config_read *r, const char *name)
{
    const struct config_option *flag = config_option_named(name, strlen(name));
    const struct config_option *near = config_option_nearest(name, strlen(name), CONFIG_FOR_EVERY, 1, flag == NULL);
    char quoted[KEY_SHOWN + 8], meant[96] = "", only[96] = "";

    if (near)
        snprintf(meant, sizeof(meant), "; did you mean \"%s\"?", near->name);
    if (flag)
        snprintf(only, sizeof(only), " (--%s is a command-line flag only)", flag->name);
    snprintf(r->err, r->errlen, "config file %s: unknown key %s%s%s", r->path,
             printable_quote(name, quoted, sizeof(quoted)), meant, only);
    return -1;
}

/* Reports JSON the reader refused (why) at the byte offset stop of text, as
 * a line and column an editor can go to. */
static int invalid_json(struct config_read *r, const char *text, size_t stop, const char *why)
{
    unsigned long line = 1, column = 1;

    for (size_t i = 0; i < stop; i++, column++) {
        if (text[i] == '\n') {
            line++;
            column = 0;
        }
    }
    snprintf(r->err, r->errlen, "config file %s: %s (line %lu, column %lu)", r->path, why, line, column);
    return -1;
}

/* Reads the members of the parsed object, in order. */
static int put_members(struct config_read *r, const struct json_value *root)
{
    for (const struct json_value *m = root->child; m != NULL; m = m->next) {
        const struct config_option *o = config_option_named(m->name, strlen(m->name));
        if (o != NULL && !(o->flags & r->keys) && (o->flags & CONFIG_FILE_KEY) && r->keys == CONFIG_ISSUER)
            return config_file_key_error(r->err, r->errlen, r->path, o->name,
                                         "is not a per-issuer setting: give it on the command line or in --config, "
                                         "for every issuer");
        if (o == NULL || !(o->flags & r->keys))
            return unknown_key(r, m->name);
        if (put_member(r, o, m) < 0)
            return -1;
    }
    return 0;
}

/* Reads the file at path, whose keys are the rows marked keys. */
static int read_file(const char *path, unsigned keys, config_file_put_fn *put, void *ctx, char *err, size_t errlen)
{
    struct config_read r = {.path = path, .put = put, .ctx = ctx, .keys = keys, .err = err, .errlen = errlen};
    struct json_value *root = NULL;
    char why[256];
    size_t len = 0, stop = 0;
    char *text = file_read(path, CONFIG_FILE_MAX, &len, NULL, why, sizeof(why));
    int rc = -1;

    if (text == NULL)
        snprintf(err, errlen, "%s %s", keys == CONFIG_ISSUER ? "issuer file" : "--config", why);
    else if ((root = json_parse_at((const unsigned char *)text, len, &stop, why, sizeof(why))) == NULL)
        invalid_json(&r, text, stop, why);
    else
        rc = put_members(&r, root);
    json_free(root);
    file_free(text, len);
    return rc;
}

int config_file_read(const char *path, config_file_put_fn *put, void *ctx, char *err, size_t errlen)
{
    return read_file(path, CONFIG_FILE_KEY, put, ctx, err, errlen);
}

int config_file_read_issuer(const char *path, config_file_put_fn *put, void *ctx, char *err, size_t errlen)
{
    return read_file(path, CONFIG_ISSUER, put, ctx, err, errlen);
}
