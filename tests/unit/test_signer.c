/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for jose/signer: the external signer's state. The header is
 * exactly {"alg","kid","typ":"JWT"}, compact; the signature over
 * header.claims verifies with the published key through our verifier (the
 * end-to-end tests check it with PyJWT and node jose too) for RS256 and
 * ES256 (raw r || s); claims that are not base64url, or too long, are
 * refused; a state without a key says why; FetchKeys's keys are the
 * published set's, as DER; the refresh hint; states compare; the slot.
 */
#include <criterion/criterion.h>
#include <openssl/core_names.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <string.h>

#include "test_support.h"

#include "jose/signer.h"
#include "jose/token.h"
#include "jose/token_mint.h"
#include "jose/verifier.h"
#include "util/b64url.h"

#define T0     1800000000L
#define ISSUER "https://issuer.example"

/* The claims of a kube-shaped token, base64url: the middle of one minted. */
static char *claims_of(EVP_PKEY *priv)
{
    char *aud[] = {ISSUER}, err[256];
    struct token_claims c = {.issuer = ISSUER,
                             .audiences = aud,
                             .naudiences = 1,
                             .namespace_ = "ns",
                             .service_account = "sa",
                             .service_account_uid = "uid-1",
                             .now = time(NULL),
                             .duration = 600};
    char *token = token_mint(priv, &c, err, sizeof(err)), *dot, *claims;

    cr_assert_not_null(token, "%s", err);
    dot = strchr(token, '.');
    claims = strndup(dot + 1, (size_t)(strrchr(token, '.') - dot - 1));
    free(token);
    return claims;
}

/* A state signing with priv, whose published set is ks. */
static struct signer_state *state_of(const struct keyset *ks, EVP_PKEY *priv, const char *kid)
{
    char err[256] = "";
    const struct signer_params p = {.published = ks,
                                    .keys_changed = T0,
                                    .priv = priv,
                                    .kid = kid,
                                    .unavailable = priv ? NULL : "no key yet",
                                    .next_change = T0 + 30,
                                    .max_token_expiration = 3600};
    struct signer_state *s = signer_state_new(&p, err, sizeof(err));

    cr_assert_not_null(s, "%s", err);
    return s;
}

/* Signs claims with s, assembles the token and verifies it with the
 * published keys ks. */
static void sign_and_verify(struct signer_state *s, const struct keyset *ks, const char *claims, const char *alg)
{
    char *signature = NULL, *token, header[256], want[1200];
    unsigned char raw[512];
    size_t len;
    struct verifier *v = verifier_new(ks);
    char *issuers[] = {ISSUER};
    struct token_policy policy = {
        .issuers = issuers, .nissuers = 1, .audiences = issuers, .naudiences = 1, .leeway = 60, .now = time(NULL)};
    struct token_result r;

    cr_assert_eq(signer_sign(s, claims, strlen(claims), 16384, &signature), SIGNER_OK);
    cr_assert_eq(b64url_decode(s->header, s->header_len, (unsigned char *)header, &len), 0);
    header[len] = '\0';
    snprintf(want, sizeof(want), "{\"alg\":\"%s\",\"kid\":\"%s\",\"typ\":\"JWT\"}", alg, s->kid);
    cr_expect_str_eq(header, want, "the header, byte for byte");
    cr_assert_eq(b64url_decode(signature, strlen(signature), raw, &len), 0, "the signature is base64url");
    if (strcmp(alg, "ES256") == 0)
        cr_expect_eq(len, 64, "ES256 signatures are raw r || s");
    cr_assert_geq(asprintf(&token, "%s.%s.%s", s->header, claims, signature), 0);
    cr_expect_eq(token_verify(v, &policy, token, strlen(token), &r), 0, "%s", r.message);
    token_result_clear(&r);
    token[strlen(token) - 2] ^= 1; /* a signature changed */
    cr_expect_neq(token_verify(v, &policy, token, strlen(token), &r), 0);
    token_result_clear(&r);
    free(token);
    free(signature);
    verifier_free(v);
}

TestSuite(signer, .fini = leak_check);

