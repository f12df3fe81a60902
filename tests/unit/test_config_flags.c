/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: the defaults, each flag, dev, durations, key
 * rotation, the keys command and config_check_url. Error messages are asserted
 * word for word since operators read them; config_test_support.h holds the
 * parse helpers.
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

/* ---- defaults and each flag ---- */

Test(config, defaults)
{
    ok("--service-account-issuer", "https://a.example", "--service-account-key-file", "/k.pub", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_SERVE);
    cr_assert_eq(cfg.issuers.count, 1);
    cr_assert_str_eq(cfg.issuers.items[0], "https://a.example");
    cr_assert_str_eq(cfg.jwks_uri, "https://a.example/openid/v1/jwks");
    cr_assert_eq(cfg.key_files.count, 1);
    cr_assert_str_eq(cfg.key_files.items[0], "/k.pub");
    cr_assert_eq(cfg.listen_count, 1);
    cr_assert_str_eq(cfg.listens[0].host, "127.0.0.1");
    cr_assert_eq(cfg.listens[0].port, 8080);
    cr_assert_eq(cfg.threads, expected_threads());
    cr_assert_eq(cfg.max_age, 3600);
    cr_assert_str_eq(cfg.jwks_content_type, "application/jwk-set+json");
    cr_assert_eq(cfg.cors, 1);
    cr_assert_eq(cfg.allow_insecure_issuer, 0);
    cr_assert_eq(cfg.key_reload_interval, 60);
    cr_assert_eq(cfg.key_retention, 0);
    cr_assert_null(cfg.state_dir);
    cr_assert_null(cfg.signing_key_file);
    cr_assert_str_eq(cfg.output, "table");
    /* token verification */
    cr_assert_eq(cfg.api_audiences.count, 0);
    cr_assert_null(cfg.api_audiences.items);
    cr_assert_eq(cfg.token_leeway, 60);
    cr_assert_eq(cfg.max_token_size, 16384);
    cr_assert_eq(cfg.accept_legacy_tokens, 0);
    cr_assert_eq(cfg.enable_token_review, 0);
    cr_assert_eq(cfg.token_review_listen_count, 0);
    cr_assert_null(cfg.token_review_listens);
    /* verify's and token's, unused by serve */
    cr_assert_null(cfg.token_file);
    cr_assert_null(cfg.discovery_url);
    cr_assert_null(cfg.ca_file);
    cr_assert_eq(cfg.repeat, 1);
    cr_assert_eq(cfg.no_cache, 0);
    cr_assert_null(cfg.mint_issuer);
    cr_assert_eq(cfg.audiences.count, 0);
    cr_assert_null(cfg.service_account_uid);
    cr_assert_null(cfg.pod_name);
    cr_assert_null(cfg.node_name);
    cr_assert_eq(cfg.duration, 3600);
}

Test(config, explicit_serve_command)
{
    ok("serve", "--service-account-issuer", "https://a.example", "--service-account-key-file", "/k.pub", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_SERVE);
    cr_assert_str_eq(cfg.issuers.items[0], "https://a.example");
}

Test(config, every_flag)
{
    OK_WITH("--service-account-jwks-uri", "https://cdn.example/keys", "--listen", "10.0.0.1:443", "--threads", "7",
            "--max-age", "60", "--jwks-content-type", "application/json", "--no-cors", "--allow-insecure-issuer", NULL);
    cr_assert_str_eq(cfg.jwks_uri, "https://cdn.example/keys");
    cr_assert_eq(cfg.listen_count, 1);
    cr_assert_str_eq(cfg.listens[0].host, "10.0.0.1");
    cr_assert_eq(cfg.listens[0].port, 443);
    cr_assert_eq(cfg.threads, 7);
    cr_assert_eq(cfg.max_age, 60);
    cr_assert_str_eq(cfg.jwks_content_type, "application/json");
    cr_assert_eq(cfg.cors, 0);
    cr_assert_eq(cfg.allow_insecure_issuer, 1);
}

Test(config, equals_form)
{
    ok("--service-account-issuer=https://a.example", "--service-account-key-file=/k.pub", "--listen=[::1]:9000",
       "--threads=3", "--max-age=0", "--jwks-content-type=application/json; charset=utf-8",
       "--service-account-jwks-uri=https://a.example/jwks", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "https://a.example");
    cr_assert_str_eq(cfg.key_files.items[0], "/k.pub");
    cr_assert_str_eq(cfg.listens[0].host, "::1");
    cr_assert_eq(cfg.listens[0].port, 9000);
    cr_assert_eq(cfg.threads, 3);
    cr_assert_eq(cfg.max_age, 0);
    cr_assert_str_eq(cfg.jwks_content_type, "application/json; charset=utf-8");
    cr_assert_str_eq(cfg.jwks_uri, "https://a.example/jwks");
}

