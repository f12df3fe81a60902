/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keys/rotation: the signing keys' schedule as arithmetic on
 * ages, with made-up clocks. What each step decides (generate, promote,
 * drop), that ages only grow while a key is published (so neither a wall
 * clock stepped forward nor a restart moves anything sooner), which key a
 * process signs with, and a long simulation of the rotating process and a
 * second process that sees every change late, checking the two promises:
 * no process signs with a key before it has published it for publish-ahead,
 * and no key leaves a process's published set sooner than its keep time
 * after its last signature there.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "test_support.h"

#include "keys/rotation.h"

#define SEC  1000
#define HOUR (3600 * SEC)
#define DAY  (24 * HOUR)
#define T0   1800000000L

static const struct rotation_policy policy = {
    .period_ms = 30L * DAY, .ahead_ms = DAY, .lag_ms = 60 * SEC, .keep_ms = 2L * DAY};
/* How long a next key is published before it is promoted. */
#define WAIT (policy.ahead_ms + ROTATION_SLACK_MS + policy.lag_ms)

static struct rotation_key key(const char *kid, enum rotation_role role)
{
    struct rotation_key k;

    memset(&k, 0, sizeof(k));
    snprintf(k.kid, sizeof(k.kid), "%s", kid);
    k.role = role;
    return k;
}

TestSuite(rotation, .fini = leak_check);

Test(rotation, a_lone_signing_key_waits_for_period_minus_ahead)
{
    struct rotation_key keys[] = {key("s", ROTATION_SIGNING)};
    size_t which;

    keys[0].signing_ms = policy.period_ms - policy.ahead_ms - 1;
    cr_expect_eq(rotation_decide(keys, 1, &policy, &which), ROTATION_NONE);
    cr_expect_eq(rotation_due_in(keys, 1, &policy), 1);
    keys[0].signing_ms++;
    cr_expect_eq(rotation_decide(keys, 1, &policy, &which), ROTATION_GENERATE);
}

Test(rotation, the_next_key_is_promoted_only_when_due_and_published_long_enough)
{
    struct rotation_key keys[] = {key("s", ROTATION_SIGNING), key("n", ROTATION_NEXT)};
    size_t which;

    keys[0].signing_ms = policy.period_ms;
    keys[1].published_ms = WAIT - 1;
    cr_expect_eq(rotation_decide(keys, 2, &policy, &which), ROTATION_NONE, "published one ms too short");
    cr_expect_eq(rotation_due_in(keys, 2, &policy), 1);
    keys[1].published_ms++;
    cr_expect_eq(rotation_decide(keys, 2, &policy, &which), ROTATION_PROMOTE);
    keys[0].signing_ms = policy.period_ms - 10;
    cr_expect_eq(rotation_decide(keys, 2, &policy, &which), ROTATION_NONE, "published long enough, not due yet");
    cr_expect_eq(rotation_due_in(keys, 2, &policy), 10);
}

Test(rotation, promotion_retires_the_signing_key_with_the_keep_time)
{
    struct rotation_key keys[] = {key("s", ROTATION_SIGNING), key("n", ROTATION_NEXT)};

    keys[0].signing_ms = policy.period_ms;
    rotation_promote(keys, 2, &policy, T0);
    cr_expect_eq(keys[0].role, ROTATION_RETIRED);
    cr_expect_eq(keys[0].retired_at, T0);
    cr_expect_eq(keys[0].retired_ms, 0);
    cr_expect_eq(keys[0].keep_ms, policy.keep_ms);
    cr_expect_eq(keys[1].role, ROTATION_SIGNING);
    cr_expect_eq(keys[1].activated_at, T0);
    cr_expect_eq(keys[1].signing_ms, 0);
    cr_expect_eq(rotation_until(&keys[0], &policy, T0 + 5), T0 + 5 + policy.keep_ms / SEC);
    cr_expect_eq(rotation_until(&keys[1], &policy, T0 + 5), 0, "a key in use has no end yet");
}