Test(signer, rs256_and_es256_tokens_verify_with_the_published_key)
{
    static const struct {
        const char *priv, *pub, *alg;
    } cases[] = {{"rsa2048.pkcs8.key", "rsa2048.pub", "RS256"}, {"ec256.sec1.key", "ec256.pub", "ES256"}};

    for (size_t i = 0; i < COUNT(cases); i++) {
        EVP_PKEY *priv = fixture_private_key(cases[i].priv);
        struct keyset *ks = fixture_keyset1(cases[i].pub);
        struct signer_state *s = state_of(ks, priv, ks->keys[0].kid);
        char *claims = claims_of(priv);
        cr_expect_eq(s->key.alg, jws_alg_find(cases[i].alg));
        sign_and_verify(s, ks, claims, cases[i].alg);
        free(claims);
        signer_state_release(s);
        keyset_free(ks);
        EVP_PKEY_free(priv);
    }
}

/* ECDSA r and s are 32 bytes raw, but as numbers (OpenSSL's BIGNUMs, or
 * DER) they are shorter when they begin with zero bytes (one signature in
 * 128 or so): those must come out padded.
 * 2000 signatures all verify, and some had a leading zero (the chance of
 * none is about 1e-7). */
Test(signer, es256_signatures_with_short_r_or_s_are_padded)
{
    EVP_PKEY *priv = fixture_private_key("ec256.sec1.key");
    struct keyset *ks = fixture_keyset1("ec256.pub");
    struct signer_state *s = state_of(ks, priv, ks->keys[0].kid);
    char *claims = claims_of(priv), *signature, *token;
    struct verifier *v = verifier_new(ks);
    char *issuers[] = {ISSUER};
    struct token_policy policy = {
        .issuers = issuers, .nissuers = 1, .audiences = issuers, .naudiences = 1, .leeway = 60, .now = time(NULL)};
    struct token_result r;
    unsigned char raw[64];
    size_t len;
    int short_ones = 0;

    for (int i = 0; i < 2000; i++) {
        cr_assert_eq(signer_sign(s, claims, strlen(claims), 16384, &signature), SIGNER_OK);
        cr_assert_eq(b64url_decode(signature, strlen(signature), raw, &len), 0);
        cr_assert_eq(len, 64);
        short_ones += raw[0] == 0 || raw[32] == 0;
        cr_assert_geq(asprintf(&token, "%s.%s.%s", s->header, claims, signature), 0);
        cr_assert_eq(token_verify(v, &policy, token, strlen(token), &r), 0, "signature %d: %s", i, r.message);
        token_result_clear(&r);
        free(token);
        free(signature);
    }
    cr_expect_gt(short_ones, 0, "no signature had a short r or s");
    verifier_free(v);
    free(claims);
    signer_state_release(s);
    keyset_free(ks);
    EVP_PKEY_free(priv);
}

/* How many times r has reseeded. */
static unsigned reseeds(EVP_RAND_CTX *r)
{
    unsigned n = 0;
    OSSL_PARAM get[] = {OSSL_PARAM_construct_uint(OSSL_DRBG_PARAM_RESEED_COUNTER, &n), OSSL_PARAM_construct_end()};

    cr_assert_eq(EVP_RAND_CTX_get_params(r, get), 1);
    return n;
}

/* Signing draws from a random generator of the signer's own (an ES256
 * nonce, RS256's blinding): every draw from the process's shared one takes
 * a lock (OpenSSL 3.0) that other threads' TLS handshakes and key
 * generation take too. This thread's shared generator is set to reseed at
 * every draw, so a draw shows in its reseed count (checked first), and
 * signing with the fixture key priv_name leaves it be. */
