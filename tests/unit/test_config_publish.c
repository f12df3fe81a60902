/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: the export, publish and doctor commands. Error
 * messages are asserted word for word since operators read them;
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

/* ---- export ---- */

#define OUT_REQUIRED "--out is required (the directory to write the documents into)"

Test(config, export_defaults)
{
    ok(EXPORT_ARGS, NULL);
    cr_assert_eq(cmd, CONFIG_CMD_EXPORT);
    cr_assert_str_eq(cfg.export_dir, "/o");
    list_is(&cfg.issuers, 1, "https://a.example");
    list_is(&cfg.key_files, 1, "/k.pub");
    cr_assert_str_eq(cfg.jwks_uri, "https://a.example/openid/v1/jwks");
    cr_assert_eq(cfg.max_age, 3600);
    cr_assert_str_eq(cfg.jwks_content_type, "application/jwk-set+json");
    cr_assert_eq(cfg.key_retention, 0);
    cr_assert_null(cfg.state_dir);
    cr_assert_eq(cfg.allow_insecure_issuer, 0);
}

Test(config, export_takes_document_flags)
{
    ok("export", "--service-account-issuer", "http://a.example/x/", "--service-account-issuer", "https://b.example",
       "--service-account-key-file", "/k1", "--service-account-key-file", "/k2", "--service-account-jwks-uri",
       "http://cdn.example/jwks", "--max-age", "600", "--jwks-content-type", "application/json",
       "--allow-insecure-issuer", "--key-retention", "24h", "--state-dir", "/s", "--log-level", "debug", "--log-format",
       "json", "--out=/o/", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_EXPORT);
    list_is(&cfg.issuers, 2, "http://a.example/x/", "https://b.example");
    list_is(&cfg.key_files, 2, "/k1", "/k2");
    cr_assert_str_eq(cfg.jwks_uri, "http://cdn.example/jwks");
    cr_assert_eq(cfg.max_age, 600);
    cr_assert_str_eq(cfg.jwks_content_type, "application/json");
    cr_assert_eq(cfg.allow_insecure_issuer, 1);
    cr_assert_eq(cfg.key_retention, 86400);
    cr_assert_str_eq(cfg.state_dir, "/s");
    cr_assert_str_eq(cfg.log_level, "debug");
    cr_assert_str_eq(cfg.log_format, "json");
    cr_assert_str_eq(cfg.export_dir, "/o/");
}

Test(config, export_required)
{
    fails(OUT_REQUIRED, "export", SERVE_ARGS, NULL);
    fails("--service-account-issuer is required (at least one)", "export", "--service-account-key-file", "/k", "--out",
          "/o", NULL);
    fails("--service-account-key-file is required (at least one) unless --signing-key-dir is given", "export",
          "--service-account-issuer", "https://a.example", "--out", "/o", NULL);
    fails("--service-account-issuer is required (at least one)", "export", NULL);
}

Test(config, export_value_errors)
{
    fails("--out \"\": must not be empty", EXPORT_ARGS, "--out", "", NULL);
    fails("--out: missing value", "export", SERVE_ARGS, "--out", NULL);
    fails("--max-age \"-1\": " MAX_AGE_PROBLEM, EXPORT_ARGS, "--max-age", "-1", NULL);
    fails("--service-account-issuer \"http://a.example\": must be an https URL (--allow-insecure-issuer permits "
          "http for development only)",
          "export", "--service-account-issuer", "http://a.example", "--service-account-key-file", "/k", "--out", "/o",
          NULL);
    fails("--key-retention needs --state-dir, so that retained keys survive a restart", EXPORT_ARGS, "--key-retention",
          "1d", NULL);
}

Test(config, out_only_for_export)
{
    flag_fails("--out" ONLY_FOR_EXPORT, "--out", "/o");
    fails("--out" ONLY_FOR_EXPORT, "dev", "--out", "/o", NULL);
    fails("--out" ONLY_FOR_EXPORT, "keys", "--service-account-key-file", "/k", "--out", "/o", NULL);
    fails("--out" ONLY_FOR_EXPORT, VERIFY_ARGS, "--out", "/o", NULL);
    fails("--out" ONLY_FOR_EXPORT, TOKEN_ARGS, "--out", "/o", NULL);
}

