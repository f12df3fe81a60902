/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verifier: a key set made ready for verifying tokens. Each key's digest,
 * verify-initialised context and ECDSA group order are prepared once
 * (jws_key_prepare), off the request path: with each published snapshot,
 * or once by the verify command. Read-only afterwards, so the threads that
 * share a snapshot verify with it concurrently.
 *
 * The key set itself (keys/) knows nothing of verification.
 */
#ifndef OIDC_VERIFIER_H
#define OIDC_VERIFIER_H

#include <stddef.h>

#include "jose/jws.h"
#include "keys/keyset.h"

struct verifier {
    const struct keyset *keys; /* not owned: it must outlive the verifier */
    struct jws_key *prepared;  /* one per key, in the set's order */
};

/* Prepares every key of ks. NULL when out of memory. */
struct verifier *verifier_new(const struct keyset *ks);

/* The prepared key whose kid is kid, or NULL. */
const struct jws_key *verifier_find(const struct verifier *v, const char *kid);

void verifier_free(struct verifier *v);

#endif
