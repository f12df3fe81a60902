/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: the verify and token commands, and which command
 * takes which flag. Error messages are asserted word for word since operators
 * read them; config_test_support.h holds the parse helpers.
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

/* ---- verify ---- */

/* A flag (and its value, or NULL) for the tests about which command takes
 * what. */
struct flag_case {
    const char *flag, *value;
};

/* What the refusal of flag suggests instead, for the command args[0]
 * names (serve when it is a flag): token's --issuer and verify's
 * --token-file and --ca-file are the only such flags whose last words name
 * a flag another command takes: serve's --upstream-token-file and
 * --upstream-ca-file, and for dev (which has no --upstream) the
 * TokenReview listener's --token-review-client-ca-file. */
static const char *hint_for(const char *flag, const char *first)
{
    int serve = first == NULL || first[0] == '-' || strcmp(first, "serve") == 0;
    int dev = first != NULL && strcmp(first, "dev") == 0;

    if (strcmp(flag, "--token-file") == 0 && serve)
        return "; did you mean --upstream-token-file?";
    if (strcmp(flag, "--ca-file") == 0 && (serve || dev))
        return serve ? "; did you mean --upstream-ca-file?" : "; did you mean --token-review-client-ca-file?";
    return strcmp(flag, "--issuer") == 0 ? "; did you mean --service-account-issuer?" : "";
}

/* Serving flags, which neither verify nor token takes. */
static const struct flag_case serving_flags[] = {
    {"--service-account-jwks-uri", "https://a.example/jwks"},
    {"--listen", "127.0.0.1:1"},
    {"--threads", "2"},
    {"--max-age", "1"},
    {"--jwks-content-type", "a/b"},
    {"--cors", NULL},
    {"--no-cors", NULL},
    {"--key-reload-interval", "1s"},
    {"--key-retention", "1s"},
    {"--state-dir", "/s"},
    {"--enable-token-review", NULL},
    {"--token-review-listen", "127.0.0.1:2"},
    {"--output", "json"},
};

static const struct flag_case verify_flags[] = {
    {"--token-file", "/t"}, {"--discovery-url", "https://a.example"}, {"--ca-file", "/ca.pem"}, {"--repeat", "2"},
    {"--no-cache", NULL},
};

/* --issuer is token's and doctor's, and (the NAME of an issuer of
 * --issuers-dir) keys' and export's: see issuer_for_four_commands. */
static const struct flag_case token_flags[] = {
    {"--audience", "a"},  {"--namespace", "ns"}, {"--service-account", "sa"}, {"--service-account-uid", "u"},
    {"--pod-name", "p"},  {"--pod-uid", "pu"},   {"--node-name", "n"},        {"--node-uid", "nu"},
    {"--duration", "1h"},
};

/* Requires that each flag of cases, given after args (a command and what it
 * needs, at most 8 arguments), fails with "FLAG<suffix>". */
static void each_flag_fails(const char *const *args, size_t nargs, const struct flag_case *cases, size_t ncases,
                            const char *suffix)
{
    const char *a[10] = {NULL};
    char want[CONFIG_ERR_MAX], both[96];

    cr_assert_leq(nargs, 8);
    memcpy(a, args, nargs * sizeof *args);
    snprintf(both, sizeof both, "%.*s and doctor commands", (int)(strlen(suffix) - strlen(" command")), suffix);
    for (size_t i = 0; i < ncases; i++) {
        /* a flag doctor takes too is "only valid for the X and doctor commands" */
        int shared = (config_option(cases[i].flag + 2)->commands & CONFIG_CMD_BIT(CONFIG_CMD_DOCTOR)) &&
                     strstr(suffix, " only valid ");
        snprintf(want, sizeof want, "%s%s%s", cases[i].flag, shared ? both : suffix, hint_for(cases[i].flag, args[0]));
        a[nargs] = cases[i].flag;
        a[nargs + 1] = cases[i].value; /* NULL ends the arguments early for a flag without a value */
        fails(want, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], NULL);
    }
}

#define EACH_FLAG_FAILS(cases, suffix, ...)                                                                            \
    do {                                                                                                               \
        const char *const args_[] = {__VA_ARGS__};                                                                     \
        each_flag_fails(args_, sizeof args_ / sizeof args_[0], cases, sizeof cases / sizeof cases[0], suffix);         \
    } while (0)

