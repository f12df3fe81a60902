/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signerdir: the signing key directory (keys/keydir.h) as a key source of
 * the serving process, and the external signer's state (jose/signer.h)
 * that follows from it. Every process on a directory publishes its keys
 * and signs; the one that holds the directory's lock also rotates them
 * (docs/external-signer.md, "Several API servers"). Each reload pass:
 *
 *   signerdir_prepare  before the key sources are read: the process that
 *                      holds the lock ages the keys by the time the last
 *                      snapshot was served, generates, promotes and drops
 *                      keys as keys/rotation.h decides, and saves
 *                      rotation.json; any other process takes the lock if
 *                      it is free, or re-reads rotation.json. Returns the
 *                      keys to publish.
 *   signerdir_state    once the snapshot is built: which key this process
 *                      signs with (only one it has published for
 *                      --publish-ahead itself, or a trusted one that
 *                      no relying party can lack), and a new signer
 *                      state when anything a call answers changed.
 *
 * Every time is given (wall and monotonic), as in reload.h.
 */
#ifndef OIDC_SIGNERDIR_H
#define OIDC_SIGNERDIR_H

#include <stdint.h>
#include <time.h>

#include "config/config.h"
#include "jose/signer.h"
#include "keys/keydir.h"
#include "publish/snapshot.h"

/* How often the rotating process saves the keys' ages when nothing else
 * changed: after a crash the schedule resumes at most this much behind. */
#define SIGNERDIR_SAVE_MS 60000

/* How long a process that finds another holding the lock of an empty
 * directory waits, at start, for that process to make the first key. */
#define SIGNERDIR_START_WAIT_MS 10000

struct signerdir;

/* Opens --signing-key-dir (created 0700 when missing), takes its lock if
 * free and reads its keys. A directory without keys gets its first one
 * from the process holding the lock: --signing-key-import's, else a new
 * one when others_published is 0 (nothing else is published, so no
 * relying party can hold a key set without it). Loads the private keys.
 * NULL with the reason in err: the server does not start then. */
struct signerdir *signerdir_create(const struct config *cfg, int others_published, time_t now, int64_t now_ms,
                                   char *err, size_t errlen);

/* See above. published is the snapshot served since the last pass (NULL
 * before the first). Returns the directory's keys (owned by sd, valid
 * until the next call), or NULL with the reason in err when the directory
 * cannot be read: the pass then keeps what is published. */
const struct keydir *signerdir_prepare(struct signerdir *sd, const struct keyset *published, time_t now, int64_t now_ms,
                                       char *err, size_t errlen);

/* See above, for the snapshot snap now published; upstream is the
 * --upstream's last good set (NULL: none), which a trusted key must be in
 * to sign at once when the snapshot holds other keys than the
 * directory's. Returns the new state (sd keeps a reference; the caller
 * hands it on), or NULL when nothing changed. */
struct signer_state *signerdir_state(struct signerdir *sd, const struct snapshot *snap, const struct keyset *upstream,
                                     time_t now, int64_t now_ms);

/* The state signerdir_state last returned, or NULL. */
struct signer_state *signerdir_current(const struct signerdir *sd);

/* The role of kid among the directory's keys (keydir_role_of: "next",
 * "signing", "retired until ..."), as of the last pass at now. */
void signerdir_role(const struct signerdir *sd, const char *kid, time_t now, struct keydir_role *out);

/* Why the rotation across the signers of etcd is paused ("" when it is
 * not, or without --etcd-servers). */
void signerdir_paused(const struct signerdir *sd, char *why, size_t len);

/* With --etcd-servers: uploads the directory when etcd held no set, and
 * starts the thread that follows etcd (server/reload/signer_etcd.h),
 * which calls wake(wake_ctx) when a pass should take a new set. 0, or -1
 * with err; 0 at once without etcd. */
int signerdir_start_etcd(struct signerdir *sd, void (*wake)(void *), void *wake_ctx, char *err, size_t errlen);

/* The monotonic ms of the next pass the directory needs (a key due to be
 * generated, promoted, dropped, or to become this process's signing key),
 * or 0 for none. */
int64_t signerdir_due(const struct signerdir *sd);

/* At exit: the holder saves the keys' ages, published (the snapshot
 * served) up to now_ms. */
void signerdir_save_at_exit(struct signerdir *sd, const struct keyset *published, time_t now, int64_t now_ms);

void signerdir_free(struct signerdir *sd);

#endif