static void assert_signing_leaves_the_shared_generator(const char *priv_name, const char *pub_name)
{
    EVP_PKEY *priv = fixture_private_key(priv_name);
    struct keyset *ks = fixture_keyset1(pub_name);
    struct signer_state *s = state_of(ks, priv, ks->keys[0].kid);
    char *claims = claims_of(priv), *signature;
    EVP_RAND_CTX *shared = RAND_get0_private(NULL);
    unsigned one = 1, before;
    unsigned char byte;
    OSSL_PARAM every_draw[] = {OSSL_PARAM_construct_uint(OSSL_DRBG_PARAM_RESEED_REQUESTS, &one),
                               OSSL_PARAM_construct_end()};

    cr_assert_not_null(shared);
    cr_assert_eq(EVP_RAND_CTX_set_params(shared, every_draw), 1);
    cr_assert_eq(RAND_priv_bytes(&byte, 1), 1);
    before = reseeds(shared);
    cr_assert_eq(RAND_priv_bytes(&byte, 1), 1);
    cr_assert_gt(reseeds(shared), before, "a draw from the shared generator shows");
    before = reseeds(shared);
    /* more than the 32 uses after which RSA's blinding is made anew */
    for (int i = 0; i < 40; i++) {
        cr_assert_eq(signer_sign(s, claims, strlen(claims), 16384, &signature), SIGNER_OK);
        free(signature);
    }
    cr_expect_eq(reseeds(shared), before, "signing with %s drew from the shared generator", priv_name);
    free(claims);
    signer_state_release(s);
    keyset_free(ks);
    EVP_PKEY_free(priv);
}

Test(signer, es256_nonces_do_not_come_from_the_shared_random_generator)
{
    assert_signing_leaves_the_shared_generator("ec256.sec1.key", "ec256.pub");
}

Test(signer, rs256_blinding_does_not_come_from_the_shared_random_generator)
{
    assert_signing_leaves_the_shared_generator("rsa2048.pkcs8.key", "rsa2048.pub");
}

Test(signer, claims_must_be_base64url_and_bounded)
{
    EVP_PKEY *priv = fixture_private_key("ec256.sec1.key");
    struct keyset *ks = fixture_keyset1("ec256.pub");
    struct signer_state *s = state_of(ks, priv, ks->keys[0].kid);
    static const char *const bad[] = {"", "a.b", "abc=", "ab+c", "a", "ab c", "abc/"};
    char *signature = (char *)"untouched";

    for (size_t i = 0; i < COUNT(bad); i++) {
        cr_expect_eq(signer_sign(s, bad[i], strlen(bad[i]), 100, &signature), SIGNER_BAD_CLAIMS, "%s", bad[i]);
        cr_expect_null(signature);
    }
    cr_expect_eq(signer_sign(s, "abcdefgh", 8, 7, &signature), SIGNER_BAD_CLAIMS, "one character too long");
    cr_expect_eq(signer_sign(s, "abcdefgh", 8, 8, &signature), SIGNER_OK);
    free(signature);
    signer_state_release(s);
    keyset_free(ks);
    EVP_PKEY_free(priv);
}

Test(signer, without_a_key_sign_says_why)
{
    struct keyset *ks = fixture_keyset1("ec256.pub");
    struct signer_state *s = state_of(ks, NULL, "");
    char *signature = NULL;

    cr_expect_eq(signer_sign(s, "abcd", 4, 100, &signature), SIGNER_UNAVAILABLE);
    cr_expect_str_eq(s->unavailable, "no key yet");
    signer_state_release(s);
    keyset_free(ks);
}

/* FetchKeys returns every published key, in order, as DER with its kid. */
Test(signer, fetch_keys_are_the_published_set)
{
    static const char *const pubs[] = {"rsa2048.pub", "ec256.pub", "ec384.pub"};
    struct keyset *ks = fixture_keyset(pubs, COUNT(pubs));
    struct signer_state *s = state_of(ks, NULL, "");

    cr_assert_eq(s->nkeys, 3);
    for (size_t i = 0; i < 3; i++) {
        const unsigned char *p = s->keys[i].der;
        EVP_PKEY *pk = d2i_PUBKEY(NULL, &p, (long)s->keys[i].der_len);
        cr_assert_not_null(pk);
        cr_expect_eq(EVP_PKEY_eq(pk, ks->keys[i].pub), 1);
        cr_expect_str_eq(s->keys[i].kid, ks->keys[i].kid);
        EVP_PKEY_free(pk);
    }
    cr_expect_eq(s->keys_changed, T0);
    cr_expect_eq(s->max_token_expiration, 3600);
    signer_state_release(s);
    keyset_free(ks);
}

