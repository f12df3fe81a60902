/*
 * Unit tests for keys/pem, keys/key and keys/keyset.
 *
 * Expected values (kid, n, x, y) are computed at test time by the openssl CLI
 * and coreutils basenc, independently of the code under test.
 */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"
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

#define NOKEYS            "does not contain any valid RSA or ECDSA public keys"
#define SHA256_OF_NOTHING "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
#define COUNT(a)          (sizeof(a) / sizeof((a)[0]))

TestSuite(forms, .fini = leak_check);
TestSuite(pem, .fini = leak_check);
TestSuite(errors, .fini = leak_check);
TestSuite(key, .fini = leak_check);
TestSuite(keyset, .fini = leak_check);
TestSuite(sources, .fini = leak_check);

/* ------------------------------------------------------------------------ */
/* Helpers: fixture paths, shell, files                                      */

/* Absolute path of a fixture; valid until 8 more calls. */
static const char *fx(const char *name)
{
    static char buf[8][PATH_MAX];
    static unsigned next;
    char *p = buf[next++ % 8];
    snprintf(p, PATH_MAX, "%s/%s", FIXTURES, name);
    return p;
}

/* Runs a shell command and stores its stdout, trailing newlines removed.
 * Fails the test when the command fails or prints nothing. */
static void sh(char *out, size_t outlen, const char *fmt, ...)
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
static char *slurp(const char *path, size_t *len)
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
static char *concat(const char *const *names, size_t n, size_t *len)
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
static void write_tmp(const char *data, size_t len, char path[PATH_MAX])
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

static void openssl_kid(enum src src, const char *path, char kid[KEY_KID_LEN + 1])
{
    char der[PATH_MAX + 128], out[128];
    snprintf(der, sizeof der, spki_der_cmd[src], path);
    sh(out, sizeof out, "%s | openssl dgst -sha256 -binary | basenc --base64url | tr -d '=\\n'", der);
    cr_assert_str_neq(out, SHA256_OF_NOTHING, "openssl could not read %s", path);
    cr_assert_eq(strlen(out), KEY_KID_LEN, "kid of %s: %s", path, out);
    strcpy(kid, out);
}

/* base64url (no padding) of n hex digits, through basenc. */
static void hex_b64url(const char *hex, size_t n, char *out, size_t outlen)
{
    sh(out, outlen, "printf %%s '%.*s' | tr a-f A-F | basenc --base16 -d | basenc --base64url -w0 | tr -d =", (int)n,
       hex);
}

/* Minimal big-endian modulus of an RSA public key file, as uppercase hex. */
static void openssl_modulus_hex(const char *pub, char *out, size_t outlen)
{
    sh(out, outlen, "openssl rsa -pubin -in '%s' -modulus -noout | cut -d= -f2", pub);
}

/* 04 || x || y of an EC public key file, as hex; x and y are padded. */
static void openssl_point_hex(const char *pub, char *out, size_t outlen)
{
    sh(out, outlen,
       "openssl ec -pubin -in '%s' -text -noout 2>/dev/null | sed -n '/^pub:/,/^[A-Z]/p' | grep '^ ' | tr -d ' :\\n'",
       pub);
    cr_assert_eq(strncmp(out, "04", 2), 0, "uncompressed point expected for %s: %s", pub, out);
}

/* Bytes encoded by an unpadded base64url string, or -1 when it is not one. */
static long b64url_decoded_len(const char *s)
{
    size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");
    if (s[n] != '\0' || n % 4 == 1)
        return -1;
    return (long)(n * 3 / 4);
}

/* ------------------------------------------------------------------------ */
/* Helpers: the code under test                                              */

static int has_private(const EVP_PKEY *pk)
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

static int collect(void *ctx, EVP_PKEY *pub, const char *path, int block, int was_private, char *err, size_t errlen)
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
static void on_warn(void *ctx, const char *msg)
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
static struct keyset *load(const char *const *names, size_t n, struct warns *w, char *err, size_t errlen)
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
static struct keyset *load_one(const char *name, struct warns *w)
{
    char err[1024];
    struct keyset *ks = load(&name, 1, w, err, sizeof err);
    cr_assert_not_null(ks, "keyset_load(%s): %s", name, err);
    cr_assert_eq(ks->count, 1, "%s: %zu keys", name, ks->count);
    return ks;
}

static EVP_PKEY *openssl_read_pub(const char *name)
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
static void assert_err(const char *err, const char *path, const char *phrase)
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

/* ------------------------------------------------------------------------ */
/* Every accepted form                                                       */

/* Criterion hands parameters to tests in another process: no pointers. */
struct form {
    char file[32];
    enum src src;
    char alg[8];
    char curve[8]; /* "" for RSA */
    int bits;
    int block; /* PEM block holding the key */
    int was_private;
    char pub[32]; /* the PUBLIC KEY fixture of the same key */
};

static struct form forms[] = {
    {"rsa2048.pkcs1.key", PRIV, "RS256", "", 2048, 1, 1, "rsa2048.pub"},
    {"rsa2048.pkcs8.key", PRIV, "RS256", "", 2048, 1, 1, "rsa2048.pub"},
    {"rsa2048.pub", PUB, "RS256", "", 2048, 1, 0, "rsa2048.pub"},
    {"rsa2048.pkcs1.pub", PUB, "RS256", "", 2048, 1, 0, "rsa2048.pub"},
    {"rsa2048.crt", CERT, "RS256", "", 2048, 1, 0, "rsa2048.pub"},
    {"unknown-block.pem", PUB, "RS256", "", 2048, 2, 0, "rsa2048.pub"},
    {"rsa1024.pub", PUB, "RS256", "", 1024, 1, 0, "rsa1024.pub"},
    {"rsa4096.pub", PUB, "RS256", "", 4096, 1, 0, "rsa4096.pub"},
    {"ec256.params.key", PRIV, "ES256", "P-256", 256, 2, 1, "ec256.pub"},
    {"ec256.sec1.key", PRIV, "ES256", "P-256", 256, 1, 1, "ec256.pub"},
    {"ec256.pkcs8.key", PRIV, "ES256", "P-256", 256, 1, 1, "ec256.pub"},
    {"ec256.pub", PUB, "ES256", "P-256", 256, 1, 0, "ec256.pub"},
    {"ec384.sec1.key", PRIV, "ES384", "P-384", 384, 1, 1, "ec384.pub"},
    {"ec384.pub", PUB, "ES384", "P-384", 384, 1, 0, "ec384.pub"},
    {"ec521.padded.sec1.key", PRIV, "ES512", "P-521", 521, 1, 1, "ec521.padded.pub"},
    {"ec521.padded.pub", PUB, "ES512", "P-521", 521, 1, 0, "ec521.padded.pub"},
};

