/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pem: reads the PEM files kube-apiserver accepts as
 * --service-account-key-file and turns every usable block into a public key.
 *
 * Accepted blocks: RSA PRIVATE KEY (PKCS#1), PRIVATE KEY (PKCS#8, RSA or EC),
 * EC PRIVATE KEY (SEC1), PUBLIC KEY (PKIX), RSA PUBLIC KEY (PKCS#1) and
 * CERTIFICATE. Other blocks (EC PARAMETERS, ...) are skipped silently, as
 * kube-apiserver does. Encrypted PEM is an error, and so is a CA
 * certificate (basicConstraints CA:TRUE), which kube-apiserver would take.
 * Callers read the files with util/file.h's file_read: only regular files,
 * never blocking.
 */
#ifndef OIDC_PEM_H
#define OIDC_PEM_H

#include <stddef.h>
#include <openssl/evp.h>

/* A key file is a handful of PEM blocks; anything bigger is a mistake (a
 * wrong path, a log file) and is refused before it is read into memory. */
#define PEM_MAX_FILE_SIZE (1024 * 1024)

/* Called once for every public key found, in file order. block is the
 * 1-based index of the PEM block in the file. was_private is 1 when the
 * block held a private key. The callback takes ownership of pub. Returning
 * non-zero stops the read; pem_read_mem then fails with the message the
 * callback wrote into err. */
typedef int (*pem_key_cb)(void *ctx, EVP_PKEY *pub, const char *path, int block, int was_private, char *err,
                          size_t errlen);

/* Calls cb for each key of the PEM text pem (the caller read the file
 * with file_read, within PEM_MAX_FILE_SIZE). name (the file's path) is
 * used in messages only. Returns the number of keys found (>= 1) or -1
 * with a message naming the file (and block) in err: encrypted PEM,
 * malformed base64 or DER, a CA certificate, an unsupported key type, or
 * no usable key at all. */
int pem_read_mem(const char *name, const char *pem, size_t len, pem_key_cb cb, void *ctx, char *err, size_t errlen);

/* Calls cb (was_private 0) with the public key of each CA certificate
 * (basicConstraints CA:TRUE) of the PEM text, in file order; every other
 * block is passed over, and a malformed one ends the walk. name is for
 * cb. For telling a CA's key by the certificate beside it (keys/pki.h).
 * Returns how many cb took, or -1 when cb refused one or the text is
 * malformed (some may have been delivered). */
int pem_ca_keys(const char *name, const char *pem, size_t len, pem_key_cb cb, void *ctx);

#endif
