/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: the option table, and the values it refuses flag by
 * flag and key by key. Error messages are asserted word for word since
 * operators read them; config_test_support.h holds the parse helpers.
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

/* ---- values refused, flag by flag and key by key ---- */

/* A bad value of a flag is refused naming the flag and the value. */
static const struct flag_refusal {
    const char *flag, *value, *problem;
} flag_refusals[] = {
    {"--threads", "0", "must be an integer between 1 and 256"},
    {"--threads", "257", "must be an integer between 1 and 256"},
    {"--threads", "abc", "must be an integer between 1 and 256"},
    {"--threads", "-1", "must be an integer between 1 and 256"},
    {"--threads", "+4", "must be an integer between 1 and 256"},
    {"--threads", " 4", "must be an integer between 1 and 256"},
    {"--threads", "0x4", "must be an integer between 1 and 256"},
    {"--threads", "", "must be an integer between 1 and 256"},
    {"--max-age", "12x", MAX_AGE_PROBLEM},
    {"--max-age", "-5", MAX_AGE_PROBLEM},
    {"--max-age", "31536001", MAX_AGE_PROBLEM},
    {"--max-age", "99999999999999999999999", MAX_AGE_PROBLEM},
    {"--max-age", "1.5", MAX_AGE_PROBLEM},
    {"--key-reload-interval", "x", RELOAD_PROBLEM},
    {"--key-reload-interval", "0", RELOAD_PROBLEM},
    {"--key-reload-interval", "0s", RELOAD_PROBLEM},
    {"--key-reload-interval", "86401", RELOAD_PROBLEM},
    {"--key-reload-interval", "25h", RELOAD_PROBLEM},
    {"--key-reload-interval", "2d", RELOAD_PROBLEM},
    {"--key-reload-interval", "", RELOAD_PROBLEM},
    {"--key-reload-interval", "1h30m", RELOAD_PROBLEM},
    {"--key-reload-interval", "-5", RELOAD_PROBLEM},
    {"--key-reload-interval", "1.5h", RELOAD_PROBLEM},
    {"--key-reload-interval", "99999999999999999999", RELOAD_PROBLEM},
    {"--key-retention", "x", RETENTION_PROBLEM},
    {"--key-retention", "3651d", RETENTION_PROBLEM},
    {"--key-retention", "315360001", RETENTION_PROBLEM},
    {"--key-retention", "36501d", RETENTION_PROBLEM},
    {"--key-retention", "-1d", RETENTION_PROBLEM},
    {"--key-retention", "7d ", RETENTION_PROBLEM},
    {"--api-audiences", "a,,b", AUDIENCES_PROBLEM},
    {"--api-audiences", ",a", AUDIENCES_PROBLEM},
    {"--api-audiences", "a,", AUDIENCES_PROBLEM},
    {"--api-audiences", ",", AUDIENCES_PROBLEM},
    {"--api-audiences", "", AUDIENCES_PROBLEM},
    {"--api-audiences", "a,b,,", AUDIENCES_PROBLEM},
    {"--token-leeway", "3601", LEEWAY_PROBLEM},
    {"--token-leeway", "2h", LEEWAY_PROBLEM},
    {"--token-leeway", "1d", LEEWAY_PROBLEM},
    {"--token-leeway", "-1", LEEWAY_PROBLEM},
    {"--token-leeway", "x", LEEWAY_PROBLEM},
    {"--token-leeway", "", LEEWAY_PROBLEM},
    {"--max-token-size", "255", TOKEN_SIZE_PROBLEM},
    {"--max-token-size", "1048577", TOKEN_SIZE_PROBLEM},
    {"--max-token-size", "0", TOKEN_SIZE_PROBLEM},
    {"--max-token-size", "16k", TOKEN_SIZE_PROBLEM},
    {"--max-token-size", "-300", TOKEN_SIZE_PROBLEM},
    {"--log-level", "x", LOG_LEVEL_PROBLEM},
    {"--log-level", "INFO", LOG_LEVEL_PROBLEM},
    {"--log-level", "warning", LOG_LEVEL_PROBLEM},
    {"--log-level", "", LOG_LEVEL_PROBLEM},
    {"--log-format", "yaml", LOG_FORMAT_PROBLEM},
    {"--log-format", "JSON", LOG_FORMAT_PROBLEM},
    {"--log-format", "", LOG_FORMAT_PROBLEM},
    /* listen addresses */
    {"--listen", "nonsense", "must be HOST:PORT, or [ADDRESS]:PORT for IPv6"},
    {"--listen", "[::1]", "must be HOST:PORT, or [ADDRESS]:PORT for IPv6"},
    {"--listen", "[::1:80", "must be HOST:PORT, or [ADDRESS]:PORT for IPv6"},
    /* Go's ":80" (every address) is written 0.0.0.0:80 here */
    {"--listen", ":80",
     "has no host; did you mean 0.0.0.0:80 (every IPv4 address) or 127.0.0.1:80 (this "
     "host only)?"},
    {"--listen", "[]:80", "has no host; did you mean [::]:80 (every IPv6 address)?"},
    {"--listen", ":x", "has no host"},
    {"--listen", "::1:80", "has an invalid host"},
    {"--listen", "[zz::1]:80", "has an invalid host"},
    {"--listen", "a b:80", "has an invalid host"},
    {"--listen", "127.0.0.1:65536", "must have a port between 0 and 65535"},
    {"--listen", "127.0.0.1:", "must have a port between 0 and 65535"},
    {"--listen", "127.0.0.1:8o", "must have a port between 0 and 65535"},
    /* limits and timeouts */
    {"--max-request-header-size", "1023", HEADER_PROBLEM},
    {"--max-request-header-size", "65537", HEADER_PROBLEM},
    {"--max-request-header-size", "8k", HEADER_PROBLEM},
    {"--max-request-header-size", "", HEADER_PROBLEM},
    {"--max-connections", "0", CONN_PROBLEM},
    {"--max-connections", "1000001", CONN_PROBLEM},
    {"--max-connections", "-1", CONN_PROBLEM},
    {"--token-review-max-connections", "0", CONN_PROBLEM},
    {"--token-review-max-connections", "1000001", CONN_PROBLEM},
    {"--admin-max-connections", "0", CONN_PROBLEM},
    {"--admin-max-connections", "64k", CONN_PROBLEM},
    {"--write-timeout", "0", REQ_TIMEOUT_PROBLEM},
    {"--write-timeout", "301", REQ_TIMEOUT_PROBLEM},
    {"--write-timeout", "1h", REQ_TIMEOUT_PROBLEM},
    {"--write-timeout", "-1s", REQ_TIMEOUT_PROBLEM},
    {"--http2-max-concurrent-streams", "0", STREAMS_PROBLEM},
    {"--http2-max-concurrent-streams", "1001", STREAMS_PROBLEM},
    {"--http2-max-concurrent-streams", "1e2", STREAMS_PROBLEM},
    {"--request-timeout", "0", REQ_TIMEOUT_PROBLEM},
    {"--request-timeout", "301", REQ_TIMEOUT_PROBLEM},
    {"--request-timeout", "6m", REQ_TIMEOUT_PROBLEM},
    {"--request-timeout", "1h", REQ_TIMEOUT_PROBLEM},
    {"--request-timeout", "10 s", REQ_TIMEOUT_PROBLEM},
    {"--http2-idle-timeout", "0s", IDLE_PROBLEM},
    {"--http2-idle-timeout", "3601", IDLE_PROBLEM},
    {"--http2-idle-timeout", "2h", IDLE_PROBLEM},
    {"--shutdown-grace", "301", GRACE_PROBLEM},
    {"--shutdown-grace", "6m", GRACE_PROBLEM},
    {"--shutdown-grace", "-1", GRACE_PROBLEM},
    {"--shutdown-grace", "x", GRACE_PROBLEM},
};