static const char *const rsa_members[] = {"use", "kty", "kid", "alg", "n", "e"};
static const char *const ec_members[] = {"use", "kty", "kid", "crv", "alg", "x", "y"};
static const char *const private_members[] = {"d", "p", "q", "dp", "dq", "qi"};

/* The exact JWK of f's key, from openssl's view of its public key. */
static void expected_jwk(const struct form *f, const char *kid, char *out, size_t outlen)
{
    char hex[4096], a[1024], b[1024];
    if (!*f->curve) {
        openssl_modulus_hex(fx(f->pub), hex, sizeof hex);
        cr_assert_eq(strlen(hex), (size_t)f->bits / 4, "modulus of %s: %s", f->pub, hex);
        hex_b64url(hex, strlen(hex), a, sizeof a);
        snprintf(out, outlen,
                 "{\"use\":\"sig\",\"kty\":\"RSA\",\"kid\":\"%s\",\"alg\":\"RS256\",\"n\":\"%s\",\"e\":\"AQAB\"}", kid,
                 a);
        return;
    }
    openssl_point_hex(fx(f->pub), hex, sizeof hex);
    size_t coord = (strlen(hex) - 2) / 2;
    cr_assert_eq(coord, 2 * (((size_t)f->bits + 7) / 8), "point of %s: %s", f->pub, hex);
    hex_b64url(hex + 2, coord, a, sizeof a);
    hex_b64url(hex + 2 + coord, coord, b, sizeof b);
    snprintf(out, outlen,
             "{\"use\":\"sig\",\"kty\":\"EC\",\"kid\":\"%s\",\"crv\":\"%s\",\"alg\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"}",
             kid, f->curve, f->alg, a, b);
}

static yajl_val parse_jwk(const struct key *k)
{
    char errbuf[256];
    cr_assert_eq(strlen(k->jwk), k->jwk_len, "jwk_len %zu for %s", k->jwk_len, k->jwk);
    yajl_val v = yajl_tree_parse(k->jwk, errbuf, sizeof errbuf);
    cr_assert_not_null(v, "jwk is not JSON (%s): %s", errbuf, k->jwk);
    cr_assert(YAJL_IS_OBJECT(v), "jwk is not an object: %s", k->jwk);
    return v;
}

static const char *member(yajl_val obj, const char *name)
{
    const char *path[] = {name, NULL};
    yajl_val v = yajl_tree_get(obj, path, yajl_t_string);
    cr_assert_not_null(v, "member %s missing or not a string", name);
    return YAJL_GET_STRING(v);
}

/* A key file as the key set reads one (keys/keyset.c): file_read, then
 * pem_read_mem. */
static int read_pem(const char *path, pem_key_cb cb, void *ctx, char *err, size_t errlen)
{
    size_t len = 0;
    char *text = file_read(path, PEM_MAX_FILE_SIZE, &len, NULL, err, errlen);
    int rc = text != NULL ? pem_read_mem(path, text, len, cb, ctx, err, errlen) : -1;

    file_free(text, len);
    return rc;
}

ParameterizedTestParameters(forms, pem)
{
    return cr_make_param_array(struct form, forms, COUNT(forms));
}

ParameterizedTest(struct form *f, forms, pem)
{
    struct found found = {0};
    char err[1024] = "";
    const char *path = fx(f->file);
    int n = read_pem(path, collect, &found, err, sizeof err);
    cr_assert_eq(n, 1, "%s: read_pem gave %d (%s)", f->file, n, err);
    cr_assert_eq(found.n, 1, "%s: callback called %d times", f->file, found.n);
    cr_assert_eq(found.block[0], f->block, "%s: block %d", f->file, found.block[0]);
    cr_assert_eq(found.was_private[0], f->was_private, "%s: was_private %d", f->file, found.was_private[0]);
    cr_assert_eq(found.base_id[0], *f->curve ? EVP_PKEY_EC : EVP_PKEY_RSA, "%s: key type", f->file);
    cr_assert_not(found.priv_material[0], "%s: callback got private material", f->file);
    cr_assert_str_eq(found.path[0], path);
}

ParameterizedTestParameters(forms, key)
{
    return cr_make_param_array(struct form, forms, COUNT(forms));
}

ParameterizedTest(struct form *f, forms, key)
{
    struct keyset *ks = load_one(f->file, NULL);
    const struct key *k = &ks->keys[0];
    cr_assert_str_eq(k->alg, f->alg, "%s", f->file);
    if (*f->curve)
        cr_assert_str_eq(k->curve, f->curve, "%s", f->file);
    else
        cr_assert_null(k->curve, "%s: curve %s", f->file, k->curve);
    cr_assert_eq(k->bits, f->bits, "%s: bits %d", f->file, k->bits);
    cr_assert_not_null(k->pub);
    cr_assert_eq(EVP_PKEY_get_base_id(k->pub), *f->curve ? EVP_PKEY_EC : EVP_PKEY_RSA, "%s", f->file);
    cr_assert_not(has_private(k->pub), "%s: struct key holds private material", f->file);
    cr_assert(strstr(k->source, fx(f->file)) != NULL, "%s: source \"%s\"", f->file, k->source);
    keyset_free(ks);
}

ParameterizedTestParameters(forms, kid)
{
    return cr_make_param_array(struct form, forms, COUNT(forms));
}

/* The kid matches openssl's, over this file and over the key's PUBLIC KEY
 * fixture: all forms of one key share one kid. */
ParameterizedTest(struct form *f, forms, kid)
{
    char own[KEY_KID_LEN + 1], canonical[KEY_KID_LEN + 1];
    openssl_kid(f->src, fx(f->file), own);
    openssl_kid(PUB, fx(f->pub), canonical);
    cr_assert_str_eq(own, canonical, "fixture %s is not the key of %s", f->file, f->pub);

    struct keyset *ks = load_one(f->file, NULL);
    cr_assert_str_eq(ks->keys[0].kid, canonical, "%s", f->file);
    keyset_free(ks);
}

ParameterizedTestParameters(forms, jwk_exact)
{
    return cr_make_param_array(struct form, forms, COUNT(forms));
}

ParameterizedTest(struct form *f, forms, jwk_exact)
{
    char kid[KEY_KID_LEN + 1], want[4096];
    openssl_kid(PUB, fx(f->pub), kid);
    expected_jwk(f, kid, want, sizeof want);

    struct keyset *ks = load_one(f->file, NULL);
    const struct key *k = &ks->keys[0];
    cr_assert_str_eq(k->jwk, want, "%s", f->file);
    cr_assert_eq(k->jwk_len, strlen(want), "%s: jwk_len", f->file);
    keyset_free(ks);
}

