/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for jose/review: the one review policy of the TokenReview
 * endpoint and the verify command — which audiences a review asks for,
 * which issuers it accepts, what the config's token flags change, and the
 * cache in front of the signature check.
 */
#include <criterion/criterion.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#include "config/config.h"
#include "jose/jws.h"
#include "jose/verifier.h"
#include "jose/review.h"
#include "jose/token_mint.h"
#include "jose/tokenreview.h"
#include "util/b64url.h"

#define ISS "https://issuer.example"
#define NOW 1700000000L

static struct keyset *ks;
static struct verifier *ver;
static EVP_PKEY *rsa;
static struct config cfg;
static struct review rv;
static struct review_result res;

static void setup(void)
{
    char path[PATH_MAX], err[512] = "";

    ks = fixture_keyset1("rsa2048.pub");
    cr_assert_not_null(ver = verifier_new(ks));
    snprintf(path, sizeof(path), "%s/rsa2048.pkcs8.key", FIXTURES);
    rsa = keyfile_read_private(path, err, sizeof(err));
    cr_assert_not_null(rsa, "%s", err);
}

static void teardown(void)
{
    review_result_clear(&res);
    review_clear(&rv);
    config_free(&cfg);
    verifier_free(ver);
    keyset_free(ks);
    EVP_PKEY_free(rsa);
    leak_check();
}

TestSuite(review, .init = setup, .fini = teardown);

/* cfg from `serve` with an issuer, a key and the given extra flags, and rv
 * set up from it with a cache of cache_size. */
static void configure(size_t cache_size, const char *const *extra, size_t nextra)
{
    serve_config(&cfg, ISS, "/k.pub", extra, nextra);
    cr_assert_eq(review_init(&rv, &cfg, NULL, cache_size), 0);
}

/* A bound token of service account ns/sa for the naud audiences aud,
 * issued by iss at NOW. */
static char *mint_as(const char *ns, const char *sa, const char *iss, char *const *aud, size_t naud)
{
    struct token_claims c = {.issuer = iss,
                             .audiences = aud,
                             .naudiences = naud,
                             .namespace_ = ns,
                             .service_account = sa,
                             .service_account_uid = "su",
                             .now = NOW,
                             .duration = 3600};
    char err[256] = "", *tok = token_mint(rsa, &c, err, sizeof(err));

    cr_assert_not_null(tok, "%s", err);
    return tok;
}

/* The same for service account ns/sa. */
static char *mint(const char *iss, char *const *aud, size_t naud)
{
    return mint_as("ns", "sa", iss, aud, naud);
}

/* A legacy (Secret-based) token: no aud, no exp. */
static char *mint_legacy(void)
{
    static const char payload[] =
        "{\"iss\":\"kubernetes/serviceaccount\",\"kubernetes.io/serviceaccount/namespace\":\"ns\","
        "\"kubernetes.io/serviceaccount/secret.name\":\"sa-token-abcde\","
        "\"kubernetes.io/serviceaccount/service-account.name\":\"sa\","
        "\"kubernetes.io/serviceaccount/service-account.uid\":\"su\",\"sub\":\"system:serviceaccount:ns:sa\"}";
    char hdr[64 + KEY_KID_MAX], h[128 + 2 * KEY_KID_MAX], p[512], si[2048 + 2 * KEY_KID_MAX], s[1024], *tok;
    size_t siglen;
    unsigned char *sig;

    snprintf(hdr, sizeof(hdr), "{\"alg\":\"RS256\",\"kid\":\"%s\"}", ks->keys[0].kid);
    b64url_encode((const unsigned char *)hdr, strlen(hdr), h);
    b64url_encode((const unsigned char *)payload, strlen(payload), p);
    snprintf(si, sizeof(si), "%s.%s", h, p);
    sig = jws_sign(jws_alg_find("RS256"), rsa, si, strlen(si), &siglen);
    cr_assert_not_null(sig);
    b64url_encode(sig, siglen, s);
    free(sig);
    cr_assert_geq(asprintf(&tok, "%s.%s", si, s), 0);
    return tok;
}

