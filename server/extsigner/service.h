/* SPDX-License-Identifier: Apache-2.0 */
/*
 * service: the three calls of kube-apiserver's external signer
 * (docs/compatibility.md §9), from the request's bytes to the response's
 * bytes and a gRPC status, with the messages protoc-c generates from
 * proto/externaljwt.proto at build time. It knows nothing of the transport
 * (grpc_conn.c carries the bytes) and answers from one signer state
 * (jose/signer.h).
 */
#ifndef OIDC_EXTSIGNER_SERVICE_H
#define OIDC_EXTSIGNER_SERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "jose/signer.h"

enum service_method { SERVICE_SIGN, SERVICE_FETCH_KEYS, SERVICE_METADATA, SERVICE_NMETHODS };

/* The gRPC status codes this service answers with (their numbers are the
 * protocol's, doc/statuscodes.md in the gRPC repository). */
enum rpc_status {
    RPC_OK = 0,
    RPC_INVALID_ARGUMENT = 3,
    RPC_DEADLINE_EXCEEDED = 4,
    RPC_RESOURCE_EXHAUSTED = 8,
    RPC_UNIMPLEMENTED = 12,
    RPC_INTERNAL = 13,
    RPC_UNAVAILABLE = 14,
};

/* gRPC's message prefix: a compressed flag and a 32-bit big-endian length
 * (doc/PROTOCOL-HTTP2.md in the gRPC repository). A reply's body leaves
 * room for it, so that the transport frames the message without copying
 * it. */
#define SERVICE_MESSAGE_PREFIX 5

struct service_reply {
    enum rpc_status status;
    char message[512]; /* the status details when not OK */
    uint8_t *body;     /* when OK, malloc'ed: SERVICE_MESSAGE_PREFIX bytes, then the packed response */
    size_t len;        /* of the packed response */
};

/* Answers method m for the request bytes req (len of them) from s (NULL
 * before the first state: UNAVAILABLE) at now. Sign takes claims of at
 * most max_claims characters (--max-token-size). */
void service_call(enum service_method m, const struct signer_state *s, const uint8_t *req, size_t len,
                  size_t max_claims, time_t now, struct service_reply *out);

#endif
