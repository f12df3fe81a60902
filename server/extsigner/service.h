/*
 * service: the three calls of kube-apiserver's external signer
 * (docs/compatibility.md §9), from the request's bytes to the response's
 * bytes and a gRPC status, with the messages protoc-c generates from
 * proto/externaljwt.proto at build time. It knows nothing of the transport
 * (grpc_server.c carries the bytes) and answers from one signer state
 * (jose/signer.h).
 */
#ifndef OIDC_EXTSIGNER_SERVICE_H
#define OIDC_EXTSIGNER_SERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <grpc/status.h>

#include "jose/signer.h"

enum service_method { SERVICE_SIGN, SERVICE_FETCH_KEYS, SERVICE_METADATA, SERVICE_NMETHODS };

struct service_reply {
    grpc_status_code status;
    char message[512]; /* the status details when not OK */
    uint8_t *body;     /* the packed response when OK, malloc'ed */
    size_t len;
};

/* Answers method m for the request bytes req (len of them) from s (NULL
 * before the first state: UNAVAILABLE) at now. Sign takes claims of at
 * most max_claims characters (--max-token-size). */
void service_call(enum service_method m, const struct signer_state *s, const uint8_t *req, size_t len,
                  size_t max_claims, time_t now, struct service_reply *out);

#endif