/* Reviews tok (freed) for the audiences and expects error e. */
static void expect(char *tok, char *const *aud, size_t naud, enum token_error e)
{
    review_result_clear(&res);
    int rc = review_token(&rv, ver, tok, strlen(tok), aud, naud, NOW, &res);
    cr_expect_eq(res.token.error, e, "want %s, got %s (%s)", token_error_name(e), token_error_name(res.token.error),
                 res.token.message);
    cr_expect_eq(rc, e == TOKEN_OK ? 0 : -1);
    cr_expect_eq(res.user != NULL, e == TOKEN_OK);
    free(tok);
}

/* A review that names audiences asks for those; one that names none asks
 * for the API audiences, which default to the issuers (kube-apiserver). */
Test(review, audiences_asked_for)
{
    char *vault[] = {"vault"}, *other[] = {"other"}, *iss[] = {ISS}, *both[] = {"other", "vault"};

    configure(0, NULL, 0);
    expect(mint(ISS, vault, 1), vault, 1, TOKEN_OK);
    expect(mint(ISS, vault, 1), other, 1, TOKEN_ERR_AUDIENCE);
    expect(mint(ISS, vault, 1), both, 2, TOKEN_OK);
    expect(mint(ISS, vault, 1), NULL, 0, TOKEN_ERR_AUDIENCE);
    expect(mint(ISS, iss, 1), NULL, 0, TOKEN_OK);
    cr_assert_eq(res.user->naudiences, 1);
    cr_expect_str_eq(res.user->audiences[0], ISS);
}

Test(review, api_audiences_replace_the_issuers)
{
    static const char *const flags[] = {"--api-audiences", "vault,api"};
    char *vault[] = {"vault"}, *iss[] = {ISS}, *other[] = {"other"};

    configure(0, flags, COUNT(flags));
    expect(mint(ISS, vault, 1), NULL, 0, TOKEN_OK);
    expect(mint(ISS, iss, 1), NULL, 0, TOKEN_ERR_AUDIENCE);
    expect(mint(ISS, other, 1), other, 1, TOKEN_OK); /* asked for: the API audiences do not matter */
}

Test(review, issuers_come_from_the_config)
{
    static const char *const flags[] = {"--service-account-issuer", "https://second.example"};
    char *vault[] = {"vault"};

    configure(0, flags, COUNT(flags));
    expect(mint("https://second.example", vault, 1), vault, 1, TOKEN_OK);
    expect(mint("https://third.example", vault, 1), vault, 1, TOKEN_ERR_ISSUER);
}

/* verify --discovery-url without --service-account-issuer: the issuer the
 * discovery document named is the one accepted, and the API audience. */
