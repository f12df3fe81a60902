/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: production serving: listeners, TLS, the admin
 * listener, path prefix, allowed hosts, logging, limits and their config file
 * keys. Error messages are asserted word for word since operators read them;
 * config_test_support.h holds the parse helpers.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/bucket_url.h"
#include "config/checks.h"
#include "config/config.h"
#include "config/file.h"
#include "config/options.h"
#include "util/paths.h"
#include "test_support.h"
#include "config_test_support.h"

/* ---- production serving ---- */

/* The defaults of the production serving settings, for any command;
 * grace is --shutdown-grace's (dev stops at once). */
static void production_defaults_are_set(unsigned long grace)
{
    cr_assert_eq(cfg.tls_listen_count, 0);
    cr_assert_null(cfg.tls_listens);
    cr_assert_null(cfg.tls_cert_file);
    cr_assert_null(cfg.tls_key_file);
    cr_assert_null(cfg.path_prefix);
    cr_assert_eq(cfg.allowed_hosts.count, 0);
    cr_assert_null(cfg.allowed_hosts.items);
    cr_assert_eq(cfg.admin_listen_count, 1);
    cr_assert_str_eq(cfg.admin_listens[0].host, "127.0.0.1");
    cr_assert_eq(cfg.admin_listens[0].port, 9090);
    cr_assert_null(cfg.admin_listens[0].unix_path);
    cr_assert_eq(cfg.no_admin, 0);
    cr_assert_str_eq(cfg.log_level, "info");
    cr_assert_str_eq(cfg.log_format, "text");
    cr_assert_null(cfg.access_log);
    cr_assert_eq(cfg.max_header_size, 8192);
    cr_assert_eq(cfg.request_timeout, 10);
    cr_assert_eq(cfg.write_timeout, 10);
    cr_assert_eq(cfg.idle_timeout, 60);
    cr_assert_eq(cfg.shutdown_grace, grace);
    cr_assert_eq(cfg.max_connections, 10000);
    cr_assert_eq(cfg.token_review_max_connections, 1000);
    cr_assert_eq(cfg.admin_max_connections, 64);
    cr_assert_eq(cfg.handshake_timeout, 5);
    cr_assert_eq(cfg.connection_share, 25);
    cr_assert_eq(cfg.http2_max_streams, 100);
    cr_assert_eq(cfg.http2, 0, "HTTP/2 is opt-in (docs/http2.md)");
}

Test(config, production_defaults)
{
    OK_WITH(NULL);
    production_defaults_are_set(5);
    cr_assert_null(cfg.listens[0].unix_path);
    ok("dev", NULL);
    production_defaults_are_set(0);
    ok("--help", NULL);
    production_defaults_are_set(5);
    ok(VERIFY_ARGS, NULL);
    cr_assert_str_eq(cfg.log_level, "info");
    cr_assert_str_eq(cfg.log_format, "text");
    ok("keys", "--service-account-key-file", "/k", NULL);
    cr_assert_str_eq(cfg.log_level, "info");
}

Test(config, production_every_flag)
{
    OK_WITH("--tls-listen", "0.0.0.0:8443", "--tls-listen", "[::]:8443", TLS_ARGS, "--admin-listen", "127.0.0.1:9100",
            "--admin-listen", "[::1]:9100", "--path-prefix", "/oidc/v1", "--allowed-hosts",
            "A.example.com,b.example.com:8443", "--log-level", "debug", "--log-format", "json", "--access-log",
            "/var/log/oidc/access.log", "--max-request-header-size", "16384", "--request-timeout", "30s",
            "--http2-idle-timeout", "2m", "--shutdown-grace", "0", "--max-connections", "500",
            "--http2-max-concurrent-streams", "250", "--http2", "--write-timeout", "45s",
            "--token-review-max-connections", "20", "--admin-max-connections", "8", NULL);
    cr_assert_eq(cfg.tls_listen_count, 2);
    cr_assert_str_eq(cfg.tls_listens[0].host, "0.0.0.0");
    cr_assert_eq(cfg.tls_listens[0].port, 8443);
    cr_assert_str_eq(cfg.tls_listens[1].host, "::");
    cr_assert_null(cfg.tls_listens[1].unix_path);
    cr_assert_str_eq(cfg.tls_cert_file, "/tls.crt");
    cr_assert_str_eq(cfg.tls_key_file, "/tls.key");
    cr_assert_eq(cfg.admin_listen_count, 2);
    cr_assert_str_eq(cfg.admin_listens[0].host, "127.0.0.1");
    cr_assert_eq(cfg.admin_listens[0].port, 9100);
    cr_assert_str_eq(cfg.admin_listens[1].host, "::1");
    cr_assert_eq(cfg.no_admin, 0);
    cr_assert_str_eq(cfg.path_prefix, "/oidc/v1");
    list_is(&cfg.allowed_hosts, 2, "a.example.com", "b.example.com:8443");
    cr_assert_str_eq(cfg.log_level, "debug");
    cr_assert_str_eq(cfg.log_format, "json");
    cr_assert_str_eq(cfg.access_log, "/var/log/oidc/access.log");
    cr_assert_eq(cfg.max_header_size, 16384);
    cr_assert_eq(cfg.request_timeout, 30);
    cr_assert_eq(cfg.idle_timeout, 120);
    cr_assert_eq(cfg.shutdown_grace, 0);
    cr_assert_eq(cfg.max_connections, 500);
    cr_assert_eq(cfg.http2_max_streams, 250);
    cr_assert_eq(cfg.http2, 1);
    cr_assert_eq(cfg.write_timeout, 45);
    cr_assert_eq(cfg.token_review_max_connections, 20);
    cr_assert_eq(cfg.admin_max_connections, 8);
    /* the public listener is unchanged */
    cr_assert_eq(cfg.listen_count, 1);
    cr_assert_eq(cfg.listens[0].port, 8080);
}

