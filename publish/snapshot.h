/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot: everything a request handler needs, rendered once when a key set
 * is loaded and never modified afterwards — the two response bodies, their
 * strong ETags, Last-Modified, the header values, and the keys prepared for
 * verifying tokens. Handlers only read it,
 * so serving a request never parses, allocates or locks.
 *
 * Lifetime is reference counted: the publisher holds one reference and each
 * event-loop thread holds one while it serves from it.
 */
#ifndef OIDC_SNAPSHOT_H
#define OIDC_SNAPSHOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <time.h>
#include "keys/keyset.h"
#include "publish/render.h"

/* One published document with its header values. */
struct snapshot_doc {
    struct render_doc body;
    char etag[48]; /* "\"<base64url of 18 bytes of SHA-256>\"" */
    size_t etag_len;
    const char *content_type; /* points into the snapshot's params copy */
    size_t content_type_len;
};

struct snapshot_params {
    const char *issuer;
    const char *jwks_uri;
    const char *jwks_content_type;
    unsigned long max_age;
    /* No keys prepared for verifying tokens (the verifier stays NULL):
     * nothing will verify with them (no TokenReview API), and preparing
     * them costs OpenSSL a context and a copy of each key, which a fleet
     * of thousands of issuers would pay in start-up time and memory. */
    int without_verifier;
};

struct verifier; /* jose/verifier.h */
struct routes;   /* publish/routes.h */

struct snapshot {
    struct keyset *keyset;
    struct verifier *verifier; /* keyset prepared for verifying tokens (TokenReview), or NULL (without_verifier) */
    struct snapshot_doc discovery;
    struct snapshot_doc jwks;
    char cache_control[48]; /* "public, max-age=N" */
    size_t cache_control_len;
    char last_modified[32]; /* IMF-fixdate of loaded_at */
    size_t last_modified_len;
    time_t loaded_at;
    char *jwks_content_type; /* owned copy */
    atomic_uint refs;

    /* Nothing to publish yet (an --upstream not read yet): the documents
     * answer 503 with this Retry-After, and the key set is empty. */
    int unavailable;
    char retry_after[24];
    size_t retry_after_len;

    /* A fleet's (--issuers-dir): the table that routes each request to
     * its issuer's snapshot (routes.h); the documents above are empty
     * then. NULL for one issuer. */
    struct routes *routes;
};

/* Renders both documents for ks. Takes ownership of ks (freed on failure).
 * The returned snapshot holds one reference. Returns NULL on out of memory. */
struct snapshot *snapshot_build(const struct snapshot_params *params, struct keyset *ks, time_t loaded_at);

/* A snapshot that has nothing to publish yet: handlers answer 503 with
 * Retry-After: retry_after (seconds). NULL on out of memory. */
struct snapshot *snapshot_unavailable(const struct snapshot_params *params, unsigned long retry_after,
                                      time_t loaded_at);

/* 1 when both snapshots would put the same bytes on the wire (bodies and
 * header values other than Last-Modified). */
int snapshot_same_bytes(const struct snapshot *a, const struct snapshot *b);

struct snapshot *snapshot_ref(struct snapshot *s);
void snapshot_release(struct snapshot *s);

#endif
