/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: command-line errors and the suggestions they make.
 * Error messages are asserted word for word since operators read them;
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

/* ---- command-line errors ---- */

Test(config, unknown_command)
{
    fails("unknown command \"x\" (commands: serve, dev, keys, verify, token, export, publish, doctor, help)", "x",
          NULL);
    /* a command a few typos away is suggested */
    fails("unknown command \"servee\"; did you mean serve? (commands: serve, dev, keys, verify, token, export, "
          "publish, doctor, help)",
          "servee", "--help", NULL);
    fails("unknown command \"key\"; did you mean keys? (commands: serve, dev, keys, verify, token, export, publish, "
          "doctor, help)",
          "key", NULL);
    fails("unknown command \"tokens\"; did you mean token? (commands: serve, dev, keys, verify, token, export, "
          "publish, doctor, help)",
          "tokens", NULL);
    fails("unknown command \"Verify\"; did you mean verify? (commands: serve, dev, keys, verify, token, export, "
          "publish, doctor, help)",
          "Verify", NULL);
    fails("unknown command \"docter\"; did you mean doctor? (commands: serve, dev, keys, verify, token, export, "
          "publish, doctor, help)",
          "docter", NULL);
    fails("unknown command \"halp\"; did you mean help? (commands: serve, dev, keys, verify, token, export, publish, "
          "doctor, help)",
          "halp", NULL);
    fails("unknown command \"al\" (commands: serve, dev, keys, verify, token, export, publish, doctor, all)", "help",
          "al", NULL);
    fails("unknown command \"alll\"; did you mean all? (commands: serve, dev, keys, verify, token, export, publish, "
          "doctor, all)",
          "help", "alll", NULL);
}

Test(config, unknown_flags)
{
    fails("unknown flag \"--foo\" (see --help)", "--foo", NULL);
    fails("unknown flag \"--foo\" (see --help)", "serve", "--foo=bar", NULL);
    fails("unknown flag \"-x\" (see --help)", "-x", NULL);
    /* getopt would take an unambiguous prefix; we want the full name */
    fails("unknown flag \"--max\" (see --help)", "--max", "5", NULL);
    fails("unknown flag \"--service-account-key\"; did you mean --service-account-key-file? (see --help)",
          "--service-account-key", "x", NULL);
    /* ambiguous prefixes too */
    fails("unknown flag \"--service-acc\" (see --help)", "--service-acc", "x", NULL);
    fails("unknown flag \"--pod\" (see --help)", "token", "--pod", "x", NULL);
    fails("unknown flag \"--token\" (see --help)", "verify", "--token", "x", NULL);
}

/* A wrong flag name is answered with the flag it most likely meant, from
 * among the command's own: one it is the last words of, a name people try
 * (--port), or a typo a few letters away; a flag of another command names
 * that command too. */
static const struct suggestion_case {
    const char *args[3];
    const char *want;
} suggestion_cases[] = {
    {{"--issuer", "https://a.example"},
     "--issuer is not valid for the serve command; did you mean --service-account-issuer?"},
    {{"--key-file", "/k"}, "unknown flag \"--key-file\"; did you mean --service-account-key-file? (see --help)"},
    {{"token", "--key-file", "/k"}, "unknown flag \"--key-file\"; did you mean --signing-key-file? (see --help)"},
    {{"--port", "8080"}, "unknown flag \"--port\"; did you mean --listen? (see --help)"},
    {{"--bind", "0.0.0.0:80"}, "unknown flag \"--bind\"; did you mean --listen? (see --help)"},
    {{"--lisen", "0.0.0.0:80"}, "unknown flag \"--lisen\"; did you mean --listen? (see --help)"},
    {{"--threds=2"}, "unknown flag \"--threds\"; did you mean --threads? (see --help)"},
    {{"--max-agee", "1"}, "unknown flag \"--max-agee\"; did you mean --max-age? (see --help)"},
    {{"--key-reload-intervall", "1m"},
     "unknown flag \"--key-reload-intervall\"; did you mean --key-reload-interval? (see --help)"},
    {{"--helo"}, "unknown flag \"--helo\"; did you mean --help? (see --help)"},
    {{"verify", "--tokn-file", "/t"}, "unknown flag \"--tokn-file\"; did you mean --token-file? (see --help)"},
    {{"token", "--namespcae", "ns"}, "unknown flag \"--namespcae\"; did you mean --namespace? (see --help)"},
    {{"keys", "--ouptut", "json"}, "unknown flag \"--ouptut\"; did you mean --output? (see --help)"},
    /* nothing near enough, or too many alike: no guess */
    {{"--foo"}, "unknown flag \"--foo\" (see --help)"},
    {{"--max", "1"}, "unknown flag \"--max\" (see --help)"},
    {{"--tls", "1"}, "unknown flag \"--tls\" (see --help)"},
    {{"-x"}, "unknown flag \"-x\" (see --help)"},
    /* a flag of another command is no typo: only its last words count */
    {{"verify", "--service-account-jwks-uri", "https://a.example/j"},
     "--service-account-jwks-uri is not valid for the verify command"},
};

