/*
 * Unit tests for config/: flags, the config file, defaults and every error
 * message, asserted word for word since operators read them.
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

#define MAX_ARGS 48

static struct config cfg;
static enum config_command cmd;
static char err[CONFIG_ERR_MAX];
static char path[64];  /* the config file written by write_file() */
static char *help_raw; /* the text help() last read */

static void teardown(void)
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
static int parse_va(const char *first, va_list ap)
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
static void ok(const char *first, ...)
{
    va_list ap;
    int rc;

    va_start(ap, first);
    rc = parse_va(first, ap);
    va_end(ap);
    cr_assert_eq(rc, 0, "config_parse failed: %s", err);
}

/* Parses, requires failure with exactly this message and an empty config. */
static void fails(const char *want, const char *first, ...)
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
static void flag_fails(const char *want, const char *flag, const char *value)
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
static void write_file(const char *content)
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
static void file_fails(const char *content, const char *want)
{
    char full[CONFIG_ERR_MAX];

    write_file(content);
    snprintf(full, sizeof full, "config file %s: %s", path, want);
    fails(full, "--config", path, NULL);
}

/* Requires the list to hold exactly the n strings that follow. */
static void list_is(const struct config_strlist *l, size_t n, ...)
{
    va_list ap;

    cr_assert_eq(l->count, n, "%zu items, wanted %zu", l->count, n);
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_str_eq(l->items[i], va_arg(ap, const char *), "item %zu", i);
    va_end(ap);
}

static unsigned expected_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}

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

/* ---- help and version ---- */

Test(config, help)
{
    ok("--help", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_HELP);
    ok("-h", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_HELP);
    ok("dev", "--help", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_HELP);
    ok("serve", "--help", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_HELP);
}

/* Which help each way of asking prints: a command's own (COMMAND --help,
 * help COMMAND), the overview (--help alone, help), or every flag. */
static const struct help_case {
    const char *args[3];
    enum config_command topic;
} help_cases[] = {
    {{"--help"}, CONFIG_CMD_HELP},
    {{"-h"}, CONFIG_CMD_HELP},
    {{"help"}, CONFIG_CMD_HELP},
    {{"serve", "--help"}, CONFIG_CMD_SERVE},
    {{"dev", "-h"}, CONFIG_CMD_DEV},
    {{"keys", "--help"}, CONFIG_CMD_KEYS},
    {{"verify", "--help"}, CONFIG_CMD_VERIFY},
    {{"token", "--help"}, CONFIG_CMD_TOKEN},
    {{"export", "--help"}, CONFIG_CMD_EXPORT},
    {{"publish", "--help"}, CONFIG_CMD_PUBLISH},
    {{"doctor", "--help"}, CONFIG_CMD_DOCTOR},
    {{"help", "doctor"}, CONFIG_CMD_DOCTOR},
    {{"help", "verify"}, CONFIG_CMD_VERIFY},
    {{"help", "serve"}, CONFIG_CMD_SERVE},
    {{"help", "all"}, CONFIG_HELP_ALL},
    {{"help", "--help"}, CONFIG_CMD_HELP},
    {{"help", "-h"}, CONFIG_CMD_HELP},
    {{"--threads", "0", "--help"}, CONFIG_CMD_HELP},
};

ParameterizedTestParameters(config, help_topics)
{
    TABLE_PARAMETERS(help_cases);
}

ParameterizedTest(size_t *i, config, help_topics)
{
    const struct help_case *c = &help_cases[*i];

    ok(c->args[0], c->args[1], c->args[2], NULL);
    cr_assert_eq(cmd, CONFIG_CMD_HELP);
    cr_assert_eq(cfg.help_topic, c->topic, "%s %s", c->args[0], c->args[1] ? c->args[1] : "");
}

Test(config, help_errors)
{
    fails("unknown command \"bogus\" (commands: serve, dev, keys, verify, token, export, publish, doctor, all)", "help",
          "bogus", NULL);
    fails("unknown command \"--listen\" (commands: serve, dev, keys, verify, token, export, publish, doctor, all)",
          "help", "--listen", NULL);
    fails("unexpected argument \"x\"", "help", "serve", "x", NULL);
}

