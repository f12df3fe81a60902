/* SPDX-License-Identifier: Apache-2.0 */
#include "server/http/handler_docs.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "publish/routes.h"
#include "server/conn/worker.h"
#include "util/paths.h"

struct handler_docs {
    h2o_handler_t super;
    int cors;
    h2o_iovec_t discovery_path; /* with --path-prefix */
    h2o_iovec_t jwks_path;
    char *const *allowed_hosts; /* --allowed-hosts, lowercase */
    size_t nallowed_hosts;
    size_t max_header_size;
    int fleet; /* --issuers-dir: the snapshots are routing tables (routes.h) */
};

/* Responses are sent in one piece from memory that outlives the request, so
 * the generator needs no callbacks. */
static h2o_generator_t handler_docs_generator = {NULL, NULL};

static const h2o_iovec_t body_not_found = {H2O_STRLIT("{\"error\":\"not found\"}")};
static const h2o_iovec_t body_not_allowed = {H2O_STRLIT("{\"error\":\"method not allowed\"}")};
static const h2o_iovec_t body_misdirected = {H2O_STRLIT("{\"error\":\"unknown host\"}")};
static const h2o_iovec_t body_too_large = {H2O_STRLIT("{\"error\":\"request header fields too large\"}")};
static const h2o_iovec_t body_unavailable = {H2O_STRLIT("{\"error\":\"no keys are published yet\"}")};

/* --cors: what a browser needs to use the documents from a page of another
 * origin (the Fetch standard's CORS protocol). The documents are public and
 * fetched without credentials, so "*" fits every origin, and the answers
 * are the same for every request: constant headers, added by reference.
 * A preflight (OPTIONS, sent before a request with a header of the
 * page's own, or with If-None-Match or If-Modified-Since set from
 * JavaScript) is answered 204 with the methods and headers allowed
 * ("*" allows any header; the conditional ones are also named for browsers
 * that predate the wildcard) and how long it may be cached; a response
 * names the headers JavaScript may read (ETag is not one by default).
 * h2o 2.2.5 has no tokens for these names: a static token, which h2o treats
 * as any other header name, spares the pool allocation of
 * h2o_add_header_by_str. */
struct handler_docs_const_header {
    const h2o_token_t *name;
    h2o_iovec_t value;
};
static const h2o_token_t token_expose_headers = {.buf = {H2O_STRLIT("access-control-expose-headers")}};
static const h2o_token_t token_allow_methods = {.buf = {H2O_STRLIT("access-control-allow-methods")}};
static const h2o_token_t token_allow_headers = {.buf = {H2O_STRLIT("access-control-allow-headers")}};
static const h2o_token_t token_max_age = {.buf = {H2O_STRLIT("access-control-max-age")}};
static const struct handler_docs_const_header cors_response[] = {
    {H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, {H2O_STRLIT("*")}},
    {&token_expose_headers, {H2O_STRLIT("ETag, Last-Modified, Cache-Control")}},
};
/* A day: Firefox keeps a preflight that long, Chromium at most 2 hours. */
static const struct handler_docs_const_header cors_preflight[] = {
    {H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, {H2O_STRLIT("*")}},
    {&token_allow_methods, {H2O_STRLIT("GET, HEAD")}},
    {&token_allow_headers, {H2O_STRLIT("If-None-Match, If-Modified-Since, *")}},
    {&token_max_age, {H2O_STRLIT("86400")}},
    {H2O_TOKEN_ALLOW, {H2O_STRLIT("GET, HEAD, OPTIONS")}},
};
#define HANDLER_DOCS_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void handler_docs_header(h2o_req_t *req, const h2o_token_t *token, const char *value, size_t len)
{
    h2o_add_header(&req->pool, &req->res.headers, token, NULL, value, len);
}

static void handler_docs_const_headers(h2o_req_t *req, const struct handler_docs_const_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h2o_add_header(&req->pool, &req->res.headers, h[i].name, NULL, h[i].value.base, h[i].value.len);
}

