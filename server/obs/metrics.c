/* SPDX-License-Identifier: Apache-2.0 */
#include "server/obs/metrics.h"
#include "util/paths.h"
#include "push/status.h"
#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define METRICS_MAX_THREADS 1024

struct metrics_process metrics_process;
struct metrics_signer metrics_signer;

static const char *metrics_build_commit = "unknown", *metrics_build_date = "unknown";

static struct metrics_thread *metrics_threads[METRICS_MAX_THREADS];
static atomic_size_t metrics_nthreads;

static const char *const metrics_path_names[METRICS_NPATHS] = {PATHS_DISCOVERY, PATHS_JWKS, "tokenreviews", "other"};
static const char *const metrics_method_names[METRICS_NMETHODS] = {"GET", "HEAD", "POST", "other"};
static const char *const metrics_status_names[METRICS_NSTATUSES] = {"200", "201", "304", "400", "401", "403", "404",
                                                                    "405", "413", "415", "421", "431", "5xx", "other"};
static const char *const metrics_source_names[METRICS_NSOURCES] = {"keys", "tls", "state", "token_review_tls"};
static const char *const metrics_review_outcome_names[METRICS_NREVIEW_OUTCOMES] = {
    "unauthenticated", "forbidden", "authenticated", "not_authenticated"};
static const char *const metrics_listener_names[METRICS_NLISTENERS] = {"public", "tokenreview", "admin"};
/* Latency bucket upper bounds in microseconds; the last is +Inf. */
static const uint64_t metrics_bounds_us[METRICS_NBUCKETS - 1] = {50,    100,   250,    500,     1000,   2500,
                                                                 10000, 50000, 250000, 1000000, 5000000};

void metrics_set_build(const char *commit, const char *date)
{
    metrics_build_commit = commit;
    metrics_build_date = date;
}

struct metrics_thread *metrics_thread_new(void)
{
    size_t i = atomic_fetch_add(&metrics_nthreads, 1);
    struct metrics_thread *m;

    if (i >= METRICS_MAX_THREADS || (m = calloc(1, sizeof(*m))) == NULL)
        return NULL;
    metrics_threads[i] = m;
    return m;
}

static enum metrics_status metrics_status_of(int status)
{
    static const int known[] = {200, 201, 304, 400, 401, 403, 404, 405, 413, 415, 421, 431};

    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (status == known[i])
            return (enum metrics_status)i;
    return status >= 500 && status < 600 ? METRICS_5XX : METRICS_OTHER_STATUS;
}

static enum metrics_method metrics_method_of(const char *m, size_t len)
{
    for (int i = 0; i < METRICS_OTHER_METHOD; i++)
        if (strlen(metrics_method_names[i]) == len && memcmp(metrics_method_names[i], m, len) == 0)
            return (enum metrics_method)i;
    return METRICS_OTHER_METHOD;
}

size_t metrics_bucket_of(uint64_t duration_us)
{
    size_t b = 0;

    while (b < METRICS_NBUCKETS - 1 && duration_us > metrics_bounds_us[b])
        b++;
    return b;
}

void metrics_request(struct metrics_thread *m, enum metrics_path path, const char *method, size_t method_len,
                     int status, uint64_t bytes, uint64_t duration_us)
{
    if (m == NULL)
        return;
    metrics_add(&m->requests[path][metrics_method_of(method, method_len)][metrics_status_of(status)], 1);
    metrics_add(&m->response_bytes, bytes);
    metrics_add(&m->latency_buckets[metrics_bucket_of(duration_us)], 1);
    metrics_add(&m->latency_sum_us, duration_us);
}

