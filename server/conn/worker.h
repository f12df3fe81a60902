/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker: one thread, one h2o event loop, its own SO_REUSEPORT listening
 * sockets. A worker serves from the snapshot it was last handed; each one,
 * the first included, arrives as a message to its loop (worker_publish),
 * so the request path reads the current snapshot without locks or atomics.
 * The same goes for the TLS certificate. A worker accepts connections only
 * once it has a snapshot, and a certificate when it has TLS listeners.
 */
#ifndef OIDC_WORKER_H
#define OIDC_WORKER_H

#include <stddef.h>
#include <h2o.h>
#include <openssl/ssl.h>
#include "publish/snapshot.h"
#include "server/conn/connbudget.h"
#include "server/conn/listener.h"
#include "server/obs/accesslog.h"
#include "server/obs/metrics.h"

struct worker;

/* What the workers of one kind of listener share. */
struct worker_env {
    struct accesslog *accesslog;    /* or NULL */
    enum metrics_listener listener; /* whose counters */
    struct connbudget *budget;      /* the listener's, over all threads; NULL: neither limited nor counted (fuzzer) */
    uint64_t write_timeout_ms;      /* --write-timeout; 0: none (fuzzer) */
    uint64_t handshake_timeout_ms;  /* --handshake-timeout; 0: none (fuzzer) */
    int idle_make_room;             /* a connection between requests may make room too (the admin listener) */
};

/* Creates a worker that will accept on the listening sockets fds (it owns
 * them from now on) once it has been handed a snapshot (and a certificate,
 * if any of fds is a TLS one). Returns NULL on out of memory. */
struct worker *worker_create(h2o_globalconf_t *conf, const struct listener_fd *fds, size_t nfds,
                             const struct worker_env *env);

/* Starts the worker's thread. Returns 0 or an errno value. */
int worker_start(struct worker *w);

/* Runs w on the calling thread instead of its own (for the HTTP fuzzer,
 * which drives connections in-process): builds w's loop here and returns
 * it. The caller hands it a snapshot (worker_publish), runs the loop until
 * worker_serving says it took it, and hands it connections with
 * worker_serve_connection; w is never started, stopped or joined and lives
 * until the process exits. */
h2o_evloop_t *worker_attach(struct worker *w);

/* On w's thread: serves sock, a connection accepted on one of w's plain
 * (tls 0) or TLS listeners. When its listener is at its budget, or its
 * address at its share (env.budget), the connection of w that has sent
 * nothing for longest (of that address, for the share) is closed to make
 * room, or with env.idle_make_room the first accepted of those between
 * two requests; when w has none, sock is closed at once. */
void worker_serve_connection(struct worker *w, h2o_socket_t *sock, int tls);

/* On w's thread: 1 once w has what it needs to serve (see above). */
int worker_serving(const struct worker *w);

/* Thread-safe: hands the worker a new snapshot (taking one reference). */
void worker_publish(struct worker *w, struct snapshot *snap);

/* Thread-safe: new TLS connections use tls from now on (a reference is
 * taken); open connections keep their certificate. */
void worker_publish_tls(struct worker *w, SSL_CTX *tls);

/* Thread-safe: stops accepting, lets in-flight requests finish (at most
 * drain_ms), then ends the worker's loop. */
void worker_stop(struct worker *w, unsigned drain_ms);

/* Waits for the thread to end and frees the worker. */
void worker_join(struct worker *w);

/* For handlers: the snapshot to answer req from. It stays valid, however
 * many snapshots are published meanwhile, until req is disposed. */
const struct snapshot *worker_pin_snapshot(h2o_req_t *req);

/* For handlers: the RFC 4514 subject of the client certificate req's TLS
 * connection verified (tls.h), in the request's pool; its length, or 0
 * when the connection is plain or has none, or its certificate names
 * nobody (an empty subject), has expired since, or no longer verifies
 * against the client CA (reloaded since). */
size_t worker_client_subject(h2o_req_t *req, char **subject);

/* For handlers and loggers: the thread's counters and access-log buffer
 * (NULL when the access log is off). */
struct metrics_thread *worker_metrics(h2o_context_t *ctx);
struct accesslog_buffer *worker_accesslog(h2o_context_t *ctx);

#endif