ParameterizedTestParameters(config, flag_refusals)
{
    TABLE_PARAMETERS(flag_refusals);
}

ParameterizedTest(size_t *i, config, flag_refusals)
{
    const struct flag_refusal *r = &flag_refusals[*i];
    char want[CONFIG_ERR_MAX];

    snprintf(want, sizeof want, "%s \"%s\": %s", r->flag, r->value, r->problem);
    flag_fails(want, r->flag, r->value);
}

/* A config file with a value of the wrong type or a bad value, or a key
 * that is none, is refused naming the file and the key. */
static const struct file_refusal {
    const char *json, *want;
} file_refusals[] = {
    /* a value of the wrong JSON type */
    {"{\"listen\": 80}", "key \"listen\": must be a string or an array of strings"},
    {"{\"listen\": [\"127.0.0.1:1\", 2]}", "key \"listen\": must be a string or an array of strings"},
    {"{\"listen\": [[\"127.0.0.1:1\"]]}", "key \"listen\": must be a string or an array of strings"},
    {"{\"service-account-issuer\": {\"url\": \"https://a.example\"}}",
     "key \"service-account-issuer\": must be a string or an array of strings"},
    {"{\"service-account-key-file\": null}",
     "key \"service-account-key-file\": must be a string or an array of strings"},
    {"{\"service-account-jwks-uri\": [\"https://a.example\"]}", "key \"service-account-jwks-uri\": must be a string"},
    {"{\"jwks-content-type\": true}", "key \"jwks-content-type\": must be a string"},
    {"{\"max-age\": true}", "key \"max-age\": " MAX_AGE_PROBLEM},
    {"{\"threads\": [2]}", "key \"threads\": must be an integer between 1 and 256"},
    {"{\"cors\": \"yes\"}", "key \"cors\": must be true or false"},
    {"{\"allow-insecure-issuer\": 1}", "key \"allow-insecure-issuer\": must be true or false"},
    {"{\"cors\": {}}", "key \"cors\": must be true or false"},
    {"{\"listen\": \"127.0.0.1:\\u00001\"}", "JSON string holds U+0000 (line 1, column 31)"},
    /* a bad value */
    {"{\"max-age\": -1}", "key \"max-age\": " MAX_AGE_PROBLEM},
    {"{\"max-age\": 1.5}", "key \"max-age\": " MAX_AGE_PROBLEM},
    {"{\"max-age\": 1e3}", "key \"max-age\": " MAX_AGE_PROBLEM},
    {"{\"max-age\": 99999999999999999999999}", "key \"max-age\": " MAX_AGE_PROBLEM},
    {"{\"threads\": 0}", "key \"threads\": must be an integer between 1 and 256"},
    {"{\"listen\": [\"127.0.0.1:1\", \"nope\"]}", "key \"listen\": must be HOST:PORT, or [ADDRESS]:PORT for IPv6"},
    {"{\"service-account-key-file\": \"\"}", "key \"service-account-key-file\": must not be empty"},
    {"{\"jwks-content-type\": \"json\"}",
     "key \"jwks-content-type\": must be a media type such as application/json (type/subtype, optionally "
     ";parameters, printable ASCII, at most 100 characters)"},
    {"{\"service-account-issuer\": \"http://insecure.example\"}",
     "key \"service-account-issuer\": must be an https URL (--allow-insecure-issuer permits http for "
     "development only)"},
    {"{\"service-account-jwks-uri\": \"https://a.example/#x\"}",
     "key \"service-account-jwks-uri\": must not have a fragment"},
    /* key rotation */
    {"{\"key-reload-interval\": true}", "key \"key-reload-interval\": " RELOAD_PROBLEM},
    {"{\"key-reload-interval\": [\"15m\"]}", "key \"key-reload-interval\": " RELOAD_PROBLEM},
    {"{\"key-retention\": null}", "key \"key-retention\": " RETENTION_PROBLEM},
    {"{\"key-retention\": {}}", "key \"key-retention\": " RETENTION_PROBLEM},
    {"{\"state-dir\": 1}", "key \"state-dir\": must be a string"},
    {"{\"state-dir\": [\"/s\"]}", "key \"state-dir\": must be a string"},
    {"{\"signing-key-file\": false}", "key \"signing-key-file\": must be a string"},
    {"{\"output\": \"json\"}", "unknown key \"output\" (--output is a command-line flag only)"},
    {"{\"key-reload-interval\": 0}", "key \"key-reload-interval\": " RELOAD_PROBLEM},
    {"{\"key-reload-interval\": -5}", "key \"key-reload-interval\": " RELOAD_PROBLEM},
    {"{\"key-reload-interval\": 1.5}", "key \"key-reload-interval\": " RELOAD_PROBLEM},
    {"{\"key-reload-interval\": 1e3}", "key \"key-reload-interval\": " RELOAD_PROBLEM},
    {"{\"key-reload-interval\": \"2d\"}", "key \"key-reload-interval\": " RELOAD_PROBLEM},
    {"{\"key-retention\": \"1h30m\"}", "key \"key-retention\": " RETENTION_PROBLEM},
    {"{\"key-retention\": 99999999999999999999}", "key \"key-retention\": " RETENTION_PROBLEM},
    {"{\"state-dir\": \"\"}", "key \"state-dir\": must not be empty"},
    {"{\"signing-key-file\": \"\"}", "key \"signing-key-file\": must not be empty"},
    /* token verification */
    {"{\"api-audiences\": 1}", "key \"api-audiences\": must be a string or an array of strings"},
    {"{\"api-audiences\": [\"a\", \"\"]}", "key \"api-audiences\": " AUDIENCES_PROBLEM},
    {"{\"api-audiences\": \"a,,b\"}", "key \"api-audiences\": " AUDIENCES_PROBLEM},
    {"{\"token-leeway\": true}", "key \"token-leeway\": " LEEWAY_PROBLEM},
    {"{\"token-leeway\": 3601}", "key \"token-leeway\": " LEEWAY_PROBLEM},
    {"{\"max-token-size\": \"4096\"}", "key \"max-token-size\": " TOKEN_SIZE_PROBLEM},
    {"{\"max-token-size\": 100}", "key \"max-token-size\": " TOKEN_SIZE_PROBLEM},
    {"{\"accept-legacy-tokens\": \"yes\"}", "key \"accept-legacy-tokens\": must be true or false"},
    {"{\"enable-token-review\": 1}", "key \"enable-token-review\": must be true or false"},
    {"{\"token-review-listen\": 8443}", "key \"token-review-listen\": must be a string or an array of strings"},
    {"{\"token-review-listen\": [\"x\"]}",
     "key \"token-review-listen\": must be HOST:PORT, or [ADDRESS]:PORT for IPv6"},
    /* verify's and token's flags are not file keys */
    {"{\"token-file\": \"/t\"}",
     "unknown key \"token-file\"; did you mean \"upstream-token-file\"? (--token-file is a command-line flag only)"},
    {"{\"discovery-url\": \"https://a.example\"}",
     "unknown key \"discovery-url\" (--discovery-url is a command-line flag only)"},
    {"{\"repeat\": 2}", "unknown key \"repeat\" (--repeat is a command-line flag only)"},
    {"{\"no-cache\": true}", "unknown key \"no-cache\" (--no-cache is a command-line flag only)"},
    {"{\"issuer\": \"https://a.example\"}",
     "unknown key \"issuer\"; did you mean \"service-account-issuer\"? (--issuer is a command-line flag only)"},
    {"{\"namespace\": \"x\"}", "unknown key \"namespace\" (--namespace is a command-line flag only)"},
    {"{\"duration\": 60}", "unknown key \"duration\" (--duration is a command-line flag only)"},
    /* production serving */
    {"{\"tls-listen\": 8443}", "key \"tls-listen\": must be a string or an array of strings"},
    {"{\"tls-listen\": \"unix:/x\"}", "key \"tls-listen\": " LISTEN_FORM},
    {"{\"listen\": \"unix:x.sock\"}", "key \"listen\": " UNIX_PROBLEM},
    {"{\"tls-cert-file\": true}", "key \"tls-cert-file\": must be a string"},
    {"{\"tls-private-key-file\": [\"/k\"]}", "key \"tls-private-key-file\": must be a string"},
    {"{\"tls-cert-file\": \"\"}", "key \"tls-cert-file\": must not be empty"},
    {"{\"admin-listen\": false}", "key \"admin-listen\": must be a string or an array of strings"},
    {"{\"admin-listen\": [\"x\"]}", "key \"admin-listen\": " LISTEN_FORM},
    {"{\"path-prefix\": 1}", "key \"path-prefix\": must be a string"},
    {"{\"path-prefix\": \"/\"}", "key \"path-prefix\": " PREFIX_PROBLEM},
    {"{\"allowed-hosts\": {}}", "key \"allowed-hosts\": must be a string or an array of strings"},
    {"{\"allowed-hosts\": [\"a\", \"a b\"]}", "key \"allowed-hosts\": " HOSTS_PROBLEM},
    {"{\"log-level\": 1}", "key \"log-level\": " LOG_LEVEL_PROBLEM},
    {"{\"log-level\": \"trace\"}", "key \"log-level\": " LOG_LEVEL_PROBLEM},
    {"{\"log-format\": null}", "key \"log-format\": " LOG_FORMAT_PROBLEM},
    {"{\"log-format\": \"xml\"}", "key \"log-format\": " LOG_FORMAT_PROBLEM},
    {"{\"access-log\": false}", "key \"access-log\": must be a string"},
    {"{\"access-log\": \"\"}", "key \"access-log\": must not be empty"},
    {"{\"max-request-header-size\": \"8192\"}", "key \"max-request-header-size\": " HEADER_PROBLEM},
    {"{\"max-request-header-size\": 100}", "key \"max-request-header-size\": " HEADER_PROBLEM},
    {"{\"request-timeout\": true}", "key \"request-timeout\": " REQ_TIMEOUT_PROBLEM},
    {"{\"request-timeout\": 0}", "key \"request-timeout\": " REQ_TIMEOUT_PROBLEM},
    {"{\"http2-idle-timeout\": \"2h\"}", "key \"http2-idle-timeout\": " IDLE_PROBLEM},
    {"{\"shutdown-grace\": 301}", "key \"shutdown-grace\": " GRACE_PROBLEM},
    {"{\"max-connections\": 0}", "key \"max-connections\": " CONN_PROBLEM},
    {"{\"token-review-max-connections\": \"9\"}", "key \"token-review-max-connections\": " CONN_PROBLEM},
    {"{\"admin-max-connections\": 0}", "key \"admin-max-connections\": " CONN_PROBLEM},
    {"{\"write-timeout\": \"6m\"}", "key \"write-timeout\": " REQ_TIMEOUT_PROBLEM},
    {"{\"http2-max-concurrent-streams\": 1.5}", "key \"http2-max-concurrent-streams\": " STREAMS_PROBLEM},
    {"{\"http2\": \"yes\"}", "key \"http2\": must be true or false"},
    {"{\"http2\": 1}", "key \"http2\": must be true or false"},
    {"{\"log-level\": \"info\", \"log-level\": \"debug\"}",
     "duplicate member \"log-level\" in a JSON object (line 1, column 34)"},
    {"{\"http2-max-concurrent-streams\": 1, \"http2-max-concurrent-streams\": 2}",
     "duplicate member \"http2-max-concurrent-streams\" in a JSON object (line 1, column 67)"},
    {"{\"http2\": true, \"http2\": false}", "duplicate member \"http2\" in a JSON object (line 1, column 24)"},
};

