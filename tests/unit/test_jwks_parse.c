/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keys/jwks_parse: a JWKS read back as a relying party reads
 * it, with what it must skip and what it must refuse. Parameterized tests
 * take arrays, not pointers: criterion runs each case in a new process.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "test_support.h"

#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/b64url.h"
#include "keys/jwks_parse.h"
#include "keys/keyset.h"
#include "publish/render.h"

TestSuite(jwks_parse, .fini = leak_check);

#define DOC_MAX 16384

/* Warnings received, one per line. */
struct warnings {
    char text[8192];
    int count;
};

static void collect(void *ctx, const char *msg)
{
    struct warnings *w = ctx;
    size_t used = strlen(w->text);
    snprintf(w->text + used, sizeof(w->text) - used, "%s\n", msg);
    w->count++;
}

/* The JWK kube-apiserver would publish for one fixture, copied into out. */
static void fixture_jwk(const char *name, char *out, size_t outlen)
{
    struct keyset *ks = fixture_keyset(&name, 1);
    cr_assert_lt(ks->keys[0].jwk_len, outlen);
    memcpy(out, ks->keys[0].jwk, ks->keys[0].jwk_len + 1);
    keyset_free(ks);
}

/* Replaces the value of the string member name in the JWK text jwk. */
static void set_member(char *jwk, size_t size, const char *name, const char *value)
{
    char key[64], rest[DOC_MAX];
    snprintf(key, sizeof key, "\"%s\":\"", name);
    char *at = strstr(jwk, key);
    cr_assert_not_null(at, "no member %s in %s", name, jwk);
    at += strlen(key);
    char *end = strchr(at, '"');
    snprintf(rest, sizeof rest, "%s", end);
    int n = snprintf(at, size - (size_t)(at - jwk), "%s%s", value, rest);
    cr_assert_lt((size_t)n, size - (size_t)(at - jwk));
}

/* Inserts raw members (with trailing comma) right after the JWK's '{'. */
static void add_members(char *jwk, size_t size, const char *members)
{
    char rest[DOC_MAX];
    snprintf(rest, sizeof rest, "%s", jwk + 1);
    int n = snprintf(jwk + 1, size - 1, "%s%s", members, rest);
    cr_assert_lt((size_t)n, size - 1);
}

/* The string value of member name in jwk, copied into out. */
static void get_member(const char *jwk, const char *name, char *out, size_t outlen)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":\"", name);
    const char *at = strstr(jwk, key);
    cr_assert_not_null(at);
    at += strlen(key);
    size_t n = strcspn(at, "\"");
    cr_assert_lt(n, outlen);
    memcpy(out, at, n);
    out[n] = '\0';
}

/* Writes {"keys":[a]} or {"keys":[a,b]} into doc. */
static void keys_doc(char *doc, size_t size, const char *a, const char *b)
{
    int n = snprintf(doc, size, "{\"keys\":[%s%s%s]}", a, b ? "," : "", b ? b : "");
    cr_assert_lt((size_t)n, size);
}

static struct keyset *parse(const char *doc, struct warnings *w, char *err, size_t errlen)
{
    return jwks_parse(doc, strlen(doc), collect, w, err, errlen);
}

/* Parses doc expecting failure with a message containing want. */
static void assert_error(const char *doc, const char *want)
{
    struct warnings w = {0};
    char err[512] = "";
    struct keyset *ks = parse(doc, &w, err, sizeof err);
    cr_expect_null(ks, "parsed, expected error: %s", want);
    keyset_free(ks);
    cr_expect(strstr(err, want) != NULL, "error \"%s\" does not contain \"%s\"", err, want);
}

/* Parses {"keys":[skipped, ec256]} expecting only the second to be used and
 * a warning about the first containing want. */
static void assert_skipped(const char *skipped, const char *want)
{
    char good[DOC_MAX], doc[2 * DOC_MAX], err[512] = "";
    struct warnings w = {0};

    fixture_jwk("ec256.pub", good, sizeof good);
    keys_doc(doc, sizeof doc, skipped, good);
    struct keyset *ks = parse(doc, &w, err, sizeof err);
    cr_assert_not_null(ks, "jwks_parse: %s", err);
    cr_expect_eq(ks->count, 1);
    cr_expect_str_eq(ks->keys[0].source, "keys[1]");
    cr_expect_eq(w.count, 1, "warnings: %s", w.text);
    cr_expect(strstr(w.text, "keys[0]: skipped: ") != NULL, "warning: %s", w.text);
    cr_expect(strstr(w.text, want) != NULL, "warning \"%s\" does not contain \"%s\"", w.text, want);
    keyset_free(ks);
}

