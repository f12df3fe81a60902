/*
 * cert: the TLS certificate the --tls-listen listeners serve, rebuilt when
 * its files change. A reload reads both files (never blocking, tls.h) and
 * builds a new context only when their bytes changed, so an unchanged
 * certificate keeps its TLS session state; a broken pair keeps the current
 * one (logged, counted, and /readyz turns 503 if it stays broken).
 */
#ifndef OIDC_CERT_H
#define OIDC_CERT_H

#include <time.h>
#include <openssl/ssl.h>

#include "config/config.h"

struct cert {
    const struct config *cfg;
    SSL_CTX *ctx;             /* served now, or NULL (no TLS listener, or none usable yet) */
    unsigned char digest[32]; /* of the files ctx was built from */
};

/* Reads the certificate for the first time at now. Returns 0 (ctx stays
 * NULL without --tls-listen), or -1 (logged) when there are TLS listeners
 * and no usable certificate: the server refuses to start then. */
int cert_init(struct cert *c, const struct config *cfg, time_t now);

/* Reads the files again at now. Returns the new context when they changed
 * and build one (c keeps its reference; the caller hands it on), else NULL
 * (unchanged, or broken: logged and counted; the current one stays). */
SSL_CTX *cert_reload(struct cert *c, time_t now);

void cert_clear(struct cert *c);

#endif
