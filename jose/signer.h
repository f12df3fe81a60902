/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signer: what kube-apiserver's external signer calls answer
 * (ExternalJWTSigner, docs/compatibility.md §9), prepared once per change
 * of the keys and never modified after:
 *
 *   Sign       the private key this process signs with now and the
 *              base64url header of its tokens, {"alg","kid","typ":"JWT"};
 *   FetchKeys  every published key (the snapshot's: what kube-apiserver
 *              trusts is what the JWKS shows) as DER, and when the set
 *              last changed;
 *   Metadata   the longest token lifetime (--max-token-lifetime).
 *
 * A state is immutable and reference counted, like a snapshot: the gRPC
 * threads sign with the state they took while the reload thread builds the
 * next one, and a slot hands states over under a lock held for a pointer
 * copy. It also carries each signing-directory key's role and dates, for
 * whoever shows them (read-only).
 */
#ifndef OIDC_SIGNER_H
#define OIDC_SIGNER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <openssl/evp.h>

#include "jose/jws.h"
#include "keys/keyset.h"
#include "keys/rotation.h"

/* FetchKeys is asked again at least this often (refresh_hint_seconds),
 * sooner when the keys are due to change. */
#define SIGNER_REFRESH_MAX 60

/* A published key as FetchKeys returns it. */
struct signer_pub {
    char *kid;
    unsigned char *der; /* SubjectPublicKeyInfo */
    size_t der_len;
};

/* A key of the signing key directory, for people and status pages. */
struct signer_role {
    char kid[KEY_KID_LEN + 1];
    enum rotation_role role;
    time_t created, published_at, activated_at, retired_at;
    time_t until; /* retired: when it leaves the published set at the earliest, by this clock; else 0 */
};

struct signer_state {
    /* Sign */
    struct jws_signer key; /* key.priv NULL: this process may sign with no key now; why in unavailable */
    char kid[KEY_KID_MAX + 1];
    char *header; /* base64url of the header JSON, NUL-terminated */
    size_t header_len;
    char unavailable[256];
    /* FetchKeys */
    struct signer_pub *keys;
    size_t nkeys;
    time_t keys_changed; /* data_timestamp */
    time_t next_change;  /* when the keys are due to change next (wall clock), or 0 */
    /* Metadata */
    int64_t max_token_expiration;
    /* The directory's keys, for `keys` and status pages. */
    struct signer_role *roles;
    size_t nroles;
    atomic_uint refs;
    struct signer_state *retired_next; /* the slot's list of states it replaced */
};

/* What a state is built from; nothing is taken over. */
struct signer_params {
    const struct keyset *published; /* the snapshot's keys */
    time_t keys_changed;
    EVP_PKEY *priv;          /* the key to sign with (a reference is taken), or NULL */
    const char *kid;         /* its kid */
    const char *unavailable; /* without priv: why, for the caller of Sign */
    time_t next_change;
    int64_t max_token_expiration;
    const struct signer_role *roles;
    size_t nroles;
};

/* A new state holding one reference; NULL with the reason in err (out of
 * memory, a key type that cannot sign a token). */
struct signer_state *signer_state_new(const struct signer_params *p, char *err, size_t errlen);
struct signer_state *signer_state_ref(struct signer_state *s);
void signer_state_release(struct signer_state *s);

/* 1 when a and b answer every call alike (the same key signs, the same
 * keys are fetched, the same lifetime), so that a pass that changed
 * nothing need not hand a new state over. */
int signer_state_same(const struct signer_state *a, const struct signer_state *b);

enum signer_result {
    SIGNER_OK,
    SIGNER_BAD_CLAIMS,  /* empty, too long, or not base64url */
    SIGNER_UNAVAILABLE, /* no key may sign now (s->unavailable) */
    SIGNER_FAILED,      /* the signature could not be made (out of memory, OpenSSL) */
};

/* Signs s->header "." claims (len bytes, at most max_len) with s's key:
 * *signature is the base64url signature, malloc'ed and NUL-terminated.
 * claims must be base64url without padding, as kube-apiserver sends it:
 * anything else would change what the token says. */
enum signer_result signer_sign(const struct signer_state *s, const char *claims, size_t len, size_t max_len,
                               char **signature);

/* refresh_hint_seconds at now: until the next change, at most
 * SIGNER_REFRESH_MAX, at least 1. */
int64_t signer_refresh_hint(const struct signer_state *s, time_t now);

/* Where the reload thread leaves the current state for the gRPC threads.
 * A state the slot replaces is kept (retired) until no call holds it, and
 * freed by the thread that sets or sweeps the slot, never by a gRPC
 * thread: freeing memory another thread allocated takes that thread's
 * malloc arena lock, so a Sign dropping the last reference would wait for
 * whatever the reload thread allocates at that moment (measured: the
 * signer thread's only futex waits under load were these frees). */
struct signer_slot {
    pthread_mutex_t mu;
    struct signer_state *current; /* NULL until the first state */
    pthread_mutex_t retired_mu;   /* the setters'; a gRPC thread never takes it */
    struct signer_state *retired; /* replaced, perhaps still held by a call */
};

void signer_slot_init(struct signer_slot *slot);

/* Replaces the current state with s (a reference is taken), then sweeps. */
void signer_slot_set(struct signer_slot *slot, struct signer_state *s);

/* Frees the retired states no call holds any more. */
void signer_slot_sweep(struct signer_slot *slot);

/* The current state with a reference for the caller, or NULL. */
struct signer_state *signer_slot_get(struct signer_slot *slot);

void signer_slot_destroy(struct signer_slot *slot);

#endif