static uint64_t metrics_load(const atomic_uint_fast64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* Sums one counter over every registered thread. */
#define METRICS_SUM(field)                                                                                             \
    ({                                                                                                                 \
        uint64_t sum_ = 0;                                                                                             \
        for (size_t t_ = 0; t_ < n; t_++)                                                                              \
            if (metrics_threads[t_] != NULL)                                                                           \
                sum_ += metrics_load(&metrics_threads[t_]->field);                                                     \
        sum_;                                                                                                          \
    })

static void metrics_render_requests(struct strbuf *b, size_t n)
{
    strbuf_printf(b, "# HELP oidc_http_requests_total HTTP requests by path, method and status.\n"
                     "# TYPE oidc_http_requests_total counter\n");
    for (int p = 0; p < METRICS_NPATHS; p++)
        for (int m = 0; m < METRICS_NMETHODS; m++)
            for (int s = 0; s < METRICS_NSTATUSES; s++) {
                uint64_t v = METRICS_SUM(requests[p][m][s]);
                if (v > 0)
                    strbuf_printf(b, "oidc_http_requests_total{path=\"%s\",method=\"%s\",status=\"%s\"} %llu\n",
                                  metrics_path_names[p], metrics_method_names[m], metrics_status_names[s],
                                  (unsigned long long)v);
            }
    strbuf_printf(b, "# HELP oidc_http_not_modified_total 304 Not Modified answers.\n"
                     "# TYPE oidc_http_not_modified_total counter\n");
    uint64_t not_modified = 0;
    for (int p = 0; p < METRICS_NPATHS; p++)
        for (int m = 0; m < METRICS_NMETHODS; m++)
            not_modified += METRICS_SUM(requests[p][m][METRICS_304]);
    strbuf_printf(b, "oidc_http_not_modified_total %llu\n", (unsigned long long)not_modified);
    strbuf_printf(b,
                  "# HELP oidc_http_response_bytes_total Response body bytes sent.\n"
                  "# TYPE oidc_http_response_bytes_total counter\n"
                  "oidc_http_response_bytes_total %llu\n",
                  (unsigned long long)METRICS_SUM(response_bytes));
}

/* A histogram of METRICS_NBUCKETS buckets of metrics_bounds_us: counts
 * are the per-bucket (not cumulative) counts, sum_us the sum of the
 * observations in microseconds. One renderer for every histogram, so that
 * their bucket bounds and +Inf line cannot drift apart. */
static void metrics_histogram(struct strbuf *b, const char *name, const char *help, const uint64_t *counts,
                              uint64_t sum_us)
{
    uint64_t cumulative = 0;

    strbuf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int i = 0; i < METRICS_NBUCKETS; i++) {
        cumulative += counts[i];
        if (i < METRICS_NBUCKETS - 1)
            strbuf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, (double)metrics_bounds_us[i] / 1e6,
                          (unsigned long long)cumulative);
        else
            strbuf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cumulative);
    }
    strbuf_printf(b, "%s_sum %.6f\n%s_count %llu\n", name, (double)sum_us / 1e6, name, (unsigned long long)cumulative);
}

static void metrics_render_latency(struct strbuf *b, size_t n)
{
    uint64_t counts[METRICS_NBUCKETS];

    for (int i = 0; i < METRICS_NBUCKETS; i++)
        counts[i] = METRICS_SUM(latency_buckets[i]);
    metrics_histogram(b, "oidc_http_request_duration_seconds", "Time from request arrival to the last byte.", counts,
                      METRICS_SUM(latency_sum_us));
}