/* keyset_load, render_jwks, jwks_parse: the same keys, kids and algorithms
 * come back, in order. */
static void assert_round_trip(const char *const *names, size_t n)
{
    struct keyset *orig = fixture_keyset(names, n);
    struct render_doc d = {0};
    struct warnings w = {0};
    char err[512] = "";

    cr_assert_eq(render_jwks(orig, &d), 0);
    struct keyset *back = jwks_parse(d.bytes, d.len, collect, &w, err, sizeof err);
    cr_assert_not_null(back, "jwks_parse: %s", err);
    cr_expect_eq(w.count, 0, "warnings: %s", w.text);
    cr_assert_eq(back->count, orig->count);
    cr_expect_neq(back->id, orig->id);
    for (size_t i = 0; i < orig->count; i++) {
        cr_expect_str_eq(back->keys[i].kid, orig->keys[i].kid);
        cr_expect_str_eq(back->keys[i].alg, orig->keys[i].alg);
        cr_expect_str_eq(back->keys[i].jwk, orig->keys[i].jwk);
        cr_expect_eq(EVP_PKEY_eq(orig->keys[i].pub, back->keys[i].pub), 1, "key %zu differs", i);
    }
    keyset_free(back);
    keyset_free(orig);
    free(d.bytes);
}

/* ------------------------------------------------------------------------ */
/* round trips                                                                */

struct round_trip {
    char names[4][24];
};

static struct round_trip round_trips[] = {
    {{"rsa2048.pub"}},
    {{"ec256.pub"}},
    {{"ec384.pub"}},
    {{"ec521.padded.pub"}},
    {{"ec384.pub", "rsa2048.pub", "ec521.padded.pub", "ec256.pub"}},
};

ParameterizedTestParameters(jwks_parse, round_trip)
{
    return cr_make_param_array(struct round_trip, round_trips, COUNT(round_trips));
}

/* keyset_load, render_jwks, jwks_parse: the same keys, kids and algorithms
 * come back, in order. */
ParameterizedTest(struct round_trip *t, jwks_parse, round_trip)
{
    const char *names[COUNT(t->names)];
    size_t n = 0;

    while (n < COUNT(t->names) && t->names[n][0] != '\0') {
        names[n] = t->names[n];
        n++;
    }
    assert_round_trip(names, n);
}

/* The JWK's own kid is what tokens name, not the thumbprint: kept exactly
 * as given, whatever its form (an upstream issuer's kids need not be
 * derived), up to KEY_KID_MAX characters. */
Test(jwks_parse, keeps_the_jwk_kid)
{
    char long_kid[KEY_KID_MAX + 1];
    const char *kids[] = {"2024-rotation key", "Xk4sNfEm2ETjl9ANN+tJvyoV/TIW8fpxmmWJA8UdqZA=", "a", long_kid};

    memset(long_kid, 'k', KEY_KID_MAX);
    long_kid[KEY_KID_MAX] = '\0';
    for (size_t i = 0; i < COUNT(kids); i++) {
        char jwk[DOC_MAX], doc[DOC_MAX], err[512] = "";
        struct warnings w = {0};

        fixture_jwk(i % 2 ? "ec256.pub" : "rsa2048.pub", jwk, sizeof jwk);
        set_member(jwk, sizeof jwk, "kid", kids[i]);
        keys_doc(doc, sizeof doc, jwk, NULL);
        struct keyset *ks = parse(doc, &w, err, sizeof err);
        cr_assert_not_null(ks, "jwks_parse: %s", err);
        cr_expect_eq(w.count, 0, "%s", w.text);
        cr_expect_str_eq(ks->keys[0].kid, kids[i]);
        cr_expect_not_null(keyset_find(ks, kids[i]));
        cr_expect_str_eq(ks->keys[0].jwk, jwk);
        cr_expect_eq(ks->keys[0].jwk_len, strlen(jwk));
        keyset_free(ks);
    }
}

/* Members may come in any order, with unknown ones, and use and alg may be
 * absent. */
