/*
 * Unit tests for keys/token (verification of service-account tokens),
 * keys/token_mint and the strict decoder of keys/b64url. Every refusal
 * listed in token.h has a test that crafts exactly that token.
 */
#include <criterion/criterion.h>

#include "test_support.h"

#include <limits.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/b64url.h"
#include "jose/jws.h"
#include "jose/jwt.h"
#include "keys/keyset.h"
#include "jose/token.h"
#include "jose/token_mint.h"
#include "jose/verifier.h"

#define ISS "https://kubernetes.default.svc"
#define NOW 1700000000L

/* The key set holds rsa4096.pub first (no private key in the fixtures): a
 * token without kid must get past it to rsa2048. */
static const char *const pub_files[] = {"rsa4096.pub", "rsa2048.pub", "ec256.pub", "ec384.pub", "ec521.padded.pub"};

static struct keyset *ks;
static struct verifier *ver; /* ks prepared for verification */
static EVP_PKEY *rsa, *ec256, *ec384, *ec521;
static char *issuers[] = {ISS};
static char *audiences[] = {"vault", "api"};

static void setup(void)
{
    char paths[COUNT(pub_files)][PATH_MAX], *argv[COUNT(pub_files)], err[1024] = "";
    for (size_t i = 0; i < COUNT(pub_files); i++) {
        snprintf(paths[i], PATH_MAX, "%s/%s", FIXTURES, pub_files[i]);
        argv[i] = paths[i];
    }
    ks = keyset_load(argv, COUNT(pub_files), NULL, NULL, err, sizeof(err));
    cr_assert_not_null(ks, "%s", err);
    cr_assert_not_null(ver = verifier_new(ks));
    rsa = fixture_private_key("rsa2048.pkcs8.key");
    ec256 = fixture_private_key("ec256.sec1.key");
    ec384 = fixture_private_key("ec384.sec1.key");
    ec521 = fixture_private_key("ec521.padded.sec1.key");
}

static void teardown(void)
{
    verifier_free(ver);
    keyset_free(ks);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec256);
    EVP_PKEY_free(ec384);
    EVP_PKEY_free(ec521);
    ks = NULL;
    ver = NULL;
    rsa = ec256 = ec384 = ec521 = NULL;
    leak_check();
}

TestSuite(token, .init = setup, .fini = teardown);
TestSuite(b64url, .fini = leak_check);

static struct token_policy policy(void)
{
    struct token_policy p = {
        .issuers = issuers,
        .nissuers = COUNT(issuers),
        .audiences = audiences,
        .naudiences = COUNT(audiences),
        .leeway = 60,
        .now = NOW,
    };
    return p;
}

/* The kid of the key of alg in the set (rsa2048 for RS256: the second).
 * Not inlined: inlined, gcc -O3's format-truncation check takes the kid
 * array's bound (KEY_KID_MAX, for a JWKS's kids) for the length of these
 * 43-character kids, and refuses the tests' fixed-size headers. */
__attribute__((noinline)) static const char *kid_of(const char *alg)
{
    for (size_t i = strcmp(alg, "RS256") == 0 ? 1 : 0; i < ks->count; i++)
        if (strcmp(ks->keys[i].alg, alg) == 0)
            return ks->keys[i].kid;
    cr_assert_fail("no %s key", alg);
    return NULL;
}

/* {"alg":alg,"kid":<kid of kid_alg>} */
static char *header(const char *alg, const char *kid_alg)
{
    static char buf[256];
    snprintf(buf, sizeof(buf), "{\"alg\":\"%s\",\"kid\":\"%s\"}", alg, kid_of(kid_alg));
    return buf;
}

static char *b64(const void *data, size_t n)
{
    char *s = malloc(B64URL_ENCODED_LEN(n) + 1);
    cr_assert_not_null(s);
    b64url_encode(data, n, s);
    return s;
}

/* header "." payload as base64url, the signing input. */
static char *signing_input(const char *hdr, const char *payload)
{
    char *h = b64(hdr, strlen(hdr)), *p = b64(payload, strlen(payload)), *si;
    cr_assert_geq(asprintf(&si, "%s.%s", h, p), 0);
    free(h);
    free(p);
    return si;
}

/* Any header, payload and raw signature bytes, as a compact JWS. */
static char *assemble(const char *hdr, const char *payload, const unsigned char *sig, size_t siglen)
{
    char *si = signing_input(hdr, payload), *s = b64(sig, siglen), *tok;
    cr_assert_geq(asprintf(&tok, "%s.%s", si, s), 0);
    free(si);
    free(s);
    return tok;
}

/* Raw JWS signature of hdr.payload with priv under sign_alg. */
static unsigned char *raw_sig(EVP_PKEY *priv, const char *sign_alg, const char *hdr, const char *payload, size_t *len)
{
    char *si = signing_input(hdr, payload);
    unsigned char *sig = jws_sign(jws_alg_find(sign_alg), priv, si, strlen(si), len);
    cr_assert_not_null(sig);
    free(si);
    return sig;
}

/* hdr.payload signed with priv under sign_alg, whatever hdr says. */
static char *sign(EVP_PKEY *priv, const char *sign_alg, const char *hdr, const char *payload)
{
    size_t len;
    unsigned char *sig = raw_sig(priv, sign_alg, hdr, payload, &len);
    char *tok = assemble(hdr, payload, sig, len);
    free(sig);
    return tok;
}

/* A bound payload with the given exp, nbf and iat (JSON texts) and the
 * given aud. */
static char *payload_times_aud(const char *exp, const char *nbf, const char *iat, const char *aud)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"aud\":%s,\"exp\":%s,\"iat\":%s,\"iss\":\"" ISS "\",\"jti\":\"j-1\","
             "\"kubernetes.io\":{\"namespace\":\"ns\",\"pod\":{\"name\":\"p\",\"uid\":\"pu\"},"
             "\"serviceaccount\":{\"name\":\"sa\",\"uid\":\"su\"}},\"nbf\":%s,\"sub\":\"system:serviceaccount:ns:sa\"}",
             aud, exp, iat, nbf);
    return buf;
}

static char *payload_times(const char *exp, const char *nbf, const char *iat)
{
    return payload_times_aud(exp, nbf, iat, "[\"api\"]");
}

#define VALID_PAYLOAD payload_times("1700003600", "1699999000", "1699999000")

/* A bound payload whose kubernetes.io object is k8s. */
static char *payload_k8s(const char *k8s, const char *sub)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"aud\":[\"api\"],\"exp\":1700003600,\"iat\":1699999000,\"iss\":\"" ISS "\","
             "\"kubernetes.io\":%s,\"nbf\":1699999000,\"sub\":\"%s\"}",
             k8s, sub);
    return buf;
}

#define SA     "\"serviceaccount\":{\"name\":\"sa\",\"uid\":\"su\"}"
#define POD    "\"pod\":{\"name\":\"p\",\"uid\":\"pu\"}"
#define NODE   "\"node\":{\"name\":\"n\",\"uid\":\"nu\"}"
#define SECRET "\"secret\":{\"name\":\"s\",\"uid\":\"xu\"}"
#define SUB    "system:serviceaccount:ns:sa"

