/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publisher: serve's thread that keeps every --publish-to target holding
 * the published documents. The reload thread offers each new snapshot
 * (push_publisher_offer never blocks and never does I/O); the publisher
 * pushes the newest one it has (an older one still waiting is dropped:
 * only the newest matters), retries a failure after a backoff with jitter,
 * and reads the objects back every --publish-check-interval to repair
 * what changed (sync.h, plan.h). Its state is in status.h.
 *
 * Nothing here touches the event loops or /readyz: a store that is down
 * or refuses the credentials is logged, counted and retried, and serving
 * goes on.
 */
#ifndef OIDC_PUSH_PUBLISHER_H
#define OIDC_PUSH_PUBLISHER_H

#include <stddef.h>

#include "config/config.h"
#include "publish/snapshot.h"

struct push_publisher;

/* Opens cfg's --publish-to targets (their credentials must be there: a
 * missing one is the operator's to fix before serving) and starts the
 * thread on first, of which it takes a reference. NULL with the reason in
 * err, naming the flag. */
struct push_publisher *push_publisher_start(const struct config *cfg, struct snapshot *first, char *err, size_t errlen);

/* Hands the publisher a newer snapshot (it takes a reference). */
void push_publisher_offer(struct push_publisher *p, struct snapshot *s);

/* Stops the thread (a transfer under way is cancelled within a second),
 * joins it and frees everything; NULL is fine. */
void push_publisher_stop(struct push_publisher *p);

#endif
