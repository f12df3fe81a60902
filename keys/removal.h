/* SPDX-License-Identifier: Apache-2.0 */
/*
 * removal: decides when a key missing from a fresh read of the key files has
 * really left them, so that a reader that catches a file mid-write never
 * takes a key out of the published set.
 *
 * A file rewritten in place (`cat a.pub b.pub > sa.pub`, an editor, a
 * config-management tool) holds a prefix of its new content while it is
 * written; read between two writes it shows fewer keys, and publishing that
 * would make relying parties cache a JWKS without a key for max-age. So:
 *
 * - a key that appears is published at once (adding is never harmful);
 * - a key that disappears stays published until the same shrunken set (the
 *   same kids in the same order) has been read twice, at least confirm_ms
 *   apart, with no other read — different or failed — in between; the
 *   caller re-reads when removal_due says so;
 * - except when the file that held it was swapped away atomically: its path
 *   (the Secret's "sa.pub") now leads to another file (the kubelet's
 *   "..data" swap, any symlink flip). Such a file is complete before it
 *   becomes visible, so the change is final and applies at once.
 *
 * A deleted file, a file renamed over, or a directory emptied take the
 * confirmation delay, since a non-atomic replacement (rm, then write) passes
 * through those states too. Only `serve` uses this; `keys` and `export` read
 * once.
 */
#ifndef OIDC_REMOVAL_H
#define OIDC_REMOVAL_H

#include <stddef.h>
#include <stdint.h>
#include "keys/keyset.h"

struct removal;

/* A guard with nothing published yet; NULL when out of memory. */
struct removal *removal_new(int64_t confirm_ms);

/* Takes a fresh read of the inputs (ownership taken in every case) at
 * now_ms (a monotonic clock) and returns the input set to publish: read
 * itself, or read plus the keys still waiting for their removal to be
 * confirmed, merged in the order they were published. NULL with a message
 * in err when out of memory. */
struct keyset *removal_apply(struct removal *rm, struct keyset *read, int64_t now_ms, char *err, size_t errlen);

/* A read failed: the inputs are changing, so a confirmation under way
 * starts over with the next good read. */
void removal_read_failed(struct removal *rm);

/* The monotonic ms at which a re-read can confirm the removals waiting,
 * or 0 when none waits. */
int64_t removal_due(const struct removal *rm);

/* The number of keys published only because their removal waits for
 * confirmation. */
size_t removal_held(const struct removal *rm);

void removal_free(struct removal *rm);

#endif