/* Verifies tok (freed) under p and expects error e with a message. */
static void expect_p(char *tok, const struct token_policy *p, enum token_error e)
{
    struct token_result r;
    int rc = token_verify(ver, p, tok, strlen(tok), &r);
    cr_expect_eq(r.error, e, "want %s, got %s (%s)", token_error_name(e), token_error_name(r.error), r.message);
    cr_expect_eq(rc, e == TOKEN_OK ? 0 : -1);
    if (e != TOKEN_OK) {
        cr_expect_gt(strlen(r.message), 10, "message: '%s'", r.message);
        cr_expect_null(r.user.username);
        cr_expect_eq(r.user.naudiences, 0);
    }
    token_result_clear(&r);
    free(tok);
}

static void expect(char *tok, enum token_error e)
{
    struct token_policy p = policy();
    expect_p(tok, &p, e);
}

/* ---------------------------------------------------------------- */
/* Refusals, in the order of enum token_error                          */

Test(token, too_large)
{
    struct token_policy p = policy();
    char *tok = sign(rsa, "RS256", header("RS256", "RS256"), VALID_PAYLOAD);
    p.max_size = strlen(tok) - 1;
    expect_p(tok, &p, TOKEN_ERR_TOO_LARGE);

    char *big = malloc(TOKEN_DEFAULT_MAX_SIZE + 2);
    memset(big, 'A', TOKEN_DEFAULT_MAX_SIZE + 1);
    big[TOKEN_DEFAULT_MAX_SIZE + 1] = '\0';
    expect(big, TOKEN_ERR_TOO_LARGE);
}

Test(token, two_segments)
{
    expect(signing_input(header("RS256", "RS256"), VALID_PAYLOAD), TOKEN_ERR_SEGMENTS);
}

Test(token, four_segments)
{
    char *tok = sign(rsa, "RS256", header("RS256", "RS256"), VALID_PAYLOAD), *four;
    cr_assert_geq(asprintf(&four, "%s.AAAA", tok), 0);
    free(tok);
    expect(four, TOKEN_ERR_SEGMENTS);
}

Test(token, padding)
{
    /* A 2-byte header encodes to 3 characters: "=" pads it to 4. */
    char *si = signing_input("{}", VALID_PAYLOAD), *tok;
    cr_assert_eq(si[3], '.');
    cr_assert_geq(asprintf(&tok, "%.3s=%s.AAAA", si, si + 3), 0);
    free(si);
    expect(tok, TOKEN_ERR_BASE64);
}

Test(token, plus_and_slash)
{
    const char bad[] = {'+', '/', ' ', '*'};
    for (size_t i = 0; i < COUNT(bad); i++) {
        char *tok = sign(rsa, "RS256", header("RS256", "RS256"), VALID_PAYLOAD);
        strrchr(tok, '.')[1] = bad[i];
        expect(tok, TOKEN_ERR_BASE64);
    }
}

Test(token, nonzero_trailing_bits)
{
    /* The last character of a 256-byte RS256 signature (342 characters)
     * carries 4 unused bits: setting one makes another encoding of the
     * same bytes, which a strict decoder refuses. */
    char *tok = sign(rsa, "RS256", header("RS256", "RS256"), VALID_PAYLOAD);
    char *last = tok + strlen(tok) - 1;
    const char *alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    cr_assert_eq((strchr(alphabet, *last) - alphabet) & 15, 0);
    *last = alphabet[(strchr(alphabet, *last) - alphabet) | 1];
    expect(tok, TOKEN_ERR_BASE64);
}

Test(token, duplicate_in_header)
{
    char hdr[256];
    snprintf(hdr, sizeof(hdr), "{\"alg\":\"RS256\",\"kid\":\"%s\",\"alg\":\"RS256\"}", kid_of("RS256"));
    expect(sign(rsa, "RS256", hdr, VALID_PAYLOAD), TOKEN_ERR_JSON);
}

Test(token, duplicate_in_payload)
{
    char payload[1200];
    snprintf(payload, sizeof(payload), "%.*s,\"iss\":\"" ISS "\"}", (int)strlen(VALID_PAYLOAD) - 1, VALID_PAYLOAD);
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload), TOKEN_ERR_JSON);
}

Test(token, duplicate_nested_in_payload)
{
    char *p = payload_k8s("{\"namespace\":\"ns\"," SA "," POD ",\"namespace\":\"other\"}", SUB);
    expect(sign(rsa, "RS256", header("RS256", "RS256"), p), TOKEN_ERR_JSON);
}

/* The valid payload with an extra member nesting depth containers in all
 * (the payload object itself counts as one). */
static char *payload_depth(int depth)
{
    static char buf[2048];
    int n = snprintf(buf, sizeof(buf), "%.*s,\"deep\":", (int)strlen(VALID_PAYLOAD) - 1, VALID_PAYLOAD);
    for (int i = 1; i < depth; i++)
        buf[n++] = '[';
    for (int i = 1; i < depth; i++)
        buf[n++] = ']';
    snprintf(buf + n, sizeof(buf) - (size_t)n, "}");
    return buf;
}

Test(token, depth_33_refused)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_depth(33)), TOKEN_ERR_JSON);
}

Test(token, depth_32_accepted)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_depth(32)), TOKEN_OK);
}

Test(token, payload_not_an_object)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), "[\"a\"]"), TOKEN_ERR_JSON);
    expect(sign(rsa, "RS256", header("RS256", "RS256"), "\"a\""), TOKEN_ERR_JSON);
    expect(sign(rsa, "RS256", header("RS256", "RS256"), "{} {}"), TOKEN_ERR_JSON);
    expect(sign(rsa, "RS256", header("RS256", "RS256"), "{}x"), TOKEN_ERR_JSON);
    expect(sign(rsa, "RS256", header("RS256", "RS256"), "{\"a\":\"\\u0000\"}"), TOKEN_ERR_JSON);
}

Test(token, header_not_an_object)
{
    expect(sign(rsa, "RS256", "[]", VALID_PAYLOAD), TOKEN_ERR_JSON);
}

Test(token, alg_none)
{
    expect(assemble("{\"alg\":\"none\"}", VALID_PAYLOAD, NULL, 0), TOKEN_ERR_ALG_NONE);
}

/* The classic confusion: an HMAC keyed with the bytes of the public key,
 * which a verifier that lets the token pick the algorithm would accept. */
static void expect_hmac(const char *alg, const EVP_MD *md)
{
    char path[PATH_MAX], pem[4096], hdr[256];
    snprintf(path, sizeof(path), "%s/rsa2048.pub", FIXTURES);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    size_t n = fread(pem, 1, sizeof(pem), f);
    fclose(f);
    snprintf(hdr, sizeof(hdr), "{\"alg\":\"%s\",\"kid\":\"%s\"}", alg, kid_of("RS256"));
    char *si = signing_input(hdr, VALID_PAYLOAD);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned maclen = 0;
    cr_assert_not_null(HMAC(md, pem, (int)n, (unsigned char *)si, strlen(si), mac, &maclen));
    free(si);
    expect(assemble(hdr, VALID_PAYLOAD, mac, maclen), TOKEN_ERR_ALG_HMAC);
}

Test(token, hs256_key_confusion)
{
    expect_hmac("HS256", EVP_sha256());
}

Test(token, hs384)
{
    expect_hmac("HS384", EVP_sha384());
}

Test(token, hs512)
{
    expect_hmac("HS512", EVP_sha512());
}

