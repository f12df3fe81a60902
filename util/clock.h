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

#endif