Test(jwks_parse, minimal_and_reordered_members)
{
    char jwk[DOC_MAX], x[128], y[128], doc[DOC_MAX], err[512] = "";
    struct warnings w = {0};

    fixture_jwk("ec384.pub", jwk, sizeof jwk);
    get_member(jwk, "x", x, sizeof x);
    get_member(jwk, "y", y, sizeof y);
    snprintf(doc, sizeof doc,
             "{\"other\":1,\"keys\":[{\"y\":\"%s\",\"x\":\"%s\",\"crv\":\"P-384\",\"kty\":\"EC\",\"kid\":\"k\","
             "\"x5t\":\"abc\",\"ext\":true}]}",
             y, x);
    struct keyset *ks = parse(doc, &w, err, sizeof err);
    cr_assert_not_null(ks, "jwks_parse: %s", err);
    cr_expect_str_eq(ks->keys[0].alg, "ES384");
    cr_expect_str_eq(ks->keys[0].kid, "k");
    keyset_free(ks);
}

Test(jwks_parse, fresh_id_each_parse)
{
    char jwk[DOC_MAX], doc[DOC_MAX], err[512] = "";

    fixture_jwk("ec256.pub", jwk, sizeof jwk);
    keys_doc(doc, sizeof doc, jwk, NULL);
    struct keyset *a = jwks_parse(doc, strlen(doc), NULL, NULL, err, sizeof err);
    struct keyset *b = jwks_parse(doc, strlen(doc), NULL, NULL, err, sizeof err);
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_expect_neq(a->id, b->id);
    keyset_free(a);
    keyset_free(b);
}

/* ------------------------------------------------------------------------ */
/* JWKs changed from a fixture: skipped or refused                            */

/* A fixture's JWK with up to two string members replaced and raw members
 * added, or a whole JWK written out (fixture ""). */
struct jwk_case {
    char fixture[24];
    char set[2][2][96]; /* {name, value}; name "" for none */
    char add[24];       /* raw members, each with a trailing comma */
    char raw[72];       /* the JWK when there is no fixture */
    char want[96];      /* in the warning or the error */
};

/* Writes the JWK case c describes into jwk. */
static void build_jwk(const struct jwk_case *c, char *jwk, size_t size)
{
    if (c->fixture[0] == '\0') {
        snprintf(jwk, size, "%s", c->raw);
        return;
    }
    fixture_jwk(c->fixture, jwk, size);
    for (size_t i = 0; i < COUNT(c->set) && c->set[i][0][0] != '\0'; i++)
        set_member(jwk, size, c->set[i][0], c->set[i][1]);
    if (c->add[0] != '\0')
        add_members(jwk, size, c->add);
}

static struct jwk_case skipped[] = {
    {"rsa2048.pub", {{"use", "enc"}}, "", "", "use \"enc\" is not \"sig\""},
    /* a hostile value reaches the log only as printable ASCII, cut at 40
     * characters: no forged line, no flood */
    {"rsa2048.pub",
     {{"use", "x\\nFAKE \\u00e9\\t0123456789012345678901234567890123456789"}},
     "",
     "",
     "use \"x?FAKE ???012345678901234567890123456789...\" is not \"sig\""},
    {"", {{""}}, "", "{\"kty\":\"oct\",\"kid\":\"hmac\",\"k\":\"c2VjcmV0\"}", "unsupported kty \"oct\""},
    {"", {{""}}, "", "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"ed\",\"x\":\"AAAA\"}", "unsupported kty \"OKP\""},
    {"ec256.pub", {{"crv", "secp256k1"}, {"alg", "ES256K"}}, "", "", "unsupported crv \"secp256k1\""},
    {"ec384.pub", {{""}}, "\"d\":\"c2VjcmV0\",", "", "private key member \"d\""},
    {"rsa2048.pub", {{""}}, "\"p\":\"c2VjcmV0\",", "", "private key member \"p\""},
    {"rsa2048.pub", {{"alg", "ES256"}}, "", "", "alg \"ES256\" does not match the key (RS256)"},
    {"ec384.pub", {{"alg", "ES256"}}, "", "", "alg \"ES256\" does not match the key (ES384)"},
    {"rsa2048.pub", {{"kid", ""}}, "", "", "kid \"\" is not"},
    {"rsa2048.pub", {{"kid", "a\\\"b"}}, "", "", "is not 1 to 1024 printable characters"},
    {"rsa2048.pub", {{"kid", "caf\\u00e9"}}, "", "", "is not 1 to 1024 printable characters"},
    {"", {{""}}, "", "{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}", "no \"kid\""},
    /* 0xc5 = 197, odd: a well-formed but absurdly small modulus */
    {"", {{""}}, "", "{\"kty\":\"RSA\",\"kid\":\"tiny\",\"n\":\"xQ\",\"e\":\"AQAB\"}", "RSA modulus of 8 bits"},
};

