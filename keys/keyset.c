/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/keyset.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "keys/jwks_parse.h"
#include "keys/keyfile.h"
#include "util/file.h"
#include "keys/pem.h"
#include "keys/pki.h"

/* Loading state shared with the per-key callback. */
struct keyset_loader {
    struct keyset *ks;
    keyset_warn_cb warn;
    void *warn_ctx;
    int mode_checked;    /* the current file's mode was looked at */
    char *real;          /* where the current file's path leads, malloc'ed; NULL if unknown */
    struct pki_cas *cas; /* the CA certificates beside the current file (the last directory's) */
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

/* A key is over a kilobyte (its kid may be a JWKS's long one), and a
 * fleet holds two key sets per issuer (the published one and the removal
 * guard's): the array grows from one key, not four. */
static int keyset_append(struct keyset *ks, struct key *k)
{
    if (ks->count == ks->cap) {
        size_t cap = ks->cap ? ks->cap * 2 : 1;
        struct key *keys = realloc(ks->keys, cap * sizeof(*keys));
        if (keys == NULL)
            return -1;
        ks->keys = keys;
        ks->cap = cap;
    }
    ks->keys[ks->count++] = *k;
    return 0;
}

int keyset_add(struct keyset *ks, EVP_PKEY *pub, const char *source, const char *kid, const struct key **dup, char *err,
               size_t errlen)
{
    struct key k;

    *dup = NULL;
    if (key_init(&k, pub, source, kid, err, errlen) != 0)
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

/* Records which file the key just added came from. */
static int keyset_set_path(struct key *k, const char *path, const char *real)
{
    k->path = path ? strdup(path) : NULL;
    k->path_real = real ? strdup(real) : NULL;
    return (path && !k->path) || (real && !k->path_real) ? -1 : 0;
}

int keyset_add_copy(struct keyset *ks, const struct key *k, char *err, size_t errlen)
{
    struct key copy;

    if (keyset_find(ks, k->kid) != NULL)
        return 0;
    if (key_copy(&copy, k) != 0 || keyset_append(ks, &copy) != 0) {
        key_clear(&copy);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 1;
}

/* Warns, once per file, about a private key that others can read: this
 * server only ever needs its public half. A failed stat is left to the
 * read that follows to report. */
static void keyset_check_private_mode(struct keyset_loader *l, const char *path)
{
    struct stat st;
    char msg[1024];

    if (l->mode_checked)
        return;
    l->mode_checked = 1;
    if (stat(path, &st) == 0 && keyfile_private_mode_warning(path, &st, msg, sizeof(msg)))
        keyset_warn(l, "%s", msg);
}

/* Adds one key of the file path (its source names the block or JWK),
 * under kid (NULL: the derived one). The same key twice is published
 * once: two JWKs with one kid make clients such as panva/jose refuse the
 * whole set, and it is usually sa.key and sa.pub given together, so it
 * only warrants a warning. One kid for two different keys (only a JWKS
 * can say that) is an error: either choice would break tokens. */
static int keyset_take(struct keyset_loader *l, EVP_PKEY *pub, const char *path, const char *source, const char *kid,
                       char *err, size_t errlen)
{
    char why[256], derived[KEY_KID_LEN + 1];
    const struct key *dup = NULL;
    const char *ca = l->cas != NULL ? pki_ca_of(l->cas, pub) : NULL;
    struct key *k;
    int rc;

    if (ca != NULL) {
        snprintf(err, errlen,
                 "%s: its public key is that of the CA certificate %s (basicConstraints CA:TRUE): a CA's key must "
                 "not sign service-account tokens; point --service-account-key-file at the service-account key "
                 "(sa.pub, or sa.key) instead",
                 source, ca);
        EVP_PKEY_free(pub);
        return -1;
    }
    if (kid == NULL && key_kid(pub, derived) == 0)
        kid = derived;
    if (kid != NULL && (dup = keyset_find(l->ks, kid)) != NULL && EVP_PKEY_eq(dup->pub, pub) != 1) {
        snprintf(err, errlen, "%s: kid \"%s\" also names another key, %s; give each key its own kid", source, kid,
                 dup->source);
        EVP_PKEY_free(pub);
        return -1;
    }
    if ((rc = keyset_add(l->ks, pub, source, kid, &dup, why, sizeof(why))) < 0) {
        snprintf(err, errlen, "%s: %s", source, why);
        return -1;
    }
    if (rc == 0) {
        keyset_warn(l, "%s: same public key as %s (kid %s); published once", source, dup->source, dup->kid);
        return 0;
    }
    k = &l->ks->keys[l->ks->count - 1];
    if (keyset_set_path(k, path, l->real) != 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (k->curve == NULL && k->bits < 2048)
        keyset_warn(l, "%s: RSA key of %d bits is below 2048 bits (kid %s); published anyway, as kube-apiserver does",
                    source, k->bits, k->kid);
    return 0;
}

/* pem_key_cb: adds one key of a PEM file. */
static int keyset_add_pem(void *ctx, EVP_PKEY *pub, const char *path, int block, int was_private, char *err,
                          size_t errlen)
{
    struct keyset_loader *l = ctx;
    char source[4096];

    if (was_private)
        keyset_check_private_mode(l, path);
    snprintf(source, sizeof(source), "%s (block %d)", path, block);
    return keyset_take(l, pub, path, source, NULL, err, errlen);
}

/* Where jwks_parse's warnings about a JWKS file go: prefixed with its path. */
struct keyset_jwks_warn {
    struct keyset_loader *l;
    const char *path;
};

static void keyset_jwks_warn(void *ctx, const char *msg)
{
    struct keyset_jwks_warn *w = ctx;

    keyset_warn(w->l, "%s: %s", w->path, msg);
}

/* Adds the keys of a JWKS file (`kubectl get --raw /openid/v1/jwks`), each
 * under the kid it has there (see jwks_parse). */
static int keyset_add_jwks(struct keyset_loader *l, const char *path, const char *text, size_t len, char *err,
                           size_t errlen)
{
    struct keyset_jwks_warn w = {l, path};
    char why[512], source[4200];
    struct keyset *doc = jwks_parse(text, len, keyset_jwks_warn, &w, why, sizeof(why));
    int rc = 0;

    if (doc == NULL) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    for (size_t i = 0; rc == 0 && i < doc->count; i++) {
        const struct key *k = &doc->keys[i];
        snprintf(source, sizeof(source), "%s (%s)", path, k->source);
        rc = EVP_PKEY_up_ref(k->pub) == 1 ? keyset_take(l, k->pub, path, source, k->kid, err, errlen) : -1;
    }
    keyset_free(doc);
    return rc;
}

/* Whether a key file's text is a JWKS document rather than PEM: JSON
 * starts with "{", PEM with "-----BEGIN" or free text before it. */
static int keyset_is_jwks(const char *text, size_t len)
{
    size_t i = 0;

    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
        i++;
    return i < len && text[i] == '{';
}

/* The PKI rules look at the file a path reaches, not at the name given:
 * a link named sa.key that leads to pki/ca.key is a CA's key. Refuses a
 * file reached under a CA's name, and reads the CA certificates beside it
 * (once per directory) for keyset_take to compare each key with. */
static int keyset_check_reached(struct keyset_loader *l, const char *path, char *err, size_t errlen)
{
    char real[4096], dir[4096];

    snprintf(real, sizeof(real), "%s", l->real ? l->real : path);
    snprintf(dir, sizeof(dir), "%s", real);
    if (pki_ca_named(basename(real))) {
        snprintf(err, errlen,
                 "%s: leads to %s, named like a CA's key or certificate: a CA's key must not sign "
                 "service-account tokens; point --service-account-key-file at the service-account key (sa.pub, "
                 "or sa.key) instead",
                 path, l->real ? l->real : path);
        return -1;
    }
    dirname(dir);
    if (l->cas != NULL && strcmp(pki_cas_dir(l->cas), dir) == 0)
        return 0;
    pki_cas_free(l->cas);
    if ((l->cas = pki_cas_read(dir, basename(real))) == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    return 0;
}

/* Reads one key file, PEM or JWKS; per-file state starts afresh. */
static int keyset_read_file(struct keyset_loader *l, const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    char *text = NULL;
    int rc = -1;

    l->mode_checked = 0;
    l->real = realpath(path, NULL);
    if (keyset_check_reached(l, path, err, errlen) == 0)
        text = file_read(path, PEM_MAX_FILE_SIZE, &len, NULL, err, errlen);
    if (text != NULL && keyset_is_jwks(text, len))
        rc = keyset_add_jwks(l, path, text, len, err, errlen);
    else if (text != NULL)
        rc = pem_read_mem(path, text, len, keyset_add_pem, l, err, errlen) < 0 ? -1 : 0;
    file_free(text, len);
    free(l->real);
    l->real = NULL;
    return rc;
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

/* A directory whose files include a CA's is a PKI directory (kubeadm's
 * /etc/kubernetes/pki): every private key in it would become a trusted
 * token-signing key. Refused before any of its files is read. */
static int keyset_check_pki_dir(const char *dir, struct dirent **names, int n, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        if (pki_ca_named(names[i]->d_name)) {
            snprintf(err, errlen,
                     "%s: looks like a PKI directory (it holds %s/%s): every key in it would be trusted to sign "
                     "service-account tokens; point --service-account-key-file at the service-account key "
                     "(%s/sa.pub, or sa.key) instead",
                     dir, dir, names[i]->d_name, dir);
            return -1;
        }
    }
    return 0;
}

/* Reads one entry of a directory source: a regular file (symlinks
 * followed) is read; a subdirectory or a dangling symlink (the kubelet
 * removes a Secret's stale links after its "..data" swap) is skipped;
 * anything else is an error. Returns 1 when read, 0 when skipped, -1. */
static int keyset_load_entry(struct keyset_loader *l, const char *path, char *err, size_t errlen)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return 0;
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen,
                 "%s: %s, not a regular file: a key directory may hold only key files (and subdirectories, "
                 "which are skipped); remove it",
                 path, file_kind(st.st_mode));
        return -1;
    }
    return keyset_read_file(l, path, err, errlen) == 0 ? 1 : -1;
}

/* Reads every regular file of dir (symlinks followed), sorted by name, so a
 * directory gives the same order on every host. */
static int keyset_load_dir(struct keyset_loader *l, const char *dir, char *err, size_t errlen)
{
    struct dirent **names = NULL;
    char path[4096];
    int n = scandir(dir, &names, keyset_visible, keyset_by_name), rc = 0, files = 0;

    if (n < 0) {
        snprintf(err, errlen, "%s: cannot read directory: %s", dir, strerror(errno));
        return -1;
    }
    rc = keyset_check_pki_dir(dir, names, n, err, errlen);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (rc == 0 && (rc = keyset_load_entry(l, path, err, errlen)) > 0) {
            files++;
            rc = 0;
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

/* Whoever can write where keys are read from can add a key that relying
 * parties will trust. A directory source must not let others add a file;
 * a file's directory must not let them replace it (sticky is enough). */
static void keyset_check_dir_mode(struct keyset_loader *l, const char *path, int is_dir)
{
    char dir[4096], msg[1024];

    snprintf(dir, sizeof(dir), "%s", path);
    if (is_dir ? keyfile_dir_mode_warning(path, "key directory", 0, msg, sizeof(msg))
               : keyfile_dir_mode_warning(dirname(dir), "directory of a key file", 1, msg, sizeof(msg)))
        keyset_warn(l, "%s", msg);
}

static int keyset_load_path(struct keyset_loader *l, const char *path, char *err, size_t errlen)
{
    char base[4096];
    struct stat st;
    int is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);

    keyset_check_dir_mode(l, path, is_dir);
    if (is_dir)
        return keyset_load_dir(l, path, err, errlen);
    snprintf(base, sizeof(base), "%s", path);
    if (pki_ca_named(basename(base))) {
        snprintf(err, errlen,
                 "%s: named like a CA's key or certificate: a CA's key must not sign service-account tokens; "
                 "point --service-account-key-file at the service-account key (sa.pub, or sa.key) instead",
                 path);
        return -1;
    }
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
    int rc = 0;

    if ((l.ks = keyset_new()) == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < npaths && rc == 0; i++)
        rc = keyset_load_path(&l, paths[i], err, errlen);
    if (rc == 0 && l.ks->count == 0) {
        snprintf(err, errlen, "no key files given");
        rc = -1;
    }
    pki_cas_free(l.cas);
    if (rc != 0) {
        keyset_free(l.ks);
        return NULL;
    }
    return l.ks;
}

int keyset_add_all(struct keyset *dst, const struct keyset *src, keyset_warn_cb warn, void *warn_ctx, char *err,
                   size_t errlen)
{
    char msg[2048];

    for (size_t i = 0; i < src->count; i++) {
        const struct key *k = &src->keys[i], *had = keyset_find(dst, k->kid);
        if (had != NULL && EVP_PKEY_eq(had->pub, k->pub) != 1 && warn != NULL) {
            snprintf(msg, sizeof(msg), "%.900s: kid %.64s names another key in %.900s; only that one is published",
                     k->source, k->kid, had->source);
            warn(warn_ctx, msg);
        }
        if (had == NULL && keyset_add_copy(dst, k, err, errlen) < 0)
            return -1;
    }
    return 0;
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
