/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Threading: the struct accesslog is shared. Its queue, pending flag and
 * stopping flag are guarded by mu; queued_bytes and the counters of lines
 * not written (metrics_process's, for /metrics) are atomics so workers can
 * add to them without the lock. A struct
 * accesslog_buffer belongs to one worker thread and is never locked; the
 * mutex is taken only when that thread hands a chunk over (per ~64 KiB or
 * per ACCESSLOG_FLUSH_MS), never per request.
 */
#include "server/obs/accesslog.h"

#include "server/obs/metrics.h"
#include "util/clock.h"
#include "util/jsonw.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A buffer this full is handed over without waiting for the timer. */
#define ACCESSLOG_CHUNK (64 * 1024)
/* Unwritten bytes beyond which new chunks are dropped, not queued. */
#define ACCESSLOG_QUEUE_MAX (16 * 1024 * 1024)
/* Lines not written are logged at most this often, as a count: the log
 * that says so must not become the next flood. */
#define ACCESSLOG_REPORT_MS 10000

/* Lines handed to the writer: one allocation, data inline. */
struct chunk {
    struct chunk *next;
    size_t len;
    char data[];
};

struct accesslog {
    int fd;
    int close_fd; /* 0 for standard output, which is not ours to close */
    pthread_t writer;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct chunk *head, *tail; /* under mu */
    int stopping;              /* under mu */
    atomic_size_t queued_bytes;
    /* The writer's: what it last reported, and when (clock_now_ms). */
    uint64_t reported_dropped, reported_lost;
    int64_t reported_at;
};

struct accesslog_buffer {
    struct accesslog *log;
    struct jsonw w; /* reused: its length goes back to 0 after each flush */
    size_t lines;
    time_t stamp_sec; /* the second stamp[] shows, to call gmtime_r once a second */
    char stamp[20];   /* "2026-11-29T23:52:45" */
};

/* Counts newlines, i.e. the lines a failed write lost (a partly written one
 * included). */
static size_t count_lines(const char *p, size_t n)
{
    size_t lines = 0;
    const char *end = p + n;

    while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        lines++;
        p++;
    }
    return lines;
}

/* Writes all of c, retrying partial writes and EINTR; on an error counts
 * what was lost and reports the first error of a run, then carries on. */
static void writer_write(struct accesslog *log, const struct chunk *c, int *failing)
{
    size_t off = 0;

    while (off < c->len) {
        ssize_t n = write(log->fd, c->data + off, c->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (!*failing)
                log_msg(LOG_ERROR, "access log: write failed: %s", n < 0 ? strerror(errno) : "wrote nothing");
            *failing = 1;
            atomic_fetch_add(&metrics_process.access_log_lost, count_lines(c->data + off, c->len - off));
            return;
        }
        off += (size_t)n;
    }
    *failing = 0;
}

/* Logs the lines dropped or lost since the last report, at most once per
 * ACCESSLOG_REPORT_MS unless final (at close). An operator who reads only
 * the log learns that the access log has gaps, and how large. */
static void writer_report(struct accesslog *log, int final)
{
    uint64_t dropped = atomic_load(&metrics_process.access_log_dropped);
    uint64_t lost = atomic_load(&metrics_process.access_log_lost);
    int64_t now = clock_now_ms();

    if ((dropped == log->reported_dropped && lost == log->reported_lost) ||
        (!final && log->reported_at != 0 && now - log->reported_at < ACCESSLOG_REPORT_MS))
        return;
    log_msg(LOG_WARN,
            "access log: %llu lines dropped (the writer fell behind by %d MiB, or memory ran out) and %llu lost to "
            "write errors since the last report; oidc_access_log_dropped_lines_total and "
            "oidc_access_log_lost_lines_total count them",
            (unsigned long long)(dropped - log->reported_dropped), ACCESSLOG_QUEUE_MAX / (1024 * 1024),
            (unsigned long long)(lost - log->reported_lost));
    log->reported_dropped = dropped;
    log->reported_lost = lost;
    log->reported_at = now;
}

/* Takes the whole queue into *list (NULL when ACCESSLOG_REPORT_MS passed
 * with nothing queued, so that drops are still reported). Returns -1 once
 * stopping and nothing is left. */
