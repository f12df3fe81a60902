/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for server/reload/bound_lookup: the per-object cache, its
 * single flight, failures that stand briefly, the probe that brings
 * readiness back, and eviction, against a fake API server (the fetch
 * function) that counts requests and can hold them.
 */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "jose/bound.h"
#include "server/reload/bound_lookup.h"
#include "util/clock.h"

#define WAIT_MS 10000 /* bounded waits for the lookup threads */

/* The fake API server: what it answers, how often it was asked, and a
 * gate that holds every request while closed. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int fetches, gate_closed, down, completed;
static char uid[64] = "uid-1";

static void fake_fetch(void *ctx, const struct bound_ref *r, struct bound_object *out)
{
    (void)ctx;
    (void)r;
    pthread_mutex_lock(&mu);
    fetches++;
    pthread_cond_broadcast(&cond);
    while (gate_closed)
        pthread_cond_wait(&cond, &mu);
    if (down) {
        out->state = BOUND_FAILED;
        out->unreachable = 1;
        snprintf(out->error, sizeof(out->error), "the API server could not be reached");
    } else {
        out->state = BOUND_FOUND;
        snprintf(out->uid, sizeof(out->uid), "%s", uid);
    }
    pthread_mutex_unlock(&mu);
}

static void on_done(struct bound_wait *w)
{
    (void)w;
    pthread_mutex_lock(&mu);
    completed++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
}

/* Waits (bounded) until *counter reaches want. */
static void wait_for(int *counter, int want)
{
    struct timespec until = clock_deadline(CLOCK_REALTIME, WAIT_MS);
    int rc = 0;

    pthread_mutex_lock(&mu);
    while (*counter < want && rc == 0)
        rc = pthread_cond_timedwait(&cond, &mu, &until);
    pthread_mutex_unlock(&mu);
    cr_assert_geq(*counter, want, "only %d of %d within %d ms", *counter, want, WAIT_MS);
}

static int read_counter(int *counter)
{
    pthread_mutex_lock(&mu);
    int v = *counter;
    pthread_mutex_unlock(&mu);
    return v;
}

static struct bound_lookup *start(int64_t ttl_ms, size_t max_entries)
{
    const struct bound_lookup_params p = {
        .ttl_ms = ttl_ms, .retry_ms = 50, .threads = 2, .max_entries = max_entries, .fetch = fake_fetch};
    struct bound_lookup *l;

    fetches = completed = gate_closed = down = 0;
    snprintf(uid, sizeof(uid), "uid-1");
    l = bound_lookup_start(&p);
    cr_assert_not_null(l);
    cr_assert_eq(bound_lookup_current(), l);
    return l;
}

static struct bound_ref pod(const char *name)
{
    struct bound_ref r = {.kind = BOUND_POD};

    snprintf(r.ns, sizeof(r.ns), "team-a");
    snprintf(r.name, sizeof(r.name), "%s", name);
    return r;
}

Test(bound_lookup, a_miss_asks_once_then_the_cache_answers_until_the_ttl)
{
    struct bound_lookup *l = start(60000, 0);
    struct bound_ref r = pod("web-0");
    struct bound_wait w = {.done = on_done};
    struct bound_object out[1];
    unsigned hits;

    cr_assert_eq(bound_lookup_get(l, &r, 1, clock_now_ms(), NULL, out, &hits), 0, "nothing known yet");
    cr_assert_eq(read_counter(&fetches), 0, "without a wait, nothing is asked for");
    cr_assert_eq(bound_lookup_get(l, &r, 1, clock_now_ms(), &w, NULL, &hits), 0);
    wait_for(&completed, 1);
    cr_assert_eq(w.out[0].state, BOUND_FOUND);
    cr_assert_str_eq(w.out[0].uid, "uid-1");

    snprintf(uid, sizeof(uid), "uid-2");
    cr_assert_eq(bound_lookup_get(l, &r, 1, clock_now_ms(), NULL, out, &hits), 1);
    cr_assert_eq(hits, 1);
    cr_assert_str_eq(out[0].uid, "uid-1", "the cached answer, not asked again");
    cr_assert_eq(read_counter(&fetches), 1);

    /* past the TTL: asked again */
    cr_assert_eq(bound_lookup_get(l, &r, 1, clock_now_ms() + 60001, NULL, out, &hits), 0);
    cr_assert_eq(bound_lookup_get(l, &r, 1, clock_now_ms() + 60001, &w, NULL, &hits), 0);
    wait_for(&completed, 2);
    cr_assert_str_eq(w.out[0].uid, "uid-2");
    cr_assert_eq(read_counter(&fetches), 2);
    bound_lookup_free(l);
    cr_assert_null(bound_lookup_current());
}

/* 200 reviews of one pod while it is being asked for: one request. */
Test(bound_lookup, concurrent_reviews_of_one_object_share_one_request)
{
    enum { N = 200 };
    struct bound_lookup *l = start(60000, 0);
    struct bound_ref refs[2] = {pod("web-0"), pod("web-0")};
    static struct bound_wait w[N];
    unsigned hits;

    refs[0].kind = BOUND_SERVICEACCOUNT;
    snprintf(refs[0].name, sizeof(refs[0].name), "web");
    gate_closed = 1;
    for (int i = 0; i < N; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].done = on_done;
        cr_assert_eq(bound_lookup_get(l, refs, 2, clock_now_ms(), &w[i], NULL, &hits), 0);
    }
    wait_for(&fetches, 2);
    pthread_mutex_lock(&mu);
    gate_closed = 0;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
    wait_for(&completed, N);
    cr_assert_eq(read_counter(&fetches), 2, "one request per object, however many reviews wait");
    for (int i = 0; i < N; i++)
        cr_assert(w[i].out[0].state == BOUND_FOUND && w[i].out[1].state == BOUND_FOUND);
    bound_lookup_free(l);
}

