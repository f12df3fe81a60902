/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keys/: every accepted form, keys/pem (several blocks, memory
 * input, callback control, errors) and keys/key.
 *
 * Expected values (kid, n, x, y) are computed at test time by the openssl CLI
 * and coreutils basenc, independently of the code under test
 * (keys_test_support.h).
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
#include "keys_test_support.h"

TestSuite(forms, .fini = leak_check);
TestSuite(pem, .fini = leak_check);
TestSuite(errors, .fini = leak_check);
TestSuite(key, .fini = leak_check);

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

/* base64 of i2d_PUBKEY: what key_spki_encode must give, however it gets
 * there. */
static char *openssl_spki(EVP_PKEY *pk)
{
    unsigned char *der = NULL;
    int len = i2d_PUBKEY(pk, &der);
    char *b64 = malloc((size_t)(len + 2) / 3 * 4 + 1);
    cr_assert_gt(len, 0);
    EVP_EncodeBlock((unsigned char *)b64, der, len);
    OPENSSL_free(der);
    return b64;
}

/* The SPKI written without OpenSSL's encoder is i2d_PUBKEY's, for every
 * curve and key type, and a point or curve encoded another way (compressed,
 * explicit parameters) is still encoded as OpenSSL would. */
Test(key, spki_matches_openssl)
{
    static const struct {
        const char *param, *value;
    } forms[] = {{NULL, NULL},
                 {OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, "compressed"},
                 {OSSL_PKEY_PARAM_EC_ENCODING, "explicit"}};
    for (size_t i = 0; i < COUNT(supported_pubs); i++)
        for (size_t f = 0; f < COUNT(forms); f++) {
            EVP_PKEY *pk = openssl_read_pub(supported_pubs[i]);
            if (forms[f].param != NULL && EVP_PKEY_get_base_id(pk) != EVP_PKEY_EC) {
                EVP_PKEY_free(pk);
                continue;
            }
            if (forms[f].param != NULL)
                cr_assert(EVP_PKEY_set_utf8_string_param(pk, forms[f].param, forms[f].value));
            char *want = openssl_spki(pk), *got = key_spki_encode(pk);
            cr_assert_str_eq(got, want, "%s %s", supported_pubs[i], forms[f].value ? forms[f].value : "");
            free(want);
            free(got);
            EVP_PKEY_free(pk);
        }
}

/* key_d2i_pubkey reads what d2i_PUBKEY reads (the same key, the whole
 * SubjectPublicKeyInfo consumed), and refuses an EC point that is not on
 * its curve as d2i_PUBKEY does. */
Test(key, d2i_pubkey_matches_openssl)
{
    for (size_t i = 0; i < COUNT(supported_pubs); i++) {
        EVP_PKEY *pk = openssl_read_pub(supported_pubs[i]), *got;
        unsigned char *der = NULL;
        const unsigned char *p;
        int len = i2d_PUBKEY(pk, &der);
        cr_assert_gt(len, 0);
        p = der;
        got = key_d2i_pubkey(&p, len);
        cr_assert_not_null(got, "%s", supported_pubs[i]);
        cr_assert_eq(p, der + len, "%s", supported_pubs[i]);
        cr_assert_eq(EVP_PKEY_eq(got, pk), 1, "%s", supported_pubs[i]);
        EVP_PKEY_free(got);
        if (EVP_PKEY_get_base_id(pk) == EVP_PKEY_EC) {
            der[len - 1] ^= 1; /* y off the curve */
            p = der;
            cr_assert_null(key_d2i_pubkey(&p, len), "%s off the curve", supported_pubs[i]);
            p = der;
            cr_assert_null(d2i_PUBKEY(NULL, &p, len), "%s off the curve", supported_pubs[i]);
        }
        OPENSSL_free(der);
        EVP_PKEY_free(pk);
    }
}

/* An EC key's JWK coordinates are the same whichever form its point comes in (x and y
 * from the uncompressed point, or as numbers for a compressed one), and a
 * key_copy is the key it copies. */
Test(key, jwk_same_for_every_point_form_and_copy)
{
    static const char *const ecs[] = {"ec256.pub", "ec384.pub", "ec521.padded.pub"};
    for (size_t i = 0; i < COUNT(ecs); i++) {
        char err[256] = "";
        struct key plain = {0}, packed = {0}, copy = {0};
        EVP_PKEY *pk = openssl_read_pub(ecs[i]);
        cr_assert_eq(EVP_PKEY_up_ref(pk), 1);
        cr_assert_eq(key_init(&plain, pk, "a", NULL, err, sizeof err), 0, "%s", err);
        cr_assert(EVP_PKEY_set_utf8_string_param(pk, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, "compressed"));
        cr_assert_eq(key_init(&packed, pk, "a", NULL, err, sizeof err), 0, "%s", err);
        /* the kid is over the SPKI, which carries the point as it comes */
        cr_assert_str_eq(strstr(packed.jwk, "\"crv\""), strstr(plain.jwk, "\"crv\""), "%s", ecs[i]);
        cr_assert_eq(key_copy(&copy, &plain), 0);
        cr_assert_str_eq(copy.jwk, plain.jwk);
        cr_assert_str_eq(copy.kid, plain.kid);
        cr_assert_str_eq(copy.source, plain.source);
        cr_assert_eq(copy.pub, plain.pub);
        key_clear(&copy);
        key_clear(&packed);
        key_clear(&plain);
    }
}