static int writer_take(struct accesslog *log, struct chunk **list)
{
    struct timespec until = clock_deadline(CLOCK_REALTIME, ACCESSLOG_REPORT_MS);
    int rc = 0;

    pthread_mutex_lock(&log->mu);
    while (log->head == NULL && !log->stopping && rc == 0)
        rc = pthread_cond_timedwait(&log->cond, &log->mu, &until);
    *list = log->head;
    log->head = log->tail = NULL;
    rc = *list == NULL && log->stopping ? -1 : 0;
    pthread_mutex_unlock(&log->mu);
    return rc;
}

/* The writer thread: drains the queue until close, so every chunk handed
 * over before accesslog_close is written. */
static void *writer_main(void *arg)
{
    struct accesslog *log = arg;
    struct chunk *list;
    int failing = 0;

    while (writer_take(log, &list) == 0) {
        while (list != NULL) {
            struct chunk *next = list->next;
            writer_write(log, list, &failing);
            atomic_fetch_sub(&log->queued_bytes, list->len);
            free(list);
            list = next;
        }
        writer_report(log, 0);
    }
    writer_report(log, 1);
    return NULL;
}

/* Starts the writer with every signal blocked, so signals keep going to
 * the threads that handle them. */
static int writer_start(struct accesslog *log)
{
    sigset_t all, old;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&log->writer, NULL, writer_main, log);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* Opens the destination; standard output for "-". */
static int accesslog_open_fd(struct accesslog *log, const char *path, char *err, size_t errlen)
{
    if (strcmp(path, "-") == 0) {
        log->fd = STDOUT_FILENO;
        log->close_fd = 0;
        return 0;
    }
    log->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (log->fd < 0) {
        snprintf(err, errlen, "access log %s: %s", path, strerror(errno));
        return -1;
    }
    log->close_fd = 1;
    return 0;
}

struct accesslog *accesslog_open(const char *path, char *err, size_t errlen)
{
    struct accesslog *log = calloc(1, sizeof(*log));
    int rc;

    if (log == NULL) {
        snprintf(err, errlen, "access log: out of memory");
        return NULL;
    }
    if (accesslog_open_fd(log, path, err, errlen) != 0) {
        free(log);
        return NULL;
    }
    pthread_mutex_init(&log->mu, NULL);
    pthread_cond_init(&log->cond, NULL);
    atomic_init(&log->queued_bytes, 0);
    log->reported_dropped = atomic_load(&metrics_process.access_log_dropped);
    log->reported_lost = atomic_load(&metrics_process.access_log_lost);
    if ((rc = writer_start(log)) != 0) {
        snprintf(err, errlen, "access log: cannot start writer thread: %s", strerror(rc));
        pthread_cond_destroy(&log->cond);
        pthread_mutex_destroy(&log->mu);
        if (log->close_fd)
            close(log->fd);
        free(log);
        return NULL;
    }
    return log;
}

struct accesslog_buffer *accesslog_buffer_new(struct accesslog *log)
{
    struct accesslog_buffer *buf = calloc(1, sizeof(*buf));

    if (buf == NULL)
        return NULL;
    buf->log = log;
    buf->stamp_sec = (time_t)-1;
    return buf;
}

/* Appends "2026-11-29T23:52:45.123456Z" in quotes; gmtime_r (which takes a
 * glibc lock) runs once a second per buffer, not per line. */
