/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls: the TLS contexts of the --tls-listen listeners and of the TokenReview
 * listener: TLS 1.2 and 1.3 only, forward-secret AEAD cipher suites, ALPN
 * http/1.1 (and h2 with --http2), and for the TokenReview listener,
 * optionally, client certificates. Built from the certificate chain, key
 * and client CA files; rebuilt when they change.
 *
 * The files are read with file_read (regular files only, never
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

/* Which files a TLS context is built from, and the flags that name them
 * (for messages). */
struct tls_paths {
    const char *cert_flag, *cert_file; /* "tls-cert-file", the path */
    const char *key_flag, *key_file;
    const char *ca_flag, *ca_file; /* client CA: ca_file NULL asks for no client certificate */
};

/* The files as read once: a context is built from exactly the bytes the
 * change digest covers. */
struct tls_files {
    const struct tls_paths *paths; /* not owned */
    char *cert, *key, *ca;         /* their bytes, owned (the key is wiped when freed); ca NULL without one */
    size_t cert_len, key_len, ca_len;
    unsigned char digest[32]; /* of all of them, so a reload rebuilds (and drops TLS session state) only on a change */
    char key_warning[512];    /* "" or why the key file's permissions are unsafe */
};

/* Reads the files of p: regular files only, never blocking (file_read).
 * Returns 0, or -1 with a message naming the flag and file in err. */
int tls_files_read(const struct tls_paths *p, struct tls_files *f, char *err, size_t errlen);

void tls_files_free(struct tls_files *f);

/* A new context for f's chain (PEM, leaf first) and key. The key must
 * match the certificate. ALPN offers h2 only when http2 is set. With a
 * client CA, a client may present a certificate, which must chain to one
 * of the CA's certificates (the handshake fails otherwise), and need not:
 * a caller may authenticate another way (Go's VerifyClientCertIfGiven).
 * A session with a client certificate is resumed only while that
 * certificate is valid, and never across contexts (each has its own
 * ticket keys), so a reload that changes the client CA ends resumption.
 * *not_after receives the leaf's expiry. NULL with a message naming the
 * flag, the file and the problem. */
SSL_CTX *tls_context_new(const struct tls_files *f, int http2, time_t *not_after, char *err, size_t errlen);

struct st_h2o_socket_t; /* h2o's h2o_socket_t */

/* What the client certificate of a connection was verified against after
 * the context changed under it (a client CA reload while the connection
 * stayed open): that context (a reference) and whether it verified. Zero
 * when the connection opens; tls_recheck_clear when it closes. */
struct tls_recheck {
    SSL_CTX *ctx;
    int ok;
};

/* The client certificate that sock, a connection accepted with the context
 * accepted, authenticates its caller with at now: one the handshake (or
 * the session it resumed) verified against the client CA, within its
 * validity period now and, when current (the context new connections get)
 * is another one, verifying against current's client CA too (checked once
 * per context, remembered in rc). NULL when it has none, or one that
 * expired or lost its CA since the handshake: such a caller is nobody, as
 * if it had sent no certificate. Borrowed: valid while the connection
 * lives. */
X509 *tls_client_certificate(struct st_h2o_socket_t *sock, SSL_CTX *accepted, SSL_CTX *current, time_t now,
                             struct tls_recheck *rc);

void tls_recheck_clear(struct tls_recheck *rc);

/* Whether sock, a connection accepted with the context ctx, has finished
 * its TLS handshake. 0 until h2o has made the connection's SSL object,
 * which it does once the client's first bytes arrive. */
int tls_handshake_done(struct st_h2o_socket_t *sock, SSL_CTX *ctx);

/* The subject of cert in RFC 4514 form as OpenSSL prints it with
 * XN_FLAG_RFC2253 ("CN=vault,O=example", the most specific attribute
 * first; what `openssl x509 -noout -subject -nameopt RFC2253` prints).
 * malloc'ed, never empty; NULL when the subject is empty (a certificate
 * naming its holder in subjectAltName only names no caller) or out of
 * memory. */
char *tls_subject(X509 *cert);

#endif
