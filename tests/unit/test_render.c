/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keys/render and keys/snapshot: the published bytes, as
 * kube-apiserver (Go encoding/json, compact) writes them.
 */
#include <criterion/criterion.h>

#include "test_support.h"
#include <criterion/parameterized.h>

#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "keys/keyset.h"
#include "publish/render.h"
#include "publish/snapshot.h"

TestSuite(render, .fini = leak_check);
TestSuite(snapshot, .fini = leak_check);

#define ISSUER    "https://issuer.example.com"
#define JWKS_URI  ISSUER "/openid/v1/jwks"
#define JWKS_TYPE "application/jwk-set+json"

/* Discovery document up to the algorithm list, and its end. */
#define DISCOVERY_HEAD(iss, uri)                                                                                       \
    "{\"issuer\":\"" iss "\",\"jwks_uri\":\"" uri "\",\"response_types_supported\":[\"id_token\"],"                    \
    "\"subject_types_supported\":[\"public\"],\"id_token_signing_alg_values_supported\":["
#define DISCOVERY_TAIL "]}"

/* Checks a document without stopping the test, so that it is still freed. */
static void assert_doc(const struct render_doc *d, const char *want)
{
    cr_assert_not_null(d->bytes);
    cr_expect_eq(d->len, strlen(d->bytes), "len %zu but NUL at %zu", d->len, strlen(d->bytes));
    cr_expect_str_eq(d->bytes, want);
}

static void assert_discovery(const char *issuer, const char *uri, const struct keyset *ks, const char *want)
{
    struct render_doc d = {0};
    cr_assert_eq(render_discovery(issuer, uri, ks, &d), 0);
    assert_doc(&d, want);
    free(d.bytes);
}

/* ------------------------------------------------------------------------ */
/* render_jwks                                                                */

Test(render, jwks_multi_exact)
{
    struct keyset *ks = fixture_keyset1("multi.pem");
    cr_assert_eq(ks->count, 3);
    char want[8192];
    snprintf(want, sizeof want, "{\"keys\":[%s,%s,%s]}", ks->keys[0].jwk, ks->keys[1].jwk, ks->keys[2].jwk);

    struct render_doc d = {0};
    cr_assert_eq(render_jwks(ks, &d), 0);
    assert_doc(&d, want);

    char errbuf[256];
    yajl_val v = yajl_tree_parse(d.bytes, errbuf, sizeof errbuf);
    cr_assert_not_null(v, "JWKS is not JSON: %s", errbuf);
    const char *path[] = {"keys", NULL};
    yajl_val keys = yajl_tree_get(v, path, yajl_t_array);
    cr_assert_not_null(keys);
    cr_assert_eq(keys->u.array.len, 3);
    yajl_tree_free(v);
    free(d.bytes);
    keyset_free(ks);
}

Test(render, jwks_single_exact)
{
    struct keyset *ks = fixture_keyset1("ec521.padded.sec1.key");
    char want[4096];
    snprintf(want, sizeof want, "{\"keys\":[%s]}", ks->keys[0].jwk);
    struct render_doc d = {0};
    cr_assert_eq(render_jwks(ks, &d), 0);
    assert_doc(&d, want);
    free(d.bytes);
    keyset_free(ks);
}

/* ------------------------------------------------------------------------ */
/* render_discovery                                                           */

Test(render, discovery_multi_exact)
{
    struct keyset *ks = fixture_keyset1("multi.pem");
    assert_discovery(ISSUER, JWKS_URI, ks,
                     "{\"issuer\":\"https://issuer.example.com\",\"jwks_uri\":\"https://issuer.example.com/openid/v1/"
                     "jwks\",\"response_types_supported\":[\"id_token\"],\"subject_types_supported\":[\"public\"],"
                     "\"id_token_signing_alg_values_supported\":[\"ES256\",\"ES384\",\"RS256\"]}");
    keyset_free(ks);
}

/* Distinct algorithms, sorted ascending, whatever the key order. */
/* Criterion hands parameters to tests in another process: no pointers. */
struct algs_case {
    char files[FIXTURE_MAX_FILES][32];
    char algs[64];
};

static struct algs_case algs_cases[] = {
    {{"rsa2048.pub"}, "\"RS256\""},
    {{"rsa2048.pub", "rsa4096.pub", "rsa1024.pub"}, "\"RS256\""},
    {{"ec384.pub", "ec256.pub"}, "\"ES256\",\"ES384\""},
    {{"ec521.padded.pub", "rsa2048.pub", "ec384.pub", "ec256.pub"}, "\"ES256\",\"ES384\",\"ES512\",\"RS256\""},
    {{"rsa4096.pub", "ec521.padded.pub"}, "\"ES512\",\"RS256\""},
};

ParameterizedTestParameters(render, discovery_algs)
{
    return cr_make_param_array(struct algs_case, algs_cases, COUNT(algs_cases));
}

