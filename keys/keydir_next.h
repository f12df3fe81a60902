/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keydir_next: one reload pass's rotation of the signing key directory,
 * decided and written in one call: given the directory (keys/keydir.h),
 * how long the process that rotates published each key since the last
 * call, and the clock, the next state. It ages the keys
 * (keys/rotation.h's rotation_tick), then takes each step rotation_decide
 * calls for (drop a retired key, promote the next key, generate one),
 * writing rotation.json after each, in keydir.h's order of files.
 *
 * It logs nothing: it returns the steps it took and the one that failed,
 * and the caller (server/reload/signerdir.c, which holds the lock) says
 * so and applies the result.
 */
#ifndef OIDC_KEYDIR_NEXT_H
#define OIDC_KEYDIR_NEXT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "keys/keydir.h"
#include "keys/rotation.h"

/* At most this many steps in one call (each is followed by a fresh
 * decision; a handful is ever needed). */
#define KEYDIR_NEXT_MAX_STEPS 8

/* One step taken. */
struct keydir_step {
    enum rotation_action action; /* ROTATION_DROP, ROTATION_PROMOTE or ROTATION_GENERATE */
    char kid[KEY_KID_LEN + 1];   /* the key dropped, promoted or generated */
    /* ROTATION_DROP of the next key, whose key file does not load: it
     * never signed, so it is discarded (and another made). */
    int discarded;
    /* ROTATION_PROMOTE: the key retired ("" when there was no signing
     * key), the seconds the promoted key had been published, and when
     * the retired key leaves the published set at the earliest (wall). */
    char retired[KEY_KID_LEN + 1];
    int64_t published_s;
    time_t retired_until;
    char type[16];      /* ROTATION_GENERATE: the key's type */
    char warning[1024]; /* ROTATION_DROP: its file could not be removed, else "" */
};

/* What a call did. */
struct keydir_next {
    struct keydir_step steps[KEYDIR_NEXT_MAX_STEPS];
    size_t nsteps;
    /* The step that failed, ROTATION_NONE when none did: err says why.
     * save_failed: it was writing rotation.json, so the caller must not
     * act on its state alone (it gives up the lock and reads the
     * directory again). */
    enum rotation_action failed;
    int save_failed;
    char err[1024];
    /* Milliseconds until a call may decide something else if nothing but
     * time passes (rotation_due_in), when nothing failed. */
    int64_t due_in_ms;
};

/* The next state of the directory dir, whose keys kd holds: ages kd's
 * keys by elapsed_ms (published[i]: keys[i] was in the published snapshot
 * all that time; NULL: no key is aged) under policy p at now, then takes
 * the steps the keys call for, generating keys of key_type, until none is
 * called for, one fails or KEYDIR_NEXT_MAX_STEPS. kd is updated in place
 * and saved after each step. Returns 0, or -1 when a step failed (out
 * says which). */
int keydir_next(const char *dir, struct keydir *kd, const struct rotation_policy *p, const int *published,
                int64_t elapsed_ms, const char *key_type, time_t now, struct keydir_next *out);

#endif