/* A failure stands briefly (not for the TTL), readiness follows it, and
 * a probe brings it back without any review. */
Test(bound_lookup, the_api_server_down_then_back)
{
    struct bound_lookup *l = start(60000, 0);
    struct bound_ref r = pod("web-0");
    struct bound_wait w = {.done = on_done};
    struct bound_object out[1];
    unsigned hits;
    char why[300] = "";
    int64_t until;

    down = 1;
    cr_assert_eq(bound_lookup_ready(why, sizeof(why)), 1, "ready until an answer fails");
    bound_lookup_get(l, &r, 1, clock_now_ms(), &w, NULL, &hits);
    wait_for(&completed, 1);
    cr_assert_eq(w.out[0].state, BOUND_FAILED);
    cr_assert_eq(bound_lookup_ready(why, sizeof(why)), 0);
    cr_assert_str_eq(why, "--token-review-check-bound-objects: the API server could not be reached");
    cr_assert_eq(bound_lookup_get(l, &r, 1, clock_now_ms() + 51, NULL, out, &hits), 0,
                 "a failure stands for the retry period only");

    pthread_mutex_lock(&mu);
    down = 0;
    pthread_mutex_unlock(&mu);
    /* each probe is a fetch, which wakes this wait; readiness follows it */
    until = clock_now_ms() + WAIT_MS;
    while (!bound_lookup_ready(why, sizeof(why)) && clock_now_ms() < until) {
        struct timespec tick = clock_deadline(CLOCK_REALTIME, 100);
        pthread_mutex_lock(&mu);
        pthread_cond_timedwait(&cond, &mu, &tick);
        pthread_mutex_unlock(&mu);
    }
    cr_assert_eq(bound_lookup_ready(why, sizeof(why)), 1, "the probe found the API server back");
    bound_lookup_free(l);
}

Test(bound_lookup, beyond_its_size_the_oldest_answer_goes)
{
    struct bound_lookup *l = start(60000, 2);
    struct bound_ref a = pod("a"), b = pod("b"), c = pod("c");
    struct bound_wait w = {.done = on_done};
    struct bound_object out[1];
    unsigned hits;

    bound_lookup_get(l, &a, 1, clock_now_ms(), &w, NULL, &hits);
    wait_for(&completed, 1);
    bound_lookup_get(l, &b, 1, clock_now_ms(), &w, NULL, &hits);
    wait_for(&completed, 2);
    bound_lookup_get(l, &c, 1, clock_now_ms(), &w, NULL, &hits);
    wait_for(&completed, 3);
    cr_assert_eq(bound_lookup_get(l, &a, 1, clock_now_ms(), NULL, out, &hits), 0, "a was dropped for c");
    cr_assert_eq(bound_lookup_get(l, &b, 1, clock_now_ms(), NULL, out, &hits), 1);
    cr_assert_eq(bound_lookup_get(l, &c, 1, clock_now_ms(), NULL, out, &hits), 1);
    bound_lookup_free(l);
}

/* Stopped (shutting down): reviews still waiting were answered, later ones
 * are refused at once, and nothing is asked for any more. */
Test(bound_lookup, once_stopped_reviews_are_refused_at_once)
{
    struct bound_lookup *l = start(60000, 0);
    struct bound_ref r = pod("web-0");
    struct bound_wait w = {.done = on_done};
    unsigned hits;

    bound_lookup_stop(l);
    cr_assert_eq(bound_lookup_get(l, &r, 1, clock_now_ms(), &w, NULL, &hits), 1);
    cr_assert_eq(w.out[0].state, BOUND_FAILED);
    cr_assert_str_eq(w.out[0].error, "the server is shutting down");
    cr_assert_eq(read_counter(&completed), 0, "nothing waits, so nothing is called back");
    cr_assert_eq(read_counter(&fetches), 0);
    bound_lookup_free(l);
}

/* 10,000 pods, each reviewed again within the TTL: the API server is
 * asked once per object, not once per review. */
Test(bound_lookup, ten_thousand_objects_one_request_each_per_ttl)
{
    enum { N = 10000 };
    struct bound_lookup *l = start(60000, 0);
    static struct bound_wait w[N];
    struct bound_object out[1];
    unsigned hits;
    char name[32];

    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "web-%d", i);
        struct bound_ref r = pod(name);
        memset(&w[i], 0, sizeof(w[i]));
        w[i].done = on_done;
        bound_lookup_get(l, &r, 1, clock_now_ms(), &w[i], NULL, &hits);
    }
    wait_for(&completed, N);
    cr_assert_eq(read_counter(&fetches), N);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "web-%d", i);
        struct bound_ref r = pod(name);
        cr_assert_eq(bound_lookup_get(l, &r, 1, clock_now_ms(), NULL, out, &hits), 1, "%s not cached", name);
    }
    cr_assert_eq(read_counter(&fetches), N, "no more requests within the TTL");
    bound_lookup_free(l);
}
