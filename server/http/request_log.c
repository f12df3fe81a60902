/* SPDX-License-Identifier: Apache-2.0 */
#include "server/http/request_log.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "server/obs/accesslog.h"
#include "server/obs/metrics.h"
#include "util/paths.h"
#include "server/conn/worker.h"

#define TOKENREVIEW_SUFFIX "/tokenreviews"

/* Where a request's caller waits for its access-log line: a variable of
 * the request's environment (h2o_req_getenv), which only our handlers
 * read. */
#define REQUEST_LOG_CALLER "oidc.caller"

/* Which document a path asked for, by its ending, so that a --path-prefix
 * needs no special case. */
static enum metrics_path request_log_path(h2o_req_t *req)
{
    size_t len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    const char *p = req->path.base;

#define ENDS_WITH(s) (len >= sizeof(s) - 1 && memcmp(p + len - (sizeof(s) - 1), s, sizeof(s) - 1) == 0)
    if (ENDS_WITH(PATHS_DISCOVERY))
        return METRICS_PATH_DISCOVERY;
    if (ENDS_WITH(PATHS_JWKS))
        return METRICS_PATH_JWKS;
    if (ENDS_WITH(TOKENREVIEW_SUFFIX))
        return METRICS_PATH_TOKENREVIEW;
#undef ENDS_WITH
    return METRICS_PATH_OTHER;
}

static uint64_t request_log_duration_us(h2o_req_t *req)
{
    struct timeval now;
    long long us;

    gettimeofday(&now, NULL);
    us = (long long)(now.tv_sec - req->timestamps.request_begin_at.tv_sec) * 1000000 +
         (now.tv_usec - req->timestamps.request_begin_at.tv_usec);
    return us > 0 ? (uint64_t)us : 0;
}

static const char *request_log_protocol(int version)
{
    switch (version) {
    case 0x200:
        return "HTTP/2";
    case 0x101:
        return "HTTP/1.1";
    case 0x100:
        return "HTTP/1.0";
    default:
        return "HTTP/0.9";
    }
}

/* "host:port" of the peer, as the access log prints it. */
static size_t request_log_remote(h2o_req_t *req, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sslen = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    char host[NI_MAXHOST];
    size_t n;
    int32_t port;

    if (sslen == 0 || (n = h2o_socket_getnumerichost((struct sockaddr *)&ss, sslen, host)) == SIZE_MAX)
        return (size_t)snprintf(buf, len, "unix");
    port = h2o_socket_getport((struct sockaddr *)&ss);
    return (size_t)snprintf(buf, len, ss.ss_family == AF_INET6 ? "[%.*s]:%d" : "%.*s:%d", (int)n, host, (int)port);
}

static void request_log_write(struct accesslog_buffer *buf, h2o_req_t *req, uint64_t duration_us)
{
    ssize_t ua = h2o_find_header(&req->headers, H2O_TOKEN_USER_AGENT, -1);
    h2o_iovec_t *caller = h2o_req_getenv(req, H2O_STRLIT(REQUEST_LOG_CALLER), 0);
    char remote[NI_MAXHOST + 16];
    struct accesslog_entry e = {
        .time = req->timestamps.request_begin_at,
        .remote = remote,
        .method = req->method.base,
        .method_len = req->method.len,
        .path = req->path.base,
        .path_len = req->path.len,
        .protocol = request_log_protocol(req->version),
        .status = req->res.status,
        .bytes = req->bytes_sent,
        .duration_us = duration_us,
    };

    if (caller != NULL) {
        e.caller = caller->base;
        e.caller_len = caller->len;
    }
    e.remote_len = request_log_remote(req, remote, sizeof(remote));
    if (ua >= 0) {
        e.user_agent = req->headers.entries[ua].value.base;
        e.user_agent_len = req->headers.entries[ua].value.len;
    }
    accesslog_append(buf, &e);
}

static void request_log_on_done(h2o_logger_t *self, h2o_req_t *req)
{
    struct accesslog_buffer *buf = worker_accesslog(req->conn->ctx);
    uint64_t duration_us = request_log_duration_us(req);

    (void)self;
    metrics_request(worker_metrics(req->conn->ctx), request_log_path(req), req->method.base, req->method.len,
                    req->res.status, req->bytes_sent, duration_us);
    if (buf != NULL)
        request_log_write(buf, req, duration_us);
}

void request_log_caller(h2o_req_t *req, const char *name, size_t len)
{
    *h2o_req_getenv(req, H2O_STRLIT(REQUEST_LOG_CALLER), 1) = h2o_strdup(&req->pool, name, len);
}

void request_log_register(h2o_pathconf_t *pathconf)
{
    h2o_logger_t *logger = h2o_create_logger(pathconf, sizeof(*logger));

    logger->log_access = request_log_on_done;
}