Test(token, alg_missing_or_unknown)
{
    char hdr[256];
    snprintf(hdr, sizeof(hdr), "{\"kid\":\"%s\"}", kid_of("RS256"));
    expect(sign(rsa, "RS256", hdr, VALID_PAYLOAD), TOKEN_ERR_ALG_UNSUPPORTED);
    expect(sign(rsa, "RS256", header("PS256", "RS256"), VALID_PAYLOAD), TOKEN_ERR_ALG_UNSUPPORTED);
    expect(sign(rsa, "RS256", header("rs256", "RS256"), VALID_PAYLOAD), TOKEN_ERR_ALG_UNSUPPORTED);
    snprintf(hdr, sizeof(hdr), "{\"alg\":1,\"kid\":\"%s\"}", kid_of("RS256"));
    expect(sign(rsa, "RS256", hdr, VALID_PAYLOAD), TOKEN_ERR_ALG_UNSUPPORTED);
}

Test(token, alg_not_in_policy)
{
    struct token_policy p = policy();
    p.algs = TOKEN_ALG_RS256;
    expect_p(sign(ec256, "ES256", header("ES256", "ES256"), VALID_PAYLOAD), &p, TOKEN_ERR_ALG_UNSUPPORTED);
}

Test(token, es256_header_with_rsa_kid)
{
    expect(sign(ec256, "ES256", header("ES256", "RS256"), VALID_PAYLOAD), TOKEN_ERR_ALG_MISMATCH);
}

Test(token, es256_header_with_p384_kid)
{
    expect(sign(ec256, "ES256", header("ES256", "ES384"), VALID_PAYLOAD), TOKEN_ERR_ALG_MISMATCH);
}

Test(token, rs256_header_with_ec_kid)
{
    expect(sign(rsa, "RS256", header("RS256", "ES256"), VALID_PAYLOAD), TOKEN_ERR_ALG_MISMATCH);
}

/* The valid RS256 header with one more member. */
static char *header_with(const char *member)
{
    static char buf[512];
    snprintf(buf, sizeof(buf), "{\"alg\":\"RS256\",\"kid\":\"%s\",%s}", kid_of("RS256"), member);
    return buf;
}

Test(token, crit)
{
    expect(sign(rsa, "RS256", header_with("\"crit\":[\"exp\"],\"exp\":1"), VALID_PAYLOAD), TOKEN_ERR_CRIT);
}

Test(token, jku)
{
    expect(sign(rsa, "RS256", header_with("\"jku\":\"https://evil.example/jwks\""), VALID_PAYLOAD),
           TOKEN_ERR_EMBEDDED_KEY);
}

Test(token, x5u)
{
    expect(sign(rsa, "RS256", header_with("\"x5u\":\"https://evil.example/cert\""), VALID_PAYLOAD),
           TOKEN_ERR_EMBEDDED_KEY);
}

Test(token, jwk)
{
    expect(sign(rsa, "RS256", header_with("\"jwk\":{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}"), VALID_PAYLOAD),
           TOKEN_ERR_EMBEDDED_KEY);
}

Test(token, unknown_kid)
{
    char hdr[] = "{\"alg\":\"RS256\",\"kid\":\"no-such-key\"}";
    expect(sign(rsa, "RS256", hdr, VALID_PAYLOAD), TOKEN_ERR_UNKNOWN_KID);
}

Test(token, no_kid_no_key_verifies)
{
    unsigned char sig[256] = {1};
    expect(assemble("{\"alg\":\"RS256\"}", VALID_PAYLOAD, sig, sizeof(sig)), TOKEN_ERR_UNKNOWN_KID);
}

/* A token without kid is checked against at most TOKEN_KIDLESS_MAX_KEYS
 * keys of its alg, the first in published order: with more, each bad one
 * would cost a signature check per key to anyone who sends it. */
Test(token, kidless_token_tries_at_most_the_first_keys)
{
    enum { NKEYS = TOKEN_KIDLESS_MAX_KEYS + 4 };
    struct keyset *many = keyset_new();
    struct verifier *v;
    EVP_PKEY *priv[NKEYS];
    struct token_policy p = policy();
    struct token_result r;
    char err[256], hdr[KEY_KID_MAX + 64];

    cr_assert_not_null(many);
    for (int i = 0; i < NKEYS; i++) {
        unsigned char *der = NULL;
        const struct key *dup;
        cr_assert_not_null(priv[i] = EVP_EC_gen("P-256"));
        int len = i2d_PUBKEY(priv[i], &der);
        const unsigned char *q = der;
        EVP_PKEY *pub = d2i_PUBKEY(NULL, &q, len); /* the public half only, as the loader keeps */
        OPENSSL_free(der);
        cr_assert_eq(keyset_add(many, pub, "generated", NULL, &dup, err, sizeof(err)), 1, "%s", err);
    }
    cr_assert_not_null(v = verifier_new(many));
    /* signed by the last key that is tried, and by the first that is not */
    for (int i = TOKEN_KIDLESS_MAX_KEYS - 1; i <= TOKEN_KIDLESS_MAX_KEYS; i++) {
        char *tok = sign(priv[i], "ES256", "{\"alg\":\"ES256\"}", VALID_PAYLOAD);
        int rc = token_verify(v, &p, tok, strlen(tok), &r);
        if (i < TOKEN_KIDLESS_MAX_KEYS) {
            cr_expect_eq(rc, 0, "key %d: %s", i, r.message);
        } else {
            cr_expect_eq(rc, -1, "key %d verified", i);
            cr_expect_eq(r.error, TOKEN_ERR_UNKNOWN_KID);
            cr_expect_not_null(strstr(r.message, "checked against at most 16 keys; 4 more are configured"), "%s",
                               r.message);
        }
        token_result_clear(&r);
        free(tok);
        /* with its kid, any key verifies */
        snprintf(hdr, sizeof(hdr), "{\"alg\":\"ES256\",\"kid\":\"%s\"}", many->keys[i].kid);
        tok = sign(priv[i], "ES256", hdr, VALID_PAYLOAD);
        cr_expect_eq(token_verify(v, &p, tok, strlen(tok), &r), 0, "key %d with kid: %s", i, r.message);
        token_result_clear(&r);
        free(tok);
    }
    for (int i = 0; i < NKEYS; i++)
        EVP_PKEY_free(priv[i]);
    verifier_free(v);
    keyset_free(many);
}

Test(token, bad_signature)
{
    size_t len;
    const char *hdr = header("RS256", "RS256");
    unsigned char *sig = raw_sig(rsa, "RS256", hdr, VALID_PAYLOAD, &len);
    sig[len / 2] ^= 0x01;
    expect(assemble(hdr, VALID_PAYLOAD, sig, len), TOKEN_ERR_SIGNATURE);
    free(sig);
}

Test(token, signature_of_other_payload)
{
    /* A valid signature, moved onto a changed payload. */
    size_t len;
    const char *hdr = header("ES256", "ES256");
    unsigned char *sig = raw_sig(ec256, "ES256", hdr, VALID_PAYLOAD, &len);
    expect(assemble(hdr, payload_times("1800000000", "1699999000", "1699999000"), sig, len), TOKEN_ERR_SIGNATURE);
    free(sig);
}