static void metrics_render_reviews(struct strbuf *b, size_t n)
{
    strbuf_printf(b, "# HELP oidc_token_reviews_total Token reviews by result and reason.\n"
                     "# TYPE oidc_token_reviews_total counter\n");
    for (int r = 0; r < METRICS_NREASONS; r++) {
        uint64_t v = METRICS_SUM(reviews[r]);
        if (v > 0 || r == TOKEN_OK)
            strbuf_printf(b, "oidc_token_reviews_total{authenticated=\"%s\",reason=\"%s\"} %llu\n",
                          r == TOKEN_OK ? "true" : "false", r == TOKEN_OK ? "" : token_error_name((enum token_error)r),
                          (unsigned long long)v);
    }
    strbuf_printf(b, "# HELP oidc_token_review_requests_total TokenReview requests by outcome: the caller "
                     "unauthenticated (401) or forbidden (403), or the reviewed token authenticated or not (201).\n"
                     "# TYPE oidc_token_review_requests_total counter\n");
    for (int o = 0; o < METRICS_NREVIEW_OUTCOMES; o++)
        strbuf_printf(b, "oidc_token_review_requests_total{outcome=\"%s\"} %llu\n", metrics_review_outcome_names[o],
                      (unsigned long long)METRICS_SUM(review_outcomes[o]));
    strbuf_printf(b,
                  "# HELP oidc_verification_cache_hits_total Token verifications (reviews and TokenReview callers) "
                  "answered from the cache.\n"
                  "# TYPE oidc_verification_cache_hits_total counter\n"
                  "oidc_verification_cache_hits_total %llu\n"
                  "# HELP oidc_verification_cache_entries Verified tokens cached, all threads.\n"
                  "# TYPE oidc_verification_cache_entries gauge\n"
                  "oidc_verification_cache_entries %llu\n"
                  "# HELP oidc_token_signature_checks_total Signature verifications made for TokenReview "
                  "callers' tokens and reviewed tokens (one per token with a kid).\n"
                  "# TYPE oidc_token_signature_checks_total counter\n"
                  "oidc_token_signature_checks_total %llu\n",
                  (unsigned long long)METRICS_SUM(cache_hits), (unsigned long long)METRICS_SUM(cache_entries),
                  (unsigned long long)METRICS_SUM(signature_checks));
}

static void metrics_gauge(struct strbuf *b, const char *name, const char *help, long long v)
{
    strbuf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name, v);
}

static const char *const metrics_bound_states[3] = {"found", "missing", "failed"};

/* --token-review-check-bound-objects: refusals by reason, the cache's
 * hits and misses (their ratio is the hit ratio), the lookups by outcome
 * and their latency, and the API server's reachability. */
static void metrics_render_bound(struct strbuf *b, size_t n)
{
    const struct metrics_process *p = &metrics_process;
    uint64_t lookup_counts[METRICS_NBUCKETS];

    if (!atomic_load(&p->bound_enabled))
        return;
    strbuf_printf(b, "# HELP oidc_token_review_bound_refused_total Reviews refused because an object the token is "
                     "bound to is gone, has another uid, or could not be looked up, by reason.\n"
                     "# TYPE oidc_token_review_bound_refused_total counter\n");
    for (int r = BOUND_OK + 1; r < BOUND_NREASONS; r++)
        strbuf_printf(b, "oidc_token_review_bound_refused_total{reason=\"%s\"} %llu\n",
                      bound_reason_name((enum bound_reason)r), (unsigned long long)METRICS_SUM(bound_refused[r]));
    strbuf_printf(b,
                  "# HELP oidc_token_review_bound_cache_hits_total Bound objects a review found in the cache.\n"
                  "# TYPE oidc_token_review_bound_cache_hits_total counter\n"
                  "oidc_token_review_bound_cache_hits_total %llu\n"
                  "# HELP oidc_token_review_bound_cache_misses_total Bound objects a review had to wait for.\n"
                  "# TYPE oidc_token_review_bound_cache_misses_total counter\n"
                  "oidc_token_review_bound_cache_misses_total %llu\n",
                  (unsigned long long)METRICS_SUM(bound_cache_hits),
                  (unsigned long long)METRICS_SUM(bound_cache_misses));
    strbuf_printf(b, "# HELP oidc_token_review_bound_lookups_total Requests to the API server for bound objects, by "
                     "result.\n# TYPE oidc_token_review_bound_lookups_total counter\n");
    for (int r = 0; r < 3; r++)
        strbuf_printf(b, "oidc_token_review_bound_lookups_total{result=\"%s\"} %llu\n", metrics_bound_states[r],
                      (unsigned long long)atomic_load(&p->bound_lookups[r]));
    for (int i = 0; i < METRICS_NBUCKETS; i++)
        lookup_counts[i] = atomic_load(&p->bound_lookup_latency[i]);
    metrics_histogram(b, "oidc_token_review_bound_lookup_duration_seconds",
                      "Time of one request to the API server for a bound object.", lookup_counts,
                      atomic_load(&p->bound_lookup_latency_sum_us));
    metrics_gauge(b, "oidc_token_review_bound_api_reachable",
                  "1 while the API server answers the bound-object lookups (its last answer came).",
                  (long long)atomic_load(&p->bound_api_reachable));
}