ParameterizedTest(struct algs_case *c, render, discovery_algs)
{
    const char *files[FIXTURE_MAX_FILES];
    size_t n = 0;
    while (n < FIXTURE_MAX_FILES && c->files[n][0]) {
        files[n] = c->files[n];
        n++;
    }
    struct keyset *ks = fixture_keyset(files, n);
    char want[1024];
    snprintf(want, sizeof want, "%s%s%s", DISCOVERY_HEAD(ISSUER, JWKS_URI), c->algs, DISCOVERY_TAIL);
    assert_discovery(ISSUER, JWKS_URI, ks, want);
    keyset_free(ks);
}

/* Strings are escaped as Go's encoding/json does (HTML-safe). */
struct escape_case {
    char raw[96];
    char json[128];
};

static struct escape_case escapes[] = {
    {"https://issuer.example.com/a&b", "https://issuer.example.com/a\\u0026b"},
    {"https://issuer.example.com/<x>", "https://issuer.example.com/\\u003cx\\u003e"},
    {"https://issuer.example.com/q\"b\\s", "https://issuer.example.com/q\\\"b\\\\s"},
    {"https://issuer.example.com/t\tn\nr\rc\x01", "https://issuer.example.com/t\\tn\\nr\\rc\\u0001"},
    {"https://issuer.example.com/\xe2\x80\xa8\xe2\x80\xa9", "https://issuer.example.com/\\u2028\\u2029"},
    {"https://issuer.example.com/bad\xff\xc3(utf8", "https://issuer.example.com/bad\\ufffd\\ufffd(utf8"},
    {"https://issuer.example.com/caf\xc3\xa9/~_-.:@!$'()*+,;=%20",
     "https://issuer.example.com/caf\xc3\xa9/~_-.:@!$'()*+,;=%20"},
};

ParameterizedTestParameters(render, discovery_escaping)
{
    return cr_make_param_array(struct escape_case, escapes, COUNT(escapes));
}

ParameterizedTest(struct escape_case *c, render, discovery_escaping)
{
    struct keyset *ks = fixture_keyset1("rsa2048.pub");
    char want[1024];
    snprintf(want, sizeof want,
             "{\"issuer\":\"%s\",\"jwks_uri\":\"%s\",\"response_types_supported\":[\"id_token\"],"
             "\"subject_types_supported\":[\"public\"],\"id_token_signing_alg_values_supported\":[\"RS256\"]}",
             c->json, c->json);
    assert_discovery(c->raw, c->raw, ks, want);
    keyset_free(ks);
}

/* ------------------------------------------------------------------------ */
/* snapshot                                                                   */

static const struct snapshot_params default_params = {
    .issuer = ISSUER,
    .jwks_uri = JWKS_URI,
    .jwks_content_type = JWKS_TYPE,
    .max_age = 600,
};

static struct snapshot *build(const struct snapshot_params *p, const char *file, time_t loaded_at)
{
    struct snapshot *s = snapshot_build(p, fixture_keyset1(file), loaded_at);
    cr_assert_not_null(s, "snapshot_build(%s)", file);
    return s;
}

static void assert_hdr(const char *value, size_t len, const char *want, const char *what)
{
    cr_assert_not_null(value, "%s missing", what);
    cr_assert_eq(len, strlen(want), "%s: len %zu for \"%s\"", what, len, value);
    cr_assert_eq(strncmp(value, want, len), 0, "%s: \"%.*s\", want \"%s\"", what, (int)len, value, want);
}

/* A strong ETag of the body: the first 18 bytes of its SHA-256 in
 * base64url (24 characters, no padding), quoted. */
static void assert_etag(const struct snapshot_doc *d)
{
    unsigned char md[EVP_MAX_MD_SIZE], b64[32];
    char want[40];
    cr_assert(EVP_Digest(d->body.bytes, d->body.len, md, NULL, EVP_sha256(), NULL));
    cr_assert_eq(EVP_EncodeBlock(b64, md, 18), 24);
    for (unsigned char *p = b64; *p; p++)
        *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    snprintf(want, sizeof want, "\"%s\"", (const char *)b64);
    assert_hdr(d->etag, d->etag_len, want, "ETag");
    cr_assert_eq(strlen(d->etag), d->etag_len, "etag not NUL-terminated at etag_len");
}

Test(snapshot, documents_and_headers)
{
    struct keyset *ks = fixture_keyset1("multi.pem");
    struct render_doc disc = {0}, jwks = {0};
    cr_assert_eq(render_discovery(ISSUER, JWKS_URI, ks, &disc), 0);
    cr_assert_eq(render_jwks(ks, &jwks), 0);

    struct snapshot *s = snapshot_build(&default_params, ks, 0);
    cr_assert_not_null(s);
    cr_assert_eq(s->keyset, ks);
    assert_doc(&s->discovery.body, disc.bytes);
    assert_doc(&s->jwks.body, jwks.bytes);
    assert_hdr(s->cache_control, s->cache_control_len, "public, max-age=600", "Cache-Control");
    assert_hdr(s->discovery.content_type, s->discovery.content_type_len, "application/json", "discovery type");
    assert_hdr(s->jwks.content_type, s->jwks.content_type_len, JWKS_TYPE, "jwks type");
    assert_etag(&s->discovery);
    assert_etag(&s->jwks);
    cr_assert_str_neq(s->discovery.etag, s->jwks.etag);
    free(disc.bytes);
    free(jwks.bytes);
    snapshot_release(s);
}