Test(config, export_reads_serves_config_file)
{
    /* one file for serve and export: the listener keys are serve's to read */
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": [\"/k1\"], "
               "\"listen\": \"0.0.0.0:8080\", \"max-age\": 60, \"jwks-content-type\": \"application/json\", "
               "\"key-retention\": \"2d\", \"state-dir\": \"/s\"}");
    ok("export", "--config", path, "--out", "/o", "--max-age", "120", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_EXPORT);
    list_is(&cfg.key_files, 1, "/k1");
    cr_assert_eq(cfg.max_age, 120, "flags override the file");
    cr_assert_str_eq(cfg.jwks_content_type, "application/json");
    cr_assert_eq(cfg.key_retention, 172800);
    cr_assert_str_eq(cfg.state_dir, "/s");
    cr_assert_str_eq(cfg.export_dir, "/o");
    file_fails("{\"out\": \"/o\"}", "unknown key \"out\" (--out is a command-line flag only)");
}

Test(config, export_help_and_version)
{
    ok("export", "--help", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_HELP);
    ok("export", "--listen", "x", "--version", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERSION);
    cr_assert_null(cfg.export_dir, "defaults only");
}

/* ---- publishing to object storage ---- */

#define PUBLISH_ARGS "publish", "--to", "s3://oidc/cluster-1", SERVE_ARGS
#define HTTP_ENDPOINT_WARNING                                                                                          \
    "plain http: the documents and the signed requests travel unencrypted; for a local store only"

Test(config, publish_defaults)
{
    ok(PUBLISH_ARGS, NULL);
    cr_assert_eq(cmd, CONFIG_CMD_PUBLISH);
    list_is(&cfg.push_to, 1, "s3://oidc/cluster-1");
    cr_assert_eq(cfg.publish_to.count, 0);
    cr_assert_str_eq(cfg.s3_region, "us-east-1");
    cr_assert_null(cfg.s3_endpoint);
    cr_assert_null(cfg.azblob_endpoint);
    cr_assert_null(cfg.azblob_sas_file);
    cr_assert_null(cfg.azblob_key_file);
    cr_assert_str_eq(cfg.jwks_uri, "https://a.example/openid/v1/jwks");
    cr_assert_eq(cfg.warnings.count, 0);
}

Test(config, publish_takes_document_and_store_flags)
{
    ok("publish", "--to", "s3://oidc/a/", "--to", "azblob://acct1/$web", "--s3-region", "auto", "--s3-endpoint",
       "https://storage.googleapis.com", "--azblob-endpoint", "https://acct1.blob.core.windows.net/",
       "--azblob-key-file", "/key", "--max-age", "600", "--jwks-content-type", "application/json", "--key-retention",
       "1h", "--state-dir", "/s", SERVE_ARGS, NULL);
    list_is(&cfg.push_to, 2, "s3://oidc/a/", "azblob://acct1/$web");
    cr_assert_str_eq(cfg.s3_region, "auto");
    cr_assert_str_eq(cfg.s3_endpoint, "https://storage.googleapis.com");
    cr_assert_str_eq(cfg.azblob_endpoint, "https://acct1.blob.core.windows.net/");
    cr_assert_str_eq(cfg.azblob_key_file, "/key");
    cr_assert_eq(cfg.max_age, 600);
    cr_assert_eq(cfg.warnings.count, 0, "https endpoints: no warning");
}

Test(config, serve_publish_to)
{
    OK_WITH("--publish-to", "s3://oidc", "--publish-to", "azblob://devstoreaccount1/oidc/c-1", "--azblob-sas-file",
            "/sas", "--publish-check-interval", "2s", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_SERVE);
    list_is(&cfg.publish_to, 2, "s3://oidc", "azblob://devstoreaccount1/oidc/c-1");
    cr_assert_str_eq(cfg.azblob_sas_file, "/sas");
    cr_assert_eq(cfg.publish_check_interval, 2);
    OK_WITH(NULL);
    cr_assert_eq(cfg.publish_check_interval, 300, "default 5m");
    cr_assert_eq(cfg.publish_to.count, 0);
    ok("keys", "--service-account-key-file", "/k", "--publish-to", "s3://oidc/p", NULL);
    list_is(&cfg.publish_to, 1, "s3://oidc/p");
    ok("dev", "--publish-to", "s3://oidc/p", NULL);
    list_is(&cfg.publish_to, 1, "s3://oidc/p");
}