ParameterizedTestParameters(config, file_refusals)
{
    TABLE_PARAMETERS(file_refusals);
}

ParameterizedTest(size_t *i, config, file_refusals)
{
    file_fails(file_refusals[*i].json, file_refusals[*i].want);
}

/* ---- the option table ---- */

#define EVERY_COMMAND (CONFIG_FOR_EVERY)

/* Each row names itself plainly, says what it is for, takes a value
 * exactly when help shows one, belongs to a command and a group. */
Test(config, table_rows_are_complete)
{
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        size_t n = strlen(o->name);
        int takes_value = o->kind != CONFIG_KIND_BOOL && !(o->kind == CONFIG_KIND_ACTION && !o->arg);
        cr_assert(n > 0 && n <= 64 && strspn(o->name, "abcdefghijklmnopqrstuvwxyz0123456789-") == n, "%s", o->name);
        cr_assert(o->name[0] != '-' && o->name[n - 1] != '-' && !strstr(o->name, "--"), "%s", o->name);
        cr_assert(o->help && o->help[0] && o->help[strlen(o->help) - 1] != '.', "--%s: help", o->name);
        cr_assert_eq(o->arg != NULL, takes_value, "--%s: arg", o->name);
        cr_assert(o->commands && !(o->commands & ~EVERY_COMMAND), "--%s: commands", o->name);
        cr_assert_eq(o->required & ~o->commands, 0, "--%s: required where not taken", o->name);
        cr_assert_eq(o->required != 0, o->why_required != NULL, "--%s: why required", o->name);
        cr_assert(!o->required || o->arg, "--%s: a required flag has a value the usage line shows", o->name);
        cr_assert_lt(o->group, CONFIG_GROUP_COUNT, "--%s", o->name);
        cr_assert(o->kind == CONFIG_KIND_CHOICE ? o->choices != NULL
                                                : o->choices == NULL || o->kind == CONFIG_KIND_LIST,
                  "--%s: choices", o->name);
    }
}

