/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/mirror_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keys/upstream.h"
#include "publish/publish.h"
#include "server/obs/metrics.h"
#include "server/reload/mirror.h"
#include "util/clock.h"
#include "util/log.h"

/* The longest a pool thread sleeps with nothing due: entries set while
 * it sleeps signal it anyway; this only bounds a missed signal. */
#define MIRROR_POOL_IDLE_MS 60000

struct mirror_entry {
    /* The settings, owned (the issuer's config may be freed first). */
    char *url, *ca_file, *token_file, *issuer, *log_prefix;
    unsigned long refresh, staleness, timeout;
    struct upstream upstream;                                   /* the reading thread's alone while in_flight */
    struct mirror mirror;                                       /* under the pool's lock */
    struct keyset *fresh;                                       /* a new good set not taken yet */
    struct keyset *last;                                        /* the last good set, for mirror_pool_last */
    char message[sizeof(((struct upstream_read *)0)->message)]; /* the last read's */
    int gone;                                                   /* removed while being read: freed after it */
};

struct mirror_pool {
    void (*wake)(void *ctx);
    void *wake_ctx;
    pthread_t threads[MIRROR_POOL_THREADS];
    size_t nthreads;
    atomic_size_t running; /* threads not yet ended, for the stop's wait */
    pthread_mutex_t mu;    /* guards what follows and every entry's mirror */
    pthread_cond_t cond;   /* an entry was set, a hurry or the stop */
    pthread_cond_t ended;  /* a thread ended */
    struct mirror_entry **entries;
    size_t count, cap;
    int hurry;
    int stop;
};

static void mirror_entry_free(struct mirror_entry *e)
{
    if (e == NULL)
        return;
    upstream_clear(&e->upstream);
    mirror_clear(&e->mirror);
    keyset_free(e->fresh);
    keyset_free(e->last);
    free(e->url);
    free(e->ca_file);
    free(e->token_file);
    free(e->issuer);
    free(e->log_prefix);
    free(e);
}

/* strdup of s, NULL staying NULL; *failed set when out of memory. */
static char *mirror_pool_dup(const char *s, int *failed)
{
    char *d = s != NULL ? strdup(s) : NULL;

    *failed |= s != NULL && d == NULL;
    return d;
}

/* Whether two optional strings are equal. */
static int mirror_pool_same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Whether e reads what cfg's upstream settings name. */
static int mirror_pool_same(const struct mirror_entry *e, const struct config *cfg)
{
    return mirror_pool_same_str(e->url, cfg->upstream) && mirror_pool_same_str(e->ca_file, cfg->upstream_ca_file) &&
           mirror_pool_same_str(e->token_file, cfg->upstream_token_file) &&
           mirror_pool_same_str(e->issuer, cfg->issuers.items[0]) && e->refresh == cfg->upstream_refresh_interval &&
           e->staleness == cfg->upstream_max_staleness && e->timeout == cfg->upstream_timeout;
}

/* A new entry for cfg's upstream, first read due at once, or NULL. */
static struct mirror_entry *mirror_entry_new(const char *log_prefix, const struct config *cfg)
{
    struct mirror_entry *e = calloc(1, sizeof(*e));
    int failed = e == NULL;
    int64_t now = clock_now_ms();

    if (e == NULL)
        return NULL;
    e->url = mirror_pool_dup(cfg->upstream, &failed);
    e->ca_file = mirror_pool_dup(cfg->upstream_ca_file, &failed);
    e->token_file = mirror_pool_dup(cfg->upstream_token_file, &failed);
    e->issuer = mirror_pool_dup(cfg->issuers.items[0], &failed);
    e->log_prefix = mirror_pool_dup(log_prefix, &failed);
    e->refresh = cfg->upstream_refresh_interval;
    e->staleness = cfg->upstream_max_staleness;
    e->timeout = cfg->upstream_timeout;
    upstream_init(&e->upstream, e->url, e->ca_file, e->token_file, e->issuer, (long)e->timeout * 1000);
    e->upstream.warn = publish_log_warning;
    mirror_init(&e->mirror, e->refresh, e->staleness, (uint64_t)now ^ (uint64_t)time(NULL) << 20 ^ (uintptr_t)e, now);
    if (failed) {
        mirror_entry_free(e);
        return NULL;
    }
    return e;
}

/* Takes e out of p's list (p->mu held); frees it unless a thread reads it
 * now (that thread frees it after the read). */
