/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/health.h"

#include <stdatomic.h>
#include <stdio.h>

#include "server/reload/bound_lookup.h"
#include "server/reload/mirror.h"

static const char *const health_source_names[METRICS_NSOURCES] = {"keys", "TLS certificate", "retention state",
                                                                  "TokenReview TLS certificate"};

static atomic_int health_stopping;
static atomic_int health_unavailable;                       /* the current snapshot has no documents */
static atomic_llong health_failing_since[METRICS_NSOURCES]; /* 0: the last reload succeeded */
static atomic_llong health_reload_seen;                     /* monotonic ms of the last pass; -1: not watched */
static unsigned long health_tolerance;

void health_init(unsigned long tolerance_seconds, int64_t now_ms)
{
    health_tolerance = tolerance_seconds;
    atomic_store(&health_reload_seen, (long long)now_ms);
}

void health_reload_alive(int64_t now_ms, int on)
{
    atomic_store(&health_reload_seen, on ? (long long)now_ms : -1);
}

int health_live(int64_t now_ms, char *why, size_t len)
{
    long long seen = atomic_load(&health_reload_seen);

    if (seen < 0 || now_ms - seen < HEALTH_RELOAD_STALL_MS)
        return 1;
    snprintf(why, len,
             "the key reload loop has been stuck for %llds (a key, certificate or state file read "
             "that does not return)",
             (now_ms - seen) / 1000);
    return 0;
}

void health_reload_result(enum metrics_source src, int ok, time_t now)
{
    long long zero = 0;

    if (ok)
        atomic_store(&health_failing_since[src], 0);
    else
        atomic_compare_exchange_strong(&health_failing_since[src], &zero, (long long)now);
}

void health_documents(int available)
{
    atomic_store(&health_unavailable, !available);
}

void health_begin_shutdown(void)
{
    atomic_store(&health_stopping, 1);
}

int health_ready(time_t now, int64_t now_ms, char *why, size_t len)
{
    struct mirror_status mirror;

    if (atomic_load(&health_stopping)) {
        snprintf(why, len, "shutting down");
        return 0;
    }
    if (!health_live(now_ms, why, len))
        return 0;
    if (mirror_status_get(&mirror) && !mirror_ready(&mirror, now, why, len))
        return 0;
    if (!bound_lookup_ready(why, len))
        return 0;
    if (atomic_load(&health_unavailable)) {
        snprintf(why, len, "no keys are published yet");
        return 0;
    }
    for (int s = 0; s < METRICS_NSOURCES; s++) {
        long long since = atomic_load(&health_failing_since[s]);
        if (since != 0 && now - since >= (long long)health_tolerance) {
            snprintf(why, len, "reloading the %s has failed for %llds", health_source_names[s], (long long)now - since);
            return 0;
        }
    }
    return 1;
}