Test(review, discovered_issuer_when_the_config_names_none)
{
    char *argv[] = {"oidc-discovery", "verify", "--token-file", "-", "--discovery-url", "https://d.example"};
    char err[CONFIG_ERR_MAX], *discovered = "https://d.example", *vault[] = {"vault"}, *d[] = {"https://d.example"};
    enum config_command cmd;

    cr_assert_eq(config_parse(COUNT(argv), argv, &cmd, &cfg, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.issuers.count, 0);
    cr_assert_eq(review_init(&rv, &cfg, &discovered, 0), 0);
    expect(mint("https://d.example", d, 1), NULL, 0, TOKEN_OK);
    expect(mint("https://d.example", vault, 1), NULL, 0, TOKEN_ERR_AUDIENCE);
    expect(mint(ISS, d, 1), NULL, 0, TOKEN_ERR_ISSUER);
}

Test(review, token_flags_apply)
{
    static const char *const small[] = {"--max-token-size", "256"};
    char *iss[] = {ISS};

    configure(0, small, COUNT(small));
    expect(mint(ISS, iss, 1), NULL, 0, TOKEN_ERR_TOO_LARGE);
}

/* A legacy token carries no aud: it is refused unless
 * --accept-legacy-tokens, and then taken to carry the API audiences. */
Test(review, legacy_tokens_follow_the_flag)
{
    static const char *const legacy[] = {"--accept-legacy-tokens", "--api-audiences", "api"};
    char *api[] = {"api"}, *vault[] = {"vault"};

    configure(0, NULL, 0);
    expect(mint_legacy(), NULL, 0, TOKEN_ERR_LEGACY);
    review_clear(&rv);
    config_free(&cfg);
    configure(0, legacy, COUNT(legacy));
    expect(mint_legacy(), NULL, 0, TOKEN_OK);
    expect(mint_legacy(), api, 1, TOKEN_OK);
    expect(mint_legacy(), vault, 1, TOKEN_ERR_AUDIENCE);
}

/* The second review of a token for the same audiences is the cache's; for
 * other audiences or another key set it is verified again. */
Test(review, cache_answers_repeats)
{
    char *vault[] = {"vault"}, *both[] = {"vault", "x"}, *tok = mint(ISS, vault, 1);
    struct keyset *other_keys = fixture_keyset1("rsa2048.pub");
    struct verifier *other = verifier_new(other_keys);

    configure(8, NULL, 0);
    cr_assert_eq(review_token(&rv, ver, tok, strlen(tok), vault, 1, NOW, &res), 0, "%s", res.token.message);
    cr_expect_eq(res.cached, 0);
    review_result_clear(&res);
    cr_assert_eq(review_token(&rv, ver, tok, strlen(tok), vault, 1, NOW, &res), 0);
    cr_expect_eq(res.cached, 1);
    cr_expect_str_eq(res.user->username, "system:serviceaccount:ns:sa");
    review_result_clear(&res);
    cr_assert_eq(review_token(&rv, ver, tok, strlen(tok), both, 2, NOW, &res), 0);
    cr_expect_eq(res.cached, 0, "other audiences are another review");
    review_result_clear(&res);
    cr_assert_eq(review_token(&rv, other, tok, strlen(tok), vault, 1, NOW, &res), 0);
    cr_expect_eq(res.cached, 0, "a new key set empties the cache");
    review_result_clear(&res);
    /* a token the cache knows is still refused once expired */
    cr_assert_eq(review_token(&rv, other, tok, strlen(tok), vault, 1, NOW + 7200, &res), -1);
    cr_expect_eq(res.token.error, TOKEN_ERR_EXPIRED);
    verifier_free(other);
    keyset_free(other_keys);
    free(tok);
}

Test(review, no_cache_verifies_every_time)
{
    char *vault[] = {"vault"}, *tok = mint(ISS, vault, 1);

    configure(0, NULL, 0);
    cr_assert_null(rv.cache);
    for (int i = 0; i < 2; i++) {
        review_result_clear(&res);
        cr_assert_eq(review_token(&rv, ver, tok, strlen(tok), vault, 1, NOW, &res), 0);
        cr_expect_eq(res.cached, 0);
    }
    free(tok);
}

/* ---- TokenReview callers ---- */

#define CALLER_AUD "reviewers"

/* The flags a server's TokenReview API with allowed callers needs. */
#define CALLER_FLAGS                                                                                                   \
    "--enable-token-review", "--token-review-listen", "127.0.0.1:1", "--token-review-insecure-http",                   \
        "--token-review-allowed-callers", "system:serviceaccount:vault:vault-auth"

/* A bound token of service account ns/sa for aud, issued by ISS at NOW. */
static char *mint_sa(const char *ns, const char *sa, const char *aud)
{
    char *auds[] = {(char *)aud};

    return mint_as(ns, sa, ISS, auds, 1);
}

/* Reviews the caller token tok (freed) and expects who. */
static void expect_caller(char *tok, enum review_caller who)
{
    review_result_clear(&res);
    cr_expect_eq(review_caller_token(&rv, ver, tok, strlen(tok), NOW, &res), who, "%s", res.token.message);
    free(tok);
}

/* The Authorization header as kube-apiserver's bearer authenticator reads
 * it (strings.TrimSpace, then SplitN on " ": the scheme in any case, the
 * token the second part). */
Test(review, bearer_header)
{
    static const struct {
        const char *value, *token;
    } cases[] = {
        {"Bearer abc.def.ghi", "abc.def.ghi"},
        {"bearer abc", "abc"},
        {"BEARER abc", "abc"},
        {"  Bearer abc \t", "abc"},
        {"Bearer abc def", "abc"},
        {"Bearer", NULL},
        {"Bearer ", NULL},
        {"Bearer  abc", NULL},
        {"Bearer\tabc", NULL},
        {"Bearerabc", NULL},
        {"Basic abc", NULL},
        {"", NULL},
    };

    for (size_t i = 0; i < COUNT(cases); i++) {
        const char *token = NULL;
        size_t n = review_bearer(cases[i].value, strlen(cases[i].value), &token);
        if (cases[i].token == NULL) {
            cr_expect_eq(n, 0, "\"%s\" gave a token", cases[i].value);
            continue;
        }
        cr_expect_eq(n, strlen(cases[i].token), "\"%s\"", cases[i].value);
        cr_expect(n > 0 && memcmp(token, cases[i].token, n) == 0, "\"%s\"", cases[i].value);
    }
}

/* A caller's token is verified for the caller audiences (by default the
 * API audiences), then its username must be listed. */
Test(review, caller_tokens)
{
    static const char *const flags[] = {CALLER_FLAGS, "--api-audiences", "vault"};

    configure(0, flags, COUNT(flags));
    expect_caller(mint_sa("vault", "vault-auth", "vault"), REVIEW_CALLER_ALLOWED);
    cr_expect_str_eq(res.user->username, "system:serviceaccount:vault:vault-auth");
    expect_caller(mint_sa("vault", "other", "vault"), REVIEW_CALLER_FORBIDDEN);
    cr_expect_str_eq(res.user->username, "system:serviceaccount:vault:other");
    expect_caller(mint_sa("other", "vault-auth", "vault"), REVIEW_CALLER_FORBIDDEN);
    expect_caller(mint_sa("vault", "vault-auth", CALLER_AUD), REVIEW_CALLER_UNAUTHENTICATED);
    cr_expect_null(res.user);
    cr_expect_eq(res.token.error, TOKEN_ERR_AUDIENCE);
    expect_caller(strdup("not-a-token"), REVIEW_CALLER_UNAUTHENTICATED);
}

Test(review, caller_audiences_flag)
{
    static const char *const flags[] = {CALLER_FLAGS, "--api-audiences", "vault", "--token-review-caller-audiences",
                                        "x," CALLER_AUD};

    configure(0, flags, COUNT(flags));
    expect_caller(mint_sa("vault", "vault-auth", CALLER_AUD), REVIEW_CALLER_ALLOWED);
    expect_caller(mint_sa("vault", "vault-auth", "vault"), REVIEW_CALLER_UNAUTHENTICATED);
    cr_expect_eq(res.token.error, TOKEN_ERR_AUDIENCE);
}

/* The callers' tokens share the reviews' cache, under their own audiences:
 * the second check of one is a lookup, and a reviewed token cached for
 * "vault" does not authenticate a caller for the caller audience. */
Test(review, caller_tokens_go_through_the_cache)
{
    static const char *const flags[] = {CALLER_FLAGS, "--token-review-caller-audiences", CALLER_AUD};
    char *vault[] = {"vault"}, *tok = mint_sa("vault", "vault-auth", "vault");

    configure(8, flags, COUNT(flags));
    cr_assert_eq(review_token(&rv, ver, tok, strlen(tok), vault, 1, NOW, &res), 0);
    review_result_clear(&res);
    cr_expect_eq(review_caller_token(&rv, ver, tok, strlen(tok), NOW, &res), REVIEW_CALLER_UNAUTHENTICATED);
    free(tok);
    tok = mint_sa("vault", "vault-auth", CALLER_AUD);
    for (int i = 0; i < 2; i++) {
        review_result_clear(&res);
        cr_expect_eq(review_caller_token(&rv, ver, tok, strlen(tok), NOW, &res), REVIEW_CALLER_ALLOWED);
        cr_expect_eq(res.cached, i, "check %d", i);
    }
    cr_expect_eq(vcache_size(rv.cache), 2);
    free(tok);
}

/* tok (freed) with its header replaced by hdr and its signature by sig
 * (NULL: re-signed with rsa, as RS256): a forged or a genuine token. */
static char *reheaded(char *tok, const char *hdr, const unsigned char *sig, size_t siglen)
{
    char *payload = strchr(tok, '.') + 1, *si, *out;
    unsigned char mine[512];
    size_t plen = (size_t)(strchr(payload, '.') - payload), hlen;
    EVP_MD_CTX *md = EVP_MD_CTX_new();

    hlen = B64URL_ENCODED_LEN(strlen(hdr));
    cr_assert_not_null(si = malloc(hlen + 1 + plen + 1));
    b64url_encode((const unsigned char *)hdr, strlen(hdr), si);
    si[hlen] = '.';
    memcpy(si + hlen + 1, payload, plen);
    si[hlen + 1 + plen] = '\0';
    if (sig == NULL) {
        siglen = sizeof(mine);
        cr_assert_eq(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, rsa), 1);
        cr_assert_eq(EVP_DigestSign(md, mine, &siglen, (const unsigned char *)si, strlen(si)), 1);
        sig = mine;
    }
    cr_assert_not_null(out = malloc(strlen(si) + 1 + B64URL_ENCODED_LEN(siglen) + 1));
    sprintf(out, "%s.", si);
    b64url_encode(sig, siglen, out + strlen(out));
    EVP_MD_CTX_free(md);
    free(si);
    free(tok);
    return out;
}