/* Sends body (or, for HEAD, only its length) with the given status. The
 * body is not copied: it lives in the pinned snapshot or in static memory. */
static int handler_docs_send(h2o_req_t *req, int status, const char *reason, h2o_iovec_t body, int is_head)
{
    req->res.status = status;
    req->res.reason = reason;
    req->res.content_length = body.len;
    h2o_start_response(req, &handler_docs_generator);
    h2o_send(req, is_head ? NULL : &body, is_head ? 0 : 1, H2O_SEND_STATE_FINAL);
    return 0;
}

/* A response that has no body by its status (204, 304): no Content-Length
 * either (RFC 9110 8.6). */
static int handler_docs_send_empty(h2o_req_t *req, int status, const char *reason)
{
    req->res.status = status;
    req->res.reason = reason;
    h2o_start_response(req, &handler_docs_generator);
    h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
    return 0;
}

static int handler_docs_error(h2o_req_t *req, int status, const char *reason, h2o_iovec_t body, int is_head)
{
    handler_docs_header(req, H2O_TOKEN_CONTENT_TYPE, H2O_STRLIT("application/json"));
    return handler_docs_send(req, status, reason, body, is_head);
}

/* RFC 9110 13.1.2: If-None-Match uses the weak comparison, so W/"x" matches
 * our strong "x"; "*" matches any current representation. */
static int handler_docs_etag_listed(h2o_iovec_t list, const char *etag, size_t etag_len)
{
    const char *p = list.base, *end = list.base + list.len;

    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        if (p < end && *p == '*')
            return 1;
        if (end - p >= 2 && p[0] == 'W' && p[1] == '/')
            p += 2;
        if ((size_t)(end - p) >= etag_len && memcmp(p, etag, etag_len) == 0 &&
            (p + etag_len == end || p[etag_len] == ',' || p[etag_len] == ' ' || p[etag_len] == '\t'))
            return 1;
        while (p < end && *p != ',')
            p++;
    }
    return 0;
}

/* True when the client's cached copy is current (RFC 9110 13.2.2:
 * If-None-Match, when present, decides alone; otherwise If-Modified-Since). */
static int handler_docs_not_modified(h2o_req_t *req, const struct snapshot *snap, const struct snapshot_doc *doc)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_IF_NONE_MATCH, -1);
    struct tm tm;

    if (i >= 0) {
        for (; i >= 0; i = h2o_find_header(&req->headers, H2O_TOKEN_IF_NONE_MATCH, i))
            if (handler_docs_etag_listed(req->headers.entries[i].value, doc->etag, doc->etag_len))
                return 1;
        return 0;
    }
    if ((i = h2o_find_header(&req->headers, H2O_TOKEN_IF_MODIFIED_SINCE, -1)) < 0)
        return 0;
    h2o_iovec_t since = req->headers.entries[i].value;
    if (since.len == snap->last_modified_len && memcmp(since.base, snap->last_modified, since.len) == 0)
        return 1;
    return h2o_time_parse_rfc1123(since.base, since.len, &tm) == 0 && timegm(&tm) >= snap->loaded_at;
}

static int handler_docs_serve(struct handler_docs *self, h2o_req_t *req, const struct snapshot *snap,
                              const struct snapshot_doc *doc, int is_head)
{
    handler_docs_header(req, H2O_TOKEN_CACHE_CONTROL, snap->cache_control, snap->cache_control_len);
    handler_docs_header(req, H2O_TOKEN_ETAG, doc->etag, doc->etag_len);
    handler_docs_header(req, H2O_TOKEN_LAST_MODIFIED, snap->last_modified, snap->last_modified_len);
    if (self->cors)
        handler_docs_const_headers(req, cors_response, HANDLER_DOCS_COUNT(cors_response));
    if (handler_docs_not_modified(req, snap, doc))
        return handler_docs_send_empty(req, 304, "Not Modified");
    handler_docs_header(req, H2O_TOKEN_CONTENT_TYPE, doc->content_type, doc->content_type_len);
    return handler_docs_send(req, 200, "OK", h2o_iovec_init(doc->body.bytes, doc->body.len), is_head);
}

