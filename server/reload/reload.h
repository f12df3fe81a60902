/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reload: the key sources -> the next snapshot, or an error.
 *
 * Each pass reads the key files, lets the removal guard hold back keys
 * that vanished from a file still in place until a later read confirms it
 * (keys/removal.h), adds the last good set of an --upstream
 * (reload_upstream; until there is one, the snapshot is an unavailable
 * one: the documents answer 503), applies the retention state
 * (keys/history.h: keys that left stay published for --key-retention, and
 * the state is saved to --state-dir when a key came or went, and every
 * RELOAD_STATE_REFRESH seconds), and renders the snapshot. A snapshot is new only when its
 * bytes differ from the current one, so ETag and Last-Modified change only
 * with the documents; a failed read keeps the current one. It also watches
 * the signing key (signing.h), and logs what of each new set a relying
 * party's documented limits refuse (diag/rp_rules.h: more than 100 RSA
 * keys for AWS, ...), at start and after every change.
 *
 * It knows nothing of threads, workers or HTTP: the server runs the passes
 * on its reload thread when the schedule (schedule.h) says, and hands what
 * they return to the workers. Every time is given, so the decisions are
 * unit-tested with made-up clocks.
 */
#ifndef OIDC_RELOAD_H
#define OIDC_RELOAD_H

#include <stdint.h>
#include <time.h>

#include "config/config.h"
#include "jose/signer.h"
#include "publish/snapshot.h"
#include "server/obs/status.h"

/* Seconds after which the state is saved again even though no key came or
 * went, to keep the last-seen times of present keys fresh on disk: a key
 * that leaves while the server is down is retained from its stored
 * last_seen, so after a crash it may go this much (or one
 * --key-reload-interval, if longer) early. A clean exit saves them too. */
#define RELOAD_STATE_REFRESH 300

/* A key that disappears from a file still in place leaves the published
 * set only when a read at least this much later finds the same shrunken
 * set (keys/removal.h): a file rewritten in place by a writer that pauses
 * for less than this between its writes is never published half-written.
 * Forty debounces: long against any writer's pause between two writes of
 * one small file, short against max-age. */
#define RELOAD_REMOVAL_CONFIRM_MS 1000

struct reload;

/* Prepares --state-dir (created 0700 when missing; it must not be a key
 * directory), loads the retention state, and runs the first pass at now
 * (wall clock) and now_ms (monotonic, util/clock.h). NULL, with the reason
 * logged, when there is nothing valid to publish: the server refuses to
 * start then. */
struct reload *reload_create(const struct config *cfg, time_t now, int64_t now_ms);

/* Starts what the signing keys need beside the passes (with
 * --etcd-servers, the thread that follows etcd), which calls wake(ctx)
 * when a pass should run. 0, or -1 (logged): the server does not start. */
int reload_signer_start(struct reload *r, void (*wake)(void *), void *wake_ctx);

/* The snapshot published now; r keeps its reference. */
struct snapshot *reload_current(const struct reload *r);

/* One pass at now and now_ms. Returns the new current snapshot when the
 * documents changed (r keeps its reference; the caller hands it on), or
 * NULL when they did not, or when the key files could not be read (logged
 * and counted; what is published stays). */
struct snapshot *reload_pass(struct reload *r, time_t now, int64_t now_ms);

/* ks (taken; never NULL) is the --upstream's new good set, for the next
 * pass. Its keys keep the kids they came with. */
void reload_upstream(struct reload *r, struct keyset *ks);

/* The deadlines the inputs set for the next pass (schedule_next): the
 * earliest of the re-read that confirms held removals and the signing key
 * directory's next step (monotonic ms), and the earliest of a retained
 * key's expiry and the signing key maturing (wall clock); 0 for none. */
void reload_deadlines(const struct reload *r, int64_t *confirm_at, time_t *wall_at);

/* What the status page shows of r now (status.h): the issuer, the
 * published keys with their history and role, the last pass and its
 * result. A feature that reloads with the keys (a mirrored upstream, a
 * push to a bucket) adds its own section here. NULL when out of memory. */
struct status *reload_status(const struct reload *r);

/* How many published keys only --key-retention keeps (they left the
 * inputs). */
size_t reload_retained(const struct reload *r);

/* Why the last pass could not read the key sources (what stays published
 * is the last good set), or NULL when it could. */
const char *reload_error(const struct reload *r);

/* At exit: one last look at the key files, so that the state records the
 * keys in them as seen until now, then a save; the signing key directory
 * saves its keys' ages up to now_ms. Nothing is published. */
void reload_save_at_exit(struct reload *r, time_t now, int64_t now_ms);

/* With --signing-key-dir: the external signer's state the last pass made
 * (r keeps its reference; the caller hands it on), or NULL when it did not
 * change; and the current one (NULL without the flag). */
struct signer_state *reload_signer_changed(const struct reload *r);
struct signer_state *reload_signer_current(const struct reload *r);

void reload_free(struct reload *r);

#endif