Test(config, production_flags_in_dev_and_equals_form)
{
    ok("dev", "--tls-listen=127.0.0.1:8443", "--tls-cert-file=/c", "--tls-private-key-file=/k", "--path-prefix=/a",
       "--path-prefix=/b", "--access-log=-", "--log-level=warn", "--log-level=error", "--shutdown-grace=5m", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_DEV);
    cr_assert_eq(cfg.tls_listen_count, 1);
    cr_assert_str_eq(cfg.path_prefix, "/b", "the last value wins");
    cr_assert_str_eq(cfg.access_log, "-");
    cr_assert_str_eq(cfg.log_level, "error");
    cr_assert_eq(cfg.shutdown_grace, 300);
    cr_assert_eq(cfg.admin_listen_count, 1);
    cr_assert_eq(cfg.admin_listens[0].port, 9090);
    /* dev's issuer stays plain http on the first --listen */
    cr_assert_str_eq(cfg.issuers.items[0], "http://127.0.0.1:8080");
}

/* ---- --listen unix:/path ---- */

Test(config, listen_unix)
{
    char path107[200], arg[220];

    OK_WITH("--listen", "unix:/run/oidc/http.sock", NULL);
    cr_assert_eq(cfg.listen_count, 1);
    cr_assert_null(cfg.listens[0].host);
    cr_assert_eq(cfg.listens[0].port, 0);
    cr_assert_str_eq(cfg.listens[0].unix_path, "/run/oidc/http.sock");
    OK_WITH("--listen", "127.0.0.1:80", "--listen", "unix:/a.sock", "--listen", "[::1]:80", NULL);
    cr_assert_eq(cfg.listen_count, 3);
    cr_assert_str_eq(cfg.listens[0].host, "127.0.0.1");
    cr_assert_null(cfg.listens[0].unix_path);
    cr_assert_null(cfg.listens[1].host);
    cr_assert_str_eq(cfg.listens[1].unix_path, "/a.sock");
    cr_assert_str_eq(cfg.listens[2].host, "::1");
    /* 107 bytes fit sun_path with its NUL; 108 do not */
    memset(path107, 'a', sizeof path107);
    path107[0] = '/';
    path107[107] = '\0';
    snprintf(arg, sizeof arg, "unix:%s", path107);
    OK_WITH("--listen", arg, NULL);
    cr_assert_eq(strlen(cfg.listens[0].unix_path), 107);
    path107[107] = 'a';
    path107[108] = '\0';
    snprintf(arg, sizeof arg, "unix:%s", path107);
    char want[CONFIG_ERR_MAX];
    snprintf(want, sizeof want, "--listen \"%s\": " UNIX_TOO_LONG, arg);
    flag_fails(want, "--listen", arg);
}

Test(config, listen_unix_errors)
{
    flag_fails("--listen \"unix:rel.sock\": " UNIX_PROBLEM, "--listen", "unix:rel.sock");
    flag_fails("--listen \"unix:\": " UNIX_PROBLEM, "--listen", "unix:");
    flag_fails("--listen \"unix:./x.sock\": " UNIX_PROBLEM, "--listen", "unix:./x.sock");
    flag_fails("--listen \"unix:8080\": " UNIX_PROBLEM, "--listen", "unix:8080");
    /* only --listen takes a Unix socket */
    fails("--tls-listen \"unix:/x\": " LISTEN_FORM, SERVE_ARGS, "--tls-listen", "unix:/x", TLS_ARGS, NULL);
    flag_fails("--admin-listen \"unix:/x\": " LISTEN_FORM, "--admin-listen", "unix:/x");
    fails("--token-review-listen \"unix:/x\": " LISTEN_FORM, SERVE_ARGS, "--enable-token-review",
          "--token-review-listen", "unix:/x", NULL);
    fails("--tls-listen \"unix:rel\": " LISTEN_FORM, SERVE_ARGS, "--tls-listen", "unix:rel", TLS_ARGS, NULL);
}