static void mirror_pool_drop(struct mirror_pool *p, struct mirror_entry *e)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->entries[i] == e) {
            p->entries[i] = p->entries[--p->count];
            break;
        }
    if (e->mirror.in_flight)
        e->gone = 1;
    else
        mirror_entry_free(e);
}

/* The entry due first that no thread reads (p->mu held), or NULL. */
static struct mirror_entry *mirror_pool_first(const struct mirror_pool *p)
{
    struct mirror_entry *first = NULL;

    for (size_t i = 0; i < p->count; i++)
        if (!p->entries[i]->mirror.in_flight &&
            (first == NULL || mirror_next(&p->entries[i]->mirror) < mirror_next(&first->mirror)))
            first = p->entries[i];
    return first;
}

/* Whether a read changed what the reload thread shows of e: a new set,
 * or any of mirror_done's log bits (a failure, a recovery, a mismatch). */
static int mirror_pool_read_one(struct mirror_pool *p, struct mirror_entry *e)
{
    struct upstream_read read;
    unsigned bits;
    int changed;
    struct keyset *copy = NULL;
    char err[256];

    upstream_fetch(&e->upstream, &read); /* unlocked: the upstream is this thread's while in_flight */
    atomic_fetch_add(&metrics_process.upstream_fetches[read.result], 1);
    if (read.keys != NULL &&
        ((copy = keyset_new()) == NULL || keyset_add_all(copy, read.keys, NULL, NULL, err, sizeof(err)) != 0)) {
        keyset_free(copy); /* out of memory: a changed file's reloader waits for the next read */
        copy = NULL;
    }
    pthread_mutex_lock(&p->mu);
    bits = mirror_done(&e->mirror, &read, clock_now_ms(), time(NULL));
    memcpy(e->message, read.message, sizeof(e->message));
    changed = bits != 0 || read.keys != NULL;
    if (!e->gone) { /* under the lock: once mirror_done ended the read, the reload thread may free e */
        log_thread_prefix(e->log_prefix);
        mirror_log(&e->mirror, e->url, &read, bits);
        log_thread_prefix(NULL);
    }
    if (read.keys != NULL) {
        keyset_free(e->fresh);
        e->fresh = read.keys;
        read.keys = NULL;
        keyset_free(e->last);
        e->last = copy;
    }
    if (e->gone) {
        pthread_mutex_unlock(&p->mu);
        upstream_read_clear(&read);
        mirror_entry_free(e);
        return 0;
    }
    pthread_mutex_unlock(&p->mu);
    upstream_read_clear(&read);
    return changed;
}