Test(token, empty_signature)
{
    expect(assemble(header("RS256", "RS256"), VALID_PAYLOAD, NULL, 0), TOKEN_ERR_SIGNATURE);
}

Test(token, ecdsa_der_signature)
{
    const char *hdr = header("ES256", "ES256");
    char *si = signing_input(hdr, VALID_PAYLOAD);
    unsigned char der[128];
    size_t len = sizeof(der);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    cr_assert_eq(EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, ec256), 1);
    cr_assert_eq(EVP_DigestSign(ctx, der, &len, (unsigned char *)si, strlen(si)), 1);
    EVP_MD_CTX_free(ctx);
    free(si);
    cr_assert_neq(len, 64);
    expect(assemble(hdr, VALID_PAYLOAD, der, len), TOKEN_ERR_ECDSA_FORMAT);
}

Test(token, ecdsa_wrong_length)
{
    size_t len;
    const char *hdr = header("ES256", "ES256");
    unsigned char *sig = raw_sig(ec256, "ES256", hdr, VALID_PAYLOAD, &len);
    cr_assert_eq(len, 64);
    expect(assemble(hdr, VALID_PAYLOAD, sig, 63), TOKEN_ERR_ECDSA_FORMAT);
    unsigned char longer[65] = {0};
    memcpy(longer + 1, sig, 64);
    expect(assemble(hdr, VALID_PAYLOAD, longer, 65), TOKEN_ERR_ECDSA_FORMAT);
    /* A P-384-sized signature under ES256. */
    unsigned char p384[96] = {1};
    expect(assemble(hdr, VALID_PAYLOAD, p384, 96), TOKEN_ERR_ECDSA_FORMAT);
    free(sig);
}

/* A valid ES256 signature with r (half 0) or s (half 1) replaced by value,
 * 32 bytes. */
static void expect_ecdsa_half(int half, const unsigned char value[32], enum token_error e)
{
    size_t len;
    const char *hdr = header("ES256", "ES256");
    unsigned char *sig = raw_sig(ec256, "ES256", hdr, VALID_PAYLOAD, &len);
    memcpy(sig + 32 * half, value, 32);
    expect(assemble(hdr, VALID_PAYLOAD, sig, len), e);
    free(sig);
}

/* The order n of P-256, plus add. */
static void p256_order_plus(unsigned add, unsigned char out[32])
{
    EC_GROUP *g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    BIGNUM *n = BN_dup(EC_GROUP_get0_order(g));
    cr_assert_eq(BN_add_word(n, add), 1);
    cr_assert_eq(BN_bn2binpad(n, out, 32), 32);
    BN_free(n);
    EC_GROUP_free(g);
}

Test(token, ecdsa_r_zero)
{
    unsigned char zero[32] = {0};
    expect_ecdsa_half(0, zero, TOKEN_ERR_ECDSA_FORMAT);
}

Test(token, ecdsa_s_zero)
{
    unsigned char zero[32] = {0};
    expect_ecdsa_half(1, zero, TOKEN_ERR_ECDSA_FORMAT);
}

Test(token, ecdsa_r_equals_order)
{
    unsigned char n[32];
    p256_order_plus(0, n);
    expect_ecdsa_half(0, n, TOKEN_ERR_ECDSA_FORMAT);
}

Test(token, ecdsa_s_above_order)
{
    unsigned char v[32];
    p256_order_plus(0, v);
    expect_ecdsa_half(1, v, TOKEN_ERR_ECDSA_FORMAT);
    p256_order_plus(1, v);
    expect_ecdsa_half(1, v, TOKEN_ERR_ECDSA_FORMAT);
    memset(v, 0xff, sizeof(v));
    expect_ecdsa_half(1, v, TOKEN_ERR_ECDSA_FORMAT);
}

Test(token, ecdsa_s_in_range_but_wrong)
{
    unsigned char one[32] = {0};
    one[31] = 1;
    expect_ecdsa_half(1, one, TOKEN_ERR_SIGNATURE);
}

Test(token, exp_as_string)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("\"1700003600\"", "1699999000", "1699999000")),
           TOKEN_ERR_CLAIM_TYPE);
}

Test(token, nbf_as_bool)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1700003600", "true", "1699999000")),
           TOKEN_ERR_CLAIM_TYPE);
}

Test(token, iat_null_and_huge_exp)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1700003600", "1699999000", "null")),
           TOKEN_ERR_CLAIM_TYPE);
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1e400", "1699999000", "1699999000")),
           TOKEN_ERR_CLAIM_TYPE);
}

Test(token, aud_wrong_type)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"),
                payload_times_aud("1700003600", "1699999000", "1699999000", "[\"api\",1]")),
           TOKEN_ERR_CLAIM_TYPE);
    expect(sign(rsa, "RS256", header("RS256", "RS256"),
                payload_times_aud("1700003600", "1699999000", "1699999000", "{\"api\":1}")),
           TOKEN_ERR_CLAIM_TYPE);
}

Test(token, expired)
{
    /* exp + leeway <= now */
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1699999940", "1699990000", "1699990000")),
           TOKEN_ERR_EXPIRED);
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1699999000", "1699990000", "1699990000")),
           TOKEN_ERR_EXPIRED);
}

Test(token, expired_message)
{
    struct token_policy p = policy();
    struct token_result r;
    char *tok = sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1", "0", "0"));
    cr_expect_eq(token_verify(ver, &p, tok, strlen(tok), &r), -1);
    cr_expect_str_eq(r.message, "service account token has expired");
    cr_expect_str_eq(token_error_name(r.error), "expired");
    token_result_clear(&r);
    free(tok);
}

Test(token, exp_within_leeway_accepted)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1699999941", "1699990000", "1699990000")),
           TOKEN_OK);
    /* A fractional NumericDate is a number too. */
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1700003600.5", "1699990000", "1.6999e9")),
           TOKEN_OK);
}

Test(token, nbf_in_future)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1700003600", "1700000061", "1699999000")),
           TOKEN_ERR_NOT_YET_VALID);
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1700003600", "1700000060", "1699999000")),
           TOKEN_OK);
}

Test(token, iat_in_future)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1700003600", "1699999000", "1700000061")),
           TOKEN_ERR_ISSUED_IN_FUTURE);
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_times("1700003600", "1699999000", "1700000060")),
           TOKEN_OK);
}

Test(token, issuer_mismatch)
{
    char payload[1200];
    const char *v = VALID_PAYLOAD;
    const char *at = strstr(v, ISS);
    snprintf(payload, sizeof(payload), "%.*s%s/%s", (int)(at - v), v, ISS, at + strlen(ISS));
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload), TOKEN_ERR_ISSUER);
}

Test(token, audience_mismatch)
{
    struct token_policy p = policy();
    struct token_result r;
    char *tok = sign(rsa, "RS256", header("RS256", "RS256"),
                     payload_times_aud("1700003600", "1699999000", "1699999000", "[\"other\",\"x\"]"));
    cr_expect_eq(token_verify(ver, &p, tok, strlen(tok), &r), -1);
    cr_expect_eq(r.error, TOKEN_ERR_AUDIENCE);
    cr_expect_str_eq(r.message,
                     "token audiences [\"other\" \"x\"] is invalid for the target audiences [\"vault\" \"api\"]");
    token_result_clear(&r);
    free(tok);
}

