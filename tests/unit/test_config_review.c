/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: token verification settings and the TokenReview
 * listener. Error messages are asserted word for word since operators read
 * them; config_test_support.h holds the parse helpers.
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

/* ---- token verification settings ---- */

Test(config, api_audiences_comma_list)
{
    OK_WITH("--api-audiences", "vault,https://kubernetes.default.svc", NULL);
    list_is(&cfg.api_audiences, 2, "vault", "https://kubernetes.default.svc");
    OK_WITH("--api-audiences=vault", NULL);
    list_is(&cfg.api_audiences, 1, "vault");
    /* audiences are taken as given: no trimming, duplicates kept */
    OK_WITH("--api-audiences", " a,a", NULL);
    list_is(&cfg.api_audiences, 2, " a", "a");
}

Test(config, api_audiences_repeated_flags_concatenate)
{
    OK_WITH("--api-audiences", "a,b", "--api-audiences", "c", "--api-audiences", "d,e", NULL);
    list_is(&cfg.api_audiences, 5, "a", "b", "c", "d", "e");
}

Test(config, api_audiences_errors)
{
    /* a later good value does not hide an earlier bad one */
    fails("--api-audiences \"a,,b\": " AUDIENCES_PROBLEM, SERVE_ARGS, "--api-audiences", "a,,b", "--api-audiences", "c",
          NULL);
}

Test(config, token_leeway)
{
    const struct {
        const char *value;
        unsigned long want;
    } good[] = {{"0", 0}, {"90s", 90}, {"15m", 900}, {"1h", 3600}, {"3600", 3600}};

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        OK_WITH("--token-leeway", good[i].value, NULL);
        cr_assert_eq(cfg.token_leeway, good[i].want, "%s", good[i].value);
    }
}

Test(config, max_token_size)
{
    OK_WITH("--max-token-size", "256", NULL);
    cr_assert_eq(cfg.max_token_size, 256);
    OK_WITH("--max-token-size", "1048576", NULL);
    cr_assert_eq(cfg.max_token_size, 1048576);
}

Test(config, accept_legacy_tokens)
{
    OK_WITH("--accept-legacy-tokens", NULL);
    cr_assert_eq(cfg.accept_legacy_tokens, 1);
    fails("--accept-legacy-tokens: does not take a value", SERVE_ARGS, "--accept-legacy-tokens=true", NULL);
}

Test(config, token_review_enabled)
{
    OK_WITH("--enable-token-review", "--token-review-listen", "127.0.0.1:8443", "--token-review-listen", "[::1]:8443",
            REVIEW_CALLERS, NULL);
    cr_assert_eq(cfg.enable_token_review, 1);
    cr_assert_eq(cfg.token_review_listen_count, 2);
    cr_assert_str_eq(cfg.token_review_listens[0].host, "127.0.0.1");
    cr_assert_eq(cfg.token_review_listens[0].port, 8443);
    cr_assert_str_eq(cfg.token_review_listens[1].host, "::1");
    cr_assert_eq(cfg.token_review_listens[1].port, 8443);
    cr_assert_eq(cfg.listen_count, 1, "the public listener is unchanged");
    cr_assert_eq(cfg.listens[0].port, 8080);
    /* the same host on another port, and the same port on another host */
    OK_WITH("--enable-token-review", "--token-review-listen", "127.0.0.1:8081", "--token-review-listen",
            "10.0.0.1:8080", REVIEW_CALLERS, NULL);
    cr_assert_eq(cfg.token_review_listen_count, 2);
    ok("dev", "--enable-token-review", "--token-review-listen", "localhost:9443", REVIEW_CALLERS, NULL);
    cr_assert_eq(cfg.token_review_listens[0].port, 9443);
}

