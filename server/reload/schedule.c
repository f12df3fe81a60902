/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/schedule.h"

void schedule_init(struct schedule *s, unsigned long interval_seconds, int64_t now)
{
    s->interval_ms = (int64_t)interval_seconds * 1000;
    s->debounce_at = 0;
    schedule_ran(s, now);
}

void schedule_changed(struct schedule *s, int64_t now)
{
    s->debounce_at = now + SCHEDULE_DEBOUNCE_MS;
}

void schedule_requested(struct schedule *s, int64_t now)
{
    s->debounce_at = now;
}

/* The monotonic ms at which the wall-clock second at falls, never sooner
 * than SCHEDULE_RETRY_MS after the last pass. */
static int64_t schedule_wall_deadline(const struct schedule *s, time_t at, int64_t now, time_t wall)
{
    int64_t ms = now + (int64_t)(at - wall) * 1000;

    return ms < s->ran_at + SCHEDULE_RETRY_MS ? s->ran_at + SCHEDULE_RETRY_MS : ms;
}

int64_t schedule_next(const struct schedule *s, int64_t confirm_at, time_t wall_at, int64_t now, time_t wall)
{
    int64_t next = s->periodic_at;

    if (s->debounce_at != 0 && s->debounce_at < next)
        next = s->debounce_at;
    if (confirm_at != 0 && confirm_at < next)
        next = confirm_at;
    if (wall_at != 0 && schedule_wall_deadline(s, wall_at, now, wall) < next)
        next = schedule_wall_deadline(s, wall_at, now, wall);
    return next;
}

void schedule_ran(struct schedule *s, int64_t now)
{
    s->debounce_at = 0;
    s->ran_at = now;
    s->periodic_at = now + s->interval_ms;
}