/* Without API audiences in the policy, a token without aud has none. */
Test(token, audience_missing)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload_k8s("{\"namespace\":\"ns\"," SA "," POD "}", SUB)),
           TOKEN_OK); /* payload_k8s has aud ["api"]; now without it: */
    char payload[] = "{\"exp\":1700003600,\"iss\":\"" ISS "\",\"kubernetes.io\":{\"namespace\":\"ns\"," SA "," POD
                     "},\"sub\":\"" SUB "\"}";
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload), TOKEN_ERR_AUDIENCE);
}

#define LEGACY_PAYLOAD                                                                                                 \
    "{\"iss\":\"kubernetes/serviceaccount\",\"kubernetes.io/serviceaccount/namespace\":\"ns\","                        \
    "\"kubernetes.io/serviceaccount/secret.name\":\"sa-token-abcde\","                                                 \
    "\"kubernetes.io/serviceaccount/service-account.name\":\"sa\","                                                    \
    "\"kubernetes.io/serviceaccount/service-account.uid\":\"su\",\"sub\":\"" SUB "\"}"

Test(token, legacy_refused_by_default)
{
    expect(sign(rsa, "RS256", header("RS256", "RS256"), LEGACY_PAYLOAD), TOKEN_ERR_LEGACY);
}

Test(token, legacy_accepted_when_allowed)
{
    struct token_policy p = policy();
    struct token_result r;
    char *tok = sign(rsa, "RS256", header("RS256", "RS256"), LEGACY_PAYLOAD);
    char *api[] = {"x", "api"};
    p.accept_legacy = 1;
    p.api_audiences = api;
    p.napi_audiences = COUNT(api);
    cr_assert_eq(token_verify(ver, &p, tok, strlen(tok), &r), 0, "%s", r.message);
    cr_expect_str_eq(r.user.username, SUB);
    cr_expect_str_eq(r.user.uid, "su");
    cr_expect_str_eq(r.user.groups[0], "system:serviceaccounts");
    cr_expect_str_eq(r.user.groups[1], "system:serviceaccounts:ns");
    cr_expect_eq(r.user.nextra, 0);
    /* no aud: it carries the API audiences, of which "api" is wanted */
    cr_assert_eq(r.user.naudiences, 1);
    cr_expect_str_eq(r.user.audiences[0], "api");
    cr_expect_eq(r.user.exp, 0);
    token_result_clear(&r);
    free(tok);
}

/* kube-apiserver's rule: a token without aud carries the API audiences, and
 * the audiences asked for must intersect them. A legacy token was let
 * through for any audience (a review asking for "sts.amazonaws.com" of a
 * server whose API audience is "vault"). */
Test(token, legacy_token_audiences)
{
    struct token_policy p = policy();
    char *api[] = {"vault"}, *sts[] = {"sts.amazonaws.com"};
    char payload[1024];
    p.accept_legacy = 1;
    p.api_audiences = api;
    p.napi_audiences = COUNT(api);
    p.audiences = sts;
    p.naudiences = COUNT(sts);
    expect_p(sign(rsa, "RS256", header("RS256", "RS256"), LEGACY_PAYLOAD), &p, TOKEN_ERR_AUDIENCE);
    /* without API audiences, a token without aud carries none */
    p.audiences = api;
    p.api_audiences = NULL;
    p.napi_audiences = 0;
    expect_p(sign(rsa, "RS256", header("RS256", "RS256"), LEGACY_PAYLOAD), &p, TOKEN_ERR_AUDIENCE);
    /* a legacy token that does carry aud is held to it */
    p.api_audiences = api;
    p.napi_audiences = COUNT(api);
    snprintf(payload, sizeof(payload), "{\"aud\":[\"some-other-audience\"],%s", LEGACY_PAYLOAD + 1);
    expect_p(sign(rsa, "RS256", header("RS256", "RS256"), payload), &p, TOKEN_ERR_AUDIENCE);
    snprintf(payload, sizeof(payload), "{\"aud\":[\"some-other-audience\",\"vault\"],%s", LEGACY_PAYLOAD + 1);
    expect_p(sign(rsa, "RS256", header("RS256", "RS256"), payload), &p, TOKEN_OK);
    snprintf(payload, sizeof(payload), "{\"aud\":[],%s", LEGACY_PAYLOAD + 1); /* empty: as none */
    expect_p(sign(rsa, "RS256", header("RS256", "RS256"), payload), &p, TOKEN_OK);
}

/* The same rule holds for any token without aud, as in kube-apiserver. */
Test(token, bound_token_without_aud_carries_the_api_audiences)
{
    struct token_policy p = policy();
    char *api[] = {"api"}, *other[] = {"other"};
    char payload[] = "{\"exp\":1700003600,\"iss\":\"" ISS "\",\"kubernetes.io\":{\"namespace\":\"ns\"," SA "," POD
                     "},\"sub\":\"" SUB "\"}";
    p.api_audiences = api;
    p.napi_audiences = COUNT(api);
    expect_p(sign(rsa, "RS256", header("RS256", "RS256"), payload), &p, TOKEN_OK);
    p.api_audiences = other;
    expect_p(sign(rsa, "RS256", header("RS256", "RS256"), payload), &p, TOKEN_ERR_AUDIENCE);
}

Test(token, legacy_missing_secret_name)
{
    struct token_policy p = policy();
    char payload[] = "{\"iss\":\"kubernetes/serviceaccount\",\"kubernetes.io/serviceaccount/namespace\":\"ns\","
                     "\"kubernetes.io/serviceaccount/service-account.name\":\"sa\","
                     "\"kubernetes.io/serviceaccount/service-account.uid\":\"su\",\"sub\":\"" SUB "\"}";
    p.accept_legacy = 1;
    p.api_audiences = audiences;
    p.napi_audiences = COUNT(audiences);
    expect_p(sign(rsa, "RS256", header("RS256", "RS256"), payload), &p, TOKEN_ERR_CLAIMS);
}

Test(token, missing_exp)
{
    char payload[] = "{\"aud\":[\"api\"],\"iss\":\"" ISS "\",\"kubernetes.io\":{\"namespace\":\"ns\"," SA "," POD
                     "},\"sub\":\"" SUB "\"}";
    expect(sign(rsa, "RS256", header("RS256", "RS256"), payload), TOKEN_ERR_CLAIMS);
}

Test(token, bound_object_rules)
{
    const char *hdr = header("RS256", "RS256");
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":\"ns\"," SA "," POD "}", SUB)), TOKEN_OK);
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":\"ns\"," SA "," POD "," NODE "}", SUB)), TOKEN_OK);
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":\"ns\"," SA "," SECRET "}", SUB)), TOKEN_OK);
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":\"ns\"," SA "," NODE "}", SUB)), TOKEN_OK);
    /* Unbound, as `kubectl create token` issues them. */
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":\"ns\"," SA "}", SUB)), TOKEN_OK);
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":\"ns\"," SA "," POD "," SECRET "}", SUB)),
           TOKEN_ERR_CLAIMS);
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":\"ns\"," SA "," NODE "," SECRET "}", SUB)),
           TOKEN_ERR_CLAIMS);
}