Test(config, cors_last_flag_wins)
{
    OK_WITH("--no-cors", "--cors", NULL);
    cr_assert_eq(cfg.cors, 1);
    OK_WITH("--cors", "--no-cors", NULL);
    cr_assert_eq(cfg.cors, 0);
}

Test(config, scalar_flag_last_wins)
{
    OK_WITH("--max-age", "10", "--max-age", "20", NULL);
    cr_assert_eq(cfg.max_age, 20);
}

Test(config, number_limits)
{
    OK_WITH("--threads", "256", "--max-age", "31536000", NULL);
    cr_assert_eq(cfg.threads, 256);
    cr_assert_eq(cfg.max_age, 31536000);
    OK_WITH("--threads", "1", "--max-age", "007", NULL);
    cr_assert_eq(cfg.threads, 1);
    cr_assert_eq(cfg.max_age, 7);
}

Test(config, repeatable_flags_keep_order)
{
    ok("--service-account-issuer", "https://a.example", "--service-account-issuer", "https://b.example/x",
       "--service-account-key-file", "/k1.pub", "--service-account-key-file", "/k2.key", "--listen", "1.2.3.4:80",
       "--listen", "[::1]:8080", "--listen", "localhost:80", NULL);
    cr_assert_eq(cfg.issuers.count, 2);
    cr_assert_str_eq(cfg.issuers.items[0], "https://a.example");
    cr_assert_str_eq(cfg.issuers.items[1], "https://b.example/x");
    cr_assert_str_eq(cfg.jwks_uri, "https://a.example/openid/v1/jwks");
    cr_assert_eq(cfg.key_files.count, 2);
    cr_assert_str_eq(cfg.key_files.items[0], "/k1.pub");
    cr_assert_str_eq(cfg.key_files.items[1], "/k2.key");
    cr_assert_eq(cfg.listen_count, 3);
    cr_assert_str_eq(cfg.listens[0].host, "1.2.3.4");
    cr_assert_eq(cfg.listens[0].port, 80);
    cr_assert_str_eq(cfg.listens[1].host, "::1");
    cr_assert_eq(cfg.listens[1].port, 8080);
    cr_assert_str_eq(cfg.listens[2].host, "localhost");
    cr_assert_eq(cfg.listens[2].port, 80);
}

Test(config, listen_forms)
{
    OK_WITH("--listen", "0.0.0.0:8080", "--listen", "[::]:65535", "--listen", "[::ffff:1.2.3.4]:1", NULL);
    cr_assert_eq(cfg.listen_count, 3);
    cr_assert_str_eq(cfg.listens[0].host, "0.0.0.0");
    cr_assert_eq(cfg.listens[0].port, 8080);
    cr_assert_str_eq(cfg.listens[1].host, "::");
    cr_assert_eq(cfg.listens[1].port, 65535);
    cr_assert_str_eq(cfg.listens[2].host, "::ffff:1.2.3.4");
    cr_assert_eq(cfg.listens[2].port, 1);
}

Test(config, jwks_uri_derivation)
{
    ok("--service-account-issuer", "https://a.example/", "--service-account-key-file", "/k", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "https://a.example/");
    cr_assert_str_eq(cfg.jwks_uri, "https://a.example/openid/v1/jwks");
    ok("--service-account-issuer", "https://a.example/tenant//", "--service-account-key-file", "/k", NULL);
    cr_assert_str_eq(cfg.jwks_uri, "https://a.example/tenant/openid/v1/jwks");
    ok("--service-account-issuer", "https://a.example:8443/t", "--service-account-key-file", "/k", NULL);
    cr_assert_str_eq(cfg.jwks_uri, "https://a.example:8443/t/openid/v1/jwks");
}

/* An issuer ending in "/" is accepted (kube-apiserver accepts it) with a
 * warning for the caller to log: relying parties compare it byte for byte. */
#define SLASH_WARNING                                                                                                  \
    "ends with \"/\"; relying parties compare the issuer byte for byte, so the iss of the tokens and the issuer "      \
    "registered with each relying party must end with \"/\" too"