Test(config, token_review_rules)
{
    fails(REVIEW_NEEDS_LISTEN, SERVE_ARGS, "--enable-token-review", NULL);
    fails(REVIEW_NEEDS_LISTEN, "dev", "--enable-token-review", NULL);
    flag_fails(LISTEN_NEEDS_REVIEW, "--token-review-listen", "127.0.0.1:8443");
    fails(LISTEN_NEEDS_REVIEW, "dev", "--token-review-listen", "127.0.0.1:8443", NULL);
    fails(LISTEN_NEEDS_REVIEW, "keys", "--service-account-key-file", "/k", "--token-review-listen", "127.0.0.1:1",
          NULL);
}

Test(config, token_review_listen_must_differ)
{
    /* from the default --listen */
    fails("--token-review-listen \"127.0.0.1:8080\": " MUST_DIFFER, SERVE_ARGS, "--enable-token-review",
          "--token-review-listen", "127.0.0.1:8080", NULL);
    /* from any of several, the second token-review address being the bad one */
    fails("--token-review-listen \"[::1]:9000\": " MUST_DIFFER, SERVE_ARGS, "--listen", "0.0.0.0:80", "--listen",
          "[::1]:9000", "--enable-token-review", "--token-review-listen", "127.0.0.1:9000", "--token-review-listen",
          "[::1]:9000", NULL);
    /* host names compare without regard to case */
    fails("--token-review-listen \"LocalHost:80\": " MUST_DIFFER, SERVE_ARGS, "--listen", "localhost:80",
          "--enable-token-review", "--token-review-listen", "LocalHost:80", NULL);
    fails("--token-review-listen \"127.0.0.1:9\": " MUST_DIFFER, "dev", "--listen", "127.0.0.1:9",
          "--enable-token-review", "--token-review-listen", "127.0.0.1:9", NULL);
}

Test(config, token_review_listen_syntax)
{
    fails("--token-review-listen \"nope\": must be HOST:PORT, or [ADDRESS]:PORT for IPv6", SERVE_ARGS,
          "--enable-token-review", "--token-review-listen", "nope", NULL);
    fails("--token-review-listen \"127.0.0.1:x\": must have a port between 0 and 65535", SERVE_ARGS,
          "--enable-token-review", "--token-review-listen", "127.0.0.1:x", NULL);
    fails("--token-review-listen \"[zz]:1\": has an invalid host", SERVE_ARGS, "--enable-token-review",
          "--token-review-listen", "[zz]:1", NULL);
    /* a bad value is reported before the missing --enable-token-review */
    flag_fails("--token-review-listen \":1\": has no host; did you mean 0.0.0.0:1 (every IPv4 address) or 127.0.0.1:1 "
               "(this host only)?",
               "--token-review-listen", ":1");
}

Test(config, file_token_verification_keys)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\",\n"
               " \"api-audiences\": [\"vault,aws\", \"gcp\"], \"token-leeway\": \"2m\", \"max-token-size\": 4096,\n"
               " \"accept-legacy-tokens\": true, \"enable-token-review\": true, " REVIEW_CALLERS_JSON ",\n"
               " \"token-review-listen\": [\"127.0.0.1:8443\", \"127.0.0.1:8444\"]}");
    ok("--config", path, NULL);
    list_is(&cfg.api_audiences, 3, "vault", "aws", "gcp");
    cr_assert_eq(cfg.token_leeway, 120);
    cr_assert_eq(cfg.max_token_size, 4096);
    cr_assert_eq(cfg.accept_legacy_tokens, 1);
    cr_assert_eq(cfg.enable_token_review, 1);
    cr_assert_eq(cfg.token_review_listen_count, 2);
    cr_assert_eq(cfg.token_review_listens[1].port, 8444);
    /* flags replace the file's lists rather than adding to them */
    ok("--config", path, "--api-audiences", "x,y", "--token-review-listen", "127.0.0.1:9", "--token-leeway", "0", NULL);
    list_is(&cfg.api_audiences, 2, "x", "y");
    cr_assert_eq(cfg.token_review_listen_count, 1);
    cr_assert_eq(cfg.token_review_listens[0].port, 9);
    cr_assert_eq(cfg.token_leeway, 0);
}

