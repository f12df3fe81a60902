/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pki: tells a cluster CA's key or certificate from a service-account key,
 * so that a PKI directory (kubeadm's /etc/kubernetes/pki) is never
 * published as token-signing keys: relying parties would then take
 * whatever the CA's private key signs for a service-account token.
 *
 * By name, in any case, of the file a path reaches: the names PKI layouts
 * give a CA's certificate and key. By content: a key whose public half is
 * that of a CA certificate (basicConstraints CA:TRUE) in the directory of
 * the file it was read from, as kubeadm keeps ca.key beside ca.crt. (A
 * file that holds a CA certificate itself is refused by keys/pem.h.)
 */
#ifndef OIDC_PKI_H
#define OIDC_PKI_H

#include <openssl/evp.h>

/* A directory holds a few dozen files at most in any PKI layout; the
 * content check reads no more than this many of a directory's files
 * (sorted by name), so that a key file in a crowded directory costs a
 * bounded read. */
#define PKI_MAX_FILES 256

/* Whether a file's base name is one a PKI layout gives a CA's certificate
 * or key, any case: ca.crt, ca.key, ca.pem, ca-key.pem; front-proxy-ca.*,
 * server-ca.*, kubernetes-ca.pem, etcd-ca-key.pem (a stem that is "ca" or
 * ends in "-ca" or "_ca", once the extensions .crt .cert .cer .key .pem
 * .der .pub and a "-key", "_key", "-cert", "_cert" or "-crt" ending are
 * taken off). A service-account key is never named so. */
int pki_ca_named(const char *name);

/* The public keys of the CA certificates of one directory. */
struct pki_cas;

/* Reads the CA certificates among the visible regular files of dir (at
 * most PKI_MAX_FILES, each at most PEM_MAX_FILE_SIZE; what cannot be read
 * is passed over: it is nobody's key), but the file named skip (NULL:
 * none): the key file being read, whose own certificates its reader
 * refuses, is not opened a second time. NULL when out of memory. */
struct pki_cas *pki_cas_read(const char *dir, const char *skip);

/* The directory pki_cas_read was given. */
const char *pki_cas_dir(const struct pki_cas *c);

/* The path of a CA certificate of c whose public key is pub, or NULL. */
const char *pki_ca_of(const struct pki_cas *c, const EVP_PKEY *pub);

void pki_cas_free(struct pki_cas *c);

#endif