/* n P-256 public keys, each with its kid, prepared for verification. */
static struct verifier *ec_keys(size_t n, struct keyset **set)
{
    char err[256];

    cr_assert_not_null(*set = keyset_new());
    for (size_t i = 0; i < n; i++) {
        EVP_PKEY *priv = EVP_EC_gen("P-256"), *pub = NULL;
        unsigned char *der = NULL;
        const unsigned char *q;
        const struct key *dup;
        int len = priv ? i2d_PUBKEY(priv, &der) : -1;

        q = der;
        cr_assert(len > 0 && (pub = d2i_PUBKEY(NULL, &q, len)) != NULL);
        OPENSSL_free(der);
        EVP_PKEY_free(priv);
        cr_assert_eq(keyset_add(*set, pub, "generated", NULL, &dup, err, sizeof(err)), 1, "%s", err);
    }
    return verifier_new(*set);
}

/* Nobody is authenticated yet when a caller's token is checked: a refused
 * caller must cost one signature check at most, whatever its token, as
 * the README promises. A token without kid would otherwise be tried
 * against every key of its alg (16 here); a reviewed token still is, as
 * kube-apiserver tries them (the caller is known by then). */
Test(review, refused_caller_costs_one_signature_check_at_most)
{
    static const char *const flags[] = {CALLER_FLAGS, "--token-review-caller-audiences", CALLER_AUD};
    unsigned char forged[64];
    struct keyset *many;
    struct verifier *v = ec_keys(TOKEN_KIDLESS_MAX_KEYS, &many);
    char *aud[] = {CALLER_AUD}, *tok, hdr[KEY_KID_MAX + 64];

    memset(forged, 1, sizeof(forged)); /* r = s = 0x0101...: in range, so each key costs a full check */
    cr_assert_not_null(v);
    configure(0, flags, COUNT(flags));
    tok = reheaded(mint_sa("vault", "vault-auth", CALLER_AUD), "{\"alg\":\"ES256\"}", forged, sizeof(forged));
    cr_expect_eq(review_caller_token(&rv, v, tok, strlen(tok), NOW, &res), REVIEW_CALLER_UNAUTHENTICATED);
    cr_expect_eq(res.token.error, TOKEN_ERR_UNKNOWN_KID, "%s", res.token.message);
    cr_expect_leq(res.token.signature_checks, 1, "a forged caller token without kid cost %u signature checks",
                  res.token.signature_checks);
    review_result_clear(&res);
    cr_expect_eq(review_token(&rv, v, tok, strlen(tok), aud, 1, NOW, &res), -1);
    cr_expect_eq(res.token.signature_checks, TOKEN_KIDLESS_MAX_KEYS,
                 "a reviewed token is tried as kube-apiserver does");
    free(tok);

    /* with a kid (of the last key), one check */
    review_result_clear(&res);
    snprintf(hdr, sizeof(hdr), "{\"alg\":\"ES256\",\"kid\":\"%s\"}", many->keys[many->count - 1].kid);
    tok = reheaded(mint_sa("vault", "vault-auth", CALLER_AUD), hdr, forged, sizeof(forged));
    cr_expect_eq(review_caller_token(&rv, v, tok, strlen(tok), NOW, &res), REVIEW_CALLER_UNAUTHENTICATED);
    cr_expect_eq(res.token.error, TOKEN_ERR_SIGNATURE, "%s", res.token.message);
    cr_expect_eq(res.token.signature_checks, 1);
    free(tok);
    verifier_free(v);
    keyset_free(many);
}

