/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storehttp: what the S3 and Azure Blob stores share over
 * util/http_client: object URLs, a response turned into a push_object,
 * and the message for a status the store did not expect (the store's
 * error code from its XML body, and what to check on a 403).
 */
#ifndef OIDC_PUSH_STOREHTTP_H
#define OIDC_PUSH_STOREHTTP_H

#include <stdatomic.h>
#include <stddef.h>

#include "push/store.h"
#include "util/http_client.h"

/* What every HTTP store holds. */
struct push_http {
    char *base; /* the object URL less the key: ".../PREFIX/" */
    int allow_http;
    const atomic_int *cancel; /* ends a transfer at once when the publisher stops */
    const char *meta_prefix;  /* "x-amz-meta-oidc-" or "x-ms-meta-oidc_" */
    const char *hint403;      /* what to check when the store answers 403 */
    /* A GET refused with this error code is taken as "no such object":
     * S3 answers AccessDenied rather than 404 for a missing key to whoever
     * may not s3:ListBucket, and the publisher needs only GetObject and
     * PutObject. The write that follows is conditional (If-None-Match: *)
     * and read back, so an object that exists but cannot be read still
     * fails, with the store's own refusal. NULL: none. */
    const char *denied_means_missing;
};

/* base + key (+ "?" + query when not NULL), malloc'ed; NULL when out of memory. */
char *push_http_url(const struct push_http *h, const char *key, const char *query);

/* Fills *out from a 200 response (taking over its body) or a 404 (no
 * object); PUSH_IO_ERROR with the message for any other status. */
enum push_io push_http_read(const struct push_http *h, const struct http_request *req, struct http_response *res,
                            struct push_object *out, char *err, size_t errlen);

/* The result of a write: 200 and 201 are PUSH_IO_OK, 409 and 412
 * PUSH_IO_CONFLICT, anything else PUSH_IO_ERROR with its message. */
enum push_io push_http_written(const struct push_http *h, const struct http_request *req,
                               const struct http_response *res, char *err, size_t errlen);

/* Sends req; PUSH_IO_ERROR with http_client's message when no response came. */
enum push_io push_http_send(const struct http_request *req, struct http_response *res, char *err, size_t errlen);

/* Writes "Name: value" into a new string for a header list; NULL when out
 * of memory. */
char *push_http_field(const char *name, const char *value);

#endif
