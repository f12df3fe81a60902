/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upstream: one read of an API server's two documents, to mirror them
 * (--upstream). Both come from the base URL itself, never from the
 * jwks_uri it advertises, which often names an advertise address or a pod
 * IP nobody outside can reach (docs/compatibility.md §8). Each request
 * carries the bearer token read again from its file (projected tokens
 * rotate), trusts the given CA file, and is conditional (If-None-Match
 * with the ETag of the last good answer), through util/http_client.h.
 *
 * The discovery document's issuer must equal the expected one byte for
 * byte; the JWKS is read by jwks_parse, kids and order kept, so that with
 * nothing else published the documents rendered from it are the
 * upstream's own bytes.
 *
 * No thread, no clock, no decision about when to ask: the caller
 * (server/reload/mirror.h) decides that, and what a result means for what
 * is published.
 */
#ifndef OIDC_UPSTREAM_H
#define OIDC_UPSTREAM_H

#include <stddef.h>

#include "keys/keyset.h"

/* Answers larger than these are refused: a discovery document is a few
 * hundred bytes, a JWKS a few keys (JWKS_MAX_LEN for the JWKS). */
#define UPSTREAM_DISCOVERY_MAX (64 * 1024)

/* How a read ended; upstream_result_name gives each a stable name for
 * metrics and logs. */
enum upstream_result {
    UPSTREAM_OK,               /* both documents read and usable */
    UPSTREAM_NOT_MODIFIED,     /* both answered 304: the last good answer stands */
    UPSTREAM_ERR_REQUEST,      /* not sent: the token or CA file is unusable */
    UPSTREAM_ERR_CONNECT,      /* name resolution, refused, unreachable */
    UPSTREAM_ERR_TLS,          /* handshake, or the certificate did not verify */
    UPSTREAM_ERR_TIMEOUT,      /* --upstream-timeout */
    UPSTREAM_ERR_UNAUTHORIZED, /* 401 or 403: the token */
    UPSTREAM_ERR_STATUS,       /* another status: 5xx, 404, a redirect, or a broken answer */
    UPSTREAM_ERR_MALFORMED,    /* not a discovery document or a JWKS, or no usable key in it */
    UPSTREAM_ERR_ISSUER,       /* its issuer is not the expected one */
    UPSTREAM_NRESULTS
};

/* One document as last read successfully: its bytes and ETag. */
struct upstream_doc {
    char *body;
    size_t len;
    char *etag; /* or NULL */
};

/* The upstream and what its last good answer was. The strings are the
 * caller's and must outlive it. */
struct upstream {
    const char *base_url;   /* https://host[:port][/path] */
    const char *ca_file;    /* or NULL: the system store */
    const char *token_file; /* or NULL: no Authorization */
    const char *issuer;     /* the expected issuer */
    long timeout_ms;        /* per request */
    keyset_warn_cb warn;    /* a JWK left out of the set (jwks_parse), or NULL */
    void *warn_ctx;
    struct upstream_doc discovery, jwks;
};

/* What one read gave. */
struct upstream_read {
    enum upstream_result result;
    struct keyset *keys; /* UPSTREAM_OK with a JWKS that changed: the new set, the caller's; else NULL */
    long max_age;        /* the smallest Cache-Control max-age of the answers, or -1 */
    char *issuer;        /* UPSTREAM_ERR_ISSUER: the upstream's issuer (malloc'ed), else NULL */
    char message[1024];  /* why, for an error; names the URL */
};

/* An upstream with no answer yet. */
void upstream_init(struct upstream *u, const char *base_url, const char *ca_file, const char *token_file,
                   const char *issuer, long timeout_ms);

/* Reads the discovery document and then the JWKS (not when the first one
 * failed) into *out. A good answer becomes u's last good one; any failure
 * leaves that as it was. */
void upstream_fetch(struct upstream *u, struct upstream_read *out);

/* A stable name of a result: "ok", "not_modified", "request", ... */
const char *upstream_result_name(enum upstream_result r);

void upstream_read_clear(struct upstream_read *r);
void upstream_clear(struct upstream *u);

#endif