Test(config, dev_issuer_skips_unix_listens)
{
    ok("dev", "--listen", "unix:/run/dev.sock", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "http://127.0.0.1:8080");
    cr_assert_str_eq(cfg.jwks_uri, "http://127.0.0.1:8080/openid/v1/jwks");
    cr_assert_str_eq(cfg.listens[0].unix_path, "/run/dev.sock");
    ok("dev", "--listen", "unix:/run/dev.sock", "--listen", "localhost:9000", "--listen", "127.0.0.1:9001", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "http://localhost:9000");
    ok("dev", "--listen", "unix:/a.sock", "--listen", "[::1]:9443", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "http://[::1]:9443");
}

/* ---- TLS ---- */

Test(config, tls_rules)
{
    fails(TLS_NEEDS_FILES, SERVE_ARGS, "--tls-listen", "127.0.0.1:8443", NULL);
    fails(TLS_NEEDS_FILES, SERVE_ARGS, "--tls-listen", "127.0.0.1:8443", "--tls-cert-file", "/c", NULL);
    fails(TLS_NEEDS_FILES, SERVE_ARGS, "--tls-listen", "127.0.0.1:8443", "--tls-private-key-file", "/k", NULL);
    fails(TLS_NEEDS_FILES, "dev", "--tls-listen", "127.0.0.1:8443", NULL);
    flag_fails("--tls-cert-file needs --tls-listen", "--tls-cert-file", "/c");
    flag_fails("--tls-private-key-file needs --tls-listen", "--tls-private-key-file", "/k");
    fails("--tls-cert-file needs --tls-listen", SERVE_ARGS, TLS_ARGS, NULL);
    fails("--tls-private-key-file needs --tls-listen", "dev", "--tls-private-key-file", "/k", NULL);
    ok("dev", "--tls-listen", "[::1]:8443", TLS_ARGS, NULL);
    cr_assert_str_eq(cfg.tls_listens[0].host, "::1");
}

Test(config, tls_value_errors)
{
    fails("--tls-listen \"nope\": " LISTEN_FORM, SERVE_ARGS, "--tls-listen", "nope", TLS_ARGS, NULL);
    fails("--tls-listen \"127.0.0.1:65536\": must have a port between 0 and 65535", SERVE_ARGS, "--tls-listen",
          "127.0.0.1:65536", TLS_ARGS, NULL);
    fails("--tls-listen \":1\": has no host; did you mean 0.0.0.0:1 (every IPv4 address) or 127.0.0.1:1 (this host "
          "only)?",
          SERVE_ARGS, "--tls-listen", ":1", TLS_ARGS, NULL);
    /* a bad value is reported before the missing files */
    flag_fails("--tls-listen \"[zz]:1\": has an invalid host", "--tls-listen", "[zz]:1");
    flag_fails("--tls-cert-file \"\": must not be empty", "--tls-cert-file", "");
    flag_fails("--tls-private-key-file \"\": must not be empty", "--tls-private-key-file", "");
    fails("--tls-listen: missing value", "--tls-listen", NULL);
}

/* ---- admin listener and listener clashes ---- */

/* A server that serves only over TLS turns its plain-http listener off;
 * without TLS, or for dev (plain http by design), that leaves nothing. */
Test(config, listen_none)
{
    OK_WITH("--listen", "none", "--tls-listen", "127.0.0.1:8443", "--tls-cert-file", "/c", "--tls-private-key-file",
            "/k", NULL);
    cr_assert_eq(cfg.listen_count, 0);
    cr_assert_eq(cfg.tls_listen_count, 1);
    fails("--listen none needs --tls-listen: the documents must be served somewhere", SERVE_ARGS, "--listen", "none",
          NULL);
    fails("dev serves its documents over plain http: --listen none would leave it nothing to serve", "dev", "--listen",
          "none", NULL);
    fails("--listen none cannot be combined with addresses", SERVE_ARGS, "--listen", "none", "--listen", "127.0.0.1:1",
          NULL);
}