Test(config, file_token_verification_scalars)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\",\n"
               " \"api-audiences\": \"vault,aws\", \"token-leeway\": 30, \"token-review-listen\": \"[::1]:8443\",\n"
               " \"enable-token-review\": true, \"accept-legacy-tokens\": false, " REVIEW_CALLERS_JSON "}");
    ok("--config", path, NULL);
    list_is(&cfg.api_audiences, 2, "vault", "aws");
    cr_assert_eq(cfg.token_leeway, 30);
    cr_assert_eq(cfg.accept_legacy_tokens, 0);
    cr_assert_eq(cfg.token_review_listen_count, 1);
    cr_assert_str_eq(cfg.token_review_listens[0].host, "::1");
}

Test(config, file_token_review_rules)
{
    char want[CONFIG_ERR_MAX];

    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\","
               " \"enable-token-review\": true}");
    fails(REVIEW_NEEDS_LISTEN, "--config", path, NULL);
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\","
               " \"enable-token-review\": true, \"token-review-listen\": \"127.0.0.1:8080\", " REVIEW_CALLERS_JSON "}");
    snprintf(want, sizeof want, "config file %s: key \"token-review-listen\": " MUST_DIFFER, path);
    fails(want, "--config", path, NULL);
    ok("--config", path, "--listen", "127.0.0.1:80", NULL);
    cr_assert_eq(cfg.token_review_listens[0].port, 8080);
}

/* ---- the TokenReview listener's TLS and callers ---- */

#define REVIEW_ON  "--enable-token-review", "--token-review-listen", "127.0.0.1:8443"
#define REVIEW_TLS "--token-review-tls-cert-file", "/r.crt", "--token-review-tls-private-key-file", "/r.key"
#define VAULT_SA   "system:serviceaccount:vault:vault-auth"
#define NEEDS_TLS                                                                                                      \
    "--enable-token-review needs --token-review-tls-cert-file and --token-review-tls-private-key-file: callers send "  \
    "bearer tokens (plain HTTP, for development only: --token-review-insecure-http)"
#define NEEDS_CALLERS                                                                                                  \
    "--enable-token-review needs --token-review-allowed-callers NAME: nobody may call the TokenReview API otherwise "  \
    "(a service account, system:serviceaccount:vault:vault-auth, or with --token-review-client-ca-file a "             \
    "certificate subject, CN=vault,O=example)"
#define CALLER_PROBLEM                                                                                                 \
    "must be a service account's username, system:serviceaccount:NAMESPACE:NAME, or a client certificate's subject "   \
    "in RFC 4514 form, such as CN=vault,O=example"

Test(config, token_review_tls_and_callers)
{
    OK_WITH(REVIEW_ON, REVIEW_TLS, "--token-review-client-ca-file", "/ca.crt", "--token-review-allowed-callers",
            VAULT_SA, "--token-review-allowed-callers", "CN=vault\\, Inc.,O=example+OU=ops",
            "--token-review-caller-audiences", "reviewers,https://kubernetes.default.svc", NULL);
    cr_assert_str_eq(cfg.token_review_tls_cert_file, "/r.crt");
    cr_assert_str_eq(cfg.token_review_tls_key_file, "/r.key");
    cr_assert_str_eq(cfg.token_review_client_ca_file, "/ca.crt");
    cr_assert_eq(cfg.token_review_insecure_http, 0);
    /* one caller per flag, as given: a subject holds commas */
    list_is(&cfg.token_review_allowed_callers, 2, VAULT_SA, "CN=vault\\, Inc.,O=example+OU=ops");
    list_is(&cfg.token_review_caller_audiences, 2, "reviewers", "https://kubernetes.default.svc");
    /* plain HTTP when asked for by name; the client CA is optional */
    ok("dev", REVIEW_ON, "--token-review-insecure-http", "--token-review-allowed-callers", VAULT_SA, NULL);
    cr_assert_eq(cfg.token_review_insecure_http, 1);
    cr_assert_null(cfg.token_review_tls_cert_file);
    cr_assert_null(cfg.token_review_client_ca_file);
    cr_assert_eq(cfg.token_review_caller_audiences.count, 0, "empty: the API audiences");
    /* keys takes serve's config file but opens no listener: not its rules */
    ok("keys", "--service-account-key-file", "/k", REVIEW_ON, NULL);
    cr_assert_eq(cfg.enable_token_review, 1);
}

