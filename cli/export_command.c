/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/export_command.h"

#include "cli/fleet_each.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "publish/snapshot.h"
#include "util/file.h"
#include "publish/publish.h"
#include "util/paths.h"

/* One object to write and to tell the operator about. */
struct export_object {
    const char *name; /* path under DIR, without the leading slash */
    const struct snapshot_doc *doc;
    char url[PATH_MAX]; /* where relying parties will fetch it */
    const char *key;    /* the object name in a bucket: url's path, or name */
};

/* Writes the message for a failed path operation; returns the exit status
 * of a write error so that callers can `return export_fail(...)`. */
static int export_fail(const char *what, const char *path, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
    return 1;
}

/* Creates every missing directory of path (its last component too), like
 * mkdir -p: the operator names DIR, the layout below it is ours. */
static int export_mkdirs(const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    size_t len = strlen(path);

    if (len >= sizeof(dir)) {
        errno = ENAMETOOLONG;
        return export_fail("cannot create directory", path, err, errlen);
    }
    memcpy(dir, path, len + 1);
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return export_fail("cannot create directory", dir, err, errlen);
        *p = c;
        if (c == '\0')
            return 0;
    }
}

/* Writes body to path with file_write_atomic, so that a sync job or a
 * web server reading DIR never sees a torn document. The mode is 0644
 * whatever the umask: the documents are public by nature. */
static int export_write_file(const char *path, const struct render_doc *body, char *err, size_t errlen)
{
    if (file_write_atomic(path, body->bytes, body->len, 0644) != 0)
        return export_fail("cannot write", path, err, errlen);
    return 0;
}

/* DIR without trailing slashes (but "/" stays "/"), so that the paths
 * written and printed read DIR/name. */
static int export_dir_len(const char *dir)
{
    size_t n = strlen(dir);

    while (n > 1 && dir[n - 1] == '/')
        n--;
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* DIR/name into path; -1 when it does not fit. */
static int export_path(const char *dir, const char *name, char *path, size_t len)
{
    int dlen = export_dir_len(dir);
    int n = snprintf(path, len, "%.*s%s%s", dlen, dir, dir[dlen - 1] == '/' ? "" : "/", name);

    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Creates the object's directories below DIR and writes the object. */
static int export_object_write(const char *dir, const struct export_object *o, char *err, size_t errlen)
{
    char path[PATH_MAX], parent[PATH_MAX];

    if (export_path(dir, o->name, path, sizeof(path)) != 0) {
        errno = ENAMETOOLONG;
        return export_fail("cannot write", dir, err, errlen);
    }
    memcpy(parent, path, sizeof(parent));
    *strrchr(parent, '/') = '\0';
    if (export_mkdirs(parent, err, errlen) != 0)
        return 1;
    return export_write_file(path, &o->doc->body, err, errlen);
}

/* Prints s as one shell word: as it is when nothing in it is special to a
 * shell, else in single quotes, so that a printed command stays right for
 * any DIR or header value. */
static void export_put_word(const char *s)
{
    if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+=:,@%") == strlen(s)) {
        fputs(s, stdout);
        return;
    }
    putchar('\'');
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", stdout);
        else
            putchar(*s);
    }
    putchar('\'');
}

/* The upload commands of one object for the three stores, as text for the
 * operator to adapt (BUCKET, ACCOUNT and CONTAINER are theirs); nothing is
 * run. The headers are the ones serve sends. */
static void export_print_uploads(const char *dir, const struct export_object *o, const char *cache_control)
{
    char path[PATH_MAX], s3[PATH_MAX + 16], gs[PATH_MAX + 16], gcs_type[256], gcs_cache[96];

    export_path(dir, o->name, path, sizeof(path)); /* fitted when it was written */
    snprintf(gcs_type, sizeof(gcs_type), "Content-Type:%s", o->doc->content_type);
    snprintf(gcs_cache, sizeof(gcs_cache), "Cache-Control:%s", cache_control);
    snprintf(s3, sizeof(s3), "s3://BUCKET/%s", o->key);
    snprintf(gs, sizeof(gs), "gs://BUCKET/%s", o->key);

    fputs("  aws s3 cp ", stdout);
    export_put_word(path);
    putchar(' ');
    export_put_word(s3);
    fputs(" --content-type ", stdout);
    export_put_word(o->doc->content_type);
    fputs(" --cache-control ", stdout);
    export_put_word(cache_control);

    fputs("\n  gsutil -h ", stdout);
    export_put_word(gcs_type);
    fputs(" -h ", stdout);
    export_put_word(gcs_cache);
    fputs(" cp ", stdout);
    export_put_word(path);
    putchar(' ');
    export_put_word(gs);

    fputs("\n  az storage blob upload --account-name ACCOUNT --container-name CONTAINER --name ", stdout);
    export_put_word(o->key);
    fputs(" --file ", stdout);
    export_put_word(path);
    fputs(" --content-type ", stdout);
    export_put_word(o->doc->content_type);
    fputs(" --content-cache-control ", stdout);
    export_put_word(cache_control);
    fputs(" --overwrite\n", stdout);
}