ParameterizedTestParameters(forms, jwk_members)
{
    return cr_make_param_array(struct form, forms, COUNT(forms));
}

/* Structure through a JSON parser: member order, values, sizes, no private
 * members. */
ParameterizedTest(struct form *f, forms, jwk_members)
{
    struct keyset *ks = load_one(f->file, NULL);
    const struct key *k = &ks->keys[0];
    yajl_val v = parse_jwk(k);

    const char *const *names = *f->curve ? ec_members : rsa_members;
    size_t count = *f->curve ? COUNT(ec_members) : COUNT(rsa_members);
    cr_assert_eq(v->u.object.len, count, "%s: %zu members in %s", f->file, v->u.object.len, k->jwk);
    for (size_t i = 0; i < count; i++)
        cr_assert_str_eq(v->u.object.keys[i], names[i], "%s: member %zu", f->file, i);
    for (size_t i = 0; i < COUNT(private_members); i++) {
        const char *path[] = {private_members[i], NULL};
        cr_assert_null(yajl_tree_get(v, path, yajl_t_any), "%s: private member %s", f->file, private_members[i]);
    }

    cr_assert_str_eq(member(v, "use"), "sig");
    cr_assert_str_eq(member(v, "kid"), k->kid);
    cr_assert_str_eq(member(v, "alg"), f->alg);
    if (*f->curve) {
        long size = (f->bits + 7) / 8;
        cr_assert_str_eq(member(v, "kty"), "EC");
        cr_assert_str_eq(member(v, "crv"), f->curve);
        cr_assert_eq(b64url_decoded_len(member(v, "x")), size, "%s: x is not %ld bytes", f->file, size);
        cr_assert_eq(b64url_decoded_len(member(v, "y")), size, "%s: y is not %ld bytes", f->file, size);
    } else {
        /* DER puts 0x00 before a modulus with its top bit set; n must not. */
        cr_assert_str_eq(member(v, "kty"), "RSA");
        cr_assert_eq(b64url_decoded_len(member(v, "n")), f->bits / 8, "%s: n is not %d bytes", f->file, f->bits / 8);
        cr_assert_str_eq(member(v, "e"), "AQAB");
    }
    yajl_tree_free(v);
    keyset_free(ks);
}

/* The fixture really exercises padding, and x and y are padded to 66 bytes. */
Test(key, p521_coordinates_padded)
{
    char hex[1024], x[128], y[128];
    openssl_point_hex(fx("ec521.padded.pub"), hex, sizeof hex);
    cr_assert_eq(strlen(hex), 2 + 2 * 132, "%s", hex);
    const char *hx = hex + 2, *hy = hex + 2 + 132;
    cr_assert(strncmp(hx, "0000", 4) == 0 || strncmp(hy, "0000", 4) == 0,
              "fixture needs no padding beyond the top byte: %s", hex);
    hex_b64url(hx, 132, x, sizeof x);
    hex_b64url(hy, 132, y, sizeof y);

    struct keyset *ks = load_one("ec521.padded.pub", NULL);
    yajl_val v = parse_jwk(&ks->keys[0]);
    cr_assert_eq(b64url_decoded_len(member(v, "x")), 66);
    cr_assert_eq(b64url_decoded_len(member(v, "y")), 66);
    cr_assert_str_eq(member(v, "x"), x);
    cr_assert_str_eq(member(v, "y"), y);
    yajl_tree_free(v);
    keyset_free(ks);
}

/* ------------------------------------------------------------------------ */
/* pem: several blocks, memory input, callback control                       */

static const char *const multi_pubs[] = {"rsa2048.pub", "ec256.pub", "ec384.pub"};

static void assert_multi(const struct found *found, const char *what)
{
    cr_assert_eq(found->n, 3, "%s: %d keys", what, found->n);
    for (int i = 0; i < 3; i++) {
        char kid[KEY_KID_LEN + 1];
        openssl_kid(PUB, fx(multi_pubs[i]), kid);
        cr_assert_eq(found->block[i], i + 1, "%s: key %d in block %d", what, i, found->block[i]);
        cr_assert_eq(found->was_private[i], 0);
        cr_assert_str_eq(found->kid[i], kid, "%s: key %d is not %s", what, i, multi_pubs[i]);
    }
}

Test(pem, multi_file_in_order)
{
    struct found found = {0};
    char err[1024] = "";
    int n = read_pem(fx("multi.pem"), collect, &found, err, sizeof err);
    cr_assert_eq(n, 3, "read_pem: %d (%s)", n, err);
    assert_multi(&found, "multi.pem");
}

/* The buffer is exactly the file, with no NUL after it (ASan checks reads). */
Test(pem, multi_from_memory)
{
    struct found found = {0};
    char err[1024] = "";
    size_t len;
    char *pem = slurp(fx("multi.pem"), &len);
    int n = pem_read_mem("inline", pem, len, collect, &found, err, sizeof err);
    cr_assert_eq(n, 3, "pem_read_mem: %d (%s)", n, err);
    assert_multi(&found, "memory");
    free(pem);
}

/* pem does not de-duplicate; that is the keyset's job. */
Test(pem, duplicate_reported_twice)
{
    struct found found = {0};
    char err[1024] = "";
    int n = read_pem(fx("dup.pem"), collect, &found, err, sizeof err);
    cr_assert_eq(n, 2, "read_pem: %d (%s)", n, err);
    cr_assert_str_eq(found.kid[0], found.kid[1]);
    cr_assert_eq(found.was_private[0], 1);
    cr_assert_eq(found.was_private[1], 0);
    cr_assert_eq(found.block[1], 2);
}

Test(pem, callback_stops_read)
{
    struct found found = {.stop_at = 2};
    char err[1024] = "";
    int n = read_pem(fx("multi.pem"), collect, &found, err, sizeof err);
    cr_assert_eq(n, -1);
    cr_assert_eq(found.n, 2, "callback called %d times after asking to stop", found.n);
    cr_assert(strstr(err, "stopped by the callback") != NULL, "callback message lost: \"%s\"", err);
}