Test(config, trailing_slash_issuer_warns)
{
    char want[CONFIG_ERR_MAX];

    ok("--service-account-issuer", "https://a.example", "--service-account-key-file", "/k", NULL);
    cr_assert_eq(cfg.warnings.count, 0);
    ok("--service-account-issuer", "https://a.example/", "--service-account-issuer", "https://b.example/x/",
       "--service-account-key-file", "/k", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "https://a.example/", "accepted as given");
    list_is(&cfg.warnings, 2, "--service-account-issuer \"https://a.example/\": " SLASH_WARNING,
            "--service-account-issuer \"https://b.example/x/\": " SLASH_WARNING);
    ok(TOKEN_ARGS, "--issuer", "https://t.example/", NULL);
    list_is(&cfg.warnings, 1, "--issuer \"https://t.example/\": " SLASH_WARNING);
    write_file("{\"service-account-issuer\": \"https://a.example/\", \"service-account-key-file\": \"/k\"}");
    ok("export", "--config", path, "--out", "/o", NULL);
    snprintf(want, sizeof want, "config file %s: key \"service-account-issuer\": " SLASH_WARNING, path);
    list_is(&cfg.warnings, 1, want);
    /* token does not read serve's issuer, so it does not warn about it */
    ok("token", "--config", path, "--signing-key-file", "/k.key", "--issuer", "https://a.example",
       "--service-account-uid", "u", NULL);
    cr_assert_eq(cfg.warnings.count, 0);
}

Test(config, insecure_issuer_allowed_with_flag)
{
    ok("--allow-insecure-issuer", "--service-account-issuer", "http://127.0.0.1:8080", "--service-account-key-file",
       "/k", "--service-account-jwks-uri", "http://127.0.0.1:8080/jwks", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "http://127.0.0.1:8080");
    cr_assert_str_eq(cfg.jwks_uri, "http://127.0.0.1:8080/jwks");
}

Test(config, flags_after_config_flag_order_irrelevant)
{
    /* --allow-insecure-issuer after the issuer still applies to it */
    ok("--service-account-issuer", "http://a.example", "--service-account-key-file", "/k", "--allow-insecure-issuer",
       NULL);
    cr_assert_eq(cfg.allow_insecure_issuer, 1);
}

Test(config, parse_twice_in_one_process)
{
    OK_WITH("--threads", "2", NULL);
    cr_assert_eq(cfg.threads, 2);
    OK_WITH("--threads", "5", NULL);
    cr_assert_eq(cfg.threads, 5);
    fails("unknown flag \"--bogus\" (see --help)", "--bogus", NULL);
    OK_WITH("--threads", "9", NULL);
    cr_assert_eq(cfg.threads, 9);
}

Test(config, double_dash_ends_flags)
{
    OK_WITH("--", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "https://a.example");
}

/* ---- dev ---- */

Test(config, dev_defaults)
{
    ok("dev", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_DEV);
    cr_assert_eq(cfg.issuers.count, 1);
    cr_assert_str_eq(cfg.issuers.items[0], "http://127.0.0.1:8080");
    cr_assert_str_eq(cfg.jwks_uri, "http://127.0.0.1:8080/openid/v1/jwks");
    /* the whole dev config comes from here: main only generates the pair */
    list_is(&cfg.key_files, 1, "dev-keys/sa.pub");
    cr_assert_str_eq(CONFIG_DEV_KEY_FILE, "dev-keys/sa.pub");
    cr_assert_eq(cfg.allow_insecure_issuer, 1);
    cr_assert_eq(cfg.listen_count, 1);
    cr_assert_str_eq(cfg.listens[0].host, "127.0.0.1");
    cr_assert_eq(cfg.listens[0].port, 8080);
    cr_assert_eq(cfg.max_age, 3600);
    /* Ctrl-C stops dev at once: no load balancer waits for it to drain */
    cr_assert_eq(cfg.shutdown_grace, 0);
    ok("dev", "--shutdown-grace", "5s", NULL);
    cr_assert_eq(cfg.shutdown_grace, 5);
}

Test(config, dev_issuer_follows_first_listen)
{
    ok("dev", "--listen", "localhost:9000", "--listen", "127.0.0.1:9001", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "http://localhost:9000");
    ok("dev", "--listen", "[::1]:9443", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "http://[::1]:9443");
    cr_assert_str_eq(cfg.jwks_uri, "http://[::1]:9443/openid/v1/jwks");
}

