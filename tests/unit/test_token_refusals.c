/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for jose/token's refusals of service-account tokens. Every
 * refusal listed in token.h has a test that crafts exactly that token
 * (token_test_support.h builds them).
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
#include "token_test_support.h"

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
    /* what a check of its objects looks up: its secret, by name only */
    cr_expect(r.user.legacy);
    cr_expect_str_eq(r.user.secret_name, "sa-token-abcde");
    cr_expect_null(r.user.secret_uid);
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