Test(config, verify_defaults)
{
    ok(VERIFY_ARGS, NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERIFY);
    cr_assert_str_eq(cfg.token_file, "/t.jwt");
    list_is(&cfg.issuers, 1, "https://a.example");
    list_is(&cfg.key_files, 1, "/k.pub");
    cr_assert_null(cfg.discovery_url);
    cr_assert_null(cfg.ca_file);
    cr_assert_eq(cfg.repeat, 1);
    cr_assert_eq(cfg.no_cache, 0);
    cr_assert_eq(cfg.api_audiences.count, 0);
    cr_assert_eq(cfg.token_leeway, 60);
    cr_assert_eq(cfg.max_token_size, 16384);
    cr_assert_eq(cfg.accept_legacy_tokens, 0);
    cr_assert_eq(cfg.allow_insecure_issuer, 0);
    cr_assert_eq(cfg.enable_token_review, 0);
}

Test(config, verify_token_from_stdin)
{
    ok("verify", "--token-file", "-", SERVE_ARGS, NULL);
    cr_assert_str_eq(cfg.token_file, "-");
    ok("verify", SERVE_ARGS, "--token-file=-", NULL);
    cr_assert_str_eq(cfg.token_file, "-");
}

Test(config, verify_every_flag)
{
    ok(VERIFY_ARGS, "--service-account-key-file", "/k2.pub", "--api-audiences", "vault,aws", "--api-audiences", "gcp",
       "--token-leeway", "5m", "--max-token-size", "4096", "--accept-legacy-tokens", "--repeat", "100000000",
       "--no-cache", NULL);
    list_is(&cfg.key_files, 2, "/k.pub", "/k2.pub");
    list_is(&cfg.api_audiences, 3, "vault", "aws", "gcp");
    cr_assert_eq(cfg.token_leeway, 300);
    cr_assert_eq(cfg.max_token_size, 4096);
    cr_assert_eq(cfg.accept_legacy_tokens, 1);
    cr_assert_eq(cfg.repeat, 100000000);
    cr_assert_eq(cfg.no_cache, 1);
}

Test(config, verify_with_discovery_url)
{
    /* the issuer comes from the discovery document, so none is needed */
    ok("verify", "--token-file", "/t", "--discovery-url", "https://a.example/tenant", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERIFY);
    cr_assert_str_eq(cfg.discovery_url, "https://a.example/tenant");
    cr_assert_eq(cfg.issuers.count, 0);
    cr_assert_eq(cfg.key_files.count, 0);
    cr_assert_null(cfg.ca_file);
    ok("verify", "--token-file", "/t", "--discovery-url", "https://a.example", "--ca-file", "/ca.pem",
       "--service-account-issuer", "https://b.example", NULL);
    cr_assert_str_eq(cfg.ca_file, "/ca.pem");
    list_is(&cfg.issuers, 1, "https://b.example");
    ok("verify", "--token-file", "/t", "--discovery-url", "http://127.0.0.1:8080", "--allow-insecure-issuer", NULL);
    cr_assert_str_eq(cfg.discovery_url, "http://127.0.0.1:8080");
    cr_assert_eq(cfg.allow_insecure_issuer, 1);
}

Test(config, verify_required)
{
    fails("--token-file is required (a path, or - for standard input)", "verify", SERVE_ARGS, NULL);
    fails("--token-file is required (a path, or - for standard input)", "verify", NULL);
    fails("verify needs --service-account-key-file or --discovery-url", "verify", "--token-file", "/t",
          "--service-account-issuer", "https://a.example", NULL);
    fails("--discovery-url and --service-account-key-file are mutually exclusive", VERIFY_ARGS, "--discovery-url",
          "https://a.example", NULL);
    fails("--ca-file needs --discovery-url", VERIFY_ARGS, "--ca-file", "/ca.pem", NULL);
    fails("--service-account-issuer is required (at least one) unless --discovery-url is given", "verify",
          "--token-file", "/t", "--service-account-key-file", "/k", NULL);
}

