/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for diag/: doctor's checks, each on made-up documents and
 * tokens (no network): the issuer comparison naming the difference, the
 * checks of the discovery document and its headers, of the JWKS and of a
 * token, the relying parties' documented rules, and the report in both
 * forms (the JSON read back with yajl, an independent parser).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "test_support.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "diag/doc_checks.h"
#include "diag/issuer.h"
#include "diag/jwks_checks.h"
#include "diag/report.h"
#include "diag/rp_rules.h"
#include "diag/token_checks.h"
#include "jose/token_mint.h"
#include "keys/keyset.h"

TestSuite(issuer, .fini = leak_check);
TestSuite(doc, .fini = leak_check);
TestSuite(jwks, .fini = leak_check);
TestSuite(rules, .fini = leak_check);
TestSuite(token, .fini = leak_check);
TestSuite(report, .fini = leak_check);

#define ISSUER "https://oidc.example.com"

/* The first check with id, or NULL. */
static const struct diag_check *check_of(const struct diag_report *r, const char *id)
{
    for (size_t i = 0; i < r->count; i++)
        if (strcmp(r->checks[i].id, id) == 0)
            return &r->checks[i];
    return NULL;
}

/* Asserts that check id is there with status, and that its message holds
 * part (when not NULL); a WARN or FAIL must say what to change. */
static void expect_check(const struct diag_report *r, const char *id, enum diag_status status, const char *part)
{
    const struct diag_check *c = check_of(r, id);

    cr_assert_not_null(c, "no check %s", id);
    cr_expect_eq(c->status, status, "%s is %s: %s", id, (const char *[]){"PASS", "WARN", "FAIL"}[c->status],
                 c->message);
    if (part != NULL)
        cr_expect(strstr(c->message, part) != NULL, "%s: \"%s\" lacks \"%s\"", id, c->message, part);
    cr_expect_eq(c->fix != NULL, status != DIAG_PASS, "%s: fix %s", id, c->fix ? c->fix : "(none)");
}

/* ---- issuer: the parts, and how two issuers differ ---- */

Test(issuer, split_names_every_part)
{
    struct issuer_url u;

    cr_assert_eq(issuer_url_split("https://u@[::1]:8443/a/b?q=1#f", &u), 0);
    cr_expect_eq(u.scheme.len, 5);
    cr_expect(u.has_userinfo && u.userinfo.len == 1);
    cr_expect_eq(u.host.len, 5, "the IPv6 host keeps its brackets");
    cr_expect(u.has_port && u.port.len == 4 && memcmp(u.port.s, "8443", 4) == 0);
    cr_expect(u.path.len == 4 && memcmp(u.path.s, "/a/b", 4) == 0);
    cr_expect(u.has_query && u.query.len == 3);
    cr_expect(u.has_fragment && u.fragment.len == 1);
    cr_assert_eq(issuer_url_split("https://a.example", &u), 0);
    cr_expect(!u.has_port && u.path.len == 0 && !u.has_query);
    cr_expect_eq(issuer_url_split("a.example/x", &u), -1, "no scheme");
    cr_expect_eq(issuer_url_split("https:///x", &u), -1, "no host");
}

static const struct difference_case {
    const char *want, *got, *named;
} difference_cases[] = {
    {ISSUER, ISSUER "/", "a trailing slash"},
    {ISSUER "/", ISSUER, "a trailing slash"},
    {ISSUER "/path", ISSUER "/path/", "a trailing slash"},
    {ISSUER, "https://OIDC.example.com", "case"},
    {ISSUER "/Tenant", ISSUER "/tenant", "case"},
    {ISSUER, ISSUER ":443", "port"},
    {"https://oidc.example.com:8443", "https://oidc.example.com:9443", "port"},
    {ISSUER, "http://oidc.example.com", "scheme"},
    {ISSUER, "HTTPS://oidc.example.com", "case"},
    {ISSUER, "https://other.example.com", "host"},
    {ISSUER "/a", ISSUER "/b", "path"},
    {ISSUER, ISSUER "?x=1", "query"},
    {ISSUER, "https://oidc.example.com:8443/", "port and a trailing slash"},
    {ISSUER, "http://OIDC.example.com:80/", "scheme, port, a trailing slash and case"},
    {ISSUER, "not a url", "the whole URL"},
};

ParameterizedTestParameters(issuer, difference_is_named)
{
    TABLE_PARAMETERS(difference_cases);
}

ParameterizedTest(size_t *i, issuer, difference_is_named)
{
    const struct difference_case *c = &difference_cases[*i];
    char out[128];

    cr_assert_eq(issuer_difference(c->want, c->got, out, sizeof(out)), 1);
    cr_expect_str_eq(out, c->named, "%s vs %s", c->want, c->got);
}

Test(issuer, the_same_string_has_no_difference)
{
    char out[64] = "x";

    cr_expect_eq(issuer_difference(ISSUER "/", ISSUER "/", out, sizeof(out)), 0);
    cr_expect_str_eq(out, "");
}

/* ---- doc: the issuer given, the headers, the discovery document ---- */