Test(config, admin_listen_none)
{
    OK_WITH("--admin-listen", "none", NULL);
    cr_assert_eq(cfg.no_admin, 1);
    cr_assert_eq(cfg.admin_listen_count, 0);
    cr_assert_null(cfg.admin_listens);
    ok("dev", "--admin-listen", "none", NULL);
    cr_assert_eq(cfg.no_admin, 1);
    /* none frees 127.0.0.1:9090 for a public listener */
    OK_WITH("--admin-listen", "none", "--listen", "127.0.0.1:9090", NULL);
    cr_assert_eq(cfg.listens[0].port, 9090);
    fails(ADMIN_NONE_ALONE, SERVE_ARGS, "--admin-listen", "none", "--admin-listen", "127.0.0.1:9091", NULL);
    fails(ADMIN_NONE_ALONE, SERVE_ARGS, "--admin-listen", "127.0.0.1:9091", "--admin-listen", "none", NULL);
    fails(ADMIN_NONE_ALONE, "dev", "--admin-listen", "none", "--admin-listen", "none", NULL);
    /* spelled exactly */
    flag_fails("--admin-listen \"None\": " LISTEN_FORM, "--admin-listen", "None");
    flag_fails("--admin-listen \"\": " LISTEN_FORM, "--admin-listen", "");
    flag_fails("--admin-listen \"127.0.0.1:99999\": must have a port between 0 and 65535", "--admin-listen",
               "127.0.0.1:99999");
}

Test(config, listener_clashes)
{
    /* the default admin address against a public one */
    flag_fails("--admin-listen \"127.0.0.1:9090\": must differ from every --listen address", "--listen",
               "127.0.0.1:9090");
    fails("--admin-listen \"127.0.0.1:9090\": must differ from every --listen address", "dev", "--listen",
          "127.0.0.1:9090", NULL);
    /* tls against listen, case-insensitively */
    fails("--tls-listen \"127.0.0.1:8443\": must differ from every --listen address", SERVE_ARGS, "--listen",
          "127.0.0.1:8443", "--tls-listen", "127.0.0.1:8443", TLS_ARGS, NULL);
    fails("--tls-listen \"LOCALHOST:8443\": must differ from every --listen address", SERVE_ARGS, "--listen",
          "localhost:8443", "--tls-listen", "127.0.0.1:9443", "--tls-listen", "LOCALHOST:8443", TLS_ARGS, NULL);
    /* token review against tls; against listen as before */
    fails("--token-review-listen \"127.0.0.1:8443\": must differ from every --tls-listen address", SERVE_ARGS,
          "--tls-listen", "127.0.0.1:8443", TLS_ARGS, "--enable-token-review", "--token-review-listen",
          "127.0.0.1:8443", NULL);
    fails("--token-review-listen \"127.0.0.1:8080\": " MUST_DIFFER, SERVE_ARGS, "--enable-token-review",
          "--token-review-listen", "127.0.0.1:8080", NULL);
    /* admin against each */
    fails("--admin-listen \"127.0.0.1:8080\": must differ from every --listen address", SERVE_ARGS, "--admin-listen",
          "127.0.0.1:8080", NULL);
    fails("--admin-listen \"[::1]:8443\": must differ from every --tls-listen address", SERVE_ARGS, "--tls-listen",
          "[::1]:8443", TLS_ARGS, "--admin-listen", "[::1]:8443", NULL);
    fails("--admin-listen \"127.0.0.1:7000\": must differ from every --token-review-listen address", SERVE_ARGS,
          "--enable-token-review", "--token-review-listen", "127.0.0.1:7000", "--admin-listen", "127.0.0.1:9091",
          "--admin-listen", "127.0.0.1:7000", NULL);
    /* the same port on other hosts, and other ports on one host, are fine */
    OK_WITH("--listen", "127.0.0.1:80", "--tls-listen", "127.0.0.1:443", TLS_ARGS, "--enable-token-review",
            "--token-review-listen", "127.0.0.1:8443", "--admin-listen", "10.0.0.1:80", "--admin-listen", "[::1]:443",
            REVIEW_CALLERS, NULL);
    cr_assert_eq(cfg.admin_listen_count, 2);
    /* a Unix socket clashes with no TCP address */
    OK_WITH("--listen", "unix:/127.0.0.1:9090", NULL);
    cr_assert_str_eq(cfg.listens[0].unix_path, "/127.0.0.1:9090");
}

/* Port 0 asks the kernel for a free port (the server logs the one it got),
 * on every kind of listener; two such addresses never clash, since each
 * socket gets a port of its own. */
