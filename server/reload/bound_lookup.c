/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/bound_lookup.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/obs/metrics.h"
#include "util/clock.h"
#include "util/http_client.h"
#include "util/log.h"

/* Buckets of the hash table: a power of two, some for each of the
 * largest cache's entries. */
#define BOUND_BUCKETS (1u << 16)

/* One object: its last answer, or the request under way for it. Sized
 * to its key: the cache may hold many. */
struct bound_entry {
    struct bound_entry *hnext;         /* its bucket's chain */
    struct bound_entry *older, *newer; /* the age list (by last answer) */
    struct bound_entry *qnext;         /* the queue of requests to make */
    int fetching, filled;
    int64_t expires_ms;
    struct bound_object obj;
    struct bound_wait_slot *waiters; /* reviews waiting for the request under way */
    char key[];                      /* bound_key's: the object, for bound_ref_of_key */
};

struct bound_lookup {
    struct bound_lookup_params p;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct bound_entry **buckets;
    struct bound_entry *oldest, *newest;
    struct bound_entry *qhead, *qtail;
    size_t count;
    pthread_t *threads;
    size_t nthreads;
    atomic_int stop;
    /* reachability: the last answer's, and the object a probe asks for */
    int unreachable, probing;
    struct bound_ref probe;
    int64_t next_probe_ms;
    char why[sizeof(((struct bound_object *)0)->error)];
};

static _Atomic(struct bound_lookup *) bound_current;

/* The lookup thread's connection to the API server, kept between its
 * lookups: a TLS connection of its own per lookup cost more CPU than all
 * the rest of it (about 1.5 ms), and a fleet's refreshes are thousands a
 * second. Per thread because the fetch hook is shared by the threads and
 * a connection serves one request at a time. */
static _Thread_local struct http_client_conn *bound_conn;

/* FNV-1a: cheap, and the keys are not chosen by an attacker who could
 * flood one bucket (they come from tokens the server verified). */
static size_t bound_hash(const char *key)
{
    uint64_t h = 1469598103934665603ull;

    for (; *key; key++)
        h = (h ^ (unsigned char)*key) * 1099511628211ull;
    return (size_t)(h & (BOUND_BUCKETS - 1));
}

static struct bound_entry *bound_find(struct bound_lookup *l, const char *key, size_t b)
{
    for (struct bound_entry *e = l->buckets[b]; e != NULL; e = e->hnext)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

static void bound_age_unlink(struct bound_lookup *l, struct bound_entry *e)
{
    *(e->older ? &e->older->newer : &l->oldest) = e->newer;
    *(e->newer ? &e->newer->older : &l->newest) = e->older;
    e->older = e->newer = NULL;
}

static void bound_age_append(struct bound_lookup *l, struct bound_entry *e)
{
    e->older = l->newest;
    e->newer = NULL;
    *(l->newest ? &l->newest->newer : &l->oldest) = e;
    l->newest = e;
}

/* Makes room for one more entry: drops the entry answered longest ago
 * that no request is under way for. */
static void bound_evict(struct bound_lookup *l)
{
    struct bound_entry *e = l->oldest, **pp;

    while (e != NULL && e->fetching)
        e = e->newer;
    if (e == NULL)
        return;
    for (pp = &l->buckets[bound_hash(e->key)]; *pp != e; pp = &(*pp)->hnext)
        ;
    *pp = e->hnext;
    bound_age_unlink(l, e);
    l->count--;
    free(e);
}

/* The entry of r, created (empty) when there is none; NULL when out of memory. */
static struct bound_entry *bound_entry_of(struct bound_lookup *l, const char *key)
{
    size_t b = bound_hash(key), len = strlen(key);
    struct bound_entry *e = bound_find(l, key, b);

    if (e != NULL)
        return e;
    if (l->count >= l->p.max_entries)
        bound_evict(l);
    if ((e = calloc(1, sizeof(*e) + len + 1)) == NULL)
        return NULL;
    memcpy(e->key, key, len + 1);
    e->hnext = l->buckets[b];
    l->buckets[b] = e;
    bound_age_append(l, e);
    l->count++;
    return e;
}

/* Queues a request for e, whose answer w's slot i waits for. */
static void bound_attach(struct bound_lookup *l, struct bound_entry *e, struct bound_wait *w, size_t i)
{
    struct bound_wait_slot *s = &w->slots[i];

    s->wait = w;
    s->index = i;
    s->next = e->waiters;
    e->waiters = s;
    if (e->fetching)
        return;
    e->fetching = 1;
    e->qnext = NULL;
    *(l->qtail ? &l->qtail->qnext : &l->qhead) = e;
    l->qtail = e;
    pthread_cond_signal(&l->cond);
}

int bound_lookup_get(struct bound_lookup *l, const struct bound_ref *refs, size_t n, int64_t now_ms,
                     struct bound_wait *w, struct bound_object *out, unsigned *hits)
{
    struct bound_object *dst = w != NULL ? w->out : out;
    size_t missing = 0;
    char key[BOUND_KEY_MAX];