/* Variants of rsa2048.pub text that still hold exactly that key. */
static void read_variant(const char *prefix, int crlf, int strip_last_newline)
{
    size_t len;
    char *src = slurp(fx("rsa2048.pub"), &len);
    size_t plen = strlen(prefix);
    char *pem = malloc(plen + 2 * len);
    cr_assert_not_null(pem);
    memcpy(pem, prefix, plen);
    size_t n = plen;
    for (size_t i = 0; i < len; i++) {
        if (crlf && src[i] == '\n')
            pem[n++] = '\r';
        pem[n++] = src[i];
    }
    if (strip_last_newline)
        n -= crlf ? 2 : 1;

    struct found found = {0};
    char err[1024] = "", kid[KEY_KID_LEN + 1];
    int r = pem_read_mem("variant", pem, n, collect, &found, err, sizeof err);
    cr_assert_eq(r, 1, "prefix=\"%s\" crlf=%d strip=%d: %d (%s)", prefix, crlf, strip_last_newline, r, err);
    openssl_kid(PUB, fx("rsa2048.pub"), kid);
    cr_assert_str_eq(found.kid[0], kid);
    free(pem);
    free(src);
}

Test(pem, crlf_line_endings)
{
    read_variant("", 1, 0);
}

Test(pem, no_final_newline)
{
    read_variant("", 0, 1);
}

Test(pem, text_before_block)
{
    read_variant("Subject: test key\nnot base64 !\n\n", 0, 0);
}

/* A good block then an unsupported one: the whole read fails, naming block 2. */
static const char *const good_then_unsupported[] = {"rsa2048.pub", "ed25519.pub"};

Test(pem, unsupported_second_block)
{
    size_t len;
    char *pem = concat(good_then_unsupported, COUNT(good_then_unsupported), &len);
    struct found found = {0};
    char err[1024] = "";
    int n = pem_read_mem("two-blocks", pem, len, collect, &found, err, sizeof err);
    free(pem);
    cr_assert_eq(n, -1, "pem_read_mem gave %d", n);
    assert_err(err, "two-blocks", "block 2");
    cr_assert(strcasestr(err, "unsupported") != NULL, "\"%s\"", err);
}

Test(pem, directory_is_an_error)
{
    struct found found = {0};
    char err[1024] = "";
    cr_assert_eq(read_pem(FIXTURES, collect, &found, err, sizeof err), -1);
    assert_err(err, FIXTURES, NULL);
}

Test(pem, memory_error_names_source)
{
    static const char text[] = "no PEM here\n";
    struct found found = {0};
    char err[1024] = "";
    cr_assert_eq(pem_read_mem("my-name", text, sizeof text - 1, collect, &found, err, sizeof err), -1);
    assert_err(err, "my-name", NOKEYS);
    cr_assert_eq(found.n, 0);
}

/* ------------------------------------------------------------------------ */
/* Errors: file_read + pem_read_mem and keyset_load agree                   */

struct bad {
    char file[32];
    char phrase[64];
};

static struct bad bad_files[] = {
    {"does-not-exist.pem", "No such file"},
    {"ed25519.pub", "unsupported"},
    {"ed25519.key", "unsupported"},
    {"dsa.pub", "unsupported"},
    {"secp256k1.pub", "unsupported"},
    {"x25519.pub", "unsupported"},
    {"encrypted.pkcs8.key", "encrypted"},
    {"encrypted.legacy.key", "encrypted"},
    {"garbage.pem", NOKEYS},
    {"empty.pem", NOKEYS},
    {"params-only.pem", NOKEYS},
    {"badbase64.pem", "block 1"},
    {"badder.pem", "block 1"},
    {"ca/rsa2048.ca.crt", "basicConstraints CA:TRUE"},
};

ParameterizedTestParameters(errors, read_pem)
{
    return cr_make_param_array(struct bad, bad_files, COUNT(bad_files));
}

ParameterizedTest(struct bad *b, errors, read_pem)
{
    struct found found = {0};
    char err[1024] = "";
    const char *path = fx(b->file);
    int n = read_pem(path, collect, &found, err, sizeof err);
    cr_assert_eq(n, -1, "%s: read_pem gave %d", b->file, n);
    assert_err(err, path, b->phrase);
}

ParameterizedTestParameters(errors, keyset_load)
{
    return cr_make_param_array(struct bad, bad_files, COUNT(bad_files));
}

ParameterizedTest(struct bad *b, errors, keyset_load)
{
    char err[1024];
    struct warns w = {0};
    const char *name = b->file;
    struct keyset *ks = load(&name, 1, &w, err, sizeof err);
    cr_assert_null(ks, "%s: keyset_load succeeded", b->file);
    assert_err(err, fx(b->file), b->phrase);
}

/* ------------------------------------------------------------------------ */
/* key                                                                        */

static const char *const supported_pubs[] = {"rsa1024.pub", "rsa2048.pub", "rsa4096.pub",
                                             "ec256.pub",   "ec384.pub",   "ec521.padded.pub"};

Test(key, kid_matches_openssl)
{
    for (size_t i = 0; i < COUNT(supported_pubs); i++) {
        char want[KEY_KID_LEN + 1], got[KEY_KID_LEN + 1];
        openssl_kid(PUB, fx(supported_pubs[i]), want);
        EVP_PKEY *pk = openssl_read_pub(supported_pubs[i]);
        memset(got, 'x', sizeof got);
        cr_assert_eq(key_kid(pk, got), 0, "%s", supported_pubs[i]);
        cr_assert_str_eq(got, want, "%s", supported_pubs[i]);
        EVP_PKEY_free(pk);
    }
}

Test(key, init_copies_source)
{
    char source[] = "somewhere (block 7)";
    char err[256] = "";
    struct key k = {0};
    cr_assert_eq(key_init(&k, openssl_read_pub("ec384.pub"), source, NULL, err, sizeof err), 0, "%s", err);
    memset(source, 'z', sizeof source - 1);
    cr_assert_str_eq(k.source, "somewhere (block 7)");
    cr_assert_str_eq(k.alg, "ES384");
    cr_assert_eq(strlen(k.kid), KEY_KID_LEN);
    cr_assert_not_null(k.jwk);
    key_clear(&k);
}

Test(key, init_rejects_unsupported)
{
    static const char *const names[] = {"ed25519.pub", "x25519.pub", "dsa.pub", "secp256k1.pub"};
    for (size_t i = 0; i < COUNT(names); i++) {
        char err[256] = "";
        struct key k = {0};
        cr_assert_eq(key_init(&k, openssl_read_pub(names[i]), "src", NULL, err, sizeof err), -1, "%s accepted",
                     names[i]);
        cr_assert(strcasestr(err, "unsupported") != NULL, "%s: \"%s\"", names[i], err);
    }
}

Test(key, clear_zeroed)
{
    struct key k = {0};
    key_clear(&k);
}

/* ------------------------------------------------------------------------ */
/* keyset                                                                     */