/* What kube-apiserver accepts from a caller still passes: a genuine token
 * without kid, when one key of its alg is published (one check). */
Test(review, caller_token_without_kid_verifies_against_the_only_key)
{
    static const char *const flags[] = {CALLER_FLAGS, "--token-review-caller-audiences", CALLER_AUD};
    char *tok;

    configure(0, flags, COUNT(flags));
    tok = reheaded(mint_sa("vault", "vault-auth", CALLER_AUD), "{\"alg\":\"RS256\"}", NULL, 0);
    cr_expect_eq(review_caller_token(&rv, ver, tok, strlen(tok), NOW, &res), REVIEW_CALLER_ALLOWED, "%s",
                 res.token.message);
    cr_expect_eq(res.token.signature_checks, 1);
    free(tok);
}

/* Certificate subjects (and usernames) compare exactly. */
Test(review, caller_names_compare_exactly)
{
    static const char *const flags[] = {"--enable-token-review",
                                        "--token-review-listen",
                                        "127.0.0.1:1",
                                        "--token-review-tls-cert-file",
                                        "/r.crt",
                                        "--token-review-tls-private-key-file",
                                        "/r.key",
                                        "--token-review-client-ca-file",
                                        "/ca.crt",
                                        "--token-review-allowed-callers",
                                        "system:serviceaccount:vault:vault-auth",
                                        "--token-review-allowed-callers",
                                        "CN=vault,O=example"};

    configure(0, flags, COUNT(flags));
    cr_expect_eq(review_caller_allowed(&rv, "CN=vault,O=example"), REVIEW_CALLER_ALLOWED);
    cr_expect_eq(review_caller_allowed(&rv, "system:serviceaccount:vault:vault-auth"), REVIEW_CALLER_ALLOWED);
    cr_expect_eq(review_caller_allowed(&rv, "cn=vault,o=example"), REVIEW_CALLER_FORBIDDEN);
    cr_expect_eq(review_caller_allowed(&rv, "CN=vault"), REVIEW_CALLER_FORBIDDEN);
    cr_expect_eq(review_caller_allowed(&rv, "CN=vault,O=example,C=DE"), REVIEW_CALLER_FORBIDDEN);
    cr_expect_eq(review_caller_allowed(&rv, ""), REVIEW_CALLER_FORBIDDEN);
}