Test(token, service_account_claims)
{
    const char *hdr = header("RS256", "RS256");
    expect(sign(rsa, "RS256", hdr, payload_k8s("{" SA "," POD "}", SUB)), TOKEN_ERR_CLAIMS);
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":\"\"," SA "," POD "}", SUB)), TOKEN_ERR_CLAIMS);
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":\"ns\"," POD "}", SUB)), TOKEN_ERR_CLAIMS);
    expect(sign(rsa, "RS256", hdr,
                payload_k8s("{\"namespace\":\"ns\",\"serviceaccount\":{\"name\":\"sa\"}," POD "}", SUB)),
           TOKEN_ERR_CLAIMS);
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":\"ns\"," SA ",\"pod\":{\"name\":\"p\"}}", SUB)),
           TOKEN_ERR_CLAIMS);
    expect(sign(rsa, "RS256", hdr, payload_k8s("{\"namespace\":7," SA "," POD "}", SUB)), TOKEN_ERR_CLAIM_TYPE);
    expect(sign(rsa, "RS256", hdr, payload_k8s("[]", SUB)), TOKEN_ERR_CLAIM_TYPE);
}

Test(token, subject_mismatch)
{
    const char *hdr = header("RS256", "RS256");
    const char *k8s = "{\"namespace\":\"ns\"," SA "," POD "}";
    expect(sign(rsa, "RS256", hdr, payload_k8s(k8s, "system:serviceaccount:ns:other")), TOKEN_ERR_CLAIMS);
    expect(sign(rsa, "RS256", hdr, payload_k8s(k8s, "system:serviceaccount:other:sa")), TOKEN_ERR_CLAIMS);
    expect(sign(rsa, "RS256", hdr, payload_k8s(k8s, "")), TOKEN_ERR_CLAIMS);
}

/* ---------------------------------------------------------------- */
/* Valid tokens                                                        */

static char *mint(EVP_PKEY *priv, char *const *aud, size_t naud)
{
    char err[256] = "";
    struct token_claims c = {
        .issuer = ISS,
        .audiences = aud,
        .naudiences = naud,
        .namespace_ = "kube-system",
        .service_account = "coredns",
        .service_account_uid = "a087d5a0-sa",
        .pod_name = "coredns-69cbfb9798-jv9gn",
        .pod_uid = "778a530c-pod",
        .node_name = "127.0.0.1",
        .node_uid = "58456cb0-node",
        .now = NOW - 100,
        .duration = 3600,
    };
    char *tok = token_mint(priv, &c, err, sizeof(err));
    cr_assert_not_null(tok, "%s", err);
    return tok;
}

static void expect_user(EVP_PKEY *priv)
{
    char *aud[] = {"x", "api", "y", "vault"};
    char *tok = mint(priv, aud, COUNT(aud));
    struct token_policy p = policy();
    struct token_result r;
    cr_assert_eq(token_verify(ver, &p, tok, strlen(tok), &r), 0, "%s: %s", token_error_name(r.error), r.message);
    cr_expect_eq(r.error, TOKEN_OK);
    cr_expect_str_eq(r.user.username, "system:serviceaccount:kube-system:coredns");
    cr_expect_str_eq(r.user.uid, "a087d5a0-sa");
    cr_expect_str_eq(r.user.groups[0], "system:serviceaccounts");
    cr_expect_str_eq(r.user.groups[1], "system:serviceaccounts:kube-system");
    cr_assert_eq(r.user.nextra, 5);
    cr_expect_str_eq(r.user.extra[0].key, "authentication.kubernetes.io/pod-name");
    cr_expect_str_eq(r.user.extra[0].value, "coredns-69cbfb9798-jv9gn");
    cr_expect_str_eq(r.user.extra[1].key, "authentication.kubernetes.io/pod-uid");
    cr_expect_str_eq(r.user.extra[1].value, "778a530c-pod");
    cr_expect_str_eq(r.user.extra[2].key, "authentication.kubernetes.io/node-name");
    cr_expect_str_eq(r.user.extra[2].value, "127.0.0.1");
    cr_expect_str_eq(r.user.extra[3].key, "authentication.kubernetes.io/node-uid");
    cr_expect_str_eq(r.user.extra[3].value, "58456cb0-node");
    cr_expect_str_eq(r.user.extra[4].key, "authentication.kubernetes.io/credential-id");
    cr_expect_eq(strncmp(r.user.extra[4].value, "JTI=", 4), 0);
    cr_expect_eq(strlen(r.user.extra[4].value), 4 + 36, "%s", r.user.extra[4].value);
    cr_assert_eq(r.user.naudiences, 2);
    cr_expect_str_eq(r.user.audiences[0], "api");
    cr_expect_str_eq(r.user.audiences[1], "vault");
    cr_expect_eq(r.user.exp, NOW - 100 + 3600);
    token_result_clear(&r);
    cr_expect_null(r.user.username);
    free(tok);
}

Test(token, valid_rs256)
{
    expect_user(rsa);
}

Test(token, valid_rs256_pkcs1_key)
{
    EVP_PKEY *k = fixture_private_key("rsa2048.pkcs1.key");
    expect_user(k);
    EVP_PKEY_free(k);
}

Test(token, valid_es256)
{
    expect_user(ec256);
}

Test(token, valid_es256_pkcs8_key)
{
    EVP_PKEY *k = fixture_private_key("ec256.pkcs8.key");
    expect_user(k);
    EVP_PKEY_free(k);
}

Test(token, valid_es384)
{
    expect_user(ec384);
}

Test(token, valid_es512)
{
    expect_user(ec521);
}

Test(token, no_kid_tries_keys)
{
    expect(sign(rsa, "RS256", "{\"alg\":\"RS256\"}", VALID_PAYLOAD), TOKEN_OK);
    expect(sign(ec384, "ES384", "{\"alg\":\"ES384\"}", VALID_PAYLOAD), TOKEN_OK);
}

/* Each thread keeps copies of the verify contexts of the keys it used
 * (jws.c), found by the key's verify_id: after a key set is freed and
 * another loaded (glibc likely hands out the same addresses), a token must
 * never verify with the old key's copy. */
Test(token, thread_contexts_follow_the_key)
{
    char *tok = sign(rsa, "RS256", "{\"alg\":\"RS256\"}", VALID_PAYLOAD);
    struct token_policy p = policy();
    struct token_result r;
    struct keyset *set = fixture_keyset1("rsa2048.pub");
    struct verifier *v = verifier_new(set);

    cr_assert_not_null(v);
    cr_expect_eq(token_verify(v, &p, tok, strlen(tok), &r), 0, "%s", r.message);
    token_result_clear(&r);
    verifier_free(v);
    keyset_free(set);
    set = fixture_keyset1("rsa4096.pub");
    cr_assert_not_null(v = verifier_new(set));
    cr_expect_eq(token_verify(v, &p, tok, strlen(tok), &r), -1);
    cr_expect_eq(r.error, TOKEN_ERR_UNKNOWN_KID, "%s", r.message);
    token_result_clear(&r);
    verifier_free(v);
    keyset_free(set);
    free(tok);
}

/* Tokens for threads_verify_concurrently and what each must give: five
 * keys (the kid-less RS256 one tries rsa4096 first), one more than a
 * thread keeps contexts for, so copies are replaced too. */
struct verify_job {
    char *tok[5];
    enum token_error want[5];
    int wrong; /* out: results that differed */
};

