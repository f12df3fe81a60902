#include "health.h"

#include <stdatomic.h>
#include <stdio.h>

static const char *const health_source_names[METRICS_NSOURCES] = {"keys", "TLS certificate", "retention state"};

static atomic_int health_stopping;
static atomic_llong health_failing_since[METRICS_NSOURCES]; /* 0: the last reload succeeded */
static unsigned long health_tolerance;

void health_init(unsigned long tolerance_seconds)
{
    health_tolerance = tolerance_seconds;
}

void health_reload_result(enum metrics_source src, int ok, time_t now)
{
    long long zero = 0;

    if (ok)
        atomic_store(&health_failing_since[src], 0);
    else
        atomic_compare_exchange_strong(&health_failing_since[src], &zero, (long long)now);
}

void health_begin_shutdown(void)
{
    atomic_store(&health_stopping, 1);
}

int health_ready(time_t now, char *why, size_t len)
{
    if (atomic_load(&health_stopping)) {
        snprintf(why, len, "shutting down");
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