Test(signer, the_refresh_hint_is_the_time_to_the_next_change_capped)
{
    struct keyset *ks = fixture_keyset1("ec256.pub");
    struct signer_state *s = state_of(ks, NULL, "");

    cr_expect_eq(signer_refresh_hint(s, T0), 30);
    cr_expect_eq(signer_refresh_hint(s, T0 + 29), 1);
    cr_expect_eq(signer_refresh_hint(s, T0 + 31), 1, "overdue: ask again at once, never 0");
    s->next_change = T0 + 3600;
    cr_expect_eq(signer_refresh_hint(s, T0), SIGNER_REFRESH_MAX);
    s->next_change = 0;
    cr_expect_eq(signer_refresh_hint(s, T0), SIGNER_REFRESH_MAX);
    signer_state_release(s);
    keyset_free(ks);
}

Test(signer, states_compare_by_what_the_calls_answer)
{
    EVP_PKEY *priv = fixture_private_key("ec256.sec1.key");
    struct keyset *ks = fixture_keyset1("ec256.pub");
    struct signer_state *a = state_of(ks, priv, ks->keys[0].kid), *b = state_of(ks, priv, ks->keys[0].kid);
    struct signer_state *none = state_of(ks, NULL, "");

    cr_expect(signer_state_same(a, b));
    cr_expect_not(signer_state_same(a, none));
    b->keys_changed++;
    cr_expect_not(signer_state_same(a, b), "a new data_timestamp is news for kube-apiserver");
    signer_state_release(a);
    signer_state_release(b);
    signer_state_release(none);
    keyset_free(ks);
    EVP_PKEY_free(priv);
}

/* A state taken from the slot stays valid after the slot moves on. */
Test(signer, the_slot_hands_over_states)
{
    struct keyset *ks = fixture_keyset1("ec256.pub");
    struct signer_state *first = state_of(ks, NULL, ""), *second = state_of(ks, NULL, ""), *taken;
    struct signer_slot slot;

    signer_slot_init(&slot);
    cr_expect_null(signer_slot_get(&slot));
    signer_slot_set(&slot, first);
    taken = signer_slot_get(&slot);
    cr_expect_eq(taken, first);
    signer_slot_set(&slot, second);
    signer_state_release(first);
    cr_expect_eq(taken->nkeys, 1, "still readable");
    signer_state_release(taken);
    taken = signer_slot_get(&slot);
    cr_expect_eq(taken, second);
    signer_state_release(taken);
    signer_state_release(second);
    signer_slot_destroy(&slot);
    keyset_free(ks);
}

/* A call that drops the last reference of a replaced state does not free
 * it (that would take the reload thread's malloc arena lock on the Sign
 * path): the slot keeps it until a sweep on the setter's thread. */
Test(signer, a_replaced_state_is_freed_by_the_slot_not_by_its_last_caller)
{
    struct keyset *ks = fixture_keyset1("ec256.pub");
    struct signer_state *first = state_of(ks, NULL, ""), *second = state_of(ks, NULL, ""), *third, *taken;
    struct signer_slot slot;

    signer_slot_init(&slot);
    signer_slot_set(&slot, first);
    signer_state_release(first);
    taken = signer_slot_get(&slot);
    signer_slot_set(&slot, second);
    signer_state_release(second);
    cr_expect_eq(slot.retired, first, "held by a call: kept by the sweep of the set");
    signer_state_release(taken);
    cr_expect_eq(atomic_load(&first->refs), 1, "the caller's release left the slot's reference");
    cr_expect_eq(first->nkeys, 1, "still there");
    signer_slot_sweep(&slot);
    cr_expect_null(slot.retired, "freed by the sweep");
    taken = signer_slot_get(&slot);
    third = state_of(ks, NULL, "");
    signer_slot_set(&slot, third);
    signer_state_release(third);
    signer_slot_destroy(&slot); /* drops its references, the retired one's too */
    signer_state_release(taken);
    keyset_free(ks);
}