/* A counter of one value. */
static void metrics_counter(struct strbuf *b, const char *name, const char *help, unsigned long long v)
{
    strbuf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, v);
}

/* A gauge or counter with a value per listener (label listener). */
static void metrics_per_listener(struct strbuf *b, const char *name, const char *type, const char *help,
                                 const atomic_uint_fast64_t *values)
{
    strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    for (int l = 0; l < METRICS_NLISTENERS; l++)
        strbuf_printf(b, "%s{listener=\"%s\"} %llu\n", name, metrics_listener_names[l],
                      (unsigned long long)atomic_load(&values[l]));
}

/* Connections by listener, and those the server closed on its own. */
static void metrics_render_connections(struct strbuf *b, size_t n)
{
    struct metrics_process *p = &metrics_process;

    metrics_per_listener(b, "oidc_open_connections", "gauge", "Open client connections by listener.", p->connections);
    metrics_per_listener(b, "oidc_connections_refused_total", "counter",
                         "Connections closed at once because their listener was at its budget (--max-connections, "
                         "--token-review-max-connections, --admin-max-connections).",
                         p->connections_refused);
    metrics_per_listener(b, "oidc_connections_evicted_total", "counter",
                         "Connections that had sent nothing (over TLS: not finished their handshake), or on the admin "
                         "listener were between requests, closed to make room for a new one at their listener's "
                         "budget or their address's share of it (--connection-share-per-address).",
                         p->connections_evicted);
    metrics_per_listener(b, "oidc_handshake_timeouts_total", "counter",
                         "Connections closed because they sent nothing (over TLS: did not finish their handshake) "
                         "within --handshake-timeout.",
                         p->silent_timeouts);
    metrics_counter(b, "oidc_accept_pauses_total",
                    "Times a worker stopped accepting for 100 ms because accept() ran out of file descriptors or "
                    "memory.",
                    (unsigned long long)p->accept_pauses);
    metrics_counter(b, "oidc_access_log_dropped_lines_total",
                    "Access log lines not written because the writer fell behind (or memory ran out).",
                    (unsigned long long)p->access_log_dropped);
    metrics_counter(b, "oidc_access_log_lost_lines_total", "Access log lines lost to write errors.",
                    (unsigned long long)p->access_log_lost);
    metrics_counter(b, "oidc_write_timeouts_total",
                    "Connections closed because the client took none of a pending response for --write-timeout.",
                    (unsigned long long)METRICS_SUM(write_timeouts));
}

static void metrics_render_process(struct strbuf *b)
{
    struct metrics_process *p = &metrics_process;
    long long first = (long long)atomic_load(&p->signing_key_first_published);

    metrics_gauge(b, "oidc_keyset_generation", "Key sets published since start.", (long long)p->keyset_generation);
    metrics_gauge(b, "oidc_keys_published", "Keys in the published JWKS.", (long long)p->keys_published);
    metrics_gauge(b, "oidc_keys_retained", "Published keys kept by --key-retention.", (long long)p->keys_retained);
    metrics_gauge(b, "oidc_last_reload_success_timestamp_seconds", "When the keys were last loaded successfully.",
                  (long long)p->last_reload_success);
    strbuf_printf(b, "# HELP oidc_reload_failures_total Failed reloads by source.\n"
                     "# TYPE oidc_reload_failures_total counter\n");
    for (int s = 0; s < METRICS_NSOURCES; s++)
        strbuf_printf(b, "oidc_reload_failures_total{source=\"%s\"} %llu\n", metrics_source_names[s],
                      (unsigned long long)p->reload_failures[s]);
    if (atomic_load(&p->fleet_enabled)) {
        metrics_gauge(b, "oidc_fleet_issuers", "Issuers of --issuers-dir served.", (long long)p->fleet_issuers);
        metrics_gauge(b, "oidc_fleet_issuer_files_refused",
                      "Issuer files refused as they are now (invalid, keys unreadable, or an issuer URL another "
                      "file has); the status page names them.",
                      (long long)p->fleet_files_refused);
        metrics_counter(b, "oidc_fleet_issuer_file_refusals_total", "Issuer file refusals logged since start.",
                        (unsigned long long)p->fleet_refusals);
    }
    if (first > 0)
        metrics_gauge(b, "oidc_signing_key_published_seconds",
                      "Seconds since the --signing-key-file key was first published.", (long long)time(NULL) - first);
    if (atomic_load(&p->tls_cert_not_after) > 0)
        metrics_gauge(b, "oidc_tls_certificate_expiry_timestamp_seconds", "notAfter of the served certificate.",
                      (long long)p->tls_cert_not_after);
    if (atomic_load(&p->token_review_cert_not_after) > 0)
        metrics_gauge(b, "oidc_token_review_tls_certificate_expiry_timestamp_seconds",
                      "notAfter of the TokenReview listener's certificate.", (long long)p->token_review_cert_not_after);
    strbuf_printf(b,
                  "# HELP oidc_build_info Version, commit and build date of the running binary.\n"
                  "# TYPE oidc_build_info gauge\n"
                  "oidc_build_info{version=\"%s\",commit=\"%s\",build_date=\"%s\"} 1\n",
                  OIDC_VERSION, metrics_build_commit, metrics_build_date);
}