Test(config, verify_value_errors)
{
    fails("--token-file \"\": must not be empty", VERIFY_ARGS, "--token-file", "", NULL);
    fails("--token-file: missing value", "verify", "--token-file", NULL);
    fails("--ca-file \"\": must not be empty", "verify", "--token-file", "/t", "--discovery-url", "https://a.example",
          "--ca-file", "", NULL);
    fails("--discovery-url \"http://a.example\": must be an https URL (--allow-insecure-issuer permits http for "
          "development only)",
          "verify", "--token-file", "/t", "--discovery-url", "http://a.example", NULL);
    fails("--discovery-url \"https://a.example/?x=1\": must not have a query", "verify", "--token-file", "/t",
          "--discovery-url", "https://a.example/?x=1", NULL);
    fails("--discovery-url \"https://a.example/#f\": must not have a fragment", "verify", "--token-file", "/t",
          "--discovery-url", "https://a.example/#f", "--allow-insecure-issuer", NULL);
    fails("--discovery-url \"a.example\": must be an https URL", "verify", "--token-file", "/t", "--discovery-url",
          "a.example", NULL);
    fails("--repeat \"0\": must be an integer between 1 and 100000000", VERIFY_ARGS, "--repeat", "0", NULL);
    fails("--repeat \"100000001\": must be an integer between 1 and 100000000", VERIFY_ARGS, "--repeat", "100000001",
          NULL);
    fails("--repeat \"1e3\": must be an integer between 1 and 100000000", VERIFY_ARGS, "--repeat", "1e3", NULL);
    fails("--no-cache: does not take a value", VERIFY_ARGS, "--no-cache=1", NULL);
    fails("--token-leeway \"2h\": " LEEWAY_PROBLEM, VERIFY_ARGS, "--token-leeway", "2h", NULL);
    fails("--api-audiences \"a,,b\": " AUDIENCES_PROBLEM, VERIFY_ARGS, "--api-audiences", "a,,b", NULL);
}

Test(config, verify_rejects_serving_flags)
{
    EACH_FLAG_FAILS(serving_flags, NOT_FOR_VERIFY, VERIFY_ARGS);
    fails("--signing-key-file" NOT_FOR_VERIFY, VERIFY_ARGS, "--signing-key-file", "/k.key", NULL);
    /* even where the value is bad, and before anything else is required */
    fails("--threads" NOT_FOR_VERIFY, "verify", "--threads", "0", NULL);
}

Test(config, verify_rejects_token_flags)
{
    EACH_FLAG_FAILS(token_flags, ONLY_FOR_TOKEN, VERIFY_ARGS);
}

Test(config, verify_flags_only_for_verify)
{
    EACH_FLAG_FAILS(verify_flags, ONLY_FOR_VERIFY, SERVE_ARGS);
    EACH_FLAG_FAILS(verify_flags, ONLY_FOR_VERIFY, "serve", SERVE_ARGS);
    EACH_FLAG_FAILS(verify_flags, ONLY_FOR_VERIFY, "dev");
    EACH_FLAG_FAILS(verify_flags, ONLY_FOR_VERIFY, "keys", "--service-account-key-file", "/k");
}

Test(config, verify_help_and_version)
{
    ok("verify", "--help", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_HELP);
    ok("verify", "--listen", "x", "--version", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERSION);
}

Test(config, verify_shares_the_serve_config_file)
{
    /* verify reads the keys it knows and ignores serve's */
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\",\n"
               " \"listen\": \"0.0.0.0:443\", \"threads\": 4, \"api-audiences\": \"vault\", \"token-leeway\": 10,\n"
               " \"accept-legacy-tokens\": true}");
    ok("verify", "--config", path, "--token-file", "-", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERIFY);
    list_is(&cfg.issuers, 1, "https://a.example");
    list_is(&cfg.key_files, 1, "/k");
    list_is(&cfg.api_audiences, 1, "vault");
    cr_assert_eq(cfg.token_leeway, 10);
    cr_assert_eq(cfg.accept_legacy_tokens, 1);
    /* the file's key files and a --discovery-url flag are still two sources */
    fails("--discovery-url and --service-account-key-file are mutually exclusive", "verify", "--config", path,
          "--token-file", "-", "--discovery-url", "https://a.example", NULL);
}

/* ---- token ---- */

#define DNS_PROBLEM "must be a DNS-1123 name (lowercase letters, digits, '-' and '.')"

Test(config, token_defaults)
{
    ok(TOKEN_ARGS, NULL);
    cr_assert_eq(cmd, CONFIG_CMD_TOKEN);
    cr_assert_str_eq(cfg.signing_key_file, "/k.key");
    cr_assert_str_eq(cfg.mint_issuer, "https://a.example");
    list_is(&cfg.audiences, 1, "https://a.example");
    cr_assert_str_eq(cfg.mint_namespace, "default");
    cr_assert_str_eq(cfg.service_account, "default");
    cr_assert_str_eq(cfg.service_account_uid, "uid-1");
    cr_assert_null(cfg.pod_name);
    cr_assert_null(cfg.pod_uid);
    cr_assert_null(cfg.node_name);
    cr_assert_null(cfg.node_uid);
    cr_assert_eq(cfg.duration, 3600);
    cr_assert_eq(cfg.allow_insecure_issuer, 0);
    /* serve's issuers and keys are neither needed nor set */
    cr_assert_eq(cfg.issuers.count, 0);
    cr_assert_eq(cfg.key_files.count, 0);
    cr_assert_null(cfg.jwks_uri);
}

