/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keyset: the ordered, de-duplicated set of public keys read from the
 * configured key files. Order is the order of the files, then of the PEM
 * blocks inside each file, exactly as kube-apiserver publishes them.
 */
#ifndef OIDC_KEYSET_H
#define OIDC_KEYSET_H

#include <stddef.h>
#include <stdint.h>
#include "keys/key.h"

struct keyset {
    struct key *keys;
    size_t count;
    size_t cap;  /* allocated entries */
    uint64_t id; /* unique per loaded set in this process: tells caches the set changed */
};

/* Receives non-fatal findings (an RSA key below 2048 bits, the same public
 * key given twice, a private key file others can read, a key directory
 * others can write) as one-line messages. May be NULL. */
typedef void (*keyset_warn_cb)(void *ctx, const char *msg);

/* An empty set with a fresh, process-unique id; NULL when out of memory. */
struct keyset *keyset_new(void);

/* Loads every path in order. A path is a key file or a directory source.
 * A key file is PEM, or a JWKS document (what `kubectl get --raw
 * /openid/v1/jwks` prints, read by jwks_parse: each key keeps its kid).
 * A directory contributes each visible (not dot-named) regular file in it,
 * symlinks followed, sorted by name: the layout of a Kubernetes Secret or
 * ConfigMap volume works. Subdirectories and dangling symlinks are
 * skipped; any other entry (a FIFO, socket or device) is an error. A
 * directory that looks like a PKI directory, a file named like a CA's key
 * or certificate (keys/pki.h: the name of the file the path reaches, any
 * case), and a key whose public half is a CA certificate's beside it are
 * refused: a kubeadm /etc/kubernetes/pki would otherwise publish the
 * cluster CA's and the API server's keys as token-signing keys. One kid for two different keys is an error. Returns a new keyset
 * with at least one key, or NULL with a message in err naming the file.
 * Nothing is returned partially: one bad file fails the whole load. */
struct keyset *keyset_load(char *const *paths, size_t npaths, keyset_warn_cb warn, void *warn_ctx, char *err,
                           size_t errlen);

/* Adds pub (ownership taken in every case) under source with kid (as a
 * JWKS gave it; NULL: the derived one, see key_init), unless a key with
 * that kid is already in the set: then *dup points at that key. Returns 1
 * when added, 0 for a duplicate, -1 with the reason in err (unsupported
 * type, unusable kid, out of memory). */
int keyset_add(struct keyset *ks, EVP_PKEY *pub, const char *source, const char *kid, const struct key **dup, char *err,
               size_t errlen);

/* Adds a copy of k (its public key, kid, source and file) unless its kid
 * is in the set already. Returns 1 when added, 0 for a duplicate, -1 with
 * the reason in err. */
int keyset_add_copy(struct keyset *ks, const struct key *k, char *err, size_t errlen);

/* Adds a copy of every key of src after dst's, in src's order. A key of
 * src whose kid dst has already is left out: silently when it is the same
 * key, with a warning naming both when it is another one (the first
 * stays; one kid cannot name two keys). 0, or -1 with the reason in err. */
int keyset_add_all(struct keyset *dst, const struct keyset *src, keyset_warn_cb warn, void *warn_ctx, char *err,
                   size_t errlen);

/* Looks a key up by kid; NULL when absent. */
const struct key *keyset_find(const struct keyset *ks, const char *kid);

void keyset_free(struct keyset *ks);

#endif