Test(config, help_ignores_everything_else)
{
    ok("--threads", "0", "--config", "/nonexistent/c.json", "--help", "--max-age", "x", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_HELP);
    /* defaults only */
    cr_assert_eq(cfg.issuers.count, 0);
    cr_assert_null(cfg.jwks_uri);
    cr_assert_eq(cfg.listen_count, 1);
    cr_assert_str_eq(cfg.listens[0].host, "127.0.0.1");
    cr_assert_eq(cfg.threads, expected_threads());
    cr_assert_eq(cfg.max_age, 3600);
    cr_assert_str_eq(cfg.jwks_content_type, "application/jwk-set+json");
    cr_assert_eq(cfg.cors, 1);
    cr_assert_eq(cfg.key_reload_interval, 60);
    cr_assert_eq(cfg.key_retention, 0);
    cr_assert_null(cfg.state_dir);
}

Test(config, version)
{
    ok("--version", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERSION);
    ok("serve", "--service-account-issuer", "http://insecure", "--version", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_VERSION);
}

/* The help of topic, read into help_raw; returned with each description
 * on one line (a line break and the indent of a continued line read as one
 * blank), so that phrases are found however the text is wrapped. */
static const char *help(enum config_command topic)
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
static void help_has(enum config_command topic, const char *const *phrases)
{
    const char *h = help(topic);

    for (; *phrases; phrases++)
        cr_assert_not_null(strstr(h, *phrases), "help %d lacks \"%s\":\n%s", topic, *phrases, h);
}

/* Where the row of flag name starts in help text h, or NULL. */
static const char *row_of(const char *h, const char *name)
{
    char row[96];
    const char *at;

    snprintf(row, sizeof row, "--%s", name);
    for (at = strstr(h, row); at; at = strstr(at + 1, row)) {
        size_t n = strlen(row);
        int starts = at - h >= 3 && (strncmp(at - 3, "\n  ", 3) == 0 || strncmp(at - 2, ", ", 2) == 0);
        if (starts && (at[n] == ' ' || at[n] == '\n' || at[n] == ','))
            return at;
    }
    return NULL;
}

Test(config, overview_lists_commands_then_serve_flags)
{
    static const char *const want[] = {
        "Usage: oidc-discovery [COMMAND] [flags]\n\nCommands:\n",
        "\n  dev ",
        "\n  export ",
        "\n  keys                            Print the key set that would be published (kid, alg, size, source, first "
        "seen, retained until)",
        "\n  verify                          Verify one token",
        "\n  token                           Mint a Kubernetes-shaped service-account token",
        "\n  help [COMMAND|all] ",
        "\"oidc-discovery help COMMAND\" lists the flags of a command",
        "--service-account-issuer URL",
        "--service-account-jwks-uri URL",
        "--service-account-key-file PATH",
        "--listen HOST:PORT",
        "--threads N",
        "--jwks-content-type TYPE",
        "--cors, --no-cors",
        "--allow-insecure-issuer",
        "--config FILE",
        "-h, --help",
        "--version",
        "(default 127.0.0.1:8080; none: no plain-http listener",
        "(default application/jwk-set+json)",
        "\n  --max-age DURATION              Cache-Control max-age of both documents, 0 to 365d (default 1h)\n",
        "\nKey rotation and the signing key:\n  --key-",
        "--key-reload-interval DURATION",
        "(default 60s)",
        "--key-retention DURATION",
        "(default 0: off; needs --state-dir)",
        "--state-dir PATH",
        "owned by this user or root, not writable by group or others (default none)",
        "--signing-key-file PATH",
        "\nToken verification:\n",
        "--api-audiences LIST",
        "comma-separated; repeatable",
        "(default: the issuers)",
        "--token-leeway DURATION",
        "0 to 1h (default 60s)",
        "--max-token-size BYTES",
        "256 to 1048576 (default 16384)",
        "--accept-legacy-tokens",
        "never expire and cannot be revoked",
        "without aud, good for the API audiences",
        "--enable-token-review",
        "--token-review-listen HOST:PORT",
        "\nDURATION: 90s, 15m, 24h, 7d or plain seconds.\n",
        NULL,
    };

    help_has(CONFIG_CMD_HELP, want);
    cr_assert_null(row_of(help(CONFIG_CMD_HELP), "token-file"), "verify's flags are verify's help");
}