Test(config, publish_flags_by_command)
{
    fails("--to is only valid for the publish command; did you mean --publish-to?", SERVE_ARGS, "--to", "s3://oidc",
          NULL);
    fails("--publish-to is not valid for the publish command; did you mean --to?", PUBLISH_ARGS, "--publish-to",
          "s3://oidc", NULL);
    fails("--publish-check-interval is not valid for the publish command", PUBLISH_ARGS, "--publish-check-interval",
          "1s", NULL);
    fails("--s3-region is not valid for the export command", "export", "--out", "/o", SERVE_ARGS, "--s3-region",
          "eu-west-1", NULL);
    fails("--to is required (s3://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX)", "publish", SERVE_ARGS, NULL);
    fails("--service-account-issuer is required (at least one)", "publish", "--to", "s3://oidc",
          "--service-account-key-file", "/k", NULL);
    flag_fails("--publish-check-interval \"0\": must be a duration between 1s and 1d (like 90s, 15m, 24h, 7d or "
               "plain seconds)",
               "--publish-check-interval", "0");
}

/* Every target form config accepts, and where each part is. */
static const struct target_case {
    const char *url;
    enum config_bucket_kind kind;
    const char *bucket, *container, *prefix;
} good_targets[] = {
    {"s3://oidc", CONFIG_BUCKET_S3, "oidc", "", ""},
    {"s3://oidc/", CONFIG_BUCKET_S3, "oidc", "", ""},
    {"s3://my.bucket-1/a/b_c/d~e.f/", CONFIG_BUCKET_S3, "my.bucket-1", "", "a/b_c/d~e.f"},
    {"azblob://acct1/oidc", CONFIG_BUCKET_AZBLOB, "acct1", "oidc", ""},
    {"azblob://acct1/$web/cluster-1", CONFIG_BUCKET_AZBLOB, "acct1", "$web", "cluster-1"},
    {"azblob://devstoreaccount1/c-1/x/", CONFIG_BUCKET_AZBLOB, "devstoreaccount1", "c-1", "x"},
};

ParameterizedTestParameters(config, bucket_url_forms)
{
    TABLE_PARAMETERS(good_targets);
}

ParameterizedTest(size_t *i, config, bucket_url_forms)
{
    const struct target_case *c = &good_targets[*i];
    struct config_bucket_url u;

    cr_assert_null(config_split_bucket_url(c->url, &u), "%s", c->url);
    cr_assert_eq(u.kind, c->kind);
    cr_assert_eq(u.bucket_len, strlen(c->bucket));
    cr_assert(memcmp(u.bucket, c->bucket, u.bucket_len) == 0, "%s: bucket", c->url);
    cr_assert_eq(u.container_len, strlen(c->container));
    cr_assert(u.container_len == 0 || memcmp(u.container, c->container, u.container_len) == 0, "%s", c->url);
    cr_assert_eq(u.prefix_len, strlen(c->prefix), "%s: prefix length %zu", c->url, u.prefix_len);
    cr_assert(u.prefix_len == 0 || memcmp(u.prefix, c->prefix, u.prefix_len) == 0, "%s: prefix", c->url);
}

#define FORM_PROBLEM "must be s3://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX"
#define S3_NAME_PROBLEM                                                                                                \
    "has an invalid bucket name (3 to 63 of a-z, 0-9, '.' and '-', starting and ending with a letter or digit)"
#define BUCKET_PREFIX_PROBLEM                                                                                          \
    "has an invalid PREFIX (segments of A-Z, a-z, 0-9, '.', '_', '~' and '-', none empty, \".\" or \"..\"; at most "   \
    "512 characters)"
#define ACCOUNT_PROBLEM "has an invalid storage account name (3 to 24 of a-z and 0-9)"
#define CONTAINER_PROBLEM                                                                                              \
    "has an invalid container name (3 to 63 of a-z, 0-9 and '-', starting with a letter or digit, or $web)"

static const struct refusal {
    const char *value, *problem;
} bad_targets[] = {
    {"https://oidc/x", FORM_PROBLEM},
    {"s3://", FORM_PROBLEM},
    {"s3:///p", FORM_PROBLEM},
    {"s3://Oidc/p", S3_NAME_PROBLEM},
    {"s3://ab/p", S3_NAME_PROBLEM},
    {"s3://-oidc/p", S3_NAME_PROBLEM},
    {"s3://oidc/a//b", BUCKET_PREFIX_PROBLEM},
    {"s3://oidc/a/../b", BUCKET_PREFIX_PROBLEM},
    {"s3://oidc/./b", BUCKET_PREFIX_PROBLEM},
    {"s3://oidc/a b", BUCKET_PREFIX_PROBLEM},
    {"s3://oidc/a%2Fb", BUCKET_PREFIX_PROBLEM},
    {"s3://oidc/a?x=1", BUCKET_PREFIX_PROBLEM},
    {"azblob://acct1", FORM_PROBLEM},
    {"azblob://acct1/", FORM_PROBLEM},
    {"azblob://Acct1/c1", ACCOUNT_PROBLEM},
    {"azblob://acct-1/c1", ACCOUNT_PROBLEM},
    {"azblob://acct1/c", CONTAINER_PROBLEM},
    {"azblob://acct1/c--1", CONTAINER_PROBLEM},
    {"azblob://acct1/$logs", CONTAINER_PROBLEM},
};