/* The warning names the repeated key and where it was repeated. */
static void assert_mentions_duplicate(const char *msg, const char *kid, const char *path)
{
    cr_assert(strcasestr(msg, "duplicate") != NULL || strcasestr(msg, "same public key") != NULL,
              "warning does not say the key is a duplicate: \"%s\"", msg);
    cr_assert(strstr(msg, kid) != NULL, "warning does not name kid %s: \"%s\"", kid, msg);
    cr_assert(strstr(msg, path) != NULL, "warning does not name %s: \"%s\"", path, msg);
}

Test(keyset, duplicate_in_one_file)
{
    struct warns w = {0};
    char kid[KEY_KID_LEN + 1];
    struct keyset *ks = load_one("dup.pem", &w);
    openssl_kid(PUB, fx("rsa2048.pub"), kid);
    cr_assert_str_eq(ks->keys[0].kid, kid);
    cr_assert_eq(w.n, 1, "%d warnings", w.n);
    assert_mentions_duplicate(w.msg[0], kid, fx("dup.pem"));
    keyset_free(ks);
}

/* A copy of a private-key fixture with the given mode, loaded. */
static void load_private_with_mode(mode_t mode, struct warns *w, char *path, size_t len)
{
    char err[1024], cmd[PATH_MAX * 2 + 16];
    struct keyset *ks;
    int fd;

    snprintf(path, len, "/tmp/oidc-mode-XXXXXX");
    cr_assert_geq(fd = mkstemp(path), 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "cp %s %s", fx("ec256.sec1.key"), path);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(chmod(path, mode), 0);
    char *argv[] = {path};
    ks = keyset_load(argv, 1, on_warn, w, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    keyset_free(ks);
    unlink(path);
}

Test(keyset, private_key_mode)
{
    struct warns loose = {0}, tight = {0};
    char path[PATH_MAX];

    load_private_with_mode(0644, &loose, path, sizeof path);
    cr_assert_eq(loose.mode_warnings, 1);
    cr_assert(strstr(loose.mode_msg, path) != NULL, "names the file: %s", loose.mode_msg);
    load_private_with_mode(0600, &tight, path, sizeof path);
    cr_assert_eq(tight.mode_warnings, 0, "%s", tight.mode_msg);
}

Test(keyset, duplicate_across_files)
{
    static const char *const names[] = {"rsa2048.pub", "ec256.pub", "rsa2048.crt", "rsa2048.pub"};
    struct warns w = {0};
    char err[1024], kid[KEY_KID_LEN + 1];
    struct keyset *ks = load(names, COUNT(names), &w, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, 2);
    openssl_kid(PUB, fx("rsa2048.pub"), kid);
    cr_assert_str_eq(ks->keys[0].kid, kid, "the first occurrence is kept");
    cr_assert(strstr(ks->keys[0].source, fx("rsa2048.pub")) != NULL, "source %s", ks->keys[0].source);
    cr_assert_eq(w.n, 2, "%d warnings", w.n);
    assert_mentions_duplicate(w.msg[0], kid, fx("rsa2048.crt"));
    keyset_free(ks);
}

Test(keyset, duplicate_without_callback)
{
    struct keyset *ks = load_one("dup.pem", NULL);
    keyset_free(ks);
}

Test(keyset, small_rsa_warns)
{
    struct warns w = {0};
    struct keyset *ks = load_one("rsa1024.pub", &w);
    cr_assert_eq(ks->keys[0].bits, 1024);
    cr_assert_eq(w.n, 1, "%d warnings", w.n);
    cr_assert(strstr(w.msg[0], "2048") != NULL, "warning does not mention 2048: \"%s\"", w.msg[0]);
    keyset_free(ks);
}

Test(keyset, no_warning_for_good_keys)
{
    static const char *const names[] = {"rsa2048.pub", "rsa4096.pub", "ec256.pub", "ec384.pub", "ec521.padded.pub"};
    struct warns w = {0};
    char err[1024];
    struct keyset *ks = load(names, COUNT(names), &w, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, COUNT(names));
    cr_assert_eq(w.n, 0, "unexpected warning: %s", w.msg[0]);
    keyset_free(ks);
}

/* Files in the given order, then blocks in file order. */
Test(keyset, order_files_then_blocks)
{
    static const char *const files[] = {"rsa4096.pub", "multi.pem", "ec521.padded.sec1.key"};
    static const struct {
        const char *pub, *file;
    } want[] = {
        {"rsa4096.pub", "rsa4096.pub"},
        {"rsa2048.pub", "multi.pem"},
        {"ec256.pub", "multi.pem"},
        {"ec384.pub", "multi.pem"},
        {"ec521.padded.pub", "ec521.padded.sec1.key"},
    };
    char err[1024];
    struct keyset *ks = load(files, COUNT(files), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, COUNT(want), "%zu keys", ks->count);
    for (size_t i = 0; i < COUNT(want); i++) {
        char kid[KEY_KID_LEN + 1];
        openssl_kid(PUB, fx(want[i].pub), kid);
        cr_assert_str_eq(ks->keys[i].kid, kid, "key %zu is not %s", i, want[i].pub);
        cr_assert(strstr(ks->keys[i].source, fx(want[i].file)) != NULL, "key %zu source %s", i, ks->keys[i].source);
    }
    keyset_free(ks);
}

Test(keyset, find_by_kid)
{
    char err[1024];
    static const char *const names[] = {"multi.pem", "rsa4096.pub"};
    struct keyset *ks = load(names, COUNT(names), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, 4);
    for (size_t i = 0; i < ks->count; i++) {
        char kid[KEY_KID_MAX + 1];
        snprintf(kid, sizeof kid, "%s", ks->keys[i].kid); /* a different pointer */
        cr_assert_eq(keyset_find(ks, kid), &ks->keys[i], "kid %s", kid);
        kid[KEY_KID_LEN - 1] = '\0';
        cr_assert_null(keyset_find(ks, kid), "a kid prefix matched");
    }
    char other[KEY_KID_LEN + 1];
    openssl_kid(PUB, fx("ec384.pub"), other);
    cr_assert_not_null(keyset_find(ks, other));
    openssl_kid(PUB, fx("ec521.padded.pub"), other);
    cr_assert_null(keyset_find(ks, other));
    cr_assert_null(keyset_find(ks, ""));
    keyset_free(ks);
}

/* One bad file fails the whole load, and the message names that file. */
Test(keyset, one_bad_file_fails_all)
{
    static const char *const names[] = {"rsa2048.pub", "multi.pem", "garbage.pem", "ec256.pub"};
    char err[1024];
    struct warns w = {0};
    cr_assert_null(load(names, COUNT(names), &w, err, sizeof err));
    assert_err(err, fx("garbage.pem"), NOKEYS);
}

Test(keyset, unsupported_second_block)
{
    size_t len;
    char path[PATH_MAX], err[1024] = "";
    char *pem = concat(good_then_unsupported, COUNT(good_then_unsupported), &len);
    write_tmp(pem, len, path);
    free(pem);
    char *paths[] = {path};
    struct keyset *ks = keyset_load(paths, 1, NULL, NULL, err, sizeof err);
    unlink(path);
    cr_assert_null(ks);
    assert_err(err, path, "block 2");
    cr_assert(strcasestr(err, "unsupported") != NULL, "\"%s\"", err);
}

Test(keyset, no_paths)
{
    char err[1024];
    cr_assert_null(load(NULL, 0, NULL, err, sizeof err));
    cr_assert_neq(err[0], '\0', "no error message");
}

/* ------------------------------------------------------------------------ */
/* What a key source may be                                                  */

/* A fresh directory under /tmp, and a path inside it. */
static void src_dir(char dir[64])
{
    snprintf(dir, 64, "/tmp/oidc-sources-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static const char *src_path(const char *dir, const char *name)
{
    static char buf[4][PATH_MAX];
    static unsigned next;
    char *p = buf[next++ % 4];
    snprintf(p, PATH_MAX, "%s/%s", dir, name);
    return p;
}

/* Copies a fixture to dir/name. */
static void src_put(const char *dir, const char *name, const char *fixture)
{
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", fx(fixture), src_path(dir, name));
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void src_rm(const char *dir)
{
    char cmd[PATH_MAX];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'; rm -rf '%s'", dir, dir);
    cr_assert_eq(system(cmd), 0);
}

/* keyset_load of one path; NULL with err filled, or the set. */
static struct keyset *src_load(const char *path, struct warns *w, char *err, size_t errlen)
{
    char *argv[] = {(char *)path};
    err[0] = '\0';
    return keyset_load(argv, 1, w ? on_warn : NULL, w, err, errlen);
}

Test(sources, ca_certificate_is_refused_and_says_what_to_do)
{
    char err[1024];
    cr_assert_null(src_load(fx("ca/rsa2048.ca.crt"), NULL, err, sizeof err));
    assert_err(err, fx("ca/rsa2048.ca.crt"), "basicConstraints CA:TRUE");
    cr_assert(strstr(err, "sa.pub") != NULL, "does not point at sa.pub: %s", err);
    /* the same key in a leaf certificate is a key source */
    struct keyset *ks = load_one("rsa2048.crt", NULL);
    keyset_free(ks);
}

Test(sources, ca_certificate_among_other_blocks_fails_the_file)
{
    /* another key first: rsa2048.pub itself would be refused, its CA
     * certificate being in the same file */
    static const char *const names[] = {"ec256.pub", "ca/rsa2048.ca.crt"};
    size_t len;
    char path[PATH_MAX], err[1024];
    char *pem = concat(names, COUNT(names), &len);
    write_tmp(pem, len, path);
    free(pem);
    cr_assert_null(src_load(path, NULL, err, sizeof err));
    unlink(path);
    assert_err(err, path, "block 2");
}

Test(sources, pki_directory_is_refused)
{
    /* kubeadm's /etc/kubernetes/pki, reduced: CA, front-proxy CA,
     * apiserver pair, the service-account pair, etcd/ */
    static const char *const layout[][2] = {
        {"apiserver.crt", "rsa2048.crt"}, {"apiserver.key", "rsa2048.pkcs1.key"},   {"ca.crt", "rsa2048.crt"},
        {"ca.key", "rsa2048.pkcs8.key"},  {"front-proxy-ca.key", "ec384.sec1.key"}, {"sa.key", "ec256.sec1.key"},
        {"sa.pub", "ec256.pub"},
    };
    char dir[64], err[1024];

    src_dir(dir);
    cr_assert_eq(mkdir(src_path(dir, "etcd"), 0700), 0);
    for (size_t i = 0; i < COUNT(layout); i++)
        src_put(dir, layout[i][0], layout[i][1]);
    cr_assert_null(src_load(dir, NULL, err, sizeof err), "a PKI directory was loaded");
    cr_assert(strstr(err, src_path(dir, "ca.crt")) != NULL, "does not name ca.crt: %s", err);
    cr_assert(strstr(err, src_path(dir, "sa.pub")) != NULL, "does not point at sa.pub: %s", err);

    /* without ca.*, the front-proxy CA key alone still gives it away */
    unlink(src_path(dir, "ca.crt"));
    unlink(src_path(dir, "ca.key"));
    cr_assert_null(src_load(dir, NULL, err, sizeof err));
    cr_assert(strstr(err, src_path(dir, "front-proxy-ca.key")) != NULL, "%s", err);

    /* pointing at the service-account key itself works */
    struct keyset *ks = src_load(src_path(dir, "sa.pub"), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, 1);
    keyset_free(ks);
    src_rm(dir);
}

Test(sources, file_named_like_a_ca_key_is_refused)
{
    static const char *const names[] = {"ca.key", "ca.pem", "ca-key.pem", "server-ca.crt", "client-ca.key"};
    char dir[64], err[1024];

    src_dir(dir);
    for (size_t i = 0; i < COUNT(names); i++) {
        src_put(dir, names[i], "ec256.pub");
        cr_assert_null(src_load(src_path(dir, names[i]), NULL, err, sizeof err), "%s loaded", names[i]);
        assert_err(err, src_path(dir, names[i]), "CA");
    }
    /* names that merely contain "ca" are fine */
    src_put(dir, "cascade.pub", "ec256.pub");
    struct keyset *ks = src_load(src_path(dir, "cascade.pub"), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    keyset_free(ks);
    src_rm(dir);
}

/* The name rules are the file's, in any case, and cover every CA name a
 * PKI layout uses: kubernetes-ca.pem was published with the cluster CA's
 * kid, and so was CA.KEY. */
Test(sources, ca_names_in_any_case_and_every_layout)
{
    static const char *const refused[] = {
        "CA.KEY",          "Ca.Crt",      "kubernetes-ca.pem", "front-proxy-ca", "front-proxy-ca.crt",
        "etcd-ca-key.pem", "root_ca.crt", "ca.key.pem",        "SERVER-CA.KEY",  "ca_key.pem"};
    static const char *const fine[] = {"cascade.pub", "sa.key",        "sa.pub",     "rsa2048.ca.crt.pub",
                                       "ca-not.pub",  "apiserver.key", "capital.pem"};
    char dir[64], err[1024];

    src_dir(dir);
    for (size_t i = 0; i < COUNT(refused); i++) {
        src_put(dir, refused[i], "ec256.pub");
        cr_expect_null(src_load(src_path(dir, refused[i]), NULL, err, sizeof err), "%s loaded", refused[i]);
        cr_expect(strstr(err, "CA") != NULL, "%s: %s", refused[i], err);
        unlink(src_path(dir, refused[i]));
    }
    for (size_t i = 0; i < COUNT(fine); i++) {
        src_put(dir, fine[i], "ec256.pub");
        struct keyset *ks = src_load(src_path(dir, fine[i]), NULL, err, sizeof err);
        cr_expect_not_null(ks, "%s: %s", fine[i], err);
        keyset_free(ks);
        unlink(src_path(dir, fine[i]));
    }
    /* a directory holding one, in upper case, is a PKI directory */
    src_put(dir, "sa.pub", "ec256.pub");
    src_put(dir, "FRONT-PROXY-CA.CRT", "rsa2048.crt");
    cr_expect_null(src_load(dir, NULL, err, sizeof err));
    cr_expect(strstr(err, "looks like a PKI directory") != NULL, "%s", err);
    src_rm(dir);
}

/* A link named like a service-account key that leads to a CA's key is a
 * CA's key: the rules look at the file reached, given as a key file and
 * as a directory's entry. */
Test(sources, link_to_a_ca_key_is_refused)
{
    char dir[64], err[1024], sub[PATH_MAX], pki[PATH_MAX];

    src_dir(dir);
    snprintf(sub, sizeof sub, "%s/t", dir);
    snprintf(pki, sizeof pki, "%s/pki", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(mkdir(pki, 0700), 0);
    src_put(dir, "pki/ca.key", "ec256.sec1.key");
    cr_assert_eq(symlink("../pki/ca.key", src_path(dir, "t/sa.key")), 0);
    cr_assert_null(src_load(src_path(dir, "t/sa.key"), NULL, err, sizeof err), "a link to ca.key was loaded");
    assert_err(err, src_path(dir, "t/sa.key"), "named like a CA's key");
    cr_expect(strstr(err, "pki/ca.key") != NULL, "does not name the file reached: %s", err);
    /* t/ as a directory source: its one entry leads to ca.key */
    cr_assert_null(src_load(sub, NULL, err, sizeof err), "a directory with a link to ca.key was loaded");
    cr_expect(strstr(err, "pki/ca.key") != NULL, "%s", err);
    src_rm(dir);
}

/* By content: a key whose public half is that of a CA certificate
 * (CA:TRUE) beside it is the CA's key, whatever the names; a leaf
 * certificate beside it changes nothing. */
Test(sources, key_of_a_ca_certificate_beside_it_is_refused)
{
    char dir[64], err[1024];

    src_dir(dir);
    src_put(dir, "sa.key", "rsa2048.pkcs8.key");
    src_put(dir, "sa.pub", "ec256.pub");
    src_put(dir, "leaf.crt", "rsa2048.crt");
    struct keyset *ks = src_load(src_path(dir, "sa.key"), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    keyset_free(ks);
    src_put(dir, "issuer.crt", "ca/rsa2048.ca.crt");
    cr_assert_null(src_load(src_path(dir, "sa.key"), NULL, err, sizeof err), "a CA's key was loaded");
    assert_err(err, src_path(dir, "sa.key"), "CA:TRUE");
    cr_expect(strstr(err, src_path(dir, "issuer.crt")) != NULL, "does not name the certificate: %s", err);
    /* the directory as a source: refused too (the certificate is read first) */
    cr_assert_null(src_load(dir, NULL, err, sizeof err), "a directory with a CA's key was loaded");
    cr_expect(strstr(err, "CA:TRUE") != NULL, "%s", err);
    /* another key beside the same certificate is fine */
    ks = src_load(src_path(dir, "sa.pub"), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    keyset_free(ks);
    src_rm(dir);
}

/* Without O_NONBLOCK, opening a FIFO waits for a writer: the timeout
 * turns that hang into a failure. */
Test(sources, fifo_is_refused_without_blocking, .timeout = 10)
{
    char dir[64], err[1024];

    src_dir(dir);
    cr_assert_eq(mkfifo(src_path(dir, "sa.pub"), 0600), 0);
    cr_assert_null(src_load(src_path(dir, "sa.pub"), NULL, err, sizeof err));
    assert_err(err, src_path(dir, "sa.pub"), "FIFO");
    /* in a directory source too: an error, not a key silently missing */
    src_put(dir, "other.pub", "ec256.pub");
    cr_assert_null(src_load(dir, NULL, err, sizeof err));
    assert_err(err, src_path(dir, "sa.pub"), "FIFO");
    src_rm(dir);
}

Test(sources, directory_skips_subdirectories_hidden_entries_and_dangling_links)
{
    char dir[64], err[1024];

    src_dir(dir);
    src_put(dir, "sa.pub", "ec256.pub");
    cr_assert_eq(mkdir(src_path(dir, "etcd"), 0700), 0);
    src_put(dir, "etcd/peer.pub", "rsa2048.pub");
    src_put(dir, ".hidden.pub", "ec384.pub");
    cr_assert_eq(symlink("..data/gone.pub", src_path(dir, "gone.pub")), 0);
    struct keyset *ks = src_load(dir, NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, 1, "%zu keys", ks->count);
    cr_assert(strstr(ks->keys[0].source, "sa.pub") != NULL, "%s", ks->keys[0].source);
    keyset_free(ks);
    src_rm(dir);
}

Test(sources, keys_record_the_file_they_came_from)
{
    char dir[64], err[1024], real[PATH_MAX];

    src_dir(dir);
    cr_assert_eq(mkdir(src_path(dir, "..2026_01"), 0700), 0);
    src_put(dir, "..2026_01/sa.pub", "ec256.pub");
    cr_assert_eq(symlink("..2026_01", src_path(dir, "..data")), 0);
    cr_assert_eq(symlink("..data/sa.pub", src_path(dir, "sa.pub")), 0);
    struct keyset *ks = src_load(dir, NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_not_null(realpath(src_path(dir, "..2026_01/sa.pub"), real));
    cr_assert_str_eq(ks->keys[0].path, src_path(dir, "sa.pub"));
    cr_assert_str_eq(ks->keys[0].path_real, real);
    /* and a copy keeps them */
    struct keyset *copy = keyset_new();
    cr_assert_eq(keyset_add_copy(copy, &ks->keys[0], err, sizeof err), 1, "%s", err);
    cr_assert_eq(keyset_add_copy(copy, &ks->keys[0], err, sizeof err), 0, "a duplicate is not added");
    cr_assert_str_eq(copy->keys[0].path, ks->keys[0].path);
    cr_assert_str_eq(copy->keys[0].path_real, real);
    cr_assert_str_eq(copy->keys[0].kid, ks->keys[0].kid);
    keyset_free(copy);
    keyset_free(ks);
    src_rm(dir);
}

/* Counts the warnings that mention "writable by others" and name path. */
static int writable_warnings(const struct warns *w, const char *path)
{
    int n = 0;
    for (int i = 0; i < w->n; i++)
        n += strstr(w->msg[i], "writable by others") != NULL && strstr(w->msg[i], path) != NULL;
    return n;
}

Test(sources, directory_writable_by_others_warns)
{
    char dir[64], err[1024];
    struct warns open_dir = {0}, closed = {0}, sticky = {0}, open_parent = {0};
    struct keyset *ks;

    src_dir(dir);
    src_put(dir, "sa.pub", "ec256.pub");
    cr_assert_eq(chmod(dir, 0777), 0);
    cr_assert_not_null(ks = src_load(dir, &open_dir, err, sizeof err), "%s", err);
    keyset_free(ks);
    cr_assert_eq(writable_warnings(&open_dir, dir), 1, "a world-writable key directory: %d", open_dir.n);
    cr_assert_not_null(ks = src_load(src_path(dir, "sa.pub"), &open_parent, err, sizeof err), "%s", err);
    keyset_free(ks);
    cr_assert_eq(writable_warnings(&open_parent, dir), 1, "a key file others can replace");
    /* sticky: others may add files but not replace this one */
    cr_assert_eq(chmod(dir, 01777), 0);
    cr_assert_not_null(ks = src_load(src_path(dir, "sa.pub"), &sticky, err, sizeof err), "%s", err);
    keyset_free(ks);
    cr_assert_eq(writable_warnings(&sticky, dir), 0, "%s", sticky.msg[0]);
    cr_assert_eq(chmod(dir, 0755), 0);
    cr_assert_not_null(ks = src_load(dir, &closed, err, sizeof err), "%s", err);
    keyset_free(ks);
    cr_assert_eq(writable_warnings(&closed, dir), 0, "%s", closed.msg[0]);
    src_rm(dir);
}

/* ------------------------------------------------------------------------ */
/* JWKS files (`kubectl get --raw /openid/v1/jwks > jwks.json`)              */

/* A JWKS of the fixtures under kids written to a temporary file. */
static void jwks_file(const char *const *names, const char *const *kids, size_t n, char path[PATH_MAX])
{
    char *text = fixture_jwks(names, kids, n);
    write_tmp(text, strlen(text), path);
    free(text);
}

Test(sources, jwks_file_keeps_kids_and_order)
{
    static const char *const names[] = {"ec384.pub", "rsa2048.pub", "ec256.pub"};
    static const char *const kids[] = {"external-signer:ec384/1", NULL, "k"};
    char path[PATH_MAX], err[1024], derived[KEY_KID_LEN + 1];
    struct keyset *ks;

    jwks_file(names, kids, COUNT(names), path);
    cr_assert_not_null(ks = src_load(path, NULL, err, sizeof err), "%s", err);
    unlink(path);
    cr_assert_eq(ks->count, 3);
    openssl_kid(PUB, fx("rsa2048.pub"), derived);
    cr_assert_str_eq(ks->keys[0].kid, "external-signer:ec384/1");
    cr_assert_str_eq(ks->keys[1].kid, derived, "a kube kid stays what it is");
    cr_assert_str_eq(ks->keys[2].kid, "k");
    cr_assert(ks->keys[0].kid_given && !ks->keys[1].kid_given && ks->keys[2].kid_given);
    cr_assert(strstr(ks->keys[0].jwk, "\"kid\":\"external-signer:ec384/1\"") != NULL, "%s", ks->keys[0].jwk);
    cr_assert(strstr(ks->keys[0].source, path) != NULL && strstr(ks->keys[0].source, "keys[0]") != NULL,
              "source %s names the file and the JWK", ks->keys[0].source);
    cr_assert_str_eq(ks->keys[2].path, path, "the file is recorded (for the removal guard)");
    keyset_free(ks);
}

/* The same key from a PEM file and a JWKS under its kube kid is one key;
 * one kid for two keys across files is refused, naming both. */
Test(sources, jwks_file_with_pem_files)
{
    static const char *const same[] = {"rsa2048.pub"};
    char jwks[PATH_MAX], other[PATH_MAX], err[1024];
    struct warns w = {0};
    struct keyset *ks;
    char derived[KEY_KID_LEN + 1];

    jwks_file(same, (const char *const[]){NULL}, 1, jwks);
    char *both[] = {(char *)fx("rsa2048.pub"), jwks};
    cr_assert_not_null(ks = keyset_load(both, 2, on_warn, &w, err, sizeof err), "%s", err);
    cr_assert_eq(ks->count, 1, "published once");
    cr_assert_eq(w.n, 1, "%d warnings", w.n);
    keyset_free(ks);
    openssl_kid(PUB, fx("rsa2048.pub"), derived);
    jwks_file((const char *const[]){"ec256.pub"}, (const char *const[]){derived}, 1, other);
    char *clash[] = {(char *)fx("rsa2048.pub"), other};
    cr_assert_null(keyset_load(clash, 2, NULL, NULL, err, sizeof err));
    assert_err(err, other, "also names another key");
    cr_assert(strstr(err, "rsa2048.pub") != NULL, "names the other key's file: %s", err);
    unlink(jwks);
    unlink(other);
}

/* A JWKS file is read as strictly as an upstream's: private members are
 * never published, and a file without a usable key fails the load. */
Test(sources, jwks_file_errors_name_the_file)
{
    static const char *const bad[] = {
        "{\"keys\":[]}",
        "{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\",\"kid\":\"h\"}]}",
        "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"a\",\"n\":\"AQAB\",\"e\":\"AQAB\",\"d\":\"AQAB\"}]}",
        "{\"keys\":[{\"kty\":\"RSA\"",
    };
    char path[PATH_MAX], err[1024];

    for (size_t i = 0; i < COUNT(bad); i++) {
        write_tmp(bad[i], strlen(bad[i]), path);
        cr_assert_null(src_load(path, NULL, err, sizeof err), "case %zu loaded", i);
        assert_err(err, path, NULL);
        unlink(path);
    }
}
