/* SPDX-License-Identifier: Apache-2.0 */
/*
 * issuer: an issuer URL taken apart, and how two issuers differ.
 *
 * Relying parties compare the issuer byte for byte: the token's iss, the
 * discovery document's issuer and the URL registered with them must be
 * one string (docs/compatibility.md §6). When they are not, the operator
 * needs to know which part differs (a trailing slash, the case, a port,
 * the scheme, the path), because the strings often look alike.
 */
#ifndef OIDC_DIAG_ISSUER_H
#define OIDC_DIAG_ISSUER_H

#include <stddef.h>

/* A part of a URL: len bytes at s (not NUL-terminated). */
struct issuer_part {
    const char *s;
    size_t len;
};

/* The parts of scheme://[userinfo@]host[:port][/path][?query][#fragment],
 * pointing into the URL. */
struct issuer_url {
    struct issuer_part scheme;   /* "https" */
    struct issuer_part userinfo; /* without the "@" */
    struct issuer_part host;     /* an IPv6 host keeps its brackets */
    struct issuer_part port;     /* the text after ":" */
    struct issuer_part path;     /* from the first "/", may be empty */
    struct issuer_part query;    /* after "?" */
    struct issuer_part fragment; /* after "#" */
    int has_userinfo, has_port, has_query, has_fragment;
};

/* Splits url. Returns 0, or -1 when it has no "scheme://" or no host. */
int issuer_url_split(const char *url, struct issuer_url *u);

/* Writes into out how got differs from want, naming each part that does:
 * "a trailing slash", "case", "port", "scheme", "host", "path", "query",
 * "fragment", joined ("port and a trailing slash"). Returns 0 when the
 * two are the same string (out is then empty), 1 otherwise. */
int issuer_difference(const char *want, const char *got, char *out, size_t len);

#endif
