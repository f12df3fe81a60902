/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plan: the decisions of publishing to object storage, apart from any I/O
 * so that unit tests drive them with made-up objects and clocks:
 *
 *   - what to do with one object, given what the store holds (push_decide);
 *   - which of two key sets is the newer (push_newer), so that replicas
 *     pushing to one bucket agree on a winner and never flap;
 *   - when to try again after a failure (exponential backoff with jitter)
 *     and when to read the objects back (the drift check), per target
 *     (struct push_schedule).
 *
 * "Newer" (docs/bucket-publishing.md): every object pushed carries two
 * metadata values, the generation (the wall-clock millisecond at which the
 * pushing process got the key set, made to grow with every new set within
 * one process, so that a process never yields to its own earlier push) and
 * the SHA-256 of the object's own bytes. A set got later is newer; within
 * one millisecond the larger SHA-256 (as lowercase hex) wins, an arbitrary
 * but shared rule.
 * An object whose bytes do not match its SHA-256 was changed by someone
 * else (an upload by hand, a copy that kept the metadata): its generation
 * is not believed, and it is repaired.
 */
#ifndef OIDC_PUSH_PLAN_H
#define OIDC_PUSH_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Room for a generation ("1767225600000") and a hex SHA-256. */
#define PUSH_GEN_MAX 24
#define PUSH_SHA_HEX 65

/* One object as the store holds it (exists == 0: there is none). The
 * strings are NULL when the store sent no such header or metadata. */
struct push_remote {
    int exists;
    const char *body;
    size_t len;
    const char *content_type;
    const char *cache_control;
    const char *generation; /* our metadata */
    const char *sha256;     /* our metadata */
};

/* One object as this process publishes it. */
struct push_local {
    const char *body;
    size_t len;
    const char *content_type;
    const char *cache_control;
    const char *generation; /* push_generation() of the snapshot */
    const char *sha256;     /* push_sha256_hex() of body */
};

enum push_verdict {
    PUSH_SAME,    /* the store holds these bytes and headers: nothing to write */
    PUSH_CREATE,  /* none there: write it, only if still none (If-None-Match: *) */
    PUSH_REPLACE, /* different and not newer: overwrite, only if unchanged since read (If-Match) */
    PUSH_YIELD,   /* a newer key set is there: leave it, and the objects after it */
};

/* What to do with one object; *why (for PUSH_REPLACE and PUSH_YIELD) says
 * why in a few words for the log. */
enum push_verdict push_decide(const struct push_remote *r, const struct push_local *l, const char **why);

/* The generation of a key set got at gen_ms (Unix milliseconds), into out. */
void push_generation(int64_t gen_ms, char out[PUSH_GEN_MAX]);

/* The lowercase hex SHA-256 of body, into out. */
void push_sha256_hex(const void *body, size_t len, char out[PUSH_SHA_HEX]);

/* Backoff before the next try after `failures` failures in a row (>= 1):
 * 1 s doubled each time up to PUSH_BACKOFF_MAX_MS, of which a random half
 * ("equal jitter": rnd in [0, 1)) is taken off, so that replicas that
 * failed together do not retry together. */
#define PUSH_BACKOFF_BASE_MS 1000
#define PUSH_BACKOFF_MAX_MS  (5 * 60 * 1000)
int64_t push_backoff_ms(unsigned failures, double rnd);

/* When one target is due next. Times are monotonic milliseconds. */
struct push_schedule {
    int64_t due_ms;    /* the next try or check */
    unsigned failures; /* in a row, since the last success or new snapshot */
    int settled;       /* the current snapshot was pushed (or yielded to): later writes are repairs */
};

enum push_outcome {
    PUSH_OK,      /* every object holds our bytes (written, or already there) */
    PUSH_YIELDED, /* a newer key set is there */
    PUSH_FAILED,  /* an error; retried after the backoff */
};

/* A new target: due now. */
void push_schedule_init(struct push_schedule *s, int64_t now_ms);

/* A new snapshot to push: due now, failures forgotten, not settled. */
void push_schedule_snapshot(struct push_schedule *s, int64_t now_ms);

/* Records an attempt's outcome at now_ms: success or yield -> settled, the
 * next check after interval_ms; failure -> the next try after the backoff
 * (never later than interval_ms, the check the operator asked for). */
void push_schedule_done(struct push_schedule *s, enum push_outcome o, int64_t now_ms, int64_t interval_ms, double rnd);

/* 1 when the target is due at now_ms. */
int push_schedule_due(const struct push_schedule *s, int64_t now_ms);

#endif
