/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keys/vcache: the cache of successful token verifications.
 */
#include <criterion/criterion.h>

#include "test_support.h"

#include <stdlib.h>
#include <string.h>

/* Built in, as h2o's unit tests do, to read the hit counter of struct
 * vcache, which is its own: the library's copy is then not linked. */
#include "jose/vcache.c"

TestSuite(vcache, .fini = leak_check);

#define EXP 2000
#define TOK "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"

static char *aud_a[] = {"a"};
static char *aud_b[] = {"b"};
static char *aud_ab[] = {"a", "b"};

/* A user whose strings are the test's own (vcache_put copies them). */
static struct token_user user(time_t exp)
{
    static char *auds[] = {"a"};
    struct token_user u = {
        .username = "system:serviceaccount:ns:sa",
        .uid = "su",
        .groups = {"system:serviceaccounts", "system:serviceaccounts:ns"},
        .extra = {{"authentication.kubernetes.io/pod-name", "p"},
                  {"authentication.kubernetes.io/credential-id", "JTI=j"}},
        .nextra = 2,
        .audiences = auds,
        .naudiences = 1,
        .exp = exp,
    };
    return u;
}

static void put(struct vcache *c, uint64_t id, const char *tok, char **aud, size_t naud, time_t exp)
{
    struct token_user u = user(exp);
    vcache_put(c, id, tok, strlen(tok), aud, naud, &u);
}

static const struct token_user *get(struct vcache *c, uint64_t id, const char *tok, char **aud, size_t naud, time_t now)
{
    return vcache_get(c, id, tok, strlen(tok), aud, naud, now);
}

Test(vcache, hit_after_put)
{
    struct vcache *c = vcache_create(8);
    cr_assert_not_null(c);
    cr_expect_null(get(c, 1, TOK, aud_a, 1, 1000));
    put(c, 1, TOK, aud_a, 1, EXP);
    cr_expect_eq(vcache_size(c), 1);
    const struct token_user *u = get(c, 1, TOK, aud_a, 1, 1000);
    cr_assert_not_null(u);
    cr_expect_str_eq(u->username, "system:serviceaccount:ns:sa");
    cr_expect_str_eq(u->uid, "su");
    cr_expect_str_eq(u->groups[1], "system:serviceaccounts:ns");
    cr_assert_eq(u->nextra, 2);
    cr_expect_str_eq(u->extra[1].key, "authentication.kubernetes.io/credential-id");
    cr_expect_str_eq(u->extra[1].value, "JTI=j");
    cr_assert_eq(u->naudiences, 1);
    cr_expect_str_eq(u->audiences[0], "a");
    cr_expect_eq(u->exp, EXP);
    cr_expect_eq(c->hits, 1);
    vcache_free(c);
}

Test(vcache, miss_for_other_audiences_or_token)
{
    struct vcache *c = vcache_create(8);
    put(c, 1, TOK, aud_a, 1, EXP);
    cr_expect_null(get(c, 1, TOK, aud_b, 1, 1000));
    cr_expect_null(get(c, 1, TOK, aud_ab, 2, 1000));
    cr_expect_null(get(c, 1, TOK, NULL, 0, 1000));
    cr_expect_null(get(c, 1, TOK "x", aud_a, 1, 1000));
    /* The token and audience boundaries cannot be moved: "ab" + ["c"] is
     * not "abc" + [] nor "a" + ["bc"]. */
    char *c1[] = {"c"}, *bc[] = {"bc"};
    put(c, 1, "ab", c1, 1, EXP);
    cr_expect_null(get(c, 1, "abc", NULL, 0, 1000));
    cr_expect_null(get(c, 1, "a", bc, 1, 1000));
    cr_expect_not_null(get(c, 1, "ab", c1, 1, 1000));
    cr_expect_eq(c->hits, 1);
    vcache_free(c);
}