/* Numbers have a range that holds something and that help and messages
 * can show; other kinds have none. */
Test(config, table_ranges_are_sane)
{
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        int numeric = o->kind == CONFIG_KIND_UINT || o->kind == CONFIG_KIND_DURATION;
        if (!numeric) {
            cr_assert(o->min == 0 && o->max == 0, "--%s has a range", o->name);
            cr_assert_null(strstr(o->help, "%r"), "--%s", o->name);
            continue;
        }
        cr_assert_lt(o->min, o->max, "--%s", o->name);
        cr_assert_leq(o->max, CONFIG_DURATION_MAX, "--%s", o->name);
    }
}

/* A default, dev's default and one computed at run time each pass the
 * row's own check, as the flag would, https only. */
Test(config, table_defaults_pass_their_check)
{
    char problem[CONFIG_PROBLEM_MAX], computed[32];

    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        const char *values[] = {o->def, o->dev_def, NULL};
        if (o->def_fn) {
            o->def_fn(o, computed, sizeof computed);
            values[2] = computed;
        }
        for (size_t v = 0; v < 3; v++)
            if (values[v])
                cr_assert_null(config_option_check(o, values[v], 0, problem), "--%s %s: %s", o->name, values[v],
                               config_option_check(o, values[v], 0, problem));
        cr_assert(!(o->def && o->def_fn), "--%s: two defaults", o->name);
    }
}

