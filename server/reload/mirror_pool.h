/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mirror_pool: the upstreams of a fleet (--issuers-dir files with an
 * `upstream`), each read on its own schedule (server/reload/mirror.h:
 * refresh interval, the upstream's max-age, backoff with jitter) by a
 * fixed pool of MIRROR_POOL_THREADS threads, whatever the number of
 * issuers: a thousand mirrored clusters are a thousand entries, not a
 * thousand threads.
 *
 * Each thread takes the entry whose next read is due first and reads it
 * with upstream_fetch (keys/upstream.h), which is blocking and bounded by
 * the issuer's upstream-timeout per request. Blocking reads on a few
 * threads are the simplest bounded design: the code that reads one
 * upstream is the one-issuer mirror's, unchanged, and an upstream that
 * hangs holds one thread for at most twice its timeout while the others
 * keep the rest on time. The due entry is found by a scan of the entries
 * rather than a heap: a scan of a thousand entries costs microseconds
 * once per read, and entries come, go and change schedule as files
 * change, which a scan needs no bookkeeping for.
 *
 * A new good set waits in its entry for the reload thread (woken for it,
 * and whenever an entry's health changes, so that the status follows),
 * which hands it to that issuer's reloader (mirror_pool_take). A failure
 * hands nothing over: the issuer's last good set keeps serving, and the
 * failure is that issuer's alone (mirror_pool_problem).
 *
 * Entries are handles: the reload thread adds, replaces and removes them
 * (mirror_pool_set, mirror_pool_remove); a pool thread reading an entry
 * when it is removed frees it after the read.
 */
#ifndef OIDC_MIRROR_POOL_H
#define OIDC_MIRROR_POOL_H

#include <stddef.h>

#include "config/config.h"
#include "keys/keyset.h"
#include "server/reload/mirror.h"

#define MIRROR_POOL_THREADS 4

struct mirror_pool;
struct mirror_entry;

/* Starts the pool's threads, idle until an entry is set; wake(ctx) is
 * called (on a pool thread) when a set waits or an entry's health
 * changed. NULL, logged, when no thread can start. */
struct mirror_pool *mirror_pool_start(void (*wake)(void *ctx), void *ctx);

/* The entry that mirrors cfg's upstream for the issuer logged with
 * log_prefix: old itself when its settings are cfg's (its schedule and
 * last good set stay), else a new one whose first read is due now (old,
 * when not NULL, is removed). NULL when out of memory (logged). */
struct mirror_entry *mirror_pool_set(struct mirror_pool *p, struct mirror_entry *old, const char *log_prefix,
                                     const struct config *cfg);

/* Stops mirroring e (NULL: nothing). */
void mirror_pool_remove(struct mirror_pool *p, struct mirror_entry *e);

/* The newest good set of e not taken yet (the caller's), or NULL. */
struct keyset *mirror_pool_take(struct mirror_pool *p, struct mirror_entry *e);

/* A copy of e's last good set when e mirrors what cfg names (a changed
 * issuer file whose upstream settings did not change: its new reloader
 * starts from it rather than answering 503 until the next read), or
 * NULL. */
struct keyset *mirror_pool_last(struct mirror_pool *p, const struct mirror_entry *e, const struct config *cfg);

/* 0 when e is ready (mirror_ready: read, the right issuer, not stale)
 * and its last read did not fail, else 1 with the reason in why; e's
 * status (mirror.h) in *st either way. */
int mirror_pool_problem(struct mirror_pool *p, const struct mirror_entry *e, char *why, size_t len,
                        struct mirror_status *st);

/* A re-read of every entry was asked for (SIGHUP). */
void mirror_pool_hurry(struct mirror_pool *p);

/* Stops the threads and frees p and its entries: 0. When a read does not
 * end within timeout_ms, the pool is abandoned (it only reads) and -1
 * returned: the caller must end the process without freeing what wake's
 * ctx is. */
int mirror_pool_stop(struct mirror_pool *p, unsigned timeout_ms);

#endif