Test(doc, issuer_url)
{
    struct diag_report r = {0};

    cr_expect_eq(diag_doc_issuer_url(&r, ISSUER, 0), 1);
    expect_check(&r, "issuer.url", DIAG_PASS, "is an https URL");
    diag_report_clear(&r);
    cr_expect_eq(diag_doc_issuer_url(&r, ISSUER "/", 0), 1);
    expect_check(&r, "issuer.url", DIAG_PASS, "ending with \"/\"");
    diag_report_clear(&r);
    cr_expect_eq(diag_doc_issuer_url(&r, "http://127.0.0.1:8080", 0), 0, "strict: http is not fetched");
    expect_check(&r, "issuer.url", DIAG_FAIL, "is http");
    diag_report_clear(&r);
    cr_expect_eq(diag_doc_issuer_url(&r, "http://127.0.0.1:8080", 1), 1);
    expect_check(&r, "issuer.url", DIAG_WARN, "--allow-insecure-issuer");
    diag_report_clear(&r);
    cr_expect_eq(diag_doc_issuer_url(&r, ISSUER "?tenant=1", 0), 0);
    expect_check(&r, "issuer.url", DIAG_FAIL, "query");
    diag_report_clear(&r);
}

static const struct header_case {
    const char *value;
    int jwks;
    enum diag_status want;
} content_types[] =
    {
        {"application/json", 0, DIAG_PASS},         {"application/json; charset=utf-8", 0, DIAG_PASS},
        {"Application/JSON", 1, DIAG_PASS},         {"application/jwk-set+json", 1, DIAG_PASS},
        {"application/jwk-set+json", 0, DIAG_WARN}, {"text/plain", 1, DIAG_WARN},
        {"application/jsonx", 1, DIAG_WARN},        {NULL, 0, DIAG_WARN},
},
  cache_controls[] = {
      {"public, max-age=3600", 0, DIAG_PASS},
      {"max-age=0, must-revalidate", 0, DIAG_PASS},
      {"public, s-maxage=600", 0, DIAG_WARN},
      {"public, max-age=604800", 0, DIAG_WARN},
      {"no-store, max-age=60", 0, DIAG_WARN},
      {"public", 0, DIAG_WARN},
      {NULL, 0, DIAG_WARN},
};

ParameterizedTestParameters(doc, content_type)
{
    TABLE_PARAMETERS(content_types);
}

ParameterizedTest(size_t *i, doc, content_type)
{
    const struct header_case *c = &content_types[*i];
    struct diag_report r = {0};

    diag_doc_content_type(&r, "x.content_type", c->value, c->jwks);
    expect_check(&r, "x.content_type", c->want, NULL);
    diag_report_clear(&r);
}

ParameterizedTestParameters(doc, cache_control)
{
    TABLE_PARAMETERS(cache_controls);
}

ParameterizedTest(size_t *i, doc, cache_control)
{
    const struct header_case *c = &cache_controls[*i];
    struct diag_report r = {0};

    diag_doc_cache_control(&r, "x.cache_control", c->value);
    expect_check(&r, "x.cache_control", c->want, NULL);
    diag_report_clear(&r);
}

static struct json_value *parse(const char *json)
{
    char why[128];
    struct json_value *v = json_parse((const unsigned char *)json, strlen(json), why, sizeof(why));

    cr_assert_not_null(v, "%s: %s", json, why);
    return v;
}

#define DISCOVERY(iss, uri)                                                                                            \
    "{\"issuer\":\"" iss "\",\"jwks_uri\":\"" uri "\",\"response_types_supported\":[\"id_token\"],"                    \
    "\"subject_types_supported\":[\"public\"],\"id_token_signing_alg_values_supported\":[\"ES256\",\"RS256\"]}"

Test(doc, discovery_as_published)
{
    struct json_value *d = parse(DISCOVERY(ISSUER, ISSUER "/openid/v1/jwks"));
    struct diag_report r = {0};

    cr_expect_str_eq(diag_doc_discovery(&r, ISSUER, d, 0), ISSUER "/openid/v1/jwks");
    expect_check(&r, "discovery.issuer", DIAG_PASS, "byte for byte");
    expect_check(&r, "discovery.members", DIAG_PASS, NULL);
    expect_check(&r, "discovery.jwks_uri", DIAG_PASS, NULL);
    cr_expect_eq(diag_worst(&r), DIAG_PASS);
    diag_report_clear(&r);
    json_free(d);
}

Test(doc, discovery_issuer_mismatch_is_named)
{
    struct json_value *d = parse(DISCOVERY(ISSUER "/", ISSUER "/openid/v1/jwks"));
    struct diag_report r = {0};

    cr_expect_not_null(diag_doc_discovery(&r, ISSUER, d, 0), "the JWKS is still checked");
    expect_check(&r, "discovery.issuer", DIAG_FAIL, "by a trailing slash");
    diag_report_clear(&r);
    json_free(d);
}

