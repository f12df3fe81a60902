/*
 * worker: one thread, one h2o event loop, its own SO_REUSEPORT listening
 * sockets. A worker serves from the snapshot it was last handed; a new one
 * arrives as a message to its loop, so the request path reads the current
 * snapshot without locks or atomics.
 */
#ifndef OIDC_WORKER_H
#define OIDC_WORKER_H

#include <stddef.h>
#include <h2o.h>
#include "keys/snapshot.h"

struct worker;

/* Creates a worker that will accept on the listening sockets fds (it owns
 * them from now on) and serve from snap (it takes one reference). Returns
 * NULL on out of memory. */
struct worker *worker_create(h2o_globalconf_t *conf, const int *fds, size_t nfds, struct snapshot *snap);

/* Starts the worker's thread. Returns 0 or an errno value. */
int worker_start(struct worker *w);

/* Thread-safe: hands the worker a new snapshot (taking one reference). */
void worker_publish(struct worker *w, struct snapshot *snap);

/* Thread-safe: stops accepting, lets in-flight requests finish (at most
 * drain_ms), then ends the worker's loop. */
void worker_stop(struct worker *w, unsigned drain_ms);

/* Waits for the thread to end and frees the worker. */
void worker_join(struct worker *w);

/* For handlers: the snapshot to answer req from. It stays valid, however
 * many snapshots are published meanwhile, until req is disposed. */
const struct snapshot *worker_pin_snapshot(h2o_req_t *req);

#endif