Test(rotation, a_retired_key_is_dropped_after_its_keep_time_first)
{
    struct rotation_key keys[] = {key("r1", ROTATION_RETIRED), key("r2", ROTATION_RETIRED), key("s", ROTATION_SIGNING)};
    size_t which = 99;

    keys[0].keep_ms = keys[1].keep_ms = policy.keep_ms;
    keys[0].retired_ms = policy.keep_ms - 1;
    keys[1].retired_ms = policy.keep_ms;
    keys[2].signing_ms = policy.period_ms; /* a generation is due too: the drop comes first */
    cr_expect_eq(rotation_decide(keys, 3, &policy, &which), ROTATION_DROP);
    cr_expect_eq(which, 1);
    keys[1].retired_ms = 0;
    cr_expect_eq(rotation_decide(keys, 3, &policy, &which), ROTATION_GENERATE);
}

/* A key retired while a longer lifetime was in force keeps it: lowering
 * --max-token-lifetime must not drop keys whose tokens still live. */
Test(rotation, the_keep_time_only_grows)
{
    struct rotation_key keys[] = {key("r", ROTATION_RETIRED)};
    struct rotation_policy shorter = policy;
    int published[] = {1};

    keys[0].keep_ms = policy.keep_ms;
    shorter.keep_ms = policy.keep_ms / 2;
    rotation_tick(keys, 1, published, policy.keep_ms / 2, &shorter, T0);
    cr_expect_eq(keys[0].keep_ms, policy.keep_ms);
    cr_expect_eq(rotation_until(&keys[0], &shorter, T0), T0 + policy.keep_ms / 2 / SEC);
    size_t which;
    cr_expect_eq(rotation_decide(keys, 1, &shorter, &which), ROTATION_GENERATE, "not dropped: no signing key yet");
}

/* Ages grow only by the intervals given, and only for published keys: a
 * wall clock stepped forward by a year promotes nothing. */
Test(rotation, ages_grow_by_the_monotonic_intervals_only)
{
    struct rotation_key keys[] = {key("s", ROTATION_SIGNING), key("n", ROTATION_NEXT)};
    int published[] = {1, 0};
    size_t which;

    rotation_tick(keys, 2, published, 5 * SEC, &policy, T0);
    cr_expect_eq(keys[0].published_ms, 5 * SEC);
    cr_expect_eq(keys[0].signing_ms, 5 * SEC);
    cr_expect_eq(keys[0].published_at, T0);
    cr_expect_eq(keys[1].published_ms, 0, "not in the snapshot: not published");
    cr_expect_eq(keys[1].published_at, 0);
    published[1] = 1;
    rotation_tick(keys, 2, published, SEC, &policy, T0 + 365L * 86400);
    cr_expect_eq(keys[1].published_ms, SEC);
    cr_expect_eq(keys[1].published_at, T0 + 365L * 86400);
    cr_expect_eq(rotation_decide(keys, 2, &policy, &which), ROTATION_NONE);
    rotation_tick(keys, 2, published, -HOUR, &policy, T0);
    cr_expect_eq(keys[1].published_ms, SEC, "a negative interval counts as none");
}

/* Without a signing key (lost), the next key signs as soon as it has been
 * published long enough; with none at all, one is generated. */
Test(rotation, a_directory_without_signing_key_recovers)
{
    struct rotation_key keys[] = {key("n", ROTATION_NEXT)};
    size_t which;

    cr_expect_eq(rotation_decide(keys, 0, &policy, &which), ROTATION_GENERATE);
    cr_expect_eq(rotation_due_in(keys, 0, &policy), 1);
    keys[0].published_ms = WAIT - 1;
    cr_expect_eq(rotation_decide(keys, 1, &policy, &which), ROTATION_NONE);
    keys[0].published_ms++;
    cr_expect_eq(rotation_decide(keys, 1, &policy, &which), ROTATION_PROMOTE);
}

Test(rotation, promote_in_counts_the_publication_still_to_come)
{
    struct rotation_key keys[] = {key("s", ROTATION_SIGNING), key("n", ROTATION_NEXT)};

    keys[0].signing_ms = 10 * DAY;
    cr_expect_eq(rotation_promote_in(keys, 1, &policy), 20L * DAY + ROTATION_SLACK_MS + policy.lag_ms,
                 "made a day before the period ends, it waits a day, the slack and the lag");
    keys[0].signing_ms = 29L * DAY + 12 * HOUR;
    cr_expect_eq(rotation_promote_in(keys, 1, &policy), WAIT,
                 "the next key, not made yet, must still be published for its whole wait");
    keys[1].published_ms = 2 * HOUR;
    cr_expect_eq(rotation_promote_in(keys, 2, &policy), WAIT - 2 * HOUR);
    keys[0].signing_ms = 31L * DAY;
    keys[1].published_ms = WAIT;
    cr_expect_eq(rotation_promote_in(keys, 2, &policy), 0);
}

