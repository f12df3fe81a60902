/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store: what push/ needs of an object store, and nothing more: read one
 * object with its headers and our metadata, and write one object only if
 * it is still as last read. S3 (s3.c) and Azure Blob (azblob.c) implement
 * it over util/http_client; the unit tests implement it in memory.
 *
 * Keys are relative to the target's PREFIX ("openid/v1/jwks").
 */
#ifndef OIDC_PUSH_STORE_H
#define OIDC_PUSH_STORE_H

#include <stddef.h>

#include "push/plan.h"

/* Room for the header values kept; longer values are cut (and so never
 * match what we publish, which is shorter). */
#define PUSH_ETAG_MAX   128
#define PUSH_HEADER_MAX 256

/* One object as a GET found it. */
struct push_object {
    int exists;
    char *body; /* malloc'ed, NUL-terminated; NULL when !exists */
    size_t len;
    char etag[PUSH_ETAG_MAX]; /* as the store sent it, quotes included */
    char content_type[PUSH_HEADER_MAX];
    char cache_control[PUSH_HEADER_MAX];
    char generation[PUSH_GEN_MAX]; /* our metadata, "" when absent */
    char sha256[PUSH_SHA_HEX];     /* our metadata, "" when absent */
    char last_modified[40];        /* "" when absent */
};

/* A conditional write of one object. */
struct push_put {
    const char *key;
    const struct push_local *doc;
    const char *if_match; /* the ETag last read, or NULL: only if there is none */
};

enum push_io {
    PUSH_IO_OK,
    PUSH_IO_CONFLICT, /* 412 or 409: the object changed since it was read */
    PUSH_IO_ERROR,    /* err says what, naming the URL */
};

struct push_store_ops {
    /* Reads key into *out (the store's own "not found" is exists == 0, not
     * an error). */
    enum push_io (*get)(void *store, const char *key, struct push_object *out, char *err, size_t errlen);
    /* Writes the object with its Content-Type, Cache-Control and our
     * metadata, under the condition of put->if_match. */
    enum push_io (*put)(void *store, const struct push_put *put, char *err, size_t errlen);
};

/* Frees what a GET filled and empties it. */
void push_object_clear(struct push_object *o);

/* The view of o that push_decide reads. */
struct push_remote push_object_remote(const struct push_object *o);

#endif
