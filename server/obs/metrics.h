/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics: the counters behind /metrics, in Prometheus text format.
 *
 * Request counters live per worker thread and are written only by that
 * thread (a relaxed load and store, no locked instruction), so counting
 * costs the hot path almost nothing; /metrics sums the threads when scraped.
 * Process-wide gauges (key set, reloads, TLS) are written by the main
 * thread.
 */
#ifndef OIDC_METRICS_H
#define OIDC_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "jose/bound.h"
#include "jose/token.h"
#include "keys/upstream.h"

enum metrics_path {
    METRICS_PATH_DISCOVERY,
    METRICS_PATH_JWKS,
    METRICS_PATH_TOKENREVIEW,
    METRICS_PATH_OTHER,
    METRICS_NPATHS
};
enum metrics_method { METRICS_GET, METRICS_HEAD, METRICS_POST, METRICS_OTHER_METHOD, METRICS_NMETHODS };
enum metrics_status {
    METRICS_200,
    METRICS_201,
    METRICS_304,
    METRICS_400,
    METRICS_401,
    METRICS_403,
    METRICS_404,
    METRICS_405,
    METRICS_413,
    METRICS_415,
    METRICS_421,
    METRICS_431,
    METRICS_5XX,
    METRICS_OTHER_STATUS,
    METRICS_NSTATUSES
};
enum metrics_source {
    METRICS_SOURCE_KEYS,
    METRICS_SOURCE_TLS,
    METRICS_SOURCE_STATE,
    METRICS_SOURCE_TOKEN_REVIEW_TLS, /* the TokenReview listener's certificate and client CA */
    METRICS_NSOURCES
};
/* The kinds of listener, each with its own connection budget. */
enum metrics_listener {
    METRICS_LISTENER_PUBLIC,      /* --listen, --tls-listen: --max-connections */
    METRICS_LISTENER_TOKENREVIEW, /* --token-review-listen: --token-review-max-connections */
    METRICS_LISTENER_ADMIN,       /* --admin-listen: --admin-max-connections */
    METRICS_NLISTENERS
};

/* What became of a TokenReview request whose caller was checked: refused
 * (401, 403), or answered 201 with the reviewed token authenticated or
 * not. */
enum metrics_review_outcome {
    METRICS_REVIEW_UNAUTHENTICATED,
    METRICS_REVIEW_FORBIDDEN,
    METRICS_REVIEW_AUTHENTICATED,
    METRICS_REVIEW_NOT_AUTHENTICATED,
    METRICS_NREVIEW_OUTCOMES
};

#define METRICS_NBUCKETS 12
#define METRICS_NREASONS (TOKEN_ERR_CLAIMS + 1)

/* One worker thread's counters. */
struct metrics_thread {
    atomic_uint_fast64_t requests[METRICS_NPATHS][METRICS_NMETHODS][METRICS_NSTATUSES];
    atomic_uint_fast64_t response_bytes;
    atomic_uint_fast64_t latency_buckets[METRICS_NBUCKETS]; /* non-cumulative */
    atomic_uint_fast64_t latency_sum_us;
    atomic_uint_fast64_t reviews[METRICS_NREASONS]; /* by result: TOKEN_OK or the error */
    atomic_uint_fast64_t review_outcomes[METRICS_NREVIEW_OUTCOMES];
    atomic_uint_fast64_t cache_hits;
    atomic_uint_fast64_t cache_entries;
    atomic_uint_fast64_t signature_checks; /* of callers' and reviewed tokens */
    atomic_uint_fast64_t write_timeouts;   /* connections closed by --write-timeout */
    /* --token-review-check-bound-objects: reviews refused by reason, and
     * the objects the cache answered or had to ask for */
    atomic_uint_fast64_t bound_refused[BOUND_NREASONS];
    atomic_uint_fast64_t bound_cache_hits;
    atomic_uint_fast64_t bound_cache_misses;
};

/* Process-wide gauges and counters written by the main thread, and the
 * connection counts every worker updates (atomically). */
struct metrics_process {
    atomic_uint_fast64_t keyset_generation;
    atomic_uint_fast64_t keys_published;
    atomic_uint_fast64_t keys_retained;
    atomic_int_fast64_t last_reload_success; /* unix seconds, 0 = never */
    atomic_uint_fast64_t reload_failures[METRICS_NSOURCES];
    atomic_int_fast64_t signing_key_first_published;              /* unix seconds, 0 = unknown or unset */
    atomic_int_fast64_t tls_cert_not_after;                       /* unix seconds, 0 = no TLS */
    atomic_int_fast64_t token_review_cert_not_after;              /* the same for the TokenReview listener */
    atomic_uint_fast64_t connections[METRICS_NLISTENERS];         /* open client connections, all threads */
    atomic_uint_fast64_t connections_refused[METRICS_NLISTENERS]; /* closed at once over the budget */
    atomic_uint_fast64_t connections_evicted[METRICS_NLISTENERS]; /* silent ones closed to make room */
    atomic_uint_fast64_t silent_timeouts[METRICS_NLISTENERS];     /* silent for --handshake-timeout */
    atomic_uint_fast64_t accept_pauses;                           /* accept() out of descriptors or memory */
    atomic_uint_fast64_t access_log_dropped; /* lines not queued: the writer fell behind, or no memory */
    atomic_uint_fast64_t access_log_lost;    /* lines lost to write errors */

