/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for mirroring an API server: when the upstream is read
 * (server/reload/mirror: one read at a time, the refresh interval capped by
 * the upstream's max-age, exponential backoff with jitter after failures),
 * what its answers mean for readiness (never read, another issuer, stale)
 * and for the log (once per change), and the pure parts of a read
 * (keys/upstream: max-age, the discovery document's issuer).
 *
 * Both clocks are made up, so nothing here waits; the reads themselves go
 * over the network and are tested end to end (tests/e2e/test_mirror.py).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

/* Built in, as h2o's unit tests do, for its parsers (upstream_max_age,
 * upstream_discovery_issuer), which are its own: the library's copy is
 * then not linked. */
#include "keys/upstream.c"
#include "server/reload/health.h"
#include "server/reload/mirror.h"

#define T0  1800000000L /* wall clock of the start */
#define MS0 5000000     /* monotonic ms of the start */

TestSuite(mirror, .fini = leak_check);
TestSuite(upstream, .fini = leak_check);

/* A read that ended with result r (max_age -1: none given). */
static struct upstream_read result(enum upstream_result r, long max_age)
{
    struct upstream_read read = {.result = r, .max_age = max_age};
    return read;
}

/* Runs one read at ms (it must be allowed to start) ending with read. */
static unsigned one_read(struct mirror *m, int64_t ms, time_t wall, const struct upstream_read *read)
{
    cr_assert(mirror_start(m, ms), "a read may start at %lld (due %lld)", (long long)ms, (long long)mirror_next(m));
    return mirror_done(m, read, ms, wall);
}

Test(mirror, first_read_at_once_then_every_refresh_interval)
{
    struct mirror m;
    struct upstream_read ok = result(UPSTREAM_OK, -1), same = result(UPSTREAM_NOT_MODIFIED, -1);

    mirror_init(&m, 60, 600, 1, MS0);
    cr_assert_eq(mirror_next(&m), MS0, "the first read is due at start");
    one_read(&m, MS0, T0, &ok);
    cr_assert_eq(mirror_next(&m), MS0 + 60000);
    cr_assert_not(mirror_start(&m, MS0 + 59999), "not before the interval");
    one_read(&m, MS0 + 60000, T0 + 60, &same);
    cr_assert_eq(mirror_next(&m), MS0 + 120000, "a 304 is a good answer too");
    mirror_clear(&m);
}

/* Never stampede: a read that has begun blocks every other until it ends,
 * a SIGHUP included. */
Test(mirror, one_read_in_flight)
{
    struct mirror m;
    struct upstream_read ok = result(UPSTREAM_OK, -1);

    mirror_init(&m, 60, 600, 1, MS0);
    cr_assert(mirror_start(&m, MS0));
    cr_assert_not(mirror_start(&m, MS0), "a second read while the first is under way");
    cr_assert_not(mirror_start(&m, MS0 + 3600000), "however late it is");
    mirror_hurry(&m, MS0 + 10);
    cr_assert_not(mirror_start(&m, MS0 + 10), "a SIGHUP does not start a second one");
    mirror_done(&m, &ok, MS0 + 20, T0);
    cr_assert_eq(mirror_next(&m), MS0 + 20 + 60000);
    mirror_hurry(&m, MS0 + 30);
    cr_assert(mirror_start(&m, MS0 + 30), "once it ended, a SIGHUP reads at once");
    mirror_clear(&m);
}

/* The interval is never longer than the upstream's max-age, and never
 * shorter than MIRROR_MIN_INTERVAL_MS. */
Test(mirror, refresh_capped_by_max_age)
{
    static const struct {
        long max_age;
        int64_t want;
    } cases[] = {{3600, 60000}, {60, 60000}, {10, 10000}, {1, 1000}, {0, MIRROR_MIN_INTERVAL_MS}, {-1, 60000}};
    struct mirror m;

    for (size_t i = 0; i < COUNT(cases); i++) {
        struct upstream_read ok = result(UPSTREAM_OK, cases[i].max_age);
        mirror_init(&m, 60, 600, 1, MS0);
        one_read(&m, MS0, T0, &ok);
        cr_expect_eq(mirror_next(&m) - MS0, cases[i].want, "max-age %ld: next read after %lld ms, want %lld",
                     cases[i].max_age, (long long)(mirror_next(&m) - MS0), (long long)cases[i].want);
        mirror_clear(&m);
    }
}

/* After failures the delays double from MIRROR_BACKOFF_FIRST_MS up to the
 * refresh interval, each drawn in [half, whole]; other seeds draw other
 * delays (replicas that fail together do not retry together). */
Test(mirror, backoff_with_jitter)
{
    struct upstream_read down = result(UPSTREAM_ERR_CONNECT, -1);
    int64_t first_delay[8];

    for (uint64_t seed = 1; seed <= 8; seed++) {
        struct mirror m;
        int64_t now = MS0, want = MIRROR_BACKOFF_FIRST_MS;
        mirror_init(&m, 30, 600, seed * 7919, MS0);
        for (int i = 0; i < 10; i++) {
            one_read(&m, now, T0, &down);
            int64_t delay = mirror_next(&m) - now;
            cr_assert(delay >= want - want / 2 && delay <= want, "failure %d: delay %lld not in [%lld, %lld]", i + 1,
                      (long long)delay, (long long)(want - want / 2), (long long)want);
            if (i == 3)
                first_delay[seed - 1] = delay;
            now += delay;
            want = want * 2 < 30000 ? want * 2 : 30000;
        }
        cr_assert_eq(m.failures, 10);
        mirror_clear(&m);
    }
    int differ = 0;
    for (int i = 1; i < 8; i++)
        differ |= first_delay[i] != first_delay[0];
    cr_assert(differ, "the jitter draws the same delay for every seed");
}

/* A short refresh interval caps the backoff too (tests run with 1s). */
Test(mirror, backoff_never_beyond_the_refresh_interval)
{
    struct mirror m;
    struct upstream_read bad = result(UPSTREAM_ERR_STATUS, -1);
    int64_t now = MS0;

    mirror_init(&m, 1, 10, 3, MS0);
    for (int i = 0; i < 6; i++) {
        one_read(&m, now, T0, &bad);
        cr_assert_leq(mirror_next(&m) - now, 1000);
        cr_assert_geq(mirror_next(&m) - now, 500);
        now = mirror_next(&m);
    }
    mirror_clear(&m);
}

/* Readiness: not before the first good answer (the reason carries the
 * last error), then until the last good answer is older than the
 * staleness bound; failures in between change nothing. */
Test(mirror, ready_after_data_until_stale)
{
    struct mirror m;
    struct mirror_status s;
    struct upstream_read ok = result(UPSTREAM_OK, -1), e401 = result(UPSTREAM_ERR_UNAUTHORIZED, -1);
    char why[1024] = "";
    int64_t now = MS0;

    mirror_init(&m, 60, 600, 1, MS0);
    mirror_status_of(&m, "https://api.example:6443", NULL, &s);
    cr_assert_not(mirror_ready(&s, T0, why, sizeof why));
    cr_assert(strstr(why, "no good answer") && strstr(why, "https://api.example:6443"), "%s", why);
    one_read(&m, now, T0, &e401);
    mirror_status_of(&m, "https://api.example:6443", "GET https://api.example:6443/x: HTTP 401", &s);
    cr_assert_not(mirror_ready(&s, T0, why, sizeof why));
    cr_assert(strstr(why, "HTTP 401") != NULL, "the reason says why: %s", why);
    cr_assert_str_eq(s.last_result, "unauthorized");
    cr_assert(s.last_failed);
    now = mirror_next(&m);
    one_read(&m, now, T0 + 1, &ok);
    mirror_status_of(&m, "https://api.example:6443", NULL, &s);
    cr_assert(mirror_ready(&s, T0 + 1, why, sizeof why), "%s", why);
    cr_assert_not(s.last_failed);
    cr_assert_str_eq(s.last_error, "", "a good answer clears the error");
    for (int i = 0; i < 5; i++) {
        now = mirror_next(&m);
        one_read(&m, now, T0 + 100 + i, &e401);
    }
    mirror_status_of(&m, "https://api.example:6443", "HTTP 401", &s);
    cr_assert_eq(s.last_success, T0 + 1, "failures keep the last good answer");
    cr_assert(mirror_ready(&s, T0 + 1 + 600, why, sizeof why), "at the staleness bound: %s", why);
    cr_assert_not(mirror_ready(&s, T0 + 1 + 601, why, sizeof why), "past it");
    cr_assert(strstr(why, "601s old") && strstr(why, "--upstream-max-staleness (600s)"), "%s", why);
    mirror_clear(&m);
}

/* Another issuer: not ready, even with good data from before; logged once
 * per issuer it names, and once more when it matches again. */
Test(mirror, issuer_mismatch_logged_once_per_change)
{
    struct mirror m;
    struct mirror_status s;
    struct upstream_read ok = result(UPSTREAM_OK, -1), other = result(UPSTREAM_ERR_ISSUER, -1);
    char why[1024];
    int64_t now = MS0;

    mirror_init(&m, 1, 10, 1, MS0);
    cr_assert_eq(one_read(&m, now, T0, &ok), MIRROR_LOG_FIRST);
    other.issuer = "https://kubernetes.default.svc";
    now = mirror_next(&m);
    cr_assert_eq(one_read(&m, now, T0 + 1, &other), MIRROR_LOG_FAILED | MIRROR_LOG_ISSUER);
    mirror_status_of(&m, "https://api", NULL, &s);
    cr_assert(s.issuer_mismatch && s.has_data);
    cr_assert_str_eq(s.mismatch, "https://kubernetes.default.svc", "the issuer it names, for the status page");
    cr_assert_not(mirror_ready(&s, T0 + 1, why, sizeof why), "ready with another issuer");
    cr_assert(strstr(why, "another issuer") != NULL, "%s", why);
    now = mirror_next(&m);
    cr_assert_eq(one_read(&m, now, T0 + 2, &other), 0, "the same issuer again: not logged again");
    other.issuer = "https://elsewhere";
    now = mirror_next(&m);
    cr_assert_eq(one_read(&m, now, T0 + 3, &other), MIRROR_LOG_ISSUER, "another one: logged");
    now = mirror_next(&m);
    cr_assert_eq(one_read(&m, now, T0 + 4, &ok), MIRROR_LOG_RECOVERED | MIRROR_LOG_ISSUER_OK);
    mirror_status_of(&m, "https://api", NULL, &s);
    cr_assert(mirror_ready(&s, T0 + 4, why, sizeof why), "%s", why);
    cr_assert_str_eq(s.mismatch, "");
    mirror_clear(&m);
}

/* Failures are logged when they begin and when their kind changes, not at
 * every retry; a recovery is logged. */
Test(mirror, failures_logged_when_they_change)
{
    struct mirror m;
    struct upstream_read ok = result(UPSTREAM_OK, -1), down = result(UPSTREAM_ERR_CONNECT, -1),
                         e500 = result(UPSTREAM_ERR_STATUS, -1);
    int64_t now = MS0;

    mirror_init(&m, 1, 10, 1, MS0);
    cr_assert_eq(one_read(&m, now, T0, &down), MIRROR_LOG_FAILED);
    now = mirror_next(&m);
    cr_assert_eq(one_read(&m, now, T0, &down), 0);
    now = mirror_next(&m);
    cr_assert_eq(one_read(&m, now, T0, &e500), MIRROR_LOG_FAILED);
    now = mirror_next(&m);
    cr_assert_eq(one_read(&m, now, T0, &ok), MIRROR_LOG_FIRST, "the first good answer");
    now = mirror_next(&m);
    cr_assert_eq(one_read(&m, now, T0, &e500), MIRROR_LOG_FAILED);
    now = mirror_next(&m);
    cr_assert_eq(one_read(&m, now, T0, &ok), MIRROR_LOG_RECOVERED);
    mirror_clear(&m);
}

/* last_change moves only when a read brought new keys. */
Test(mirror, last_change_follows_the_keys)
{
    struct mirror m;
    struct mirror_status s;
    struct keyset *ks = fixture_keyset1("ec256.pub");
    struct upstream_read fresh = result(UPSTREAM_OK, -1), same = result(UPSTREAM_NOT_MODIFIED, -1);
    int64_t now = MS0;

    fresh.keys = ks;
    mirror_init(&m, 1, 10, 1, MS0);
    one_read(&m, now, T0, &fresh);
    now = mirror_next(&m);
    one_read(&m, now, T0 + 5, &same);
    mirror_status_of(&m, "https://api", NULL, &s);
    cr_assert_eq(s.last_change, T0);
    cr_assert_eq(s.last_success, T0 + 5);
    now = mirror_next(&m);
    one_read(&m, now, T0 + 9, &fresh);
    mirror_status_of(&m, "https://api", NULL, &s);
    cr_assert_eq(s.last_change, T0 + 9);
    keyset_free(ks);
    mirror_clear(&m);
}

Test(mirror, status_shared_between_threads)
{
    struct mirror_status in = {.enabled = 1, .has_data = 1, .last_success = T0, .last_result = "ok"}, out;

    snprintf(in.url, sizeof in.url, "https://api");
    mirror_status_set(&in);
    cr_assert(mirror_status_get(&out));
    cr_assert_str_eq(out.url, "https://api");
    cr_assert_eq(out.last_success, T0);
    memset(&in, 0, sizeof in);
    mirror_status_set(&in);
    cr_assert_not(mirror_status_get(&out), "disabled");
    cr_assert(mirror_ready(&out, T0, NULL, 0), "without --upstream it does not matter");
}

/* /readyz follows what is published: not before the upstream's first set
 * is the current snapshot, whatever the mirror has read. */
Test(mirror, readyz_follows_the_published_documents)
{
    struct mirror_status s = {.enabled = 1, .has_data = 1, .last_success = T0, .max_staleness = 600};
    char why[512] = "";

    snprintf(s.url, sizeof s.url, "https://api");
    health_init(60, MS0);
    mirror_status_set(&s);
    health_documents(0);
    cr_assert_not(health_ready(T0, MS0, why, sizeof why), "read, but not published yet");
    cr_assert_str_eq(why, "no keys are published yet");
    health_documents(1);
    cr_assert(health_ready(T0, MS0, why, sizeof why), "%s", why);
    s.has_data = 0;
    mirror_status_set(&s);
    cr_assert_not(health_ready(T0, MS0, why, sizeof why));
    cr_assert(strstr(why, "no good answer from the --upstream https://api yet") != NULL, "%s", why);
    memset(&s, 0, sizeof s);
    mirror_status_set(&s);
}

/* --- keys/upstream: the pure parts -------------------------------------- */

Test(upstream, max_age_of_cache_control)
{
    static const struct {
        const char *value;
        long want;
    } cases[] = {
        {"public, max-age=3600", 3600},
        {"max-age=0", 0},
        {"MAX-AGE=60, public", 60},
        {"private, s-maxage=10, max-age=20", 20},
        {"s-maxage=10", -1},
        {"no-store", -1},
        {"max-age=\"15\"", 15},
        {"max-age = 7", 7},
        {"max-age=", -1},
        {"max-age=-5", -1},
        {"", -1},
        {NULL, -1},
    };

    for (size_t i = 0; i < COUNT(cases); i++)
        cr_expect_eq(upstream_max_age(cases[i].value), cases[i].want, "%s", cases[i].value ? cases[i].value : "NULL");
}

Test(upstream, issuer_of_a_discovery_document)
{
    static const char *const bad[] = {
        "", "[]", "{}", "{\"issuer\":1}", "{\"issuer\":\"a\",\"issuer\":\"b\"}", "{\"issuer\":\"a\"} x",
    };
    char err[256], *issuer;
    const char *doc = "{\"issuer\":\"https://x.example/a\\/b\",\"jwks_uri\":\"https://10.0.0.1:6443/openid/v1/jwks\"}";

    cr_assert_eq(upstream_discovery_issuer(doc, strlen(doc), &issuer, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(issuer, "https://x.example/a/b", "compared as the decoded string");
    free(issuer);
    for (size_t i = 0; i < COUNT(bad); i++) {
        cr_expect_eq(upstream_discovery_issuer(bad[i], strlen(bad[i]), &issuer, err, sizeof err), -1, "%s", bad[i]);
        cr_expect_null(issuer);
        cr_expect(strstr(err, "not a discovery document") != NULL, "%s: %s", bad[i], err);
    }
}

Test(upstream, result_names_are_stable)
{
    static const char *const want[UPSTREAM_NRESULTS] = {
        "ok",      "not_modified", "request", "connect",   "tls",
        "timeout", "unauthorized", "status",  "malformed", "issuer_mismatch",
    };

    for (int r = 0; r < UPSTREAM_NRESULTS; r++)
        cr_expect_str_eq(upstream_result_name((enum upstream_result)r), want[r]);
    cr_expect_str_eq(upstream_result_name(UPSTREAM_NRESULTS), "unknown");
}
