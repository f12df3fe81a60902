/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: the config file. Error messages are asserted word
 * for word since operators read them; config_test_support.h holds the parse
 * helpers.
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

/* ---- config file ---- */

Test(config, file_every_key)
{
    write_file("{\"service-account-issuer\": [\"https://a.example/\", \"https://b.example\"],\n"
               " \"service-account-jwks-uri\": \"https://cdn.example/keys\",\n"
               " \"service-account-key-file\": [\"/k1\", \"/k2\"],\n"
               " \"listen\": [\"0.0.0.0:8080\", \"[::]:8080\"],\n"
               " \"threads\": 2, \"max-age\": 600,\n"
               " \"jwks-content-type\": \"application/json\",\n"
               " \"cors\": false, \"allow-insecure-issuer\": true}\n");
    ok("--config", path, NULL);
    cr_assert_eq(cfg.issuers.count, 2);
    cr_assert_str_eq(cfg.issuers.items[0], "https://a.example/");
    cr_assert_str_eq(cfg.issuers.items[1], "https://b.example");
    cr_assert_str_eq(cfg.jwks_uri, "https://cdn.example/keys");
    cr_assert_eq(cfg.key_files.count, 2);
    cr_assert_str_eq(cfg.key_files.items[1], "/k2");
    cr_assert_eq(cfg.listen_count, 2);
    cr_assert_str_eq(cfg.listens[0].host, "0.0.0.0");
    cr_assert_str_eq(cfg.listens[1].host, "::");
    cr_assert_eq(cfg.listens[1].port, 8080);
    cr_assert_eq(cfg.threads, 2);
    cr_assert_eq(cfg.max_age, 600);
    cr_assert_str_eq(cfg.jwks_content_type, "application/json");
    cr_assert_eq(cfg.cors, 0);
    cr_assert_eq(cfg.allow_insecure_issuer, 1);
}

Test(config, file_single_strings_for_lists)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\","
               " \"listen\": \"[::1]:9000\"}");
    ok("--config", path, NULL);
    cr_assert_eq(cfg.issuers.count, 1);
    cr_assert_str_eq(cfg.issuers.items[0], "https://a.example");
    cr_assert_str_eq(cfg.jwks_uri, "https://a.example/openid/v1/jwks");
    cr_assert_eq(cfg.key_files.count, 1);
    cr_assert_str_eq(cfg.key_files.items[0], "/k");
    cr_assert_eq(cfg.listen_count, 1);
    cr_assert_str_eq(cfg.listens[0].host, "::1");
    cr_assert_eq(cfg.listens[0].port, 9000);
}

Test(config, file_values_used_when_flags_absent)
{
    write_file("{\"service-account-issuer\": [\"https://file.example\"], \"service-account-key-file\": [\"/f\"],"
               " \"max-age\": 600, \"listen\": [\"127.0.0.1:1\", \"127.0.0.1:2\"]}");
    ok("--threads", "3", "--config", path, NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "https://file.example");
    cr_assert_eq(cfg.max_age, 600);
    cr_assert_eq(cfg.threads, 3);
    cr_assert_eq(cfg.listen_count, 2);
    cr_assert_eq(cfg.listens[1].port, 2);
}

Test(config, flags_replace_file_lists)
{
    write_file("{\"service-account-issuer\": [\"https://a.example\"], \"service-account-key-file\": [\"/f1\", \"/f2\"],"
               " \"listen\": [\"127.0.0.1:1\", \"127.0.0.1:2\"], \"max-age\": 600, \"cors\": false}");
    /* flags before and after --config both win */
    ok("--max-age", "60", "--service-account-key-file", "/c1", "--config", path, "--service-account-issuer",
       "https://b.example", "--service-account-key-file", "/c2", "--cors", NULL);
    cr_assert_eq(cfg.issuers.count, 1);
    cr_assert_str_eq(cfg.issuers.items[0], "https://b.example");
    cr_assert_str_eq(cfg.jwks_uri, "https://b.example/openid/v1/jwks");
    cr_assert_eq(cfg.key_files.count, 2);
    cr_assert_str_eq(cfg.key_files.items[0], "/c1");
    cr_assert_str_eq(cfg.key_files.items[1], "/c2");
    cr_assert_eq(cfg.listen_count, 2, "the file's listens stay when no --listen is given");
    cr_assert_eq(cfg.max_age, 60);
    cr_assert_eq(cfg.cors, 1);
}

