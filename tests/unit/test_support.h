/*
 * What every criterion test file shares: COUNT, loading fixture keys, and
 * the leak check each suite runs as its .fini.
 */
#ifndef OIDC_TEST_SUPPORT_H
#define OIDC_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "keys/keyset.h"

#define COUNT(a)          (sizeof(a) / sizeof((a)[0]))
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
