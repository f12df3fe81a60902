/*
 * reload: keeps the published key set in step with the key files.
 *
 * Runs on the main thread: it builds the next snapshot off the request path
 * whenever inotify reports a change to a key file or its directory (which
 * includes atomic renames and the kubelet's "..data" swap), on SIGHUP, and
 * every --key-reload-interval. A snapshot is published to the workers only
 * when its bytes differ from the current one, so ETag and Last-Modified
 * change only with the documents. A failed reload keeps the last good set.
 * It also drops retained keys on time and watches the signing key's age.
 */
#ifndef OIDC_RELOAD_H
#define OIDC_RELOAD_H

#include <signal.h>
#include <stddef.h>
#include "config/config.h"
#include "keys/snapshot.h"
#include <openssl/ssl.h>
#include "worker.h"

struct reload;

/* Loads the retention state and the key set for the first time. Returns
 * NULL (the reason is logged) when there is nothing valid to publish: the
 * server refuses to start then. */
struct reload *reload_create(const struct config *cfg);

/* The snapshot currently published (the reloader keeps its reference). */
struct snapshot *reload_current(const struct reload *r);

/* The TLS context for --tls-listen (NULL without); the reloader keeps its
 * reference and hands new ones to the workers itself. */
SSL_CTX *reload_tls(const struct reload *r);

/* Serves until SIGTERM or SIGINT (blocked in the caller's mask, listed in
 * signals), publishing each new snapshot to workers. Returns the signal. */
int reload_run(struct reload *r, struct worker *const *workers, size_t nworkers, const sigset_t *signals);

void reload_free(struct reload *r);

#endif
