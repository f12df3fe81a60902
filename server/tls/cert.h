/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cert: a TLS certificate the server serves, rebuilt when its files change:
 * the --tls-listen listeners' (--tls-cert-file, --tls-private-key-file) and
 * the TokenReview listener's (--token-review-tls-cert-file,
 * --token-review-tls-private-key-file and the client CA,
 * --token-review-client-ca-file). A reload reads the files (never
 * blocking, tls.h) and builds a new context only when their bytes
 * changed, so an unchanged certificate keeps its TLS session state; a
 * broken set keeps the current one (logged, counted, and /readyz turns 503
 * if it stays broken).
 */
#ifndef OIDC_CERT_H
#define OIDC_CERT_H

#include <time.h>
#include <openssl/ssl.h>

#include "config/config.h"
#include "server/obs/metrics.h"
#include "server/tls/tls.h"

/* Whose certificate. */
enum cert_kind {
    CERT_PUBLIC,       /* --tls-listen */
    CERT_TOKEN_REVIEW, /* --token-review-listen with --token-review-tls-cert-file */
    CERT_NKINDS
};

struct cert {
    enum cert_kind kind;
    struct tls_paths paths;     /* its files and flags */
    int http2;                  /* ALPN offers h2 */
    int wanted;                 /* some listener serves it */
    enum metrics_source source; /* whose reloads are counted and reported on /readyz */
    const char *what;           /* for the log: "TLS certificate", ... */
    SSL_CTX *ctx;               /* served now, or NULL (not wanted, or none usable yet) */
    unsigned char digest[32];   /* of the files ctx was built from */
};

/* Sets c up for the certificate of kind in cfg (which must outlive c);
 * reads nothing yet, so that its files can be watched first. */
void cert_init(struct cert *c, const struct config *cfg, enum cert_kind kind);

/* Reads the certificate for the first time at now. Returns 0 (ctx stays
 * NULL when no listener serves it), or -1 (logged) when a listener serves
 * it and it is not usable: the server refuses to start then. */
int cert_load(struct cert *c, time_t now);

/* Reads the files again at now. Returns the new context when they changed
 * and build one (c keeps its reference; the caller hands it on), else NULL
 * (unchanged, or broken: logged and counted; the current one stays). */
SSL_CTX *cert_reload(struct cert *c, time_t now);

/* The paths to watch for changes: writes up to three into paths and
 * returns how many (none when no listener serves it). */
size_t cert_watch_paths(const struct cert *c, char **paths);

void cert_clear(struct cert *c);

#endif
