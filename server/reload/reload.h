/*
 * reload: keeps the published key set in step with the key files.
 *
 * Runs on its own thread (reload_start): it builds the next snapshot off
 * the request path whenever inotify reports a change to a key file or its
 * directory (which includes atomic renames and the kubelet's "..data"
 * swap), on reload_request (SIGHUP), and every --key-reload-interval. A
 * snapshot is published to the workers only when its bytes differ from the
 * current one, so ETag and Last-Modified change only with the documents. A
 * failed reload keeps the last good set; a key that vanishes from a file
 * still in place leaves only once a later read confirms it
 * (keys/removal.h). It also drops retained keys on time and watches the
 * signing key's age.
 *
 * Signals are not its business: the thread that waits for them never
 * touches a file, so SIGTERM is handled even when a read here never
 * returns; /livez reports such a stall (health.h).
 */
#ifndef OIDC_RELOAD_H
#define OIDC_RELOAD_H

#include <stddef.h>
#include "config/config.h"
#include "publish/snapshot.h"
#include <openssl/ssl.h>
#include "server/worker.h"

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

/* Starts the reload thread, which from now on hands each new snapshot and
 * TLS context to the workers. Returns 0 or an errno value. */
int reload_start(struct reload *r, struct worker *const *workers, size_t nworkers);

/* Thread-safe: asks for every file to be read again now (SIGHUP). */
void reload_request(struct reload *r);

/* Stops the thread: once this returns, nothing more is handed to the
 * workers. Waits up to timeout_ms for the thread to end and returns 0, or
 * -1 when it did not (stuck in a read): it is then abandoned, still
 * using r and the config. */
int reload_stop(struct reload *r, unsigned timeout_ms);

/* Frees r and returns 0; or, when its thread was abandoned, frees nothing
 * and returns -1: the caller must then end the process without freeing
 * the config either (_exit). */
int reload_free(struct reload *r);

#endif
