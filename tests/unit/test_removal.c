/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keys/removal: a key that disappears from a file still in
 * place leaves the published input set only once the same shrunken read has
 * been seen twice, confirm_ms apart; one whose file was swapped away (the
 * kubelet's "..data" flip) leaves at once; additions are immediate.
 *
 * The key files are fixture PEMs copied into a fresh temporary directory;
 * time is passed in, so nothing here waits.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"
#include "keys/removal.h"

#define CONFIRM 1000

TestSuite(removal, .fini = leak_check);

/* A temporary directory per test, removed with everything in it. */
static char tmp[64];

static void tmp_setup(void)
{
    tmpdir_make(tmp, "removal");
}

static void tmp_teardown(void)
{
    tmpdir_remove(tmp);
    leak_check();
}

/* Writes tmp/name, in place, with the contents of the fixtures listed
 * (NULL-ended). */
static void put(const char *name, const char *const *fixtures)
{
    fixture_write(tmp, name, fixtures);
}

static void make_dir(const char *name)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/%s", tmp, name);
    cr_assert_eq(mkdir(path, 0700), 0, "mkdir %s", path);
}

/* keyset_load of tmp/name (a file or directory). */
static struct keyset *read_path(const char *name)
{
    char path[PATH_MAX], err[1024] = "";
    char *paths[] = {path};

    snprintf(path, sizeof(path), "%s/%s", tmp, name);
    struct keyset *ks = keyset_load(paths, 1, NULL, NULL, err, sizeof(err));
    cr_assert_not_null(ks, "keyset_load(%s): %s", path, err);
    return ks;
}

/* The kid of a fixture's (first) key. */
static void kid_of(const char *fixture, char kid[KEY_KID_LEN + 1])
{
    struct keyset *ks = fixture_keyset1(fixture);
    memcpy(kid, ks->keys[0].kid, KEY_KID_LEN + 1);
    keyset_free(ks);
}

/* Asserts that ks holds exactly the keys of the fixtures listed (NULL-ended),
 * in that order, and frees it. */
static void expect(struct keyset *ks, const char *const *fixtures, const char *why)
{
    char kid[KEY_KID_LEN + 1];
    size_t n = 0;

    cr_assert_not_null(ks, "%s: no set", why);
    while (fixtures[n] != NULL)
        n++;
    cr_assert_eq(ks->count, n, "%s: %zu keys, expected %zu", why, ks->count, n);
    for (size_t i = 0; i < n; i++) {
        kid_of(fixtures[i], kid);
        cr_assert_str_eq(ks->keys[i].kid, kid, "%s: key %zu is not %s's", why, i, fixtures[i]);
    }
    keyset_free(ks);
}

/* removal_apply of a fresh read of tmp/name at now. */
static struct keyset *apply(struct removal *rm, const char *name, int64_t now)
{
    char err[256] = "";
    struct keyset *out = removal_apply(rm, read_path(name), now, err, sizeof(err));
    cr_assert_not_null(out, "removal_apply: %s", err);
    return out;
}

/* No key waits for its removal to be confirmed, and no re-read is due. */
static void assert_nothing_held(const struct removal *rm)
{
    cr_assert_eq(removal_held(rm), 0, "%zu keys held", removal_held(rm));
    cr_assert_eq(removal_due(rm), 0, "a re-read is due at %lld", (long long)removal_due(rm));
}

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

Test(removal, first_read_and_additions_are_immediate, .init = tmp_setup, .fini = tmp_teardown)
{
    struct removal *rm = removal_new(CONFIRM);

    put("sa.pem", KEYS("rsa2048.pub"));
    expect(apply(rm, "sa.pem", 0), KEYS("rsa2048.pub"), "first read");
    put("sa.pem", KEYS("rsa2048.pub", "ec256.pub"));
    expect(apply(rm, "sa.pem", 10), KEYS("rsa2048.pub", "ec256.pub"), "a key added");
    assert_nothing_held(rm);
    removal_free(rm);
}

