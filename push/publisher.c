/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publisher.c: see publisher.h.
 */
#include "push/publisher.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "push/plan.h"
#include "push/status.h"
#include "push/sync.h"
#include "push/target.h"
#include "util/clock.h"
#include "util/log.h"

/* One target and where it stands. */
struct push_slot {
    struct push_target target;
    struct push_schedule schedule;
    struct push_status status;
    char yielded_to[PUSH_GEN_MAX]; /* the newer generation last logged, so that each is logged once */
};

struct push_publisher {
    const struct config *cfg;
    struct push_slot *slots;
    size_t nslots;
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* on CLOCK_MONOTONIC: an offer or the stop */
    struct snapshot *pending; /* offered, not taken yet (mu) */
    int64_t pending_gen;      /* its generation (mu) */
    int64_t last_gen;         /* the last generation given (mu): each new one is larger */
    struct snapshot *current; /* the thread's */
    int64_t current_gen;
    atomic_int stop; /* also cancels a transfer under way */
    unsigned seed;   /* for the jitter */
    pthread_t thread;
    int started;
};

/* The generation of a key set got now (mu held): the wall clock's
 * millisecond, or one more than the last one given when the clock has not
 * moved on (or went back), so that a newer set from this process is
 * always newer. */
static int64_t push_publisher_generation(struct push_publisher *p)
{
    int64_t now = clock_wall_ms();

    p->last_gen = now > p->last_gen ? now : p->last_gen + 1;
    return p->last_gen;
}

void push_publisher_offer(struct push_publisher *p, struct snapshot *s)
{
    struct snapshot *dropped;

    if (p == NULL)
        return;
    snapshot_ref(s);
    pthread_mutex_lock(&p->mu);
    dropped = p->pending;
    p->pending = s;
    p->pending_gen = push_publisher_generation(p);
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    snapshot_release(dropped);
}

/* Logs what an attempt on slot did, once per change of what there is to say. */
static void push_log(struct push_slot *slot, const struct push_docs *docs, const struct push_report *rep, int settled,
                     int64_t retry_ms)
{
    const char *url = slot->target.url;

    if (rep->outcome == PUSH_FAILED) {
        log_msg(LOG_WARN, "publishing to %s failed: %s; retrying in %llds", url, rep->err,
                (long long)(retry_ms + 999) / 1000);
        return;
    }
    for (size_t i = 0; i < PUSH_NOBJECTS; i++) {
        if (rep->actions[i] != PUSH_ACT_WRITTEN)
            continue;
        if (settled)
            log_msg(LOG_WARN, "%s: %s was %s; repaired (drift)", url, docs->keys[i], rep->why[i]);
        else
            log_msg(LOG_INFO, "%s: %s written (%s), generation %s", url, docs->keys[i], rep->why[i], docs->generation);
    }
    if (rep->outcome == PUSH_YIELDED && strcmp(slot->yielded_to, rep->remote_generation) != 0)
        log_msg(LOG_INFO,
                "%s holds a newer key set (generation %s) than this process (generation %s); leaving it there", url,
                rep->remote_generation, docs->generation);
    else if (rep->outcome == PUSH_OK && rep->written == 0 && !settled)
        log_msg(LOG_INFO, "%s already holds the published documents (generation %s)", url, docs->generation);
    snprintf(slot->yielded_to, sizeof(slot->yielded_to), "%s",
             rep->outcome == PUSH_YIELDED ? rep->remote_generation : "");
}

/* One attempt on slot: push (or check) the current snapshot. */
static void push_attempt(struct push_publisher *p, struct push_slot *slot)
{
    struct push_docs docs;
    struct push_report rep;
    int settled = slot->schedule.settled;
    int64_t now_ms, before;

    push_docs_init(&docs, p->current, p->current_gen);
    push_sync(slot->target.ops, slot->target.store, &docs, &rep);
    if (atomic_load(&p->stop))
        return; /* cancelled: nothing to record */
    now_ms = clock_now_ms();
    snprintf(slot->status.generation, sizeof(slot->status.generation), "%s", docs.generation);
    push_status_apply(&slot->status, &rep, settled, time(NULL));
    push_status_put((size_t)(slot - p->slots), &slot->status);
    before = now_ms;
    push_schedule_done(&slot->schedule, rep.outcome, now_ms, (int64_t)p->cfg->publish_check_interval * 1000,
                       (double)rand_r(&p->seed) / ((double)RAND_MAX + 1));
    push_log(slot, &docs, &rep, settled, slot->schedule.due_ms - before);
}

