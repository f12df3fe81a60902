/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/keydir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys/keyfile.h"
#include "util/json.h"
#include "util/jsonw.h"
#include "util/file.h"
#include "util/clock.h"

#define KEYDIR_VERSION 1
/* A directory holds the signing and next keys and those retired within
 * the longest token lifetime: a handful. Refuse anything absurd. */
#define KEYDIR_MAX_KEYS     1000
#define KEYDIR_MAX_STATE    (1024 * 1024)
#define KEYDIR_MAX_KEY_FILE (64 * 1024)
#define KEYDIR_KEY_PREFIX   "key-"
#define KEYDIR_KEY_SUFFIX   ".pem"
#define KEYDIR_TIME_MAX     ((int64_t)253402300799) /* 9999-12-31T23:59:59Z, as the retention state */
#define KEYDIR_AGE_MAX      ((int64_t)1 << 53)      /* exact in a JSON number */
#define KEYDIR_WHAT         "signing key directory"
#define KEYDIR_HARM         "make this server sign tokens with their own key"

const char *const keydir_types[] = {"rsa-2048", "rsa-3072", "ec-p256", NULL};

struct keydir *keydir_new(void)
{
    return calloc(1, sizeof(struct keydir));
}

static void keydir_pub_clear(struct keydir_pub *p)
{
    free(p->type);
    free(p->spki);
    EVP_PKEY_free(p->pk);
    memset(p, 0, sizeof(*p));
}

void keydir_free(struct keydir *kd)
{
    if (kd == NULL)
        return;
    for (size_t i = 0; i < kd->count; i++)
        keydir_pub_clear(&kd->pub[i]);
    free(kd->rot);
    free(kd->pub);
    free(kd);
}

int keydir_find(const struct keydir *kd, const char *kid)
{
    for (size_t i = 0; i < kd->count; i++)
        if (strcmp(kd->rot[i].kid, kid) == 0)
            return (int)i;
    return -1;
}

void keydir_role_of(const struct keydir *kd, const char *kid, const struct rotation_policy *p, time_t now,
                    struct keydir_role *out)
{
    int i = kd != NULL ? keydir_find(kd, kid) : -1;
    memset(out, 0, sizeof(*out));
    if (i < 0)
        return;
    out->name = rotation_role_name(kd->rot[i].role);
    if (kd->rot[i].role == ROTATION_RETIRED)
        clock_rfc3339(rotation_until(&kd->rot[i], p, now), out->until);
    snprintf(out->text, sizeof(out->text), "%s%s%s", out->name, out->until[0] ? " until " : "", out->until);
}

/* Appends a zeroed key; its index, or -1 when out of memory. */
static int keydir_push(struct keydir *kd)
{
    if (kd->count == kd->cap) {
        size_t cap = kd->cap ? kd->cap * 2 : 8;
        struct rotation_key *rot = realloc(kd->rot, cap * sizeof(*rot));
        struct keydir_pub *pub = rot ? realloc(kd->pub, cap * sizeof(*pub)) : NULL;
        if (rot != NULL)
            kd->rot = rot;
        if (pub == NULL)
            return -1;
        kd->pub = pub;
        kd->cap = cap;
    }
    memset(&kd->rot[kd->count], 0, sizeof(kd->rot[0]));
    memset(&kd->pub[kd->count], 0, sizeof(kd->pub[0]));
    return (int)kd->count++;
}

void keydir_forget(struct keydir *kd, size_t i, char kid[KEY_KID_LEN + 1])
{
    memcpy(kid, kd->rot[i].kid, KEY_KID_LEN + 1);
    keydir_pub_clear(&kd->pub[i]);
    memmove(&kd->rot[i], &kd->rot[i + 1], (kd->count - i - 1) * sizeof(kd->rot[0]));
    memmove(&kd->pub[i], &kd->pub[i + 1], (kd->count - i - 1) * sizeof(kd->pub[0]));
    kd->count--;
}

