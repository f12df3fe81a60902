/*
 * history: when each key was first and last seen in the configured inputs.
 *
 * It is what makes rotation safe: a key that leaves the inputs stays
 * published for --key-retention (so tokens it signed keep verifying), and
 * the age of the signing key's publication tells whether relying parties can
 * have fetched it yet. The history is persisted as JSON in --state-dir, so a
 * restart inside the retention window still publishes retained keys.
 */
#ifndef OIDC_HISTORY_H
#define OIDC_HISTORY_H

#include <stddef.h>
#include <time.h>
#include "keyset.h"

struct history_entry {
    char kid[KEY_KID_LEN + 1];
    char *spki; /* base64 (standard) of the DER SubjectPublicKeyInfo */
    char *source;
    time_t first_seen;
    time_t last_seen;
    int present; /* in the inputs at the last history_apply */
};

struct history {
    struct history_entry *entries;
    size_t count;
    size_t cap;
};

enum history_event {
    HISTORY_ADDED,    /* a key appeared in the inputs */
    HISTORY_RETAINED, /* a key left the inputs and is retained until `until` */
    HISTORY_DROPPED,  /* a key left the published set */
};

/* Reports what history_apply changed, for the log. */
typedef void (*history_event_cb)(void *ctx, enum history_event ev, const struct history_entry *e, time_t until);

/* Reads the state file at path into a new history (for no state file at
 * all, start from calloc(1, sizeof(struct history))). A missing file gives an
 * empty history; a corrupt one is an error (-1, message in err), since
 * starting without it could drop keys that must stay published. */
int history_load(const char *path, struct history **out, char *err, size_t errlen);

/* Writes h to path atomically (temporary file, fsync, rename). */
int history_save(const struct history *h, const char *path, char *err, size_t errlen);

/* Records that the keys of inputs are present at now, then appends to
 * inputs the keys that left the inputs less than retention seconds ago, and
 * forgets the others. inputs becomes the set to publish. Returns 1 when a
 * key was added, retained or dropped (the state needs saving), 0 when
 * nothing but the last-seen times changed, -1 with a message (out of
 * memory, a corrupt stored key).
 *
 * Last-seen times of present keys need no saving: after a restart, a key
 * recorded as present that is gone counts as having left at that moment,
 * which only ever retains it longer. */
int history_apply(struct history *h, struct keyset *inputs, unsigned long retention, time_t now, history_event_cb cb,
                  void *cb_ctx, char *err, size_t errlen);

/* The earliest time at which a retained key must be dropped (it may have
 * passed: history_apply drops it then), or 0 when no key is retained. */
time_t history_next_expiry(const struct history *h, unsigned long retention);

const struct history_entry *history_find(const struct history *h, const char *kid);

void history_free(struct history *h);

#endif