Test(config, verify_help)
{
    static const char *const want[] = {
        "Usage: oidc-discovery verify --token-file PATH [flags]\n\nVerify one token",
        "--service-account-issuer is required unless --discovery-url is given.",
        "\nThe token to verify (not config-file keys):\n  --token-file PATH ",
        "- for standard input (required)",
        "--discovery-url URL",
        "--ca-file PATH",
        "(default: the system's)",
        "--repeat N",
        "1 to 100000000, to measure speed (default 1)",
        "--no-cache",
        "--api-audiences LIST",
        "--service-account-key-file PATH",
        "--log-level LEVEL",
        NULL,
    };

    help_has(CONFIG_CMD_VERIFY, want);
}

Test(config, token_help)
{
    static const char *const want[] = {
        "Usage: oidc-discovery token --signing-key-file PATH --issuer URL",
        "\nIssuer and claims (not config-file keys):\n  --issuer URL ",
        "Token's iss claim (https) (required)",
        "--audience AUD",
        "(default: the issuer)",
        "--namespace NS",
        "--service-account NAME",
        "(default default)",
        "--service-account-uid UID",
        "--pod-name NAME",
        "--pod-uid UID",
        "--node-name NAME",
        "--node-uid UID",
        "--duration DURATION",
        "1s to 365d (default 1h)",
        "the private key to sign with (required)",
        NULL,
    };

    help_has(CONFIG_CMD_TOKEN, want);
}

Test(config, export_keys_and_dev_help)
{
    static const char *const export[] = {"Usage: oidc-discovery export --service-account-issuer URL",
                                         "\nWhere to export (not config-file keys):\n  --out DIR ", NULL};
    static const char *const keys[] = {"Usage: oidc-discovery keys [flags]",
                                       "\nWhat to print (not config-file keys):\n  --output table|text|json ",
                                       "table, text or json (default table)", NULL};
    static const char *const dev[] = {"Usage: oidc-discovery dev [flags]",
                                      "(default: http:// and the first --listen address)",
                                      "repeatable (default dev-keys/sa.pub)", "for development (default on)", NULL};

    help_has(CONFIG_CMD_EXPORT, export);
    help_has(CONFIG_CMD_KEYS, keys);
    help_has(CONFIG_CMD_DEV, dev);
}

/* Each command's help starts with its own flags. */
static const struct first_flag {
    enum config_command cmd;
    const char *flag;
} first_flags[] = {
    {CONFIG_CMD_SERVE, "--service-account-issuer"},
    {CONFIG_CMD_DEV, "--service-account-issuer"},
    {CONFIG_CMD_KEYS, "--output"},
    {CONFIG_CMD_VERIFY, "--token-file"},
    {CONFIG_CMD_TOKEN, "--issuer"},
    {CONFIG_CMD_EXPORT, "--out"},
    {CONFIG_CMD_PUBLISH, "--to"},
    {CONFIG_CMD_DOCTOR, "--issuer"},
};

ParameterizedTestParameters(config, help_own_flags_first)
{
    TABLE_PARAMETERS(first_flags);
}

ParameterizedTest(size_t *i, config, help_own_flags_first)
{
    const struct first_flag *c = &first_flags[*i];
    const char *h = help(c->cmd), *first = strstr(h, "\n  -");

    cr_assert_not_null(first);
    cr_assert_eq(strncmp(first + 3, c->flag, strlen(c->flag)), 0, "%s's first flag: %.40s", c->flag, first + 3);
    cr_assert_eq(first[3 + strlen(c->flag)], ' ');
}

/* A help lists every flag its command takes and no other (every flag is
 * reachable from the help of each command that takes it); help all lists
 * them all. */
Test(config, help_lists_exactly_the_flags_a_command_takes)
{
    for (int c = CONFIG_CMD_SERVE; c < CONFIG_COMMAND_COUNT; c++) {
        const char *h = help((enum config_command)c);
        for (size_t i = 0; i < config_option_count; i++) {
            const struct config_option *o = &config_options[i];
            int takes = (o->commands & CONFIG_CMD_BIT(c)) != 0;
            cr_assert_eq(row_of(h, o->name) != NULL, takes, "help of %s and --%s", config_commands[c].name, o->name);
        }
    }
    const char *all = help(CONFIG_HELP_ALL);
    for (size_t i = 0; i < config_option_count; i++)
        cr_assert_not_null(row_of(all, config_options[i].name), "help all lacks --%s", config_options[i].name);
}