Test(config, dev_with_issuer_and_keys)
{
    ok("dev", "--service-account-issuer", "http://x.example", "--service-account-key-file", "/k", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_DEV);
    cr_assert_str_eq(cfg.issuers.items[0], "http://x.example");
    list_is(&cfg.key_files, 1, "/k");
}

/* dev's defaults are dev's only: serve still requires its key files, and
 * keeps https unless told otherwise. */
Test(config, dev_defaults_stay_with_dev)
{
    fails("--service-account-key-file is required (at least one) unless --upstream or --signing-key-dir is given",
          "--service-account-issuer", "https://a.example", NULL);
    fails("--service-account-issuer \"http://a.example\": must be an https URL (--allow-insecure-issuer permits http "
          "for development only)",
          "export", "--service-account-issuer", "http://a.example", "--out", "/o", NULL);
    write_file("{\"service-account-key-file\": \"/file.pub\"}");
    ok("dev", "--config", path, NULL);
    list_is(&cfg.key_files, 1, "/file.pub");
}

Test(config, dev_validates_like_serve)
{
    fails("--max-age \"x\": " MAX_AGE_PROBLEM, "dev", "--max-age", "x", NULL);
    fails("--service-account-issuer \"ftp://x\": must be an https URL", "dev", "--service-account-issuer", "ftp://x",
          NULL);
    fails("--listen \"nope\": must be HOST:PORT, or [ADDRESS]:PORT for IPv6", "dev", "--listen", "nope", NULL);
}

/* ---- durations ---- */

Test(config, duration_forms)
{
    const struct {
        const char *s;
        unsigned long want;
    } good[] = {{"90s", 90},
                {"15m", 900},
                {"24h", 86400},
                {"7d", 604800},
                {"300", 300},
                {"0", 0},
                {"0s", 0},
                {"0d", 0},
                {"007m", 420},
                {"36500d", 3153600000},
                {"3153600000", 3153600000},
                {"52560000m", 3153600000}};
    unsigned long got;

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        got = 12345;
        cr_assert_eq(config_parse_duration(good[i].s, &got), 0, "%s rejected", good[i].s);
        cr_assert_eq(got, good[i].want, "%s: %lu", good[i].s, got);
    }
}

Test(config, duration_rejections)
{
    const char *bad[] = {"",
                         "-5",
                         "+5",
                         "5x",
                         "1h30m",
                         "1.5h",
                         " 5",
                         "5 ",
                         "s",
                         "d",
                         "5S",
                         "5ss",
                         "0x10",
                         "5\n",
                         "1e3",
                         "5 s",
                         "36501d",
                         "876001h",
                         "52560001m",
                         "3153600001",
                         "3153600001s",
                         "99999999999999999999",
                         "99999999999999999999d",
                         "18446744073709551617"};
    unsigned long got = 12345;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(config_parse_duration(bad[i], &got), -1, "\"%s\" accepted", bad[i]);
    cr_assert_eq(got, 12345, "*out written on failure");
}

/* ---- key rotation flags ---- */

Test(config, key_rotation_flags)
{
    OK_WITH("--key-reload-interval", "15m", "--key-retention", "7d", "--state-dir", "/var/lib/oidc",
            "--signing-key-file", "/etc/kubernetes/pki/sa.key", NULL);
    cr_assert_eq(cfg.key_reload_interval, 900);
    cr_assert_eq(cfg.key_retention, 604800);
    cr_assert_str_eq(cfg.state_dir, "/var/lib/oidc");
    cr_assert_str_eq(cfg.signing_key_file, "/etc/kubernetes/pki/sa.key");
}

Test(config, key_rotation_equals_form_and_last_wins)
{
    OK_WITH("--key-reload-interval=30", "--key-reload-interval=2h", "--state-dir=/a", "--state-dir=/b",
            "--key-retention=0", NULL);
    cr_assert_eq(cfg.key_reload_interval, 7200);
    cr_assert_str_eq(cfg.state_dir, "/b");
    cr_assert_eq(cfg.key_retention, 0);
}

Test(config, key_reload_interval_limits)
{
    OK_WITH("--key-reload-interval", "1s", NULL);
    cr_assert_eq(cfg.key_reload_interval, 1);
    OK_WITH("--key-reload-interval", "1d", NULL);
    cr_assert_eq(cfg.key_reload_interval, 86400);
    OK_WITH("--key-reload-interval", "86400", NULL);
    cr_assert_eq(cfg.key_reload_interval, 86400);
}