static void *verify_thread(void *arg)
{
    struct verify_job *job = arg;
    struct token_policy p = policy();

    for (int round = 0; round < 40; round++)
        for (size_t i = 0; i < COUNT(job->tok); i++) {
            struct token_result r;
            token_verify(ver, &p, job->tok[i], strlen(job->tok[i]), &r);
            job->wrong += r.error != job->want[i];
            token_result_clear(&r);
        }
    return NULL;
}

/* Threads verify at the same time with the same keys, each with its own
 * contexts; their exit frees those (the leak check would see them). */
Test(token, threads_verify_concurrently)
{
    struct verify_job jobs[4];
    pthread_t threads[COUNT(jobs)];
    char *bad = sign(rsa, "RS256", header("RS256", "RS256"), VALID_PAYLOAD);
    char *c = bad + strlen(bad) - 5; /* inside the signature */

    *c = *c == 'A' ? 'B' : 'A';
    for (size_t t = 0; t < COUNT(jobs); t++) {
        struct verify_job j = {
            .tok = {sign(rsa, "RS256", "{\"alg\":\"RS256\"}", VALID_PAYLOAD),
                    sign(ec256, "ES256", header("ES256", "ES256"), VALID_PAYLOAD),
                    sign(ec384, "ES384", header("ES384", "ES384"), VALID_PAYLOAD),
                    sign(ec521, "ES512", header("ES512", "ES512"), VALID_PAYLOAD), strdup(bad)},
            .want = {TOKEN_OK, TOKEN_OK, TOKEN_OK, TOKEN_OK, TOKEN_ERR_SIGNATURE},
        };
        jobs[t] = j;
        cr_assert_eq(pthread_create(&threads[t], NULL, verify_thread, &jobs[t]), 0);
    }
    for (size_t t = 0; t < COUNT(jobs); t++) {
        cr_assert_eq(pthread_join(threads[t], NULL), 0);
        cr_expect_eq(jobs[t].wrong, 0, "thread %zu: %d wrong results", t, jobs[t].wrong);
        for (size_t i = 0; i < COUNT(jobs[t].tok); i++)
            free(jobs[t].tok[i]);
    }
    free(bad);
}

Test(token, minted_shape)
{
    char *aud[] = {"api"};
    char *tok = mint(ec256, aud, 1);
    char *dot1 = strchr(tok, '.'), *dot2 = strchr(dot1 + 1, '.');
    unsigned char buf[2048];
    size_t n;
    char want[256];

    cr_assert_eq(b64url_decode(tok, (size_t)(dot1 - tok), buf, &n), 0);
    snprintf(want, sizeof(want), "{\"alg\":\"ES256\",\"kid\":\"%s\"}", kid_of("ES256"));
    cr_expect_eq(n, strlen(want));
    cr_expect_eq(memcmp(buf, want, n), 0);
    cr_assert_eq(b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), buf, &n), 0);
    buf[n] = '\0';
    const char *p = (const char *)buf;
    const char *head = "{\"aud\":[\"api\"],\"exp\":1700003500,\"iat\":1699999900,\"iss\":\"" ISS "\",\"jti\":\"";
    cr_expect_eq(strncmp(p, head, strlen(head)), 0, "%s", p);
    const char *jti = strstr(p, "\"jti\":\"") + 7;
    cr_expect_eq(jti[14], '4', "uuid version: %s", p);
    cr_expect(strchr("89ab", jti[19]) != NULL, "uuid variant: %s", p);
    cr_expect_str_eq(jti + 36, "\",\"kubernetes.io\":{\"namespace\":\"kube-system\","
                               "\"node\":{\"name\":\"127.0.0.1\",\"uid\":\"58456cb0-node\"},"
                               "\"pod\":{\"name\":\"coredns-69cbfb9798-jv9gn\",\"uid\":\"778a530c-pod\"},"
                               "\"serviceaccount\":{\"name\":\"coredns\",\"uid\":\"a087d5a0-sa\"}},"
                               "\"nbf\":1699999900,\"sub\":\"system:serviceaccount:kube-system:coredns\"}");
    cr_expect_eq(strlen(dot2 + 1), B64URL_ENCODED_LEN(64));
    free(tok);
}

Test(token, mint_load_key_errors)
{
    char err[256] = "", path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/rsa2048.pub", FIXTURES);
    cr_expect_null(keyfile_read_private(path, err, sizeof(err)));
    cr_expect_neq(strstr(err, "rsa2048.pub"), NULL, "%s", err);
    snprintf(path, sizeof(path), "%s/encrypted.pkcs8.key", FIXTURES);
    cr_expect_null(keyfile_read_private(path, err, sizeof(err)));
    cr_expect_null(keyfile_read_private("/nonexistent/key", err, sizeof(err)));
}

Test(token, error_names_distinct)
{
    for (int a = TOKEN_OK; a <= TOKEN_ERR_CLAIMS; a++) {
        cr_expect_neq(strcmp(token_error_name(a), "unknown"), 0, "%d has no name", a);
        for (int b = a + 1; b <= TOKEN_ERR_CLAIMS; b++)
            cr_expect_neq(strcmp(token_error_name(a), token_error_name(b)), 0, "%d and %d", a, b);
    }
    cr_expect_str_eq(token_error_name(TOKEN_ERR_ALG_NONE), "alg_none");
    cr_expect_str_eq(token_error_name(TOKEN_ERR_CLAIMS + 1), "unknown");
}

/* ---------------------------------------------------------------- */
/* b64url_decode                                                       */

Test(b64url, round_trip)
{
    unsigned char in[64], out[B64URL_DECODED_MAX(B64URL_ENCODED_LEN(64))];
    char enc[B64URL_ENCODED_LEN(64) + 1];
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)(i * 37 + 11);
    for (size_t n = 0; n <= sizeof(in); n++) {
        size_t m = b64url_encode(in, n, enc), outlen = 999;
        cr_assert_eq(b64url_decode(enc, m, out, &outlen), 0, "n=%zu %s", n, enc);
        cr_assert_eq(outlen, n);
        cr_assert_eq(memcmp(in, out, n), 0);
    }
}

Test(b64url, known_values)
{
    unsigned char out[16];
    size_t n;
    cr_assert_eq(b64url_decode("-_8", 3, out, &n), 0);
    cr_assert_eq(n, 2);
    cr_expect_eq(out[0], 0xfb);
    cr_expect_eq(out[1], 0xff);
}

Test(b64url, refusals)
{
    static const char *const bad[] = {"QQ==", "QQ=",  "Q",  "QUJDR", "a+b_",    "a/b-",
                                      "ab c", "ab\n", "QR", "QUF",   "QUJD\x80"};
    unsigned char out[16];
    size_t n;
    for (size_t i = 0; i < COUNT(bad); i++)
        cr_expect_eq(b64url_decode(bad[i], strlen(bad[i]), out, &n), -1, "%s", bad[i]);
    cr_expect_eq(b64url_decode("QQ\0A", 4, out, &n), -1);
    cr_expect_eq(b64url_decode("QQ", 2, out, &n), 0);
    cr_expect_eq(b64url_decode("QUE", 3, out, &n), 0);
}

/* Every byte, in every position of a group, is accepted exactly when it is
 * in the alphabet, and decodes to its index there (the decoder uses a
 * table; this pins it to the alphabet). */