/* Names are unique (so are short names); each negating switch negates
 * exactly one switch; each field is filled by one row. */
Test(config, table_names_and_fields_are_unique)
{
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *a = &config_options[i];
        size_t negated = 0;
        cr_assert_eq(a->kind == CONFIG_KIND_LISTEN, a->count_field != CONFIG_NO_FIELD, "--%s: count", a->name);
        cr_assert_eq(a->kind == CONFIG_KIND_ACTION, a->field == CONFIG_NO_FIELD, "--%s: field", a->name);
        for (size_t j = 0; j < config_option_count; j++) {
            const struct config_option *b = &config_options[j];
            if (i == j)
                continue;
            cr_assert_str_neq(a->name, b->name);
            cr_assert(!a->short_name || a->short_name != b->short_name, "-%c twice", a->short_name);
            if (a->field != CONFIG_NO_FIELD && a->field == b->field)
                negated += (a->flags & CONFIG_NEGATES) && b->kind == CONFIG_KIND_BOOL && !(b->flags & CONFIG_NEGATES);
            else
                continue;
            cr_assert((a->flags | b->flags) & CONFIG_NEGATES, "--%s and --%s fill one field", a->name, b->name);
        }
        cr_assert_eq(negated, (a->flags & CONFIG_NEGATES) ? 1 : 0, "--%s negates %zu switches", a->name, negated);
    }
}