    *hits = 0;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < n; i++) {
        struct bound_entry *e;
        bound_key(&refs[i], key, sizeof(key));
        e = w != NULL ? bound_entry_of(l, key) : bound_find(l, key, bound_hash(key));
        if (e != NULL && e->filled && now_ms < e->expires_ms) {
            dst[i] = e->obj;
            (*hits)++;
            continue;
        }
        if (w == NULL)
            break;
        if (e == NULL || atomic_load(&l->stop)) { /* answered as an API server that failed */
            memset(&dst[i], 0, sizeof(dst[i]));
            dst[i].state = BOUND_FAILED;
            snprintf(dst[i].error, sizeof(dst[i].error), "%s",
                     e == NULL ? "out of memory" : "the server is shutting down");
            continue;
        }
        missing++;
        bound_attach(l, e, w, i);
    }
    if (w != NULL)
        atomic_store(&w->pending, missing);
    pthread_mutex_unlock(&l->mu);
    return w != NULL ? missing == 0 : *hits == n;
}

/* The latency histogram and the counts of the lookups' outcomes. */
static void bound_count(const struct bound_object *o, int64_t ms)
{
    atomic_fetch_add(&metrics_process.bound_lookups[o->state], 1);
    atomic_fetch_add(&metrics_process.bound_lookup_latency[metrics_bucket_of((uint64_t)ms * 1000)], 1);
    atomic_fetch_add(&metrics_process.bound_lookup_latency_sum_us, (uint64_t)ms * 1000);
}

/* Reachability after an answer for r (the lock held): logged when it
 * changes, /readyz and the gauge follow it. */
static void bound_reach(struct bound_lookup *l, const struct bound_ref *r, const struct bound_object *o, int64_t now)
{
    int down = o->state == BOUND_FAILED && o->unreachable;

    if (down && !l->unreachable)
        log_msg(LOG_WARN,
                "--token-review-check-bound-objects: the API server cannot be reached (%s): reviews of tokens whose "
                "objects are not cached are refused",
                o->error);
    else if (!down && l->unreachable)
        log_msg(LOG_INFO, "--token-review-check-bound-objects: the API server answers again");
    if (down) {
        l->probe = *r;
        snprintf(l->why, sizeof(l->why), "%s", o->error);
        l->next_probe_ms = now + l->p.retry_ms;
    }
    l->unreachable = down;
    atomic_store(&metrics_process.bound_api_reachable, !down);
}

/* Asks for r and counts it. */
static void bound_fetch(struct bound_lookup *l, const struct bound_ref *r, struct bound_object *o)
{
    int64_t start = clock_now_ms();

    memset(o, 0, sizeof(*o));
    l->p.fetch(l->p.fetch_ctx, r, o);
    bound_count(o, clock_now_ms() - start);
}

/* Hands the reviews waiting for e their part (the lock held on entry
 * and on return, not while done runs), reading nothing of a wait after
 * its count went down: its owner may free it from then on. */
static void bound_deliver(struct bound_lookup *l, struct bound_entry *e, const struct bound_object *o)
{
    struct bound_wait_slot *s = e->waiters, *next;

    e->waiters = NULL;
    for (struct bound_wait_slot *t = s; t != NULL; t = t->next)
        t->wait->out[t->index] = *o;
    pthread_mutex_unlock(&l->mu);
    for (; s != NULL; s = next) {
        struct bound_wait *w = s->wait;
        next = s->next;
        if (atomic_fetch_sub(&w->pending, 1) == 1)
            w->done(w);
    }
    pthread_mutex_lock(&l->mu);
}

/* Takes the entry at the head of the queue off it. */
static struct bound_entry *bound_dequeue(struct bound_lookup *l)
{
    struct bound_entry *e = l->qhead;

    l->qhead = e->qnext;
    if (l->qhead == NULL)
        l->qtail = NULL;
    return e;
}