Test(doc, discovery_members_and_jwks_uri)
{
    struct json_value *d = parse("{\"issuer\":\"" ISSUER "\",\"jwks_uri\":\"http://oidc.example.com/jwks\"}");
    struct json_value *none = parse("{\"issuer\":\"" ISSUER "\"}");
    struct diag_report r = {0};

    cr_expect_null(diag_doc_discovery(&r, ISSUER, d, 0), "an http JWKS is not fetched");
    expect_check(&r, "discovery.members", DIAG_WARN, "response_types_supported, subject_types_supported");
    expect_check(&r, "discovery.jwks_uri", DIAG_FAIL, "not an https URL");
    diag_report_clear(&r);
    cr_expect_not_null(diag_doc_discovery(&r, ISSUER, d, 1));
    expect_check(&r, "discovery.jwks_uri", DIAG_WARN, "--allow-insecure-issuer");
    diag_report_clear(&r);
    cr_expect_null(diag_doc_discovery(&r, ISSUER, none, 0));
    expect_check(&r, "discovery.jwks_uri", DIAG_FAIL, "no jwks_uri");
    diag_report_clear(&r);
    json_free(d);
    json_free(none);
}

Test(doc, algorithms_listed)
{
    struct json_value *d = parse(DISCOVERY(ISSUER, ISSUER "/jwks"));
    const char *listed[] = {"RS256", NULL, "ES256"}, *unlisted[] = {"RS256", "ES384"};
    struct diag_report r = {0};

    diag_doc_algorithms(&r, d, listed, COUNT(listed));
    expect_check(&r, "discovery.algorithms", DIAG_PASS, NULL);
    diag_report_clear(&r);
    diag_doc_algorithms(&r, d, unlisted, COUNT(unlisted));
    expect_check(&r, "discovery.algorithms", DIAG_WARN, "keys[1]'s \"ES384\"");
    diag_report_clear(&r);
    json_free(d);
}

/* ---- jwks: the keys as relying parties read them ---- */

/* A JWK of a fixture key as oidc-discovery publishes it (malloc'ed). */
static char *fixture_jwk(const char *name)
{
    struct keyset *ks = fixture_keyset1(name);
    char *jwk = strdup(ks->keys[0].jwk);

    keyset_free(ks);
    cr_assert_not_null(jwk);
    return jwk;
}

/* jwk with member name's value replaced by value (a JSON string), or the
 * member removed when value is NULL; in place, jwk has room. */
static void jwk_set(char *jwk, const char *name, const char *value)
{
    char key[32], rest[8192];
    char *at, *end;

    snprintf(key, sizeof(key), "\"%s\":\"", name);
    cr_assert_not_null(at = strstr(jwk, key), "%s in %s", name, jwk);
    end = strchr(at + strlen(key), '"') + 1;
    snprintf(rest, sizeof(rest), "%s", *end == ',' && value == NULL ? end + 1 : end);
    if (value == NULL && *end != ',' && at[-1] == ',')
        at--;
    if (value != NULL)
        at += sprintf(at, "\"%s\":\"%s\"", name, value);
    strcpy(at, rest);
}

/* Runs the JWKS checks on {"keys":[jwks...]} (n of them). */
static int check_jwks(struct diag_report *r, struct diag_jwks *j, char *const *jwks, size_t n)
{
    char doc[65536];
    size_t len = (size_t)snprintf(doc, sizeof(doc), "{\"keys\":[");

    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(doc + len, sizeof(doc) - len, "%s%s", i ? "," : "", jwks[i]);
    len += (size_t)snprintf(doc + len, sizeof(doc) - len, "]}");
    return diag_jwks_check(r, doc, len, j);
}

/* Three fixture JWKs with room for edits. */
struct three {
    char *k[3];
};

static struct three three_keys(void)
{
    struct three t;
    const char *names[] = {"rsa2048.pub", "ec256.pub", "ec384.pub"};

    for (size_t i = 0; i < 3; i++) {
        char *jwk = fixture_jwk(names[i]);
        cr_assert_not_null(t.k[i] = calloc(1, strlen(jwk) + 64));
        strcpy(t.k[i], jwk);
        free(jwk);
    }
    return t;
}

static void three_free(struct three *t)
{
    for (size_t i = 0; i < 3; i++)
        free(t->k[i]);
}

Test(jwks, as_published_all_pass)
{
    struct three t = three_keys();
    struct diag_report r = {0};
    struct diag_jwks j;

    cr_assert_eq(check_jwks(&r, &j, t.k, 3), 0);
    for (size_t i = 0; i < r.count; i++)
        cr_expect_eq(r.checks[i].status, DIAG_PASS, "%s: %s", r.checks[i].id, r.checks[i].message);
    expect_check(&r, "jwks.counts", DIAG_PASS, "3 keys: 1 RSA, 2 EC, 0 other");
    cr_expect_eq(j.count, 3);
    cr_expect_str_eq(j.keys[1].kty, "EC");
    cr_expect_str_eq(j.algs[2], "ES384");
    cr_expect_not_null(j.kids[0]);
    diag_jwks_clear(&j);
    diag_report_clear(&r);
    three_free(&t);
}

