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

#endif
