/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schedule: when the reload thread reads its inputs next. A pass reads the
 * key files (and the TLS certificate and signing key) and is due:
 *
 * - RELOAD_DEBOUNCE_MS after the last change inotify reported: writers
 *   produce bursts of events (create, write, rename), and one read after
 *   the burst sees the finished files;
 * - at once on a request (SIGHUP);
 * - every --key-reload-interval, whatever happened;
 * - when the inputs set a deadline: a monotonic one (a key removal waits
 *   for a confirming re-read, keys/removal.h) or a wall-clock one (a
 *   retained key's expiry, the signing key maturing). A wall-clock
 *   deadline is never sooner than a second after the last pass, so that
 *   files broken at a retained key's expiry are not re-read in a spin.
 *
 * Pure arithmetic on the times given, so it is unit-tested as it is.
 */
#ifndef OIDC_SCHEDULE_H
#define OIDC_SCHEDULE_H

#include <stdint.h>
#include <time.h>

#define SCHEDULE_DEBOUNCE_MS 25

/* The floor under a wall-clock deadline, after the last pass. */
#define SCHEDULE_RETRY_MS 1000

/* All times are monotonic milliseconds (util/clock.h) unless named wall. */
struct schedule {
    int64_t interval_ms; /* --key-reload-interval */
    int64_t debounce_at; /* a pass after a change or a request, or 0 */
    int64_t periodic_at; /* the next periodic pass */
    int64_t ran_at;      /* the last pass */
};

/* A schedule whose last pass ran at now. */
void schedule_init(struct schedule *s, unsigned long interval_seconds, int64_t now);

/* A watched file changed at now: a pass once the burst is over. */
void schedule_changed(struct schedule *s, int64_t now);

/* A re-read was asked for at now (SIGHUP): a pass at once. */
void schedule_requested(struct schedule *s, int64_t now);

/* When the next pass is due, given the inputs' deadlines: confirm_at
 * (monotonic ms, 0 for none) and wall_at (a wall-clock second, 0 for
 * none), at now and wall (the same instant on both clocks). */
int64_t schedule_next(const struct schedule *s, int64_t confirm_at, time_t wall_at, int64_t now, time_t wall);

/* A pass ran at now: the next periodic one is an interval away. */
void schedule_ran(struct schedule *s, int64_t now);

#endif
