/*
 * What every criterion test file shares: COUNT, and the leak check each
 * suite runs as its .fini.
 */
#ifndef OIDC_TEST_SUPPORT_H
#define OIDC_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <stdlib.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

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
