/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status: what the admin listener's page at "/" shows an operator — the
 * issuer, the jwks_uri, every published key with where it came from, how
 * long it stays and its role, the last reload and its result, the
 * --upstream's freshness when mirroring one, and the counters — as a
 * small HTML page with no script.
 *
 * The reload thread builds a struct status after every pass (reload.h's
 * reload_status) and publishes it here; from then on it is read-only and
 * reference counted. The admin handler takes the current one for the few
 * microseconds it renders the page (per request: the page is for people,
 * and the counters move), and releases it. A mutex guards only the swap
 * of the pointer, never a render or a write to a socket.
 *
 * What features add to the page:
 *  - a key's role (struct status_key.role): "signing" for the
 *    --signing-key-file key, "next", "signing" or "retired until ..." for
 *    a --signing-key-dir key (keys/keydir.h's keydir_role_of, as `keys`).
 *  - what changes between passes, read when the page is rendered: the
 *    pushes to object storage (push/status.h) and the --upstream's reads
 *    (struct status_upstream, which the caller fills from
 *    server/reload/mirror.h's mirror_status: the page is handed data and
 *    includes nothing of reload/) are shown this way.
 */
#ifndef OIDC_STATUS_H
#define OIDC_STATUS_H

#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#include "server/obs/metrics.h"

/* One published key. In a status, the strings are its own copies. */
struct status_key {
    const char *kid, *alg, *source;
    int bits;              /* RSA modulus or EC field bits */
    const char *curve;     /* "P-256", ... or NULL for RSA (static) */
    time_t first_seen;     /* 0: unknown */
    time_t retained_until; /* 0: still in the key files */
    const char *role;      /* e.g. "signing", or NULL */
};

/* One issuer file of a fleet (--issuers-dir). In a status, the strings
 * are its own copies. */
struct status_issuer {
    const char *name;      /* NAME of NAME.json */
    const char *file;      /* its path */
    const char *issuer;    /* the issuer it serves, or NULL: it serves nothing */
    const char *jwks_etag; /* of what it serves, or NULL */
    size_t nkeys;          /* keys it publishes */
    time_t published_at;   /* when what it serves was published */
    const char *problem;   /* why the file as it is now is refused, or NULL */
};

struct status {
    atomic_uint refs;
    int failed; /* an allocation failed while it was built: it is not published */
    char *issuer, *jwks_uri;
    unsigned long generation; /* of the published key set */
    time_t published_at;      /* when that set was published (its Last-Modified) */
    struct status_key *keys;
    size_t nkeys;
    time_t reload_at;   /* the last reload pass, wall clock; 0: none yet */
    char *reload_error; /* why it failed, or NULL when it succeeded */
    unsigned long reload_failures;
    int unavailable;       /* the documents answer 503: an --upstream has not answered yet */
    int key_store;         /* the signing keys are kept in etcd (--etcd-servers) */
    char *rotation_paused; /* with it: why nothing rotates, or NULL when rotation runs */
    /* A fleet (--issuers-dir): every issuer file, by name; the keys
     * above are then none, and issuer says what the fleet is. */
    int fleet;
    struct status_issuer *issuers;
    size_t nissuers;
};

/* A status for issuer and jwks_uri, with nothing else yet. NULL when out
 * of memory. */
struct status *status_new(const char *issuer, const char *jwks_uri);

/* Adds a copy of k (its strings copied too). */
void status_add_key(struct status *st, const struct status_key *k);

/* Adds a copy of is (its strings copied too) to a fleet's status. */
void status_add_issuer(struct status *st, const struct status_issuer *is);

/* How many issuers a page of the status shows (?page=N, from 1). */
#define STATUS_ISSUERS_PER_PAGE 100

/* Makes st the status shown (taking the caller's reference), unless it
 * failed while being built: it is then freed and the previous one stays.
 * Thread-safe. */
void status_publish(struct status *st);

/* Shows nothing any more (at exit). Thread-safe. */
void status_clear(void);

/* The status shown now, with a reference for the caller (NULL: none yet).
 * Thread-safe. */
struct status *status_acquire(void);

void status_release(struct status *st);

/* The build the page names: version, commit, date (static strings). */
struct status_build {
    const char *version, *commit, *date;
    size_t page; /* a fleet's page of issuers, from 1 (0: the first) */
};

/* The --upstream's reads as they are when the page is rendered, for the
 * page (server/reload/mirror.h's mirror_status_page fills it): the strings
 * point into the caller's copy of the mirror's status. */
struct status_upstream {
    const char *url;
    int has_data;            /* a good answer was read: the documents are served */
    int issuer_mismatch;     /* the last answer named another issuer */
    const char *mismatch;    /* that issuer, else "" */
    time_t last_success;     /* wall clock of the last good answer; 0: none */
    time_t last_attempt;     /* wall clock the last read ended; 0: none */
    time_t max_staleness;    /* --upstream-max-staleness, seconds */
    int stale;               /* last_success is older than max_staleness at the page's now */
    unsigned long failures;  /* failed reads since the last good one */
    const char *last_result; /* the last read's result name, "" before the first */
    int last_failed;         /* the last read failed */
    const char *last_error;  /* the last failure's message, "" after a good answer */
};

/* The page for st at now, with the --upstream's reads (NULL without
 * --upstream), the counters rows (metrics_summary), the pushes to object
 * storage as they are now (push/status.h) and build: malloc'ed HTML whose
 * length is *len, or NULL when out of memory. Every value is escaped; st
 * may be NULL (nothing published yet). */
char *status_render_html(const struct status *st, const struct status_upstream *upstream,
                         const struct metrics_summary_row *rows, size_t nrows, const struct status_build *build,
                         time_t now, size_t *len);

#endif
