/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the token unit tests (tests/unit/test_token_*.c) share: the key set and
 * verifier the token suite sets up, its policy, and builders of headers,
 * payloads and signatures for crafted tokens.
 */
#ifndef TOKEN_TEST_SUPPORT_H
#define TOKEN_TEST_SUPPORT_H

#include <criterion/criterion.h>

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

#include "test_support.h"

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

static inline void setup(void)
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

static inline void teardown(void)
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

static inline struct token_policy policy(void)
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
static inline char *header(const char *alg, const char *kid_alg)
{
    static char buf[256];
    snprintf(buf, sizeof(buf), "{\"alg\":\"%s\",\"kid\":\"%s\"}", alg, kid_of(kid_alg));
    return buf;
}

static inline char *b64(const void *data, size_t n)
{
    char *s = malloc(B64URL_ENCODED_LEN(n) + 1);
    cr_assert_not_null(s);
    b64url_encode(data, n, s);
    return s;
}

/* header "." payload as base64url, the signing input. */
static inline char *signing_input(const char *hdr, const char *payload)
{
    char *h = b64(hdr, strlen(hdr)), *p = b64(payload, strlen(payload)), *si;
    cr_assert_geq(asprintf(&si, "%s.%s", h, p), 0);
    free(h);
    free(p);
    return si;
}

/* Any header, payload and raw signature bytes, as a compact JWS. */
static inline char *assemble(const char *hdr, const char *payload, const unsigned char *sig, size_t siglen)
{
    char *si = signing_input(hdr, payload), *s = b64(sig, siglen), *tok;
    cr_assert_geq(asprintf(&tok, "%s.%s", si, s), 0);
    free(si);
    free(s);
    return tok;
}

/* Raw JWS signature of hdr.payload with priv under sign_alg. */
static inline unsigned char *raw_sig(EVP_PKEY *priv, const char *sign_alg, const char *hdr, const char *payload,
                                     size_t *len)
{
    char *si = signing_input(hdr, payload);
    unsigned char *sig = jws_sign(jws_alg_find(sign_alg), priv, si, strlen(si), len);
    cr_assert_not_null(sig);
    free(si);
    return sig;
}

/* hdr.payload signed with priv under sign_alg, whatever hdr says. */
static inline char *sign(EVP_PKEY *priv, const char *sign_alg, const char *hdr, const char *payload)
{
    size_t len;
    unsigned char *sig = raw_sig(priv, sign_alg, hdr, payload, &len);
    char *tok = assemble(hdr, payload, sig, len);
    free(sig);
    return tok;
}

/* A bound payload with the given exp, nbf and iat (JSON texts) and the
 * given aud. */
static inline char *payload_times_aud(const char *exp, const char *nbf, const char *iat, const char *aud)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"aud\":%s,\"exp\":%s,\"iat\":%s,\"iss\":\"" ISS "\",\"jti\":\"j-1\","
             "\"kubernetes.io\":{\"namespace\":\"ns\",\"pod\":{\"name\":\"p\",\"uid\":\"pu\"},"
             "\"serviceaccount\":{\"name\":\"sa\",\"uid\":\"su\"}},\"nbf\":%s,\"sub\":\"system:serviceaccount:ns:sa\"}",
             aud, exp, iat, nbf);
    return buf;
}

static inline char *payload_times(const char *exp, const char *nbf, const char *iat)
{
    return payload_times_aud(exp, nbf, iat, "[\"api\"]");
}

#define VALID_PAYLOAD payload_times("1700003600", "1699999000", "1699999000")

/* A bound payload whose kubernetes.io object is k8s. */
static inline char *payload_k8s(const char *k8s, const char *sub)
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
static inline void expect_p(char *tok, const struct token_policy *p, enum token_error e)
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

static inline void expect(char *tok, enum token_error e)
{
    struct token_policy p = policy();
    expect_p(tok, &p, e);
}

#endif
