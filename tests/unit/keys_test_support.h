/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the keys/ unit tests (tests/unit/test_keys_*.c) share: fixture paths
 * and files, the openssl CLI's independent computations, and loading keys with
 * their warnings collected.
 */
#ifndef KEYS_TEST_SUPPORT_H
#define KEYS_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/parameterized.h>

#include <limits.h>
#include <openssl/core_names.h>
#include <openssl/pem.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "keys/key.h"
#include "keys/keyset.h"
#include "keys/pem.h"
#include "util/file.h"

#include "test_support.h"

#define NOKEYS            "does not contain any valid RSA or ECDSA public keys"
#define SHA256_OF_NOTHING "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
#define COUNT(a)          (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------ */
/* Helpers: fixture paths, shell, files                                      */

/* Absolute path of a fixture; valid until 8 more calls. */
static inline const char *fx(const char *name)
{
    static char buf[8][PATH_MAX];
    static unsigned next;
    char *p = buf[next++ % 8];
    snprintf(p, PATH_MAX, "%s/%s", FIXTURES, name);
    return p;
}

/* Runs a shell command and stores its stdout, trailing newlines removed.
 * Fails the test when the command fails or prints nothing. */
static inline void sh(char *out, size_t outlen, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);

    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen(%s)", cmd);
    size_t n = fread(out, 1, outlen - 1, p);
    int rc = pclose(p);
    cr_assert_lt(n, outlen - 1, "output of %s too long", cmd);
    while (n > 0 && out[n - 1] == '\n')
        n--;
    out[n] = '\0';
    cr_assert_eq(rc, 0, "command failed (%d): %s", rc, cmd);
    cr_assert_gt(n, 0, "no output from %s", cmd);
}

