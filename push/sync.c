/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sync.c: one push of the two documents to one target (see sync.h).
 */
#include "push/sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/paths.h"

void push_docs_init(struct push_docs *d, const struct snapshot *s, int64_t gen_ms)
{
    const struct snapshot_doc *docs[PUSH_NOBJECTS] = {&s->jwks, &s->discovery};

    memset(d, 0, sizeof(*d));
    d->keys[0] = &PATHS_JWKS[1];
    d->keys[1] = &PATHS_DISCOVERY[1];
    push_generation(gen_ms, d->generation);
    for (size_t i = 0; i < PUSH_NOBJECTS; i++) {
        push_sha256_hex(docs[i]->body.bytes, docs[i]->body.len, d->sha256[i]);
        d->docs[i] = (struct push_local){.body = docs[i]->body.bytes,
                                         .len = docs[i]->body.len,
                                         .content_type = docs[i]->content_type,
                                         .cache_control = s->cache_control,
                                         .generation = d->generation,
                                         .sha256 = d->sha256[i]};
    }
}

void push_object_clear(struct push_object *o)
{
    free(o->body);
    memset(o, 0, sizeof(*o));
}

/* A header the store did not send is absent, not empty. */
static const char *push_or_null(const char *s)
{
    return s[0] ? s : NULL;
}

struct push_remote push_object_remote(const struct push_object *o)
{
    return (struct push_remote){
        .exists = o->exists,
        .body = o->body,
        .len = o->len,
        .content_type = push_or_null(o->content_type),
        .cache_control = push_or_null(o->cache_control),
        .generation = push_or_null(o->generation),
        .sha256 = push_or_null(o->sha256),
    };
}

/* Compares what a read-back found with what was written; NULL when they
 * agree, else what differs. */
static const char *push_readback_differs(const struct push_object *o, const struct push_local *l)
{
    if (!o->exists)
        return "the object is missing";
    if (o->len != l->len || memcmp(o->body, l->body, l->len) != 0)
        return "its bytes differ";
    if (strcmp(o->content_type, l->content_type) != 0)
        return "its Content-Type differs";
    if (strcmp(o->cache_control, l->cache_control) != 0)
        return "its Cache-Control differs";
    return NULL;
}

/* Reads key back after a write and checks it; 0, or -1 with err set. */
static int push_read_back(const struct push_store_ops *ops, void *store, const char *key, const struct push_local *l,
                          char *err, size_t errlen)
{
    struct push_object o = {0};
    const char *why = NULL;
    int rc = -1;

    if (ops->get(store, key, &o, err, errlen) == PUSH_IO_OK) {
        why = push_readback_differs(&o, l);
        rc = why ? -1 : 0;
        if (why)
            snprintf(err, errlen, "%s: read back after writing, %s (another writer, or a store that changes objects?)",
                     key, why);
    }
    push_object_clear(&o);
    return rc;
}

/* Brings one object to our bytes, or finds a newer set there. */
static enum push_action push_one(const struct push_store_ops *ops, void *store, const char *key,
                                 const struct push_local *l, struct push_report *rep, size_t i)
{
    for (int attempt = 0; attempt < PUSH_CONFLICT_TRIES; attempt++) {
        struct push_object o = {0};
        struct push_remote r;
        enum push_verdict v;
        enum push_io io;

        if (ops->get(store, key, &o, rep->err, sizeof(rep->err)) != PUSH_IO_OK)
            return PUSH_ACT_FAILED;
        r = push_object_remote(&o);
        v = push_decide(&r, l, &rep->why[i]);
        if (v == PUSH_YIELD)
            snprintf(rep->remote_generation, sizeof(rep->remote_generation), "%s", o.generation);
        if (v == PUSH_SAME || v == PUSH_YIELD) {
            push_object_clear(&o);
            return v == PUSH_SAME ? PUSH_ACT_UNCHANGED : PUSH_ACT_YIELDED;
        }
        const struct push_put put = {.key = key, .doc = l, .if_match = v == PUSH_REPLACE ? o.etag : NULL};
        io = ops->put(store, &put, rep->err, sizeof(rep->err));
        push_object_clear(&o);
        if (io == PUSH_IO_ERROR)
            return PUSH_ACT_FAILED;
        if (io == PUSH_IO_OK)
            return push_read_back(ops, store, key, l, rep->err, sizeof(rep->err)) == 0 ? PUSH_ACT_WRITTEN
                                                                                       : PUSH_ACT_FAILED;
    }
    snprintf(rep->err, sizeof(rep->err), "%s: changed by another writer between each read and write (%d tries)", key,
             PUSH_CONFLICT_TRIES);
    return PUSH_ACT_FAILED;
}

void push_sync(const struct push_store_ops *ops, void *store, const struct push_docs *docs, struct push_report *rep)
{
    memset(rep, 0, sizeof(*rep));
    rep->outcome = PUSH_OK;
    for (size_t i = 0; i < PUSH_NOBJECTS && rep->outcome == PUSH_OK; i++) {
        rep->actions[i] = push_one(ops, store, docs->keys[i], &docs->docs[i], rep, i);
        if (rep->actions[i] == PUSH_ACT_WRITTEN)
            rep->written++;
        else if (rep->actions[i] == PUSH_ACT_YIELDED)
            rep->outcome = PUSH_YIELDED;
        else if (rep->actions[i] == PUSH_ACT_FAILED)
            rep->outcome = PUSH_FAILED;
    }
}

void push_inspect(const struct push_store_ops *ops, void *store, const struct push_docs *docs,
                  struct push_inspection out[PUSH_NOBJECTS])
{
    static const enum push_seen seen[] = {
        [PUSH_SAME] = PUSH_SEEN_CURRENT,
        [PUSH_CREATE] = PUSH_SEEN_MISSING,
        [PUSH_REPLACE] = PUSH_SEEN_DIFFERS,
        [PUSH_YIELD] = PUSH_SEEN_NEWER,
    };

    for (size_t i = 0; i < PUSH_NOBJECTS; i++) {
        struct push_object o = {0};
        struct push_remote r;
        memset(&out[i], 0, sizeof(out[i]));
        if (ops->get(store, docs->keys[i], &o, out[i].err, sizeof(out[i].err)) != PUSH_IO_OK) {
            out[i].seen = PUSH_SEEN_ERROR;
            continue;
        }
        r = push_object_remote(&o);
        out[i].seen = seen[push_decide(&r, &docs->docs[i], &out[i].why)];
        snprintf(out[i].generation, sizeof(out[i].generation), "%s", o.generation);
        snprintf(out[i].last_modified, sizeof(out[i].last_modified), "%s", o.last_modified);
        push_object_clear(&o);
    }
}

const char *push_seen_name(enum push_seen s)
{
    static const char *const names[] = {"current", "missing", "differs", "newer", "error"};

    return (size_t)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}