/* Each name of a blank-separated relation list is a row that shares a
 * command with row o and is not o. Returns how many names it holds. */
static size_t check_relation_names(const struct config_option *o, const char *names)
{
    size_t count = 0;

    for (const char *w = names + strspn(names, " "); *w; w += strspn(w, " ")) {
        size_t n = strcspn(w, " ");
        const struct config_option *other = config_option_named(w, n);
        cr_assert_not_null(other, "--%s names no row %.*s", o->name, (int)n, w);
        cr_assert_neq(other, o, "--%s relates to itself", o->name);
        cr_assert(other->commands & o->commands, "--%s and --%.*s share no command", o->name, (int)n, w);
        count++;
        w += n;
    }
    return count;
}

/* The rows' needs and excludes, which config.c checks, name rows that can
 * be given with them; a why starts as the messages go on (" ARG (...)",
 * ": ..."); a default of another flag's multiple or only with another
 * flag names a row, the multiple's before it in the table (put_defaults
 * fills them in order). */
Test(config, table_relations_name_rows)
{
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        const struct config_relation *lists[] = {o->needs, o->excludes};
        for (size_t l = 0; l < 2; l++) {
            for (const struct config_relation *r = lists[l]; r && r->flags; r++) {
                cr_assert_gt(check_relation_names(o, r->flags), 0, "--%s: empty relation", o->name);
                cr_assert(!r->why || r->why[0] == ' ' || r->why[0] == ':', "--%s: why", o->name);
            }
        }
        if (o->def_with)
            cr_assert_not_null(config_option_named(o->def_with, strlen(o->def_with)), "--%s", o->name);
        if (o->def_of) {
            const struct config_option *of = config_option(o->def_of);
            cr_assert(o->def_times > 0 && !o->def && !o->def_fn && !o->def_text, "--%s: two defaults", o->name);
            cr_assert_lt(config_option_index(of), i, "--%s: --%s comes after it", o->name, of->name);
            cr_assert_eq(of->kind, o->kind, "--%s", o->name);
        }
    }
}

