#include "keyset.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pem.h"

/* Loading state shared with the per-key callback. */
struct keyset_loader {
    struct keyset *ks;
    keyset_warn_cb warn;
    void *warn_ctx;
    int mode_checked; /* the current file's mode was looked at */
};

__attribute__((format(printf, 2, 3))) static void keyset_warn(struct keyset_loader *l, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (l->warn == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    l->warn(l->warn_ctx, msg);
}

static int keyset_append(struct keyset *ks, struct key *k)
{
    if (ks->count == ks->cap) {
        size_t cap = ks->cap ? ks->cap * 2 : 4;
        struct key *keys = realloc(ks->keys, cap * sizeof(*keys));
        if (keys == NULL)
            return -1;
        ks->keys = keys;
        ks->cap = cap;
    }
    ks->keys[ks->count++] = *k;
    return 0;
}

int keyset_add(struct keyset *ks, EVP_PKEY *pub, const char *source, const struct key **dup, char *err, size_t errlen)
{
    struct key k;

    *dup = NULL;
    if (key_init(&k, pub, source, err, errlen) != 0)
        return -1;
    if ((*dup = keyset_find(ks, k.kid)) != NULL) {
        key_clear(&k);
        return 0;
    }
    if (keyset_append(ks, &k) != 0) {
        key_clear(&k);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 1;
}

/* A private key that group or others can read may already have leaked
 * through a backup, a debug shell or another container sharing the volume,
 * and this server only ever needs its public half. Warns once per file; a
 * failed stat is left to the read that follows to report. */
static void keyset_check_private_mode(struct keyset_loader *l, const char *path)
{
    struct stat st;

    if (l->mode_checked)
        return;
    l->mode_checked = 1;
    if (stat(path, &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)) != 0)
        keyset_warn(l, "%s: private key file is readable by group or others (mode %04o); chmod 600 it", path,
                    (unsigned)(st.st_mode & 07777));
}

/* pem_key_cb: adds one key of a file. The same key twice is published once:
 * two JWKs with one kid make clients such as panva/jose refuse the whole
 * set, and it is usually sa.key and sa.pub given together, so it only
 * warrants a warning. */
static int keyset_add_from_file(void *ctx, EVP_PKEY *pub, const char *path, int block, int was_private, char *err,
                                size_t errlen)
{
    struct keyset_loader *l = ctx;
    char source[4096], why[256];
    const struct key *dup, *k;
    int rc;

    if (was_private)
        keyset_check_private_mode(l, path);
    snprintf(source, sizeof(source), "%s (block %d)", path, block);
    if ((rc = keyset_add(l->ks, pub, source, &dup, why, sizeof(why))) < 0) {
        snprintf(err, errlen, "%s: block %d: %s", path, block, why);
        return -1;
    }
    if (rc == 0) {
        keyset_warn(l, "%s: same public key as %s (kid %s); published once", source, dup->source, dup->kid);
        return 0;
    }
    k = &l->ks->keys[l->ks->count - 1];
    if (k->curve == NULL && k->bits < 2048)
        keyset_warn(l, "%s: RSA key of %d bits is below 2048 bits (kid %s); published anyway, as kube-apiserver does",
                    source, k->bits, k->kid);
    return 0;
}

/* Reads one key file; per-file state starts afresh. */
static int keyset_read_file(struct keyset_loader *l, const char *path, char *err, size_t errlen)
{
    l->mode_checked = 0;
    return pem_read_file(path, keyset_add_from_file, l, err, errlen) < 0 ? -1 : 0;
}

/* Directory entries worth reading: not hidden. This skips the kubelet's
 * "..data" and "..<timestamp>" entries of a Secret or ConfigMap volume,
 * whose visible names are symlinks through "..data". */
static int keyset_visible(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

static int keyset_by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Reads every regular file of dir (symlinks followed), sorted by name, so a
 * directory gives the same order on every host. */
static int keyset_load_dir(struct keyset_loader *l, const char *dir, char *err, size_t errlen)
{
    struct dirent **names = NULL;
    char path[4096];
    struct stat st;
    int n = scandir(dir, &names, keyset_visible, keyset_by_name), rc = 0, files = 0;

    if (n < 0) {
        snprintf(err, errlen, "%s: cannot read directory: %s", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            files++;
            rc = keyset_read_file(l, path, err, errlen);
        }
        free(names[i]);
    }
    free(names);
    if (rc == 0 && files == 0) {
        snprintf(err, errlen, "%s: directory holds no key files", dir);
        rc = -1;
    }
    return rc;
}

static int keyset_load_path(struct keyset_loader *l, const char *path, char *err, size_t errlen)
{
    struct stat st;

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return keyset_load_dir(l, path, err, errlen);
    return keyset_read_file(l, path, err, errlen);
}

/* Every set gets a fresh id so that caches keyed on a set notice a new one,
 * whichever loader built it. */
struct keyset *keyset_new(void)
{
    static atomic_uint_fast64_t next_id = 1;
    struct keyset *ks = calloc(1, sizeof(*ks));

    if (ks != NULL)
        ks->id = atomic_fetch_add(&next_id, 1);
    return ks;
}

struct keyset *keyset_load(char *const *paths, size_t npaths, keyset_warn_cb warn, void *warn_ctx, char *err,
                           size_t errlen)
{
    struct keyset_loader l = {.warn = warn, .warn_ctx = warn_ctx};

    if ((l.ks = keyset_new()) == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < npaths; i++) {
        if (keyset_load_path(&l, paths[i], err, errlen) != 0) {
            keyset_free(l.ks);
            return NULL;
        }
    }
    if (l.ks->count == 0) {
        snprintf(err, errlen, "no key files given");
        keyset_free(l.ks);
        return NULL;
    }
    return l.ks;
}

const struct key *keyset_find(const struct keyset *ks, const char *kid)
{
    for (size_t i = 0; i < ks->count; i++)
        if (strcmp(ks->keys[i].kid, kid) == 0)
            return &ks->keys[i];
    return NULL;
}

void keyset_free(struct keyset *ks)
{
    if (ks == NULL)
        return;
    for (size_t i = 0; i < ks->count; i++)
        key_clear(&ks->keys[i]);
    free(ks->keys);
    free(ks);
}