/* Tells the operator what was written, the headers each object must be
 * served with, where relying parties will look for it, and how to upload. */
static void export_report(const char *dir, const struct export_object *objs, size_t n, const struct snapshot *snap)
{
    for (size_t i = 0; i < n; i++)
        printf("%s  Content-Type: %s  Cache-Control: %s  ETag: %s\n", objs[i].name, objs[i].doc->content_type,
               snap->cache_control, objs[i].doc->etag);
    printf("\nRelying parties fetch these URLs; each must answer with its object and the headers above:\n");
    for (size_t i = 0; i < n; i++)
        printf("  %s\n", objs[i].url);
    printf("\nUpload commands, for example (BUCKET, ACCOUNT and CONTAINER are yours; the object names are the\n"
           "URLs' paths, less the bucket's own part if its URLs have one; stores compute their own ETag):\n");
    for (size_t i = 0; i < n; i++)
        export_print_uploads(dir, &objs[i], snap->cache_control);
}

/* The discovery URL per OpenID Connect Discovery 1.0 section 4: the issuer
 * without trailing slashes, then the well-known path. */
static void export_discovery_url(const char *issuer, char *url, size_t len)
{
    size_t n = strlen(issuer);

    while (n > 0 && issuer[n - 1] == '/')
        n--;
    snprintf(url, len, "%.*s%s", (int)n, issuer, PATHS_DISCOVERY);
}

/* The object name for url: its path without the leading slash, so that a
 * bucket served at the URL's host answers at the URL; name when the URL
 * has no path. */
static const char *export_object_key(const char *url, const char *name)
{
    const char *host = strstr(url, "://"), *path = host ? strchr(host + 3, '/') : NULL;

    return path != NULL && path[1] != '\0' ? path + 1 : name;
}

/* Exports one issuer's documents into cfg's --out. */
static int export_one(const struct config *cfg)
{
    char err[PATH_MAX + 256] = "";
    struct snapshot *snap = NULL;
    struct export_object objs[2];
    int rc = publish_build_now(cfg, &snap, err, sizeof(err));

    if (rc != 0)
        goto out;
    objs[0] = (struct export_object){.name = PATHS_DISCOVERY + 1, .doc = &snap->discovery};
    objs[1] = (struct export_object){.name = PATHS_JWKS + 1, .doc = &snap->jwks};
    export_discovery_url(cfg->issuers.items[0], objs[0].url, sizeof(objs[0].url));
    snprintf(objs[1].url, sizeof(objs[1].url), "%s", cfg->jwks_uri);
    for (size_t i = 0; i < 2; i++)
        objs[i].key = export_object_key(objs[i].url, objs[i].name);
    for (size_t i = 0; i < 2 && rc == 0; i++)
        rc = export_object_write(cfg->export_dir, &objs[i], err, sizeof(err));
    if (rc == 0)
        export_report(cfg->export_dir, objs, 2, snap);
out:
    if (rc != 0)
        fprintf(stderr, "oidc-discovery export: %s\n", err[0] ? err : "out of memory");
    snapshot_release(snap);
    return rc;
}

/* fleet_each's step: one issuer of the fleet, into OUT/NAME (or, the
 * one picked by --issuer, into OUT). */
static int export_issuer(struct config *cfg, const char *name, size_t index, void *arg)
{
    char *dir;

    (void)index;
    if (*(const int *)arg) /* the one --issuer picked */
        return export_one(cfg);
    if (asprintf(&dir, "%s/%s", cfg->export_dir, name) < 0) {
        fprintf(stderr, "oidc-discovery export: out of memory\n");
        return 2;
    }
    free(cfg->export_dir);
    cfg->export_dir = dir;
    return export_one(cfg);
}

int export_command(const struct config *cfg)
{
    if (cfg->issuers_dir != NULL)
        return fleet_each(cfg, "export", export_issuer, &(int){cfg->mint_issuer != NULL});
    return export_one(cfg);
}