Test(config, listen_port_zero)
{
    OK_WITH("--listen", "127.0.0.1:0", "--listen", "[::1]:0", "--tls-listen", "127.0.0.1:0", TLS_ARGS,
            "--enable-token-review", "--token-review-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
            REVIEW_CALLERS, NULL);
    cr_assert_eq(cfg.listen_count, 2);
    cr_assert_str_eq(cfg.listens[0].host, "127.0.0.1");
    cr_assert_eq(cfg.listens[0].port, 0);
    cr_assert_str_eq(cfg.listens[1].host, "::1");
    cr_assert_eq(cfg.listens[1].port, 0);
    cr_assert_eq(cfg.tls_listens[0].port, 0);
    cr_assert_eq(cfg.token_review_listens[0].port, 0);
    cr_assert_eq(cfg.admin_listens[0].port, 0);
    /* a fixed port still clashes, with port 0 beside it */
    fails("--admin-listen \"127.0.0.1:9\": " MUST_DIFFER, SERVE_ARGS, "--listen", "127.0.0.1:0", "--listen",
          "127.0.0.1:9", "--admin-listen", "127.0.0.1:9", NULL);
    ok("dev", "--listen", "127.0.0.1:0", "--service-account-issuer", "http://127.0.0.1:8080", NULL);
    cr_assert_eq(cfg.listens[0].port, 0);
}

/* dev derives its issuer from the first --listen address, which a port the
 * kernel picks later cannot give. */
Test(config, dev_issuer_needs_a_fixed_port)
{
    fails("--listen \"127.0.0.1:0\": dev's issuer is http:// on this address, so it needs a port other than 0 (or "
          "give --service-account-issuer)",
          "dev", "--listen", "127.0.0.1:0", NULL);
    ok("dev", "--listen", "unix:/run/dev.sock", "--listen", "localhost:9000", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "http://localhost:9000");
}

Test(config, listener_rules_come_before_clashes)
{
    fails(LISTEN_NEEDS_REVIEW, SERVE_ARGS, "--token-review-listen", "127.0.0.1:8080", NULL);
    fails(TLS_NEEDS_FILES, SERVE_ARGS, "--tls-listen", "127.0.0.1:8080", NULL);
}

/* ---- --path-prefix ---- */

Test(config, path_prefix_valid)
{
    char long_prefix[300];
    const char *good[] = {"/oidc",        "/a/b/c", "/tenant-1/oidc_x.y~z",
                          "/a%20b",       "/a%2Fb", "/a:b@c",
                          "/!$&'()*+,;=", "/..a",   "/a.",
                          "/.well",       "/...",   "/A/B"};

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        OK_WITH("--path-prefix", good[i], NULL);
        cr_assert_str_eq(cfg.path_prefix, good[i]);
    }
    memset(long_prefix, 'p', sizeof long_prefix);
    long_prefix[0] = '/';
    long_prefix[256] = '\0';
    OK_WITH("--path-prefix", long_prefix, NULL);
    cr_assert_eq(strlen(cfg.path_prefix), 256);
    long_prefix[256] = 'p';
    long_prefix[257] = '\0';
    char want[CONFIG_ERR_MAX];
    snprintf(want, sizeof want, "--path-prefix \"%s\": " PREFIX_PROBLEM, long_prefix);
    flag_fails(want, "--path-prefix", long_prefix);
}

Test(config, path_prefix_invalid)
{
    const char *bad[][2] = {{"", "\"\""},
                            {"/", "\"/\""},
                            {"p", "\"p\""},
                            {"oidc/", "\"oidc/\""},
                            {"/oidc/", "\"/oidc/\""},
                            {"//oidc", "\"//oidc\""},
                            {"/a//b", "\"/a//b\""},
                            {"/.", "\"/.\""},
                            {"/..", "\"/..\""},
                            {"/./a", "\"/./a\""},
                            {"/a/.", "\"/a/.\""},
                            {"/a/../b", "\"/a/../b\""},
                            {"/a b", "\"/a b\""},
                            {"/a?b", "\"/a?b\""},
                            {"/a#b", "\"/a#b\""},
                            {"/a%2", "\"/a%2\""},
                            {"/a%zz", "\"/a%zz\""},
                            {"/a\\b", "\"/a\\\\b\""},
                            {"/[x]", "\"/[x]\""},
                            {"/a\"b", "\"/a\\\"b\""},
                            {"/\xc3\xa4", "\"/\\xc3\\xa4\""},
                            {"https://a.example/p", "\"https://a.example/p\""}};
    char want[CONFIG_ERR_MAX];

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(want, sizeof want, "--path-prefix %s: " PREFIX_PROBLEM, bad[i][1]);
        flag_fails(want, "--path-prefix", bad[i][0]);
    }
}

/* ---- --allowed-hosts ---- */