Test(jwks, missing_kid_fails)
{
    struct three t = three_keys();
    struct diag_report r = {0};
    struct diag_jwks j;

    jwk_set(t.k[1], "kid", NULL);
    cr_assert_eq(check_jwks(&r, &j, t.k, 3), 0);
    expect_check(&r, "jwks.kid", DIAG_FAIL, "1 key(s) without a kid string (keys[1])");
    cr_expect_null(j.kids[1]);
    diag_jwks_clear(&j);
    diag_report_clear(&r);
    three_free(&t);
}

Test(jwks, duplicate_kid_fails)
{
    struct three t = three_keys();
    struct diag_report r = {0};
    struct diag_jwks j;

    jwk_set(t.k[0], "kid", "same");
    jwk_set(t.k[2], "kid", "same");
    cr_assert_eq(check_jwks(&r, &j, t.k, 3), 0);
    expect_check(&r, "jwks.kid", DIAG_PASS, NULL);
    expect_check(&r, "jwks.kid_unique", DIAG_FAIL, "keys[0] and keys[2] share the kid \"same\"");
    diag_jwks_clear(&j);
    diag_report_clear(&r);
    three_free(&t);
}

static const struct alg_case {
    size_t key;
    const char *alg; /* NULL: removed */
    enum diag_status want;
    const char *part;
} alg_cases[] = {
    {0, "ES256", DIAG_FAIL, "keys[0] is RSA but its alg is \"ES256\""},
    {1, "ES384", DIAG_FAIL, "keys[1] is EC P-256 but its alg is \"ES384\""},
    {2, "RS256", DIAG_FAIL, "keys[2] is EC P-384"},
    {0, "HS256", DIAG_FAIL, "\"HS256\""},
    {0, "PS256", DIAG_PASS, NULL},
    {0, "RS512", DIAG_PASS, NULL},
    {1, NULL, DIAG_WARN, "1 key(s) without alg (keys[1])"},
};

ParameterizedTestParameters(jwks, alg_matches_type)
{
    TABLE_PARAMETERS(alg_cases);
}

ParameterizedTest(size_t *i, jwks, alg_matches_type)
{
    const struct alg_case *c = &alg_cases[*i];
    struct three t = three_keys();
    struct diag_report r = {0};
    struct diag_jwks j;

    jwk_set(t.k[c->key], "alg", c->alg);
    cr_assert_eq(check_jwks(&r, &j, t.k, 3), 0);
    expect_check(&r, "jwks.alg", c->want, c->part);
    cr_expect_str_eq(j.algs[1], c->key == 1 && c->alg ? c->alg : "ES256", "a missing alg is the curve's");
    diag_jwks_clear(&j);
    diag_report_clear(&r);
    three_free(&t);
}

Test(jwks, use_private_types_and_sizes)
{
    struct three t = three_keys();
    char *weak = fixture_jwk("rsa1024.pub"), odd[] = "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"ed\",\"use\":"
                                                     "\"sig\",\"alg\":\"EdDSA\",\"x\":\"AAAA\"}";
    char *keys[6] = {
        t.k[0],
        t.k[1],
        t.k[2],
        weak,
        odd,
        "{\"kty\":\"RSA\",\"kid\":\"tiny\",\"use\":\"sig\",\"alg\":\"RS256\",\"n\":\"AQAB\",\"e\":\"AQAB\","
        "\"d\":\"AQ\"}"};
    struct diag_report r = {0};
    struct diag_jwks j;

    jwk_set(t.k[1], "use", "enc");
    cr_assert_eq(check_jwks(&r, &j, keys, 6), 0);
    expect_check(&r, "jwks.use", DIAG_FAIL, "(keys[1])");
    expect_check(&r, "jwks.private", DIAG_FAIL, "keys[5] has the private member \"d\"");
    expect_check(&r, "jwks.key_types", DIAG_WARN, "(keys[4])");
    expect_check(&r, "jwks.sizes", DIAG_FAIL, "keys[5] is an RSA key of 17 bits");
    expect_check(&r, "jwks.counts", DIAG_PASS, "6 keys: 3 RSA, 2 EC, 1 other");
    cr_expect_str_eq(j.keys[5].foreign_member, "d");
    diag_jwks_clear(&j);
    diag_report_clear(&r);
    keys[5] = t.k[0];
    cr_assert_eq(check_jwks(&r, &j, keys + 3, 1), 0);
    expect_check(&r, "jwks.sizes", DIAG_WARN, "keys[0] is an RSA key of 1024 bits");
    diag_jwks_clear(&j);
    diag_report_clear(&r);
    free(weak);
    three_free(&t);
}

Test(jwks, not_a_jwks)
{
    const char *const docs[] = {"[]", "{\"keys\":{}}", "{\"keys\":[1]}", "{\"keys\":[]", "{}"};
    struct diag_report r = {0};
    struct diag_jwks j;

    for (size_t i = 0; i < COUNT(docs); i++) {
        cr_expect_eq(diag_jwks_check(&r, docs[i], strlen(docs[i]), &j), -1, "%s", docs[i]);
        expect_check(&r, "jwks.json", DIAG_FAIL, NULL);
        cr_expect_null(j.root);
        diag_report_clear(&r);
    }
    cr_expect_eq(diag_jwks_check(&r, "{\"keys\":[]}", 11, &j), 0);
    expect_check(&r, "jwks.counts", DIAG_FAIL, "no keys");
    diag_jwks_clear(&j);
    diag_report_clear(&r);
}

