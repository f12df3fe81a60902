/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/removal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct removal {
    int64_t confirm_ms;
    struct keyset *published; /* a copy of the input set last returned; NULL before the first read */
    char **pending;           /* the kids of the shrunken read waiting for confirmation, owned */
    size_t npending;
    int has_pending;
    int64_t pending_since; /* monotonic ms of the first read of pending */
    size_t held;
};

struct removal *removal_new(int64_t confirm_ms)
{
    struct removal *rm = calloc(1, sizeof(*rm));

    if (rm != NULL)
        rm->confirm_ms = confirm_ms;
    return rm;
}

/* A new set holding a copy of every key of ks; NULL when out of memory. */
static struct keyset *removal_copy(const struct keyset *ks, char *err, size_t errlen)
{
    struct keyset *out = keyset_new();

    for (size_t i = 0; out != NULL && i < ks->count; i++) {
        if (keyset_add_copy(out, &ks->keys[i], err, errlen) < 0) {
            keyset_free(out);
            return NULL;
        }
    }
    if (out == NULL)
        snprintf(err, errlen, "out of memory");
    return out;
}

/* Whether read lists the kids of the pending read, in the same order. */
static int removal_same_as_pending(const struct removal *rm, const struct keyset *read)
{
    if (!rm->has_pending || rm->npending != read->count)
        return 0;
    for (size_t i = 0; i < read->count; i++)
        if (strcmp(rm->pending[i], read->keys[i].kid) != 0)
            return 0;
    return 1;
}

static void removal_clear_pending(struct removal *rm)
{
    for (size_t i = 0; i < rm->npending; i++)
        free(rm->pending[i]);
    free(rm->pending);
    rm->pending = NULL;
    rm->npending = 0;
    rm->has_pending = 0;
}

/* Remembers read as the shrunken set to confirm, from now_ms. */
static int removal_start_pending(struct removal *rm, const struct keyset *read, int64_t now_ms)
{
    char **kids = calloc(read->count + 1, sizeof(*kids));
    size_t n = 0;

    while (kids != NULL && n < read->count && (kids[n] = strdup(read->keys[n].kid)) != NULL)
        n++;
    if (kids == NULL || n < read->count) {
        while (kids != NULL && n > 0)
            free(kids[--n]);
        free(kids);
        return -1;
    }
    removal_clear_pending(rm);
    rm->pending = kids;
    rm->npending = n;
    rm->has_pending = 1;
    rm->pending_since = now_ms;
    return 0;
}

/* Whether the file k was read from has been swapped away atomically: the
 * same path was read again and now leads to another file. */
static int removal_swapped(const struct key *k, const struct keyset *read)
{
    if (k->path == NULL || k->path_real == NULL)
        return 0;
    for (size_t i = 0; i < read->count; i++) {
        const struct key *r = &read->keys[i];
        if (r->path != NULL && r->path_real != NULL && strcmp(r->path, k->path) == 0)
            return strcmp(r->path_real, k->path_real) != 0;
    }
    return 0;
}

/* Marks in held[] the published keys that read lacks and that must wait
 * for confirmation; returns how many. */
static size_t removal_mark_held(const struct removal *rm, const struct keyset *read, char *held)
{
    size_t n = 0;

    for (size_t i = 0; i < rm->published->count; i++) {
        const struct key *k = &rm->published->keys[i];
        held[i] = keyset_find(read, k->kid) == NULL && !removal_swapped(k, read);
        n += (size_t)held[i];
    }
    return n;
}

/* Appends to out the held keys among published[from, to). */
static int removal_add_held(struct keyset *out, const struct keyset *published, const char *held, size_t from,
                            size_t to, char *err, size_t errlen)
{
    for (size_t i = from; i < to; i++)
        if (held[i] && keyset_add_copy(out, &published->keys[i], err, errlen) < 0)
            return -1;
    return 0;
}

/* read's keys in read's order, with each held key placed just before the
 * first key of read that followed it when it was published: a file read
 * short keeps its published order, so the bytes do not change at all. */
static struct keyset *removal_merge(const struct keyset *published, const struct keyset *read, const char *held,
                                    char *err, size_t errlen)
{
    struct keyset *out = keyset_new();
    size_t next = 0;
    int rc = out != NULL ? 0 : -1;

    for (size_t i = 0; rc == 0 && i < read->count; i++) {
        const struct key *was = keyset_find(published, read->keys[i].kid);
        size_t pos = was != NULL ? (size_t)(was - published->keys) : 0;
        if (was != NULL && pos >= next) {
            rc = removal_add_held(out, published, held, next, pos, err, errlen);
            next = pos + 1;
        }
        if (rc == 0 && keyset_add_copy(out, &read->keys[i], err, errlen) < 0)
            rc = -1;
    }
    if (rc == 0)
        rc = removal_add_held(out, published, held, next, published->count, err, errlen);
    if (rc != 0) {
        if (out == NULL)
            snprintf(err, errlen, "out of memory");
        keyset_free(out);
        return NULL;
    }
    return out;
}

/* Makes out the published input set (a copy is kept); out is returned,
 * or freed on failure. */
static struct keyset *removal_publish(struct removal *rm, struct keyset *out, size_t held, char *err, size_t errlen)
{
    struct keyset *copy = removal_copy(out, err, errlen);

    if (copy == NULL) {
        keyset_free(out);
        return NULL;
    }
    keyset_free(rm->published);
    rm->published = copy;
    rm->held = held;
    if (held == 0)
        removal_clear_pending(rm);
    return out;
}

struct keyset *removal_apply(struct removal *rm, struct keyset *read, int64_t now_ms, char *err, size_t errlen)
{
    char *held = NULL;
    size_t nheld = 0;
    struct keyset *out = read;

    if (rm->published != NULL && (held = calloc(rm->published->count + 1, 1)) == NULL)
        goto oom;
    if (held != NULL && (nheld = removal_mark_held(rm, read, held)) > 0) {
        if (removal_same_as_pending(rm, read)) {
            if (now_ms - rm->pending_since >= rm->confirm_ms)
                nheld = 0; /* confirmed: the shrunken set stands */
        } else if (removal_start_pending(rm, read, now_ms) != 0) {
            goto oom;
        }
    }
    if (nheld > 0) {
        out = removal_merge(rm->published, read, held, err, errlen);
        keyset_free(read);
        read = NULL;
    }
    free(held);
    return out != NULL ? removal_publish(rm, out, nheld, err, errlen) : NULL;

oom:
    snprintf(err, errlen, "out of memory");
    free(held);
    keyset_free(read);
    return NULL;
}

void removal_read_failed(struct removal *rm)
{
    removal_clear_pending(rm);
}

int64_t removal_due(const struct removal *rm)
{
    return rm->held > 0 && rm->has_pending ? rm->pending_since + rm->confirm_ms : 0;
}

size_t removal_held(const struct removal *rm)
{
    return rm->held;
}

void removal_free(struct removal *rm)
{
    if (rm == NULL)
        return;
    keyset_free(rm->published);
    removal_clear_pending(rm);
    free(rm);
}