ParameterizedTestParameters(config, bucket_url_refusals)
{
    TABLE_PARAMETERS(bad_targets);
}

ParameterizedTest(size_t *i, config, bucket_url_refusals)
{
    char want[CONFIG_ERR_MAX];

    snprintf(want, sizeof want, "--publish-to \"%s\": %s", bad_targets[*i].value, bad_targets[*i].problem);
    flag_fails(want, "--publish-to", bad_targets[*i].value);
}

#define ENDPOINT_PROBLEM                                                                                               \
    "must be an http or https URL with a host, an optional port and no path, like http://127.0.0.1:9000"

Test(config, endpoint_and_region_checks)
{
    flag_fails("--s3-endpoint \"ftp://x\": " ENDPOINT_PROBLEM, "--s3-endpoint", "ftp://x");
    flag_fails("--s3-endpoint \"https://x/bucket\": " ENDPOINT_PROBLEM, "--s3-endpoint", "https://x/bucket");
    flag_fails("--azblob-endpoint \"http://x?a=b\": " ENDPOINT_PROBLEM, "--azblob-endpoint", "http://x?a=b");
    flag_fails("--s3-endpoint \"https://u@x\": " ENDPOINT_PROBLEM, "--s3-endpoint", "https://u@x");
    flag_fails("--s3-region \"EU\": must be 1 to 64 of a-z, 0-9 and '-', like eu-west-1 (GCS: auto)", "--s3-region",
               "EU");
}

Test(config, http_endpoint_warns)
{
    OK_WITH("--publish-to", "s3://oidc", "--s3-endpoint", "http://127.0.0.1:9000", NULL);
    list_is(&cfg.warnings, 1, "--s3-endpoint \"http://127.0.0.1:9000\": " HTTP_ENDPOINT_WARNING);
    ok("publish", "--to", "azblob://acct1/oidc", "--azblob-endpoint", "http://[::1]:10000", SERVE_ARGS, NULL);
    list_is(&cfg.warnings, 1, "--azblob-endpoint \"http://[::1]:10000\": " HTTP_ENDPOINT_WARNING);
}

Test(config, store_flags_need_their_target)
{
    flag_fails("--s3-endpoint needs an s3:// target (--publish-to s3://BUCKET/PREFIX)", "--s3-endpoint", "https://x");
    fails("--azblob-sas-file needs an azblob:// target (--to azblob://ACCOUNT/CONTAINER/PREFIX)", PUBLISH_ARGS,
          "--azblob-sas-file", "/s", NULL);
    fails("--azblob-endpoint needs an azblob:// target (--publish-to azblob://ACCOUNT/CONTAINER/PREFIX)", SERVE_ARGS,
          "--publish-to", "s3://oidc", "--azblob-endpoint", "http://x", NULL);
    fails("--azblob-sas-file and --azblob-key-file are mutually exclusive (a SAS token or the account key)", SERVE_ARGS,
          "--publish-to", "azblob://acct1/oidc", "--azblob-sas-file", "/s", "--azblob-key-file", "/k", NULL);
}

Test(config, publish_to_from_config_file)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\", "
               "\"publish-to\": [\"s3://oidc/a\", \"s3://oidc/b\"], \"s3-region\": \"eu-west-1\", "
               "\"publish-check-interval\": \"10m\"}");
    ok("--config", path, NULL);
    list_is(&cfg.publish_to, 2, "s3://oidc/a", "s3://oidc/b");
    cr_assert_str_eq(cfg.s3_region, "eu-west-1");
    cr_assert_eq(cfg.publish_check_interval, 600);
    ok("--config", path, "--publish-to", "s3://oidc/c", NULL);
    list_is(&cfg.publish_to, 1, "s3://oidc/c");
}

/* ---- doctor ---- */

#define DOCTOR_ARGS "doctor", "--issuer", "https://a.example"

/* doctor takes any http(s) issuer: an http one, a query or a trailing
 * slash are its findings (FAIL or noted), not usage errors; and it adds
 * no audience nobody asked for. */
