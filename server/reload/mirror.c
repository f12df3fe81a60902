/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/mirror.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/log.h"

void mirror_init(struct mirror *m, unsigned long refresh_seconds, unsigned long max_staleness_seconds, uint64_t seed,
                 int64_t now_ms)
{
    memset(m, 0, sizeof(*m));
    m->refresh_ms = (int64_t)refresh_seconds * 1000;
    m->max_staleness = (time_t)max_staleness_seconds;
    m->rng = seed != 0 ? seed : 0x9e3779b97f4a7c15u;
    m->next_at = now_ms;
    m->last_result = UPSTREAM_NRESULTS;
}

int64_t mirror_next(const struct mirror *m)
{
    return m->next_at;
}

int mirror_start(struct mirror *m, int64_t now_ms)
{
    if (m->in_flight || now_ms < m->next_at)
        return 0;
    m->in_flight = 1;
    return 1;
}

void mirror_hurry(struct mirror *m, int64_t now_ms)
{
    if (!m->in_flight && m->next_at > now_ms)
        m->next_at = now_ms;
}

/* xorshift64: the jitter needs spread, not secrecy. */
static uint64_t mirror_random(struct mirror *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

/* The wait after the failures so far: MIRROR_BACKOFF_FIRST_MS doubled per
 * failure up to the refresh interval, drawn between its half and its whole. */
static int64_t mirror_backoff(struct mirror *m)
{
    int64_t cap = m->refresh_ms, delay = MIRROR_BACKOFF_FIRST_MS < cap ? MIRROR_BACKOFF_FIRST_MS : cap;

    for (unsigned long i = 1; i < m->failures && delay < cap; i++)
        delay *= 2;
    delay = delay < cap ? delay : cap;
    return delay - delay / 2 + (int64_t)(mirror_random(m) % (uint64_t)(delay / 2 + 1));
}

/* The wait after a good answer: the refresh interval, or the upstream's
 * max-age when shorter, but at least MIRROR_MIN_INTERVAL_MS. */
static int64_t mirror_interval(const struct mirror *m, long max_age)
{
    int64_t delay = m->refresh_ms;

    if (max_age >= 0 && (int64_t)max_age * 1000 < delay)
        delay = (int64_t)max_age * 1000;
    return delay > MIRROR_MIN_INTERVAL_MS ? delay : MIRROR_MIN_INTERVAL_MS;
}

/* A good answer (200 or 304). */
static unsigned mirror_succeeded(struct mirror *m, const struct upstream_read *read, time_t now)
{
    unsigned log = !m->has_data ? MIRROR_LOG_FIRST : m->failures > 0 ? MIRROR_LOG_RECOVERED : 0;

    if (m->mismatch != NULL) {
        log |= MIRROR_LOG_ISSUER_OK;
        free(m->mismatch);
        m->mismatch = NULL;
    }
    if (read->keys != NULL || !m->has_data)
        m->last_change = now;
    m->has_data = 1;
    m->failures = 0;
    m->last_success = now;
    return log;
}

/* A failure: logged when it is the first, or of another kind than the
 * last; another issuer when it is not the one logged last. */
static unsigned mirror_failed(struct mirror *m, const struct upstream_read *read)
{
    unsigned log = m->failures == 0 || read->result != m->last_result ? MIRROR_LOG_FAILED : 0;
    char *issuer;

    m->failures++;
    if (read->result == UPSTREAM_ERR_ISSUER && read->issuer != NULL &&
        (m->mismatch == NULL || strcmp(m->mismatch, read->issuer) != 0) && (issuer = strdup(read->issuer)) != NULL) {
        free(m->mismatch);
        m->mismatch = issuer;
        log |= MIRROR_LOG_ISSUER;
    }
    return log;
}

unsigned mirror_done(struct mirror *m, const struct upstream_read *read, int64_t now_ms, time_t now)
{
    int good = read->result == UPSTREAM_OK || read->result == UPSTREAM_NOT_MODIFIED;
    unsigned log = good ? mirror_succeeded(m, read, now) : mirror_failed(m, read);

    m->in_flight = 0;
    m->last_attempt = now;
    m->last_result = read->result;
    m->next_at = now_ms + (good ? mirror_interval(m, read->max_age) : mirror_backoff(m));
    return log;
}

void mirror_clear(struct mirror *m)
{
    free(m->mismatch);
    m->mismatch = NULL;
}

void mirror_status_of(const struct mirror *m, const char *url, const char *message, struct mirror_status *out)
{
    int failed = m->last_result != UPSTREAM_OK && m->last_result != UPSTREAM_NOT_MODIFIED;

    memset(out, 0, sizeof(*out));
    out->enabled = 1;
    snprintf(out->url, sizeof(out->url), "%s", url);
    out->has_data = m->has_data;
    out->issuer_mismatch = m->mismatch != NULL;
    if (m->mismatch != NULL)
        snprintf(out->mismatch, sizeof(out->mismatch), "%s", m->mismatch);
    out->last_success = m->last_success;
    out->last_attempt = m->last_attempt;
    out->last_change = m->last_change;
    out->max_staleness = m->max_staleness;
    out->failures = m->failures;
    out->last_result = m->last_result < UPSTREAM_NRESULTS ? upstream_result_name(m->last_result) : "";
    out->last_failed = failed && m->last_result < UPSTREAM_NRESULTS;
    if (out->last_failed && message != NULL)
        snprintf(out->last_error, sizeof(out->last_error), "%s", message);
}

int mirror_stale(const struct mirror_status *s, time_t now)
{
    return now - s->last_success > s->max_staleness;
}

int mirror_status_page(const struct mirror_status *s, time_t now, struct status_upstream *out)
{
    if (!s->enabled)
        return 0;
    *out = (struct status_upstream){.url = s->url,
                                    .has_data = s->has_data,
                                    .issuer_mismatch = s->issuer_mismatch,
                                    .mismatch = s->mismatch,
                                    .last_success = s->last_success,
                                    .last_attempt = s->last_attempt,
                                    .max_staleness = s->max_staleness,
                                    .stale = mirror_stale(s, now),
                                    .failures = s->failures,
                                    .last_result = s->last_result,
                                    .last_failed = s->last_failed,
                                    .last_error = s->last_error};
    return 1;
}

int mirror_ready(const struct mirror_status *s, time_t now, char *why, size_t len)
{
    if (!s->enabled)
        return 1;
    if (s->issuer_mismatch) {
        snprintf(why, len, "the --upstream %s names another issuer than --service-account-issuer (see the log)",
                 s->url);
        return 0;
    }
    if (!s->has_data) {
        snprintf(why, len, "no good answer from the --upstream %s yet%s%s", s->url, s->last_error[0] ? ": " : "",
                 s->last_error);
        return 0;
    }
    if (mirror_stale(s, now)) {
        snprintf(why, len,
                 "the last good answer from the --upstream %s is %llds old, more than "
                 "--upstream-max-staleness (%llds)%s%s",
                 s->url, (long long)(now - s->last_success), (long long)s->max_staleness, s->last_error[0] ? ": " : "",
                 s->last_error);
        return 0;
    }
    return 1;
}

static pthread_mutex_t mirror_status_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mirror_status mirror_status_now;

void mirror_status_set(const struct mirror_status *s)
{
    pthread_mutex_lock(&mirror_status_mu);
    mirror_status_now = *s;
    pthread_mutex_unlock(&mirror_status_mu);
}

int mirror_status_get(struct mirror_status *s)
{
    pthread_mutex_lock(&mirror_status_mu);
    *s = mirror_status_now;
    pthread_mutex_unlock(&mirror_status_mu);
    return s->enabled;
}

/* Logs what the read that just ended changed (mirror_done's bits), once
 * per change: a mirror that keeps failing the same way says it once. */
void mirror_log(const struct mirror *m, const char *url, const struct upstream_read *read, unsigned bits)
{
    double retry = (double)(mirror_next(m) - clock_now_ms()) / 1000;

    if (bits & MIRROR_LOG_ISSUER)
        log_msg(LOG_ERROR, "%s", read->message);
    else if (bits & MIRROR_LOG_FAILED)
        log_msg(LOG_WARN, "reading --upstream failed (%s): %s; %s; retrying in %.1fs (then backing off)",
                upstream_result_name(read->result), read->message,
                m->has_data ? "the last good key set stays published" : "both documents answer 503 until it answers",
                retry > 0 ? retry : 0);
    if (bits & MIRROR_LOG_ISSUER_OK)
        log_msg(LOG_INFO, "--upstream %s names --service-account-issuer again", url);
    if (bits & MIRROR_LOG_RECOVERED)
        log_msg(LOG_INFO, "--upstream %s answers again", url);
    if (bits & MIRROR_LOG_FIRST)
        log_msg(LOG_INFO, "--upstream %s answered with %zu key(s): publishing", url,
                read->keys ? read->keys->count : 0);
    else if (read->keys != NULL)
        log_msg(LOG_INFO, "--upstream %s changed its keys (%zu now)", url, read->keys->count);
}