/* ---- rules: what each relying party documents ---- */

#define MAX_OUTCOMES 16

struct outcomes {
    struct rp_outcome o[MAX_OUTCOMES];
    size_t n;
};

static void collect(void *ctx, const struct rp_outcome *o)
{
    struct outcomes *out = ctx;

    cr_assert_lt(out->n, MAX_OUTCOMES);
    out->o[out->n++] = *o;
}

static const struct rp_outcome *outcome_of(const struct outcomes *out, const char *rule)
{
    for (size_t i = 0; i < out->n; i++)
        if (strcmp(out->o[i].rule, rule) == 0)
            return &out->o[i];
    return NULL;
}

/* Applies target's rules to facts; asserts rule's verdict (and part of
 * its text) and that it cites an https source. */
static void expect_rule(enum rp_target target, const struct rp_facts *facts, const char *rule, enum rp_verdict want,
                        const char *part)
{
    struct outcomes out = {0};
    const struct rp_outcome *o;

    rp_check(target, facts, collect, &out);
    cr_assert_not_null(o = outcome_of(&out, rule), "no outcome of %s", rule);
    cr_expect_eq(o->verdict, want, "%s: %s", rule, o->what);
    cr_expect(part == NULL || strstr(o->what, part), "%s: \"%s\" lacks \"%s\"", rule, o->what, part);
    cr_expect_eq(strncmp(o->source, "https://", 8), 0, "%s cites %s", rule, o->source);
    cr_expect_eq(o->fix[0] != '\0', want != RP_MET, "%s: fix \"%s\"", rule, o->fix);
}

Test(rules, aws_issuer_url)
{
    struct rp_facts f = {.issuer = ISSUER, .publicly_trusted = -1};

    expect_rule(RP_AWS, &f, "aws.issuer_url", RP_MET, NULL);
    f.issuer = ISSUER "/tenant/";
    expect_rule(RP_AWS, &f, "aws.issuer_url", RP_MET, NULL);
    f.issuer = "https://oidc.example.com:8443";
    expect_rule(RP_AWS, &f, "aws.issuer_url", RP_REFUSED, "has a port (:8443)");
    f.issuer = "https://oidc.example.com:443";
    expect_rule(RP_AWS, &f, "aws.issuer_url", RP_REFUSED, "has a port (:443)");
    f.issuer = ISSUER "?x=1";
    expect_rule(RP_AWS, &f, "aws.issuer_url", RP_REFUSED, "query");
    f.issuer = "http://oidc.example.com";
    expect_rule(RP_AWS, &f, "aws.issuer_url", RP_REFUSED, "is not https");
}

/* n RSA and m EC keys. */
static void keys_of(struct rp_key *keys, size_t rsa, size_t ec)
{
    for (size_t i = 0; i < rsa + ec; i++)
        keys[i] = (struct rp_key){i < rsa ? "RSA" : "EC", i < rsa ? "RS256" : "ES256", NULL};
}

Test(rules, aws_keys_per_type)
{
    static struct rp_key keys[202];
    struct rp_facts f = {.have_keys = 1, .keys = keys, .publicly_trusted = -1};

    keys_of(keys, 100, 100);
    f.nkeys = 200;
    expect_rule(RP_AWS, &f, "aws.key_count", RP_MET, "100 RSA and 100 EC keys");
    keys_of(keys, 101, 1);
    f.nkeys = 102;
    expect_rule(RP_AWS, &f, "aws.key_count", RP_REFUSED, "101 RSA and 1 EC keys published");
    keys_of(keys, 0, 101);
    f.nkeys = 101;
    expect_rule(RP_AWS, &f, "aws.key_count", RP_REFUSED, "0 RSA and 101 EC");
}

Test(rules, aws_algorithms)
{
    struct rp_key keys[3] = {{"RSA", "RS384", NULL}, {"EC", NULL, NULL}, {"RSA", "PS256", NULL}};
    struct rp_facts f = {.have_keys = 1, .keys = keys, .nkeys = 2, .publicly_trusted = -1};

    expect_rule(RP_AWS, &f, "aws.algorithms", RP_MET, NULL);
    f.nkeys = 3;
    expect_rule(RP_AWS, &f, "aws.algorithms", RP_REFUSED, "keys[2] is RSA PS256");
    keys[2] = (struct rp_key){"OKP", NULL, NULL};
    expect_rule(RP_AWS, &f, "aws.algorithms", RP_REFUSED, "keys[2] is OKP (no alg)");
    f = (struct rp_facts){.token_alg = "EdDSA", .publicly_trusted = -1};
    expect_rule(RP_AWS, &f, "aws.algorithms", RP_REFUSED, "the token is signed with EdDSA");
}