Test(config, doctor_takes_any_web_issuer)
{
    ok("doctor", "--issuer", "http://127.0.0.1:8080/x/?tenant=1#f", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_DOCTOR);
    cr_assert_str_eq(cfg.mint_issuer, "http://127.0.0.1:8080/x/?tenant=1#f");
    cr_assert_eq(cfg.audiences.count, 0, "no default audience");
    cr_assert_eq(cfg.targets.count, 0);
    cr_assert_null(cfg.token_file);
    cr_assert_null(cfg.ca_file);
    cr_assert_str_eq(cfg.output, "table");
    cr_assert_eq(cfg.allow_insecure_issuer, 0);
    cr_assert_eq(cfg.warnings.count, 0, "doctor reports the trailing slash itself");
    fails("--issuer \"ftp://a.example\": must be an https URL", "doctor", "--issuer", "ftp://a.example", NULL);
    fails("--issuer \"https://:8443\": has no host", "doctor", "--issuer", "https://:8443", NULL);
    fails("--issuer is required", "doctor", NULL);
}

/* token's --issuer shares the row and stays strict. */
Test(config, token_issuer_stays_strict)
{
    fails("--issuer \"https://a.example#x\": must not have a fragment", TOKEN_ARGS, "--issuer", "https://a.example#x",
          NULL);
    fails("--issuer \"ftp://a.example\": must be an https URL", TOKEN_ARGS, "--issuer", "ftp://a.example", NULL);
}

Test(config, doctor_flags)
{
    ok(DOCTOR_ARGS, "--ca-file", "/ca.pem", "--token-file", "-", "--audience", "sts.amazonaws.com", "--audience", "b",
       "--target", "aws", "--output", "json", "--allow-insecure-issuer", NULL);
    cr_assert_str_eq(cfg.ca_file, "/ca.pem");
    cr_assert_str_eq(cfg.token_file, "-");
    cr_assert_eq(cfg.audiences.count, 2);
    cr_assert_str_eq(cfg.audiences.items[0], "sts.amazonaws.com");
    cr_assert_eq(cfg.targets.count, 1);
    cr_assert_str_eq(cfg.targets.items[0], "aws");
    cr_assert_str_eq(cfg.output, "json");
    cr_assert_eq(cfg.allow_insecure_issuer, 1);
    for (const char *const *t = (const char *const[]){"gcp", "azure", "vault", NULL}; *t; t++) {
        ok(DOCTOR_ARGS, "--target", *t, NULL);
        cr_assert_str_eq(cfg.targets.items[0], *t);
    }
    /* several relying parties at once, each checked */
    ok(DOCTOR_ARGS, "--target", "aws", "--target", "gcp", NULL);
    cr_assert_eq(cfg.targets.count, 2);
    cr_assert_str_eq(cfg.targets.items[0], "aws");
    cr_assert_str_eq(cfg.targets.items[1], "gcp");
    ok(DOCTOR_ARGS, "--output", "text", NULL);
    cr_assert_str_eq(cfg.output, "text");
    ok("keys", "--service-account-key-file", "/k", "--output", "text", NULL);
    cr_assert_str_eq(cfg.output, "text");
}

Test(config, doctor_errors)
{
    fails("--target \"AWS\": must be one of aws, gcp, azure, vault", DOCTOR_ARGS, "--target", "AWS", NULL);
    fails("--target \"gpc\": must be one of aws, gcp, azure, vault", DOCTOR_ARGS, "--target", "aws", "--target", "gpc",
          NULL);
    fails("--output \"yaml\": must be one of table, text, json", DOCTOR_ARGS, "--output", "yaml", NULL);
    fails("--service-account-issuer is not valid for the doctor command; did you mean --issuer?", DOCTOR_ARGS,
          "--service-account-issuer", "https://a.example", NULL);
    fails("--discovery-url is only valid for the verify command", DOCTOR_ARGS, "--discovery-url", "https://a.example",
          NULL);
    fails("--target is only valid for the doctor command", SERVE_ARGS, "--target", "aws", NULL);
    fails("unknown flag \"--relying-party\"; did you mean --target? (see --help)", DOCTOR_ARGS, "--relying-party",
          "aws", NULL);
}

Test(config, doctor_help)
{
    static const char *const doctor[] = {
        "Usage: oidc-discovery doctor --issuer URL [flags]",
        "Exit status: 0 without FAIL, 1 with a FAIL, 2 for usage errors.",
        "\nWhat to check (not config-file keys):\n  --target RP ",
        "aws, gcp, azure or vault (default none)",
        "--token-file PATH",
        "--ca-file PATH",
        "--audience AUD",
        "--output table|text|json",
        "--allow-insecure-issuer",
        NULL,
    };

    help_has(CONFIG_CMD_DOCTOR, doctor);
}