Test(config, allowed_hosts)
{
    OK_WITH("--allowed-hosts", "a.example.com,b.example.com:8443", NULL);
    list_is(&cfg.allowed_hosts, 2, "a.example.com", "b.example.com:8443");
    OK_WITH("--allowed-hosts", "OIDC.Example.COM,LocalHost:8080,[FE80::1]:443", NULL);
    list_is(&cfg.allowed_hosts, 3, "oidc.example.com", "localhost:8080", "[fe80::1]:443");
    OK_WITH("--allowed-hosts", "127.0.0.1,[::1],127.0.0.1:65535,my_host.internal.", NULL);
    list_is(&cfg.allowed_hosts, 4, "127.0.0.1", "[::1]", "127.0.0.1:65535", "my_host.internal.");
    /* repeated flags are joined in order */
    OK_WITH("--allowed-hosts", "a,b", "--allowed-hosts", "C:1", NULL);
    list_is(&cfg.allowed_hosts, 3, "a", "b", "c:1");
    ok("dev", "--allowed-hosts", "localhost:8080", NULL);
    list_is(&cfg.allowed_hosts, 1, "localhost:8080");
}

Test(config, allowed_hosts_errors)
{
    char long_host[300], want[CONFIG_ERR_MAX];
    const char *bad[][2] = {{"a b", "\"a b\""},
                            {"", "\"\""},
                            {",", "\",\""},
                            {"a,,b", "\"a,,b\""},
                            {"a,", "\"a,\""},
                            {",a", "\",a\""},
                            {"a:0", "\"a:0\""},
                            {"a:65536", "\"a:65536\""},
                            {"a:", "\"a:\""},
                            {"a:x", "\"a:x\""},
                            {"a:1:2", "\"a:1:2\""},
                            {":80", "\":80\""},
                            {"::1", "\"::1\""},
                            {"[::1", "\"[::1\""},
                            {"[zz]", "\"[zz]\""},
                            {"[]", "\"[]\""},
                            {"[::1]x", "\"[::1]x\""},
                            {"[::1]:", "\"[::1]:\""},
                            {"a/b", "\"a/b\""},
                            {"*.example.com", "\"*.example.com\""},
                            {"https://a.example", "\"https://a.example\""},
                            {"u@a.example", "\"u@a.example\""}};

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(want, sizeof want, "--allowed-hosts %s: " HOSTS_PROBLEM, bad[i][1]);
        flag_fails(want, "--allowed-hosts", bad[i][0]);
    }
    memset(long_host, 'h', sizeof long_host);
    long_host[253] = '\0';
    OK_WITH("--allowed-hosts", long_host, NULL);
    cr_assert_eq(strlen(cfg.allowed_hosts.items[0]), 253);
    long_host[253] = 'h';
    long_host[254] = '\0';
    snprintf(want, sizeof want, "--allowed-hosts \"%s\": " HOSTS_PROBLEM, long_host);
    flag_fails(want, "--allowed-hosts", long_host);
}

/* ---- logging ---- */

Test(config, log_level_and_format)
{
    const char *levels[] = {"error", "warn", "info", "debug"};

    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        OK_WITH("--log-level", levels[i], NULL);
        cr_assert_str_eq(cfg.log_level, levels[i]);
    }
    OK_WITH("--log-format", "json", NULL);
    cr_assert_str_eq(cfg.log_format, "json");
    OK_WITH("--log-format", "text", NULL);
    cr_assert_str_eq(cfg.log_format, "text");
}

Test(config, logging_flags_for_verify_and_keys)
{
    ok(VERIFY_ARGS, "--log-level", "debug", "--log-format", "json", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERIFY);
    cr_assert_str_eq(cfg.log_level, "debug");
    cr_assert_str_eq(cfg.log_format, "json");
    ok("keys", "--service-account-key-file", "/k", "--log-level", "error", "--log-format", "json", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_KEYS);
    cr_assert_str_eq(cfg.log_level, "error");
    cr_assert_str_eq(cfg.log_format, "json");
    fails("--log-level \"loud\": " LOG_LEVEL_PROBLEM, VERIFY_ARGS, "--log-level", "loud", NULL);
    fails("--log-level" NOT_FOR_TOKEN, TOKEN_ARGS, "--log-level", "debug", NULL);
    fails("--log-format" NOT_FOR_TOKEN, TOKEN_ARGS, "--log-format", "json", NULL);
}

Test(config, access_log)
{
    OK_WITH("--access-log", "-", NULL);
    cr_assert_str_eq(cfg.access_log, "-");
    OK_WITH("--access-log", "/var/log/access.log", NULL);
    cr_assert_str_eq(cfg.access_log, "/var/log/access.log");
    flag_fails("--access-log \"\": must not be empty", "--access-log", "");
}

/* ---- limits and timeouts ---- */

