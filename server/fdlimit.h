/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdlimit: the open-file limit, and how many client connections it leaves
 * room for on each kind of listener. Every connection is a descriptor; a
 * process at its limit cannot accept, and the pending connection keeps the
 * listener readable, so the event loop would spin while clients wait.
 */
#ifndef OIDC_FDLIMIT_H
#define OIDC_FDLIMIT_H

#include "config/config.h"
#include "server/obs/metrics.h"

/* Raises the soft RLIMIT_NOFILE to the hard one, and returns in budget the
 * connection budget of each listener that is on (0 for one that is off):
 * its flag, or less when the open-file limit cannot hold them all, with a
 * warning naming the flag. */
void fdlimit_budgets(const struct config *cfg, unsigned long budget[METRICS_NLISTENERS]);

#endif