Test(config, token_every_flag)
{
    ok(TOKEN_ARGS, "--audience", "vault", "--audience", "https://kubernetes.default.svc", "--namespace", "kube-system",
       "--service-account", "my.sa-1", "--pod-name", "web-0", "--pod-uid", "pod-uid", "--node-name", "node-1",
       "--node-uid", "node-uid", "--duration", "10m", NULL);
    list_is(&cfg.audiences, 2, "vault", "https://kubernetes.default.svc");
    cr_assert_str_eq(cfg.mint_namespace, "kube-system");
    cr_assert_str_eq(cfg.service_account, "my.sa-1");
    cr_assert_str_eq(cfg.pod_name, "web-0");
    cr_assert_str_eq(cfg.pod_uid, "pod-uid");
    cr_assert_str_eq(cfg.node_name, "node-1");
    cr_assert_str_eq(cfg.node_uid, "node-uid");
    cr_assert_eq(cfg.duration, 600);
    /* the audience is not split at commas */
    ok(TOKEN_ARGS, "--audience", "a,b", NULL);
    list_is(&cfg.audiences, 1, "a,b");
}

Test(config, token_duration)
{
    ok(TOKEN_ARGS, "--duration", "1s", NULL);
    cr_assert_eq(cfg.duration, 1);
    ok(TOKEN_ARGS, "--duration", "365d", NULL);
    cr_assert_eq(cfg.duration, 31536000);
    ok(TOKEN_ARGS, "--duration", "48h", NULL);
    cr_assert_eq(cfg.duration, 172800);
    const char *bad[][2] = {{"0", "\"0\""}, {"366d", "\"366d\""}, {"31536001", "\"31536001\""}, {"1y", "\"1y\""}};
    char want[CONFIG_ERR_MAX];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(want, sizeof want,
                 "--duration %s: must be a duration between 1s and 365d (like 90s, 15m, 24h, 7d or plain seconds)",
                 bad[i][1]);
        fails(want, TOKEN_ARGS, "--duration", bad[i][0], NULL);
    }
}

Test(config, token_required)
{
    fails("--signing-key-file is required (the private key that signs the token)", "token", "--issuer",
          "https://a.example", "--service-account-uid", "u", NULL);
    fails("--issuer is required", "token", "--signing-key-file", "/k.key", "--service-account-uid", "u", NULL);
    fails("--service-account-uid is required", "token", "--signing-key-file", "/k.key", "--issuer", "https://a.example",
          NULL);
    fails("--signing-key-file is required (the private key that signs the token)", "token", NULL);
}

Test(config, token_issuer)
{
    fails("--issuer \"http://a.example\": must be an https URL (--allow-insecure-issuer permits http for "
          "development only)",
          TOKEN_ARGS, "--issuer", "http://a.example", NULL);
    fails("--issuer \"https://a.example?x\": must not have a query", TOKEN_ARGS, "--issuer", "https://a.example?x",
          NULL);
    ok(TOKEN_ARGS, "--issuer", "http://127.0.0.1:8080", "--allow-insecure-issuer", NULL);
    cr_assert_str_eq(cfg.mint_issuer, "http://127.0.0.1:8080");
    list_is(&cfg.audiences, 1, "http://127.0.0.1:8080");
    cr_assert_eq(cfg.allow_insecure_issuer, 1);
}

Test(config, token_pairs)
{
    fails("--pod-name and --pod-uid go together", TOKEN_ARGS, "--pod-name", "p", NULL);
    fails("--pod-name and --pod-uid go together", TOKEN_ARGS, "--pod-uid", "u", NULL);
    fails("--node-name and --node-uid go together", TOKEN_ARGS, "--node-name", "n", NULL);
    fails("--node-name and --node-uid go together", TOKEN_ARGS, "--pod-name", "p", "--pod-uid", "u", "--node-uid", "u",
          NULL);
    ok(TOKEN_ARGS, "--node-name", "n", "--node-uid", "u", NULL);
    cr_assert_null(cfg.pod_name);
    cr_assert_str_eq(cfg.node_name, "n");
}