Test(vcache, miss_after_keyset_change)
{
    struct vcache *c = vcache_create(8);
    put(c, 1, TOK, aud_a, 1, EXP);
    put(c, 1, TOK "2", aud_a, 1, EXP);
    cr_expect_eq(vcache_size(c), 2);
    cr_expect_null(get(c, 2, TOK, aud_a, 1, 1000));
    cr_expect_eq(vcache_size(c), 0);
    /* Back to the old id: everything was dropped. */
    cr_expect_null(get(c, 1, TOK, aud_a, 1, 1000));
    vcache_free(c);
}

Test(vcache, expiry_at_exp)
{
    struct vcache *c = vcache_create(8);
    put(c, 1, TOK, aud_a, 1, EXP);
    cr_expect_not_null(get(c, 1, TOK, aud_a, 1, EXP - 1));
    cr_expect_null(get(c, 1, TOK, aud_a, 1, EXP));
    cr_expect_eq(vcache_size(c), 0);
    cr_expect_null(get(c, 1, TOK, aud_a, 1, EXP - 1));
    vcache_free(c);
}

Test(vcache, eviction_at_capacity)
{
    struct vcache *c = vcache_create(3);
    const char *toks[] = {"t1", "t2", "t3", "t4", "t5"};
    for (size_t i = 0; i < COUNT(toks); i++) {
        put(c, 1, toks[i], aud_a, 1, EXP);
        cr_expect_eq(vcache_size(c), i < 3 ? i + 1 : 3);
    }
    cr_expect_null(get(c, 1, "t1", aud_a, 1, 1000));
    cr_expect_null(get(c, 1, "t2", aud_a, 1, 1000));
    for (size_t i = 2; i < COUNT(toks); i++)
        cr_expect_not_null(get(c, 1, toks[i], aud_a, 1, 1000), "%s", toks[i]);
    vcache_free(c);
}

Test(vcache, same_request_twice_is_one_entry)
{
    struct vcache *c = vcache_create(4);
    put(c, 1, TOK, aud_a, 1, EXP);
    put(c, 1, TOK, aud_a, 1, EXP + 10);
    cr_expect_eq(vcache_size(c), 1);
    const struct token_user *u = get(c, 1, TOK, aud_a, 1, 1000);
    cr_assert_not_null(u);
    cr_expect_eq(u->exp, EXP + 10);
    vcache_free(c);
}

Test(vcache, legacy_not_cached)
{
    struct vcache *c = vcache_create(4);
    put(c, 1, TOK, aud_a, 1, 0);
    cr_expect_eq(vcache_size(c), 0);
    cr_expect_null(get(c, 1, TOK, aud_a, 1, 1000));
    vcache_free(c);
}

Test(vcache, zero_capacity_stores_nothing)
{
    struct vcache *c = vcache_create(0);
    cr_assert_not_null(c);
    put(c, 1, TOK, aud_a, 1, EXP);
    cr_expect_eq(vcache_size(c), 0);
    cr_expect_null(get(c, 1, TOK, aud_a, 1, 1000));
    vcache_free(c);
}

Test(vcache, deep_copy)
{
    struct vcache *c = vcache_create(4);
    struct token_user u = user(EXP);
    char *name = strdup("system:serviceaccount:ns:sa"), *aud = strdup("a"), *pod = strdup("p");
    char *auds[] = {aud};
    u.username = name;
    u.audiences = auds;
    u.extra[0].value = pod;
    vcache_put(c, 1, TOK, strlen(TOK), aud_a, 1, &u);
    name[0] = 'X';
    aud[0] = 'X';
    pod[0] = 'X';
    free(name);
    free(aud);
    free(pod);
    const struct token_user *got = get(c, 1, TOK, aud_a, 1, 1000);
    cr_assert_not_null(got);
    cr_expect_str_eq(got->username, "system:serviceaccount:ns:sa");
    cr_expect_str_eq(got->audiences[0], "a");
    cr_expect_str_eq(got->extra[0].value, "p");
    cr_expect_neq((const void *)got->uid, (const void *)u.uid);
    vcache_free(c);
}
