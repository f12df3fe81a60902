/* SPDX-License-Identifier: Apache-2.0 */
/*
 * azblob.c: see azblob.h.
 */
#include "push/azblob.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/file.h"
#include "push/azsign.h"
#include "push/storehttp.h"

/* A SAS token or account key file larger than this is refused. */
#define PUSH_AZ_SECRET_MAX 8192

#define PUSH_AZ_HINT403                                                                                                \
    "check the account key (--azblob-key-file or AZURE_STORAGE_KEY) or the SAS token (--azblob-sas-file): its "        \
    "expiry, and that it may read, create and write blobs in the container"

struct push_azblob {
    struct push_http http;
    char *account;
    char *path_base; /* the URL's path less the key, for the string to sign */
    char *sas_file;  /* or NULL */
    char *key_file;  /* or NULL */
    char *key_b64;   /* AZURE_STORAGE_KEY, when neither file is given */
};

/* Everything one request sends beyond its URL: the header fields (owned),
 * and the query string for a SAS token (owned), or the Authorization field. */
struct push_az_request {
    char *fields[12];
    size_t nfields;
    char *query;
    char auth[256];
};

static void push_az_request_free(struct push_az_request *r)
{
    for (size_t i = 0; i < r->nfields; i++)
        free(r->fields[i]);
    if (r->query != NULL)
        OPENSSL_cleanse(r->query, strlen(r->query));
    free(r->query);
    OPENSSL_cleanse(r->auth, sizeof(r->auth));
}

/* Appends "name: value"; -1 when out of memory. */
static int push_az_add(struct push_az_request *r, const char *name, const char *value)
{
    if ((r->fields[r->nfields] = push_http_field(name, value)) == NULL)
        return -1;
    r->nfields++;
    return 0;
}

/* Reads a secret file (a SAS token or an account key): surrounding
 * whitespace removed. NULL with err set. */
static char *push_az_read_secret(const char *path, const char *flag, char *err, size_t errlen)
{
    char why[512], *text, *copy = NULL;
    size_t len, start;

    if ((text = file_read(path, PUSH_AZ_SECRET_MAX, &len, NULL, why, sizeof(why))) == NULL) {
        snprintf(err, errlen, "--%s: %s", flag, why);
        return NULL;
    }
    start = strspn(text, " \t\r\n");
    while (len > start && strchr(" \t\r\n", text[len - 1]))
        len--;
    if (len == start)
        snprintf(err, errlen, "--%s %s is empty", flag, path);
    else if ((copy = strndup(text + start, len - start)) == NULL)
        snprintf(err, errlen, "out of memory");
    file_free(text, strlen(text));
    return copy;
}

/* The SAS token of the file as a query string (without a leading "?"):
 * printable ASCII without spaces or '#'. */
static int push_az_sas(const struct push_azblob *a, struct push_az_request *r, char *err, size_t errlen)
{
    char *q = push_az_read_secret(a->sas_file, "azblob-sas-file", err, errlen);
    size_t skip;

    if (q == NULL)
        return -1;
    skip = q[0] == '?';
    memmove(q, q + skip, strlen(q + skip) + 1);
    for (const char *c = q; *c; c++) {
        if (*c <= ' ' || *c >= 0x7f || *c == '#') {
            snprintf(err, errlen, "--azblob-sas-file %s: not a SAS token (a query string such as sv=...&sig=...)",
                     a->sas_file);
            free(q);
            return -1;
        }
    }
    r->query = q;
    return 0;
}

/* Signs the request with SharedKey: its method, path, fields and body
 * length, under the key of the file (read now) or of the environment. */