/* Answers the entry at the head of the queue (the lock held on entry and
 * on return, not during the request): its answer is cached, and the
 * reviews waiting for it get it. */
static void bound_serve_one(struct bound_lookup *l)
{
    struct bound_entry *e = bound_dequeue(l);
    struct bound_ref r;
    struct bound_object o;
    int64_t now;

    bound_ref_of_key(e->key, &r);
    pthread_mutex_unlock(&l->mu);
    bound_fetch(l, &r, &o);
    now = clock_now_ms();
    pthread_mutex_lock(&l->mu);
    e->obj = o;
    e->filled = 1;
    e->fetching = 0;
    e->expires_ms =
        now + (o.state == BOUND_FAILED ? (l->p.retry_ms < l->p.ttl_ms ? l->p.retry_ms : l->p.ttl_ms) : l->p.ttl_ms);
    bound_age_unlink(l, e);
    bound_age_append(l, e);
    bound_reach(l, &r, &o, now);
    bound_deliver(l, e, &o);
}

/* Asks again for the object that found the API server unreachable (the
 * lock held on entry and return). */
static void bound_probe(struct bound_lookup *l)
{
    struct bound_ref r = l->probe;
    struct bound_object o;

    l->probing = 1;
    pthread_mutex_unlock(&l->mu);
    bound_fetch(l, &r, &o);
    pthread_mutex_lock(&l->mu);
    l->probing = 0;
    if (l->unreachable)
        bound_reach(l, &r, &o, clock_now_ms());
}

static void *bound_thread(void *arg)
{
    struct bound_lookup *l = arg;

    bound_conn = http_client_conn_new();
    pthread_mutex_lock(&l->mu);
    while (!atomic_load(&l->stop)) {
        if (l->qhead != NULL) {
            bound_serve_one(l);
        } else if (l->unreachable && !l->probing && clock_now_ms() >= l->next_probe_ms) {
            bound_probe(l);
        } else if (l->unreachable && !l->probing) {
            struct timespec until = clock_deadline(CLOCK_MONOTONIC, (unsigned)(l->next_probe_ms - clock_now_ms()));
            pthread_cond_timedwait(&l->cond, &l->mu, &until);
        } else {
            pthread_cond_wait(&l->cond, &l->mu);
        }
    }
    pthread_mutex_unlock(&l->mu);
    http_client_conn_free(bound_conn);
    bound_conn = NULL;
    return NULL;
}

/* The default fetch's context: the configuration, and the flag that
 * cancels a request when the lookup stops. */
struct bound_http {
    const struct config *cfg;
    const atomic_int *cancel;
};

/* GET the object at the --upstream, as keys/upstream.c reads its
 * documents: the token file read again each time, the CA given, the
 * answer capped in size and time. A transport failure is "unreachable". */
static void bound_http_fetch(void *ctx, const struct bound_ref *r, struct bound_object *out)
{
    static const char *const headers[] = {"Accept: application/json", NULL};
    const struct bound_http *h = ctx;
    const char *base = h->cfg->upstream;
    size_t n = strlen(base);
    char url[4096], path[BOUND_KEY_MAX + 64], err[512];
    struct http_response res = {0};
    const struct http_request req = {
        .url = url,
        .ca_file = h->cfg->upstream_ca_file,
        .headers = headers,
        .bearer_file = h->cfg->upstream_token_file,
        .max_body = BOUND_OBJECT_MAX,
        .timeout_ms = (long)h->cfg->upstream_timeout * 1000,
        .connect_timeout_ms = (long)h->cfg->upstream_timeout * 1000,
        .cancel = h->cancel,
        .conn = bound_conn,
    };
    enum http_client_error e;

    while (n > 0 && base[n - 1] == '/')
        n--;
    bound_path(r, path, sizeof(path));
    snprintf(url, sizeof(url), "%.*s%s", (int)n, base, path);
    if ((e = http_client_fetch(&req, &res, err, sizeof(err))) != HTTP_CLIENT_OK) {
        /* the message names the URL (redacted): it goes to the log, the
         * review's error says only what failed */
        log_msg(LOG_DEBUG, "--token-review-check-bound-objects: %s", err);
        out->state = BOUND_FAILED;
        out->unreachable =
            e != HTTP_CLIENT_ERR_REQUEST && e != HTTP_CLIENT_ERR_RESPONSE && e != HTTP_CLIENT_ERR_CANCELLED;
        snprintf(out->error, sizeof(out->error), "%s",
                 e == HTTP_CLIENT_ERR_CANCELLED    ? "the server is shutting down"
                 : e == HTTP_CLIENT_ERR_TIMEOUT    ? "the API server did not answer in time"
                 : e == HTTP_CLIENT_ERR_REQUEST    ? "the request could not be made (the token or CA file)"
                 : e == HTTP_CLIENT_ERR_RESPONSE   ? "the API server's answer was too large or broken"
                 : e == HTTP_CLIENT_ERR_TLS_VERIFY ? "the API server's certificate did not verify"
                                                   : "the API server could not be reached");
    } else {
        bound_object_read(r->kind, res.status, res.body, res.body_len, out);
    }
    http_response_free(&res);
}