Test(rules, aws_token_and_thumbprint)
{
    struct rp_facts f = {.token_len = 20000, .publicly_trusted = 1};

    expect_rule(RP_AWS, &f, "aws.token_size", RP_MET, NULL);
    expect_rule(RP_AWS, &f, "aws.thumbprint", RP_MET, NULL);
    f.token_len = 20001;
    f.publicly_trusted = 0;
    expect_rule(RP_AWS, &f, "aws.token_size", RP_REFUSED, "20001 characters");
    expect_rule(RP_AWS, &f, "aws.thumbprint", RP_UNTESTED, "not publicly trusted");
}

Test(rules, unknown_facts_are_skipped)
{
    struct rp_facts f = {.publicly_trusted = -1};
    struct outcomes out = {0};

    for (int t = 0; t < RP_TARGET_COUNT; t++)
        rp_check((enum rp_target)t, &f, collect, &out);
    cr_expect_eq(out.n, 0);
}

Test(rules, gcp)
{
    struct rp_key keys[2] = {{"RSA", "RS256", NULL}, {"RSA", "RS256", "x5c"}};
    struct rp_facts f = {.issuer = ISSUER, .have_keys = 1, .keys = keys, .nkeys = 1, .publicly_trusted = 1};

    expect_rule(RP_GCP, &f, "gcp.issuer_https", RP_MET, NULL);
    expect_rule(RP_GCP, &f, "gcp.public_trust", RP_MET, NULL);
    expect_rule(RP_GCP, &f, "gcp.jwk_members", RP_MET, NULL);
    f.nkeys = 2;
    f.publicly_trusted = 0;
    f.issuer = "http://oidc.example.com";
    expect_rule(RP_GCP, &f, "gcp.issuer_https", RP_REFUSED, NULL);
    expect_rule(RP_GCP, &f, "gcp.public_trust", RP_REFUSED, NULL);
    expect_rule(RP_GCP, &f, "gcp.jwk_members", RP_REFUSED, "keys[1] has the member \"x5c\"");
    cr_expect(rp_gcp_member_ok("crv") && !rp_gcp_member_ok("x5t"));
}

/* GCP's STS takes RS256 and ES256 tokens only: an ES384 or ES512 key, or a
 * token signed so, is refused. */
Test(rules, gcp_algorithms)
{
    struct rp_key keys[3] = {{"RSA", "RS256", NULL}, {"EC", "ES256", NULL}, {"EC", "ES384", NULL}};
    struct rp_facts f = {.issuer = ISSUER, .have_keys = 1, .keys = keys, .nkeys = 2, .publicly_trusted = 1};

    expect_rule(RP_GCP, &f, "gcp.algorithms", RP_MET, NULL);
    f.nkeys = 3;
    expect_rule(RP_GCP, &f, "gcp.algorithms", RP_REFUSED, "keys[2] is EC ES384");
    f.nkeys = 2;
    f.token_alg = "ES512";
    expect_rule(RP_GCP, &f, "gcp.algorithms", RP_REFUSED, "the token is signed with ES512");
}

Test(rules, azure)
{
    struct rp_key keys[2] = {{"RSA", NULL, NULL}, {"EC", "ES256", NULL}};
    struct rp_facts f = {
        .issuer = ISSUER, .token_iss = ISSUER, .have_keys = 1, .keys = keys, .nkeys = 1, .publicly_trusted = -1};

    expect_rule(RP_AZURE, &f, "azure.algorithm", RP_MET, NULL);
    expect_rule(RP_AZURE, &f, "azure.issuer", RP_MET, NULL);
    f.nkeys = 2;
    f.token_iss = ISSUER "/";
    expect_rule(RP_AZURE, &f, "azure.algorithm", RP_UNTESTED, "keys[1] is EC ES256");
    expect_rule(RP_AZURE, &f, "azure.issuer", RP_REFUSED, "by a trailing slash");
}

Test(rules, vault)
{
    struct rp_facts f = {.issuer = ISSUER, .discovered_issuer = ISSUER, .publicly_trusted = -1};

    expect_rule(RP_VAULT, &f, "vault.discovery_url", RP_MET, "oidc_discovery_url");
    f.discovered_issuer = "https://oidc.example.com:443";
    expect_rule(RP_VAULT, &f, "vault.discovery_url", RP_REFUSED, "by port");
}

Test(rules, target_names)
{
    enum rp_target t;

    for (int i = 0; i < RP_TARGET_COUNT; i++) {
        cr_expect_eq(rp_target_parse(rp_target_name((enum rp_target)i), &t), 0);
        cr_expect_eq(t, (enum rp_target)i);
    }
    cr_expect_eq(rp_target_parse("AWS", &t), -1);
}

/* ---- token: one token against the published JWKS ---- */

#define T0 1800000000L

struct token_fixture {
    char *token;
    char *jwk;
};

/* A token signed by the RSA 2048 fixture key for aud, and the JWK of the
 * fixture jwk_key. */