/* Takes the newest offered snapshot, if any (mu held): every target is due
 * at once for it. */
static void push_take_offer(struct push_publisher *p)
{
    if (p->pending == NULL)
        return;
    snapshot_release(p->current);
    p->current = p->pending;
    p->current_gen = p->pending_gen;
    p->pending = NULL;
    for (size_t i = 0; i < p->nslots; i++)
        push_schedule_snapshot(&p->slots[i].schedule, clock_now_ms());
}

/* The earliest due time of any target. */
static int64_t push_next_due(const struct push_publisher *p)
{
    int64_t next = INT64_MAX;

    for (size_t i = 0; i < p->nslots; i++)
        if (p->slots[i].schedule.due_ms < next)
            next = p->slots[i].schedule.due_ms;
    return next;
}

/* Waits (mu held) until due_ms, an offer or the stop. */
static void push_wait(struct push_publisher *p, int64_t due_ms)
{
    struct timespec at = {.tv_sec = (time_t)(due_ms / 1000), .tv_nsec = (long)(due_ms % 1000) * 1000000L};

    if (p->pending == NULL && !atomic_load(&p->stop))
        pthread_cond_timedwait(&p->cv, &p->mu, &at);
}

static void *push_main(void *arg)
{
    struct push_publisher *p = arg;

    pthread_mutex_lock(&p->mu);
    while (!atomic_load(&p->stop)) {
        int64_t now;
        push_take_offer(p);
        /* An --upstream not read yet: nothing to push (empty documents would
         * overwrite good ones) until the first set is offered. */
        if (p->current->unavailable) {
            if (p->pending == NULL && !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        now = clock_now_ms();
        if (push_next_due(p) > now) {
            push_wait(p, push_next_due(p));
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        for (size_t i = 0; i < p->nslots && !atomic_load(&p->stop); i++)
            if (push_schedule_due(&p->slots[i].schedule, clock_now_ms()))
                push_attempt(p, &p->slots[i]);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Frees what start set up; the thread is not running. */
static void push_publisher_free(struct push_publisher *p)
{
    for (size_t i = 0; i < p->nslots; i++)
        push_target_close(&p->slots[i].target);
    free(p->slots);
    snapshot_release(p->pending);
    snapshot_release(p->current);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    push_status_reset();
    free(p);
}

/* Opens every target and registers its status. */
static int push_open_targets(struct push_publisher *p, char *err, size_t errlen)
{
    const struct config_strlist *urls = &p->cfg->publish_to;
    char why[1024];

    if ((p->slots = calloc(urls->count, sizeof(*p->slots))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < urls->count; i++, p->nslots++) {
        if (push_target_open(p->cfg, urls->items[i], &p->stop, &p->slots[i].target, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "--publish-to %s", why);
            return -1;
        }
        push_schedule_init(&p->slots[i].schedule, clock_now_ms());
        snprintf(p->slots[i].status.target, sizeof(p->slots[i].status.target), "%s", p->slots[i].target.url);
    }
    if (push_status_init((const char *const *)urls->items, urls->count) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

struct push_publisher *push_publisher_start(const struct config *cfg, struct snapshot *first, char *err, size_t errlen)
{
    struct push_publisher *p = calloc(1, sizeof(*p));
    pthread_condattr_t attr;

    if (p == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->cfg = cfg;
    p->seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    p->current = snapshot_ref(first);
    p->current_gen = push_publisher_generation(p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &attr);
    pthread_condattr_destroy(&attr);
    if (push_open_targets(p, err, errlen) != 0) {
        push_publisher_free(p);
        return NULL;
    }
    if ((errno = pthread_create(&p->thread, NULL, push_main, p)) != 0) {
        snprintf(err, errlen, "cannot start the publisher thread: %s", strerror(errno));
        push_publisher_free(p);
        return NULL;
    }
    p->started = 1;
    return p;
}

void push_publisher_stop(struct push_publisher *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (p->started)
        pthread_join(p->thread, NULL);
    push_publisher_free(p);
}