Test(config, production_number_limits)
{
    OK_WITH("--max-request-header-size", "1024", "--max-connections", "1", "--http2-max-concurrent-streams", "1",
            "--request-timeout", "1s", "--http2-idle-timeout", "1", "--shutdown-grace", "0s", "--write-timeout", "1",
            "--token-review-max-connections", "1", "--admin-max-connections", "1", NULL);
    cr_assert_eq(cfg.max_header_size, 1024);
    cr_assert_eq(cfg.max_connections, 1);
    cr_assert_eq(cfg.write_timeout, 1);
    cr_assert_eq(cfg.token_review_max_connections, 1);
    cr_assert_eq(cfg.admin_max_connections, 1);
    cr_assert_eq(cfg.http2_max_streams, 1);
    cr_assert_eq(cfg.request_timeout, 1);
    cr_assert_eq(cfg.idle_timeout, 1);
    cr_assert_eq(cfg.shutdown_grace, 0);
    OK_WITH("--max-request-header-size", "65536", "--max-connections", "1000000", "--http2-max-concurrent-streams",
            "1000", "--request-timeout", "5m", "--http2-idle-timeout", "1h", "--shutdown-grace", "300",
            "--write-timeout", "5m", "--token-review-max-connections", "1000000", "--admin-max-connections", "1000000",
            NULL);
    cr_assert_eq(cfg.max_header_size, 65536);
    cr_assert_eq(cfg.max_connections, 1000000);
    cr_assert_eq(cfg.write_timeout, 300);
    cr_assert_eq(cfg.token_review_max_connections, 1000000);
    cr_assert_eq(cfg.admin_max_connections, 1000000);
    cr_assert_eq(cfg.http2_max_streams, 1000);
    cr_assert_eq(cfg.request_timeout, 300);
    cr_assert_eq(cfg.idle_timeout, 3600);
    cr_assert_eq(cfg.shutdown_grace, 300);
}

/* ---- production serving in the config file ---- */

Test(config, file_production_keys)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\",\n"
               " \"listen\": [\"unix:/run/oidc.sock\", \"127.0.0.1:8080\"],\n"
               " \"tls-listen\": [\"0.0.0.0:8443\", \"[::]:8443\"], \"tls-cert-file\": \"/c.pem\",\n"
               " \"tls-private-key-file\": \"/k.pem\", \"admin-listen\": \"127.0.0.1:9100\",\n"
               " \"path-prefix\": \"/oidc\", \"allowed-hosts\": [\"A.example,b.example:8443\", \"[::1]\"],\n"
               " \"log-level\": \"warn\", \"log-format\": \"json\", \"access-log\": \"-\",\n"
               " \"max-request-header-size\": 2048, \"request-timeout\": \"20s\", \"http2-idle-timeout\": 120,\n"
               " \"shutdown-grace\": \"1m\", \"max-connections\": 64, \"http2-max-concurrent-streams\": 8,\n"
               " \"http2\": true, \"write-timeout\": \"30s\", \"token-review-max-connections\": 16,\n"
               " \"admin-max-connections\": 4}");
    ok("--config", path, NULL);
    cr_assert_eq(cfg.listen_count, 2);
    cr_assert_str_eq(cfg.listens[0].unix_path, "/run/oidc.sock");
    cr_assert_null(cfg.listens[0].host);
    cr_assert_str_eq(cfg.listens[1].host, "127.0.0.1");
    cr_assert_eq(cfg.tls_listen_count, 2);
    cr_assert_str_eq(cfg.tls_listens[1].host, "::");
    cr_assert_str_eq(cfg.tls_cert_file, "/c.pem");
    cr_assert_str_eq(cfg.tls_key_file, "/k.pem");
    cr_assert_eq(cfg.admin_listen_count, 1);
    cr_assert_eq(cfg.admin_listens[0].port, 9100);
    cr_assert_str_eq(cfg.path_prefix, "/oidc");
    list_is(&cfg.allowed_hosts, 3, "a.example", "b.example:8443", "[::1]");
    cr_assert_str_eq(cfg.log_level, "warn");
    cr_assert_str_eq(cfg.log_format, "json");
    cr_assert_str_eq(cfg.access_log, "-");
    cr_assert_eq(cfg.max_header_size, 2048);
    cr_assert_eq(cfg.request_timeout, 20);
    cr_assert_eq(cfg.idle_timeout, 120);
    cr_assert_eq(cfg.shutdown_grace, 60);
    cr_assert_eq(cfg.max_connections, 64);
    cr_assert_eq(cfg.http2_max_streams, 8);
    cr_assert_eq(cfg.http2, 1);
    cr_assert_eq(cfg.write_timeout, 30);
    cr_assert_eq(cfg.token_review_max_connections, 16);
    cr_assert_eq(cfg.admin_max_connections, 4);
    /* flags replace the file's lists and values */
    ok("--config", path, "--tls-listen", "127.0.0.1:9443", "--allowed-hosts", "c.example", "--admin-listen", "none",
       "--log-level", "debug", "--request-timeout", "1m", "--admin-max-connections", "2", NULL);
    cr_assert_eq(cfg.tls_listen_count, 1);
    cr_assert_eq(cfg.tls_listens[0].port, 9443);
    list_is(&cfg.allowed_hosts, 1, "c.example");
    cr_assert_eq(cfg.no_admin, 1);
    cr_assert_eq(cfg.admin_listen_count, 0);
    cr_assert_str_eq(cfg.log_level, "debug");
    cr_assert_eq(cfg.request_timeout, 60);
    cr_assert_eq(cfg.admin_max_connections, 2);
}