static void put_time(struct accesslog_buffer *buf, const struct timeval *tv)
{
    char frac[9];
    long us = (long)tv->tv_usec;

    if (tv->tv_sec != buf->stamp_sec) {
        struct tm tm;
        if (gmtime_r(&tv->tv_sec, &tm) == NULL ||
            strftime(buf->stamp, sizeof(buf->stamp), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
            memcpy(buf->stamp, "0000-00-00T00:00:00", sizeof(buf->stamp));
        buf->stamp_sec = tv->tv_sec;
    }
    if (us < 0 || us > 999999)
        us = 0;
    frac[0] = '.';
    for (int i = 6; i >= 1; i--, us /= 10)
        frac[i] = (char)('0' + us % 10);
    frac[7] = 'Z';
    frac[8] = '"';
    jsonw_raw(&buf->w, "\"", 1);
    jsonw_raw(&buf->w, buf->stamp, sizeof(buf->stamp) - 1);
    jsonw_raw(&buf->w, frac, sizeof(frac));
}

/* Appends v in decimal without going through printf. */
static void put_u64(struct jsonw *w, uint64_t v)
{
    char digits[20];
    size_t i = sizeof(digits);

    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    jsonw_raw(w, digits + i, sizeof(digits) - i);
}

/* Appends a status code, which comes from our own handlers but is an int. */
static void put_int(struct jsonw *w, int v)
{
    /* Unsigned negation gives |v| even for INT_MIN. */
    uint64_t magnitude = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

    if (v < 0)
        jsonw_raw(w, "-", 1);
    put_u64(w, magnitude);
}

/* Appends untrusted bytes as an escaped JSON string, or null when absent. */
static void put_str(struct jsonw *w, const char *s, size_t n)
{
    if (s == NULL)
        jsonw_lit(w, "null");
    else
        jsonw_strn(w, s, n);
}

void accesslog_append(struct accesslog_buffer *buf, const struct accesslog_entry *e)
{
    struct jsonw *w = &buf->w;
    size_t start = w->sb.len;

    jsonw_lit(w, "{\"time\":");
    put_time(buf, &e->time);
    jsonw_lit(w, ",\"remote\":");
    put_str(w, e->remote, e->remote_len);
    jsonw_lit(w, ",\"method\":");
    put_str(w, e->method, e->method_len);
    jsonw_lit(w, ",\"path\":");
    put_str(w, e->path, e->path_len);
    jsonw_lit(w, ",\"status\":");
    put_int(w, e->status);
    jsonw_lit(w, ",\"bytes\":");
    put_u64(w, e->bytes);
    jsonw_lit(w, ",\"duration_us\":");
    put_u64(w, e->duration_us);
    jsonw_lit(w, ",\"user_agent\":");
    put_str(w, e->user_agent, e->user_agent_len);
    jsonw_lit(w, ",\"protocol\":");
    put_str(w, e->protocol, e->protocol != NULL ? strlen(e->protocol) : 0);
    if (e->caller != NULL) {
        jsonw_lit(w, ",\"caller\":");
        put_str(w, e->caller, e->caller_len);
    }
    jsonw_lit(w, "}\n");
    if (w->sb.failed) {
        /* Out of memory: forget the partial line, keep the earlier ones. */
        w->sb.failed = 0;
        w->sb.len = start;
        atomic_fetch_add(&metrics_process.access_log_dropped, 1);
        return;
    }
    buf->lines++;
    if (w->sb.len >= ACCESSLOG_CHUNK)
        accesslog_flush(buf);
}

/* Queues c for the writer and wakes it. */
static void accesslog_enqueue(struct accesslog *log, struct chunk *c)
{
    atomic_fetch_add(&log->queued_bytes, c->len);
    pthread_mutex_lock(&log->mu);
    if (log->tail != NULL)
        log->tail->next = c;
    else
        log->head = c;
    log->tail = c;
    pthread_cond_signal(&log->cond);
    pthread_mutex_unlock(&log->mu);
}

void accesslog_flush(struct accesslog_buffer *buf)
{
    struct accesslog *log = buf->log;
    struct chunk *c = NULL;

    if (buf->w.sb.len == 0)
        return;
    /* Copying into an exact-size chunk lets the buffer keep its memory. */
    if (atomic_load(&log->queued_bytes) <= ACCESSLOG_QUEUE_MAX)
        c = malloc(sizeof(*c) + buf->w.sb.len);
    if (c == NULL) {
        atomic_fetch_add(&metrics_process.access_log_dropped, buf->lines);
    } else {
        c->next = NULL;
        c->len = buf->w.sb.len;
        memcpy(c->data, buf->w.sb.p, buf->w.sb.len);
        accesslog_enqueue(log, c);
    }
    buf->w.sb.len = 0;
    buf->lines = 0;
    /* A rare giant line must not pin its memory for the thread's lifetime. */
    if (buf->w.sb.cap > 4 * ACCESSLOG_CHUNK) {
        free(buf->w.sb.p);
        buf->w = (struct jsonw){0};
    }
}

void accesslog_buffer_free(struct accesslog_buffer *buf)
{
    if (buf == NULL)
        return;
    accesslog_flush(buf);
    free(buf->w.sb.p);
    free(buf);
}

void accesslog_close(struct accesslog *log)
{
    if (log == NULL)
        return;
    pthread_mutex_lock(&log->mu);
    log->stopping = 1;
    pthread_cond_signal(&log->cond);
    pthread_mutex_unlock(&log->mu);
    pthread_join(log->writer, NULL);
    if (log->close_fd)
        close(log->fd);
    pthread_cond_destroy(&log->cond);
    pthread_mutex_destroy(&log->mu);
    free(log);
}
