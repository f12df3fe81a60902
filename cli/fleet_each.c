/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/fleet_each.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/fields.h"
#include "config/file.h"
#include "config/options.h"

#define FLEET_EACH_SUFFIX ".json"

static int fleet_each_by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The issuer names of dir (NAME of each NAME.json a fleet serves), sorted;
 * malloc'ed, each and the array. NULL with errno set when dir cannot be
 * read or memory ran out. */
static char **fleet_each_names(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    const size_t slen = strlen(FLEET_EACH_SUFFIX);
    char **names = NULL, **grown;
    size_t n = 0, cap = 0;
    struct dirent *e;

    if (d == NULL)
        return NULL;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= slen || strcmp(e->d_name + len - slen, FLEET_EACH_SUFFIX) != 0 ||
            !config_issuer_name_ok(e->d_name, len - slen))
            continue;
        if (n == cap) {
            if ((grown = realloc(names, (cap ? cap * 2 : 16) * sizeof(*names))) == NULL)
                goto oom;
            names = grown;
            cap = cap ? cap * 2 : 16;
        }
        if ((names[n] = strndup(e->d_name, len - slen)) == NULL)
            goto oom;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof(*names), fleet_each_by_name);
    *count = n;
    return names != NULL ? names : calloc(1, sizeof(*names));
oom:
    closedir(d);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    errno = ENOMEM;
    return NULL;
}

/* How many names the error of an unknown --issuer lists. */
#define FLEET_EACH_NAMES_SHOWN 20

/* Says on stderr that --issuer NAME is none of names (n, sorted). */
static void fleet_each_unknown(const char *command, const struct config *cfg, char *const *names, size_t n)
{
    fprintf(stderr,
            "oidc-discovery %s: --issuer %s: no such issuer in --issuers-dir %s (no %s.json); its issuers: ", command,
            cfg->mint_issuer, cfg->issuers_dir, cfg->mint_issuer);
    for (size_t i = 0; i < n && i < FLEET_EACH_NAMES_SHOWN; i++)
        fprintf(stderr, "%s%s", i ? ", " : "", names[i]);
    if (n > FLEET_EACH_NAMES_SHOWN)
        fprintf(stderr, " and %zu more", n - FLEET_EACH_NAMES_SHOWN);
    fprintf(stderr, "%s\n", n == 0 ? "none" : "");
}

/* The index of --issuer's NAME in names (n, sorted), or n. */
static size_t fleet_each_find(char *const *names, size_t n, const char *name)
{
    const char *key = name;
    char *const *hit = bsearch(&key, names, n, sizeof(*names), fleet_each_by_name);

    return hit != NULL ? (size_t)(hit - names) : n;
}

/* config_file_put_fn of fleet_each_read_url: keeps the issuer URLs. */
static int fleet_each_put_url(void *ctx, const struct config_option *o, const char *value)
{
    struct config *c = ctx;

    if (strcmp(o->name, "service-account-issuer") != 0)
        return 0;
    return config_strlist_append(&c->issuers, value, strlen(value)) < 0 ? -1 : 0;
}

/* Reads only the issuer URLs of the file at path into out (zeroed). */
static int fleet_each_read_url(const char *path, struct config *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (config_file_read_issuer(path, fleet_each_put_url, out, err, errlen) != 0)
        return -1;
    if (out->issuers.count == 0) {
        snprintf(err, errlen, "%.300s: \"service-account-issuer\" is required (the issuer's URL)", path);
        return -1;
    }
    return 0;
}

/* fleet_each and fleet_each_url: url_only picks how a file is read. */
static int fleet_each_run(const struct config *cfg, const char *command, int url_only, fleet_each_fn fn, void *arg)
{
    size_t n = 0;
    char **names = fleet_each_names(cfg->issuers_dir, &n);
    size_t first = 0, last = n;
    int worst = 0;

    if (names == NULL) {
        fprintf(stderr, "oidc-discovery %s: --issuers-dir %s: %s\n", command, cfg->issuers_dir, strerror(errno));
        return 2;
    }
    if (cfg->mint_issuer != NULL && (first = fleet_each_find(names, n, cfg->mint_issuer)) == n) {
        fleet_each_unknown(command, cfg, names, n);
        worst = 2;
        first = last = n;
    } else if (cfg->mint_issuer != NULL) {
        last = first + 1;
    } else if (n == 0) {
        fprintf(stderr, "oidc-discovery %s: --issuers-dir %s: no issuer (NAME.json) file\n", command, cfg->issuers_dir);
        worst = 2;
    }
    for (size_t i = first; i < last; i++) {
        struct config icfg;
        char path[4096], err[CONFIG_ERR_MAX];
        int rc;
        snprintf(path, sizeof(path), "%s/%s%s", cfg->issuers_dir, names[i], FLEET_EACH_SUFFIX);
        if ((url_only ? fleet_each_read_url(path, &icfg, err, sizeof(err))
                      : config_issuer_parse(cfg, path, names[i], &icfg, err, sizeof(err))) != 0) {
            config_free(&icfg);
            fprintf(stderr, "oidc-discovery %s: issuer %s: %s\n", command, names[i], err);
            rc = 2;
        } else {
            rc = fn(&icfg, names[i], i - first, arg);
            config_free(&icfg);
        }
        worst = rc > worst ? rc : worst;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return worst;
}

int fleet_each(const struct config *cfg, const char *command, fleet_each_fn fn, void *arg)
{
    return fleet_each_run(cfg, command, 0, fn, arg);
}

int fleet_each_url(const struct config *cfg, const char *command, fleet_each_fn fn, void *arg)
{
    return fleet_each_run(cfg, command, 1, fn, arg);
}
