/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status: what the serving process knows of its pushes, per target, for
 * /metrics, the admin status page and anyone else who asks: the last
 * attempt and its result, the last time the target was found current, the
 * last error, the counts by result and the drift repairs.
 *
 * Written by the publisher thread only; read by any thread, each read a
 * consistent copy taken under a mutex (a few times a scrape, never on a
 * request's path). Empty (count 0) unless serve runs with --publish-to.
 */
#ifndef OIDC_PUSH_STATUS_H
#define OIDC_PUSH_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "push/plan.h"
#include "push/sync.h"
#include "push/target.h"

/* The result of one attempt, as counted. */
enum push_result {
    PUSH_RESULT_WRITTEN,   /* at least one object was written and read back */
    PUSH_RESULT_UNCHANGED, /* both objects held our bytes already */
    PUSH_RESULT_YIELDED,   /* a newer key set was there (another replica's) */
    PUSH_RESULT_FAILED,
    PUSH_NRESULTS
};

/* One target's status. */
struct push_status {
    char target[PUSH_TARGET_SHOWN_MAX + 4]; /* the URL as redact_url shows it */
    time_t last_attempt;                    /* wall clock; 0: none yet */
    time_t last_current;                    /* when the target last held our key set or a newer one; 0: never */
    enum push_result last_result;
    char last_error[768];                 /* of the last attempt when it failed, else "" */
    char generation[PUSH_GEN_MAX];        /* of the key set being pushed */
    char remote_generation[PUSH_GEN_MAX]; /* the newer set's, when the last attempt yielded, else "" */
    uint64_t results[PUSH_NRESULTS];      /* attempts by result, since start */
    uint64_t drift_repairs;               /* objects rewritten because they differed after a push */
};

/* A short stable name of a result ("written", "unchanged", "yielded", "failed"). */
const char *push_result_name(enum push_result r);

/* The result an attempt's report counts as. */
enum push_result push_result_of(const struct push_report *rep);

/* Folds one attempt's report into *st at now (wall clock). settled: the
 * key set had already been pushed (or yielded to), so whatever had to be
 * written again had drifted. Returns the objects repaired. */
unsigned push_status_apply(struct push_status *st, const struct push_report *rep, int settled, time_t now);

/* The number of targets. */
size_t push_status_count(void);

/* Copies target i's status into *out. Returns 0, or -1 when there is no
 * target i. */
int push_status_get(size_t i, struct push_status *out);

/* The publisher's side: registers the targets (before any reader looks),
 * replaces target i's status, and forgets them all at its stop. */
int push_status_init(const char *const *urls, size_t n);
void push_status_put(size_t i, const struct push_status *st);
void push_status_reset(void);

#endif