static struct token_fixture token_for(const char *jwk_key, const char *aud)
{
    char err[256];
    char *auds[1] = {(char *)aud};
    EVP_PKEY *priv = keyfile_read_private(FIXTURES "/rsa2048.pkcs8.key", err, sizeof(err));
    struct token_claims c = {.issuer = ISSUER,
                             .audiences = auds,
                             .naudiences = 1,
                             .namespace_ = "ns",
                             .service_account = "app",
                             .service_account_uid = "uid",
                             .now = T0,
                             .duration = 3600};
    struct token_fixture f;

    cr_assert_not_null(priv, "%s", err);
    cr_assert_not_null(f.token = token_mint(priv, &c, err, sizeof(err)), "%s", err);
    EVP_PKEY_free(priv);
    f.jwk = fixture_jwk(jwk_key);
    return f;
}

/* Runs the token checks of f with the given issuer, audience and time. */
static void check_token(struct diag_report *r, const struct token_fixture *f, const char *issuer, const char *aud,
                        time_t now)
{
    char doc[8192];
    char *auds[1] = {(char *)aud};
    struct diag_report jr = {0};
    struct diag_jwks j;
    struct diag_token t;
    size_t len = (size_t)snprintf(doc, sizeof(doc), "{\"keys\":[%s]}", f->jwk);
    struct diag_token_input in = {.issuer = issuer,
                                  .audiences = auds,
                                  .naudiences = aud ? 1 : 0,
                                  .jwks = &j,
                                  .jwks_body = doc,
                                  .jwks_len = len,
                                  .now = now,
                                  .leeway = 60};

    cr_assert_eq(diag_jwks_check(&jr, doc, len, &j), 0);
    cr_assert_eq(diag_token_check(r, f->token, strlen(f->token), &in, &t), 0);
    cr_expect_str_eq(t.iss, ISSUER);
    cr_expect_str_eq(t.alg, "RS256");
    diag_token_clear(&t);
    diag_jwks_clear(&j);
    diag_report_clear(&jr);
}

static void token_fixture_free(struct token_fixture *f)
{
    free(f->token);
    free(f->jwk);
}

Test(token, valid_token_passes_every_check)
{
    struct token_fixture f = token_for("rsa2048.pub", "sts.amazonaws.com");
    struct diag_report r = {0};

    check_token(&r, &f, ISSUER, "sts.amazonaws.com", T0 + 10);
    for (size_t i = 0; i < r.count; i++)
        cr_expect_eq(r.checks[i].status, DIAG_PASS, "%s: %s", r.checks[i].id, r.checks[i].message);
    expect_check(&r, "token.signature", DIAG_PASS, "RS256");
    expect_check(&r, "token.sub", DIAG_PASS, "system:serviceaccount:ns:app");
    expect_check(&r, "token.lifetime", DIAG_PASS, "valid for another 3590 s (lifetime 3600 s)");
    diag_report_clear(&r);
    token_fixture_free(&f);
}

Test(token, wrong_audience_expired_and_issuer)
{
    struct token_fixture f = token_for("rsa2048.pub", "vault");
    struct diag_report r = {0};

    check_token(&r, &f, ISSUER "/", "sts.amazonaws.com", T0 + 3600 + 61);
    expect_check(&r, "token.aud", DIAG_FAIL, "\"sts.amazonaws.com\"");
    expect_check(&r, "token.lifetime", DIAG_FAIL, "expired 61 s ago");
    expect_check(&r, "token.iss", DIAG_FAIL, "by a trailing slash");
    expect_check(&r, "token.signature", DIAG_PASS, NULL);
    diag_report_clear(&r);
    check_token(&r, &f, ISSUER, NULL, T0 + 3600 + 59);
    expect_check(&r, "token.lifetime", DIAG_WARN, "expired 59 s ago, inside the 60 s leeway");
    expect_check(&r, "token.aud", DIAG_PASS, "give --audience");
    diag_report_clear(&r);
    check_token(&r, &f, ISSUER, NULL, T0 - 120);
    expect_check(&r, "token.lifetime", DIAG_FAIL, "not valid for another 120 s");
    diag_report_clear(&r);
    token_fixture_free(&f);
}

Test(token, unpublished_key)
{
    struct token_fixture f = token_for("ec256.pub", "vault");
    struct diag_report r = {0};

    check_token(&r, &f, ISSUER, "vault", T0);
    expect_check(&r, "token.kid", DIAG_PASS, NULL);
    expect_check(&r, "token.key", DIAG_FAIL, "unpublished key");
    cr_expect_null(check_of(&r, "token.signature"), "no key to verify with: token.key says so");
    diag_report_clear(&r);
    token_fixture_free(&f);
}

Test(token, another_key_under_the_same_kid)
{
    struct token_fixture f = token_for("rsa4096.pub", "vault");
    struct keyset *ks = fixture_keyset1("rsa2048.pub");
    struct diag_report r = {0};
    char *jwk = calloc(1, strlen(f.jwk) + 64);

    strcpy(jwk, f.jwk);
    jwk_set(jwk, "kid", ks->keys[0].kid);
    free(f.jwk);
    f.jwk = jwk;
    check_token(&r, &f, ISSUER, "vault", T0);
    expect_check(&r, "token.key", DIAG_PASS, NULL);
    expect_check(&r, "token.signature", DIAG_FAIL, "does not verify");
    diag_report_clear(&r);
    keyset_free(ks);
    token_fixture_free(&f);
}

