/*
 * health: what /readyz answers. Ready means a key set is published (always
 * true once serving), the last reload of the keys and of the TLS
 * certificate succeeded — or has been failing for less than
 * --key-reload-interval, so one half-written file does not pull every
 * replica out of a load balancer — and no shutdown has begun.
 */
#ifndef OIDC_HEALTH_H
#define OIDC_HEALTH_H

#include <stddef.h>
#include <time.h>
#include "metrics.h"

/* How long a reload may keep failing before the server reports unready. */
void health_init(unsigned long tolerance_seconds);

/* Records the outcome of a reload of src at now. */
void health_reload_result(enum metrics_source src, int ok, time_t now);

/* From now on /readyz answers 503: the process is shutting down. */
void health_begin_shutdown(void);

/* 1 when ready; otherwise 0 with the reason in why. */
int health_ready(time_t now, char *why, size_t len);

#endif
