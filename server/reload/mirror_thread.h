/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mirror_thread: reads the --upstream API server (keys/upstream.h) when
 * server/reload/mirror.h says, on a thread of its own: a read may take up
 * to --upstream-timeout per request, which neither an event loop nor the
 * reload thread (whose stall /livez reports) may spend. Each new good key
 * set is handed to the reload thread, woken for it, which publishes it
 * with the key files; a failure hands nothing over, so the last good set
 * stays. It also keeps the mirror's status (mirror_status_set) and
 * metrics, and logs what changed.
 */
#ifndef OIDC_MIRROR_THREAD_H
#define OIDC_MIRROR_THREAD_H

#include "config/config.h"
#include "keys/keyset.h"

struct mirror_thread;

/* Starts reading cfg->upstream at once; wake(ctx) is called (on the
 * mirror thread) whenever a new set waits for mirror_thread_take. NULL,
 * logged, when the thread cannot start. */
struct mirror_thread *mirror_thread_start(const struct config *cfg, void (*wake)(void *ctx), void *ctx);

/* The newest good set not taken yet (the caller's), or NULL. Thread-safe. */
struct keyset *mirror_thread_take(struct mirror_thread *t);

/* A re-read was asked for (SIGHUP): read now, unless a read is under way.
 * Thread-safe. */
void mirror_thread_hurry(struct mirror_thread *t);

/* Stops the thread and frees t: 0. When a read does not end within
 * timeout_ms (it may take up to twice --upstream-timeout), the thread is
 * abandoned, which is harmless (it only reads), but t is not freed and
 * the thread still uses cfg and wake's ctx: -1, and the caller must end
 * the process without freeing them. */
int mirror_thread_stop(struct mirror_thread *t, unsigned timeout_ms);

#endif