Test(token, not_a_token)
{
    const char *const bad[] = {"abc", "a.b", "a.b.c.d", "e30.e30", "!!.e30.e30", "eyJ4Ijp9.e30.e30"};
    struct diag_token_input in = {.issuer = ISSUER, .now = T0};
    struct diag_report r = {0};
    struct diag_token t;

    for (size_t i = 0; i < COUNT(bad); i++) {
        cr_expect_eq(diag_token_check(&r, bad[i], strlen(bad[i]), &in, &t), -1, "%s", bad[i]);
        expect_check(&r, "token.format", DIAG_FAIL, "not a compact JWS");
        cr_expect_null(t.header);
        diag_report_clear(&r);
    }
}

/* ---- report: text and JSON ---- */

static void sample_report(struct diag_report *r)
{
    struct diag_check *c;

    diag_add(r, DIAG_PASS, "a.pass", "fine");
    c = diag_add(r, DIAG_WARN, "b.warn", "odd \x1b[31mred\n%s", "x");
    diag_fix(r, c, "do %d things", 2);
    c = diag_add(r, DIAG_FAIL, "c.fail", "broken \"quoted\"");
    diag_fix(r, c, "mend it");
    c->source = "https://docs.example/rule";
}

Test(report, text_one_line_per_check)
{
    struct diag_report r = {0};
    char *text;

    sample_report(&r);
    cr_expect_eq(diag_worst(&r), DIAG_FAIL);
    cr_assert_not_null(text = diag_render_text(&r));
    cr_expect_str_eq(text, "PASS a.pass: fine\n"
                           "WARN b.warn: odd ?[31mred?x; fix: do 2 things\n"
                           "FAIL c.fail: broken \"quoted\"; fix: mend it (https://docs.example/rule)\n"
                           "1 PASS, 1 WARN, 1 FAIL\n");
    free(text);
    diag_report_clear(&r);
}

/* A member of a yajl object, of the given type. */
static yajl_val member(yajl_val obj, const char *name, yajl_type type)
{
    const char *path[] = {name, NULL};
    yajl_val v = yajl_tree_get(obj, path, type);

    cr_assert_not_null(v, "no %s", name);
    return v;
}

Test(report, json_shape)
{
    struct diag_report r = {0};
    char err[128], *json;
    yajl_val root, checks, c;

    sample_report(&r);
    cr_assert_not_null(json = diag_render_json(&r, ISSUER, (const char *const[]){"aws"}, 1));
    cr_expect_eq(json[strlen(json) - 1], '\n');
    cr_assert_not_null(root = yajl_tree_parse(json, err, sizeof(err)), "%s: %s", json, err);
    cr_expect_str_eq(YAJL_GET_STRING(member(root, "issuer", yajl_t_string)), ISSUER);
    cr_expect_str_eq(YAJL_GET_STRING(member(root, "target", yajl_t_string)), "aws");
    cr_expect_str_eq(YAJL_GET_STRING(member(root, "result", yajl_t_string)), "fail");
    cr_expect_eq(YAJL_GET_INTEGER(member(member(root, "summary", yajl_t_object), "warn", yajl_t_number)), 1);
    checks = member(root, "checks", yajl_t_array);
    cr_assert_eq(YAJL_GET_ARRAY(checks)->len, 3);
    c = YAJL_GET_ARRAY(checks)->values[1];
    cr_expect_str_eq(YAJL_GET_STRING(member(c, "id", yajl_t_string)), "b.warn");
    cr_expect_str_eq(YAJL_GET_STRING(member(c, "status", yajl_t_string)), "warn");
    cr_expect_str_eq(YAJL_GET_STRING(member(c, "message", yajl_t_string)), "odd \x1b[31mred\nx");
    cr_expect_str_eq(YAJL_GET_STRING(member(c, "fix", yajl_t_string)), "do 2 things");
    member(c, "source", yajl_t_null);
    member(YAJL_GET_ARRAY(checks)->values[0], "fix", yajl_t_null);
    cr_expect_str_eq(YAJL_GET_STRING(member(YAJL_GET_ARRAY(checks)->values[2], "source", yajl_t_string)),
                     "https://docs.example/rule");
    yajl_tree_free(root);
    free(json);
    diag_report_clear(&r);
}

Test(report, json_without_target)
{
    struct diag_report r = {0};
    char err[128], *json;
    yajl_val root;

    diag_add(&r, DIAG_PASS, "a", "ok");
    cr_assert_not_null(json = diag_render_json(&r, ISSUER, NULL, 0));
    cr_assert_not_null(root = yajl_tree_parse(json, err, sizeof(err)));
    member(root, "target", yajl_t_null);
    cr_expect_str_eq(YAJL_GET_STRING(member(root, "result", yajl_t_string)), "pass");
    yajl_tree_free(root);
    free(json);
    diag_report_clear(&r);
}