static int push_az_sign(const struct push_azblob *a, struct push_az_request *r, const char *method, const char *key,
                        size_t body_len, char *err, size_t errlen)
{
    char *b64 = a->key_file ? push_az_read_secret(a->key_file, "azblob-key-file", err, errlen) : strdup(a->key_b64);
    size_t b64len = b64 ? strlen(b64) : 0, n = strlen(a->path_base) + strlen(key) + 1;
    unsigned char *raw = NULL;
    char *path = NULL, *to_sign = NULL;
    int keylen, rc = -1;

    r->fields[r->nfields] = NULL;
    if (b64 == NULL) {
        if (a->key_file == NULL)
            snprintf(err, errlen, "out of memory");
        return -1;
    }
    if ((raw = malloc(b64len + 1)) == NULL || (path = malloc(n)) == NULL) {
        snprintf(err, errlen, "out of memory");
    } else if ((keylen = push_azsign_decode_key(b64, raw)) < 0) {
        snprintf(err, errlen, "%s is not a base64 account key",
                 a->key_file ? "--azblob-key-file" : "AZURE_STORAGE_KEY");
    } else {
        snprintf(path, n, "%s%s", a->path_base, key);
        to_sign = push_azsign_string(a->account, method, path, (const char *const *)r->fields, body_len);
        rc = to_sign && push_azsign_field(a->account, raw, (size_t)keylen, to_sign, r->auth, sizeof(r->auth)) == 0 ? 0
                                                                                                                   : -1;
        if (rc != 0)
            snprintf(err, errlen, "out of memory");
    }
    if (raw != NULL)
        OPENSSL_cleanse(raw, b64len);
    OPENSSL_cleanse(b64, b64len);
    free(raw);
    free(b64);
    free(path);
    free(to_sign);
    return rc;
}

