/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3.c: see s3.h.
 */
#include "push/s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "push/storehttp.h"

#define PUSH_S3_HINT403                                                                                                \
    "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), --s3-region, and that the "            \
    "credentials may s3:GetObject and s3:PutObject on this prefix"

struct push_s3 {
    struct push_http http;
    struct http_sigv4 sigv4; /* its strings are owned here */
};

/* The URL of the prefix: base ends with "/", the keys follow. */
static char *push_s3_base(const struct config *cfg, const struct config_bucket_url *u)
{
    const char *ep = cfg->s3_endpoint;
    size_t eplen = ep ? strlen(ep) : 0, n;
    char *base;

    while (eplen > 0 && ep[eplen - 1] == '/')
        eplen--;
    n = eplen + u->bucket_len + u->prefix_len + strlen(cfg->s3_region) + 64;
    if ((base = malloc(n)) == NULL)
        return NULL;
    if (ep != NULL)
        snprintf(base, n, "%.*s/%.*s/%.*s%s", (int)eplen, ep, (int)u->bucket_len, u->bucket, (int)u->prefix_len,
                 u->prefix, u->prefix_len ? "/" : "");
    else
        snprintf(base, n, "https://%.*s.s3.%s.amazonaws.com/%.*s%s", (int)u->bucket_len, u->bucket, cfg->s3_region,
                 (int)u->prefix_len, u->prefix, u->prefix_len ? "/" : "");
    return base;
}

void push_s3_close(void *store)
{
    struct push_s3 *s = store;

    if (s == NULL)
        return;
    free(s->http.base);
    free((char *)s->sigv4.region);
    free((char *)s->sigv4.access_key_id);
    if (s->sigv4.secret_key != NULL)
        OPENSSL_cleanse((char *)s->sigv4.secret_key, strlen(s->sigv4.secret_key));
    free((char *)s->sigv4.secret_key);
    free((char *)s->sigv4.session_token);
    free(s);
}

static enum push_io push_s3_get(void *store, const char *key, struct push_object *out, char *err, size_t errlen)
{
    struct push_s3 *s = store;
    struct http_response res = {0};
    char *url = push_http_url(&s->http, key, NULL);
    const struct http_request req = {
        .url = url, .allow_http = s->http.allow_http, .sigv4 = &s->sigv4, .cancel = s->http.cancel};
    enum push_io io = PUSH_IO_ERROR;

    memset(out, 0, sizeof(*out));
    if (url == NULL)
        snprintf(err, errlen, "out of memory");
    else if ((io = push_http_send(&req, &res, err, errlen)) == PUSH_IO_OK)
        io = push_http_read(&s->http, &req, &res, out, err, errlen);
    http_response_free(&res);
    free(url);
    return io;
}

static enum push_io push_s3_put(void *store, const struct push_put *put, char *err, size_t errlen)
{
    struct push_s3 *s = store;
    const struct push_local *d = put->doc;
    struct http_response res = {0};
    char *url = push_http_url(&s->http, put->key, NULL);
    char *fields[] = {push_http_field("Content-Type", d->content_type),
                      push_http_field("Cache-Control", d->cache_control),
                      push_http_field("x-amz-meta-oidc-generation", d->generation),
                      push_http_field("x-amz-meta-oidc-sha256", d->sha256),
                      put->if_match ? push_http_field("If-Match", put->if_match)
                                    : push_http_field("If-None-Match", "*"),
                      NULL};
    const struct http_request req = {.method = HTTP_PUT,
                                     .url = url,
                                     .allow_http = s->http.allow_http,
                                     .headers = (const char *const *)fields,
                                     .sigv4 = &s->sigv4,
                                     .body = d->body,
                                     .body_len = d->len,
                                     .cancel = s->http.cancel};
    enum push_io io = PUSH_IO_ERROR;
    int ok = url != NULL;

    for (size_t i = 0; i + 1 < sizeof(fields) / sizeof(fields[0]); i++)
        ok = ok && fields[i] != NULL;
    if (!ok)
        snprintf(err, errlen, "out of memory");
    else if ((io = push_http_send(&req, &res, err, errlen)) == PUSH_IO_OK)
        io = push_http_written(&s->http, &req, &res, err, errlen);
    http_response_free(&res);
    for (size_t i = 0; i + 1 < sizeof(fields) / sizeof(fields[0]); i++)
        free(fields[i]);
    free(url);
    return io;
}

static const struct push_store_ops push_s3_ops = {push_s3_get, push_s3_put};

/* A copy of the environment variable name, or NULL (unset or empty). */
static char *push_env(const char *name)
{
    const char *v = getenv(name);

    return v && v[0] ? strdup(v) : NULL;
}

int push_s3_open(const struct config *cfg, const struct config_bucket_url *u, const atomic_int *cancel,
                 const struct push_store_ops **ops, void **store, char *err, size_t errlen)
{
    struct push_s3 *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->http = (struct push_http){.base = push_s3_base(cfg, u),
                                 .allow_http = 1,
                                 .cancel = cancel,
                                 .meta_prefix = "x-amz-meta-oidc-",
                                 .hint403 = PUSH_S3_HINT403,
                                 .denied_means_missing = "AccessDenied"};
    s->sigv4 = (struct http_sigv4){.region = strdup(cfg->s3_region),
                                   .service = "s3",
                                   .access_key_id = push_env("AWS_ACCESS_KEY_ID"),
                                   .secret_key = push_env("AWS_SECRET_ACCESS_KEY"),
                                   .session_token = push_env("AWS_SESSION_TOKEN")};
    if (s->http.base == NULL || s->sigv4.region == NULL) {
        snprintf(err, errlen, "out of memory");
    } else if (s->sigv4.access_key_id == NULL || s->sigv4.secret_key == NULL) {
        snprintf(err, errlen,
                 "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary "
                 "credentials) in the environment");
    } else {
        *ops = &push_s3_ops;
        *store = s;
        return 0;
    }
    push_s3_close(s);
    return -1;
}
