/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status.c: see status.h.
 */
#include "push/status.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/redact.h"

static pthread_mutex_t push_status_mu = PTHREAD_MUTEX_INITIALIZER;
static struct push_status *push_statuses;
static size_t push_nstatuses;

const char *push_result_name(enum push_result r)
{
    static const char *const names[PUSH_NRESULTS] = {"written", "unchanged", "yielded", "failed"};

    return (size_t)r < PUSH_NRESULTS ? names[r] : "unknown";
}

enum push_result push_result_of(const struct push_report *rep)
{
    if (rep->outcome == PUSH_FAILED)
        return PUSH_RESULT_FAILED;
    if (rep->outcome == PUSH_YIELDED)
        return PUSH_RESULT_YIELDED;
    return rep->written > 0 ? PUSH_RESULT_WRITTEN : PUSH_RESULT_UNCHANGED;
}

unsigned push_status_apply(struct push_status *st, const struct push_report *rep, int settled, time_t now)
{
    enum push_result r = push_result_of(rep);
    unsigned repaired = settled ? rep->written : 0;

    st->last_attempt = now;
    st->last_result = r;
    st->results[r]++;
    st->drift_repairs += repaired;
    snprintf(st->last_error, sizeof(st->last_error), "%s", r == PUSH_RESULT_FAILED ? rep->err : "");
    snprintf(st->remote_generation, sizeof(st->remote_generation), "%s",
             r == PUSH_RESULT_YIELDED ? rep->remote_generation : "");
    if (r != PUSH_RESULT_FAILED)
        st->last_current = now;
    return repaired;
}

size_t push_status_count(void)
{
    size_t n;

    pthread_mutex_lock(&push_status_mu);
    n = push_nstatuses;
    pthread_mutex_unlock(&push_status_mu);
    return n;
}

int push_status_get(size_t i, struct push_status *out)
{
    int rc = -1;

    pthread_mutex_lock(&push_status_mu);
    if (i < push_nstatuses) {
        *out = push_statuses[i];
        rc = 0;
    }
    pthread_mutex_unlock(&push_status_mu);
    return rc;
}

int push_status_init(const char *const *urls, size_t n)
{
    struct push_status *st = calloc(n ? n : 1, sizeof(*st));

    if (st == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        redact_url(urls[i], st[i].target, PUSH_TARGET_SHOWN_MAX);
    pthread_mutex_lock(&push_status_mu);
    free(push_statuses);
    push_statuses = st;
    push_nstatuses = n;
    pthread_mutex_unlock(&push_status_mu);
    return 0;
}

void push_status_put(size_t i, const struct push_status *st)
{
    pthread_mutex_lock(&push_status_mu);
    if (i < push_nstatuses)
        push_statuses[i] = *st;
    pthread_mutex_unlock(&push_status_mu);
}

void push_status_reset(void)
{
    pthread_mutex_lock(&push_status_mu);
    free(push_statuses);
    push_statuses = NULL;
    push_nstatuses = 0;
    pthread_mutex_unlock(&push_status_mu);
}