Test(config, token_review_callers_rules)
{
    fails(NEEDS_TLS, SERVE_ARGS, REVIEW_ON, "--token-review-allowed-callers", VAULT_SA, NULL);
    fails(NEEDS_TLS, "dev", REVIEW_ON, "--token-review-allowed-callers", VAULT_SA, NULL);
    fails(NEEDS_CALLERS, SERVE_ARGS, REVIEW_ON, REVIEW_TLS, NULL);
    fails(NEEDS_CALLERS, SERVE_ARGS, REVIEW_ON, "--token-review-insecure-http", NULL);
    fails("--token-review-tls-cert-file and --token-review-tls-private-key-file go together", SERVE_ARGS, REVIEW_ON,
          "--token-review-tls-cert-file", "/r.crt", "--token-review-allowed-callers", VAULT_SA, NULL);
    fails("--token-review-tls-cert-file and --token-review-tls-private-key-file go together", SERVE_ARGS, REVIEW_ON,
          "--token-review-tls-private-key-file", "/r.key", "--token-review-insecure-http", NULL);
    fails("--token-review-insecure-http and --token-review-tls-cert-file are mutually exclusive: the TokenReview "
          "listener speaks either TLS or plain HTTP",
          SERVE_ARGS, REVIEW_ON, REVIEW_TLS, "--token-review-insecure-http", NULL);
    fails("--token-review-client-ca-file needs --token-review-tls-cert-file: client certificates come with TLS",
          SERVE_ARGS, REVIEW_ON, "--token-review-insecure-http", "--token-review-client-ca-file", "/ca.crt", NULL);
    fails("--token-review-allowed-callers \"CN=vault,O=example\": is a client certificate's subject, which needs "
          "--token-review-client-ca-file",
          SERVE_ARGS, REVIEW_ON, REVIEW_TLS, "--token-review-allowed-callers", VAULT_SA,
          "--token-review-allowed-callers", "CN=vault,O=example", NULL);
    /* each flag means nothing without the API */
    static const char *const needs[][2] = {
        {"--token-review-tls-cert-file", "/r.crt"},   {"--token-review-tls-private-key-file", "/r.key"},
        {"--token-review-client-ca-file", "/ca.crt"}, {"--token-review-allowed-callers", VAULT_SA},
        {"--token-review-caller-audiences", "a"},     {"--token-review-insecure-http", NULL},
    };
    char want[CONFIG_ERR_MAX];
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
        snprintf(want, sizeof want, "%s needs --enable-token-review", needs[i][0]);
        fails(want, SERVE_ARGS, needs[i][0], needs[i][1], NULL);
    }
}