ParameterizedTestParameters(config, flag_suggestions)
{
    TABLE_PARAMETERS(suggestion_cases);
}

ParameterizedTest(size_t *i, config, flag_suggestions)
{
    const struct suggestion_case *c = &suggestion_cases[*i];

    fails(c->want, c->args[0], c->args[1], c->args[2], NULL);
}

/* The same for the keys of a config file, which any command may read. */
static const struct key_suggestion {
    const char *json, *want;
} key_suggestions[] = {
    {"{\"port\": \"0.0.0.0:80\"}", "unknown key \"port\"; did you mean \"listen\"?"},
    {"{\"lisen\": \"0.0.0.0:80\"}", "unknown key \"lisen\"; did you mean \"listen\"?"},
    {"{\"max_age\": 60}", "unknown key \"max_age\"; did you mean \"max-age\"?"},
    {"{\"key-file\": \"/k\"}", "unknown key \"key-file\"; did you mean \"service-account-key-file\"?"},
    {"{\"--cors\": true}", "unknown key \"--cors\"; did you mean \"cors\"?"},
    {"{\"repeat\": 2}", "unknown key \"repeat\" (--repeat is a command-line flag only)"},
    {"{\"foo\": 1}", "unknown key \"foo\""},
};

ParameterizedTestParameters(config, key_suggestions)
{
    TABLE_PARAMETERS(key_suggestions);
}

ParameterizedTest(size_t *i, config, key_suggestions)
{
    file_fails(key_suggestions[*i].json, key_suggestions[*i].want);
}

Test(config, missing_value)
{
    fails("--listen: missing value", "--listen", NULL);
    fails("--max-age: missing value", "serve", "--service-account-issuer", "https://a.example", "--max-age", NULL);
}

Test(config, value_for_flag_without_one)
{
    fails("--cors: does not take a value", "--cors=yes", NULL);
}

Test(config, positional_arguments)
{
    fails("unexpected argument \"extra\"", "serve", "--cors", "extra", NULL);
    fails("unexpected argument \"serve\"", "--cors", "serve", NULL);
    fails("unexpected argument \"x\"", "--cors", "--", "x", NULL);
}

Test(config, required_flags)
{
    fails("--service-account-issuer is required (at least one)", NULL);
    fails("--service-account-issuer is required (at least one)", "--service-account-key-file", "/k", NULL);
    fails("--service-account-key-file is required (at least one) unless --upstream or --signing-key-dir is given",
          "--service-account-issuer", "https://a.example", NULL);
}