/* Nothing is published yet (an --upstream not read): 503 with the
 * snapshot's Retry-After, never cached, so that a CDN or a relying party
 * asks again rather than keep an error. */
static int handler_docs_unavailable(struct handler_docs *self, h2o_req_t *req, const struct snapshot *snap, int is_head)
{
    handler_docs_header(req, H2O_TOKEN_RETRY_AFTER, snap->retry_after, snap->retry_after_len);
    handler_docs_header(req, H2O_TOKEN_CACHE_CONTROL, H2O_STRLIT("no-store"));
    if (self->cors)
        handler_docs_header(req, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, H2O_STRLIT("*"));
    return handler_docs_error(req, 503, "Service Unavailable", body_unavailable, is_head);
}

/* The request path without its query, and in *authority the host it asks
 * for. RFC 9112 3.2.2 requires servers to accept the absolute form ("GET
 * http://host/path"), which h2o 2.2 passes through unparsed: its
 * origin-form part is what is matched, and its authority, not the Host
 * header (which the server must then ignore), is the host asked for. */
static h2o_iovec_t handler_docs_target(h2o_req_t *req, h2o_iovec_t *authority)
{
    h2o_iovec_t path = h2o_iovec_init(req->path.base, req->query_at != SIZE_MAX ? req->query_at : req->path.len);
    const char *end = path.base + path.len, *slashes, *host, *p;

    *authority = req->authority;
    if (path.len == 0 || path.base[0] == '/' || (slashes = memmem(path.base, path.len, "://", 3)) == NULL)
        return path;
    host = slashes + 3;
    p = memchr(host, '/', (size_t)(end - host));
    *authority = h2o_iovec_init(host, (size_t)((p != NULL ? p : end) - host));
    if (p == NULL)
        return h2o_iovec_init("/", 1);
    return h2o_iovec_init(p, (size_t)(end - p));
}

/* --allowed-hosts: an entry without a port allows that host on any port;
 * with a port, that exact authority. Host names compare case-insensitively. */
static int handler_docs_host_allowed(const struct handler_docs *self, h2o_iovec_t authority)
{
    const char *colon =
        authority.len && authority.base[authority.len - 1] != ']' ? memrchr(authority.base, ':', authority.len) : NULL;
    size_t host_len = colon ? (size_t)(colon - authority.base) : authority.len;

    if (self->nallowed_hosts == 0)
        return 1;
    for (size_t i = 0; i < self->nallowed_hosts; i++) {
        size_t n = strlen(self->allowed_hosts[i]);
        if ((n == authority.len && h2o_lcstris(authority.base, n, self->allowed_hosts[i], n)) ||
            (n == host_len && h2o_lcstris(authority.base, n, self->allowed_hosts[i], n)))
            return 1;
    }
    return 0;
}

/* The size of the request head as received, to refuse oversized ones with
 * 431 (h2o itself buffers up to about 400 KiB before it gives up). */
static size_t handler_docs_head_size(h2o_req_t *req)
{
    size_t n = req->method.len + req->path.len + 12;

    for (size_t i = 0; i < req->headers.size; i++)
        n += req->headers.entries[i].name->len + req->headers.entries[i].value.len + 4;
    return n;
}

/* True when path ends with the document path doc; *issuer_len is then the
 * length of what comes before it. */
static int handler_docs_ends_with(h2o_iovec_t path, const char *doc, size_t doc_len, size_t *issuer_len)
{
    if (path.len < doc_len || memcmp(path.base + path.len - doc_len, doc, doc_len) != 0)
        return 0;
    *issuer_len = path.len - doc_len;
    return 1;
}

/* A fleet's request: the issuer whose host and path the request's
 * authority and path begin with (routes.h: one hash probe), and whether
 * it asks for the discovery document. The fleet's table is pinned for the
 * request, and with it every issuer's snapshot. NULL: no issuer's
 * document. */
