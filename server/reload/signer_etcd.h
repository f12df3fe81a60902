/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signer_etcd: the signing key directory kept in step with the cluster's
 * etcd (keys/keystore.h), for signers on several control-plane nodes with
 * a directory each (--etcd-servers). The directory stays this node's copy:
 * the signer publishes and signs from it alone (so it starts and signs
 * while etcd is down), and etcd is where the copies meet.
 *
 *   at start    signer_etcd_join, on the reload thread before the
 *               directory is opened: etcd's set, when there is one, is
 *               written into the directory (this node follows it); a
 *               value that does not open stops the start, naming its etcd
 *               key and --signing-key-encryption-key-file. After the
 *               directory is ready, signer_etcd_start uploads it when
 *               etcd holds no set yet (the first signer of a cluster, a
 *               one-node signer becoming HA), and starts the thread.
 *   the thread  reads the prefix, watches it from the revision read (a
 *               change ends the watch and is read at once; a broken watch
 *               is read again after a backoff), hands each new set to the
 *               reload thread and wakes it; keeps or campaigns for the
 *               rotator's lease (keystore_campaign). Never on the path of
 *               a Sign: the signer's threads read the published state.
 *   each pass   signer_etcd_take: the newest set the thread read, which
 *               the pass writes into the directory (keystore_adopt) before
 *               reading it; signer_etcd_may_rotate: whether this signer
 *               holds the lease (renewed within --etcd-lease-ttl less a
 *               second) and etcd answered lately; signer_etcd_push: what
 *               the rotator decided, written to etcd in one transaction
 *               against the revision it last read.
 *
 * While etcd cannot be read, or its set does not open, nothing rotates
 * (the rotator's lease lapses with it) and every signer signs with what
 * its directory holds; the log, /metrics (oidc_signer_store_reachable,
 * oidc_signer_store_last_read_age_seconds) and the status page say why.
 */
#ifndef OIDC_SIGNER_ETCD_H
#define OIDC_SIGNER_ETCD_H

#include <stdint.h>

#include "config/config.h"
#include "keys/keystore.h"

/* A broken watch or a failed read is retried after this, doubling up to
 * SIGNER_ETCD_BACKOFF_MAX_MS. */
#define SIGNER_ETCD_BACKOFF_MS     200
#define SIGNER_ETCD_BACKOFF_MAX_MS 5000

struct signer_etcd;

/* Reads --signing-key-encryption-key-file and etcd's set, and writes it
 * into cfg's --signing-key-dir (created 0700) when there is one. NULL with
 * the reason in err: the server does not start. */
struct signer_etcd *signer_etcd_join(const struct config *cfg, char *err, size_t errlen);

/* Whether the join read etcd (else the node starts from its copy). */
int signer_etcd_joined(const struct signer_etcd *se);

/* The directory is ready (it has its keys): uploads it when etcd held no
 * set at the join (or adopts the set another signer uploaded meanwhile),
 * then starts the thread, which calls wake(wake_ctx) when a pass should
 * take a new set. 0, or -1 with err. */
int signer_etcd_start(struct signer_etcd *se, void (*wake)(void *), void *wake_ctx, char *err, size_t errlen);

/* The newest set read from etcd that the directory does not hold yet
 * (keystore_set_free it), or NULL. */
struct keystore_set *signer_etcd_take(struct signer_etcd *se);

/* Whether a set waits for signer_etcd_take. */
int signer_etcd_pending(struct signer_etcd *se);

/* After the pass wrote set into the directory: it is what etcd's
 * rotation_rev says (the base of the rotator's next write). */
void signer_etcd_adopted(struct signer_etcd *se, const struct keystore_set *set);

/* Whether this signer may rotate now (see above). */
int signer_etcd_may_rotate(struct signer_etcd *se, int64_t now_ms);

/* Writes the directory's state kd to etcd (the rotator, after a step or
 * a save). 0 when written; -1 when not (logged: etcd unreachable, or
 * another signer wrote first, in which case this one stops rotating and
 * the next read brings etcd's set). */
int signer_etcd_push(struct signer_etcd *se, const struct keydir *kd);

/* This signer's report for etcd (P nodes/ID): the directory's kids its
 * snapshot publishes and the kid it signs with ("" for none); written by
 * the thread, at once, when it changed. */
void signer_etcd_report(struct signer_etcd *se, const char (*kids)[KEY_KID_LEN + 1], size_t n, const char *signing);

/* For the rotator: whether every live signer (this one among them)
 * reports that it publishes kid: a next key ages only then. */
int signer_etcd_all_publish(struct signer_etcd *se, const char *kid);

/* Whether a live signer reports signing with kid: a retired key's wait
 * starts again while one does. */
int signer_etcd_any_signs(struct signer_etcd *se, const char *kid);

/* Why rotation is paused, "" when it is not (for the status page). */
void signer_etcd_paused(struct signer_etcd *se, char *why, size_t len);

/* Where a key of the directory came from, for `keys` and the status
 * page: "etcd" when etcd's last read set holds it, else "local copy". */
const char *signer_etcd_source(struct signer_etcd *se, const char *kid);

/* Stops the thread, gives up the rotator's lease (another takes over at
 * once) and frees. NULL is fine. */
void signer_etcd_free(struct signer_etcd *se);

#endif