Test(config, file_allow_insecure_applies_to_flag_issuer)
{
    write_file("{\"allow-insecure-issuer\": true, \"service-account-key-file\": \"/k\"}");
    ok("--config", path, "--service-account-issuer", "http://a.example", NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "http://a.example");
}

Test(config, file_empty_object_and_dev)
{
    write_file("{}");
    ok("dev", "--config", path, NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "http://127.0.0.1:8080");
    write_file(" {\"listen\": \"127.0.0.1:9999\"} ");
    ok("dev", "--config", path, NULL);
    cr_assert_str_eq(cfg.issuers.items[0], "http://127.0.0.1:9999");
}

Test(config, file_empty_list_means_none)
{
    write_file("{\"service-account-issuer\": [], \"service-account-key-file\": \"/k\"}");
    fails("--service-account-issuer is required (at least one)", "--config", path, NULL);
}

Test(config, file_unreadable)
{
    fails("--config /nonexistent/c.json: cannot read: No such file or directory", "--config", "/nonexistent/c.json",
          NULL);
    /* opened without blocking, and refused unless a regular file */
    fails("--config /tmp: cannot read: it is a directory, not a regular file; put the file itself there", "--config",
          "/tmp", NULL);
}

Test(config, file_fifo_refused_without_blocking)
{
    char fifo[64], want[CONFIG_ERR_MAX];

    snprintf(fifo, sizeof fifo, "/tmp/test_config_fifo_%d", (int)getpid());
    unlink(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    snprintf(want, sizeof want, "--config %s: cannot read: it is a FIFO, not a regular file; put the file itself there",
             fifo);
    /* a blocking open would wait here for a writer forever */
    fails(want, "--config", fifo, NULL);
    unlink(fifo);
}

Test(config, file_unknown_keys)
{
    file_fails("{\"foo\": 1}", "unknown key \"foo\"");
    file_fails("{\"config\": \"/x.json\"}", "unknown key \"config\" (--config is a command-line flag only)");
    file_fails("{\"no-cors\": true}", "unknown key \"no-cors\" (--no-cors is a command-line flag only)");
    file_fails("{\"--listen\": \"1.2.3.4:80\"}", "unknown key \"--listen\"; did you mean \"listen\"?");
    file_fails("{\"a\\nb\": 1}", "unknown key \"a\\nb\"");
}

Test(config, file_duplicate_key)
{
    file_fails("{\"listen\": \"127.0.0.1:1\", \"listen\": \"127.0.0.1:2\"}",
               "duplicate member \"listen\" in a JSON object (line 1, column 35)");
    file_fails("{\"cors\": true, \"max-age\": 1, \"cors\": false}",
               "duplicate member \"cors\" in a JSON object (line 1, column 36)");
}

Test(config, file_key_rotation_strings)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\",\n"
               " \"key-reload-interval\": \"15m\", \"key-retention\": \"7d\",\n"
               " \"state-dir\": \"/var/lib/oidc\", \"signing-key-file\": \"/k.key\"}");
    ok("--config", path, NULL);
    cr_assert_eq(cfg.key_reload_interval, 900);
    cr_assert_eq(cfg.key_retention, 604800);
    cr_assert_str_eq(cfg.state_dir, "/var/lib/oidc");
    cr_assert_str_eq(cfg.signing_key_file, "/k.key");
}

