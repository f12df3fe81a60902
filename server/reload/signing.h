/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signing: watches the key the API server signs with (--signing-key-file)
 * against the published set. Its tokens verify at a relying party only once
 * that party's cached JWKS holds its public key, which can take --max-age
 * after the key was first published: a rotation that starts signing sooner
 * breaks logins (docs/rotation-runbook.md). The watch says so in the log,
 * once per change of state, and exports when the key was first published
 * (metrics).
 */
#ifndef OIDC_SIGNING_H
#define OIDC_SIGNING_H

#include <time.h>

#include "keys/history.h"
#include "keys/keyset.h"

enum signing_state {
    SIGNING_UNKNOWN,     /* not checked yet, or no --signing-key-file */
    SIGNING_UNREADABLE,  /* the file holds no usable key */
    SIGNING_UNPUBLISHED, /* its key is not in the published set */
    SIGNING_YOUNG,       /* published for less than --max-age */
    SIGNING_MATURE,      /* published for at least --max-age */
};

struct signing {
    const char *file;      /* --signing-key-file, or NULL: nothing to watch */
    unsigned long max_age; /* --max-age */
    enum signing_state state;
    char kid[KEY_KID_MAX + 1]; /* of the key last read */
    time_t mature_at;          /* while young: the wall-clock second it matures, else 0 */
};

void signing_init(struct signing *s, const char *file, unsigned long max_age);

/* Reads the signing key file and checks its key at now against published
 * (the set being served) and h (when each key was first seen). Logs a
 * change of state, updates the metric, and returns the state. */
enum signing_state signing_check(struct signing *s, const struct keyset *published, const struct history *h,
                                 time_t now);

#endif