Test(config, key_retention_limits)
{
    OK_WITH("--key-retention", "3650d", "--state-dir", "/s", NULL);
    cr_assert_eq(cfg.key_retention, 315360000);
    OK_WITH("--key-retention", "1", "--state-dir", "/s", NULL);
    cr_assert_eq(cfg.key_retention, 1);
    OK_WITH("--key-retention", "0s", NULL);
    cr_assert_eq(cfg.key_retention, 0);
}

Test(config, key_retention_needs_state_dir)
{
    flag_fails(RETENTION_NEEDS, "--key-retention", "1s");
    fails(RETENTION_NEEDS, "dev", "--key-retention", "7d", NULL);
    fails(RETENTION_NEEDS, "keys", "--service-account-key-file", "/k", "--key-retention", "7d", NULL);
    /* a bad value is reported before the missing directory */
    flag_fails("--key-retention \"7x\": " RETENTION_PROBLEM, "--key-retention", "7x");
}

Test(config, path_flags_errors)
{
    flag_fails("--state-dir \"\": must not be empty", "--state-dir", "");
    flag_fails("--signing-key-file \"\": must not be empty", "--signing-key-file", "");
    fails("--state-dir: missing value", "--state-dir", NULL);
    fails("--key-retention: missing value", "--key-retention", NULL);
}

Test(config, key_rotation_flags_in_dev)
{
    ok("dev", "--key-reload-interval", "5s", "--signing-key-file", "/k.key", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_DEV);
    cr_assert_eq(cfg.key_reload_interval, 5);
    cr_assert_str_eq(cfg.signing_key_file, "/k.key");
    fails("--key-reload-interval \"0\": " RELOAD_PROBLEM, "dev", "--key-reload-interval", "0", NULL);
}

/* ---- keys ---- */

Test(config, keys_defaults)
{
    ok("keys", "--service-account-key-file", "/k.pub", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_KEYS);
    cr_assert_eq(cfg.issuers.count, 0);
    cr_assert_null(cfg.jwks_uri);
    cr_assert_eq(cfg.key_files.count, 1);
    cr_assert_str_eq(cfg.key_files.items[0], "/k.pub");
    cr_assert_str_eq(cfg.output, "table");
    cr_assert_eq(cfg.key_reload_interval, 60);
    cr_assert_eq(cfg.key_retention, 0);
    cr_assert_null(cfg.state_dir);
}

Test(config, keys_takes_serve_flags)
{
    ok("keys", "--service-account-issuer", "https://a.example", "--service-account-key-file", "/k1",
       "--service-account-key-file", "/k2", "--key-retention", "30d", "--state-dir", "/s", "--signing-key-file", "/k1",
       "--output", "table", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_KEYS);
    cr_assert_str_eq(cfg.issuers.items[0], "https://a.example");
    cr_assert_str_eq(cfg.jwks_uri, "https://a.example/openid/v1/jwks");
    cr_assert_eq(cfg.key_files.count, 2);
    cr_assert_eq(cfg.key_retention, 2592000);
    cr_assert_str_eq(cfg.state_dir, "/s");
    cr_assert_str_eq(cfg.signing_key_file, "/k1");
    cr_assert_str_eq(cfg.output, "table");
}

Test(config, keys_output_json)
{
    ok("keys", "--output", "json", "--service-account-key-file", "/k", NULL);
    cr_assert_str_eq(cfg.output, "json");
    ok("keys", "--output=table", "--service-account-key-file", "/k", "--output=json", NULL);
    cr_assert_str_eq(cfg.output, "json", "the last --output wins");
    ok("keys", "--output", "json", "--service-account-key-file", "/k", "--output", "table", NULL);
    cr_assert_str_eq(cfg.output, "table");
}

