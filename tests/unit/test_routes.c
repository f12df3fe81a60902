/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for publish/routes: a fleet's routing table, from a request's
 * host and issuer path to that issuer's snapshot.
 */
#include <criterion/criterion.h>

#include "test_support.h"

#include <stdio.h>
#include <string.h>

#include "keys/keyset.h"
#include "publish/routes.h"
#include "publish/snapshot.h"

TestSuite(routes, .fini = leak_check);

/* A snapshot of no keys for issuer, standing for that issuer's. */
static struct snapshot *issuer_snapshot(const char *issuer)
{
    const struct snapshot_params params = {issuer, "https://x/jwks", "application/json", 60, 1};
    struct snapshot *s = snapshot_build(&params, keyset_new(), 0);

    cr_assert_not_null(s);
    return s;
}

/* Finds host and path (NUL-terminated) in the table of fleet. */
static const struct snapshot *find(const struct snapshot *fleet, const char *host, const char *path)
{
    return routes_find(fleet->routes, host, strlen(host), path, strlen(path));
}

Test(routes, key_forms)
{
    char key[ROUTES_KEY_MAX];

    cr_assert_eq(routes_key("https://A.Example:8443/c/1/", key), 0);
    cr_assert_str_eq(key, "a.example/c/1");
    cr_assert_eq(routes_key("https://a.example", key), 0);
    cr_assert_str_eq(key, "a.example");
    cr_assert_eq(routes_key("https://a.example/", key), 0);
    cr_assert_str_eq(key, "a.example");
    cr_assert_eq(routes_key("https://[::1]:9/Path", key), 0);
    cr_assert_str_eq(key, "[::1]/Path");
    cr_assert_eq(routes_key("not a url", key), -1);
    cr_assert_eq(routes_key("https:///x", key), -1);
}

Test(routes, longest_prefix_by_host_and_path)
{
    struct snapshot *a = issuer_snapshot("https://a.example/c/1"), *b = issuer_snapshot("https://a.example/c/1/x"),
                    *c = issuer_snapshot("https://B.example"), *d = issuer_snapshot("https://[::1]:8443/z");
    const struct routes_entry entries[] = {{"https://a.example/c/1", a, NULL, 0},
                                           {"https://a.example/c/1/x", b, NULL, 0},
                                           {"https://B.example", c, NULL, 0},
                                           {"https://[::1]:8443/z", d, NULL, 0}};
    struct snapshot *fleet = routes_build(entries, 4, 0);

    cr_assert_not_null(fleet);
    cr_assert_eq(routes_count(fleet->routes), 4);
    cr_assert_eq(find(fleet, "a.example", "/c/1"), a);
    cr_assert_eq(find(fleet, "A.EXAMPLE:443", "/c/1"), a);
    cr_assert_eq(find(fleet, "a.example", "/c/1/x"), b);
    cr_assert_eq(find(fleet, "a.example", "/c/1/"), a, "a trailing slash of the issuer is no part of its path");
    cr_assert_eq(find(fleet, "b.example", ""), c);
    cr_assert_eq(find(fleet, "b.example:80", "/"), c);
    cr_assert_eq(find(fleet, "[::1]", "/z"), d);
    cr_assert_eq(find(fleet, "[::1]:1", "/z"), d);
    cr_assert_null(find(fleet, "a.example", ""));
    cr_assert_null(find(fleet, "a.example", "/c"));
    cr_assert_null(find(fleet, "a.example", "/C/1"), "paths compare case by case");
    cr_assert_null(find(fleet, "a.example", "/c/1/x/y"));
    cr_assert_null(find(fleet, "b.example", "/c/1"));
    cr_assert_null(find(fleet, "", "/c/1"));
    cr_assert_null(find(fleet, "c.example", ""));
    /* the table holds its own references */
    snapshot_release(a);
    snapshot_release(b);
    snapshot_release(c);
    snapshot_release(d);
    cr_assert_eq(find(fleet, "a.example", "/c/1/x"), b);
    snapshot_release(fleet);
}

Test(routes, duplicates_refused)
{
    struct snapshot *a = issuer_snapshot("https://a.example/c/1");
    const struct routes_entry entries[] = {{"https://a.example/c/1", a, NULL, 0},
                                           {"https://A.example:9/c/1/", a, NULL, 0}};

    cr_assert_null(routes_build(entries, 2, 0));
    snapshot_release(a);
}

Test(routes, empty_and_many)
{
    enum { N = 5000 };
    static struct routes_entry entries[N];
    static char urls[N][64];
    struct snapshot *one = issuer_snapshot("https://fleet.example"), *fleet = routes_build(NULL, 0, 0);
    char path[64];

    cr_assert_not_null(fleet);
    cr_assert_null(find(fleet, "a.example", ""));
    snapshot_release(fleet);
    for (int i = 0; i < N; i++) {
        snprintf(urls[i], sizeof urls[i], "https://h%d.example/id/%d", i % 7, i);
        entries[i] = (struct routes_entry){urls[i], one, NULL, 0};
    }
    cr_assert_not_null(fleet = routes_build(entries, N, 0));
    cr_assert_eq(routes_count(fleet->routes), N);
    for (int i = 0; i < N; i++) {
        char host[32];
        snprintf(host, sizeof host, "h%d.example", i % 7);
        snprintf(path, sizeof path, "/id/%d", i);
        cr_assert_eq(find(fleet, host, path), one, "%s%s", host, path);
        snprintf(host, sizeof host, "h%d.example", (i + 1) % 7);
        cr_assert_null(find(fleet, host, path));
    }
    snapshot_release(fleet);
    snapshot_release(one);
}

Test(routes, issuer_by_exact_url)
{
    struct snapshot *a = issuer_snapshot("https://a.example/c/1"), *b = issuer_snapshot("https://b.example");
    char *aud[] = {"vault", "sts"};
    const struct routes_entry entries[] = {{"https://a.example/c/1", a, aud, 2}, {"https://b.example", b, NULL, 0}};
    struct snapshot *fleet = routes_build(entries, 2, 0);
    const struct routes_issuer *ri;

    cr_assert_not_null(fleet);
    cr_assert_not_null(ri = routes_find_issuer(fleet->routes, "https://a.example/c/1", 21));
    cr_assert_eq(ri->snap, a);
    cr_assert_str_eq(ri->issuer[0], "https://a.example/c/1");
    cr_assert_eq(ri->naudiences, 2);
    cr_assert_str_eq(ri->audiences[0], "vault");
    cr_assert_str_eq(ri->audiences[1], "sts");
    cr_assert_neq(ri->audiences[0], aud[0], "the table keeps copies");
    cr_assert_not_null(ri = routes_find_issuer(fleet->routes, "https://b.example", 17));
    cr_assert_eq(ri->snap, b);
    cr_assert_eq(ri->naudiences, 1, "no audiences: the issuer itself");
    cr_assert_str_eq(ri->audiences[0], "https://b.example");
    /* exact: not a prefix, not another case, not a trailing slash, not a port */
    cr_assert_null(routes_find_issuer(fleet->routes, "https://a.example/c/", 19));
    cr_assert_null(routes_find_issuer(fleet->routes, "https://A.example/c/1", 21));
    cr_assert_null(routes_find_issuer(fleet->routes, "https://b.example/", 18));
    cr_assert_null(routes_find_issuer(fleet->routes, "https://b.example:443", 21));
    snapshot_release(fleet);
    snapshot_release(a);
    snapshot_release(b);
}