Test(config, token_dns_names)
{
    char name253[254], name254[255], want[CONFIG_ERR_MAX];
    const char *good[] = {"a", "0", "kube-system", "a.b-c.d", "x1-2", "a--b"};
    const char *bad[][2] = {{"Foo", "\"Foo\""},   {"", "\"\""},         {"-a", "\"-a\""},    {"a-", "\"a-\""},
                            {"a..b", "\"a..b\""}, {".a", "\".a\""},     {"a.", "\"a.\""},    {"a_b", "\"a_b\""},
                            {"a b", "\"a b\""},   {"a.-b", "\"a.-b\""}, {"a-.b", "\"a-.b\""}};

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ok(TOKEN_ARGS, "--namespace", good[i], "--service-account", good[i], NULL);
        cr_assert_str_eq(cfg.mint_namespace, good[i]);
        cr_assert_str_eq(cfg.service_account, good[i]);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(want, sizeof want, "--namespace %s: " DNS_PROBLEM, bad[i][1]);
        fails(want, TOKEN_ARGS, "--namespace", bad[i][0], NULL);
        snprintf(want, sizeof want, "--service-account %s: " DNS_PROBLEM, bad[i][1]);
        fails(want, TOKEN_ARGS, "--service-account", bad[i][0], NULL);
    }
    memset(name253, 'a', sizeof name253);
    name253[253] = '\0';
    ok(TOKEN_ARGS, "--namespace", name253, NULL);
    cr_assert_eq(strlen(cfg.mint_namespace), 253);
    memset(name254, 'a', sizeof name254);
    name254[254] = '\0';
    snprintf(want, sizeof want, "--namespace \"%s\": " DNS_PROBLEM, name254);
    fails(want, TOKEN_ARGS, "--namespace", name254, NULL);
}

Test(config, token_empty_values)
{
    const char *flags[] = {"--audience", "--service-account-uid", "--pod-name",
                           "--pod-uid",  "--node-name",           "--node-uid"};
    char want[CONFIG_ERR_MAX];

    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        snprintf(want, sizeof want, "%s \"\": must not be empty", flags[i]);
        fails(want, TOKEN_ARGS, flags[i], "", NULL);
    }
}

Test(config, token_rejects_other_flags)
{
    EACH_FLAG_FAILS(serving_flags, NOT_FOR_TOKEN, TOKEN_ARGS);
    EACH_FLAG_FAILS(verify_flags, ONLY_FOR_VERIFY, TOKEN_ARGS);
    fails("--service-account-issuer" NOT_FOR_TOKEN "; did you mean --issuer?", TOKEN_ARGS, "--service-account-issuer",
          "https://a.example", NULL);
    fails("--service-account-key-file" NOT_FOR_TOKEN, TOKEN_ARGS, "--service-account-key-file", "/k", NULL);
    fails("--api-audiences" NOT_FOR_TOKEN, TOKEN_ARGS, "--api-audiences", "a", NULL);
    fails("--token-leeway" NOT_FOR_TOKEN, TOKEN_ARGS, "--token-leeway", "1", NULL);
    fails("--max-token-size" NOT_FOR_TOKEN, TOKEN_ARGS, "--max-token-size", "1024", NULL);
    fails("--accept-legacy-tokens" NOT_FOR_TOKEN, TOKEN_ARGS, "--accept-legacy-tokens", NULL);
}

Test(config, token_flags_only_for_token)
{
    EACH_FLAG_FAILS(token_flags, ONLY_FOR_TOKEN, SERVE_ARGS);
    EACH_FLAG_FAILS(token_flags, ONLY_FOR_TOKEN, "dev");
    EACH_FLAG_FAILS(token_flags, ONLY_FOR_TOKEN, "keys", "--service-account-key-file", "/k");
}

Test(config, issuer_for_four_commands)
{
    fails("--issuer is not valid for the serve command; did you mean --service-account-issuer?", SERVE_ARGS, "--issuer",
          "https://a.example", NULL);
    fails("--issuer is not valid for the verify command; did you mean --service-account-issuer?", "verify", "--issuer",
          "https://a.example", NULL);
    fails("--issuer NAME picks one issuer of --issuers-dir, which is not given", "keys", "--service-account-key-file",
          "/k", "--issuer", "a", NULL);
    ok("keys", "--issuers-dir", "/d", "--issuer", "a", NULL);
    ok("export", "--issuers-dir", "/d", "--issuer", "a.b-c_1", "--out", "/o", NULL);
}

