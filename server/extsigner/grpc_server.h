/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grpc_server: kube-apiserver's external signer on a Unix socket
 * (--external-signer-listen), answering v1alpha1.ExternalJWTSigner
 * (kube-apiserver 1.32 and 1.33) and v1.ExternalJWTSigner (later
 * releases): the same three calls and messages (service.h), carried by
 * HTTP/2 (grpc_conn.h).
 *
 * Why nghttp2 and protobuf-c rather than gRPC's C core: a Sign call is
 * the signature and little else, and every pod start and token refresh in
 * the cluster makes one, so what the transport adds to a call must stay
 * small beside the signature. gRPC's core adds a large part of an ES256
 * signature's time to each call (its completion queue, combiner,
 * allocations and threads); nghttp2 on an event loop of our own adds
 * little (docs/BENCHMARKS.md, "External signer"). What gRPC needs of a
 * unary server is small and fixed (doc/PROTOCOL-HTTP2.md: HEADERS, one
 * length-prefixed message, trailers with grpc-status): nghttp2 does all
 * of HTTP/2 (framing, HPACK, flow control, SETTINGS, PING, GOAWAY) and
 * protoc-c generates the messages, so what is ours is that mapping
 * (grpc_conn.c). Clients nobody here wrote (Python's grpcio, gRPC's C
 * core in bench/sign_bench) are the tests' peers.
 *
 * --external-signer-threads threads each run an event loop (epoll) and
 * accept connections from the one socket; a connection stays on the
 * thread that accepted it and its calls are answered there, never on the
 * HTTP event loops: an RSA signature takes a millisecond, which an event
 * loop serving thousands of JWKS requests must not spend. Each call
 * answers from the signer state the reload thread last handed over
 * (jose/signer.h), taken under a lock held for a pointer copy.
 */
#ifndef OIDC_EXTSIGNER_GRPC_SERVER_H
#define OIDC_EXTSIGNER_GRPC_SERVER_H

#include <stddef.h>

#include "config/config.h"
#include "jose/signer.h"

struct extsigner_grpc;

/* Creates the socket of --external-signer-listen with its mode and owner
 * (--external-signer-socket-mode, --external-signer-socket-owner) and
 * starts the threads, which answer from slot. A stale socket left by a
 * process that is gone is replaced; one another process still serves, or
 * any other file at the path, is refused. NULL with the reason in err. */
struct extsigner_grpc *extsigner_grpc_start(const struct config *cfg, struct signer_slot *slot, char *err,
                                            size_t errlen);

/* Stops accepting, tells every client the server goes away (GOAWAY),
 * joins the threads and removes the socket. */
void extsigner_grpc_stop(struct extsigner_grpc *x);

#endif