/* Whether a mode gives group or others any access: the directory and its
 * key files hold private keys, which are the owner's alone (0700, 0600:
 * what keydir creates). */
static int keydir_shared(mode_t mode)
{
    return (mode & (S_IRWXG | S_IRWXO)) != 0;
}

int keydir_open(const char *dir, int create, char *err, size_t errlen)
{
    struct stat st;
    int fd;

    if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s %s: cannot create: %s", KEYDIR_WHAT, dir, strerror(errno));
        return -1;
    }
    if ((fd = file_open_own_dir(dir, KEYDIR_WHAT, KEYDIR_HARM, err, errlen)) < 0 && errno == ENOENT)
        snprintf(err, errlen, "%s %s does not exist", KEYDIR_WHAT, dir);
    if (fd >= 0 && fstat(fd, &st) == 0 && keydir_shared(st.st_mode)) {
        snprintf(err, errlen,
                 "%s %s has mode %04o: it holds private keys, which group and others must not even list; chmod "
                 "700 it",
                 KEYDIR_WHAT, dir, (unsigned)(st.st_mode & 07777));
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Whether name is a key file's (key-KID.pem, any KID). */
static int keydir_key_file_name(const char *name)
{
    size_t len = strlen(name), plen = strlen(KEYDIR_KEY_PREFIX), slen = strlen(KEYDIR_KEY_SUFFIX);

    return len > plen + slen && strncmp(name, KEYDIR_KEY_PREFIX, plen) == 0 &&
           strcmp(name + len - slen, KEYDIR_KEY_SUFFIX) == 0;
}

int keydir_check_modes(const char *dir, char *err, size_t errlen)
{
    int fd = keydir_open(dir, 0, err, errlen), lfd = fd >= 0 ? dup(fd) : -1, rc = fd >= 0 ? 0 : -1;
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    struct dirent *e;
    struct stat st;

    if (fd >= 0 && d == NULL) {
        snprintf(err, errlen, "%s %s: cannot list: %s", KEYDIR_WHAT, dir, strerror(errno));
        rc = -1;
        if (lfd >= 0)
            close(lfd);
    }
    while (rc == 0 && d != NULL && (e = readdir(d)) != NULL) {
        if (!keydir_key_file_name(e->d_name) || fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || !keydir_shared(st.st_mode))
            continue;
        snprintf(err, errlen,
                 "%s/%s: private key file of the %s has mode %04o: only its owner may read it; chmod 600 it", dir,
                 e->d_name, KEYDIR_WHAT, (unsigned)(st.st_mode & 07777));
        rc = -1;
    }
    if (d != NULL)
        closedir(d);
    if (fd >= 0)
        close(fd);
    return rc;
}

int keydir_lock(const char *dir, int *lockfd, char *err, size_t errlen)
{
    int dirfd = keydir_open(dir, 0, err, errlen), fd = -1, rc = -1;

    if (dirfd < 0)
        return -1;
    if ((fd = openat(dirfd, KEYDIR_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        snprintf(err, errlen, "%s/%s: cannot open: %s", dir, KEYDIR_LOCK_FILE, strerror(errno));
    else if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        rc = 1;
    else if (errno == EWOULDBLOCK)
        rc = 0;
    else
        snprintf(err, errlen, "%s/%s: cannot lock: %s", dir, KEYDIR_LOCK_FILE, strerror(errno));
    if (rc == 1)
        *lockfd = fd;
    else if (fd >= 0)
        close(fd);
    close(dirfd);
    return rc;
}

/* The name of kid's key file. */
static void keydir_key_name(const char *kid, char *name, size_t len)
{
    snprintf(name, len, KEYDIR_KEY_PREFIX "%s" KEYDIR_KEY_SUFFIX, kid);
}

/* ---- rotation.json ------------------------------------------------------ */

static void keydir_put_int(struct jsonw *w, const char *name, int64_t v)
{
    char num[32];

    snprintf(num, sizeof(num), "%lld", (long long)v);
    jsonw_raw(w, ",", 1);
    jsonw_key(w, name);
    jsonw_lit(w, num);
}

static void keydir_render(const struct keydir *kd, struct jsonw *w)
{
    jsonw_lit(w, "{\"version\":1,\"keys\":[");
    for (size_t i = 0; i < kd->count; i++) {
        const struct rotation_key *r = &kd->rot[i];
        jsonw_lit(w, i ? ",\n{\"kid\":" : "\n{\"kid\":");
        jsonw_str(w, r->kid);
        jsonw_lit(w, ",\"role\":");
        jsonw_str(w, rotation_role_name(r->role));
        jsonw_lit(w, r->trusted ? ",\"trusted\":true,\"type\":" : ",\"trusted\":false,\"type\":");
        jsonw_str(w, kd->pub[i].type);
        keydir_put_int(w, "published_ms", r->published_ms);
        keydir_put_int(w, "signing_ms", r->signing_ms);
        keydir_put_int(w, "retired_ms", r->retired_ms);
        keydir_put_int(w, "keep_ms", r->keep_ms);
        keydir_put_int(w, "created", r->created);
        keydir_put_int(w, "published_at", r->published_at);
        keydir_put_int(w, "activated_at", r->activated_at);
        keydir_put_int(w, "retired_at", r->retired_at);
        jsonw_lit(w, ",\"spki\":");
        jsonw_str(w, kd->pub[i].spki);
        jsonw_lit(w, "}");
    }
    jsonw_lit(w, "\n]}\n");
}

int keydir_render_text(const struct keydir *kd, char **out, size_t *len)
{
    struct jsonw w = {0};

    keydir_render(kd, &w);
    return jsonw_finish(&w, out, len);
}

int keydir_save(const char *dir, const struct keydir *kd, char *err, size_t errlen)
{
    struct jsonw w = {0};
    char *buf = NULL;
    size_t len;
    int dirfd = -1, rc = -1;

    keydir_render(kd, &w);
    if (jsonw_finish(&w, &buf, &len) != 0)
        snprintf(err, errlen, "%s/%s: out of memory", dir, KEYDIR_STATE_FILE);
    else if ((dirfd = keydir_open(dir, 0, err, errlen)) >= 0 &&
             (rc = file_write_atomic_at(dirfd, KEYDIR_STATE_FILE, buf, len, 0600)) != 0)
        snprintf(err, errlen, "%s/%s: cannot write: %s", dir, KEYDIR_STATE_FILE, strerror(errno));
    if (dirfd >= 0)
        close(dirfd);
    free(buf);
    return rc;
}

/* An integer member in [0, max]; -1 when missing or anything else. */
static int64_t keydir_int(const struct json_value *obj, const char *name, int64_t max)
{
    int64_t n;

    return json_whole(json_get(obj, name), 0, max, &n) == 0 ? n : -1;
}

/* A role by name; -1 for none. */
static int keydir_role(const char *name)
{
    for (int r = ROTATION_NEXT; name != NULL && r <= ROTATION_RETIRED; r++)
        if (strcmp(name, rotation_role_name((enum rotation_role)r)) == 0)
            return r;
    return -1;
}

/* Whether a type name is a short lower-case word: it is only shown. */
static int keydir_type_ok(const char *type)
{
    size_t len = type ? strlen(type) : 0;

    return len > 0 && len <= 16 && strspn(type, "abcdefghijklmnopqrstuvwxyz0123456789-") == len;
}

/* Reads the times and ages of entry v into r; what is wrong, or NULL. */
static const char *keydir_parse_times(const struct json_value *v, struct rotation_key *r)
{
    int64_t *ages[] = {&r->published_ms, &r->signing_ms, &r->retired_ms, &r->keep_ms};
    const char *age_names[] = {"published_ms", "signing_ms", "retired_ms", "keep_ms"};
    time_t *dates[] = {&r->created, &r->published_at, &r->activated_at, &r->retired_at};
    const char *date_names[] = {"created", "published_at", "activated_at", "retired_at"};

    for (size_t i = 0; i < 4; i++) {
        if ((*ages[i] = keydir_int(v, age_names[i], KEYDIR_AGE_MAX)) < 0)
            return "an age (published_ms, signing_ms, retired_ms, keep_ms) is missing or not a whole number of "
                   "milliseconds from 0 to 2^53";
        int64_t date = keydir_int(v, date_names[i], KEYDIR_TIME_MAX);
        if (date < 0)
            return "a date (created, published_at, activated_at, retired_at) is missing or not a whole number of "
                   "seconds from 0 to 253402300799";
        *dates[i] = (time_t)date;
    }
    return NULL;
}

/* Reads entry v into key i of kd; what is wrong, or NULL. */
static const char *keydir_parse_entry(struct keydir *kd, size_t i, const struct json_value *v, char *why, size_t whylen)
{
    const char *kid = json_get_str(v, "kid"), *spki = json_get_str(v, "spki"), *type = json_get_str(v, "type");
    const struct json_value *trusted = json_get(v, "trusted");
    struct rotation_key *r = &kd->rot[i];
    struct keydir_pub *p = &kd->pub[i];
    char computed[KEY_KID_LEN + 1];
    int role = keydir_role(json_get_str(v, "role"));
    const char *problem;

    if (v->type != JSON_OBJECT || kid == NULL || spki == NULL || !keydir_type_ok(type) || role < 0 || trusted == NULL ||
        trusted->type != JSON_BOOL)
        return "missing or mistyped member (kid, role: next, signing or retired, trusted, type, spki)";
    if ((problem = keydir_parse_times(v, r)) != NULL)
        return problem;
    if ((p->pk = key_spki_decode(spki)) == NULL)
        return "spki is not a public key";
    if (key_check_type(p->pk, why, whylen) != 0)
        return why;
    if (key_kid(p->pk, computed) != 0 || strcmp(computed, kid) != 0)
        return "kid is not the one its spki gives";
    if (keydir_find(kd, kid) >= 0)
        return "an earlier key has the same kid";
    if ((p->spki = strdup(spki)) == NULL || (p->type = strdup(type)) == NULL)
        return "out of memory";
    memcpy(r->kid, kid, sizeof(r->kid));
    r->role = (enum rotation_role)role;
    r->trusted = trusted->boolean;
    return NULL;
}

/* Reads the parsed rotation.json root into kd; 0, or -1 with err. */
static int keydir_parse(const char *path, const struct json_value *root, struct keydir *kd, char *err, size_t errlen)
{
    const struct json_value *keys = json_get(root, "keys"), *v;
    char why[256];
    size_t i = 0;

    if (keydir_int(root, "version", KEYDIR_VERSION) != KEYDIR_VERSION || keys == NULL || keys->type != JSON_ARRAY) {
        snprintf(err, errlen, "%s: not a version %d %s file", path, KEYDIR_VERSION, KEYDIR_STATE_FILE);
        return -1;
    }
    for (v = keys->child; v != NULL; v = v->next, i++) {
        const char *problem;
        int at = i < KEYDIR_MAX_KEYS ? keydir_push(kd) : -1;
        /* The key is counted in kd even when its entry is bad, so that
         * keydir_free frees what was read of it. */
        problem = at < 0 ? "too many keys, or out of memory" : keydir_parse_entry(kd, (size_t)at, v, why, sizeof(why));
        if (problem != NULL) {
            snprintf(err, errlen, "%s: keys[%zu]: %s; restore the file from a backup or a copy of the directory", path,
                     i, problem);
            return -1;
        }
    }
    for (int r = ROTATION_NEXT; r <= ROTATION_SIGNING; r++) {
        int first = rotation_find(kd->rot, kd->count, (enum rotation_role)r);
        if (first >= 0 &&
            rotation_find(kd->rot + first + 1, kd->count - (size_t)first - 1, (enum rotation_role)r) >= 0) {
            snprintf(err, errlen, "%s: more than one %s key", path, rotation_role_name((enum rotation_role)r));
            return -1;
        }
    }
    return 0;
}

int keydir_parse_text(const char *name, const char *text, size_t len, struct keydir **out, char *err, size_t errlen)
{
    char why[256];
    struct json_value *root = NULL;
    struct keydir *kd = keydir_new();
    int rc = -1;

    *out = NULL;
    if (kd == NULL)
        snprintf(err, errlen, "out of memory");
    else if (len > KEYDIR_MAX_STATE)
        snprintf(err, errlen, "%s: larger than %d bytes", name, KEYDIR_MAX_STATE);
    else if ((root = json_parse((const unsigned char *)text, len, why, sizeof(why))) == NULL)
        snprintf(err, errlen, "%s: %s", name, why);
    else
        rc = keydir_parse(name, root, kd, err, errlen);
    json_free(root);
    if (rc != 0)
        keydir_free(kd);
    else
        *out = kd;
    return rc;
}

int keydir_read(const char *dir, struct keydir **out, char *err, size_t errlen)
{
    char path[4096], why[256], *text = NULL;
    struct json_value *root = NULL;
    struct keydir *kd = keydir_new();
    int dirfd = -1, rc = -1;
    size_t len = 0;

    *out = NULL;
    snprintf(path, sizeof(path), "%s/%s", dir, KEYDIR_STATE_FILE);
    if (kd == NULL)
        snprintf(err, errlen, "out of memory");
    else if ((dirfd = keydir_open(dir, 0, err, errlen)) >= 0 &&
             (rc = file_read_at(dirfd, KEYDIR_STATE_FILE, path, "signing key state", KEYDIR_MAX_STATE, &text, &len, err,
                                errlen)) == 0) {
        if ((root = json_parse((const unsigned char *)text, len, why, sizeof(why))) == NULL) {
            snprintf(err, errlen, "%s: %s", path, why);
            rc = -1;
        } else {
            rc = keydir_parse(path, root, kd, err, errlen);
        }
    }
    if (dirfd >= 0)
        close(dirfd);
    json_free(root);
    free(text);
    if (rc < 0) {
        keydir_free(kd);
        kd = NULL;
    }
    *out = kd;
    return rc;
}

/* ---- key files ---------------------------------------------------------- */

/* The public half of priv, as the directory stores it. */
static int keydir_fill_pub(struct keydir_pub *p, struct rotation_key *r, EVP_PKEY *priv, char *err, size_t errlen)
{
    char type[32];
    struct key k;

    if ((p->pk = key_public_only(priv)) == NULL || EVP_PKEY_up_ref(p->pk) != 1) {
        snprintf(err, errlen, "cannot derive the public key");
        return -1;
    }
    if (key_init(&k, p->pk, "", NULL, err, errlen) != 0) /* takes the reference just added */
        return -1;
    if (k.curve != NULL)
        snprintf(type, sizeof(type), "ec-p%s", k.curve + 2);
    else
        snprintf(type, sizeof(type), "rsa-%d", k.bits);
    memcpy(r->kid, k.kid, sizeof(r->kid));
    key_clear(&k);
    if ((p->spki = key_spki_encode(p->pk)) == NULL || (p->type = strdup(type)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Writes priv into the directory as its key file and appends it to kd. */
static int keydir_add(const char *dir, struct keydir *kd, EVP_PKEY *priv, enum rotation_role role, int trusted,
                      time_t now, char *err, size_t errlen)
{
    char name[64];
    int i = keydir_push(kd), dirfd = -1;

    if (i < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (keydir_fill_pub(&kd->pub[i], &kd->rot[i], priv, err, errlen) != 0)
        goto fail;
    if (keydir_find(kd, kd->rot[i].kid) != i) {
        snprintf(err, errlen, "key %s is in the directory already", kd->rot[i].kid);
        goto fail;
    }
    keydir_key_name(kd->rot[i].kid, name, sizeof(name));
    if ((dirfd = keydir_open(dir, 0, err, errlen)) < 0)
        goto fail;
    if (keyfile_write_pem_at(dirfd, name, priv, 1, 0600) != 0) {
        snprintf(err, errlen, "%s/%s: cannot write: %s", dir, name, strerror(errno));
        goto fail;
    }
    close(dirfd);
    kd->rot[i].role = role;
    kd->rot[i].trusted = trusted;
    kd->rot[i].created = now;
    kd->rot[i].activated_at = role == ROTATION_SIGNING ? now : 0;
    return i;

fail:
    if (dirfd >= 0)
        close(dirfd);
    keydir_pub_clear(&kd->pub[i]);
    kd->count--;
    return -1;
}

/* A new private key of type; NULL for an unknown type or a failure. */
static EVP_PKEY *keydir_keygen(const char *type)
{
    if (strcmp(type, "rsa-2048") == 0)
        return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    if (strcmp(type, "rsa-3072") == 0)
        return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)3072);
    if (strcmp(type, "ec-p256") == 0)
        return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    return NULL;
}

int keydir_generate(const char *dir, struct keydir *kd, const char *type, enum rotation_role role, int trusted,
                    time_t now, char *err, size_t errlen)
{
    EVP_PKEY *priv = keydir_keygen(type);
    int i;

    if (priv == NULL) {
        snprintf(err, errlen, "cannot generate a %s key", type);
        ERR_clear_error();
        return -1;
    }
    i = keydir_add(dir, kd, priv, role, trusted, now, err, errlen);
    EVP_PKEY_free(priv);
    return i;
}

int keydir_import(const char *dir, struct keydir *kd, const char *path, time_t now, char *err, size_t errlen)
{
    char why[512];
    EVP_PKEY *priv = keyfile_read_private(path, err, errlen);
    int i = -1;

    if (priv != NULL && (i = keydir_add(dir, kd, priv, ROTATION_SIGNING, 1, now, why, sizeof(why))) < 0)
        snprintf(err, errlen, "%s: %s", path, why);
    EVP_PKEY_free(priv);
    return i;
}

int keydir_remove_file(const char *dir, const char *kid, char *err, size_t errlen)
{
    char name[64];
    int dirfd = keydir_open(dir, 0, err, errlen), rc = -1;

    if (dirfd < 0)
        return -1;
    keydir_key_name(kid, name, sizeof(name));
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        rc = 0;
    else
        snprintf(err, errlen, "%s/%s: cannot remove: %s", dir, name, strerror(errno));
    close(dirfd);
    return rc;
}

EVP_PKEY *keydir_load_private(const char *dir, const char *kid, char *err, size_t errlen)
{
    char name[64], path[4200], computed[KEY_KID_LEN + 1], *pem = NULL;
    int dirfd = keydir_open(dir, 0, err, errlen);
    EVP_PKEY *priv = NULL;
    size_t len = 0;

    keydir_key_name(kid, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (dirfd < 0)
        return NULL;
    if (file_read_at(dirfd, name, path, "signing key file", KEYDIR_MAX_KEY_FILE, &pem, &len, err, errlen) > 0)
        snprintf(err, errlen, "signing key file %s is missing, though %s names it", path, KEYDIR_STATE_FILE);
    else if (pem != NULL && (priv = keyfile_private_from_pem(pem, len)) == NULL)
        snprintf(err, errlen, "signing key file %s holds no private key", path);
    else if (priv != NULL && (key_kid(priv, computed) != 0 || strcmp(computed, kid) != 0)) {
        snprintf(err, errlen, "signing key file %s holds another key than the one of its name", path);
        EVP_PKEY_free(priv);
        priv = NULL;
    }
    file_free(pem, len);
    close(dirfd);
    return priv;
}

char *keydir_key_pem(const char *dir, const char *kid, size_t *len, char *err, size_t errlen)
{
    char name[64], path[4200], *pem = NULL;
    int dirfd = keydir_open(dir, 0, err, errlen);

    if (dirfd < 0)
        return NULL;
    keydir_key_name(kid, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (file_read_at(dirfd, name, path, "signing key file", KEYDIR_MAX_KEY_FILE, &pem, len, err, errlen) > 0)
        snprintf(err, errlen, "signing key file %s is missing, though %s names it", path, KEYDIR_STATE_FILE);
    close(dirfd);
    return pem;
}

int keydir_install_key(const char *dir, const char *kid, const char *pem, size_t len, char *err, size_t errlen)
{
    char name[64], computed[KEY_KID_LEN + 1];
    EVP_PKEY *priv = keyfile_private_from_pem(pem, len);
    int dirfd = -1, rc = -1;

    if (priv == NULL)
        snprintf(err, errlen, "kid=%s: no private key in it", kid);
    else if (key_kid(priv, computed) != 0 || strcmp(computed, kid) != 0)
        snprintf(err, errlen, "kid=%s: holds another key than kid %s", kid, kid);
    else if ((dirfd = keydir_open(dir, 0, err, errlen)) >= 0) {
        keydir_key_name(kid, name, sizeof(name));
        if ((rc = keyfile_write_pem_at(dirfd, name, priv, 1, 0600)) != 0)
            snprintf(err, errlen, "%s/%s: cannot write: %s", dir, name, strerror(errno));
    }
    if (dirfd >= 0)
        close(dirfd);
    EVP_PKEY_free(priv);
    return rc;
}

int keydir_add_public(const char *dir, const struct keydir *kd, struct keyset *ks, char *err, size_t errlen)
{
    char source[4200], name[64], why[256] = "out of memory";
    const struct key *dup;

    for (size_t i = 0; i < kd->count; i++) {
        keydir_key_name(kd->rot[i].kid, name, sizeof(name));
        snprintf(source, sizeof(source), "%s/%s", dir, name);
        if (EVP_PKEY_up_ref(kd->pub[i].pk) != 1 ||
            keyset_add(ks, kd->pub[i].pk, source, NULL, &dup, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "%s: %s", source, why);
            return -1;
        }
    }
    return 0;
}

/* Whether name is one of the directory's own files given kd. */
static int keydir_own_name(const struct keydir *kd, const char *name)
{
    size_t len = strlen(name), plen = strlen(KEYDIR_KEY_PREFIX), slen = strlen(KEYDIR_KEY_SUFFIX);
    char kid[KEY_KID_LEN + 1];

    if (strcmp(name, KEYDIR_STATE_FILE) == 0 || strcmp(name, KEYDIR_LOCK_FILE) == 0 ||
        strcmp(name, KEYDIR_STATE_FILE ".tmp") == 0)
        return 1;
    if (len > 4 && strcmp(name + len - 4, ".tmp") == 0)
        len -= 4; /* a key file being written */
    if (len != plen + KEY_KID_LEN + slen || strncmp(name, KEYDIR_KEY_PREFIX, plen) != 0 ||
        strncmp(name + plen + KEY_KID_LEN, KEYDIR_KEY_SUFFIX, slen) != 0)
        return 0;
    memcpy(kid, name + plen, KEY_KID_LEN);
    kid[KEY_KID_LEN] = '\0';
    return keydir_find(kd, kid) >= 0;
}

void keydir_report_foreign(const char *dir, const struct keydir *kd, keyset_warn_cb warn, void *warn_ctx)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char msg[4600];

    while (d != NULL && warn != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || keydir_own_name(kd, e->d_name))
            continue;
        snprintf(msg, sizeof(msg),
                 "%s/%s: not a file of the signing key directory (%s names no such key); ignored: neither "
                 "published nor used to sign. Move it out of %s",
                 dir, e->d_name, KEYDIR_STATE_FILE, dir);
        warn(warn_ctx, msg);
    }
    if (d != NULL)
        closedir(d);
}
