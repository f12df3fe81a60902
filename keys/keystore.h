/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keystore: the signing key directory's state (keys/keydir.h) kept in the
 * cluster's etcd (util/etcd.h), so that the signers of several
 * control-plane nodes, each with a directory of its own, publish, sign
 * with and rotate one key set. Under the prefix P (--etcd-prefix):
 *
 *   P rotation   rotation.json's text: kids, public keys, roles, ages
 *                (nothing secret); the version every signer follows
 *   P keys/KID   KID's private key (PKCS#8 PEM) sealed by keys/seal.h,
 *                with KID and this etcd key as associated data
 *   P rotator    the signer that rotates, under its etcd lease: the
 *                only one that writes the two above
 *   P nodes/ID   each live signer's report, under its lease:
 *                {"published":[kids],"signing":kid}, written when it
 *                changes (a few times a rotation, never per Sign); the
 *                rotator ages a next key only while every live signer
 *                publishes it, and restarts a retired key's wait while
 *                any signs with it
 *
 * The rotation document is replaced only by a transaction that compares
 * its mod revision with the one the writer last read: two signers can
 * never both write a next key or both promote. A key file is written
 * before the document that names it (in one transaction, so a reader
 * never sees a kid without its key) and deleted with the document that
 * stops naming it.
 *
 * Every value is checked as it is read: a sealed key that does not open
 * (another --signing-key-encryption-key-file, changed, cut short) or is
 * not its kid's key refuses the whole set, naming the etcd key; it is
 * never published or signed with, nor overwritten. A key under P that is
 * none of these is foreign: reported, never read.
 */
#ifndef OIDC_KEYSTORE_H
#define OIDC_KEYSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "keys/keydir.h"
#include "keys/keyset.h"
#include "keys/seal.h"
#include "util/etcd.h"

#define KEYSTORE_ROTATION "rotation"
#define KEYSTORE_KEYS     "keys/"
#define KEYSTORE_ROTATOR  "rotator"
#define KEYSTORE_NODES    "nodes/"

/* At most this many kids in a node's report are read. */
#define KEYSTORE_REPORT_MAX 64

/* A live signer's report. */
struct keystore_node {
    char id[64];
    char signing[KEY_KID_LEN + 1]; /* "" when it cannot sign */
    char (*published)[KEY_KID_LEN + 1];
    size_t npublished;
};

/* What the prefix holds. */
struct keystore_set {
    struct keydir *kd; /* NULL: no key set under the prefix yet */
    char **pem;        /* kd->count opened private keys (PKCS#8 PEM), wiped when freed */
    size_t *pem_len;
    size_t npem;                 /* entries of pem (kd->count when read): what keystore_set_free wipes */
    int64_t revision;            /* the store's revision of the read */
    int64_t rotation_rev;        /* P rotation's mod revision; 0: none */
    char rotator[128];           /* P rotator's value: who rotates; "" for nobody */
    struct keystore_node *nodes; /* the live signers' reports */
    size_t nnodes;
};

struct keystore {
    struct etcd *etcd;
    const char *prefix;
    const struct seal_key *key;
    int64_t lease; /* this signer's lease (P nodes/ID and, when it rotates, P rotator); 0: none */
    char id[128];  /* this signer, as P rotator names it: "HOST pid N" */
    char node[64]; /* its P nodes/ID: "HOST-N" */
};

/* A store on etcd (the caller's) under prefix, sealing with key (both
 * outlive it). */
void keystore_init(struct keystore *ks, struct etcd *etcd, const char *prefix, const struct seal_key *key);

/* Reads the prefix. ETCD_OK with *out filled (keystore_set_free it);
 * ETCD_BAD_ANSWER when a value is wrong (err names its etcd key and why:
 * the set must not be used); another code when etcd did not answer.
 * Foreign keys are reported through warn. */
enum etcd_rc keystore_read(struct keystore *ks, struct keystore_set *out, keyset_warn_cb warn, void *warn_ctx,
                           char *err, size_t errlen);

void keystore_set_free(struct keystore_set *set);

/* Writes the directory's state kd (its key files read from dir and
 * sealed) as P rotation, the keys etcd lacks as P keys/KID, and deletes
 * the P keys/KID of keys kd no longer names (known: the kids etcd holds,
 * as of the read whose rotation_rev is expect_rev; 0: nothing yet, P
 * rotation must not exist). In one transaction that holds only if P
 * rotation's mod revision is still expect_rev. ETCD_OK with *written (1:
 * done, *new_rev its revision; 0: another signer wrote first: read
 * again), or an error. */
enum etcd_rc keystore_write(struct keystore *ks, const char *dir, const struct keydir *kd, const struct keydir *known,
                            int64_t expect_rev, int *written, int64_t *new_rev, char *err, size_t errlen);

/* Makes this node's directory dir hold set: each key file (written
 * unless it is there with the same key) and rotation.json. Key files of
 * kids set no longer names are left to keydir_report_foreign. 0, or -1
 * with err. */
int keystore_adopt(const struct keystore_set *set, const char *dir, char *err, size_t errlen);

/* A new lease of ttl_s seconds for this signer (ks->lease), unless it
 * has one. */
enum etcd_rc keystore_lease(struct keystore *ks, int64_t ttl_s, char *err, size_t errlen);

/* Writes this signer's report (P nodes/ID) under its lease. */
enum etcd_rc keystore_report(struct keystore *ks, const char (*published)[KEY_KID_LEN + 1], size_t n,
                             const char *signing, char *err, size_t errlen);

/* The report of node id in set, or NULL. */
const struct keystore_node *keystore_node_find(const struct keystore_set *set, const char *id);

/* Tries to become the rotator: P rotator put under this signer's lease
 * (keystore_lease first) only if it does not exist. ETCD_OK with *won (1:
 * this signer rotates now; 0: another does), or an error. */
enum etcd_rc keystore_campaign(struct keystore *ks, int64_t ttl_s, int *won, char *err, size_t errlen);

/* Renews the rotator's lease: ETCD_OK with *held 0 when it has expired
 * (another may rotate now). */
enum etcd_rc keystore_keepalive(struct keystore *ks, int *held, char *err, size_t errlen);

/* Gives up rotating (revokes the lease: another takes over at once). */
void keystore_resign(struct keystore *ks);

#endif
