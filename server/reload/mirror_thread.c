/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/mirror_thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keys/upstream.h"
#include "publish/publish.h"
#include "server/obs/metrics.h"
#include "server/reload/mirror.h"
#include "util/clock.h"
#include "util/log.h"

struct mirror_thread {
    const struct config *cfg;
    struct upstream upstream; /* the mirror thread's alone */
    struct mirror mirror;     /* the mirror thread's alone */
    void (*wake)(void *ctx);
    void *wake_ctx;
    pthread_t thread;
    pthread_mutex_t mu; /* guards what follows */
    pthread_cond_t cond;
    struct keyset *fresh; /* a new good set not taken yet */
    int hurry;
    int stop;
};

/* The metrics and status after a read (mirror_status_set). */
static void mirror_thread_report(const struct mirror_thread *t, const struct upstream_read *read)
{
    struct mirror_status s;

    mirror_status_of(&t->mirror, t->cfg->upstream, read ? read->message : NULL, &s);
    mirror_status_set(&s);
    if (read != NULL)
        atomic_fetch_add(&metrics_process.upstream_fetches[read->result], 1);
    atomic_store(&metrics_process.upstream_last_success, (long long)s.last_success);
    atomic_store(&metrics_process.upstream_issuer_mismatch, s.issuer_mismatch);
}

/* One read: its result decides the next (mirror_done); a new good set
 * waits for the reload thread, which is woken for it. */
static void mirror_thread_read(struct mirror_thread *t)
{
    struct upstream_read read;
    unsigned bits;

    upstream_fetch(&t->upstream, &read);
    bits = mirror_done(&t->mirror, &read, clock_now_ms(), time(NULL));
    mirror_log(&t->mirror, t->cfg->upstream, &read, bits);
    mirror_thread_report(t, &read);
    if (read.keys != NULL) {
        pthread_mutex_lock(&t->mu);
        keyset_free(t->fresh);
        t->fresh = read.keys;
        read.keys = NULL;
        pthread_mutex_unlock(&t->mu);
        t->wake(t->wake_ctx);
    }
    upstream_read_clear(&read);
}

/* Waits, with t->mu held, until the monotonic ms due or a signal. */
static void mirror_thread_wait(struct mirror_thread *t, int64_t due)
{
    struct timespec at = {.tv_sec = (time_t)(due / 1000), .tv_nsec = (long)(due % 1000) * 1000000};

    pthread_cond_timedwait(&t->cond, &t->mu, &at);
}

static void *mirror_thread_main(void *arg)
{
    struct mirror_thread *t = arg;

    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        int64_t now = clock_now_ms();
        if (t->hurry)
            mirror_hurry(&t->mirror, now);
        t->hurry = 0;
        if (!mirror_start(&t->mirror, now)) {
            mirror_thread_wait(t, mirror_next(&t->mirror));
            continue;
        }
        pthread_mutex_unlock(&t->mu);
        mirror_thread_read(t);
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static void mirror_thread_free(struct mirror_thread *t)
{
    upstream_clear(&t->upstream);
    mirror_clear(&t->mirror);
    keyset_free(t->fresh);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

struct mirror_thread *mirror_thread_start(const struct config *cfg, void (*wake)(void *ctx), void *ctx)
{
    struct mirror_thread *t = calloc(1, sizeof(*t));
    pthread_condattr_t attr;
    int err = t != NULL ? 0 : ENOMEM;

    if (t == NULL) {
        log_msg(LOG_ERROR, "cannot start reading --upstream: %s", strerror(err));
        return NULL;
    }
    t->cfg = cfg;
    t->wake = wake;
    t->wake_ctx = ctx;
    upstream_init(&t->upstream, cfg->upstream, cfg->upstream_ca_file, cfg->upstream_token_file, cfg->issuers.items[0],
                  (long)cfg->upstream_timeout * 1000);
    t->upstream.warn = publish_log_warning;
    mirror_init(&t->mirror, cfg->upstream_refresh_interval, cfg->upstream_max_staleness,
                (uint64_t)clock_now_ms() ^ (uint64_t)time(NULL) << 20, clock_now_ms());
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cond, &attr);
    pthread_condattr_destroy(&attr);
    atomic_store(&metrics_process.upstream_enabled, 1);
    mirror_thread_report(t, NULL);
    if ((err = pthread_create(&t->thread, NULL, mirror_thread_main, t)) != 0) {
        log_msg(LOG_ERROR, "cannot start reading --upstream: %s", strerror(err));
        mirror_thread_free(t);
        return NULL;
    }
    log_msg(LOG_INFO, "mirroring --upstream %s%s every %lus (token %s, CA %s)", cfg->upstream,
            cfg->upstream_in_cluster ? " (in-cluster)" : "", cfg->upstream_refresh_interval,
            cfg->upstream_token_file ? cfg->upstream_token_file : "none",
            cfg->upstream_ca_file ? cfg->upstream_ca_file : "the system's");
    return t;
}

struct keyset *mirror_thread_take(struct mirror_thread *t)
{
    struct keyset *ks;

    pthread_mutex_lock(&t->mu);
    ks = t->fresh;
    t->fresh = NULL;
    pthread_mutex_unlock(&t->mu);
    return ks;
}

void mirror_thread_hurry(struct mirror_thread *t)
{
    pthread_mutex_lock(&t->mu);
    t->hurry = 1;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->mu);
}

int mirror_thread_stop(struct mirror_thread *t, unsigned timeout_ms)
{
    struct timespec deadline;

    pthread_mutex_lock(&t->mu);
    t->stop = 1;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->mu);
    deadline = clock_deadline(CLOCK_REALTIME, timeout_ms);
    if (pthread_timedjoin_np(t->thread, NULL, &deadline) != 0) {
        log_msg(LOG_WARN, "the --upstream read under way did not end within %ums; exiting without it", timeout_ms);
        return -1;
    }
    mirror_thread_free(t);
    return 0;
}
