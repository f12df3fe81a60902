/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oidc-discovery: publishes a Kubernetes cluster's service-account signing
 * keys as the OIDC discovery document and JWKS, byte for byte as
 * kube-apiserver does. main() turns the command line into a config and
 * runs the command it names: the server, or a one-shot command.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/doctor_command.h"
#include "cli/export_command.h"
#include "cli/keys_command.h"
#include "cli/publish_command.h"
#include "cli/token_command.h"
#include "cli/verify_command.h"
#include "config/config.h"
#include "keys/devkeys.h"
#include "server/obs/metrics.h"
#include "server/server.h"
#include "util/log.h"

#include "build_info.h" /* generated: OIDC_BUILD_COMMIT, OIDC_BUILD_DATE */

/* What --version prints and the start-up log line names. */
#define MAIN_VERSION OIDC_VERSION " (commit " OIDC_BUILD_COMMIT ", built " OIDC_BUILD_DATE ")"

/* `dev` serving its own key pair (config's default key file for dev):
 * generate the pair once, so that a fresh checkout runs with no cluster at
 * hand. Other key files are read as they are. */
static int main_dev_keys(const struct config *cfg)
{
    char err[1024], pub_path[4096];
    int rc;

    if (cfg->key_files.count != 1 || strcmp(cfg->key_files.items[0], CONFIG_DEV_KEY_FILE) != 0)
        return 0;
    if ((rc = devkeys_ensure(CONFIG_DEV_KEYS_DIR, pub_path, sizeof(pub_path), err, sizeof(err))) < 0) {
        log_msg(LOG_ERROR, "%s", err);
        return -1;
    }
    log_msg(LOG_INFO, "%s development key pair in %s/ (sa.key, sa.pub)", rc ? "generated a" : "using the",
            CONFIG_DEV_KEYS_DIR);
    return 0;
}

/* --log-level and --log-format, before anything logs or a thread starts.
 * The config already checked both values. */
static void main_init_log(const struct config *cfg)
{
    enum log_level level = LOG_INFO;

    if (cfg->log_level != NULL)
        log_level_parse(cfg->log_level, &level);
    log_init(level, cfg->log_format != NULL && strcmp(cfg->log_format, "json") == 0);
}

/* What a serving command logs before it starts: the settings an operator
 * must not miss. */
static void main_log_serving(const struct config *cfg)
{
    log_msg(LOG_INFO, "oidc-discovery %s starting", MAIN_VERSION);
    if (cfg->allow_insecure_issuer)
        log_msg(LOG_WARN, "--allow-insecure-issuer: http issuer and jwks URIs are allowed; for development only");
    if (cfg->accept_legacy_tokens && !cfg->token_review_check_bound_objects)
        log_msg(LOG_WARN, "--accept-legacy-tokens: legacy (Secret-based) service account tokens never expire and "
                          "cannot be revoked here (this server cannot see their Secret deleted); a leaked one stays "
                          "valid until its signing key leaves the published set");
    else if (cfg->accept_legacy_tokens)
        log_msg(LOG_WARN, "--accept-legacy-tokens: legacy (Secret-based) service account tokens never expire; "
                          "TokenReview refuses one once its Secret is deleted (--token-review-check-bound-objects)");
    if (cfg->token_review_check_bound_objects)
        log_msg(LOG_INFO,
                "TokenReview looks up each token's service account, pod, secret or node at --upstream %s, cached "
                "for %lus; refused while it cannot be reached",
                cfg->upstream, cfg->token_review_bound_object_cache_ttl);
    if (cfg->token_review_insecure_http)
        log_msg(LOG_WARN, "--token-review-insecure-http: the TokenReview API is served over plain HTTP, so callers' "
                          "bearer tokens and the tokens they review cross the network in clear; for development "
                          "only");
    if (cfg->issuers_dir != NULL) {
        log_msg(LOG_INFO, "issuers: one per file of %s", cfg->issuers_dir);
        return;
    }
    log_msg(LOG_INFO, "issuer %s", cfg->issuers.items[0]);
    log_msg(LOG_INFO, "jwks_uri %s", cfg->jwks_uri);
}

/* The commands config_parse tells apart, but --help and --version: what
 * runs each, and whether it is a server (which logs its start and settings
 * first) or a one-shot command. */
static const struct main_command {
    int (*run)(const struct config *cfg);
    int serves;
} main_commands[] = {
    [CONFIG_CMD_SERVE] = {server_run, 1},        [CONFIG_CMD_DEV] = {server_run, 1},
    [CONFIG_CMD_KEYS] = {keys_command, 0},       [CONFIG_CMD_VERIFY] = {verify_command, 0},
    [CONFIG_CMD_TOKEN] = {token_command, 0},     [CONFIG_CMD_EXPORT] = {export_command, 0},
    [CONFIG_CMD_PUBLISH] = {publish_command, 0}, [CONFIG_CMD_DOCTOR] = {doctor_command, 0},
};

int main(int argc, char **argv)
{
    enum config_command cmd;
    struct config cfg;
    char err[CONFIG_ERR_MAX];
    int rc = 1;

    if (config_parse(argc, argv, &cmd, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "oidc-discovery: %s\n", err);
        return 2;
    }
    if (cmd == CONFIG_CMD_HELP || cmd == CONFIG_CMD_VERSION) {
        char *help = cmd == CONFIG_CMD_HELP ? config_usage(cfg.help_topic) : NULL;
        fputs(cmd == CONFIG_CMD_VERSION ? "oidc-discovery " MAIN_VERSION "\n"
              : help                    ? help
                                        : "out of memory\n",
              cmd == CONFIG_CMD_VERSION || help ? stdout : stderr);
        free(help);
        config_free(&cfg);
        return cmd == CONFIG_CMD_VERSION || help ? 0 : 1;
    }
    main_init_log(&cfg);
    metrics_set_build(OIDC_BUILD_COMMIT, OIDC_BUILD_DATE);
    for (size_t i = 0; i < cfg.warnings.count; i++)
        log_msg(LOG_WARN, "%s", cfg.warnings.items[i]);
    if (main_commands[cmd].serves)
        main_log_serving(&cfg);
    if (cmd == CONFIG_CMD_DEV && main_dev_keys(&cfg) != 0)
        goto out;
    rc = main_commands[cmd].run(&cfg);
out:
    config_free(&cfg);
    return rc;
}
