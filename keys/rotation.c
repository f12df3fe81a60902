/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/rotation.h"

int rotation_find(const struct rotation_key *keys, size_t n, enum rotation_role role)
{
    for (size_t i = 0; i < n; i++)
        if (keys[i].role == role)
            return (int)i;
    return -1;
}

void rotation_tick(struct rotation_key *keys, size_t n, const int *published, int64_t elapsed_ms,
                   const struct rotation_policy *p, time_t now)
{
    if (elapsed_ms < 0)
        elapsed_ms = 0;
    for (size_t i = 0; i < n; i++) {
        struct rotation_key *k = &keys[i];
        if (!published[i])
            continue;
        if (k->published_at == 0)
            k->published_at = now;
        k->published_ms += elapsed_ms;
        if (k->role == ROTATION_SIGNING)
            k->signing_ms += elapsed_ms;
        if (k->role == ROTATION_RETIRED)
            k->retired_ms += elapsed_ms;
        /* A token signed while a longer lifetime was in force lives that
         * long: the keep time only grows. */
        if (k->role != ROTATION_NEXT && k->keep_ms < p->keep_ms)
            k->keep_ms = p->keep_ms;
    }
}

/* How long the rotating process publishes a next key before it promotes
 * it: publish-ahead, the slack, and the lag of the other processes (a
 * process that re-reads the directory only every --key-reload-interval
 * served a key set without the key for that long after it was made). */
static int64_t rotation_wait_ms(const struct rotation_key *next, const struct rotation_policy *p)
{
    return next->trusted ? 0 : p->ahead_ms + ROTATION_SLACK_MS + p->lag_ms;
}

enum rotation_action rotation_decide(const struct rotation_key *keys, size_t n, const struct rotation_policy *p,
                                     size_t *which)
{
    int s = rotation_find(keys, n, ROTATION_SIGNING), x = rotation_find(keys, n, ROTATION_NEXT);

    for (size_t i = 0; i < n; i++) {
        if (keys[i].role == ROTATION_RETIRED && keys[i].retired_ms >= keys[i].keep_ms) {
            *which = i;
            return ROTATION_DROP;
        }
    }
    if (x >= 0 && keys[x].published_ms >= rotation_wait_ms(&keys[x], p) &&
        (s < 0 || keys[s].signing_ms >= p->period_ms))
        return ROTATION_PROMOTE;
    if (x < 0 && (s < 0 || keys[s].signing_ms >= p->period_ms - p->ahead_ms))
        return ROTATION_GENERATE;
    return ROTATION_NONE;
}

void rotation_promote(struct rotation_key *keys, size_t n, const struct rotation_policy *p, time_t now)
{
    int s = rotation_find(keys, n, ROTATION_SIGNING), x = rotation_find(keys, n, ROTATION_NEXT);

    if (x < 0)
        return;
    if (s >= 0) {
        keys[s].role = ROTATION_RETIRED;
        keys[s].retired_at = now;
        keys[s].retired_ms = 0;
        if (keys[s].keep_ms < p->keep_ms)
            keys[s].keep_ms = p->keep_ms;
    }
    keys[x].role = ROTATION_SIGNING;
    keys[x].activated_at = now;
    keys[x].signing_ms = 0;
    if (keys[x].keep_ms < p->keep_ms)
        keys[x].keep_ms = p->keep_ms;
}

/* Lowers *due to wait (a wait of zero or less is due now). */
static void rotation_sooner(int64_t *due, int *any, int64_t wait)
{
    if (wait < 1)
        wait = 1;
    if (!*any || wait < *due)
        *due = wait;
    *any = 1;
}

int64_t rotation_due_in(const struct rotation_key *keys, size_t n, const struct rotation_policy *p)
{
    int s = rotation_find(keys, n, ROTATION_SIGNING), x = rotation_find(keys, n, ROTATION_NEXT), any = 0;
    int64_t due = -1, wait;

    for (size_t i = 0; i < n; i++)
        if (keys[i].role == ROTATION_RETIRED)
            rotation_sooner(&due, &any, keys[i].keep_ms - keys[i].retired_ms);
    if (x >= 0) {
        wait = rotation_wait_ms(&keys[x], p) - keys[x].published_ms;
        if (s >= 0 && p->period_ms - keys[s].signing_ms > wait)
            wait = p->period_ms - keys[s].signing_ms;
        rotation_sooner(&due, &any, wait);
    } else {
        rotation_sooner(&due, &any, s >= 0 ? p->period_ms - p->ahead_ms - keys[s].signing_ms : 0);
    }
    return due;
}

int64_t rotation_promote_in(const struct rotation_key *keys, size_t n, const struct rotation_policy *p)
{
    int s = rotation_find(keys, n, ROTATION_SIGNING), x = rotation_find(keys, n, ROTATION_NEXT);
    int64_t wait = s >= 0 ? p->period_ms - keys[s].signing_ms : 0, publication;

    if (x >= 0) {
        publication = rotation_wait_ms(&keys[x], p) - keys[x].published_ms;
    } else {
        /* Made publish-ahead before the period ends (or now, if that has
         * passed), then published for its whole wait. */
        publication = p->ahead_ms + ROTATION_SLACK_MS + p->lag_ms;
        if (wait > p->ahead_ms)
            publication += wait - p->ahead_ms;
    }
    if (publication > wait)
        wait = publication;
    return wait < 0 ? 0 : wait;
}

/* Whether this process may sign with key i (see rotation_choose). */
static int rotation_may_sign(const struct rotation_key *k, int64_t local_ms, int vouched, int64_t ahead_ms)
{
    return local_ms >= 0 && ((k->trusted && vouched) || local_ms >= ahead_ms + ROTATION_SLACK_MS);
}

int rotation_choose(const struct rotation_key *keys, size_t n, const int64_t *local_ms, const int *vouched,
                    int64_t ahead_ms, int64_t *due_in_ms)
{
    int s = rotation_find(keys, n, ROTATION_SIGNING), best = -1;

    *due_in_ms = -1;
    if (s >= 0 && rotation_may_sign(&keys[s], local_ms[s], vouched == NULL || vouched[s], ahead_ms))
        return s;
    if (s >= 0 && local_ms[s] >= 0)
        *due_in_ms = ahead_ms + ROTATION_SLACK_MS - local_ms[s];
    for (size_t i = 0; i < n; i++)
        if (keys[i].role == ROTATION_RETIRED &&
            rotation_may_sign(&keys[i], local_ms[i], vouched == NULL || vouched[i], ahead_ms) &&
            (best < 0 || keys[i].retired_ms < keys[best].retired_ms))
            best = (int)i;
    return best;
}

time_t rotation_until(const struct rotation_key *k, const struct rotation_policy *p, time_t now)
{
    int64_t keep = k->keep_ms > p->keep_ms ? k->keep_ms : p->keep_ms, left = keep - k->retired_ms;

    if (k->role != ROTATION_RETIRED)
        return 0;
    return now + (time_t)((left > 0 ? left + 999 : 0) / 1000);
}

const char *rotation_role_name(enum rotation_role role)
{
    switch (role) {
    case ROTATION_NEXT:
        return "next";
    case ROTATION_SIGNING:
        return "signing";
    default:
        return "retired";
    }
}
