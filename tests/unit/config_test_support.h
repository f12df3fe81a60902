/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the config/ unit tests (tests/unit/test_config_*.c) share: the parsed
 * config and its error in globals the suite's .fini frees, ok() and fails()
 * over config_parse, config files under /tmp, and the arguments and messages
 * several of them check.
 */
#ifndef CONFIG_TEST_SUPPORT_H
#define CONFIG_TEST_SUPPORT_H

#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"

#define MAX_ARGS 48

static struct config cfg;
static enum config_command cmd;
static char err[CONFIG_ERR_MAX];
static char path[64];  /* the config file written by write_file() */
static char *help_raw; /* the text help() last read */

static inline void teardown(void)
{
    config_free(&cfg);
    free(help_raw);
    help_raw = NULL;
    if (path[0])
        unlink(path);
}

TestSuite(config, .fini = teardown);

/* Runs config_parse on "oidc-discovery" followed by the NULL-terminated
 * arguments, into the globals. */
static inline int parse_va(const char *first, va_list ap)
{
    char *argv[MAX_ARGS + 1] = {"oidc-discovery"};
    int argc = 1;

    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        cr_assert_lt(argc, MAX_ARGS);
        argv[argc++] = (char *)a;
    }
    config_free(&cfg);
    err[0] = '\0';
    return config_parse(argc, argv, &cmd, &cfg, err, sizeof err);
}

/* Parses and requires success. */
static inline void ok(const char *first, ...)
{
    va_list ap;
    int rc;

    va_start(ap, first);
    rc = parse_va(first, ap);
    va_end(ap);
    cr_assert_eq(rc, 0, "config_parse failed: %s", err);
}

/* Parses, requires failure with exactly this message and an empty config. */
static inline void fails(const char *want, const char *first, ...)
{
    static const struct config zero;
    va_list ap;
    int rc;

    va_start(ap, first);
    rc = parse_va(first, ap);
    va_end(ap);
    cr_assert_eq(rc, -1, "config_parse succeeded, wanted: %s", want);
    cr_assert_str_eq(err, want);
    cr_assert(memcmp(&cfg, &zero, sizeof cfg) == 0, "config not left empty on error");
}

/* Parses serve with an issuer and a key plus one more flag and value, and
 * requires failure with exactly this message. */
static inline void flag_fails(const char *want, const char *flag, const char *value)
{
    fails(want, "--service-account-issuer", "https://a.example", "--service-account-key-file", "/k.pub", flag, value,
          NULL);
}

#define MAX_AGE_PROBLEM "must be a duration between 0 and 365d (like 90s, 15m, 24h, 7d or plain seconds)"

/* The arguments each command needs, for tests about the other flags. */
#define SERVE_ARGS  "--service-account-issuer", "https://a.example", "--service-account-key-file", "/k.pub"
#define VERIFY_ARGS "verify", "--token-file", "/t.jwt", SERVE_ARGS
#define TOKEN_ARGS                                                                                                     \
    "token", "--signing-key-file", "/k.key", "--issuer", "https://a.example", "--service-account-uid", "uid-1"

/* Like ok() with the required issuer and key in front. */
#define OK_WITH(...) ok(SERVE_ARGS, __VA_ARGS__)
/* What a server's TokenReview API needs besides its listener: plain HTTP
 * (or TLS) and a caller. */
#define REVIEW_CALLERS                                                                                                 \
    "--token-review-insecure-http", "--token-review-allowed-callers", "system:serviceaccount:vault:vault-auth"
#define REVIEW_CALLERS_JSON                                                                                            \
    "\"token-review-insecure-http\": true, \"token-review-allowed-callers\": \"system:serviceaccount:v:v\""

/* Writes a config file under /tmp, remembered in path (replacing the file
 * a previous call wrote) for teardown to remove. */
static inline void write_file(const char *content)
{
    int fd;

    if (path[0])
        unlink(path);
    snprintf(path, sizeof path, "/tmp/test_config_XXXXXX");
    fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
}

/* Requires that --config with this content fails with
 * "config file PATH: <want>". */
static inline void file_fails(const char *content, const char *want)
{
    char full[CONFIG_ERR_MAX];

    write_file(content);
    snprintf(full, sizeof full, "config file %s: %s", path, want);
    fails(full, "--config", path, NULL);
}

/* Requires the list to hold exactly the n strings that follow. */
static inline void list_is(const struct config_strlist *l, size_t n, ...)
{
    va_list ap;

    cr_assert_eq(l->count, n, "%zu items, wanted %zu", l->count, n);
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_str_eq(l->items[i], va_arg(ap, const char *), "item %zu", i);
    va_end(ap);
}

