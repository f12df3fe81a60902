/* SPDX-License-Identifier: Apache-2.0 */
/*
 * health: what /readyz answers. Ready means a key set is published (always
 * true once serving, except while an --upstream has not answered), the
 * last reload of the keys and of the TLS certificate succeeded — or has
 * been failing for less than --key-reload-interval, so one half-written
 * file does not pull every replica out of a load balancer — an --upstream
 * is fresh and names the expected issuer (mirror_ready), the API server
 * answers the bound-object lookups (bound_lookup_ready, with
 * --token-review-check-bound-objects), and no shutdown has begun.
 *
 * Live (/livez) means the reload loop is not stuck: it reports every pass,
 * and a pass that has not come back for HEALTH_RELOAD_STALL_MS (a file
 * read that never returns) fails /livez and /readyz, so that the kubelet
 * restarts the process instead of letting it serve a frozen key set.
 */
#ifndef OIDC_HEALTH_H
#define OIDC_HEALTH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "server/obs/metrics.h"

/* Far longer than a pass ever takes (reading a few small files, writing
 * one), even under valgrind; short against a liveness probe's patience. */
#define HEALTH_RELOAD_STALL_MS 10000

/* How long a reload may keep failing before the server reports unready;
 * the reload loop counts as alive at now_ms (util/clock.h). */
void health_init(unsigned long tolerance_seconds, int64_t now_ms);

/* The reload loop is alive at now_ms (monotonic); on = 0 when it ended
 * on purpose (shutdown), so its silence is no longer a fault. */
void health_reload_alive(int64_t now_ms, int on);

/* 1 when live; otherwise 0 with the reason in why. */
int health_live(int64_t now_ms, char *why, size_t len);

/* Records the outcome of a reload of src at now. */
void health_reload_result(enum metrics_source src, int ok, time_t now);

/* Whether the snapshot just made current has documents to serve (not
 * while an --upstream has yet to answer): /readyz follows what is
 * published, not what is read. */
void health_documents(int available);

/* From now on /readyz answers 503: the process is shutting down. */
void health_begin_shutdown(void);

/* 1 when ready at now (wall clock) and now_ms (monotonic); otherwise 0
 * with the reason in why. */
int health_ready(time_t now, int64_t now_ms, char *why, size_t len);

#endif
