/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: --issuers-dir and the issuer files that
 * config_issuer_parse reads. Messages are asserted word for word since
 * operators read them; config_test_support.h holds the parse helpers.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "test_support.h"
#include "config_test_support.h"

static struct config issuer;
static char issuer_path[64];

static void issuer_teardown(void)
{
    config_free(&issuer);
    if (issuer_path[0])
        unlink(issuer_path);
    issuer_path[0] = '\0';
}

/* Writes an issuer file under /tmp, remembered in issuer_path. */
static void write_issuer(const char *content)
{
    int fd;

    snprintf(issuer_path, sizeof issuer_path, "/tmp/test_issuer_XXXXXX");
    fd = mkstemp(issuer_path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
}

/* Parses the issuer file with content against the fleet config in cfg:
 * the result of config_issuer_parse, into issuer and err. */
static int parse_issuer(const char *content)
{
    write_issuer(content);
    config_free(&issuer);
    err[0] = '\0';
    return config_issuer_parse(&cfg, issuer_path, "a", &issuer, err, sizeof err);
}

/* Requires the issuer file with content to be refused with
 * "config file PATH: <want>" and issuer left empty. */
static void issuer_fails(const char *content, const char *want)
{
    static const struct config zero;
    char full[CONFIG_ERR_MAX];

    cr_assert_eq(parse_issuer(content), -1, "accepted, wanted: %s", want);
    snprintf(full, sizeof full, "config file %s: %s", issuer_path, want);
    cr_assert_str_eq(err, full);
    cr_assert(memcmp(&issuer, &zero, sizeof issuer) == 0, "issuer config not left empty on error");
}

TestSuite(fleet, .fini = issuer_teardown);

Test(fleet, flag_is_kept_and_needs_no_issuer)
{
    ok("--issuers-dir", "/etc/issuers", NULL);
    cr_assert_str_eq(cfg.issuers_dir, "/etc/issuers");
    cr_assert_eq(cfg.issuers.count, 0);
    cr_assert_eq(cfg.key_files.count, 0);
    cr_assert_not_null(cfg.sources);
    issuer_teardown();
}

Test(fleet, one_way_to_declare_issuers)
{
    fails("--issuers-dir and --service-account-issuer are mutually exclusive: each file of --issuers-dir names its "
          "issuer",
          "--issuers-dir", "/d", "--service-account-issuer", "https://a.example", NULL);
    fails("--issuers-dir and --signing-key-dir are mutually exclusive: not per issuer yet (docs/fleet.md)",
          "--issuers-dir", "/d", "--signing-key-dir", "/s", NULL);
    /* one API server cannot answer for every cluster of a fleet */
    fails("--issuers-dir and --token-review-check-bound-objects are mutually exclusive: not per issuer yet "
          "(docs/fleet.md)",
          "--issuers-dir", "/d", "--enable-token-review", "--token-review-listen", "127.0.0.1:0", "--upstream",
          "https://api.example", "--token-review-check-bound-objects", NULL);
    fails("--issuers-dir is not valid for the publish command", "publish", "--issuers-dir", "/d", NULL);
}

Test(fleet, file_overrides_command_line_defaults)
{
    ok("--issuers-dir", "/d", "--max-age", "10m", "--service-account-key-file", "/default.pub", "--api-audiences", "x",
       NULL);
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example/c/1\", \"max-age\": \"2m\","
                              " \"service-account-key-file\": [\"/a.pub\", \"/b.pub\"]}"),
                 0, "%s", err);
    cr_assert_str_eq(issuer.issuers.items[0], "https://h.example/c/1");
    cr_assert_str_eq(issuer.jwks_uri, "https://h.example/c/1/openid/v1/jwks");
    cr_assert_eq(issuer.max_age, 120);
    list_is(&issuer.key_files, 2, "/a.pub", "/b.pub");
    list_is(&issuer.api_audiences, 1, "x");
    cr_assert_null(issuer.issuers_dir);
    cr_assert_null(issuer.sources);
    /* what the file leaves out is the command line's */
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example/c/2\"}"), 0, "%s", err);
    cr_assert_eq(issuer.max_age, 600);
    list_is(&issuer.key_files, 1, "/default.pub");
    cr_assert_eq(issuer.threads, cfg.threads);
}

Test(fleet, config_file_is_a_default_too)
{
    write_file("{\"issuers-dir\": \"/d\", \"max-age\": 30, \"service-account-key-file\": \"/k.pub\"}");
    ok("--config", path, NULL);
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example\"}"), 0, "%s", err);
    cr_assert_eq(issuer.max_age, 30);
    list_is(&issuer.key_files, 1, "/k.pub");
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example\", \"max-age\": 40}"), 0, "%s", err);
    cr_assert_eq(issuer.max_age, 40);
}