Test(rotation, a_process_signs_with_the_signing_key_once_it_published_it_long_enough)
{
    struct rotation_key keys[] = {key("r", ROTATION_RETIRED), key("s", ROTATION_SIGNING)};
    int64_t local[] = {40L * DAY, policy.ahead_ms + ROTATION_SLACK_MS}, due;

    cr_expect_eq(rotation_choose(keys, 2, local, NULL, policy.ahead_ms, &due), 1);
    cr_expect_eq(due, -1);
    local[1] -= 30 * SEC;
    cr_expect_eq(rotation_choose(keys, 2, local, NULL, policy.ahead_ms, &due), 0, "falls back on the retired key");
    cr_expect_eq(due, 30 * SEC);
    local[0] = -1;
    cr_expect_eq(rotation_choose(keys, 2, local, NULL, policy.ahead_ms, &due), -1, "nothing it published may sign");
    local[1] = -1;
    cr_expect_eq(rotation_choose(keys, 2, local, NULL, policy.ahead_ms, &due), -1);
    cr_expect_eq(due, -1, "not even published here: nothing to wait for");
}

/* A trusted key (imported) signs as soon as it is published only while
 * its trust holds (vouched: no relying party can hold a set without it);
 * else it waits publish-ahead like any key. */
Test(rotation, a_trusted_key_signs_at_once_only_when_vouched_for)
{
    struct rotation_key keys[] = {key("s", ROTATION_SIGNING)};
    int64_t local[] = {0}, due;
    int vouched[] = {0};

    keys[0].trusted = 1;
    cr_expect_eq(rotation_choose(keys, 1, local, NULL, policy.ahead_ms, &due), 0);
    cr_expect_eq(rotation_choose(keys, 1, local, vouched, policy.ahead_ms, &due), -1);
    cr_expect_eq(due, policy.ahead_ms + ROTATION_SLACK_MS, "it signs once published long enough");
    local[0] = policy.ahead_ms + ROTATION_SLACK_MS;
    cr_expect_eq(rotation_choose(keys, 1, local, vouched, policy.ahead_ms, &due), 0);
    vouched[0] = 1;
    local[0] = -1;
    cr_expect_eq(rotation_choose(keys, 1, local, vouched, policy.ahead_ms, &due), -1, "never before it is published");
}

Test(rotation, the_fallback_is_the_most_recently_retired_key)
{
    struct rotation_key keys[] = {key("old", ROTATION_RETIRED), key("newer", ROTATION_RETIRED),
                                  key("s", ROTATION_SIGNING), key("n", ROTATION_NEXT)};
    int64_t local[] = {90L * DAY, 60L * DAY, 0, 10L * DAY}, due;

    keys[0].retired_ms = 20L * DAY;
    keys[1].retired_ms = 5 * SEC;
    cr_expect_eq(rotation_choose(keys, 4, local, NULL, policy.ahead_ms, &due), 1);
}

/* An imported key, or the first of an empty directory, signs at once
 * wherever it is published. */
Test(rotation, a_trusted_key_signs_once_published)
{
    struct rotation_key keys[] = {key("s", ROTATION_SIGNING)};
    int64_t local[] = {0}, due;

    keys[0].trusted = 1;
    cr_expect_eq(rotation_choose(keys, 1, local, NULL, policy.ahead_ms, &due), 0);
    local[0] = -1;
    cr_expect_eq(rotation_choose(keys, 1, local, NULL, policy.ahead_ms, &due), -1);
}

Test(rotation, role_names)
{
    cr_expect_str_eq(rotation_role_name(ROTATION_NEXT), "next");
    cr_expect_str_eq(rotation_role_name(ROTATION_SIGNING), "signing");
    cr_expect_str_eq(rotation_role_name(ROTATION_RETIRED), "retired");
}

/* --- a simulation ----------------------------------------------------------
 *
 * The rotating process A and a second process B on one directory. A acts
 * every STEP ms; B re-reads the directory every POLL ms only (no inotify),
 * so it publishes a new key and learns of a promotion up to POLL late.
 * Each of them goes down once and restarts (B just as a new key appeared
 * that it had not read yet: it served a set without it until then, which
 * the restart must not forget; A in the middle of a rotation). A process
 * that is up publishes what it last read and signs with rotation_choose
 * over its own publication ages, as signerdir does: a key present at its
 * start counts as published for its age in the directory less POLL, and
 * A waits POLL longer before a promotion (the policy's lag).
 *
 * The two promises, checked across both processes:
 *   - a key signs (anywhere) only when no process has served a key set
 *     without it for the last publish-ahead (relying parties cache a set
 *     for at most --max-age, which is not longer);
 *   - no process drops a key sooner than lifetime (the keep time less
 *     the POLL it includes) after the last signature made with it.
 */

