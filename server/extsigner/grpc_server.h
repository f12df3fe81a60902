/*
 * grpc_server: kube-apiserver's external signer on a Unix socket
 * (--external-signer-listen), served by gRPC's C core (Debian's
 * libgrpc-dev), answering v1alpha1.ExternalJWTSigner (kube-apiserver 1.32
 * and 1.33) and v1.ExternalJWTSigner (later releases): the same three
 * calls and messages (service.h).
 *
 * Why gRPC's own core rather than HTTP/2 framing of our own (nghttp2 and
 * protobuf-c): kube-apiserver's client is grpc-go, and the core is the
 * reference peer of every gRPC implementation: HTTP/2 settings and flow
 * control, grpc-timeout deadlines, status and trailers, keepalive and
 * GOAWAY handling are its own, interoperability-tested code, where framing
 * of our own would be several hundred lines of protocol to get exactly
 * right and keep right. What is ours is the few lines that take a call,
 * decode it and answer (the completion-queue loop below) and the
 * messages, which protoc-c generates into the build directory.
 *
 * The calls run on threads of their own (--external-signer-threads), each
 * with a completion queue, never on the HTTP event loops: an RSA signature
 * takes a millisecond, which an event loop serving thousands of JWKS
 * requests must not spend. Each call answers from the signer state the
 * reload thread last handed over (jose/signer.h), taken under a lock held
 * for a pointer copy.
 *
 * This file and service.c build into the module oidc-discovery-extsigner.so
 * (module.c is its entry), never into the executable: see extsigner.h.
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

/* Stops accepting, cancels the calls in flight, joins the threads and
 * removes the socket. */
void extsigner_grpc_stop(struct extsigner_grpc *x);

#endif