static inline unsigned expected_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}

/* The help of topic, read into help_raw; returned with each description
 * on one line (a line break and the indent of a continued line read as one
 * blank), so that phrases are found however the text is wrapped. */
static inline const char *help(enum config_command topic)
{
    static char joined[65536];
    size_t o = 0;

    free(help_raw);
    help_raw = config_usage(topic);
    cr_assert_not_null(help_raw);
    cr_assert_lt(strlen(help_raw), sizeof joined);
    for (const char *c = help_raw; *c; c++) {
        size_t blanks = c[0] == '\n' ? strspn(c + 1, " ") : 0;
        if (blanks >= 20) {
            joined[o++] = ' ';
            c += blanks;
        } else {
            joined[o++] = *c;
        }
    }
    joined[o] = '\0';
    return joined;
}

/* Requires each of the NULL-terminated phrases in the help of topic. */
static inline void help_has(enum config_command topic, const char *const *phrases)
{
    const char *h = help(topic);

    for (; *phrases; phrases++)
        cr_assert_not_null(strstr(h, *phrases), "help %d lacks \"%s\":\n%s", topic, *phrases, h);
}

/* The messages of refused values and misplaced flags that more than one
 * topic checks: a setting's own tests, the refusals row by row
 * (test_config_table.c) and which command takes which flag
 * (test_config_commands.c). */
#define RELOAD_PROBLEM     "must be a duration between 1s and 1d (like 90s, 15m, 24h, 7d or plain seconds)"
#define RETENTION_PROBLEM  "must be a duration between 0 and 3650d (like 90s, 15m, 24h, 7d or plain seconds)"
#define RETENTION_NEEDS    "--key-retention needs --state-dir, so that retained keys survive a restart"
#define AUDIENCES_PROBLEM  "must be a comma-separated list of non-empty audiences"
#define LEEWAY_PROBLEM     "must be a duration between 0 and 1h (like 90s, 15m, 24h, 7d or plain seconds)"
#define TOKEN_SIZE_PROBLEM "must be an integer between 256 and 1048576"
#define REVIEW_NEEDS_LISTEN                                                                                            \
    "--enable-token-review needs --token-review-listen HOST:PORT (the TokenReview API is never served on the public "  \
    "listeners)"
#define LISTEN_NEEDS_REVIEW "--token-review-listen needs --enable-token-review"
#define MUST_DIFFER         "must differ from every --listen address"
#define NOT_FOR_VERIFY      " is not valid for the verify command"
#define ONLY_FOR_VERIFY     " is only valid for the verify command"
#define NOT_FOR_TOKEN       " is not valid for the token command"
#define ONLY_FOR_TOKEN      " is only valid for the token command"
#define NOT_FOR_KEYS        " is not valid for the keys command"
#define LISTEN_FORM         "must be HOST:PORT, or [ADDRESS]:PORT for IPv6"
#define UNIX_PROBLEM        "must be unix:/absolute/path"
#define UNIX_TOO_LONG       "socket path longer than 107 bytes"
#define TLS_NEEDS_FILES     "--tls-listen needs --tls-cert-file and --tls-private-key-file"
#define ADMIN_NONE_ALONE    "--admin-listen none cannot be combined with addresses"
#define PREFIX_PROBLEM      "must be a path like /oidc (leading slash, no trailing slash)"
#define HOSTS_PROBLEM       "must be a comma-separated list of host names (optionally :port)"
#define LOG_LEVEL_PROBLEM   "must be one of error, warn, info, debug"
#define LOG_FORMAT_PROBLEM  "must be one of text, json"
#define HEADER_PROBLEM      "must be an integer between 1024 and 65536"
#define REQ_TIMEOUT_PROBLEM "must be a duration between 1s and 5m (like 90s, 15m, 24h, 7d or plain seconds)"
#define IDLE_PROBLEM        "must be a duration between 1s and 1h (like 90s, 15m, 24h, 7d or plain seconds)"
#define GRACE_PROBLEM       "must be a duration between 0 and 5m (like 90s, 15m, 24h, 7d or plain seconds)"
#define CONN_PROBLEM        "must be an integer between 1 and 1000000"
#define STREAMS_PROBLEM     "must be an integer between 1 and 1000"
#define TLS_ARGS            "--tls-cert-file", "/tls.crt", "--tls-private-key-file", "/tls.key"
#define EXPORT_ARGS         "export", SERVE_ARGS, "--out", "/o"
#define NOT_FOR_EXPORT      " is not valid for the export command"
#define ONLY_FOR_EXPORT     " is only valid for the export command"

#endif