#define SIM_KEYS 64

struct sim_process {
    int up;
    struct rotation_key view[SIM_KEYS]; /* the keys as this process last read them */
    size_t nview;
    int64_t read_at;
    int64_t since[SIM_KEYS];        /* by key number: when it counts as first published here, or -1 */
    int in_set[SIM_KEYS];           /* in its published set now */
    int64_t last_without[SIM_KEYS]; /* the last time it served a set without the key, since the key was made */
    int64_t dropped[SIM_KEYS];      /* when the key left its set, or -1 */
};

/* Keys are named by the order A made them: "k0", "k1", ... */
static int sim_number(const char *kid)
{
    return atoi(kid + 1);
}

static void sim_init(struct sim_process *p)
{
    memset(p, 0, sizeof(*p));
    p->up = 1;
    for (int k = 0; k < SIM_KEYS; k++)
        p->since[k] = p->last_without[k] = p->dropped[k] = -1;
}

/* Reads the directory (A's keys) at now; at a start (credit_lag >= 0) the
 * keys found count as published for their age less credit_lag. */
static void sim_read(struct sim_process *p, const struct rotation_key *keys, size_t n, int64_t now, int64_t credit_lag)
{
    memcpy(p->view, keys, n * sizeof(keys[0]));
    p->nview = n;
    p->read_at = now;
    for (size_t i = 0; i < n; i++) {
        int k = sim_number(keys[i].kid);
        int64_t credit = credit_lag >= 0 && keys[i].published_ms > credit_lag ? keys[i].published_ms - credit_lag : 0;
        if (p->since[k] < 0)
            p->since[k] = now - credit;
    }
}

/* Serves the keys it read; exists[k]: A has made key k and not dropped it. */
static void sim_serve(struct sim_process *p, const int *exists, int64_t now)
{
    int now_in[SIM_KEYS] = {0};

    for (size_t i = 0; i < p->nview; i++)
        now_in[sim_number(p->view[i].kid)] = 1;
    for (int k = 0; k < SIM_KEYS; k++) {
        if (p->in_set[k] && !now_in[k])
            p->dropped[k] = now;
        if (exists[k] && !now_in[k])
            p->last_without[k] = now;
        p->in_set[k] = now_in[k];
    }
}

/* The key it signs with now, or -1. */
static int sim_sign(const struct sim_process *p, int64_t now, int64_t ahead_ms)
{
    int64_t local[SIM_KEYS], due;
    int chosen;

    for (size_t i = 0; i < p->nview; i++)
        local[i] = now - p->since[sim_number(p->view[i].kid)];
    chosen = rotation_choose(p->view, p->nview, local, NULL, ahead_ms, &due);
    return chosen < 0 ? -1 : sim_number(p->view[chosen].kid);
}

/* A restarts: it forgets what it published; the directory keeps ages. */
static void sim_restart(struct sim_process *p)
{
    for (int k = 0; k < SIM_KEYS; k++)
        p->since[k] = -1;
    p->nview = 0;
    p->up = 1;
}