    /* A fleet (--issuers-dir), written by the reload thread: counts only,
     * no issuer label (the files of a directory are not bounded by the
     * configuration). */
    atomic_int fleet_enabled;
    atomic_uint_fast64_t fleet_issuers;       /* issuers served */
    atomic_uint_fast64_t fleet_files_refused; /* issuer files refused as they are now */
    atomic_uint_fast64_t fleet_refusals;      /* refusals logged since start */

    /* Mirroring an API server (--upstream), written by its thread. */
    atomic_int upstream_enabled;
    atomic_uint_fast64_t upstream_fetches[UPSTREAM_NRESULTS]; /* by result */
    atomic_int_fast64_t upstream_last_success;                /* unix seconds, 0 = never */
    atomic_int upstream_issuer_mismatch;                      /* it names another issuer */

    /* Looking up tokens' bound objects (server/reload/bound_lookup.c),
     * written by its threads. */
    atomic_int bound_enabled;
    atomic_int bound_api_reachable;                              /* the last answer came */
    atomic_uint_fast64_t bound_lookups[3];                       /* by enum bound_state */
    atomic_uint_fast64_t bound_lookup_latency[METRICS_NBUCKETS]; /* non-cumulative */
    atomic_uint_fast64_t bound_lookup_latency_sum_us;
};

/* The external signer (server/reload/signerdir.c writes the schedule,
 * the gRPC threads the calls, with atomic adds). */
enum metrics_sign_result {
    METRICS_SIGN_OK,
    METRICS_SIGN_BAD_CLAIMS,
    METRICS_SIGN_UNAVAILABLE,
    METRICS_SIGN_FAILED,
    METRICS_NSIGN_RESULTS
};
enum metrics_signer_call { METRICS_CALL_SIGN, METRICS_CALL_FETCH_KEYS, METRICS_CALL_METADATA, METRICS_NSIGNER_CALLS };
struct metrics_signer {
    atomic_int_fast64_t enabled;          /* --signing-key-dir given */
    atomic_int_fast64_t lock_held;        /* this process rotates the directory */
    atomic_int_fast64_t next_rotation;    /* unix seconds of the next promotion at the earliest, 0 = unknown */
    atomic_int_fast64_t signing_key_age;  /* seconds the directory's signing key has signed */
    atomic_int_fast64_t signing_fallback; /* 1 while this process signs with a retired key */
    atomic_uint_fast64_t keys[3];         /* by role: next, signing, retired (rotation.h) */
    atomic_uint_fast64_t signs[METRICS_NSIGN_RESULTS];
    atomic_uint_fast64_t calls[METRICS_NSIGNER_CALLS];
    atomic_int_fast64_t store_enabled;   /* --etcd-servers given (server/reload/signer_etcd.c) */
    atomic_int_fast64_t store_reachable; /* the last read of etcd succeeded */
    atomic_int_fast64_t store_last_read; /* unix seconds of the last successful read, 0 = never */
};

extern struct metrics_process metrics_process;
extern struct metrics_signer metrics_signer;

/* A zeroed counter block for a new worker thread, registered for /metrics.
 * NULL when the registry is full. Blocks live as long as the process. */
struct metrics_thread *metrics_thread_new(void);

/* Single-writer increment: only the owning thread calls it. */
static inline void metrics_add(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

/* The latency bucket of a duration (the bounds of
 * oidc_http_request_duration_seconds). */
size_t metrics_bucket_of(uint64_t duration_us);

/* Records one finished request. */
void metrics_request(struct metrics_thread *m, enum metrics_path path, const char *method, size_t method_len,
                     int status, uint64_t bytes, uint64_t duration_us);

/* The commit and build date oidc_build_info carries beside the version
 * (static strings; "unknown" until set). Call before the server starts. */
void metrics_set_build(const char *commit, const char *date);

/* Renders every metric. Returns a malloc'ed body, or NULL. */
char *metrics_render(size_t *len);

/* ---- for the status page (status.h) ---- */

/* One counter as the status page shows it: a name for people. A figure
 * that is not a count (a ratio) is in text, shown instead of value. */
struct metrics_summary_row {
    char name[96];
    unsigned long long value;
    char text[24];
};
#define METRICS_SUMMARY_MAX 32

/* Fills rows with the counters summed over the threads (requests by path,
 * 304s, bytes, reviews, connections and refusals by listener, reload
 * failures by source, the bound-object cache's hits, misses and hit ratio
 * since start when that check is on, ...); returns how many. */
size_t metrics_summary(struct metrics_summary_row rows[METRICS_SUMMARY_MAX]);

/* What metrics_set_build was given. */
void metrics_get_build(const char **commit, const char **date);

#endif
