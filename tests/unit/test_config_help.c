/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: help and version. Error messages are asserted word
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
        "checks the token's signature and claims only, not whether the service account",
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