Test(config, issuer_errors)
{
    const char *issuer = "--service-account-issuer";
    fails("--service-account-issuer \"http://x.example\": must be an https URL (--allow-insecure-issuer permits http "
          "for development only)",
          issuer, "http://x.example", "--service-account-key-file", "/k", NULL);
    fails("--service-account-issuer \"not a url\": must be an https URL", issuer, "not a url", NULL);
    fails("--service-account-issuer \"HTTPS://a.example\": must be an https URL", issuer, "HTTPS://a.example", NULL);
    fails("--service-account-issuer \"https://\": has no host", issuer, "https://", NULL);
    fails("--service-account-issuer \"https://a.example/?x=1\": must not have a query", issuer,
          "https://a.example/?x=1", NULL);
    fails("--service-account-issuer \"https://a.example/#f\": must not have a fragment", issuer, "https://a.example/#f",
          NULL);
    fails("--service-account-issuer \"https://u@a.example\": must not contain user information", issuer,
          "https://u@a.example", NULL);
    fails("--service-account-issuer \"https://a.example/a b\": contains a character not allowed in a URL", issuer,
          "https://a.example/a b", NULL);
    /* the second issuer is checked too */
    fails("--service-account-issuer \"https://b.example?\": must not have a query", issuer, "https://a.example", issuer,
          "https://b.example?", NULL);
}

Test(config, jwks_uri_errors)
{
    flag_fails("--service-account-jwks-uri \"http://cdn.example/jwks\": must be an https URL "
               "(--allow-insecure-issuer permits http for development only)",
               "--service-account-jwks-uri", "http://cdn.example/jwks");
    flag_fails("--service-account-jwks-uri \"jwks\": must be an https URL", "--service-account-jwks-uri", "jwks");
    flag_fails("--service-account-jwks-uri \"https://cdn.example/jwks?x=1\": must not have a query",
               "--service-account-jwks-uri", "https://cdn.example/jwks?x=1");
}

Test(config, key_file_errors)
{
    flag_fails("--service-account-key-file \"\": must not be empty", "--service-account-key-file", "");
}

/* --max-age takes a duration like every other duration flag (it took only
 * seconds), up to the same year. */
Test(config, max_age_is_a_duration)
{
    const struct {
        const char *value;
        unsigned long want;
    } good[] = {{"1h", 3600}, {"90s", 90}, {"15m", 900}, {"365d", 31536000}, {"0", 0}, {"600", 600}};

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        OK_WITH("--max-age", good[i].value, NULL);
        cr_assert_eq(cfg.max_age, good[i].want, "%s", good[i].value);
    }
    flag_fails("--max-age \"366d\": " MAX_AGE_PROBLEM, "--max-age", "366d");
    flag_fails("--max-age \"1y\": " MAX_AGE_PROBLEM, "--max-age", "1y");
    write_file("{\"service-account-issuer\": \"https://a.example\", \"service-account-key-file\": \"/k\","
               " \"max-age\": \"15m\"}");
    ok("--config", path, NULL);
    cr_assert_eq(cfg.max_age, 900);
    ok("export", SERVE_ARGS, "--out", "/o", "--max-age", "2h", NULL);
    cr_assert_eq(cfg.max_age, 7200);
}

Test(config, content_type_errors)
{
    static const char problem[] = "must be a media type such as application/json (type/subtype, optionally "
                                  ";parameters, printable ASCII, at most 100 characters)";
    char want[CONFIG_ERR_MAX], long_type[128];

    const char *bad[][2] = {{"", "\"\""},
                            {"json", "\"json\""},
                            {"application/", "\"application/\""},
                            {"/json", "\"/json\""},
                            {"application/json x", "\"application/json x\""},
                            {"application/json\r\nX-Evil: 1", "\"application/json\\r\\nX-Evil: 1\""},
                            {"text/pl\xc3\xa4in", "\"text/pl\\xc3\\xa4in\""}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(want, sizeof want, "--jwks-content-type %s: %s", bad[i][1], problem);
        flag_fails(want, "--jwks-content-type", bad[i][0]);
    }

    memset(long_type, 'a', sizeof long_type);
    memcpy(long_type, "application/", 12);
    long_type[101] = '\0';
    snprintf(want, sizeof want, "--jwks-content-type \"%s\": %s", long_type, problem);
    flag_fails(want, "--jwks-content-type", long_type);
    long_type[100] = '\0';
    OK_WITH("--jwks-content-type", long_type, NULL);
    cr_assert_str_eq(cfg.jwks_content_type, long_type);
}

Test(config, quotes_are_escaped_in_errors)
{
    flag_fails("--listen \"a\\\"b\\\\c\": must be HOST:PORT, or [ADDRESS]:PORT for IPv6", "--listen", "a\"b\\c");
}
