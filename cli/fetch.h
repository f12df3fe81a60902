/*
 * fetch: a minimal, strict HTTP/1.1 GET client over OpenSSL BIOs, enough to
 * read a discovery document and its JWKS the way a relying party does.
 */
#ifndef OIDC_FETCH_H
#define OIDC_FETCH_H

#include <stddef.h>

/* Every connect, TLS handshake, write and read of one fetch_url call share
 * this budget (DNS resolution, done by getaddrinfo, is not bounded by it). */
#define FETCH_TIMEOUT_MS 10000

/* Status line and headers together may not exceed this. */
#define FETCH_HEADER_MAX (64 * 1024)

/* GETs url: https://host[:port][/path][?query], or http:// when allow_http;
 * an IPv6 host goes in brackets; userinfo is refused, a fragment is not
 * sent. https verifies the peer against ca_file (PEM, may be NULL for the
 * system CA paths), TLS 1.2 or later, with SNI and host name (or IP
 * address) verification.
 *
 * Only status 200 is a success; redirects are not followed. The body may be
 * sent with Content-Length, chunked, or until the connection closes (over
 * TLS that end must be a close_notify). On success returns 0 and sets *body
 * to a malloc'ed copy of the body, NUL-terminated (free() it), and *len to
 * its length without the NUL. Otherwise returns -1 with a one-line message
 * in err starting with "GET <url>: ". */
int fetch_url(const char *url, const char *ca_file, int allow_http, size_t max_body, char **body, size_t *len,
              char *err, size_t errlen);

#endif