ParameterizedTestParameters(jwks_parse, skipped)
{
    return cr_make_param_array(struct jwk_case, skipped, COUNT(skipped));
}

/* Parses {"keys":[skipped, ec256]} expecting only the second to be used and
 * a warning about the first. */
ParameterizedTest(struct jwk_case *c, jwks_parse, skipped)
{
    char jwk[DOC_MAX];

    build_jwk(c, jwk, sizeof jwk);
    assert_skipped(jwk, c->want);
}

/* One character over KEY_KID_MAX is too long. */
Test(jwks_parse, skips_kid_too_long)
{
    char jwk[DOC_MAX], kid[KEY_KID_MAX + 2];

    memset(kid, 'k', KEY_KID_MAX + 1);
    kid[KEY_KID_MAX + 1] = '\0';
    fixture_jwk("rsa2048.pub", jwk, sizeof jwk);
    set_member(jwk, sizeof jwk, "kid", kid);
    assert_skipped(jwk, "is not 1 to 1024 printable characters");
}

Test(jwks_parse, skips_same_key_under_second_kid)
{
    char a[DOC_MAX], b[DOC_MAX], doc[3 * DOC_MAX], err[512] = "";
    struct warnings w = {0};

    fixture_jwk("ec256.pub", a, sizeof a);
    memcpy(b, a, sizeof b);
    set_member(b, sizeof b, "kid", "again");
    keys_doc(doc, sizeof doc, a, b);
    struct keyset *ks = parse(doc, &w, err, sizeof err);
    cr_assert_not_null(ks, "jwks_parse: %s", err);
    cr_expect_eq(ks->count, 1);
    cr_expect(strstr(w.text, "keys[1]: skipped: same public key as keys[0]") != NULL, "warnings: %s", w.text);
    keyset_free(ks);
}

