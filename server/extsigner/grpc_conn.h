/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grpc_conn: one connection of kube-apiserver to the external signer,
 * HTTP/2 (nghttp2) carrying gRPC's unary calls: a request is HEADERS
 * (POST, :path /PACKAGE.ExternalJWTSigner/METHOD, content-type
 * application/grpc, optional grpc-timeout) and DATA holding one
 * length-prefixed message; the answer is HEADERS, DATA with one
 * length-prefixed message and trailers with grpc-status, or, for an error,
 * one HEADERS frame carrying grpc-status and grpc-message ("Trailers-Only").
 * The protocol is gRPC's doc/PROTOCOL-HTTP2.md; docs/external-signer.md
 * says what of it this server takes and answers.
 *
 * Every call is answered where it completes, on the thread that reads the
 * connection, from the signer state current at that moment
 * (jose/signer.h): nothing is queued between reading a call and signing
 * it, so a connection never holds more than the calls its client has in
 * flight (at most GRPC_CONN_MAX_STREAMS, each at most the message limit,
 * and all the connections' together at most --external-signer-max-
 * buffered-bytes: a call that would pass it is answered
 * RESOURCE_EXHAUSTED).
 * While its answers cannot be written, the connection is not read: a
 * client that does not read cannot make the server buffer without bound.
 */
#ifndef OIDC_EXTSIGNER_GRPC_CONN_H
#define OIDC_EXTSIGNER_GRPC_CONN_H

#include <stdatomic.h>
#include <stddef.h>

#include "jose/signer.h"

/* Calls one connection may have open at once (SETTINGS_MAX_CONCURRENT_
 * STREAMS). */
#define GRPC_CONN_MAX_STREAMS 1000

/* What every connection of a server answers from, and the memory all of
 * them share. */
struct grpc_conn_env {
    struct signer_slot *slot;
    size_t max_claims;       /* --max-token-size: the longest claims Sign takes */
    size_t max_buffered;     /* --external-signer-max-buffered-bytes */
    atomic_size_t *buffered; /* what unfinished calls hold now, over every connection */
};

struct grpc_conn;

/* Takes fd (connected, non-blocking; closed by grpc_conn_free) and queues
 * the server's SETTINGS. NULL when out of memory (fd is then closed). */
struct grpc_conn *grpc_conn_new(int fd, const struct grpc_conn_env *env);

/* Reads what fd has (unless answers are still waiting to be written),
 * answers the calls that are complete, and writes what it can. 0 while
 * the connection goes on, -1 once it is over (closed by the peer, a
 * protocol error, or finished after grpc_conn_goaway). */
int grpc_conn_io(struct grpc_conn *c);

/* Whether answers wait for fd to become writable: the caller then waits
 * for EPOLLOUT instead of EPOLLIN. */
int grpc_conn_blocked(const struct grpc_conn *c);

/* Whether c has no call open and no answer waiting: closing it loses
 * nothing (a gRPC client reconnects on its next call). */
int grpc_conn_idle(const struct grpc_conn *c);

/* Tells the client the server is going away (GOAWAY) and writes what can
 * be written now, without waiting. */
void grpc_conn_goaway(struct grpc_conn *c);

void grpc_conn_free(struct grpc_conn *c);

#endif
