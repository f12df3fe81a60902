/* SPDX-License-Identifier: Apache-2.0 */
#include "server/http/handler_admin.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/reload/health.h"
#include "server/reload/mirror.h"
#include "server/obs/metrics.h"
#include "server/obs/status.h"
#include "util/paths.h"
#include "util/clock.h"
#include "util/strbuf.h"

static h2o_generator_t admin_generator = {NULL, NULL};

/* Answers with body copied into the request's pool. */
static int admin_send(h2o_req_t *req, int status, const char *reason, const char *type, const char *body, size_t len)
{
    h2o_iovec_t buf = h2o_strdup(&req->pool, body, len);

    req->res.status = status;
    req->res.reason = reason;
    req->res.content_length = len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, type, strlen(type));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    h2o_start_response(req, &admin_generator);
    h2o_send(req, &buf, 1, H2O_SEND_STATE_FINAL);
    return 0;
}

/* 200 "ok", or 503 "not <state>: <why>". */
static int admin_health(h2o_req_t *req, int ok, const char *state, const char *why)
{
    char body[300];
    size_t n;

    if (ok)
        return admin_send(req, 200, "OK", "text/plain; charset=utf-8", H2O_STRLIT("ok\n"));
    n = (size_t)snprintf(body, sizeof(body), "not %s: %s\n", state, why);
    return admin_send(req, 503, "Service Unavailable", "text/plain; charset=utf-8", body,
                      n < sizeof(body) ? n : sizeof(body) - 1);
}

/* ?verbose on /readyz: one line per issuer of a fleet after the
 * verdict, "NAME ok ISSUER" or "NAME refused: WHY" (a refused file does
 * not make the server unready: the other issuers are served). */
static int admin_readyz_verbose(h2o_req_t *req, int ok, const char *why)
{
    struct status *st = status_acquire();
    struct strbuf b = {0};
    size_t len = 0;
    char *body;
    int rc;

    strbuf_printf(&b, ok ? "ok\n" : "not ready: %s\n", why);
    for (size_t i = 0; st != NULL && i < st->nissuers; i++) {
        const struct status_issuer *is = &st->issuers[i];
        if (is->problem == NULL)
            strbuf_printf(&b, "%s ok %s\n", is->name, is->issuer);
        else
            strbuf_printf(&b, "%s refused%s: %s\n", is->name, is->issuer ? " (the last good state serves)" : "",
                          is->problem);
    }
    status_release(st);
    if ((body = strbuf_finish(&b, &len)) == NULL)
        return admin_send(req, 500, "Internal Server Error", "text/plain; charset=utf-8",
                          H2O_STRLIT("out of memory\n"));
    rc = admin_send(req, ok ? 200 : 503, ok ? "OK" : "Service Unavailable", "text/plain; charset=utf-8", body, len);
    free(body);
    return rc;
}

/* The query's page=N (from 1), or 0. */
static size_t admin_page(h2o_req_t *req)
{
    const char *q = req->query_at != SIZE_MAX ? req->path.base + req->query_at + 1 : NULL;
    size_t qlen = q ? req->path.len - req->query_at - 1 : 0, n = 0;
    const char *at = q ? memmem(q, qlen, "page=", 5) : NULL;

    for (at = at ? at + 5 : NULL; at && at < q + qlen && *at >= '0' && *at <= '9' && n < 1000000; at++)
        n = n * 10 + (size_t)(*at - '0');
    return n;
}

static int admin_readyz(h2o_req_t *req)
{
    char why[256];
    int ok = health_ready(time(NULL), clock_now_ms(), why, sizeof(why));

    if (req->query_at != SIZE_MAX &&
        memmem(req->path.base + req->query_at, req->path.len - req->query_at, "verbose", 7) != NULL)
        return admin_readyz_verbose(req, ok, why);
    return admin_health(req, ok, "ready", why);
}

static int admin_livez(h2o_req_t *req)
{
    char why[256];

    return admin_health(req, health_live(clock_now_ms(), why, sizeof(why)), "live", why);
}

static int admin_metrics(h2o_req_t *req)
{
    size_t len = 0;
    char *body = metrics_render(&len);
    int rc;

    if (body == NULL)
        return admin_send(req, 500, "Internal Server Error", "text/plain; charset=utf-8",
                          H2O_STRLIT("out of memory\n"));
    rc = admin_send(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
    free(body);
    return rc;
}

/* The status page (status.h), rendered now from the last status the
 * reload thread published and the live counters. It is for people and
 * small, so rendering per request costs nothing that matters; the status
 * is held by reference, no lock, while it renders. The page runs no
 * script (Content-Security-Policy forbids any), so a value that escaping
 * missed still could not act. */
static int admin_status(h2o_req_t *req)
{
    struct metrics_summary_row rows[METRICS_SUMMARY_MAX];
    size_t nrows = metrics_summary(rows), len = 0;
    struct status_build build = {.version = OIDC_VERSION, .page = admin_page(req)};
    struct status *st = status_acquire();
    struct mirror_status ms;
    struct status_upstream up;
    time_t now = time(NULL);
    int upstream;
    char *body;
    int rc;

    metrics_get_build(&build.commit, &build.date);
    upstream = mirror_status_get(&ms) && mirror_status_page(&ms, now, &up);
    body = status_render_html(st, upstream ? &up : NULL, rows, nrows, &build, now, &len);
    status_release(st);
    if (body == NULL)
        return admin_send(req, 500, "Internal Server Error", "text/plain; charset=utf-8",
                          H2O_STRLIT("out of memory\n"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("content-security-policy"), 0, NULL,
                          H2O_STRLIT("default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
                                     "form-action 'none'; frame-ancestors 'none'"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-content-type-options"), 0, NULL,
                          H2O_STRLIT("nosniff"));
    rc = admin_send(req, 200, "OK", "text/html; charset=utf-8", body, len);
    free(body);
    return rc;
}

static int admin_on_req(h2o_handler_t *self, h2o_req_t *req)
{
    h2o_iovec_t path = req->path_normalized;

    (void)self;
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
        !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
        return admin_send(req, 405, "Method Not Allowed", "text/plain; charset=utf-8", H2O_STRLIT("GET only\n"));
    if (h2o_memis(path.base, path.len, H2O_STRLIT(PATHS_LIVEZ)))
        return admin_livez(req);
    if (h2o_memis(path.base, path.len, H2O_STRLIT(PATHS_READYZ)))
        return admin_readyz(req);
    if (h2o_memis(path.base, path.len, H2O_STRLIT(PATHS_METRICS)))
        return admin_metrics(req);
    if (h2o_memis(path.base, path.len, H2O_STRLIT(PATHS_STATUS)))
        return admin_status(req);
    return admin_send(req, 404, "Not Found", "text/plain; charset=utf-8", H2O_STRLIT("not found\n"));
}

void handler_admin_register(h2o_pathconf_t *pathconf)
{
    h2o_handler_t *self = h2o_create_handler(pathconf, sizeof(*self));

    self->on_req = admin_on_req;
}
