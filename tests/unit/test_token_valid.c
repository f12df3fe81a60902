/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for jose/token (valid tokens, the compact-header fast path),
 * jose/token_mint and the strict decoder of util/b64url. The tokens are minted
 * by jose/token_mint or built by token_test_support.h.
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

TestSuite(b64url, .fini = leak_check);

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