Test(config, file_admin_listen_none)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\","
               " \"admin-listen\": \"none\"}");
    ok("--config", path, NULL);
    cr_assert_eq(cfg.no_admin, 1);
    cr_assert_null(cfg.admin_listens);
    ok("--config", path, "--admin-listen", "127.0.0.1:9", NULL);
    cr_assert_eq(cfg.no_admin, 0);
    cr_assert_eq(cfg.admin_listens[0].port, 9);
    write_file("{\"admin-listen\": [\"none\", \"127.0.0.1:9\"]}");
    fails(ADMIN_NONE_ALONE, "dev", "--config", path, NULL);
}

Test(config, file_production_rules)
{
    char want[CONFIG_ERR_MAX];

    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\","
               " \"tls-listen\": \"127.0.0.1:8080\"}");
    fails(TLS_NEEDS_FILES, "--config", path, NULL);
    snprintf(want, sizeof want, "config file %s: key \"tls-listen\": must differ from every --listen address", path);
    fails(want, "--config", path, TLS_ARGS, NULL);
    ok("--config", path, TLS_ARGS, "--listen", "127.0.0.1:80", NULL);
    cr_assert_eq(cfg.tls_listens[0].port, 8080);
    /* keys reads serve's file but opens no listener, so the serving rules are not its */
    ok("keys", "--config", path, NULL);
    cr_assert_eq(cmd, CONFIG_CMD_KEYS);
    write_file("{\"service-account-key-file\": \"/k\", \"listen\": \"127.0.0.1:9090\"}");
    ok("keys", "--config", path, NULL);
    snprintf(want, sizeof want, "--admin-listen \"127.0.0.1:9090\": must differ from every --listen address");
    fails(want, "dev", "--config", path, NULL);
}

Test(config, verify_shares_the_production_config_file)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\",\n"
               " \"tls-listen\": \"127.0.0.1:8443\", \"log-level\": \"debug\", \"path-prefix\": \"/oidc\"}");
    ok("verify", "--config", path, "--token-file", "-", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERIFY);
    cr_assert_str_eq(cfg.log_level, "debug");
}

Test(config, usage_lists_production_serving)
{
    static const char *const want[] = {"\nListeners:\n",
                                       "--listen unix:/path",
                                       "--tls-listen HOST:PORT",
                                       "--tls-cert-file PATH",
                                       "--tls-private-key-file PATH",
                                       "--admin-listen HOST:PORT|none",
                                       "default 127.0.0.1:9090; none: no admin listener",
                                       "--path-prefix /PATH",
                                       "--allowed-hosts LIST",
                                       "(default: any host)",
                                       "--log-level LEVEL",
                                       "error, warn, info or debug (default info)",
                                       "--log-format FORMAT",
                                       "text or json (default text)",
                                       "--access-log PATH",
                                       "\nLimits and timeouts:\n",
                                       "--max-request-header-size BYTES",
                                       "1024 to 65536 (default 8192)",
                                       "--request-timeout DURATION",
                                       "1s to 5m (default 10s)",
                                       "--http2-idle-timeout DURATION",
                                       "1s to 1h (default 60s)",
                                       "--shutdown-grace DURATION",
                                       "0 to 5m (default 5s)",
                                       "--max-connections N",
                                       "1 to 1000000; more are closed at once (default 10000)",
                                       "--token-review-max-connections N",
                                       "1000000; more are closed at once (default 1000)",
                                       "--admin-max-connections N",
                                       "closed at once (default 64)",
                                       "--write-timeout DURATION",
                                       "response for this long, 1s to 5m (default 10s)",
                                       "--http2-max-concurrent-streams N",
                                       "1 to 1000 (default 100)",
                                       "--http2 ",
                                       "(default off: HTTP/1.1 only)",
                                       NULL};

    help_has(CONFIG_CMD_SERVE, want);
}