Test(config, help_lines_fit_80_columns)
{
    const enum config_command topics[] = {CONFIG_CMD_SERVE, CONFIG_CMD_DEV,    CONFIG_CMD_KEYS,    CONFIG_CMD_VERIFY,
                                          CONFIG_CMD_TOKEN, CONFIG_CMD_EXPORT, CONFIG_CMD_PUBLISH, CONFIG_CMD_DOCTOR,
                                          CONFIG_CMD_HELP,  CONFIG_HELP_ALL};

    for (size_t t = 0; t < sizeof topics / sizeof topics[0]; t++) {
        help(topics[t]);
        for (const char *line = help_raw; *line; line += strcspn(line, "\n") + 1)
            cr_assert_leq(strcspn(line, "\n"), 80, "help line too long: %.*s", (int)strcspn(line, "\n"), line);
    }
}

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
     "--issuer is only valid for the token and doctor commands; did you mean --service-account-issuer?"},
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

#define RELOAD_PROBLEM    "must be a duration between 1s and 1d (like 90s, 15m, 24h, 7d or plain seconds)"
#define RETENTION_PROBLEM "must be a duration between 0 and 3650d (like 90s, 15m, 24h, 7d or plain seconds)"
#define RETENTION_NEEDS   "--key-retention needs --state-dir, so that retained keys survive a restart"

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

/* ---- token verification settings ---- */

#define AUDIENCES_PROBLEM  "must be a comma-separated list of non-empty audiences"
#define LEEWAY_PROBLEM     "must be a duration between 0 and 1h (like 90s, 15m, 24h, 7d or plain seconds)"
#define TOKEN_SIZE_PROBLEM "must be an integer between 256 and 1048576"
#define REVIEW_NEEDS_LISTEN                                                                                            \
    "--enable-token-review needs --token-review-listen HOST:PORT (the TokenReview API is never served on the public "  \
    "listeners)"
#define LISTEN_NEEDS_REVIEW "--token-review-listen needs --enable-token-review"
#define MUST_DIFFER         "must differ from every --listen address"

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

/* ---- verify ---- */

#define NOT_FOR_VERIFY  " is not valid for the verify command"
#define ONLY_FOR_VERIFY " is only valid for the verify command"
#define NOT_FOR_TOKEN   " is not valid for the token command"
#define ONLY_FOR_TOKEN  " is only valid for the token command"

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