Test(b64url, alphabet_exhaustive)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char out[4];
    size_t n;
    for (int c = 0; c < 256; c++) {
        const char *at = c ? memchr(alphabet, c, 64) : NULL;
        for (int pos = 0; pos < 4; pos++) {
            char s[4] = {'A', 'A', 'A', 'A'};
            s[pos] = (char)c;
            int rc = b64url_decode(s, 4, out, &n);
            cr_expect_eq(rc, at ? 0 : -1, "byte 0x%02x at %d", c, pos);
            if (rc == 0) {
                unsigned long v = (unsigned long)out[0] << 16 | (unsigned long)out[1] << 8 | out[2];
                cr_expect_eq(n, 3);
                cr_expect_eq(v >> (18 - 6 * pos) & 63, (unsigned long)(at - alphabet), "byte 0x%02x at %d", c, pos);
            }
        }
    }
}

/* A short last group: its last character must leave the unused low bits
 * (4 after two characters, 2 after three) zero; every alphabet character
 * is tried there. */
Test(b64url, trailing_bits_exhaustive)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char out[8];
    size_t n;
    for (int i = 0; i < 64; i++) {
        char two[6] = {'Q', 'U', 'J', 'D', 'Q', alphabet[i]}, three[3] = {'Q', 'Q', alphabet[i]};
        cr_expect_eq(b64url_decode(two, 6, out, &n), (i & 15) ? -1 : 0, "QUJDQ%c", alphabet[i]);
        if ((i & 15) == 0) {
            cr_expect_eq(n, 4);
            cr_expect_eq(out[3], (unsigned char)(16 << 2 | i >> 4));
        }
        cr_expect_eq(b64url_decode(three, 3, out, &n), (i & 3) ? -1 : 0, "QQ%c", alphabet[i]);
        if ((i & 3) == 0) {
            cr_expect_eq(n, 2);
            cr_expect_eq(out[1], (unsigned char)((16 & 15) << 4 | i >> 2));
        }
    }
}

/* ---------------------------------------------------------------- */
/* The compact-header fast path (jwt_parse_compact_header)          */

/* Asserts that two trees are the same: types, names, strings, order. */
static void assert_same_tree(const struct json_value *a, const struct json_value *b)
{
    cr_assert_eq(a->type, b->type);
    cr_assert((a->name == NULL) == (b->name == NULL));
    if (a->name != NULL)
        cr_assert_str_eq(a->name, b->name);
    if (a->type == JSON_STRING)
        cr_assert_str_eq(a->str, b->str);
    const struct json_value *x = a->child, *y = b->child;
    for (; x != NULL && y != NULL; x = x->next, y = y->next)
        assert_same_tree(x, y);
    cr_assert(x == NULL && y == NULL, "different member counts");
}

/* The fast path takes hdr and builds json_parse's tree for it. */
static void expect_compact(const char *hdr)
{
    struct jwt_compact_header c;
    char err[128];
    const struct json_value *fast = jwt_parse_compact_header((const unsigned char *)hdr, strlen(hdr), &c);
    struct json_value *slow = json_parse((const unsigned char *)hdr, strlen(hdr), err, sizeof(err));
    cr_assert_not_null(fast, "%s not taken by the fast path", hdr);
    cr_assert_not_null(slow, "%s: %s", hdr, err);
    assert_same_tree(fast, slow);
    json_free(slow);
}

/* The fast path leaves hdr to json_parse. */
static void expect_not_compact(const char *hdr)
{
    struct jwt_compact_header c;
    cr_expect_null(jwt_parse_compact_header((const unsigned char *)hdr, strlen(hdr), &c), "%s taken", hdr);
}

Test(token, compact_header_same_tree)
{
    expect_compact(header("RS256", "RS256"));
    expect_compact(header("ES256", "ES256"));
    expect_compact(header("ES512", "ES384"));
    expect_compact(header("HS256", "RS256"));
    expect_compact("{\"alg\":\"zz9Zz\",\"kid\":\"-_-_-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL\"}");
}

Test(token, compact_header_near_misses)
{
    const char *kid = kid_of("RS256");
    char buf[512], k[KEY_KID_LEN + 1];
    const char *forms[] = {
        "{ \"alg\":\"RS256\",\"kid\":\"%s\"}",      /* whitespace */
        "{\"alg\":\"RS256\", \"kid\":\"%s\"}",      /* whitespace */
        "{\"alg\":\"RS256\",\"kid\":\"%s\"} ",      /* trailing byte */
        "{\"kid\":\"%s\",\"alg\":\"RS256\"}",       /* member order */
        "{\"alg\":\"RS25\\u0036\",\"kid\":\"%s\"}", /* escaped alg */
        "{\"alg\":\"RS256\",\"kid\":\"%s\",\"crit\":[]}",
        "{\"alg\":\"RS256\",\"kid\":\"%s\",\"jku\":\"x\"}",
        "{\"alg\":\"RS256\",\"kid\":\"%s\",\"alg\":\"RS256\"}",
        "{\"alg\":\"RS256\",\"kjd\":\"%s\"}", /* same length, other name */
    };
    for (size_t i = 0; i < COUNT(forms); i++) {
        snprintf(buf, sizeof(buf), forms[i], kid);
        expect_not_compact(buf);
    }
    /* Same length, a kid character that is not base64url. */
    const char bad[] = {'"', '\\', '.', '=', ' ', '\x01', '\x7f', '\xc3'};
    for (size_t i = 0; i < COUNT(bad); i++) {
        memcpy(k, kid, sizeof(k));
        k[7] = bad[i];
        snprintf(buf, sizeof(buf), "{\"alg\":\"RS256\",\"kid\":\"%s\"}", k);
        expect_not_compact(buf);
    }
    expect_not_compact("{\"alg\":\"RS-56\",\"kid\":\"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ\"}");
    expect_not_compact("{\"alg\":\"RS256\",\"kid\":\"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP\"}");
}

/* Token decisions on compact headers, and on their slow-path twins. */
Test(token, compact_header_decisions)
{
    char spaced[256];
    expect(sign(rsa, "RS256", header("RS256", "RS256"), VALID_PAYLOAD), TOKEN_OK);
    snprintf(spaced, sizeof(spaced), "{\"alg\": \"RS256\", \"kid\": \"%s\"}", kid_of("RS256"));
    expect(sign(rsa, "RS256", spaced, VALID_PAYLOAD), TOKEN_OK);
    expect(sign(ec256, "ES256", header("ES256", "ES256"), VALID_PAYLOAD), TOKEN_OK);
    expect(sign(rsa, "RS256", header("RS256", "ES256"), VALID_PAYLOAD), TOKEN_ERR_ALG_MISMATCH);
    expect(sign(rsa, "RS256", header("HS256", "RS256"), VALID_PAYLOAD), TOKEN_ERR_ALG_HMAC);
    expect(sign(rsa, "RS256", header("RS384", "RS256"), VALID_PAYLOAD), TOKEN_ERR_ALG_UNSUPPORTED);
    expect(sign(rsa, "RS256", "{\"alg\":\"RS256\",\"kid\":\"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ\"}",
                VALID_PAYLOAD),
           TOKEN_ERR_UNKNOWN_KID);
    expect(sign(ec256, "ES256", header("ES256", "ES256"), "[1]"), TOKEN_ERR_JSON);
}
