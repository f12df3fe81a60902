/*
 * tls: the TLS context of the --tls-listen listeners: TLS 1.2 and 1.3 only,
 * forward-secret AEAD cipher suites, ALPN http/1.1 (and h2 with --http2).
 * Built from the certificate chain and key files; rebuilt when they change.
 */
#ifndef OIDC_TLS_H
#define OIDC_TLS_H

#include <stddef.h>
#include <time.h>
#include <openssl/ssl.h>

/* A new context for cert_file (PEM chain, leaf first) and key_file. The
 * key must match the certificate. ALPN offers h2 only when http2 is set.
 * *not_after receives the leaf's expiry. NULL with a message naming the
 * file and the problem. */
SSL_CTX *tls_context_new(const char *cert_file, const char *key_file, int http2, time_t *not_after, char *err,
                         size_t errlen);

/* A digest of both files' bytes, so a reload rebuilds the context (and
 * drops TLS session state) only when they really changed. Returns 0 or -1
 * when a file cannot be read. */
int tls_files_digest(const char *cert_file, const char *key_file, unsigned char digest[32]);

#endif
