/* SPDX-License-Identifier: Apache-2.0 */
#include "publish/publish.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "util/log.h"

/* The name serve has always given its state file; keys and export must
 * find it there. */
#define PUBLISH_STATE_FILE "keys.json"

void publish_log_warning(void *ctx, const char *msg)
{
    (void)ctx;
    log_once(LOG_WARN, "%s", msg);
}

void publish_state_path(const struct config *cfg, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", cfg->state_dir, PUBLISH_STATE_FILE);
}

struct history *publish_history_load(const struct config *cfg, time_t now, char *err, size_t errlen)
{
    char path[4096], why[4600];
    struct history *h = NULL;

    if (cfg->state_dir == NULL) {
        if ((h = calloc(1, sizeof(*h))) == NULL)
            snprintf(err, errlen, "out of memory");
        return h;
    }
    publish_state_path(cfg, path, sizeof(path));
    if (history_load(path, now, publish_log_warning, NULL, &h, why, sizeof(why)) != 0)
        snprintf(err, errlen, "--state-dir: %s", why);
    return h;
}

struct keyset *publish_read_files(const struct config *cfg, struct removal *rm, int64_t now_ms, char *err,
                                  size_t errlen)
{
    struct keyset *ks;

    /* None: --upstream or --signing-key-dir provides the keys (config
     * checks that one does). */
    if (cfg->key_files.count == 0) {
        if ((ks = keyset_new()) == NULL)
            snprintf(err, errlen, "out of memory");
        return ks;
    }
    ks = keyset_load(cfg->key_files.items, cfg->key_files.count, publish_log_warning, NULL, err, errlen);
    if (rm != NULL && ks == NULL)
        removal_read_failed(rm);
    else if (rm != NULL)
        ks = removal_apply(rm, ks, now_ms, err, errlen);
    return ks;
}

/* Adds the keys of the signing key directory (after the files': KEP-740,
 * docs/external-signer.md) and of the --upstream (after those) to ks. A
 * set with no key at all is refused, as an empty key file is. Returns ks,
 * or NULL (ks freed) with the reason in err. */
static struct keyset *publish_add_sources(const struct config *cfg, const struct keydir *signer,
                                          const struct keyset *upstream, struct keyset *ks, char *err, size_t errlen)
{
    if (ks == NULL)
        return NULL;
    if ((signer != NULL && keydir_add_public(cfg->signing_key_dir, signer, ks, err, errlen) != 0) ||
        (upstream != NULL && keyset_add_all(ks, upstream, publish_log_warning, NULL, err, errlen) != 0)) {
        keyset_free(ks);
        return NULL;
    }
    if (ks->count == 0) {
        snprintf(err, errlen, "no keys to publish: the key files and --signing-key-dir hold none");
        keyset_free(ks);
        return NULL;
    }
    return ks;
}

int publish_read_signer(const struct config *cfg, struct keydir **out, char *err, size_t errlen)
{
    struct stat st;

    *out = NULL;
    if (cfg->signing_key_dir == NULL)
        return 0;
    if (stat(cfg->signing_key_dir, &st) != 0 && errno == ENOENT) {
        *out = keydir_new();
        return *out != NULL ? 0 : -1;
    }
    return keydir_read(cfg->signing_key_dir, out, err, errlen) < 0 ? -1 : 0;
}

int publish_keyset(const struct config *cfg, const struct keydir *signer, struct history *h, struct removal *rm,
                   const struct keyset *upstream, int64_t now_ms, time_t now, history_event_cb cb, void *cb_ctx,
                   struct keyset **out, char *err, size_t errlen)
{
    /* The directory's keys after the removal guard: the directory drops a
     * key on purpose, and rotation.json is never read half-written. */
    struct keyset *ks =
        publish_add_sources(cfg, signer, upstream, publish_read_files(cfg, rm, now_ms, err, errlen), err, errlen);
    int changed = ks ? history_apply(h, ks, cfg->key_retention, now, cb, cb_ctx, err, errlen) : -1;

    if (changed < 0) {
        keyset_free(ks);
        ks = NULL;
    }
    *out = ks;
    return changed;
}

struct rotation_policy publish_rotation_policy(const struct config *cfg)
{
    struct rotation_policy p = {
        .period_ms = (int64_t)cfg->rotation_period * 1000,
        .ahead_ms = (int64_t)cfg->publish_ahead * 1000,
        .lag_ms = (int64_t)cfg->key_reload_interval * 1000,
        .keep_ms =
            ((int64_t)cfg->max_token_lifetime + (int64_t)cfg->token_leeway + (int64_t)cfg->key_reload_interval) * 1000,
    };

    return p;
}

/* The configured values of the documents. */
static struct snapshot_params publish_params(const struct config *cfg)
{
    const struct snapshot_params params = {
        .issuer = cfg->issuers.count ? cfg->issuers.items[0] : "",
        .jwks_uri = cfg->jwks_uri ? cfg->jwks_uri : "",
        .jwks_content_type = cfg->jwks_content_type,
        .max_age = cfg->max_age,
        .without_verifier = !cfg->enable_token_review,
    };

    return params;
}

struct snapshot *publish_snapshot(const struct config *cfg, struct keyset *ks, time_t now)
{
    const struct snapshot_params params = publish_params(cfg);

    return snapshot_build(&params, ks, now);
}

struct snapshot *publish_unavailable(const struct config *cfg, time_t now)
{
    const struct snapshot_params params = publish_params(cfg);

    return snapshot_unavailable(&params, cfg->upstream_refresh_interval, now);
}

int publish_build(const struct config *cfg, struct history *h, time_t now, struct snapshot **out, char *err,
                  size_t errlen)
{
    struct keyset *ks = NULL;
    struct keydir *signer = NULL;
    int rc = publish_read_signer(cfg, &signer, err, errlen) == 0 ? 0 : 2;

    *out = NULL;
    if (rc == 0 && publish_keyset(cfg, signer, h, NULL, NULL, 0, now, NULL, NULL, &ks, err, errlen) < 0)
        rc = 2;
    keydir_free(signer);
    if (rc != 0)
        return rc;
    if ((*out = publish_snapshot(cfg, ks, now)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return 1;
    }
    return 0;
}

int publish_build_now(const struct config *cfg, struct snapshot **out, char *err, size_t errlen)
{
    time_t now = time(NULL);
    struct history *h = publish_history_load(cfg, now, err, errlen);
    int rc = h != NULL ? publish_build(cfg, h, now, out, err, errlen) : 2;

    if (h == NULL)
        *out = NULL;
    history_free(h);
    return rc;
}
