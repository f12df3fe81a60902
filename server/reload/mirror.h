/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mirror: when to read the --upstream API server, and what its answers
 * mean for readiness and for the log.
 *
 * - One read at a time: a read begins (mirror_start) only when the last
 *   one has ended (mirror_done) and the next one is due.
 * - After a good answer (200 or 304) the next read is due after
 *   --upstream-refresh-interval, or sooner when the upstream's max-age is
 *   shorter (an API server's keys are only as current as its caching
 *   allows), never sooner than MIRROR_MIN_INTERVAL_MS.
 * - After a failure (connection, TLS, 401/403, 5xx, a malformed answer,
 *   no usable key, another issuer) the retries back off exponentially
 *   from MIRROR_BACKOFF_FIRST_MS up to the refresh interval, each delay
 *   drawn between its half and its whole (jitter: replicas that failed
 *   together do not retry together). A failure never touches what is
 *   published: the last good set stays.
 * - Ready (/readyz) once a good answer was read, while the upstream names
 *   the expected issuer, and until the last good answer is older than
 *   --upstream-max-staleness.
 *
 * Pure arithmetic on the times given, so it is unit-tested with made-up
 * clocks; server/reload/mirror_thread.c runs it. The status (mirror_status) is
 * what /readyz, /metrics and the admin page read of it.
 */
#ifndef OIDC_MIRROR_H
#define OIDC_MIRROR_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "keys/upstream.h"
#include "server/obs/status.h"

/* The first retry after a failure (at most the refresh interval). */
#define MIRROR_BACKOFF_FIRST_MS 1000

/* Reads never follow each other closer than this, whatever the upstream's
 * max-age says (a max-age of 0 would otherwise mean a loop). */
#define MIRROR_MIN_INTERVAL_MS 1000

/* What mirror_done saw that deserves a log line, as bits. */
#define MIRROR_LOG_FIRST     0x01u /* the first good answer: the documents are served from now on */
#define MIRROR_LOG_FAILED    0x02u /* a failure, the first after a good answer or another kind than the last */
#define MIRROR_LOG_RECOVERED 0x04u /* a good answer after failures */
#define MIRROR_LOG_ISSUER    0x08u /* the upstream names an issuer other than the last one logged */
#define MIRROR_LOG_ISSUER_OK 0x10u /* it names the expected issuer again */

struct mirror {
    int64_t refresh_ms;     /* --upstream-refresh-interval */
    time_t max_staleness;   /* --upstream-max-staleness, seconds */
    uint64_t rng;           /* jitter (xorshift64), never 0 */
    int64_t next_at;        /* monotonic ms when the next read is due */
    int in_flight;          /* mirror_start without its mirror_done */
    unsigned long failures; /* failed reads since the last good one */
    int has_data;           /* a good answer was read */
    time_t last_success;    /* wall clock of the last good answer; 0: none */
    time_t last_attempt;    /* wall clock the last read ended; 0: none */
    time_t last_change;     /* wall clock the upstream's keys last changed; 0: never read */
    enum upstream_result last_result;
    char *mismatch; /* the other issuer last logged, or NULL */
};

/* A mirror whose first read is due at now_ms. seed makes the jitter
 * (any value; the clock, say). */
void mirror_init(struct mirror *m, unsigned long refresh_seconds, unsigned long max_staleness_seconds, uint64_t seed,
                 int64_t now_ms);

/* When the next read is due (monotonic ms). */
int64_t mirror_next(const struct mirror *m);

/* 1 when a read may begin at now_ms (it is due and none is under way):
 * the read is then under way until mirror_done. Else 0. */
int mirror_start(struct mirror *m, int64_t now_ms);

/* A re-read was asked for (SIGHUP): the next read is due at now_ms,
 * unless one is under way. */
void mirror_hurry(struct mirror *m, int64_t now_ms);

/* The read begun by mirror_start ended at now_ms (monotonic) and now
 * (wall) with read's result (its max_age, keys and issuer). Decides when
 * the next read is due and returns the MIRROR_LOG_ bits of what the log
 * should say. */
unsigned mirror_done(struct mirror *m, const struct upstream_read *read, int64_t now_ms, time_t now);

void mirror_clear(struct mirror *m);

/* Logs what a read that just ended at url changed (mirror_done's bits):
 * the one-issuer mirror thread and the fleet's pool say the same. */
void mirror_log(const struct mirror *m, const char *url, const struct upstream_read *read, unsigned bits);

/* What the rest of the process may know of the mirror: read-only copies,
 * taken under a lock. The admin page's "upstream freshness": age =
 * now - last_success; stale when that exceeds max_staleness. */
struct mirror_status {
    int enabled;             /* --upstream is set (the rest is zero otherwise) */
    char url[512];           /* the upstream's base URL */
    int has_data;            /* a good answer was read: the documents are served */
    int issuer_mismatch;     /* the last answer named another issuer */
    char mismatch[512];      /* issuer_mismatch: the issuer the upstream names, else "" */
    time_t last_success;     /* wall clock of the last good answer (200 or 304); 0: none */
    time_t last_attempt;     /* wall clock the last read ended; 0: none */
    time_t last_change;      /* wall clock the upstream's keys last changed; 0: none */
    time_t max_staleness;    /* --upstream-max-staleness, seconds */
    unsigned long failures;  /* failed reads since the last good one */
    const char *last_result; /* upstream_result_name of the last read, "" before the first */
    int last_failed;         /* the last read failed (not 200 or 304) */
    char last_error[512];    /* the last failure's message, "" after a good answer */
};

/* The status of m, with the upstream's url and the last read's message. */
void mirror_status_of(const struct mirror *m, const char *url, const char *message, struct mirror_status *out);

/* Whether s's last good answer is older than --upstream-max-staleness at
 * now: /readyz fails then, and the status page says so. */
int mirror_stale(const struct mirror_status *s, time_t now);

/* 1 when s is ready at now; otherwise 0 with the reason in why. */
int mirror_ready(const struct mirror_status *s, time_t now, char *why, size_t len);

/* The process's mirror status: set by the thread that reads the upstream,
 * read by anyone. mirror_status_get returns s->enabled (0 without
 * --upstream, s then zeroed). */
void mirror_status_set(const struct mirror_status *s);
int mirror_status_get(struct mirror_status *s);

/* The status page's view of s at now (server/obs/status.h), its strings
 * pointing into s: the page is handed it rather than reading the mirror.
 * Returns s->enabled (out is then unset when 0). */
int mirror_status_page(const struct mirror_status *s, time_t now, struct status_upstream *out);

#endif
