/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storehttp.c: see storehttp.h.
 */
#include "push/storehttp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/printable.h"

/* How much of a store's error code is quoted. */
#define PUSH_CODE_MAX 64

char *push_http_url(const struct push_http *h, const char *key, const char *query)
{
    size_t n = strlen(h->base) + strlen(key) + (query ? strlen(query) + 1 : 0) + 1;
    char *url = malloc(n);

    if (url != NULL)
        snprintf(url, n, "%s%s%s%s", h->base, key, query ? "?" : "", query ? query : "");
    return url;
}

char *push_http_field(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 3;
    char *f = malloc(n);

    if (f != NULL)
        snprintf(f, n, "%s: %s", name, value);
    return f;
}

/* Copies header name of res into out (size bytes), "" when absent. */
static void push_copy_header(const struct http_response *res, const char *name, char *out, size_t size)
{
    const char *v = http_response_header(res, name);

    snprintf(out, size, "%s", v ? v : "");
}

/* The metadata value called name after the store's prefix. */
static void push_copy_meta(const struct push_http *h, const struct http_response *res, const char *name, char *out,
                           size_t size)
{
    char full[64];

    snprintf(full, sizeof(full), "%s%s", h->meta_prefix, name);
    push_copy_header(res, full, out, size);
}

/* The <Code> of an S3 or Azure XML error body, made printable, or "". */
static void push_error_code(const struct http_response *res, char *out, size_t size)
{
    const char *start = strstr(res->body, "<Code>"), *end;
    char code[PUSH_CODE_MAX + 1];
    size_t n;

    out[0] = '\0';
    if (start == NULL || (end = strstr(start + 6, "</Code>")) == NULL)
        return;
    n = (size_t)(end - start - 6) < PUSH_CODE_MAX ? (size_t)(end - start - 6) : PUSH_CODE_MAX;
    memcpy(code, start + 6, n);
    code[n] = '\0';
    printable_copy(code, out, size > 4 ? size - 4 : 0);
}

/* The message for an unexpected status: http_client's, the store's error
 * code, and on a 403 what to check. Returns PUSH_IO_ERROR. */
static enum push_io push_http_fail(const struct push_http *h, const struct http_request *req,
                                   const struct http_response *res, char *err, size_t errlen)
{
    char code[PUSH_CODE_MAX + 4];
    size_t n;

    http_client_status_error(req, res, err, errlen);
    push_error_code(res, code, sizeof(code));
    n = strlen(err);
    if (code[0] && n < errlen)
        n += (size_t)snprintf(err + n, errlen - n, " (%s)", code);
    if (res->status == 403 && n < errlen)
        snprintf(err + n, errlen - n, ": %s", h->hint403);
    return PUSH_IO_ERROR;
}

enum push_io push_http_send(const struct http_request *req, struct http_response *res, char *err, size_t errlen)
{
    return http_client_fetch(req, res, err, errlen) == HTTP_CLIENT_OK ? PUSH_IO_OK : PUSH_IO_ERROR;
}

enum push_io push_http_read(const struct push_http *h, const struct http_request *req, struct http_response *res,
                            struct push_object *out, char *err, size_t errlen)
{
    char code[PUSH_CODE_MAX + 4];

    memset(out, 0, sizeof(*out));
    if (res->status == 404)
        return PUSH_IO_OK;
    if (res->status == 403 && h->denied_means_missing != NULL) {
        push_error_code(res, code, sizeof(code));
        if (strcmp(code, h->denied_means_missing) == 0)
            return PUSH_IO_OK;
    }
    if (res->status != 200)
        return push_http_fail(h, req, res, err, errlen);
    out->exists = 1;
    out->body = res->body;
    out->len = res->body_len;
    res->body = NULL;
    push_copy_header(res, "ETag", out->etag, sizeof(out->etag));
    push_copy_header(res, "Content-Type", out->content_type, sizeof(out->content_type));
    push_copy_header(res, "Cache-Control", out->cache_control, sizeof(out->cache_control));
    push_copy_header(res, "Last-Modified", out->last_modified, sizeof(out->last_modified));
    push_copy_meta(h, res, "generation", out->generation, sizeof(out->generation));
    push_copy_meta(h, res, "sha256", out->sha256, sizeof(out->sha256));
    return PUSH_IO_OK;
}

enum push_io push_http_written(const struct push_http *h, const struct http_request *req,
                               const struct http_response *res, char *err, size_t errlen)
{
    if (res->status == 200 || res->status == 201)
        return PUSH_IO_OK;
    if (res->status == 409 || res->status == 412)
        return PUSH_IO_CONFLICT;
    return push_http_fail(h, req, res, err, errlen);
}
