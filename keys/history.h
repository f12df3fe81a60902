/* SPDX-License-Identifier: Apache-2.0 */
/*
 * history: when each key was first and last seen in the configured inputs.
 *
 * It is what makes rotation safe: a key that leaves the inputs stays
 * published for --key-retention (so tokens it signed keep verifying), and
 * the age of the signing key's publication tells whether relying parties can
 * have fetched it yet. The history is persisted as JSON in --state-dir, so a
 * restart inside the retention window still publishes retained keys. The
 * file is read as untrusted input (see history_load).
 */
#ifndef OIDC_HISTORY_H
#define OIDC_HISTORY_H

#include <stddef.h>
#include <time.h>
#include "keys/keyset.h"

struct history_entry {
    char *kid;     /* owned: a fleet keeps a history per issuer, a kid is 43 characters, its bound 1 KiB */
    int kid_given; /* kid came with the key from a JWKS (key.h) and is not the one its spki gives */
    char *spki;    /* base64 (standard) of the DER SubjectPublicKeyInfo */
    char *source;
    time_t first_seen;
    time_t last_seen;
    int present; /* in the inputs at the last history_apply */
};

struct history {
    struct history_entry *entries;
    size_t count;
    size_t cap;
    int applied; /* history_apply ran: each present flag is this process's own observation */
};

enum history_event {
    HISTORY_ADDED,    /* a key appeared in the inputs */
    HISTORY_RETAINED, /* a key left the inputs and is retained until `until` */
    HISTORY_DROPPED,  /* a key left the published set */
};

/* Reports what history_apply changed, for the log. */
typedef void (*history_event_cb)(void *ctx, enum history_event ev, const struct history_entry *e, time_t until);

/* The latest time a state file may hold: 9999-12-31T23:59:59Z. Bounding
 * the times keeps every sum of a time and a retention far from overflow. */
#define HISTORY_TIME_MAX ((time_t)253402300799)

/* How far ahead of the clock a stored last_seen may be and still count (as
 * now): a clock stepped back after the last save must not cost a retained
 * key its place. Further ahead, the entry is dropped. */
#define HISTORY_CLOCK_SKEW 300

/* Reads the state file at path into a new history (for no state file at
 * all, start from calloc(1, sizeof(struct history))). A missing file or
 * directory gives an empty history.
 *
 * The file is input, not truth: it can only shorten what is published, never
 * lengthen it. An entry is kept only when its kid is the one its stored
 * public key gives (or, for a key whose kid came from a JWKS, when the
 * entry says so with "kid_given": true and the kid is one key_kid_ok
 * takes: such a kid cannot be checked against the key, so only an entry
 * written from a JWKS may bind it, and the binding is kept exactly as it
 * was first seen), that key is of a type that is published, its times are
 * whole seconds with 0 < first_seen <= last_seen <= now + HISTORY_CLOCK_SKEW
 * (a last_seen ahead of now is taken as now) and no earlier entry has its
 * kid; any other entry is dropped, with a message naming it to warn (may be
 * NULL), and the rest loads. Whether a key was present when the file was
 * written is not trusted: once loaded, a key not in the inputs counts as
 * gone since its last_seen.
 *
 * A file that cannot be a state file at all (not JSON, nested deeper than
 * JSON_MAX_DEPTH, too large, not version 1, a symlink or not a regular
 * file) is an error (-1, message in err), as is a directory that someone
 * else could have written into: one not owned by the effective uid or
 * root, or writable by group or others. Starting without the state could
 * drop keys that must stay published. */
int history_load(const char *path, time_t now, keyset_warn_cb warn, void *warn_ctx, struct history **out, char *err,
                 size_t errlen);

/* Writes h to path atomically: a new temporary file beside it (O_EXCL,
 * never through a link planted there), fsync, rename. The directory must
 * pass history_load's owner and mode check. */
int history_save(const struct history *h, const char *path, char *err, size_t errlen);

/* Records that the keys of inputs are present at now (a kid from a JWKS
 * that now names another key starts a new entry: the old key is dropped,
 * since one kid cannot be published for two keys), then appends to
 * inputs the keys that left the inputs less than retention seconds ago, and
 * forgets the others. inputs becomes the set to publish. Returns 1 when a
 * key was added, retained or dropped (the state needs saving), 0 when
 * nothing but the last-seen times changed, -1 with a message (out of
 * memory, a corrupt stored key).
 *
 * The last-seen times of present keys still need saving now and then (and
 * at exit): after a restart, a key that is gone counts as having left at
 * its stored last_seen, never later. */
int history_apply(struct history *h, struct keyset *inputs, unsigned long retention, time_t now, history_event_cb cb,
                  void *cb_ctx, char *err, size_t errlen);

/* The earliest time at which a retained key must be dropped (it may have
 * passed: history_apply drops it then), or 0 when no key is retained. */
time_t history_next_expiry(const struct history *h, unsigned long retention);

/* When e stops being published once it has left the inputs: last_seen +
 * retention, without overflow (retention counts up to HISTORY_TIME_MAX). */
time_t history_until(const struct history_entry *e, unsigned long retention);

const struct history_entry *history_find(const struct history *h, const char *kid);

void history_free(struct history *h);

#endif