/* The signer's schedule and calls, when it is on. */
static void metrics_render_signer(struct strbuf *b)
{
    static const char *const roles[] = {"next", "signing", "retired"};
    static const char *const results[METRICS_NSIGN_RESULTS] = {"ok", "bad_claims", "unavailable", "failed"};
    static const char *const calls[METRICS_NSIGNER_CALLS] = {"Sign", "FetchKeys", "Metadata"};
    struct metrics_signer *m = &metrics_signer;

    if (!atomic_load(&m->enabled))
        return;
    metrics_gauge(b, "oidc_signer_lock_held", "1 when this process rotates the signing key directory.",
                  (long long)m->lock_held);
    metrics_gauge(b, "oidc_signer_next_rotation_timestamp_seconds",
                  "When the next key signs at the earliest (the age arithmetic of the directory, as of now).",
                  (long long)m->next_rotation);
    metrics_gauge(b, "oidc_signer_signing_key_age_seconds", "How long the directory's signing key has signed.",
                  (long long)m->signing_key_age);
    metrics_gauge(b, "oidc_signer_signing_with_retired_key",
                  "1 while this process signs with a retired key: it has not published the new one for "
                  "--publish-ahead yet.",
                  (long long)m->signing_fallback);
    if (atomic_load(&m->store_enabled)) {
        long long last = (long long)atomic_load(&m->store_last_read), now = (long long)time(NULL);
        metrics_gauge(b, "oidc_signer_store_reachable",
                      "1 when the last read of the signing keys in etcd (--etcd-servers) succeeded; 0: rotation "
                      "is paused, signing goes on.",
                      (long long)atomic_load(&m->store_reachable));
        metrics_gauge(b, "oidc_signer_store_last_read_age_seconds",
                      "Seconds since the last successful read of etcd (-1: never).",
                      last > 0 ? (now > last ? now - last : 0) : -1);
    }
    strbuf_printf(b, "# HELP oidc_signer_keys Keys of the signing key directory by role.\n"
                     "# TYPE oidc_signer_keys gauge\n");
    for (int r = 0; r < 3; r++)
        strbuf_printf(b, "oidc_signer_keys{role=\"%s\"} %llu\n", roles[r], (unsigned long long)m->keys[r]);
    strbuf_printf(b, "# HELP oidc_signer_calls_total External signer calls answered, by method.\n"
                     "# TYPE oidc_signer_calls_total counter\n");
    for (int c = 0; c < METRICS_NSIGNER_CALLS; c++)
        strbuf_printf(b, "oidc_signer_calls_total{method=\"%s\"} %llu\n", calls[c], (unsigned long long)m->calls[c]);
    strbuf_printf(b, "# HELP oidc_signer_signatures_total Sign calls by result.\n"
                     "# TYPE oidc_signer_signatures_total counter\n");
    for (int r = 0; r < METRICS_NSIGN_RESULTS; r++)
        strbuf_printf(b, "oidc_signer_signatures_total{result=\"%s\"} %llu\n", results[r],
                      (unsigned long long)m->signs[r]);
}