static void *mirror_pool_main(void *arg)
{
    struct mirror_pool *p = arg;

    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        int64_t now = clock_now_ms(), due;
        struct mirror_entry *e;
        if (p->hurry)
            for (size_t i = 0; i < p->count; i++)
                mirror_hurry(&p->entries[i]->mirror, now);
        p->hurry = 0;
        e = mirror_pool_first(p);
        if (e == NULL || !mirror_start(&e->mirror, now)) {
            struct timespec at;
            due = e != NULL ? mirror_next(&e->mirror) : now + MIRROR_POOL_IDLE_MS;
            at = (struct timespec){.tv_sec = (time_t)(due / 1000), .tv_nsec = (long)(due % 1000) * 1000000};
            pthread_cond_timedwait(&p->cond, &p->mu, &at);
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        if (mirror_pool_read_one(p, e))
            p->wake(p->wake_ctx);
        pthread_mutex_lock(&p->mu);
        pthread_cond_signal(&p->cond); /* another thread may wait for this entry's next read */
    }
    atomic_fetch_sub(&p->running, 1);
    pthread_cond_broadcast(&p->ended);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void mirror_pool_free(struct mirror_pool *p)
{
    for (size_t i = 0; i < p->count; i++)
        mirror_entry_free(p->entries[i]);
    free(p->entries);
    pthread_cond_destroy(&p->cond);
    pthread_cond_destroy(&p->ended);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

struct mirror_pool *mirror_pool_start(void (*wake)(void *ctx), void *ctx)
{
    struct mirror_pool *p = calloc(1, sizeof(*p));
    pthread_condattr_t attr;
    int err = 0;

    if (p == NULL) {
        log_msg(LOG_ERROR, "cannot start the fleet's mirror: out of memory");
        return NULL;
    }
    p->wake = wake;
    p->wake_ctx = ctx;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cond, &attr);
    pthread_cond_init(&p->ended, &attr);
    pthread_condattr_destroy(&attr);
    atomic_init(&p->running, 0);
    pthread_mutex_lock(&p->mu);
    for (; p->nthreads < MIRROR_POOL_THREADS; p->nthreads++) {
        if ((err = pthread_create(&p->threads[p->nthreads], NULL, mirror_pool_main, p)) != 0)
            break; /* fewer threads: the others serve every entry */
        atomic_fetch_add(&p->running, 1);
    }
    pthread_mutex_unlock(&p->mu);
    if (p->nthreads == 0) {
        log_msg(LOG_ERROR, "cannot start the fleet's mirror: %s", strerror(err));
        mirror_pool_free(p);
        return NULL;
    }
    return p;
}

struct mirror_entry *mirror_pool_set(struct mirror_pool *p, struct mirror_entry *old, const char *log_prefix,
                                     const struct config *cfg)
{
    struct mirror_entry *e;

    if (old != NULL && mirror_pool_same(old, cfg))
        return old;
    if ((e = mirror_entry_new(log_prefix, cfg)) == NULL) {
        log_msg(LOG_ERROR, "%scannot mirror %s: out of memory", log_prefix, cfg->upstream);
        mirror_pool_remove(p, old);
        return NULL;
    }
    pthread_mutex_lock(&p->mu);
    if (old != NULL)
        mirror_pool_drop(p, old);
    if (p->count == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        struct mirror_entry **grown = realloc(p->entries, cap * sizeof(*grown));
        if (grown == NULL) {
            pthread_mutex_unlock(&p->mu);
            log_msg(LOG_ERROR, "%scannot mirror %s: out of memory", log_prefix, cfg->upstream);
            mirror_entry_free(e);
            return NULL;
        }
        p->entries = grown;
        p->cap = cap;
    }
    p->entries[p->count++] = e;
    atomic_store(&metrics_process.upstream_enabled, 1);
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mu);
    log_msg(LOG_INFO, "%smirroring upstream %s every %lus (token %s, CA %s)", log_prefix, e->url, e->refresh,
            e->token_file ? e->token_file : "none", e->ca_file ? e->ca_file : "the system's");
    return e;
}

void mirror_pool_remove(struct mirror_pool *p, struct mirror_entry *e)
{
    if (e == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    mirror_pool_drop(p, e);
    pthread_mutex_unlock(&p->mu);
}

struct keyset *mirror_pool_take(struct mirror_pool *p, struct mirror_entry *e)
{
    struct keyset *ks;

    pthread_mutex_lock(&p->mu);
    ks = e->fresh;
    e->fresh = NULL;
    pthread_mutex_unlock(&p->mu);
    return ks;
}

struct keyset *mirror_pool_last(struct mirror_pool *p, const struct mirror_entry *e, const struct config *cfg)
{
    struct keyset *copy = NULL;
    char err[256];

    if (e == NULL || !mirror_pool_same(e, cfg))
        return NULL;
    pthread_mutex_lock(&p->mu);
    if (e->last != NULL && (copy = keyset_new()) != NULL &&
        keyset_add_all(copy, e->last, NULL, NULL, err, sizeof(err)) != 0) {
        keyset_free(copy);
        copy = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    return copy;
}

int mirror_pool_problem(struct mirror_pool *p, const struct mirror_entry *e, char *why, size_t len,
                        struct mirror_status *st)
{
    int ready;

    pthread_mutex_lock(&p->mu);
    mirror_status_of(&e->mirror, e->url, e->message, st);
    pthread_mutex_unlock(&p->mu);
    ready = mirror_ready(st, time(NULL), why, len);
    if (ready && st->last_failed) /* within --upstream-max-staleness, but the issuer's operator wants to know now */
        snprintf(why, len, "%s (%s)", st->last_error, st->last_result);
    return !ready || st->last_failed;
}

void mirror_pool_hurry(struct mirror_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->hurry = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
}

int mirror_pool_stop(struct mirror_pool *p, unsigned timeout_ms)
{
    struct timespec deadline = clock_deadline(CLOCK_MONOTONIC, timeout_ms);

    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cond);
    while (atomic_load(&p->running) > 0)
        if (pthread_cond_timedwait(&p->ended, &p->mu, &deadline) == ETIMEDOUT)
            break;
    if (atomic_load(&p->running) > 0) {
        pthread_mutex_unlock(&p->mu);
        log_msg(LOG_WARN, "an upstream read under way did not end within %ums; exiting without it", timeout_ms);
        return -1;
    }
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    mirror_pool_free(p);
    return 0;
}