void bound_lookup_stop(struct bound_lookup *l)
{
    struct bound_object o = {.state = BOUND_FAILED};

    if (l == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    atomic_store(&l->stop, 1);
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mu);
    for (size_t i = 0; i < l->nthreads; i++)
        pthread_join(l->threads[i], NULL);
    l->nthreads = 0;
    /* what was still queued: its reviews are answered, and refused */
    snprintf(o.error, sizeof(o.error), "the server is shutting down");
    pthread_mutex_lock(&l->mu);
    while (l->qhead != NULL) {
        struct bound_entry *e = bound_dequeue(l);
        e->fetching = 0;
        bound_deliver(l, e, &o);
    }
    pthread_mutex_unlock(&l->mu);
}

void bound_lookup_free(struct bound_lookup *l)
{
    struct bound_entry *e, *next;

    if (l == NULL)
        return;
    bound_lookup_stop(l);
    atomic_store(&bound_current, NULL);
    for (e = l->oldest; e != NULL; e = next) {
        next = e->newer;
        free(e);
    }
    if (l->p.fetch == bound_http_fetch)
        free(l->p.fetch_ctx);
    free(l->threads);
    free(l->buckets);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

struct bound_lookup *bound_lookup_start(const struct bound_lookup_params *p)
{
    struct bound_lookup *l = calloc(1, sizeof(*l));
    struct bound_http *h = NULL;

    if (l == NULL || (l->buckets = calloc(BOUND_BUCKETS, sizeof(*l->buckets))) == NULL)
        goto fail;
    l->p = *p;
    l->p.retry_ms = p->retry_ms > 0 ? p->retry_ms : BOUND_LOOKUP_RETRY_MS;
    l->p.threads = p->threads > 0 ? p->threads : BOUND_LOOKUP_THREADS;
    l->p.max_entries = p->max_entries > 0 ? p->max_entries : BOUND_LOOKUP_MAX_ENTRIES;
    if (p->fetch == NULL) {
        if ((h = calloc(1, sizeof(*h))) == NULL)
            goto fail;
        h->cfg = p->cfg;
        h->cancel = &l->stop;
        l->p.fetch = bound_http_fetch;
        l->p.fetch_ctx = h;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cond, &ca);
    pthread_condattr_destroy(&ca);
    if ((l->threads = calloc(l->p.threads, sizeof(*l->threads))) == NULL) {
        bound_lookup_free(l);
        return NULL;
    }
    for (; l->nthreads < l->p.threads; l->nthreads++)
        if ((errno = pthread_create(&l->threads[l->nthreads], NULL, bound_thread, l)) != 0) {
            log_msg(LOG_ERROR, "cannot start the bound-object lookup threads: %s", strerror(errno));
            bound_lookup_free(l);
            return NULL;
        }
    atomic_store(&metrics_process.bound_enabled, 1);
    atomic_store(&metrics_process.bound_api_reachable, 1);
    atomic_store(&bound_current, l);
    return l;
fail:
    log_msg(LOG_ERROR, "out of memory: cannot start the bound-object lookup");
    if (l != NULL)
        free(l->buckets);
    free(l);
    free(h);
    return NULL;
}

struct bound_lookup *bound_lookup_current(void)
{
    return atomic_load(&bound_current);
}

int bound_lookup_ready(char *why, size_t len)
{
    struct bound_lookup *l = atomic_load(&bound_current);
    int ok = 1;

    if (l == NULL)
        return 1;
    pthread_mutex_lock(&l->mu);
    if (l->unreachable) {
        ok = 0;
        snprintf(why, len, "--token-review-check-bound-objects: %s", l->why);
    }
    pthread_mutex_unlock(&l->mu);
    return ok;
}