/* The --upstream's reads and freshness, when there is one. */
static void metrics_render_upstream(struct strbuf *b)
{
    struct metrics_process *p = &metrics_process;
    long long last = (long long)atomic_load(&p->upstream_last_success);

    if (!atomic_load(&p->upstream_enabled))
        return;
    strbuf_printf(b, "# HELP oidc_upstream_fetches_total Reads of the --upstream API server's two documents, by "
                     "result.\n# TYPE oidc_upstream_fetches_total counter\n");
    for (int r = 0; r < UPSTREAM_NRESULTS; r++)
        strbuf_printf(b, "oidc_upstream_fetches_total{result=\"%s\"} %llu\n",
                      upstream_result_name((enum upstream_result)r),
                      (unsigned long long)atomic_load(&p->upstream_fetches[r]));
    metrics_gauge(b, "oidc_upstream_last_success_timestamp_seconds",
                  "When the --upstream last answered well (200 or 304); 0: never.", last);
    if (last > 0)
        metrics_gauge(b, "oidc_upstream_data_age_seconds",
                      "Seconds since the --upstream last confirmed the published keys.", (long long)time(NULL) - last);
    metrics_gauge(b, "oidc_upstream_issuer_mismatch",
                  "1 while the --upstream names another issuer than --service-account-issuer.",
                  (long long)atomic_load(&p->upstream_issuer_mismatch));
}

/* --publish-to: attempts by target and result, the last time each target
 * was found current, and the objects repaired after they drifted. Target
 * URLs hold no quote, backslash or newline (config/bucket_url.c), so they
 * need no escaping as label values. */
static void metrics_render_publish(struct strbuf *b)
{
    size_t n = push_status_count();
    struct push_status st;

    if (n == 0)
        return;
    strbuf_printf(b, "# HELP oidc_publish_attempts_total Pushes to object storage (and drift checks) by target and "
                     "result.\n# TYPE oidc_publish_attempts_total counter\n");
    for (size_t i = 0; i < n && push_status_get(i, &st) == 0; i++)
        for (int r = 0; r < PUSH_NRESULTS; r++)
            strbuf_printf(b, "oidc_publish_attempts_total{target=\"%s\",result=\"%s\"} %llu\n", st.target,
                          push_result_name((enum push_result)r), (unsigned long long)st.results[r]);
    strbuf_printf(b, "# HELP oidc_publish_last_success_timestamp_seconds When the target last held the published key "
                     "set (or a newer one); 0: never.\n# TYPE oidc_publish_last_success_timestamp_seconds gauge\n");
    for (size_t i = 0; i < n && push_status_get(i, &st) == 0; i++)
        strbuf_printf(b, "oidc_publish_last_success_timestamp_seconds{target=\"%s\"} %lld\n", st.target,
                      (long long)st.last_current);
    strbuf_printf(b, "# HELP oidc_publish_drift_repairs_total Objects rewritten because they differed from the "
                     "published documents after a push.\n# TYPE oidc_publish_drift_repairs_total counter\n");
    for (size_t i = 0; i < n && push_status_get(i, &st) == 0; i++)
        strbuf_printf(b, "oidc_publish_drift_repairs_total{target=\"%s\"} %llu\n", st.target,
                      (unsigned long long)st.drift_repairs);
}

char *metrics_render(size_t *len)
{
    struct strbuf b = {0};
    size_t n = atomic_load(&metrics_nthreads);

    n = n < METRICS_MAX_THREADS ? n : METRICS_MAX_THREADS;
    metrics_render_requests(&b, n);
    metrics_render_latency(&b, n);
    metrics_render_reviews(&b, n);
    metrics_render_connections(&b, n);
    metrics_render_process(&b);
    metrics_render_signer(&b);
    metrics_render_upstream(&b);
    metrics_render_bound(&b, n);
    metrics_render_publish(&b);
    return strbuf_finish(&b, len);
}