static const struct flag_case token_flags[] = {
    {"--issuer", "https://a.example"},
    {"--audience", "a"},
    {"--namespace", "ns"},
    {"--service-account", "sa"},
    {"--service-account-uid", "u"},
    {"--pod-name", "p"},
    {"--pod-uid", "pu"},
    {"--node-name", "n"},
    {"--node-uid", "nu"},
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

/* ---- production serving ---- */

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

Test(config, production_flags_only_for_serve_and_dev)
{
    EACH_FLAG_FAILS(production_flags, NOT_FOR_VERIFY, VERIFY_ARGS);
    EACH_FLAG_FAILS(production_flags, NOT_FOR_KEYS, "keys", "--service-account-key-file", "/k");
    EACH_FLAG_FAILS(production_flags, NOT_FOR_TOKEN, TOKEN_ARGS);
    /* even where the value is bad */
    fails("--path-prefix" NOT_FOR_VERIFY, "verify", "--path-prefix", "x", NULL);
    fails("--listen" NOT_FOR_VERIFY, "verify", "--listen", "unix:/x", NULL);
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

/* ---- export ---- */

#define EXPORT_ARGS     "export", SERVE_ARGS, "--out", "/o"
#define NOT_FOR_EXPORT  " is not valid for the export command"
#define ONLY_FOR_EXPORT " is only valid for the export command"
#define OUT_REQUIRED    "--out is required (the directory to write the documents into)"

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

Test(config, export_refuses_listener_flags)
{
    EACH_FLAG_FAILS(not_export_flags, NOT_FOR_EXPORT, EXPORT_ARGS);
    EACH_FLAG_FAILS(production_flags, NOT_FOR_EXPORT, EXPORT_ARGS);
    EACH_FLAG_FAILS(verify_flags, ONLY_FOR_VERIFY, EXPORT_ARGS);
    EACH_FLAG_FAILS(token_flags, ONLY_FOR_TOKEN, EXPORT_ARGS);
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

#define SIGNER_ARGS "--service-account-issuer", "https://a.example", "--signing-key-dir", "/keys"

Test(config, signer_defaults)
{
    ok(SIGNER_ARGS, NULL);
    cr_assert_eq(cfg.key_files.count, 0, "no key file needed with a signing key directory");
    cr_assert_str_eq(cfg.signing_key_dir, "/keys");
    cr_assert_str_eq(cfg.signing_key_type, "rsa-2048");
    cr_assert_null(cfg.signing_key_import);
    cr_assert_eq(cfg.rotation_period, 30 * 86400);
    cr_assert_eq(cfg.publish_ahead, 86400);
    cr_assert_eq(cfg.max_token_lifetime, 48 * 3600);
    cr_assert_eq(cfg.allow_short_token_lifetime, 0);
    cr_assert_null(cfg.external_signer_listen);
    cr_assert_str_eq(cfg.external_signer_socket_mode, "0600");
    cr_assert_null(cfg.external_signer_socket_owner);
    cr_assert_eq(cfg.external_signer_threads, expected_threads());
    cr_assert_eq(cfg.signer_idle_timeout, 300);
    cr_assert_eq(cfg.signer_max_buffered, 16777216);
    cr_assert_eq(cfg.warnings.count, 0);
}

Test(config, signer_every_flag)
{
    ok(SIGNER_ARGS, "--service-account-key-file", "/sa.pub", "--signing-key-type", "ec-p256", "--signing-key-import",
       "/sa.key", "--rotation-period", "7d", "--publish-ahead", "2h", "--max-token-lifetime", "10m",
       "--external-signer-listen", "unix:/run/signer.sock", "--external-signer-socket-mode", "0660",
       "--external-signer-socket-owner", "kube:kube", "--external-signer-threads", "3",
       "--external-signer-idle-timeout", "30s", "--external-signer-max-buffered-bytes", "1048576", NULL);
    cr_assert_str_eq(cfg.signing_key_type, "ec-p256");
    cr_assert_str_eq(cfg.signing_key_import, "/sa.key");
    cr_assert_eq(cfg.rotation_period, 7 * 86400);
    cr_assert_eq(cfg.publish_ahead, 7200);
    cr_assert_eq(cfg.max_token_lifetime, 600);
    cr_assert_str_eq(cfg.external_signer_listen, "unix:/run/signer.sock");
    cr_assert_str_eq(cfg.external_signer_socket_mode, "0660");
    cr_assert_str_eq(cfg.external_signer_socket_owner, "kube:kube");
    cr_assert_eq(cfg.external_signer_threads, 3);
    cr_assert_eq(cfg.signer_idle_timeout, 30);
    cr_assert_eq(cfg.signer_max_buffered, 1048576);
}

/* Seconds are accepted, for tests that rotate in seconds. */
Test(config, signer_short_periods)
{
    ok(SIGNER_ARGS, "--max-age", "1s", "--publish-ahead", "3s", "--rotation-period", "6s", "--max-token-lifetime", "5s",
       "--allow-short-token-lifetime", NULL);
    cr_assert_eq(cfg.publish_ahead, 3);
    cr_assert_eq(cfg.rotation_period, 6);
    cr_assert_eq(cfg.max_token_lifetime, 5);
    cr_assert_eq(cfg.allow_short_token_lifetime, 1);
    cr_assert_eq(cfg.warnings.count, 1, "less than a minute over --max-age: warned");
    cr_assert(strstr(cfg.warnings.items[0], "--publish-ahead 3s is less than a minute longer than --max-age 1s") &&
                  strstr(cfg.warnings.items[0], "30 s cooldown"),
              "%s", cfg.warnings.items[0]);
}

Test(config, signer_timing_rules)
{
    fails("--publish-ahead 30m is shorter than --max-age 1h: relying parties keep a fetched JWKS that long (go-oidc "
          "until max-age minus 30 s, a cache in front for its own max-age), so a new key would sign tokens they "
          "cannot verify yet; raise --publish-ahead to --max-age plus a minute or more, or lower --max-age",
          SIGNER_ARGS, "--publish-ahead", "30m", NULL);
    ok(SIGNER_ARGS, "--publish-ahead", "1h", NULL);
    cr_assert_eq(cfg.warnings.count, 1, "equal to --max-age: accepted, warned");
    ok(SIGNER_ARGS, "--publish-ahead", "61m", NULL);
    cr_assert_eq(cfg.warnings.count, 0, "a minute over: quiet");
    fails("--rotation-period is shorter than --publish-ahead 1d: a key signs only after it has been published that "
          "long; make the period at least as long",
          SIGNER_ARGS, "--rotation-period", "12h", NULL);
    fails("--max-token-lifetime must be at least 10m: kube-apiserver refuses a signer whose Metadata says less than "
          "600 seconds (--allow-short-token-lifetime accepts it, for tests)",
          SIGNER_ARGS, "--max-token-lifetime", "9m", NULL);
    fails("--max-token-lifetime \"0\": must be a duration between 1s and 3650d (like 90s, 15m, 24h, 7d or plain "
          "seconds)",
          SIGNER_ARGS, "--max-token-lifetime", "0", NULL);
}

Test(config, signer_flags_need_the_directory)
{
    static const char *const needs_dir[][2] = {{"--external-signer-listen", "unix:/s"},
                                               {"--signing-key-import", "/sa.key"},
                                               {"--signing-key-type", "ec-p256"},
                                               {"--rotation-period", "7d"},
                                               {"--publish-ahead", "2h"},
                                               {"--max-token-lifetime", "1h"}};
    char want[CONFIG_ERR_MAX];

    for (size_t i = 0; i < sizeof needs_dir / sizeof needs_dir[0]; i++) {
        snprintf(want, sizeof want, "%s needs --signing-key-dir DIR (the keys this server signs with)",
                 needs_dir[i][0]);
        flag_fails(want, needs_dir[i][0], needs_dir[i][1]);
    }
    fails("--external-signer-socket-mode needs --external-signer-listen unix:PATH", SIGNER_ARGS,
          "--external-signer-socket-mode", "0660", NULL);
    fails("--external-signer-threads needs --external-signer-listen unix:PATH", SIGNER_ARGS,
          "--external-signer-threads", "2", NULL);
    fails("--external-signer-idle-timeout needs --external-signer-listen unix:PATH", SIGNER_ARGS,
          "--external-signer-idle-timeout", "1m", NULL);
    fails("--external-signer-max-buffered-bytes needs --external-signer-listen unix:PATH", SIGNER_ARGS,
          "--external-signer-max-buffered-bytes", "65536", NULL);
    fails("--signing-key-file and --signing-key-dir are mutually exclusive: --signing-key-file watches a key the "
          "API server signs with itself, with --signing-key-dir this server signs (to start signing with that key, "
          "give it as --signing-key-import)",
          SIGNER_ARGS, "--signing-key-file", "/sa.key", NULL);
}

Test(config, signer_value_errors)
{
    fails("--external-signer-listen \"/run/s.sock\": must be unix:/PATH: kube-apiserver's "
          "--service-account-signing-endpoint is a Unix socket",
          SIGNER_ARGS, "--external-signer-listen", "/run/s.sock", NULL);
    fails("--external-signer-listen \"127.0.0.1:9\": must be unix:/PATH: kube-apiserver's "
          "--service-account-signing-endpoint is a Unix socket",
          SIGNER_ARGS, "--external-signer-listen", "127.0.0.1:9", NULL);
    fails("--signing-key-type \"rsa-1024\": must be one of rsa-2048, rsa-3072, ec-p256", SIGNER_ARGS,
          "--signing-key-type", "rsa-1024", NULL);
    fails("--external-signer-socket-mode \"0666\": must be one of 0600, 0660", SIGNER_ARGS, "--external-signer-listen",
          "unix:/s", "--external-signer-socket-mode", "0666", NULL);
    fails("--external-signer-socket-owner \"a:b:c\": must be USER, USER:GROUP or :GROUP (names or numeric ids)",
          SIGNER_ARGS, "--external-signer-listen", "unix:/s", "--external-signer-socket-owner", "a:b:c", NULL);
    ok(SIGNER_ARGS, "--external-signer-listen", "unix:/s", "--external-signer-socket-owner", ":996", NULL);
}

/* keys and export read the directory; keys takes serve's signer flags to
 * check serve's command line, export only the directory. */
Test(config, signer_in_keys_and_export)
{
    ok("keys", "--signing-key-dir", "/keys", "--publish-ahead", "2h", NULL);
    cr_assert_str_eq(cfg.signing_key_dir, "/keys");
    ok("export", "--service-account-issuer", "https://a.example", "--signing-key-dir", "/keys", "--out", "/o", NULL);
    cr_assert_str_eq(cfg.signing_key_dir, "/keys");
    fails("--publish-ahead is not valid for the export command", "export", "--service-account-issuer",
          "https://a.example", "--signing-key-dir", "/keys", "--out", "/o", "--publish-ahead", "2h", NULL);
    fails("--external-signer-listen is not valid for the keys command", "keys", "--signing-key-dir", "/keys",
          "--external-signer-listen", "unix:/s", NULL);
}

Test(config, signer_from_config_file)
{
    write_file("{\"signing-key-dir\": \"/keys\", \"rotation-period\": \"14d\", \"publish-ahead\": 7200, "
               "\"external-signer-listen\": \"unix:/run/s.sock\", \"external-signer-socket-mode\": \"0660\"}");
    ok("--service-account-issuer", "https://a.example", "--config", path, NULL);
    cr_assert_eq(cfg.rotation_period, 14 * 86400);
    cr_assert_eq(cfg.publish_ahead, 7200);
    cr_assert_str_eq(cfg.external_signer_listen, "unix:/run/s.sock");
    cr_assert_str_eq(cfg.external_signer_socket_mode, "0660");
}

/* ------------------------------------------------------------------------ */
/* --upstream: mirroring an API server                                        */

#define UPSTREAM_ARGS "--service-account-issuer", "https://a.example", "--upstream"
#define POD_SA        "/var/run/secrets/kubernetes.io/serviceaccount"

/* An upstream instead of key files, with the defaults of its flags. */
Test(config, upstream_alone_with_defaults)
{
    ok(UPSTREAM_ARGS, "https://api.example:6443", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_SERVE);
    cr_assert_str_eq(cfg.upstream, "https://api.example:6443");
    cr_assert_eq(cfg.key_files.count, 0);
    cr_assert_not(cfg.upstream_in_cluster);
    cr_assert_null(cfg.upstream_ca_file);
    cr_assert_null(cfg.upstream_token_file);
    cr_assert_eq(cfg.upstream_refresh_interval, 60);
    cr_assert_eq(cfg.upstream_timeout, 10);
    cr_assert_eq(cfg.upstream_max_staleness, 600, "ten refresh intervals");
}

Test(config, upstream_with_key_files_and_every_flag)
{
    ok(SERVE_ARGS, "--upstream", "https://rancher.example/k8s/clusters/c-1", "--upstream-ca-file", "/ca.crt",
       "--upstream-token-file", "/token", "--upstream-refresh-interval", "1s", "--upstream-timeout", "2s", NULL);
    list_is(&cfg.key_files, 1, "/k.pub");
    cr_assert_str_eq(cfg.upstream, "https://rancher.example/k8s/clusters/c-1", "a base URL may have a path");
    cr_assert_str_eq(cfg.upstream_ca_file, "/ca.crt");
    cr_assert_str_eq(cfg.upstream_token_file, "/token");
    cr_assert_eq(cfg.upstream_refresh_interval, 1, "1s is accepted (tests need it)");
    cr_assert_eq(cfg.upstream_timeout, 2);
    cr_assert_eq(cfg.upstream_max_staleness, 10, "ten of the refresh intervals given");
    ok(UPSTREAM_ARGS, "https://a:1", "--upstream-refresh-interval", "30s", "--upstream-max-staleness", "30s", NULL);
    cr_assert_eq(cfg.upstream_max_staleness, 30);
}

/* in-cluster is the pod's API server, as client-go finds it: the service
 * environment, and the pod's CA and token unless given. */
Test(config, upstream_in_cluster)
{
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    ok(UPSTREAM_ARGS, "in-cluster", NULL);
    cr_assert_str_eq(cfg.upstream, "https://10.96.0.1:443");
    cr_assert(cfg.upstream_in_cluster);
    cr_assert_str_eq(cfg.upstream_ca_file, POD_SA "/ca.crt");
    cr_assert_str_eq(cfg.upstream_token_file, POD_SA "/token");
    ok(UPSTREAM_ARGS, "in-cluster", "--upstream-token-file", "/t", "--upstream-ca-file", "/c", NULL);
    cr_assert_str_eq(cfg.upstream_token_file, "/t", "a token file given wins");
    cr_assert_str_eq(cfg.upstream_ca_file, "/c");
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    ok(UPSTREAM_ARGS, "in-cluster", NULL);
    cr_assert_str_eq(cfg.upstream, "https://[fd00::1]:443");
    write_file("{\"upstream\": \"in-cluster\", \"upstream-refresh-interval\": \"5s\"}");
    ok("--service-account-issuer", "https://a.example", "--config", path, NULL);
    cr_assert_str_eq(cfg.upstream, "https://[fd00::1]:443", "a config-file key too");
    cr_assert_eq(cfg.upstream_max_staleness, 50);
    unsetenv("KUBERNETES_SERVICE_HOST");
    fails("--upstream in-cluster needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, which Kubernetes sets in "
          "every pod; outside a pod give the API server's URL (--upstream https://HOST:PORT)",
          UPSTREAM_ARGS, "in-cluster", NULL);
    /* keys reads the same file, and does not read an upstream */
    ok("keys", "--config", path, "--service-account-key-file", "/k", NULL);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    fails("--upstream in-cluster: KUBERNETES_SERVICE_HOST \"10.96.0.1\" and KUBERNETES_SERVICE_PORT \"https\" do not "
          "make an https URL; give the API server's URL (--upstream https://HOST:PORT)",
          UPSTREAM_ARGS, "in-cluster", NULL);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    setenv("KUBERNETES_SERVICE_HOST", "a/b", 1);
    fails("--upstream in-cluster: KUBERNETES_SERVICE_HOST \"a/b\" and KUBERNETES_SERVICE_PORT \"443\" do not make an "
          "https URL; give the API server's URL (--upstream https://HOST:PORT)",
          UPSTREAM_ARGS, "in-cluster", NULL);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

Test(config, upstream_refusals)
{
    fails("--upstream \"http://api.example\": must be https (a bearer token is sent there), or in-cluster for this "
          "pod's API server",
          UPSTREAM_ARGS, "http://api.example", NULL);
    fails("--upstream \"http://api.example\": must be https (a bearer token is sent there), or in-cluster for this "
          "pod's API server",
          UPSTREAM_ARGS, "http://api.example", "--allow-insecure-issuer", NULL);
    fails("--upstream \"https://api.example/?x=1\": must not have a query", UPSTREAM_ARGS, "https://api.example/?x=1",
          NULL);
    fails("--upstream \"https://u:p@api.example\": must not contain user information", UPSTREAM_ARGS,
          "https://u:p@api.example", NULL);
    fails("--upstream \"\": must be an https URL", UPSTREAM_ARGS, "", NULL);
    fails("--upstream-timeout needs --upstream", SERVE_ARGS, "--upstream-timeout", "5s", NULL);
    fails("--upstream-token-file needs --upstream", SERVE_ARGS, "--upstream-token-file", "/t", NULL);
    fails("--upstream-refresh-interval needs --upstream", SERVE_ARGS, "--upstream-refresh-interval", "5s", NULL);
    fails("--upstream-max-staleness must be at least --upstream-refresh-interval: /readyz would otherwise fail "
          "between two reads",
          UPSTREAM_ARGS, "https://a:1", "--upstream-refresh-interval", "1m", "--upstream-max-staleness", "59s", NULL);
    fails("--upstream-refresh-interval \"0\": must be a duration between 1s and 1d (like 90s, 15m, 24h, 7d or plain "
          "seconds)",
          UPSTREAM_ARGS, "https://a:1", "--upstream-refresh-interval", "0", NULL);
    fails("--service-account-issuer is required (at least one)", "--upstream", "https://a:1", NULL);
    fails("--upstream is only valid for the serve command", "keys", "--service-account-key-file", "/k", "--upstream",
          "https://a:1", NULL);
    fails("--upstream is not valid for the export command", "export", SERVE_ARGS, "--out", "/o", "--upstream",
          "https://a:1", NULL);
    fails("--upstream is only valid for the serve command", "dev", "--upstream", "https://a:1", NULL);
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