Test(config, token_with_config_file)
{
    write_file("{\"signing-key-file\": \"/file.key\", \"allow-insecure-issuer\": true,"
               " \"service-account-issuer\": \"https://ignored.example\", \"listen\": \"0.0.0.0:1\"}");
    ok("token", "--config", path, "--issuer", "http://a.example", "--service-account-uid", "u", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_TOKEN);
    cr_assert_str_eq(cfg.signing_key_file, "/file.key");
    cr_assert_str_eq(cfg.mint_issuer, "http://a.example");
    ok("token", "--config", path, "--issuer", "https://a.example", "--service-account-uid", "u", "--signing-key-file",
       "/flag.key", NULL);
    cr_assert_str_eq(cfg.signing_key_file, "/flag.key");
}

Test(config, token_help_and_version)
{
    ok("token", "--help", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_HELP);
    ok("token", "--listen", "x", "--version", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERSION);
    cr_assert_eq(cfg.duration, 3600, "defaults only");
    cr_assert_str_eq(cfg.mint_namespace, "default");
}

/* Flags of serve and dev only, with a valid value each. */
static const struct flag_case production_flags[] = {
    {"--tls-listen", "127.0.0.1:8443"},
    {"--tls-cert-file", "/tls.crt"},
    {"--tls-private-key-file", "/tls.key"},
    {"--admin-listen", "127.0.0.1:9091"},
    {"--path-prefix", "/oidc"},
    {"--allowed-hosts", "a.example"},
    {"--access-log", "-"},
    {"--max-request-header-size", "4096"},
    {"--request-timeout", "5s"},
    {"--write-timeout", "5s"},
    {"--http2-idle-timeout", "5s"},
    {"--shutdown-grace", "1s"},
    {"--max-connections", "10"},
    {"--token-review-max-connections", "10"},
    {"--token-review-tls-cert-file", "/r.crt"},
    {"--token-review-tls-private-key-file", "/r.key"},
    {"--token-review-client-ca-file", "/ca.crt"},
    {"--token-review-insecure-http", NULL},
    {"--token-review-allowed-callers", "system:serviceaccount:vault:vault-auth"},
    {"--token-review-caller-audiences", "reviewers"},
    {"--admin-max-connections", "10"},
    {"--handshake-timeout", "2s"},
    {"--connection-share-per-address", "50"},
    {"--http2-max-concurrent-streams", "10"},
    {"--http2", NULL},
};

Test(config, production_flags_only_for_serve_and_dev)
{
    EACH_FLAG_FAILS(production_flags, NOT_FOR_VERIFY, VERIFY_ARGS);
    EACH_FLAG_FAILS(production_flags, NOT_FOR_KEYS, "keys", "--service-account-key-file", "/k");
    EACH_FLAG_FAILS(production_flags, NOT_FOR_TOKEN, TOKEN_ARGS);
    /* even where the value is bad */
    fails("--path-prefix" NOT_FOR_VERIFY, "verify", "--path-prefix", "x", NULL);
    fails("--listen" NOT_FOR_VERIFY, "verify", "--listen", "unix:/x", NULL);
}

/* Flags of serve, dev and keys that export does not take: none of them
 * changes the published bytes. */
static const struct flag_case not_export_flags[] = {
    {"--listen", "127.0.0.1:1"},
    {"--threads", "2"},
    {"--cors", NULL},
    {"--no-cors", NULL},
    {"--key-reload-interval", "1s"},
    {"--signing-key-file", "/k.key"},
    {"--api-audiences", "a"},
    {"--token-leeway", "1s"},
    {"--max-token-size", "1024"},
    {"--accept-legacy-tokens", NULL},
    {"--enable-token-review", NULL},
    {"--token-review-listen", "127.0.0.1:2"},
    {"--output", "json"},
};

Test(config, export_refuses_listener_flags)
{
    EACH_FLAG_FAILS(not_export_flags, NOT_FOR_EXPORT, EXPORT_ARGS);
    EACH_FLAG_FAILS(production_flags, NOT_FOR_EXPORT, EXPORT_ARGS);
    EACH_FLAG_FAILS(verify_flags, ONLY_FOR_VERIFY, EXPORT_ARGS);
    EACH_FLAG_FAILS(token_flags, ONLY_FOR_TOKEN, EXPORT_ARGS);
}
