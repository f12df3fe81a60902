/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every criterion test file shares: COUNT, loading fixture keys,
 * temporary directories of fixture files, a serve config, and the leak
 * check each suite runs as its .fini.
 */
#ifndef OIDC_TEST_SUPPORT_H
#define OIDC_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "jose/token_mint.h"
#include "keys/keyfile.h"
#include "keys/keyset.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The body of a ParameterizedTestParameters over the rows of a static
 * table: each test gets an index. (Criterion runs a parameterized test in a
 * new process, where a pointer in a parameter would point nowhere, so a
 * table of strings cannot be the parameters themselves.) */
#define TABLE_PARAMETERS(table)                                                                                        \
    static size_t indices_[sizeof table / sizeof table[0]];                                                            \
    for (size_t i_ = 0; i_ < sizeof table / sizeof table[0]; i_++)                                                     \
        indices_[i_] = i_;                                                                                             \
    return cr_make_param_array(size_t, indices_, sizeof table / sizeof table[0])

#define FIXTURE_MAX_FILES 8

/* keyset_load over fixture names; fails the test on error. */
static inline struct keyset *fixture_keyset(const char *const *names, size_t n)
{
    char paths[FIXTURE_MAX_FILES][PATH_MAX], err[1024] = "";
    char *argv[FIXTURE_MAX_FILES];
    cr_assert_leq(n, FIXTURE_MAX_FILES);
    for (size_t i = 0; i < n; i++) {
        snprintf(paths[i], PATH_MAX, "%s/%s", FIXTURES, names[i]);
        argv[i] = paths[i];
    }
    struct keyset *ks = keyset_load(argv, n, NULL, NULL, err, sizeof err);
    cr_assert_not_null(ks, "keyset_load: %s", err);
    return ks;
}

static inline struct keyset *fixture_keyset1(const char *name)
{
    return fixture_keyset(&name, 1);
}

/* The private key of a fixture PEM; fails the test on error. */
static inline EVP_PKEY *fixture_private_key(const char *name)
{
    char path[PATH_MAX], err[512] = "";

    snprintf(path, sizeof(path), "%s/%s", FIXTURES, name);
    EVP_PKEY *k = keyfile_read_private(path, err, sizeof(err));
    cr_assert_not_null(k, "%s", err);
    return k;
}

/* A JWKS document of the fixture keys names[i], each under kids[i] (NULL:
 * its derived kid), in that order: the JWK our renderer writes for the
 * key with its kid replaced, as an issuer with kids of its own publishes
 * them. malloc'ed; the caller frees it. */
static inline char *fixture_jwks(const char *const *names, const char *const *kids, size_t n)
{
    size_t cap = 64, len;
    char *out = malloc(cap);

    cr_assert_not_null(out);
    len = (size_t)snprintf(out, cap, "{\"keys\":[");
    for (size_t i = 0; i < n; i++) {
        struct keyset *ks = fixture_keyset1(names[i]);
        const struct key *k = &ks->keys[0];
        const char *kid = kids[i] ? kids[i] : k->kid, *at = strstr(k->jwk, k->kid);
        size_t head = (size_t)(at - k->jwk), need = k->jwk_len + strlen(kid) + 4;
        cr_assert_not_null(at);
        out = realloc(out, cap += need);
        cr_assert_not_null(out);
        len += (size_t)snprintf(out + len, cap - len, "%s%.*s%s%s", i ? "," : "", (int)head, k->jwk, kid,
                                at + strlen(k->kid));
        keyset_free(ks);
    }
    snprintf(out + len, cap - len, "]}");
    return out;
}

/* A fresh temporary directory (/tmp/oidc-NAME-XXXXXX) into dir. */
static inline void tmpdir_make(char dir[64], const char *name)
{
    snprintf(dir, 64, "/tmp/oidc-%s-XXXXXX", name);
    cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
}

/* Removes dir and everything in it. */
static inline void tmpdir_remove(const char *dir)
{
    char cmd[PATH_MAX + 16];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Writes dir/name, in place (the same file, rewritten), with the contents
 * of the fixtures listed (NULL-ended). */
static inline void fixture_write(const char *dir, const char *name, const char *const *fixtures)
{
    char path[PATH_MAX], src[PATH_MAX], buf[8192];
    FILE *out;
    size_t n;

    cr_assert_lt((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name), sizeof(path));
    cr_assert_not_null(out = fopen(path, "wb"), "%s", path);
    for (size_t i = 0; fixtures[i] != NULL; i++) {
        snprintf(src, sizeof(src), "%s/%s", FIXTURES, fixtures[i]);
        FILE *in = fopen(src, "rb");
        cr_assert_not_null(in, "%s", src);
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
            fwrite(buf, 1, n, out);
        fclose(in);
    }
    fclose(out);
}

/* config_parse of `serve` with issuer and key_file and then the nextra
 * arguments of extra (at most 16); fails the test on error. */
static inline void serve_config(struct config *cfg, const char *issuer, const char *key_file, const char *const *extra,
                                size_t nextra)
{
    char *argv[6 + 16] = {
        "oidc-discovery", "serve", "--service-account-issuer", (char *)issuer, "--service-account-key-file",
        (char *)key_file};
    char err[CONFIG_ERR_MAX];
    enum config_command cmd;
    int argc = 6;

    cr_assert_leq(nextra, 16);
    for (size_t i = 0; i < nextra; i++)
        argv[argc++] = (char *)extra[i];
    cr_assert_eq(config_parse(argc, argv, &cmd, cfg, err, sizeof(err)), 0, "%s", err);
}

/* Under AddressSanitizer a test that leaks crashes in its teardown, which
 * makes the test binary exit non-zero (a leak report alone would not). A
 * failed assertion skips the frees after it, so a failing test leaks too. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
static inline void leak_check(void)
{
    if (__lsan_do_recoverable_leak_check()) {
        cr_log_error("memory leaked, see the LeakSanitizer report");
        abort();
    }
}
#else
static inline void leak_check(void)
{
}
#endif

#endif