/* The fields every request carries, then its authorization. */
static int push_az_prepare(const struct push_azblob *a, struct push_az_request *r, const char *method, const char *key,
                           size_t body_len, char *err, size_t errlen)
{
    char date[40];
    time_t now = time(NULL);
    struct tm tm;

    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (push_az_add(r, "x-ms-date", date) != 0 || push_az_add(r, "x-ms-version", PUSH_AZBLOB_VERSION) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (a->sas_file != NULL)
        return push_az_sas(a, r, err, errlen);
    if (push_az_sign(a, r, method, key, body_len, err, errlen) != 0)
        return -1;
    r->fields[r->nfields++] = strdup(r->auth);
    OPENSSL_cleanse(r->auth, sizeof(r->auth));
    if (r->fields[r->nfields - 1] == NULL) {
        r->nfields--;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Sends one request of method on key with the prepared fields; reads the
 * response into *res. */
static enum push_io push_az_send(struct push_azblob *a, struct push_az_request *r, enum http_method method,
                                 const char *key, const struct push_local *body, struct http_request *req,
                                 struct http_response *res, char *err, size_t errlen)
{
    char *url;
    enum push_io io;

    if (push_az_prepare(a, r, method == HTTP_PUT ? "PUT" : "GET", key, body ? body->len : 0, err, errlen) != 0)
        return PUSH_IO_ERROR;
    if ((url = push_http_url(&a->http, key, r->query)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return PUSH_IO_ERROR;
    }
    r->fields[r->nfields] = NULL;
    *req = (struct http_request){.method = method,
                                 .url = url,
                                 .allow_http = a->http.allow_http,
                                 .headers = (const char *const *)r->fields,
                                 .body = body ? body->body : NULL,
                                 .body_len = body ? body->len : 0,
                                 .cancel = a->http.cancel};
    io = push_http_send(req, res, err, errlen);
    return io;
}

/* Frees the URL push_az_send allocated (wiped: it may hold a SAS token). */
static void push_az_done(struct http_request *req)
{
    char *url = (char *)req->url;

    if (url != NULL)
        OPENSSL_cleanse(url, strlen(url));
    free(url);
}

static enum push_io push_az_get(void *store, const char *key, struct push_object *out, char *err, size_t errlen)
{
    struct push_azblob *a = store;
    struct push_az_request r = {0};
    struct http_request req = {0};
    struct http_response res = {0};
    enum push_io io = push_az_send(a, &r, HTTP_GET, key, NULL, &req, &res, err, errlen);

    memset(out, 0, sizeof(*out));
    if (io == PUSH_IO_OK)
        io = push_http_read(&a->http, &req, &res, out, err, errlen);
    http_response_free(&res);
    push_az_done(&req);
    push_az_request_free(&r);
    return io;
}

static enum push_io push_az_put(void *store, const struct push_put *put, char *err, size_t errlen)
{
    struct push_azblob *a = store;
    const struct push_local *d = put->doc;
    struct push_az_request r = {0};
    struct http_request req = {0};
    struct http_response res = {0};
    enum push_io io = PUSH_IO_ERROR;

    if (push_az_add(&r, "x-ms-blob-type", "BlockBlob") != 0 ||
        push_az_add(&r, "x-ms-blob-content-type", d->content_type) != 0 ||
        push_az_add(&r, "x-ms-blob-cache-control", d->cache_control) != 0 ||
        push_az_add(&r, "x-ms-meta-oidc_generation", d->generation) != 0 ||
        push_az_add(&r, "x-ms-meta-oidc_sha256", d->sha256) != 0 ||
        (put->if_match ? push_az_add(&r, "If-Match", put->if_match) : push_az_add(&r, "If-None-Match", "*")) != 0)
        snprintf(err, errlen, "out of memory");
    else if ((io = push_az_send(a, &r, HTTP_PUT, put->key, d, &req, &res, err, errlen)) == PUSH_IO_OK)
        io = push_http_written(&a->http, &req, &res, err, errlen);
    http_response_free(&res);
    push_az_done(&req);
    push_az_request_free(&r);
    return io;
}

static const struct push_store_ops push_az_ops = {push_az_get, push_az_put};

void push_azblob_close(void *store)
{
    struct push_azblob *a = store;

    if (a == NULL)
        return;
    free(a->http.base);
    free(a->account);
    free(a->path_base);
    free(a->sas_file);
    free(a->key_file);
    if (a->key_b64 != NULL)
        OPENSSL_cleanse(a->key_b64, strlen(a->key_b64));
    free(a->key_b64);
    free(a);
}

/* The base URL and the signed path's base for u. */
static int push_az_urls(struct push_azblob *a, const struct config *cfg, const struct config_bucket_url *u)
{
    const char *ep = cfg->azblob_endpoint;
    size_t eplen = ep ? strlen(ep) : 0, n = eplen + 2 * u->bucket_len + u->container_len + u->prefix_len + 64;

    while (eplen > 0 && ep[eplen - 1] == '/')
        eplen--;
    if ((a->http.base = malloc(n)) == NULL || (a->path_base = malloc(n)) == NULL)
        return -1;
    if (ep != NULL)
        snprintf(a->path_base, n, "/%.*s/%.*s/%.*s%s", (int)u->bucket_len, u->bucket, (int)u->container_len,
                 u->container, (int)u->prefix_len, u->prefix, u->prefix_len ? "/" : "");
    else
        snprintf(a->path_base, n, "/%.*s/%.*s%s", (int)u->container_len, u->container, (int)u->prefix_len, u->prefix,
                 u->prefix_len ? "/" : "");
    if (ep != NULL)
        snprintf(a->http.base, n, "%.*s%s", (int)eplen, ep, a->path_base);
    else
        snprintf(a->http.base, n, "https://%.*s.blob.core.windows.net%s", (int)u->bucket_len, u->bucket, a->path_base);
    return 0;
}

int push_azblob_open(const struct config *cfg, const struct config_bucket_url *u, const atomic_int *cancel,
                     const struct push_store_ops **ops, void **store, char *err, size_t errlen)
{
    struct push_azblob *a = calloc(1, sizeof(*a));
    const char *env = getenv("AZURE_STORAGE_KEY");

    if (a == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    a->http = (struct push_http){
        .allow_http = 1, .cancel = cancel, .meta_prefix = "x-ms-meta-oidc_", .hint403 = PUSH_AZ_HINT403};
    a->account = strndup(u->bucket, u->bucket_len);
    a->sas_file = cfg->azblob_sas_file ? strdup(cfg->azblob_sas_file) : NULL;
    a->key_file = cfg->azblob_key_file ? strdup(cfg->azblob_key_file) : NULL;
    a->key_b64 = !a->sas_file && !a->key_file && env && env[0] ? strdup(env) : NULL;
    if (a->account == NULL || push_az_urls(a, cfg, u) != 0 || (cfg->azblob_sas_file && !a->sas_file) ||
        (cfg->azblob_key_file && !a->key_file)) {
        snprintf(err, errlen, "out of memory");
    } else if (!a->sas_file && !a->key_file && !a->key_b64) {
        snprintf(err, errlen, "give --azblob-sas-file or --azblob-key-file, or set AZURE_STORAGE_KEY");
    } else {
        *ops = &push_az_ops;
        *store = a;
        return 0;
    }
    push_azblob_close(a);
    return -1;
}
