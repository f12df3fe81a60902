/* SPDX-License-Identifier: Apache-2.0 */
#include "server/extsigner/service.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "externaljwt.pb-c.h"
#include "server/obs/metrics.h"

/* Packs a message into out->body, after room for the message prefix; OK,
 * or INTERNAL when out of memory. */
static void service_pack(const ProtobufCMessage *msg, struct service_reply *out)
{
    out->len = protobuf_c_message_get_packed_size(msg);
    if ((out->body = malloc(SERVICE_MESSAGE_PREFIX + out->len)) == NULL) {
        out->status = RPC_INTERNAL;
        snprintf(out->message, sizeof(out->message), "out of memory");
        return;
    }
    protobuf_c_message_pack(msg, out->body + SERVICE_MESSAGE_PREFIX);
    out->status = RPC_OK;
}

static void service_fail(struct service_reply *out, enum rpc_status status, const char *message)
{
    out->status = status;
    snprintf(out->message, sizeof(out->message), "%s", message);
}

static void service_sign(const struct signer_state *s, const uint8_t *req, size_t len, size_t max_claims,
                         struct service_reply *out)
{
    V1alpha1__SignJWTRequest *in = v1alpha1__sign_jwtrequest__unpack(NULL, len, req);
    V1alpha1__SignJWTResponse reply = V1ALPHA1__SIGN_JWTRESPONSE__INIT;
    enum signer_result r = SIGNER_BAD_CLAIMS;
    char *signature = NULL, why[160];

    if (in != NULL)
        r = signer_sign(s, in->claims, strlen(in->claims), max_claims, &signature);
    atomic_fetch_add(&metrics_signer.signs[r], 1);
    switch (r) {
    case SIGNER_OK:
        reply.header = s->header;
        reply.signature = signature;
        service_pack(&reply.base, out);
        break;
    case SIGNER_BAD_CLAIMS:
        snprintf(why, sizeof(why),
                 "claims must be base64url without padding, from 1 to %zu characters (--max-token-size)", max_claims);
        service_fail(out, RPC_INVALID_ARGUMENT, in ? why : "not a SignJWTRequest");
        break;
    case SIGNER_UNAVAILABLE:
        service_fail(out, RPC_UNAVAILABLE, s->unavailable);
        break;
    default:
        service_fail(out, RPC_INTERNAL, "the signature could not be made");
    }
    free(signature);
    v1alpha1__sign_jwtrequest__free_unpacked(in, NULL);
}

static void service_fetch_keys(const struct signer_state *s, time_t now, struct service_reply *out)
{
    V1alpha1__FetchKeysResponse reply = V1ALPHA1__FETCH_KEYS_RESPONSE__INIT;
    Google__Protobuf__Timestamp stamp = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    V1alpha1__Key *keys = calloc(s->nkeys ? s->nkeys : 1, sizeof(*keys));
    V1alpha1__Key **ptrs = calloc(s->nkeys ? s->nkeys : 1, sizeof(*ptrs));

    if (keys == NULL || ptrs == NULL) {
        service_fail(out, RPC_INTERNAL, "out of memory");
    } else {
        for (size_t i = 0; i < s->nkeys; i++) {
            v1alpha1__key__init(&keys[i]);
            keys[i].key_id = s->keys[i].kid;
            keys[i].key.data = s->keys[i].der;
            keys[i].key.len = s->keys[i].der_len;
            ptrs[i] = &keys[i];
        }
        stamp.seconds = s->keys_changed;
        reply.keys = ptrs;
        reply.n_keys = s->nkeys;
        reply.data_timestamp = &stamp;
        reply.refresh_hint_seconds = signer_refresh_hint(s, now);
        service_pack(&reply.base, out);
    }
    free(ptrs);
    free(keys);
}

static void service_metadata(const struct signer_state *s, struct service_reply *out)
{
    V1alpha1__MetadataResponse reply = V1ALPHA1__METADATA_RESPONSE__INIT;

    reply.max_token_expiration_seconds = s->max_token_expiration;
    service_pack(&reply.base, out);
}

/* Whether the request decodes as the method's (empty) message. */
static int service_empty_ok(enum service_method m, const uint8_t *req, size_t len)
{
    ProtobufCMessage *in = m == SERVICE_FETCH_KEYS
                               ? (ProtobufCMessage *)v1alpha1__fetch_keys_request__unpack(NULL, len, req)
                               : (ProtobufCMessage *)v1alpha1__metadata_request__unpack(NULL, len, req);

    protobuf_c_message_free_unpacked(in, NULL);
    return in != NULL;
}

void service_call(enum service_method m, const struct signer_state *s, const uint8_t *req, size_t len,
                  size_t max_claims, time_t now, struct service_reply *out)
{
    memset(out, 0, sizeof(*out));
    atomic_fetch_add(&metrics_signer.calls[m], 1);
    if (s == NULL)
        service_fail(out, RPC_UNAVAILABLE, "no key set published yet");
    else if (m == SERVICE_SIGN)
        service_sign(s, req, len, max_claims, out);
    else if (!service_empty_ok(m, req, len))
        service_fail(out, RPC_INVALID_ARGUMENT, "the request does not decode");
    else if (m == SERVICE_FETCH_KEYS)
        service_fetch_keys(s, now, out);
    else
        service_metadata(s, out);
}