/* Whole file into a malloc'ed buffer of exactly its size (no NUL). */
static inline char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc(n > 0 ? (size_t)n : 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* The texts of the named fixtures one after another (malloc'ed, no NUL). */
static inline char *concat(const char *const *names, size_t n, size_t *len)
{
    char *out = NULL;
    *len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t part;
        char *text = slurp(fx(names[i]), &part);
        out = realloc(out, *len + part);
        cr_assert_not_null(out);
        memcpy(out + *len, text, part);
        *len += part;
        free(text);
    }
    return out;
}

/* Writes data to a new temporary file whose name goes to path. */
static inline void write_tmp(const char *data, size_t len, char path[PATH_MAX])
{
    snprintf(path, PATH_MAX, "/tmp/test_keys.XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0, "mkstemp");
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* ------------------------------------------------------------------------ */
/* Independent computations with the openssl CLI                             */

enum src { PUB, PRIV, CERT };

/* Shell command writing the DER SubjectPublicKeyInfo of a fixture. */
static const char *const spki_der_cmd[] = {
    [PUB] = "openssl pkey -pubin -in '%s' -outform DER",
    [PRIV] = "openssl pkey -in '%s' -pubout -outform DER",
    [CERT] = "openssl x509 -in '%s' -pubkey -noout | openssl pkey -pubin -outform DER",
};

static inline void openssl_kid(enum src src, const char *path, char kid[KEY_KID_LEN + 1])
{
    char der[PATH_MAX + 128], out[128];
    snprintf(der, sizeof der, spki_der_cmd[src], path);
    sh(out, sizeof out, "%s | openssl dgst -sha256 -binary | basenc --base64url | tr -d '=\\n'", der);
    cr_assert_str_neq(out, SHA256_OF_NOTHING, "openssl could not read %s", path);
    cr_assert_eq(strlen(out), KEY_KID_LEN, "kid of %s: %s", path, out);
    strcpy(kid, out);
}

/* base64url (no padding) of n hex digits, through basenc. */
static inline void hex_b64url(const char *hex, size_t n, char *out, size_t outlen)
{
    sh(out, outlen, "printf %%s '%.*s' | tr a-f A-F | basenc --base16 -d | basenc --base64url -w0 | tr -d =", (int)n,
       hex);
}

/* Minimal big-endian modulus of an RSA public key file, as uppercase hex. */
static inline void openssl_modulus_hex(const char *pub, char *out, size_t outlen)
{
    sh(out, outlen, "openssl rsa -pubin -in '%s' -modulus -noout | cut -d= -f2", pub);
}

/* 04 || x || y of an EC public key file, as hex; x and y are padded. */
static inline void openssl_point_hex(const char *pub, char *out, size_t outlen)
{
    sh(out, outlen,
       "openssl ec -pubin -in '%s' -text -noout 2>/dev/null | sed -n '/^pub:/,/^[A-Z]/p' | grep '^ ' | tr -d ' :\\n'",
       pub);
    cr_assert_eq(strncmp(out, "04", 2), 0, "uncompressed point expected for %s: %s", pub, out);
}

/* Bytes encoded by an unpadded base64url string, or -1 when it is not one. */
static inline long b64url_decoded_len(const char *s)
{
    size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");
    if (s[n] != '\0' || n % 4 == 1)
        return -1;
    return (long)(n * 3 / 4);
}

/* ------------------------------------------------------------------------ */
/* Helpers: the code under test                                              */

static inline int has_private(const EVP_PKEY *pk)
{
    const char *param = EVP_PKEY_get_base_id(pk) == EVP_PKEY_RSA ? OSSL_PKEY_PARAM_RSA_D : OSSL_PKEY_PARAM_PRIV_KEY;
    BIGNUM *bn = NULL;
    int r = EVP_PKEY_get_bn_param(pk, param, &bn);
    BN_free(bn);
    return r == 1;
}

#define MAX_FOUND 8

/* What pem_read_* passed to the callback. */
struct found {
    int n;
    int stop_at; /* return non-zero on this call (1-based); 0: never */
    int block[MAX_FOUND];
    int was_private[MAX_FOUND];
    int base_id[MAX_FOUND];
    int priv_material[MAX_FOUND];
    char kid[MAX_FOUND][KEY_KID_LEN + 1];
    char path[MAX_FOUND][PATH_MAX];
};

static inline int collect(void *ctx, EVP_PKEY *pub, const char *path, int block, int was_private, char *err,
                          size_t errlen)
{
    struct found *f = ctx;
    cr_assert_lt(f->n, MAX_FOUND);
    cr_assert_not_null(pub);
    int i = f->n++;
    f->block[i] = block;
    f->was_private[i] = was_private;
    f->base_id[i] = EVP_PKEY_get_base_id(pub);
    f->priv_material[i] = has_private(pub);
    cr_assert_eq(key_kid(pub, f->kid[i]), 0, "key_kid failed in the callback");
    snprintf(f->path[i], PATH_MAX, "%s", path);
    EVP_PKEY_free(pub);
    if (f->n == f->stop_at) {
        snprintf(err, errlen, "stopped by the callback");
        return 1;
    }
    return 0;
}

#define MAX_WARN 8

struct warns {
    int n;
    char msg[MAX_WARN][1024];
    int mode_warnings; /* "readable by group or others", counted apart */
    char mode_msg[1024];
};

/* The permission warning depends on the umask the checkout was made with,
 * not on a fixture's content, so it is kept apart from the others;
 * keyset::private_key_mode tests it on its own. */
static inline void on_warn(void *ctx, const char *msg)
{
    struct warns *w = ctx;
    cr_assert_not_null(msg);
    if (strstr(msg, "readable by group or others") != NULL) {
        snprintf(w->mode_msg, sizeof w->mode_msg, "%s", msg);
        w->mode_warnings++;
        return;
    }
    cr_assert_lt(w->n, MAX_WARN, "too many warnings, last: %s", msg);
    snprintf(w->msg[w->n++], sizeof w->msg[0], "%s", msg);
}

/* keyset_load over fixture names. w may be NULL (no callback). */
static inline struct keyset *load(const char *const *names, size_t n, struct warns *w, char *err, size_t errlen)
{
    char paths[MAX_FOUND][PATH_MAX];
    char *argv[MAX_FOUND];
    cr_assert_leq(n, MAX_FOUND);
    for (size_t i = 0; i < n; i++) {
        snprintf(paths[i], PATH_MAX, "%s", fx(names[i]));
        argv[i] = paths[i];
    }
    err[0] = '\0';
    return keyset_load(argv, n, w ? on_warn : NULL, w, err, errlen);
}

/* Loads one fixture that must give exactly one key. */
static inline struct keyset *load_one(const char *name, struct warns *w)
{
    char err[1024];
    struct keyset *ks = load(&name, 1, w, err, sizeof err);
    cr_assert_not_null(ks, "keyset_load(%s): %s", name, err);
    cr_assert_eq(ks->count, 1, "%s: %zu keys", name, ks->count);
    return ks;
}

static inline EVP_PKEY *openssl_read_pub(const char *name)
{
    FILE *f = fopen(fx(name), "r");
    cr_assert_not_null(f, "open %s", name);
    EVP_PKEY *pk = PEM_read_PUBKEY(f, NULL, NULL, NULL);
    fclose(f);
    cr_assert_not_null(pk, "OpenSSL cannot read %s", name);
    return pk;
}

/* err names path and, outside the path (a fixture's name may contain the
 * phrase), says phrase. */
static inline void assert_err(const char *err, const char *path, const char *phrase)
{
    char rest[2048];
    snprintf(rest, sizeof rest, "%s", err);
    char *p = strstr(rest, path);
    cr_assert_not_null(p, "error does not name %s: \"%s\"", path, err);
    for (; p != NULL; p = strstr(p, path))
        memset(p, '_', strlen(path));
    if (phrase)
        cr_assert(strcasestr(rest, phrase) != NULL, "error lacks \"%s\": \"%s\"", phrase, err);
}

/* A good block then an unsupported one: the whole read fails, naming block 2. */
static const char *const good_then_unsupported[] = {"rsa2048.pub", "ed25519.pub"};

#endif