struct date_case {
    time_t t;
    char imf[32];
};

static struct date_case dates[] = {
    {0, "Thu, 01 Jan 1970 00:00:00 GMT"},
    {951782400, "Tue, 29 Feb 2000 00:00:00 GMT"},
    {1700077413, "Wed, 15 Nov 2023 19:43:33 GMT"},
    {4102444799, "Thu, 31 Dec 2099 23:59:59 GMT"},
};

ParameterizedTestParameters(snapshot, last_modified)
{
    return cr_make_param_array(struct date_case, dates, COUNT(dates));
}

ParameterizedTest(struct date_case *c, snapshot, last_modified)
{
    struct snapshot *s = build(&default_params, "rsa2048.pub", c->t);
    cr_assert_eq(s->loaded_at, c->t);
    assert_hdr(s->last_modified, s->last_modified_len, c->imf, "Last-Modified");
    cr_assert_eq(strlen(s->last_modified), s->last_modified_len);
    snapshot_release(s);
}

Test(snapshot, max_age_bounds)
{
    static const struct {
        unsigned long max_age;
        const char *want;
    } cases[] = {
        {0, "public, max-age=0"}, {3600, "public, max-age=3600"}, {ULONG_MAX, "public, max-age=18446744073709551615"}};
    for (size_t i = 0; i < COUNT(cases); i++) {
        struct snapshot_params p = default_params;
        p.max_age = cases[i].max_age;
        struct snapshot *s = build(&p, "ec256.pub", 0);
        assert_hdr(s->cache_control, s->cache_control_len, cases[i].want, "Cache-Control");
        snapshot_release(s);
    }
}

/* The snapshot keeps its own copy of the content type. */
Test(snapshot, content_type_copied)
{
    char type[] = "application/json";
    struct snapshot_params p = default_params;
    p.jwks_content_type = type;
    struct snapshot *s = build(&p, "rsa2048.pub", 0);
    memset(type, 'x', sizeof type - 1);
    assert_hdr(s->jwks.content_type, s->jwks.content_type_len, "application/json", "jwks type");
    snapshot_release(s);
}

Test(snapshot, etags_deterministic)
{
    struct snapshot *a = build(&default_params, "multi.pem", 0);
    struct snapshot *b = build(&default_params, "multi.pem", 1700077413);
    cr_assert_str_eq(a->discovery.etag, b->discovery.etag);
    cr_assert_str_eq(a->jwks.etag, b->jwks.etag);

    struct snapshot *c = build(&default_params, "rsa2048.pub", 0);
    cr_assert_str_neq(a->discovery.etag, c->discovery.etag);
    cr_assert_str_neq(a->jwks.etag, c->jwks.etag);
    snapshot_release(a);
    snapshot_release(b);
    snapshot_release(c);
}

/* Same bytes on the wire whatever the load time; any other change counts. */
Test(snapshot, same_bytes)
{
    struct snapshot *a = build(&default_params, "multi.pem", 0);
    struct snapshot *b = build(&default_params, "multi.pem", 1000);
    cr_assert(snapshot_same_bytes(a, b));
    cr_assert(snapshot_same_bytes(b, a));
    cr_assert(snapshot_same_bytes(a, a));

    struct snapshot_params age = default_params, type = default_params, iss = default_params;
    age.max_age = 601;
    type.jwks_content_type = "application/json";
    iss.issuer = ISSUER "/";
    struct snapshot *differ[] = {
        build(&default_params, "rsa2048.pub", 0),
        build(&default_params, "ec256.pub", 0),
        build(&age, "multi.pem", 0),
        build(&type, "multi.pem", 0),
        build(&iss, "multi.pem", 0),
    };
    for (size_t i = 0; i < COUNT(differ); i++) {
        cr_assert_not(snapshot_same_bytes(a, differ[i]), "case %zu judged the same", i);
        cr_assert_not(snapshot_same_bytes(differ[i], a), "case %zu judged the same", i);
        snapshot_release(differ[i]);
    }
    snapshot_release(a);
    snapshot_release(b);
}

Test(snapshot, reference_counting)
{
    struct snapshot *s = build(&default_params, "rsa2048.pub", 0);
    cr_assert_eq(atomic_load(&s->refs), 1);
    cr_assert_eq(snapshot_ref(s), s);
    cr_assert_eq(atomic_load(&s->refs), 2);
    snapshot_release(s);
    cr_assert_eq(atomic_load(&s->refs), 1);
    cr_assert_str_eq(s->jwks.content_type, JWKS_TYPE, "freed while referenced");
    snapshot_release(s); /* the last reference: ASan reports a leak or a double free */
}