/* The default jwks_uri is the issuer plus the path the server answers the
 * JWKS at: the row's default names it (config/ is below publish/, whose
 * paths.h the handlers use), and the two must agree. */
Test(config, jwks_uri_default_is_the_served_path)
{
    const char *def = config_option("service-account-jwks-uri")->def_text;

    cr_assert_eq(strncmp(def, "ISSUER/", 7), 0, "%s", def);
    cr_assert_str_eq(def + strlen("ISSUER"), PATHS_JWKS);
}

/* What config_file_read hands over from a file of one key. */
static const struct config_option *read_key;
static int read_values;

static int record_key(void *ctx, const struct config_option *o, const char *value)
{
    (void)ctx;
    (void)value;
    read_key = o;
    read_values++;
    return 0;
}

/* A value row o takes, as a config file writes it. */
static void json_value_for(const struct config_option *o, char *out, size_t len)
{
    static const char *const samples[] = {
        "/x",          "https://a.example",        "127.0.0.1:1", "a", "1", "true", "unix:/x",
        "s3://bucket", "system:serviceaccount:a:b"};
    char problem[CONFIG_PROBLEM_MAX];
    const char *v = o->def ? o->def : o->choices ? o->choices[0] : NULL;

    for (size_t i = 0; !v && i < sizeof samples / sizeof samples[0]; i++)
        if (!config_option_check(o, samples[i], 0, problem))
            v = samples[i];
    cr_assert_not_null(v, "--%s: no sample", o->name);
    if (o->kind == CONFIG_KIND_BOOL || (o->kind == CONFIG_KIND_UINT && strspn(v, "0123456789") == strlen(v)))
        snprintf(out, len, "%s", v);
    else
        snprintf(out, len, "\"%s\"", v);
}

/* The config file's keys are the long names of the rows marked so, and
 * no other name. */
Test(config, table_file_keys_are_long_names)
{
    char json[256], value[128], want[CONFIG_ERR_MAX];

    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        json_value_for(o, value, sizeof value);
        snprintf(json, sizeof json, "{\"%s\": %s}", o->name, value);
        write_file(json);
        read_key = NULL;
        read_values = 0;
        err[0] = '\0';
        int rc = config_file_read(path, record_key, NULL, err, sizeof err);
        if (o->flags & CONFIG_FILE_KEY) {
            cr_assert_eq(rc, 0, "%s: %s", json, err);
            cr_assert_eq(read_key, o, "%s", json);
            cr_assert_eq(read_values, 1);
        } else {
            snprintf(want, sizeof want, "config file %s: unknown key \"%s\"", path, o->name);
            cr_assert_eq(rc, -1, "%s read", json);
            cr_assert_eq(strncmp(err, want, strlen(want)), 0, "%s", err);
        }
    }
}

/* --- the external signer (KEP-740) ---------------------------------------- */