Test(rotation, simulation_two_processes_polling_and_restarting)
{
    const int64_t STEP = 50, POLL = 2500, END = 150 * SEC;
    const struct rotation_policy pol = {
        .period_ms = 10 * SEC, .ahead_ms = 3 * SEC, .lag_ms = POLL, .keep_ms = 7 * SEC + POLL};
    struct rotation_key keys[SIM_KEYS];
    size_t n = 1, which;
    int64_t last_signed[SIM_KEYS], made[SIM_KEYS], b_back = -1, a_back = -1;
    int exists[SIM_KEYS] = {0}, next_kid = 1, fallbacks = 0, b_restarted = 0, a_restarted = 0;
    struct sim_process *procs[2], a, b;

    sim_init(&a);
    sim_init(&b);
    procs[0] = &a;
    procs[1] = &b;
    for (int k = 0; k < SIM_KEYS; k++)
        last_signed[k] = made[k] = -1;
    keys[0] = key("k0", ROTATION_SIGNING);
    keys[0].trusted = 1;
    exists[0] = 1;
    made[0] = 0;
    for (int64_t now = 0; now < END; now += STEP) {
        /* A, while up: ages for what it served since the last step, then
         * whatever the keys call for. */
        if (a.up) {
            int published[SIM_KEYS];
            for (size_t i = 0; i < n; i++)
                published[i] = a.in_set[sim_number(keys[i].kid)];
            rotation_tick(keys, n, published, STEP, &pol, T0 + now / SEC);
            enum rotation_action act;
            while ((act = rotation_decide(keys, n, &pol, &which)) != ROTATION_NONE) {
                if (act == ROTATION_DROP) {
                    exists[sim_number(keys[which].kid)] = 0;
                    memmove(&keys[which], &keys[which + 1], (n - which - 1) * sizeof(keys[0]));
                    n--;
                } else if (act == ROTATION_PROMOTE) {
                    rotation_promote(keys, n, &pol, T0 + now / SEC);
                    /* A goes down once, just after a promotion, for a while. */
                    if (!a_restarted && next_kid > 6) {
                        a.up = 0;
                        a_back = now + 1500;
                        a_restarted = 1;
                    }
                } else {
                    char kid[16];
                    cr_assert_lt(next_kid, SIM_KEYS);
                    snprintf(kid, sizeof(kid), "k%d", next_kid);
                    made[next_kid] = now;
                    exists[next_kid++] = 1;
                    keys[n++] = key(kid, ROTATION_NEXT);
                }
            }
            if (a.up)
                sim_read(&a, keys, n, now, -1);
        } else if (now >= a_back) {
            sim_restart(&a);
            sim_read(&a, keys, n, now, POLL);
        }
        /* B goes down once as soon as A has a key B has served a set
         * without for 1.5 s, and comes back once that key has been
         * promoted. */
        if (b.up && !b_restarted) {
            for (size_t i = 0; i < n; i++) {
                int k = sim_number(keys[i].kid);
                if (keys[i].role == ROTATION_NEXT && !b.in_set[k] && now - made[k] >= 1500 && k > 2) {
                    b.up = 0;
                    b_back = k;
                }
            }
        }
        if (!b.up && !b_restarted && rotation_find(keys, n, ROTATION_SIGNING) >= 0 &&
            sim_number(keys[rotation_find(keys, n, ROTATION_SIGNING)].kid) == b_back) {
            sim_restart(&b);
            sim_read(&b, keys, n, now, POLL);
            b_restarted = 1;
        } else if (b.up && now - b.read_at >= POLL) {
            sim_read(&b, keys, n, now, -1);
        }
        for (int p = 0; p < 2; p++) {
            if (!procs[p]->up)
                continue;
            sim_serve(procs[p], exists, now);
            int k = sim_sign(procs[p], now, pol.ahead_ms);
            cr_assert(k >= 0 || p == 1, "A cannot sign at %lld", (long long)now);
            if (k < 0)
                continue;
            int s = rotation_find(procs[p]->view, procs[p]->nview, ROTATION_SIGNING);
            fallbacks += s >= 0 && sim_number(procs[p]->view[s].kid) != k;
            last_signed[k] = now;
            for (int q = 0; q < 2 && k > 0; q++)
                cr_assert(procs[q]->last_without[k] < 0 || now - procs[q]->last_without[k] >= pol.ahead_ms,
                          "at %lld %c signs with k%d, which %c served a set without at %lld", (long long)now, "AB"[p],
                          k, "AB"[q], (long long)procs[q] -> last_without[k]);
        }
    }
    cr_expect(a_restarted && b_restarted, "both restarts happened");
    cr_expect_gt(next_kid, 10, "several rotations ran");
    cr_expect_eq(fallbacks, 0,
                 "with every process reading the directory within the lag, none ever has to sign "
                 "with a retired key: the credit at a start and the rotating process's wait cover it");
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < next_kid; k++)
            if (procs[p]->dropped[k] >= 0 && last_signed[k] >= 0)
                cr_expect_geq(procs[p]->dropped[k] - last_signed[k], pol.keep_ms - POLL,
                              "%c dropped k%d %lld ms after its last signature", "AB"[p], k,
                              (long long)(procs[p]->dropped[k] - last_signed[k]));
}
