/*
 * tls: the TLS context of the --tls-listen listeners: TLS 1.2 and 1.3 only,
 * forward-secret AEAD cipher suites, ALPN http/1.1 (and h2 with --http2).
 * Built from the certificate chain and key files; rebuilt when they change.
 *
 * The files are read with keyfile_read (regular files only, never
 * blocking) and the context is built from those bytes: tls.c loads the
 * chain as SSL_CTX_use_certificate_chain_file would, because that function
 * opens the path itself, which waits forever on a FIFO, and could read
 * other bytes than the ones the change digest covers.
 */
#ifndef OIDC_TLS_H
#define OIDC_TLS_H

#include <stddef.h>
#include <time.h>
#include <openssl/ssl.h>

/* The certificate chain and private key files as read once: a context is
 * built from exactly the bytes the change digest covers. */
struct tls_files {
    const char *cert_file, *key_file; /* the configured paths (not owned) */
    char *cert, *key;                 /* their bytes, owned (the key is wiped when freed) */
    size_t cert_len, key_len;
    unsigned char digest[32]; /* of both, so a reload rebuilds (and drops TLS session state) only on a change */
    char key_warning[512];    /* "" or why the key file's permissions are unsafe */
};

/* Reads both files: regular files only, never blocking (keyfile_read).
 * Returns 0, or -1 with a message naming the flag and file in err. */
int tls_files_read(const char *cert_file, const char *key_file, struct tls_files *f, char *err, size_t errlen);

void tls_files_free(struct tls_files *f);

/* A new context for f's chain (PEM, leaf first) and key. The key must
 * match the certificate. ALPN offers h2 only when http2 is set.
 * *not_after receives the leaf's expiry. NULL with a message naming the
 * file and the problem. */
SSL_CTX *tls_context_new(const struct tls_files *f, int http2, time_t *not_after, char *err, size_t errlen);

#endif