static struct jwk_case refused[] = {
    {"rsa2048.pub", {{"n", "AQAB="}}, "", "", "keys[0]: \"n\" is not base64url"},
    {"rsa2048.pub", {{"e", "AQ"}}, "", "", "keys[0]: \"e\" is not an RSA public exponent"},
    {"rsa2048.pub", {{"e", "AAEAAQABAAEA"}}, "", "", "keys[0]: \"e\" is longer than 8 bytes"},
    {"ec256.pub",
     {{"x", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
     "",
     "",
     "keys[0]: \"x\" is 31 bytes, P-256 needs 32"},
    {"ec521.padded.pub",
     {{"y", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
     "",
     "",
     "keys[0]: \"y\" is longer than 66 bytes"},
    {"", {{""}}, "", "{\"kty\":\"RSA\",\"kid\":\"a\",\"n\":\"AQAB\"}", "keys[0]: missing \"e\""},
    {"", {{""}}, "", "{\"kid\":\"a\"}", "keys[0]: missing \"kty\""},
    {"", {{""}}, "", "{\"kty\":\"RSA\",\"kid\":7}", "keys[0]: \"kid\" is not a string"},
    {"", {{""}}, "", "{\"kty\":\"EC\",\"kid\":\"a\",\"x\":\"AA\"}", "keys[0]: missing \"crv\""},
    {"", {{""}}, "", "\"x\"", "keys[0]: not a JSON object"},
    {"", {{""}}, "", "[]", "keys[0]: not a JSON object"},
    /* the strict reader refuses a member given twice, in a JWK too */
    {"rsa2048.pub", {{""}}, "\"e\":\"Aw\",", "", "JWKS is not valid JSON: duplicate member"},
};

ParameterizedTestParameters(jwks_parse, refused)
{
    return cr_make_param_array(struct jwk_case, refused, COUNT(refused));
}

/* Parses {"keys":[refused]} expecting the error. */
ParameterizedTest(struct jwk_case *c, jwks_parse, refused)
{
    char jwk[DOC_MAX], doc[DOC_MAX];

    build_jwk(c, jwk, sizeof jwk);
    keys_doc(doc, sizeof doc, jwk, NULL);
    assert_error(doc, c->want);
}

Test(jwks_parse, error_point_not_on_curve)
{
    char jwk[DOC_MAX], doc[DOC_MAX], y[128];
    unsigned char raw[128];
    size_t n;

    fixture_jwk("ec384.pub", jwk, sizeof jwk);
    get_member(jwk, "y", y, sizeof y);
    cr_assert_eq(b64url_decode(y, strlen(y), raw, &n), 0);
    raw[n - 1] ^= 1;
    b64url_encode(raw, n, y);
    set_member(jwk, sizeof jwk, "y", y);
    keys_doc(doc, sizeof doc, jwk, NULL);
    assert_error(doc, "keys[0]: x and y are not a point on P-384");
}

Test(jwks_parse, error_duplicate_kid)
{
    char a[DOC_MAX], b[DOC_MAX], doc[3 * DOC_MAX];

    fixture_jwk("rsa2048.pub", a, sizeof a);
    fixture_jwk("ec256.pub", b, sizeof b);
    set_member(a, sizeof a, "kid", "same");
    set_member(b, sizeof b, "kid", "same");
    keys_doc(doc, sizeof doc, a, b);
    assert_error(doc, "keys[1]: kid \"same\" is also the kid of keys[0]");
}

/* ------------------------------------------------------------------------ */
/* documents refused                                                          */

Test(jwks_parse, error_not_json)
{
    char jwk[DOC_MAX], doc[2 * DOC_MAX];

    assert_error("{\"keys\":[", "JWKS is not valid JSON: invalid JSON");
    assert_error("", "JWKS is not valid JSON: ");
    assert_error("{\"keys\":[]} x", "JWKS is not valid JSON: invalid JSON");
    assert_error("[]", "JWKS is not valid JSON: the top level is not a JSON object");
    assert_error("{\"keys\":[],\"keys\":[]}", "JWKS is not valid JSON: duplicate member");
    /* yajl let an unterminated string at the very end through */
    fixture_jwk("ec256.pub", jwk, sizeof jwk);
    snprintf(doc, sizeof doc, "{\"keys\":[%s]} \"abc", jwk);
    assert_error(doc, "JWKS is not valid JSON: invalid JSON");
}

Test(jwks_parse, error_no_keys_array)
{
    assert_error("{\"key\":[]}", "JWKS has no \"keys\" array");
    assert_error("{\"keys\":{}}", "JWKS has no \"keys\" array");
    assert_error("{\"keys\":null}", "JWKS has no \"keys\" array");
}

Test(jwks_parse, error_empty_set)
{
    assert_error("{\"keys\":[]}", "JWKS has no usable RSA or ECDSA signing key");
    assert_error("{\"keys\":[{\"kty\":\"oct\",\"k\":\"AA\"}]}", "JWKS has no usable RSA or ECDSA signing key");
}

/* Nesting beyond JSON_MAX_DEPTH (32) is refused; brackets inside strings
 * do not count. */
Test(jwks_parse, error_depth)
{
    char doc[256];
    int n = 0;

    n += snprintf(doc + n, sizeof doc - (size_t)n, "{\"keys\":[");
    for (int i = 0; i < 31; i++)
        doc[n++] = '[';
    for (int i = 0; i < 31; i++)
        doc[n++] = ']';
    snprintf(doc + n, sizeof doc - (size_t)n, "]}");
    assert_error(doc, "JWKS is not valid JSON: JSON nested too deeply");

    /* 32 levels are read, and fail later. */
    memmove(doc + 9, doc + 10, strlen(doc + 10) + 1);
    memmove(doc + 39, doc + 40, strlen(doc + 40) + 1);
    assert_error(doc, "keys[0]: not a JSON object");

    assert_error("{\"keys\":[],\"x\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[[[\"}",
                 "JWKS has no usable RSA or ECDSA signing key");
}

Test(jwks_parse, error_bytes)
{
    static const char nul[] = "{\"keys\":[]}\0";
    char *big = malloc(JWKS_MAX_LEN + 2);
    char err[256] = "";

    cr_assert_not_null(big);
    memset(big, ' ', JWKS_MAX_LEN + 1);
    big[JWKS_MAX_LEN + 1] = '\0';
    cr_expect_null(jwks_parse(big, JWKS_MAX_LEN + 1, NULL, NULL, err, sizeof err));
    cr_expect_str_eq(err, "JWKS is larger than 1048576 bytes");
    free(big);

    cr_expect_null(jwks_parse(nul, sizeof(nul) - 1, NULL, NULL, err, sizeof err));
    cr_expect_str_eq(err, "JWKS is not valid JSON: invalid JSON");
    assert_error("{\"keys\":[],\"a\":\"\\u0000\"}", "JWKS is not valid JSON: JSON string holds U+0000");
}
