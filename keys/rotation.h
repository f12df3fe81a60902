/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rotation: when the keys of the signing key directory (keys/keydir.h)
 * change role, and which key a process signs with, as arithmetic on how
 * long each key has been published, signing and retired. It follows the
 * safe order of docs/compatibility.md §7:
 *
 *   next     generated once the signing key has signed for
 *            rotation-period minus publish-ahead, and published at once;
 *   signing  the next key, promoted once the signing key has signed for
 *            rotation-period and the next key has been published for
 *            publish-ahead (plus ROTATION_SLACK_MS, plus the longest any
 *            other process on the directory may take to publish it);
 *   retired  the former signing key, still published so that the tokens
 *            it signed verify, until it has been retired for its keep
 *            time (the longest token lifetime it signed under, plus the
 *            leeway verifiers allow, plus the longest another process on
 *            the directory may go on signing with it); then dropped.
 *
 * Ages, not dates. Each age is a sum of monotonic intervals during which
 * the process that rotates had the key in its published snapshot, and is
 * kept in the directory. A wall clock stepped forward can neither promote
 * nor drop a key early, and while no process runs no key ages: a restart
 * continues the schedule where it stopped, later rather than sooner. The
 * wall-clock dates kept beside the ages are for people only.
 *
 * Pure: no files, no clocks; unit-tested with made-up ages.
 */
#ifndef OIDC_ROTATION_H
#define OIDC_ROTATION_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "keys/key.h"

/* A snapshot the reload thread builds reaches every worker well within
 * this, so an age counted from the pass that built it is never more than
 * this ahead of what relying parties could see; every publication
 * requirement is this much longer. */
#define ROTATION_SLACK_MS 1000

enum rotation_role { ROTATION_NEXT, ROTATION_SIGNING, ROTATION_RETIRED };

/* One key of the directory. */
struct rotation_key {
    char kid[KEY_KID_LEN + 1];
    enum rotation_role role;
    /* Imported (--signing-key-import) or the first key of an empty
     * directory with nothing else published: published for as long as
     * anything was, so it signs without waiting publish-ahead. */
    int trusted;
    int64_t published_ms; /* published so far */
    int64_t signing_ms;   /* signing so far (also kept once retired) */
    int64_t retired_ms;   /* retired so far */
    int64_t keep_ms;      /* retired: published until retired_ms reaches it; grows, never shrinks */
    /* Wall-clock seconds, for `keys`, the log and the metrics; 0 = not yet. */
    time_t created, published_at, activated_at, retired_at;
};

/* The flags, in milliseconds. */
struct rotation_policy {
    int64_t period_ms; /* --rotation-period */
    int64_t ahead_ms;  /* --publish-ahead */
    /* --key-reload-interval: how late another process on the directory
     * may publish a new key, or learn of a promotion (it re-reads the
     * directory at least that often, at once with inotify). */
    int64_t lag_ms;
    int64_t keep_ms; /* --max-token-lifetime + --token-leeway + lag_ms */
};

enum rotation_action {
    ROTATION_NONE,
    ROTATION_GENERATE, /* make a new next key */
    ROTATION_PROMOTE,  /* the next key signs, the signing key retires */
    ROTATION_DROP,     /* forget a retired key whose keep time is over */
};

/* The index of the key of role in keys, or -1. A directory holds at most
 * one next and one signing key (keydir checks). */
int rotation_find(const struct rotation_key *keys, size_t n, enum rotation_role role);

/* The process that rotates held the snapshot `published` (published[i]
 * says whether keys[i] was in it) for elapsed_ms up to now: ages the keys
 * in it, records the wall-clock dates they were first published, and
 * raises each signing or retired key's keep time to the policy's. */
void rotation_tick(struct rotation_key *keys, size_t n, const int *published, int64_t elapsed_ms,
                   const struct rotation_policy *p, time_t now);

/* What the keys call for now: the first of dropping a retired key (its
 * index in *which), promoting the next key, generating one; or
 * ROTATION_NONE. The caller applies it and asks again. Without a signing
 * key (lost), a next key that has been published long enough is promoted
 * at once. */
enum rotation_action rotation_decide(const struct rotation_key *keys, size_t n, const struct rotation_policy *p,
                                     size_t *which);

/* Applies ROTATION_PROMOTE at now: the next key signs, the signing key
 * retires with the policy's keep time. */
void rotation_promote(struct rotation_key *keys, size_t n, const struct rotation_policy *p, time_t now);

/* Milliseconds until rotation_decide's answer can change if nothing but
 * time passes (ages growing at the rate of the clock), at least 1. */
int64_t rotation_due_in(const struct rotation_key *keys, size_t n, const struct rotation_policy *p);

/* Milliseconds until the next key can be promoted at the earliest, if
 * nothing but time passes: the signing key's period and the next key's
 * publication (a next key not generated yet is published publish-ahead
 * before the period ends); 0 when due. */
int64_t rotation_promote_in(const struct rotation_key *keys, size_t n, const struct rotation_policy *p);

/* Which key this process signs with: the signing key once the process has
 * published it for publish-ahead (plus the slack; the lag is the rotating
 * process's to wait), else the most recently retired key it has published
 * that long (the rotating process promoted
 * sooner than this one noticed the next key); -1 when none qualifies.
 * local_ms[i] is how long this process has published keys[i] (-1: not in
 * its snapshot). A trusted key qualifies whenever it is published, as
 * long as vouched[i] says the trust holds in this process's snapshot (the
 * caller's to judge: no relying party may hold a set without the key);
 * vouched NULL: it holds for every key. Sets *due_in_ms to the time until
 * the answer can change (-1: never). */
int rotation_choose(const struct rotation_key *keys, size_t n, const int64_t *local_ms, const int *vouched,
                    int64_t ahead_ms, int64_t *due_in_ms);

/* A retired key: when it leaves the published set at the earliest, read
 * at now by the wall clock (its keep time, or the policy's when longer,
 * less the time it has been retired); 0 for a key still in use. */
time_t rotation_until(const struct rotation_key *k, const struct rotation_policy *p, time_t now);

/* "next", "signing" or "retired". */
const char *rotation_role_name(enum rotation_role role);

#endif