/* kube-apiserver's 401 and 403 bodies, byte for byte
 * (docs/compatibility.md §5). */
Test(review, refusal_bodies)
{
    size_t len;
    char *body = tokenreview_render_unauthorized(&len);

    cr_assert_str_eq(body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                           "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}");
    cr_expect_eq(len, strlen(body));
    free(body);
    body = tokenreview_render_forbidden("system:serviceaccount:default:app", &len);
    cr_assert_str_eq(body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                           "\"message\":\"tokenreviews.authentication.k8s.io is forbidden: User "
                           "\\\"system:serviceaccount:default:app\\\" cannot create resource \\\"tokenreviews\\\" in "
                           "API group \\\"authentication.k8s.io\\\" at the cluster scope\",\"reason\":\"Forbidden\","
                           "\"details\":{\"group\":\"authentication.k8s.io\",\"kind\":\"tokenreviews\"},"
                           "\"code\":403}");
    cr_expect_eq(len, strlen(body));
    free(body);
    /* the name as Go's %q quotes it (a backslash of an RFC 4514 escape,
     * a quote), then JSON-escaped */
    body = tokenreview_render_forbidden("CN=a\\,b \"c\"", &len);
    cr_expect_not_null(strstr(body, "User \\\"CN=a\\\\\\\\,b \\\\\\\"c\\\\\\\"\\\" cannot"), "%s", body);
    free(body);
}