Test(removal, file_read_mid_write_keeps_its_keys, .init = tmp_setup, .fini = tmp_teardown)
{
    struct removal *rm = removal_new(CONFIRM);

    put("sa.pem", KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"));
    expect(apply(rm, "sa.pem", 0), KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"), "start");
    /* rewritten in place: the reader sees the first block only */
    put("sa.pem", KEYS("rsa2048.pub"));
    expect(apply(rm, "sa.pem", 100), KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"), "short read");
    cr_assert_eq(removal_held(rm), 2);
    cr_assert_eq(removal_due(rm), 100 + CONFIRM);
    /* the rest arrives before the confirmation: nothing ever left */
    put("sa.pem", KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"));
    expect(apply(rm, "sa.pem", 400), KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"), "complete again");
    assert_nothing_held(rm);
    removal_free(rm);
}

Test(removal, shrunken_set_read_twice_confirm_apart_stands, .init = tmp_setup, .fini = tmp_teardown)
{
    struct removal *rm = removal_new(CONFIRM);

    put("sa.pem", KEYS("rsa2048.pub", "ec256.pub"));
    expect(apply(rm, "sa.pem", 0), KEYS("rsa2048.pub", "ec256.pub"), "start");
    put("sa.pem", KEYS("rsa2048.pub"));
    expect(apply(rm, "sa.pem", 1000), KEYS("rsa2048.pub", "ec256.pub"), "first shrunken read");
    expect(apply(rm, "sa.pem", 1500), KEYS("rsa2048.pub", "ec256.pub"), "same read, too soon");
    expect(apply(rm, "sa.pem", 1999), KEYS("rsa2048.pub", "ec256.pub"), "same read, 1 ms too soon");
    expect(apply(rm, "sa.pem", 2000), KEYS("rsa2048.pub"), "same read, confirm_ms later");
    assert_nothing_held(rm);
    /* and it stays removed */
    expect(apply(rm, "sa.pem", 2100), KEYS("rsa2048.pub"), "afterwards");
    removal_free(rm);
}

Test(removal, another_read_in_between_starts_over, .init = tmp_setup, .fini = tmp_teardown)
{
    struct removal *rm = removal_new(CONFIRM);

    put("sa.pem", KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"));
    expect(apply(rm, "sa.pem", 0), KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"), "start");
    put("sa.pem", KEYS("rsa2048.pub"));
    expect(apply(rm, "sa.pem", 0), KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"), "one block");
    put("sa.pem", KEYS("rsa2048.pub", "ec256.pub"));
    expect(apply(rm, "sa.pem", 600), KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"), "two blocks");
    cr_assert_eq(removal_due(rm), 600 + CONFIRM, "a different read restarts the confirmation");
    expect(apply(rm, "sa.pem", 1000), KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"), "two blocks again, early");
    expect(apply(rm, "sa.pem", 1600), KEYS("rsa2048.pub", "ec256.pub"), "two blocks confirmed");
    removal_free(rm);
}

Test(removal, a_failed_read_in_between_starts_over, .init = tmp_setup, .fini = tmp_teardown)
{
    struct removal *rm = removal_new(CONFIRM);

    put("sa.pem", KEYS("rsa2048.pub", "ec256.pub"));
    expect(apply(rm, "sa.pem", 0), KEYS("rsa2048.pub", "ec256.pub"), "start");
    put("sa.pem", KEYS("rsa2048.pub"));
    expect(apply(rm, "sa.pem", 0), KEYS("rsa2048.pub", "ec256.pub"), "short read");
    removal_read_failed(rm);
    cr_assert_eq(removal_due(rm), 0, "no confirmation is under way after a failed read");
    expect(apply(rm, "sa.pem", 1000), KEYS("rsa2048.pub", "ec256.pub"), "short read after a failure");
    cr_assert_eq(removal_due(rm), 1000 + CONFIRM);
    expect(apply(rm, "sa.pem", 2000), KEYS("rsa2048.pub"), "confirmed");
    removal_free(rm);
}

Test(removal, held_keys_keep_their_published_place, .init = tmp_setup, .fini = tmp_teardown)
{
    struct removal *rm = removal_new(CONFIRM);

    make_dir("d");
    put("d/a.pem", KEYS("rsa2048.pub", "ec256.pub"));
    put("d/b.pem", KEYS("ec384.pub"));
    expect(apply(rm, "d", 0), KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"), "start");
    /* a.pem read short: its second key stays where it was, not at the end */
    put("d/a.pem", KEYS("rsa2048.pub"));
    expect(apply(rm, "d", 10), KEYS("rsa2048.pub", "ec256.pub", "ec384.pub"), "a.pem short");
    /* a new key in the same read is published at once, in its place */
    put("d/a.pem", KEYS("rsa4096.pub", "rsa2048.pub"));
    expect(apply(rm, "d", 20), KEYS("rsa4096.pub", "rsa2048.pub", "ec256.pub", "ec384.pub"), "added and short");
    expect(apply(rm, "d", 20 + CONFIRM), KEYS("rsa4096.pub", "rsa2048.pub", "ec384.pub"), "confirmed");
    removal_free(rm);
}

Test(removal, deleted_file_waits_too, .init = tmp_setup, .fini = tmp_teardown)
{
    struct removal *rm = removal_new(CONFIRM);
    char path[PATH_MAX];

    make_dir("d");
    put("d/a.pem", KEYS("rsa2048.pub"));
    put("d/b.pem", KEYS("ec256.pub"));
    expect(apply(rm, "d", 0), KEYS("rsa2048.pub", "ec256.pub"), "start");
    /* rm then write is not atomic: a deletion may be half a replacement */
    snprintf(path, sizeof(path), "%s/d/b.pem", tmp);
    cr_assert_eq(unlink(path), 0);
    expect(apply(rm, "d", 5), KEYS("rsa2048.pub", "ec256.pub"), "b.pem deleted");
    expect(apply(rm, "d", 5 + CONFIRM), KEYS("rsa2048.pub"), "deletion confirmed");
    removal_free(rm);
}

/* A Kubernetes Secret volume: d/sa.pem -> ..data/sa.pem, ..data -> stamp. */
static void secret_swap(const char *stamp, const char *const *fixtures)
{
    char name[PATH_MAX], data[PATH_MAX], tmpl[PATH_MAX];

    snprintf(name, sizeof(name), "d/%s", stamp);
    make_dir(name);
    snprintf(name, sizeof(name), "d/%s/sa.pem", stamp);
    put(name, fixtures);
    snprintf(tmpl, sizeof(tmpl), "%s/d/..data_tmp", tmp);
    cr_assert_eq(symlink(stamp, tmpl), 0);
    snprintf(data, sizeof(data), "%s/d/..data", tmp);
    cr_assert_eq(rename(tmpl, data), 0);
}

Test(removal, swapped_away_file_leaves_at_once, .init = tmp_setup, .fini = tmp_teardown)
{
    struct removal *rm = removal_new(CONFIRM);
    char path[PATH_MAX];

    make_dir("d");
    secret_swap("..2026_01", KEYS("rsa2048.pub", "ec256.pub"));
    snprintf(path, sizeof(path), "%s/d/sa.pem", tmp);
    cr_assert_eq(symlink("..data/sa.pem", path), 0);
    expect(apply(rm, "d", 0), KEYS("rsa2048.pub", "ec256.pub"), "start");
    /* the kubelet's atomic writer: the new file is complete before the
     * swap, so a key it no longer holds is gone for good */
    secret_swap("..2026_02", KEYS("ec384.pub"));
    expect(apply(rm, "d", 10), KEYS("ec384.pub"), "after the ..data swap");
    assert_nothing_held(rm);
    removal_free(rm);
}

Test(removal, key_back_before_confirmation, .init = tmp_setup, .fini = tmp_teardown)
{
    struct removal *rm = removal_new(CONFIRM);

    put("sa.pem", KEYS("rsa2048.pub", "ec256.pub"));
    expect(apply(rm, "sa.pem", 0), KEYS("rsa2048.pub", "ec256.pub"), "start");
    put("sa.pem", KEYS("ec256.pub"));
    expect(apply(rm, "sa.pem", 10), KEYS("rsa2048.pub", "ec256.pub"), "first key gone");
    put("sa.pem", KEYS("rsa2048.pub", "ec256.pub"));
    expect(apply(rm, "sa.pem", 20), KEYS("rsa2048.pub", "ec256.pub"), "back");
    /* the earlier shrunken read no longer counts */
    put("sa.pem", KEYS("ec256.pub"));
    expect(apply(rm, "sa.pem", 10 + CONFIRM), KEYS("rsa2048.pub", "ec256.pub"), "gone again, fresh wait");
    expect(apply(rm, "sa.pem", 10 + 2 * CONFIRM), KEYS("ec256.pub"), "confirmed");
    removal_free(rm);
}

Test(removal, free_with_keys_held, .init = tmp_setup, .fini = tmp_teardown)
{
    struct removal *rm = removal_new(CONFIRM);

    put("sa.pem", KEYS("rsa2048.pub", "ec256.pub"));
    keyset_free(apply(rm, "sa.pem", 0));
    put("sa.pem", KEYS("rsa2048.pub"));
    keyset_free(apply(rm, "sa.pem", 1));
    cr_assert_eq(removal_held(rm), 1);
    removal_free(rm);
    removal_free(NULL);
}

/* Writes tmp/name as a JWKS of the fixtures listed under kids. */
static void put_jwks(const char *name, const char *const *fixtures, const char *const *kids, size_t n)
{
    char path[PATH_MAX], *text = fixture_jwks(fixtures, kids, n);
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmp, name);
    cr_assert_not_null(f = fopen(path, "wb"), "%s", path);
    fputs(text, f);
    fclose(f);
    free(text);
}

/* A JWKS file's kids are not derived: a key held back, copied from the set
 * published before, must keep the kid it was published under, or the
 * held key would reappear under another kid and tokens would not find it.
 * Kids longer than a derived one, differing only at the end, must stay
 * apart. */
Test(removal, held_keys_keep_their_jwks_kids, .init = tmp_setup, .fini = tmp_teardown)
{
    char a[301], b[301];
    struct removal *rm = removal_new(CONFIRM);
    struct keyset *ks;

    memset(a, 'k', 300), memset(b, 'k', 300);
    a[299] = 'a', b[299] = 'b', a[300] = b[300] = '\0';
    put_jwks("jwks.json", KEYS("rsa2048.pub", "ec256.pub"), (const char *const[]){a, b}, 2);
    keyset_free(apply(rm, "jwks.json", 0));
    put_jwks("jwks.json", KEYS("ec256.pub"), (const char *const[]){b}, 1);
    ks = apply(rm, "jwks.json", 10);
    cr_assert_eq(ks->count, 2, "the key that left is held");
    cr_assert_str_eq(ks->keys[0].kid, a, "the held key keeps its JWKS kid");
    cr_assert_str_eq(ks->keys[1].kid, b);
    cr_assert(ks->keys[0].kid_given && strstr(ks->keys[0].jwk, a) != NULL, "and its JWK says so");
    keyset_free(ks);
    ks = apply(rm, "jwks.json", 10 + CONFIRM);
    cr_assert_eq(ks->count, 1, "confirmed");
    cr_assert_str_eq(ks->keys[0].kid, b);
    keyset_free(ks);
    removal_free(rm);
}