static const struct snapshot *handler_docs_route(h2o_req_t *req, h2o_iovec_t authority, h2o_iovec_t path,
                                                 int *discovery)
{
    size_t issuer_len;

    *discovery = handler_docs_ends_with(path, H2O_STRLIT(PATHS_DISCOVERY), &issuer_len);
    if (!*discovery && !handler_docs_ends_with(path, H2O_STRLIT(PATHS_JWKS), &issuer_len))
        return NULL;
    return routes_find(worker_pin_snapshot(req)->routes, authority.base, authority.len, path.base, issuer_len);
}

/* One issuer's request: its two document paths, under --path-prefix. */
static const struct snapshot *handler_docs_match(struct handler_docs *self, h2o_req_t *req, h2o_iovec_t path,
                                                 int *discovery)
{
    *discovery = h2o_memis(path.base, path.len, self->discovery_path.base, self->discovery_path.len);
    if (!*discovery && !h2o_memis(path.base, path.len, self->jwks_path.base, self->jwks_path.len))
        return NULL;
    return worker_pin_snapshot(req);
}

static int handler_docs_on_req(h2o_handler_t *super, h2o_req_t *req)
{
    struct handler_docs *self = (struct handler_docs *)super;
    h2o_iovec_t authority;
    h2o_iovec_t path = handler_docs_target(req, &authority);
    int is_head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
    int is_get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"));
    int is_options = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("OPTIONS"));
    int discovery = 0;
    const struct snapshot *snap;

    if (handler_docs_head_size(req) > self->max_header_size)
        return handler_docs_error(req, 431, "Request Header Fields Too Large", body_too_large, is_head);
    if (!handler_docs_host_allowed(self, authority))
        return handler_docs_error(req, 421, "Misdirected Request", body_misdirected, is_head);
    snap = self->fleet ? handler_docs_route(req, authority, path, &discovery)
                       : handler_docs_match(self, req, path, &discovery);
    if (snap == NULL)
        return handler_docs_error(req, 404, "Not Found", body_not_found, is_head);
    if (is_options && self->cors) {
        handler_docs_const_headers(req, cors_preflight, HANDLER_DOCS_COUNT(cors_preflight));
        return handler_docs_send_empty(req, 204, "No Content");
    }
    if (!is_get && !is_head) {
        handler_docs_header(req, H2O_TOKEN_ALLOW, H2O_STRLIT("GET, HEAD"));
        return handler_docs_error(req, 405, "Method Not Allowed", body_not_allowed, 0);
    }
    if (snap->unavailable)
        return handler_docs_unavailable(self, req, snap, is_head);
    return handler_docs_serve(self, req, snap, discovery ? &snap->discovery : &snap->jwks, is_head);
}

/* prefix + path, allocated once for the server's lifetime. */
static h2o_iovec_t handler_docs_prefixed(const char *prefix, const char *path)
{
    return h2o_concat(NULL, h2o_iovec_init(prefix, strlen(prefix)), h2o_iovec_init(path, strlen(path)));
}

static void handler_docs_dispose(h2o_handler_t *super)
{
    struct handler_docs *self = (struct handler_docs *)super;

    free(self->discovery_path.base);
    free(self->jwks_path.base);
}

void handler_docs_register(h2o_pathconf_t *pathconf, const struct config *cfg)
{
    struct handler_docs *self = (void *)h2o_create_handler(pathconf, sizeof(*self));
    const char *prefix = cfg->path_prefix ? cfg->path_prefix : "";

    self->super.on_req = handler_docs_on_req;
    self->super.dispose = handler_docs_dispose;
    self->cors = cfg->cors;
    self->discovery_path = handler_docs_prefixed(prefix, PATHS_DISCOVERY);
    self->jwks_path = handler_docs_prefixed(prefix, PATHS_JWKS);
    self->allowed_hosts = cfg->allowed_hosts.items;
    self->nallowed_hosts = cfg->allowed_hosts.count;
    self->max_header_size = cfg->max_header_size;
    self->fleet = cfg->issuers_dir != NULL;
}