Test(config, token_review_caller_forms)
{
    static const char *const good[] = {
        "system:serviceaccount:vault:vault-auth",
        "system:serviceaccount:a:b.c-d",
        "CN=vault",
        "CN=vault,O=example",
        "CN=vault+UID=7,O=Example\\, Inc.,C=DE",
        "emailAddress=v@example.com,CN=a\\+b",
        "2.5.4.3=vault",
        "CN=\\#x\\20",
        "CN=",
    };
    static const char *const bad[] = {
        "vault-auth",                             /* a bare name matches no username */
        "system:serviceaccount:vault",            /* no name */
        "system:serviceaccount:vault:",           /* empty name */
        "system:serviceaccount::vault-auth",      /* empty namespace */
        "system:serviceaccount:Vault:vault-auth", /* not a DNS name */
        "system:serviceaccount:vault:vault:auth", /* a colon in the name */
        "system:serviceaccounts:vault",           /* a group */
        "serviceaccount:vault:vault-auth",        /* no prefix */
        "/O=example/CN=vault",                    /* openssl's old one-line form */
        "CN=vault, O=example",                    /* a blank after the comma: not OpenSSL's form */
        "=vault",                                 /* no type */
        "CN=vault,",                              /* nothing after the separator */
        "CN=a\\",                                 /* a lone backslash */
        "1.=x",                                   /* a broken OID */
        "CN=v\xc3\xa9",                           /* not ASCII: OpenSSL escapes it */
        "CN=a\tb",                                /* a control character */
    };

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        cr_assert_null(config_check_caller(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_str_eq(config_check_caller(bad[i]) ? config_check_caller(bad[i]) : "(accepted)", CALLER_PROBLEM, "%s",
                         bad[i]);
    }
    fails("--token-review-allowed-callers \"vault-auth\": " CALLER_PROBLEM, SERVE_ARGS, REVIEW_ON, REVIEW_TLS,
          "--token-review-allowed-callers", "vault-auth", NULL);
}

Test(config, file_token_review_callers)
{
    write_file(
        "{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\",\n"
        " \"enable-token-review\": true, \"token-review-listen\": \"127.0.0.1:8443\",\n"
        " \"token-review-tls-cert-file\": \"/r.crt\", \"token-review-tls-private-key-file\": \"/r.key\",\n"
        " \"token-review-client-ca-file\": \"/ca.crt\",\n"
        " \"token-review-allowed-callers\": [\"system:serviceaccount:vault:vault-auth\", \"CN=vault,O=example\"],\n"
        " \"token-review-caller-audiences\": \"a,b\"}");
    ok("--config", path, NULL);
    list_is(&cfg.token_review_allowed_callers, 2, VAULT_SA, "CN=vault,O=example");
    list_is(&cfg.token_review_caller_audiences, 2, "a", "b");
    cr_assert_str_eq(cfg.token_review_client_ca_file, "/ca.crt");
    /* a flag replaces the file's list */
    ok("--config", path, "--token-review-allowed-callers", "system:serviceaccount:x:y", NULL);
    list_is(&cfg.token_review_allowed_callers, 1, "system:serviceaccount:x:y");
}

/* The bound-object check reads the API server of --upstream, so it needs
 * it and the TokenReview API; its cache TTL defaults to kube-apiserver's
 * token cache (10s) and cannot be set without it. */
Test(config, token_review_check_bound_objects)
{
    OK_WITH(NULL);
    cr_assert_not(cfg.token_review_check_bound_objects);
    OK_WITH(REVIEW_ON, "--token-review-insecure-http", "--token-review-allowed-callers", VAULT_SA, "--upstream",
            "https://api.example:6443", "--token-review-check-bound-objects", NULL);
    cr_assert(cfg.token_review_check_bound_objects);
    cr_assert_eq(cfg.token_review_bound_object_cache_ttl, 10);
    OK_WITH(REVIEW_ON, "--token-review-insecure-http", "--token-review-allowed-callers", VAULT_SA, "--upstream",
            "https://api.example:6443", "--token-review-check-bound-objects", "--token-review-bound-object-cache-ttl",
            "2s", NULL);
    cr_assert_eq(cfg.token_review_bound_object_cache_ttl, 2);
    fails("--token-review-check-bound-objects needs --upstream URL (the API server the objects are looked up in)",
          SERVE_ARGS, REVIEW_ON, "--token-review-insecure-http", "--token-review-allowed-callers", VAULT_SA,
          "--token-review-check-bound-objects", NULL);
    fails("--token-review-check-bound-objects needs --enable-token-review", SERVE_ARGS, "--upstream",
          "https://api.example:6443", "--token-review-check-bound-objects", NULL);
    fails("--token-review-bound-object-cache-ttl needs --token-review-check-bound-objects", SERVE_ARGS,
          "--token-review-bound-object-cache-ttl", "5s", NULL);
    fails("--token-review-bound-object-cache-ttl \"0s\": must be a duration between 1s and 10m (like 90s, 15m, 24h, 7d "
          "or plain seconds)",
          SERVE_ARGS, REVIEW_ON, "--token-review-insecure-http", "--upstream", "https://api.example:6443",
          "--token-review-check-bound-objects", "--token-review-bound-object-cache-ttl", "0s", NULL);
}
