/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fields.c: moves checked values into struct config and frees them (see
 * fields.h). A row names its field by offset, so one switch on the kind
 * serves every flag.
 */
#include "config/fields.h"

#include <stdlib.h>
#include <string.h>

/* Where row o's value lands in cfg, and the count of a LISTEN row. */
#define AT(cfg, o, type) ((type *)((char *)(cfg) + (o)->field))
#define COUNT_AT(cfg, o) ((size_t *)((char *)(cfg) + (o)->count_field))

int config_strlist_append(struct config_strlist *l, const char *s, size_t len)
{
    char **items = realloc(l->items, (l->count + 1) * sizeof *items);

    if (!items)
        return -1;
    l->items = items;
    items[l->count] = strndup(s, len);
    if (!items[l->count])
        return -1;
    l->count++;
    return 0;
}

void config_strlist_free(struct config_strlist *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

int config_field_of(const struct config_option *o)
{
    return o->field != CONFIG_NO_FIELD && !(o->flags & CONFIG_NEGATES);
}

/* Converts listen values into an array of *count addresses (NULL when
 * there are none): a Unix socket keeps its path, with no host and port 0. */
static int store_listens(const struct config_strlist *l, struct config_listen **out, size_t *count)
{
    char problem[CONFIG_PROBLEM_MAX];
    struct config_hostport hp;

    if (l->count == 0 || (l->count == 1 && strcmp(l->items[0], "none") == 0))
        return 0;
    if (!(*out = calloc(l->count, sizeof **out)))
        return -1;
    for (size_t i = 0; i < l->count; i++) {
        struct config_listen *cl = &(*out)[i];
        if (config_is_unix_listen(l->items[i])) {
            cl->unix_path = strdup(l->items[i] + strlen("unix:"));
        } else {
            config_split_listen(l->items[i], &hp, problem);
            cl->host = strndup(hp.host, hp.hostlen);
            cl->port = (unsigned short)hp.port;
        }
        (*count)++;
        if (!cl->host && !cl->unix_path)
            return -1;
    }
    return 0;
}

/* Where config_each_item appends the items of a comma list; host names
 * are lowercased, since a Host header is compared without regard to case. */
struct comma_out {
    struct config_strlist *list;
    int lower;
};

static int append_item(void *ctx, const char *s, size_t len)
{
    struct comma_out *out = ctx;

    if (config_strlist_append(out->list, s, len) < 0)
        return -1;
    for (char *c = out->list->items[out->list->count - 1]; out->lower && *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    return 0;
}

/* Joins comma-separated values, in order, into one list. */
static int store_commas(const struct config_strlist *l, struct config_strlist *out, int lower)
{
    struct comma_out ctx = {out, lower};

    for (size_t i = 0; i < l->count; i++)
        if (config_each_item(l->items[i], append_item, &ctx) != 0)
            return -1;
    return 0;
}

int config_field_store(struct config *cfg, const struct config_option *o, struct config_strlist *values)
{
    const char *v = values->count ? values->items[values->count - 1] : NULL;
    int rc = 0;

    switch (o->kind) {
    case CONFIG_KIND_STRING:
    case CONFIG_KIND_CHOICE:
        *AT(cfg, o, char *) = v ? values->items[--values->count] : NULL;
        break;
    case CONFIG_KIND_LIST:
        *AT(cfg, o, struct config_strlist) = *values;
        memset(values, 0, sizeof *values);
        break;
    case CONFIG_KIND_COMMAS:
        rc = store_commas(values, AT(cfg, o, struct config_strlist), (o->flags & CONFIG_LOWER) != 0);
        break;
    case CONFIG_KIND_LISTEN:
        rc = store_listens(values, AT(cfg, o, struct config_listen *), COUNT_AT(cfg, o));
        break;
    case CONFIG_KIND_UINT:
    case CONFIG_KIND_DURATION:
        *AT(cfg, o, unsigned long) = v ? config_option_number(o, v) : 0;
        break;
    case CONFIG_KIND_BOOL:
        *AT(cfg, o, int) = v && strcmp(v, "true") == 0;
        break;
    case CONFIG_KIND_ACTION:
        break;
    }
    config_strlist_free(values);
    return rc;
}

/* Frees count listen addresses and their array. */
static void free_listens(struct config_listen *listens, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        free(listens[i].host);
        free(listens[i].unix_path);
    }
    free(listens);
}

void config_free(struct config *cfg)
{
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        if (!config_field_of(o))
            continue;
        if (o->kind == CONFIG_KIND_STRING || o->kind == CONFIG_KIND_CHOICE)
            free(*AT(cfg, o, char *));
        else if (o->kind == CONFIG_KIND_LIST || o->kind == CONFIG_KIND_COMMAS)
            config_strlist_free(AT(cfg, o, struct config_strlist));
        else if (o->kind == CONFIG_KIND_LISTEN)
            free_listens(*AT(cfg, o, struct config_listen *), *COUNT_AT(cfg, o));
    }
    config_strlist_free(&cfg->warnings);
    config_sources_free(cfg->sources);
    memset(cfg, 0, sizeof *cfg);
}