/* ---- for the status page ---- */

void metrics_get_build(const char **commit, const char **date)
{
    *commit = metrics_build_commit;
    *date = metrics_build_date;
}

/* Appends a row named by fmt to rows (n of them so far) unless full. */
__attribute__((format(printf, 4, 5))) static void metrics_summary_add(struct metrics_summary_row *rows, size_t *n,
                                                                      unsigned long long value, const char *fmt, ...)
{
    va_list ap;

    if (*n >= METRICS_SUMMARY_MAX)
        return;
    va_start(ap, fmt);
    vsnprintf(rows[*n].name, sizeof(rows[*n].name), fmt, ap);
    va_end(ap);
    rows[*n].text[0] = '\0';
    rows[(*n)++].value = value;
}

/* The bound-object cache's hits and misses, and their ratio since start:
 * /metrics has only the counters (a ratio of rates is PromQL's job), but
 * a person at the status page wants the figure itself. */
static void metrics_summary_bound(struct metrics_summary_row *rows, size_t *count, size_t n)
{
    const struct metrics_process *p = &metrics_process;
    uint64_t hits = METRICS_SUM(bound_cache_hits), misses = METRICS_SUM(bound_cache_misses);

    if (!atomic_load(&p->bound_enabled) || *count + 3 > METRICS_SUMMARY_MAX)
        return;
    metrics_summary_add(rows, count, hits, "bound-object cache hits");
    metrics_summary_add(rows, count, misses, "bound-object cache misses");
    metrics_summary_add(rows, count, 0, "bound-object cache hit ratio since start");
    if (hits + misses == 0)
        snprintf(rows[*count - 1].text, sizeof(rows[*count - 1].text), "-");
    else
        snprintf(rows[*count - 1].text, sizeof(rows[*count - 1].text), "%.4f", (double)hits / (double)(hits + misses));
}

size_t metrics_summary(struct metrics_summary_row rows[METRICS_SUMMARY_MAX])
{
    struct metrics_process *p = &metrics_process;
    size_t n = atomic_load(&metrics_nthreads), count = 0;
    uint64_t reviews_ok, reviews = 0;

    n = n < METRICS_MAX_THREADS ? n : METRICS_MAX_THREADS;
    for (int path = 0; path < METRICS_NPATHS; path++) {
        uint64_t sum = 0, not_modified = 0;
        for (int m = 0; m < METRICS_NMETHODS; m++) {
            for (int st = 0; st < METRICS_NSTATUSES; st++)
                sum += METRICS_SUM(requests[path][m][st]);
            not_modified += METRICS_SUM(requests[path][m][METRICS_304]);
        }
        metrics_summary_add(rows, &count, sum, "requests %s", metrics_path_names[path]);
        if (path == METRICS_PATH_DISCOVERY || path == METRICS_PATH_JWKS)
            metrics_summary_add(rows, &count, not_modified, "304 answers, %s", metrics_path_names[path]);
    }
    metrics_summary_add(rows, &count, METRICS_SUM(response_bytes), "response body bytes");
    for (int r = 0; r < METRICS_NREASONS; r++)
        reviews += METRICS_SUM(reviews[r]);
    reviews_ok = METRICS_SUM(reviews[TOKEN_OK]);
    metrics_summary_add(rows, &count, reviews_ok, "token reviews authenticated");
    metrics_summary_add(rows, &count, reviews - reviews_ok, "token reviews refused");
    metrics_summary_bound(rows, &count, n);
    for (int l = 0; l < METRICS_NLISTENERS; l++) {
        metrics_summary_add(rows, &count, p->connections[l], "open connections, %s", metrics_listener_names[l]);
        metrics_summary_add(rows, &count, p->connections_refused[l], "connections refused over the budget, %s",
                            metrics_listener_names[l]);
    }
    metrics_summary_add(rows, &count, METRICS_SUM(write_timeouts), "write timeouts");
    for (int src = 0; src < METRICS_NSOURCES; src++)
        metrics_summary_add(rows, &count, p->reload_failures[src], "failed reloads, %s", metrics_source_names[src]);
    return count;
}
