/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock: the monotonic clock in milliseconds, the one clock of every
 * deadline and "now_ms" in the project (reload timing, removal
 * confirmation, health). Wall-clock time (time()) is only for what is
 * published or stored: Last-Modified, token times, retention.
 */
#ifndef OIDC_CLOCK_H
#define OIDC_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The wall clock in milliseconds since the Unix epoch: for what is stored
 * and compared across processes (the generation of a pushed key set). */
static inline int64_t clock_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The time ms milliseconds from now on clock (CLOCK_REALTIME for
 * pthread_timedjoin_np), as a timespec. */
static inline struct timespec clock_deadline(clockid_t clock, unsigned ms)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

/* The bytes clock_rfc3339 writes, its NUL included. */
#define CLOCK_RFC3339_SIZE sizeof("2006-01-02T15:04:05Z")

/* Wall-clock time t as people and logs read it, in UTC, to the second
 * ("2026-12-02T02:34:41Z", RFC 3339 as Kubernetes prints times). Returns
 * out. */
static inline const char *clock_rfc3339(time_t t, char out[CLOCK_RFC3339_SIZE])
{
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(out, CLOCK_RFC3339_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return out;
}

#endif
