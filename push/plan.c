/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plan.c: see plan.h. No I/O, no clock, no randomness of its own.
 */
#include "push/plan.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#define PUSH_GEN_DIGITS 19 /* fits a signed 64-bit number */

/* Reads a generation: 1 to 19 decimal digits. Returns 0 or -1. */
static int push_parse_generation(const char *s, unsigned long long *out)
{
    size_t n = s ? strspn(s, "0123456789") : 0;

    if (n == 0 || n > PUSH_GEN_DIGITS || s[n] != '\0')
        return -1;
    *out = 0;
    for (size_t i = 0; i < n; i++)
        *out = *out * 10 + (unsigned long long)(s[i] - '0');
    return 0;
}

void push_generation(int64_t gen_ms, char out[PUSH_GEN_MAX])
{
    snprintf(out, PUSH_GEN_MAX, "%lld", (long long)gen_ms);
}

void push_sha256_hex(const void *body, size_t len, char out[PUSH_SHA_HEX])
{
    unsigned char digest[SHA256_DIGEST_LENGTH];

    SHA256(body, len, digest);
    for (size_t i = 0; i < sizeof(digest); i++)
        snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

/* Whether the remote object's metadata is its own: the SHA-256 it carries
 * is that of its bytes. An object changed by anyone else is not. */
static int push_remote_vouched(const struct push_remote *r)
{
    char actual[PUSH_SHA_HEX];
    unsigned long long gen;

    if (r->sha256 == NULL || push_parse_generation(r->generation, &gen) != 0)
        return 0;
    push_sha256_hex(r->body, r->len, actual);
    return strcmp(actual, r->sha256) == 0;
}

/* 1 when the remote object carries a generation we believe and it is
 * newer than the local one (plan.h); 0 otherwise. */
static int push_newer(const struct push_remote *r, const struct push_local *l)
{
    unsigned long long theirs, ours = 0;

    if (!r->exists || !push_remote_vouched(r) || push_parse_generation(r->generation, &theirs) != 0)
        return 0;
    push_parse_generation(l->generation, &ours);
    return theirs > ours || (theirs == ours && strcmp(r->sha256, l->sha256) > 0);
}

/* Whether a header the store returned is the value we publish. */
static int push_same_header(const char *remote, const char *local)
{
    return remote != NULL && strcmp(remote, local) == 0;
}

enum push_verdict push_decide(const struct push_remote *r, const struct push_local *l, const char **why)
{
    *why = NULL;
    if (!r->exists) {
        *why = "missing";
        return PUSH_CREATE;
    }
    if (r->len == l->len && memcmp(r->body, l->body, l->len) == 0 &&
        push_same_header(r->content_type, l->content_type) && push_same_header(r->cache_control, l->cache_control))
        return PUSH_SAME;
    if (push_newer(r, l)) {
        *why = "a newer key set";
        return PUSH_YIELD;
    }
    if (!push_remote_vouched(r))
        *why = "changed outside oidc-discovery";
    else if (r->len != l->len || memcmp(r->body, l->body, l->len) != 0)
        *why = "older";
    else
        *why = "stored with another Content-Type or Cache-Control";
    return PUSH_REPLACE;
}

int64_t push_backoff_ms(unsigned failures, double rnd)
{
    int64_t d = PUSH_BACKOFF_BASE_MS;

    for (unsigned i = 1; i < failures && d < PUSH_BACKOFF_MAX_MS; i++)
        d *= 2;
    if (d > PUSH_BACKOFF_MAX_MS)
        d = PUSH_BACKOFF_MAX_MS;
    rnd = rnd < 0 ? 0 : rnd >= 1 ? 0.999999 : rnd;
    return d - (int64_t)((double)(d / 2) * rnd);
}

void push_schedule_init(struct push_schedule *s, int64_t now_ms)
{
    memset(s, 0, sizeof(*s));
    s->due_ms = now_ms;
}

void push_schedule_snapshot(struct push_schedule *s, int64_t now_ms)
{
    push_schedule_init(s, now_ms);
}

void push_schedule_done(struct push_schedule *s, enum push_outcome o, int64_t now_ms, int64_t interval_ms, double rnd)
{
    int64_t wait;

    if (o != PUSH_FAILED) {
        s->failures = 0;
        s->settled = 1;
        s->due_ms = now_ms + interval_ms;
        return;
    }
    s->failures++;
    wait = push_backoff_ms(s->failures, rnd);
    s->due_ms = now_ms + (wait < interval_ms ? wait : interval_ms);
}

int push_schedule_due(const struct push_schedule *s, int64_t now_ms)
{
    return now_ms >= s->due_ms;
}
