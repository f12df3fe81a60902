/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publish: the one way a key set becomes the two published documents, so
 * that serve, keys and export agree byte for byte. The key files are read,
 * the retention history adds the keys still retained, and the snapshot is
 * rendered with the configured issuer, jwks_uri, Content-Type and max-age.
 *
 * serve keeps one history for its lifetime and saves it; keys and export
 * read the state in --state-dir and never write it.
 */
#ifndef OIDC_PUBLISH_H
#define OIDC_PUBLISH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config/config.h"
#include "keys/history.h"
#include "keys/keydir.h"
#include "keys/keyset.h"
#include "keys/removal.h"
#include "publish/snapshot.h"

/* keyset_warn_cb for every command: a key file problem that does not stop
 * publishing (a small RSA key, a private key others can read) is the
 * operator's to see; once, as serve reads the same files again and again. */
void publish_log_warning(void *ctx, const char *msg);

/* Writes the path of the retention state file inside --state-dir. */
void publish_state_path(const struct config *cfg, char *path, size_t len);

/* The history serve starts from, read at now: the state file in
 * --state-dir (a missing file is an empty history; entries it cannot
 * vouch for are dropped with a warning, see history_load), or an empty
 * history without --state-dir. NULL with the reason in err. */
struct history *publish_history_load(const struct config *cfg, time_t now, char *err, size_t errlen);

/* Reads the key files (none: an empty set, when --upstream or
 * --signing-key-dir provides the keys) and lets rm (serve's) hold back
 * removals it has not confirmed yet at now_ms (its monotonic clock).
 * Returns the set, or NULL with the reason in err. */
struct keyset *publish_read_files(const struct config *cfg, struct removal *rm, int64_t now_ms, char *err,
                                  size_t errlen);

/* Reads the key files, lets rm (serve's; NULL for a one-shot read) hold
 * back removals it has not confirmed yet at now_ms (rm's monotonic clock,
 * util/clock.h; unused without rm), adds the public keys of signer (the
 * keys of --signing-key-dir; NULL for none) and then those of upstream
 * (serve's last good set from an --upstream, or NULL; a kid already in the
 * set is left out, with a warning when it names another key), and applies
 * h's retention at now, reporting changes to cb (may be NULL). On success
 * *out is the set to publish and the result is history_apply's: 1 when h
 * needs saving, else 0. On failure returns -1 with *out NULL and the
 * reason in err.
 *
 * The removal guard is the files' alone: an upstream's answer is a whole
 * document, never a file caught mid-write, and the directory drops a key
 * on purpose, so a key either drops leaves at once (and retention keeps
 * it, when set). */
int publish_keyset(const struct config *cfg, const struct keydir *signer, struct history *h, struct removal *rm,
                   const struct keyset *upstream, int64_t now_ms, time_t now, history_event_cb cb, void *cb_ctx,
                   struct keyset **out, char *err, size_t errlen);

/* The keys of --signing-key-dir as keys and export read them, without
 * writing anything: *out is NULL without the flag, and empty while the
 * directory or its rotation.json does not exist yet. 0, or -1 with the
 * reason in err. */
int publish_read_signer(const struct config *cfg, struct keydir **out, char *err, size_t errlen);

/* The rotation policy of the signing key directory's flags
 * (keys/rotation.h): --rotation-period, --publish-ahead, the lag of other
 * processes on the directory (--key-reload-interval: how late one may
 * publish a new key, or go on signing with the old one), and the keep
 * time of a retired key: --max-token-lifetime (its tokens' lifetime) plus
 * --token-leeway (verifiers accept a token that long past exp) plus the
 * lag. */
struct rotation_policy publish_rotation_policy(const struct config *cfg);

/* The snapshot serve would publish at now with cfg: the key files, h's
 * retention applied (in memory; h is never saved here), rendered. For the
 * one-shot commands (keys, export, publish). Returns 0, 2 when the keys
 * cannot be read (the reason in err), 1 when out of memory. */
int publish_build(const struct config *cfg, struct history *h, time_t now, struct snapshot **out, char *err,
                  size_t errlen);

/* publish_build now, with the history --state-dir holds (read, never
 * written): what export and publish write. Same results. */
int publish_build_now(const struct config *cfg, struct snapshot **out, char *err, size_t errlen);

/* Renders the documents of ks with the config's issuer, jwks_uri, JWKS
 * Content-Type and max-age. Takes ownership of ks; NULL when out of memory. */
struct snapshot *publish_snapshot(const struct config *cfg, struct keyset *ks, time_t now);

/* What is served until an --upstream has answered once: 503 with a
 * Retry-After of its refresh interval. NULL when out of memory. */
struct snapshot *publish_unavailable(const struct config *cfg, time_t now);

#endif