Test(config, keys_errors)
{
    fails("--service-account-key-file is required (at least one) unless --signing-key-dir is given", "keys", NULL);
    fails("--service-account-key-file is required (at least one) unless --signing-key-dir is given", "keys", "--output",
          "json", NULL);
    fails("--output \"yaml\": must be one of table, text, json", "keys", "--service-account-key-file", "/k", "--output",
          "yaml", NULL);
    fails("--output \"JSON\": must be one of table, text, json", "keys", "--service-account-key-file", "/k", "--output",
          "JSON", NULL);
    fails("--output \"\": must be one of table, text, json", "keys", "--service-account-key-file", "/k", "--output", "",
          NULL);
    fails("--output: missing value", "keys", "--output", NULL);
    /* an issuer given to keys is still checked */
    fails("--service-account-issuer \"http://a.example\": must be an https URL (--allow-insecure-issuer permits "
          "http for development only)",
          "keys", "--service-account-key-file", "/k", "--service-account-issuer", "http://a.example", NULL);
}

Test(config, output_only_for_keys)
{
    flag_fails("--output is only valid for the keys and doctor commands", "--output", "json");
    fails("--output is only valid for the keys and doctor commands", "serve", "--service-account-issuer",
          "https://a.example", "--service-account-key-file", "/k", "--output", "table", NULL);
    fails("--output is only valid for the keys and doctor commands", "dev", "--output", "json", NULL);
}

Test(config, keys_help_and_version)
{
    ok("keys", "--help", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_HELP);
    ok("keys", "--output", "bogus", "--version", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERSION);
}

Test(config, keys_from_config_file)
{
    write_file("{\"service-account-key-file\": [\"/k1\", \"/k2\"], \"key-retention\": \"14d\", \"state-dir\": \"/s\"}");
    ok("keys", "--config", path, "--output", "json", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_KEYS);
    cr_assert_eq(cfg.key_files.count, 2);
    cr_assert_eq(cfg.key_retention, 1209600);
    cr_assert_str_eq(cfg.state_dir, "/s");
    cr_assert_str_eq(cfg.output, "json");
}

/* ---- config_check_url ---- */

Test(config, check_url_valid)
{
    const char *good[] = {"https://a.example",
                          "https://a.example/",
                          "https://a.example:8443/some/path",
                          "https://1.2.3.4",
                          "https://[::1]:8443/x",
                          "https://a.example/p%20q/~user/a-b_c.d!$&'()*+,;=:@",
                          "https://container.googleapis.com/v1/projects/p/locations/l/clusters/c"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        cr_assert_null(config_check_url(good[i], 0), "%s: %s", good[i], config_check_url(good[i], 0));
    cr_assert_null(config_check_url("http://127.0.0.1:8080", 1));
    cr_assert_null(config_check_url("https://a.example", 1));
}

Test(config, check_url_invalid)
{
    const char *bad[][3] = {
        {"http://a.example", "must be an https URL (--allow-insecure-issuer permits http for development only)"},
        {"ftp://a.example", "must be an https URL"},
        {"a.example", "must be an https URL"},
        {"https:/a.example", "must be an https URL"},
        {"", "must be an https URL"},
        {"https://", "has no host"},
        {"https:///path", "has no host"},
        {"https://:443", "has no host"},
        {"https://[]:443", "has no host"},
        {"https://u:p@a.example", "must not contain user information"},
        {"https://a.example?", "must not have a query"},
        {"https://a.example/#x", "must not have a fragment"},
        {"https://a.example/\"", "contains a character not allowed in a URL"},
        {"https://a.example/%zz", "contains a character not allowed in a URL"},
        {"https://a.example/%4", "contains a character not allowed in a URL"},
        {"https://a.example/\xc3\xa4", "contains a character not allowed in a URL"},
        {"https://a.example:0", "has an invalid port"},
        {"https://a.example:65536", "has an invalid port"},
        {"https://a.example:", "has an invalid port"},
        {"https://a.example:x/", "has an invalid port"},
        {"https://[::1", "has an invalid host"},
        {"https://[::1]x", "has an invalid host"},
        {"https://[nothex]", "has an invalid host"},
        {"https://a]b", "has an invalid host"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *got = config_check_url(bad[i][0], 0);
        cr_assert_not_null(got, "%s accepted", bad[i][0]);
        cr_assert_str_eq(got, bad[i][1], "%s", bad[i][0]);
    }
    cr_assert_str_eq(config_check_url("ftp://a.example", 1), "must be an https URL");
}

Test(config, check_url_length)
{
    char url[2100];

    memset(url, 'a', sizeof url);
    memcpy(url, "https://a.example/", 18);
    url[2048] = '\0';
    cr_assert_null(config_check_url(url, 0));
    url[2048] = 'a';
    url[2049] = '\0';
    cr_assert_str_eq(config_check_url(url, 0), "is longer than 2048 characters");
}