Test(fleet, refusals_name_the_file_and_key)
{
    char want[CONFIG_ERR_MAX];

    ok("--issuers-dir", "/d", "--service-account-key-file", "/k.pub", NULL);
    issuer_fails("{\"service-account-issuer\": \"https://h.example\", \"listen\": \"127.0.0.1:1\"}",
                 "key \"listen\": is not a per-issuer setting: give it on the command line or in --config, for "
                 "every issuer");
    issuer_fails("{\"max-age\": 5}", "key \"service-account-issuer\": is required (the issuer's URL)");
    issuer_fails("{\"service-account-issuer\": \"https://h.example\", \"max-agee\": 5}",
                 "unknown key \"max-agee\"; did you mean \"max-age\"?");
    issuer_fails("{\"service-account-issuer\": \"https://h.example\", \"max-age\": true}",
                 "key \"max-age\": " MAX_AGE_PROBLEM);
    issuer_fails("{\"service-account-issuer\": \"http://h.example\"}",
                 "key \"service-account-issuer\": must be an https URL (--allow-insecure-issuer permits http for "
                 "development only)");
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example\", \"key-retention\": \"1h\"}"), -1);
    snprintf(want, sizeof want, "issuer file %s: " RETENTION_NEEDS, issuer_path);
    cr_assert_str_eq(err, want);
}

Test(fleet, keys_required_per_issuer)
{
    ok("--issuers-dir", "/d", NULL);
    char want[CONFIG_ERR_MAX];

    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example\"}"), -1);
    snprintf(want, sizeof want,
             "issuer file %s: --service-account-key-file is required (at least one) unless --upstream or "
             "--signing-key-dir is given",
             issuer_path);
    cr_assert_str_eq(err, want);
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example\", \"service-account-key-file\": "
                              "\"/k\"}"),
                 0, "%s", err);
}

Test(fleet, state_dir_per_issuer)
{
    ok("--issuers-dir", "/d", "--state-dir", "/var/lib/oidc", "--service-account-key-file", "/k.pub", NULL);
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example\", \"key-retention\": \"1h\"}"), 0,
                 "%s", err);
    cr_assert_str_eq(issuer.state_dir, "/var/lib/oidc/a");
    cr_assert_eq(issuer.key_retention, 3600);
}

Test(fleet, unreadable_file)
{
    ok("--issuers-dir", "/d", "--service-account-key-file", "/k.pub", NULL);
    cr_assert_eq(config_issuer_parse(&cfg, "/nonexistent/a.json", "a", &issuer, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "issuer file "), "%s", err);
    cr_assert_not_null(strstr(err, "/nonexistent/a.json"), "%s", err);
}

Test(fleet, not_a_fleet)
{
    OK_WITH(NULL);
    cr_assert_null(cfg.sources);
    cr_assert_eq(config_issuer_parse(&cfg, "/x.json", "x", &issuer, err, sizeof err), -1);
    cr_assert_str_eq(err, "issuer file /x.json: no --issuers-dir");
}

Test(fleet, upstream_per_issuer_with_command_line_defaults)
{
    /* a default that needs --upstream is checked in the files that use it */
    ok("--issuers-dir", "/d", "--upstream-token-file", "/t", "--upstream-refresh-interval", "30s",
       "--service-account-key-file", "/k.pub", NULL);
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example/c/1\", \"upstream\": "
                              "\"https://api.c1.example:6443\", \"upstream-ca-file\": \"/c1-ca.crt\"}"),
                 0, "%s", err);
    cr_assert_str_eq(issuer.upstream, "https://api.c1.example:6443");
    cr_assert_str_eq(issuer.upstream_ca_file, "/c1-ca.crt");
    cr_assert_str_eq(issuer.upstream_token_file, "/t");
    cr_assert_eq(issuer.upstream_refresh_interval, 30);
    /* a file that does not mirror leaves the defaults unused */
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example/c/2\"}"), 0, "%s", err);
    cr_assert_null(issuer.upstream);
    /* a file's own setting still needs its upstream */
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example/c/3\", \"upstream-ca-file\": "
                              "\"/ca\"}"),
                 -1);
    cr_assert(strstr(err, "--upstream-ca-file needs --upstream") != NULL, "%s", err);
}

Test(fleet, publish_to_default_gets_the_issuer_path_or_name)
{
    ok("--issuers-dir", "/d", "--publish-to", "s3://bkt/fleet/", "--service-account-key-file", "/k.pub", NULL);
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example/id/c1/\"}"), 0, "%s", err);
    list_is(&issuer.publish_to, 1, "s3://bkt/fleet/id/c1");
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://c2.h.example\"}"), 0, "%s", err);
    list_is(&issuer.publish_to, 1, "s3://bkt/fleet/a"); /* no path: the file's NAME */
    cr_assert_eq(parse_issuer("{\"service-account-issuer\": \"https://h.example/id/c3\", \"publish-to\": "
                              "\"s3://other/x\"}"),
                 0, "%s", err);
    list_is(&issuer.publish_to, 1, "s3://other/x");
}