Test(config, file_key_rotation_integers)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\",\n"
               " \"key-reload-interval\": 300, \"key-retention\": 0}");
    ok("--config", path, NULL);
    cr_assert_eq(cfg.key_reload_interval, 300);
    cr_assert_eq(cfg.key_retention, 0);
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\",\n"
               " \"key-reload-interval\": \"300\", \"key-retention\": 86400, \"state-dir\": \"/s\"}");
    ok("--config", path, NULL);
    cr_assert_eq(cfg.key_reload_interval, 300);
    cr_assert_eq(cfg.key_retention, 86400);
}

Test(config, file_key_rotation_replaced_by_flags)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\",\n"
               " \"key-reload-interval\": \"2h\", \"key-retention\": \"1d\", \"state-dir\": \"/file\"}");
    ok("--key-reload-interval", "10s", "--config", path, "--state-dir", "/flag", NULL);
    cr_assert_eq(cfg.key_reload_interval, 10);
    cr_assert_eq(cfg.key_retention, 86400);
    cr_assert_str_eq(cfg.state_dir, "/flag");
}

Test(config, file_key_retention_needs_state_dir)
{
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\","
               " \"key-retention\": 60}");
    fails(RETENTION_NEEDS, "--config", path, NULL);
    ok("--config", path, "--state-dir", "/s", NULL);
    cr_assert_eq(cfg.key_retention, 60);
    ok("--config", path, "--key-retention", "0", NULL);
    cr_assert_eq(cfg.key_retention, 0);
}

Test(config, file_value_replaced_by_flag_is_not_checked)
{
    write_file("{\"max-age\": 99999999, \"service-account-key-file\": \"/k\"}");
    ok("--config", path, "--max-age", "5", "--service-account-issuer", "https://a.example", NULL);
    cr_assert_eq(cfg.max_age, 5);
}

Test(config, file_invalid_json)
{
    /* the strict reader says where it stopped, as an editor counts */
    file_fails("{\"service-account-issuer\": [\"https://a.example\"],", "invalid JSON (line 1, column 50)");
    file_fails("", "the top level is not a JSON object (line 1, column 1)");
    file_fails("{\"listen\": \"127.0.0.1:1\",}", "invalid JSON (line 1, column 26)");
    file_fails("{\"cors\": tru}", "invalid JSON (line 1, column 10)");
    file_fails("{} {}", "invalid JSON (line 1, column 4)");
    file_fails("{// comment\n}", "invalid JSON (line 1, column 2)");
    file_fails("{\n  \"cors\": true\n  \"listen\": \"127.0.0.1:1\"\n}", "invalid JSON (line 3, column 3)");
    file_fails("{\"a\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
               "JSON nested too deeply (line 1, column 38)");
}

Test(config, file_not_an_object)
{
    file_fails("[\"https://a.example\"]", "the top level is not a JSON object (line 1, column 1)");
    file_fails("\"https://a.example\"", "the top level is not a JSON object (line 1, column 1)");
    file_fails("42", "the top level is not a JSON object (line 1, column 1)");
    file_fails("null", "the top level is not a JSON object (line 1, column 1)");
}

/* A JSON object of exactly size bytes: braces around blanks. */
static char *blank_object(size_t size)
{
    char *s = malloc(size + 1);

    cr_assert_not_null(s);
    memset(s, ' ', size);
    s[0] = '{';
    s[size - 1] = '}';
    s[size] = '\0';
    return s;
}

Test(config, file_size_limit)
{
    char *big = blank_object(1024 * 1024), want[CONFIG_ERR_MAX];

    write_file(big);
    free(big);
    ok("dev", "--config", path, NULL);
    cr_assert_eq(cmd, CONFIG_CMD_DEV);

    big = blank_object(1024 * 1024 + 1);
    write_file(big);
    snprintf(want, sizeof want, "--config %s: cannot read: larger than 1048576 bytes", path);
    fails(want, "--config", path, NULL);
    free(big);
}

Test(config, free_is_safe_on_zeroed_and_twice)
{
    struct config c;

    memset(&c, 0, sizeof c);
    config_free(&c);
    OK_WITH(NULL);
    config_free(&cfg);
    config_free(&cfg);
    cr_assert_eq(cfg.issuers.count, 0);
    cr_assert_null(cfg.listens);
}
