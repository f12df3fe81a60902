/* SPDX-License-Identifier: Apache-2.0 */
/*
 * routes: what a server of a fleet (--issuers-dir) answers from, an
 * immutable table from an issuer's host and path to that issuer's
 * snapshot. A request for ISSUER-PATH/.well-known/openid-configuration or
 * ISSUER-PATH/openid/v1/jwks on a host is answered by the issuer whose URL
 * has that host and path; the longest prefix of the request's path that
 * ends where a document's path begins is the only one that can name an
 * issuer, so the lookup is one probe of a hash table on the host and that
 * prefix: its cost does not grow with the number of issuers, and it
 * neither allocates nor locks.
 *
 * Hosts are compared without regard to case and without their port (two
 * issuers that differ only by port are one route); an issuer's path is
 * compared without its trailing slashes, as relying parties append the
 * document's path to it (OpenID Connect Discovery 1.0, section 4).
 *
 * A new table is built when an issuer comes, goes or changes, sharing the
 * snapshots of every other issuer (the same bodies and ETags): each route
 * holds one reference to its snapshot. The table is carried to the
 * workers inside a snapshot of its own (snapshot.h's routes), so the
 * workers' one pointer swap publishes a fleet as it does one issuer.
 */
#ifndef OIDC_ROUTES_H
#define OIDC_ROUTES_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "publish/snapshot.h"

/* A route key as routes_key writes it: "host/path" (host lowercased,
 * without port; path without trailing slashes). */
#define ROUTES_KEY_MAX 2100

/* One issuer as the table is built from it. */
struct routes_entry {
    const char *issuer;     /* its URL (the first --service-account-issuer) */
    struct snapshot *snap;  /* what it serves; the table takes a reference */
    char *const *audiences; /* its API audiences (copied); none: its URL, as kube-apiserver's default */
    size_t naudiences;
};

/* An issuer as the TokenReview API finds it by a token's iss: what it
 * verifies with. Valid as long as the table. */
struct routes_issuer {
    char *const *issuer; /* its exact URL, one string */
    const struct snapshot *snap;
    char *const *audiences; /* its API audiences, never none */
    size_t naudiences;
};

struct routes;

/* Writes the route key of issuer URL into key (ROUTES_KEY_MAX bytes).
 * Returns 0, or -1 when the URL has no host or is too long. Two issuers
 * with one key cannot both be served. */
int routes_key(const char *issuer, char key[ROUTES_KEY_MAX]);

/* A snapshot that routes requests to the n entries (their keys distinct;
 * a duplicate is an error), built at now. NULL when out of memory or on
 * a duplicate or bad URL (the caller checks keys first). The snapshot
 * holds one reference to each entry's snapshot. */
struct snapshot *routes_build(const struct routes_entry *entries, size_t n, time_t now);

/* The snapshot of the issuer a request for host (a Host header or an
 * authority: name, IPv4 or [IPv6], with or without ":port") and
 * issuer_path (the request path up to where a document's path begins)
 * is for, or NULL. */
const struct snapshot *routes_find(const struct routes *r, const char *host, size_t host_len, const char *issuer_path,
                                   size_t path_len);

/* The issuer whose URL is exactly iss (len bytes, case-sensitive, as a
 * token's iss claim is compared), or NULL. One probe of a hash table: no
 * allocation, no lock. */
const struct routes_issuer *routes_find_issuer(const struct routes *r, const char *iss, size_t len);

/* How many issuers the table routes to. */
size_t routes_count(const struct routes *r);

/* Frees the table and its references; for snapshot_release. */
void routes_free(struct routes *r);

#endif
