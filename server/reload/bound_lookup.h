/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bound_lookup: the objects a token is bound to (jose/bound.h), looked up
 * at the --upstream API server for --token-review-check-bound-objects, on
 * a few threads of its own so that no event loop ever waits on the API
 * server: a review whose objects are not in the cache leaves its loop free
 * and is resumed, by its done callback, when they are.
 *
 * One cache for the process, per object (kind, namespace, name): an answer
 * (found or missing) stands for the TTL (--token-review-bound-object-cache-
 * ttl), a failure for BOUND_LOOKUP_RETRY_MS at most, so that a dead API
 * server is not asked once per review but is asked again soon. While an
 * object is being asked for, every review that needs it waits on that one
 * request (single flight). The cache holds at most max_entries objects;
 * beyond, the longest unrefreshed go.
 *
 * The API server's reachability, for /readyz, is that of the last answer;
 * while it is unreachable, a lookup thread asks again for the object that
 * failed every BOUND_LOOKUP_RETRY_MS, so that readiness comes back without
 * a review (a load balancer sends none to an unready replica).
 *
 * Thread-safety: every function may be called from any thread. A mutex
 * guards the cache; it is held for a hash lookup and copies, never across
 * a request to the API server.
 */
#ifndef OIDC_BOUND_LOOKUP_H
#define OIDC_BOUND_LOOKUP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "jose/bound.h"

#define BOUND_LOOKUP_RETRY_MS    1000
#define BOUND_LOOKUP_THREADS     4
#define BOUND_LOOKUP_MAX_ENTRIES 100000

struct bound_wait;

/* Where a waiting review is attached to an object being looked up. */
struct bound_wait_slot {
    struct bound_wait *wait;
    size_t index; /* into wait->out */
    struct bound_wait_slot *next;
};

/* A review waiting for its objects: the caller's, alive until done has
 * been called. out[i] answers refs[i] of bound_lookup_get. */
struct bound_wait {
    atomic_size_t pending;
    /* Called once, on a lookup thread, when out[] is complete: it must
     * only hand the wait over to the review's own thread (and not call
     * into this module). */
    void (*done)(struct bound_wait *w);
    struct bound_wait_slot slots[BOUND_MAX_OBJECTS];
    struct bound_object out[BOUND_MAX_OBJECTS];
};

/* Asks the API server about r: fills out (bound_object_read's answer, or
 * a failure). Called on a lookup thread, without the cache's lock. */
typedef void (*bound_fetch_fn)(void *ctx, const struct bound_ref *r, struct bound_object *out);

struct bound_lookup_params {
    int64_t ttl_ms;       /* how long an answer stands */
    int64_t retry_ms;     /* how long a failure stands, and the probe's period; 0: BOUND_LOOKUP_RETRY_MS */
    size_t threads;       /* 0: BOUND_LOOKUP_THREADS */
    size_t max_entries;   /* 0: BOUND_LOOKUP_MAX_ENTRIES */
    bound_fetch_fn fetch; /* NULL: GET the object's path under cfg's --upstream, with its CA and token */
    void *fetch_ctx;
    const struct config *cfg; /* for the default fetch */
};

struct bound_lookup;

/* Starts the threads. NULL (logged) when out of memory or threads. */
struct bound_lookup *bound_lookup_start(const struct bound_lookup_params *p);

/* Stops the threads (a request under way is cancelled); the reviews that
 * still wait are answered (refused: shutting down), and later ones are
 * refused at once. Call it while the reviews' event loops still run (they
 * are handed the answers), then stop the loops, then bound_lookup_free. */
void bound_lookup_stop(struct bound_lookup *l);

/* Stops l if it runs, and frees it: nothing may use it any more. */
void bound_lookup_free(struct bound_lookup *l);

/* The objects refs[0..n-1] as of now_ms (util/clock.h), into w->out; sets
 * *hits to how many the cache answered. Returns 1 when all were known
 * (done is not called), or 0 when w waits for the others: done(w) is
 * called once they are answered. With w NULL, returns 0 at the first
 * object the cache cannot answer without asking for anything (the caller
 * then allocates a wait and calls again). out must hold n objects; with w
 * NULL, out is filled instead of w->out. */
int bound_lookup_get(struct bound_lookup *l, const struct bound_ref *refs, size_t n, int64_t now_ms,
                     struct bound_wait *w, struct bound_object *out, unsigned *hits);

/* The process's lookup (set by bound_lookup_start, cleared by
 * bound_lookup_free), for the handlers; NULL when the check is off. */
struct bound_lookup *bound_lookup_current(void);

/* For /readyz: 1 when the check is off or the API server answered last;
 * else 0 with the reason in why. */
int bound_lookup_ready(char *why, size_t len);

#endif
