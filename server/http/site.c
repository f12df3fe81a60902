/* SPDX-License-Identifier: Apache-2.0 */
#include "server/http/site.h"

#include "server/http/handler_admin.h"
#include "server/http/handler_docs.h"
#include "server/http/handler_tokenreview.h"
#include "server/http/http_framing.h"
#include "server/http/request_log.h"

/* The public and admin listeners serve GETs only: no request body needed. */
#define SITE_MAX_GET_BODY 16384

/* A fresh h2o configuration with one handler for every path, the limits of
 * cfg, the framing and Host check in front of the handler (one rule for
 * every listener), and (observed) the request hook that feeds metrics and
 * the access log — not for the admin listener, whose probes would drown
 * both. No
 * Server header: it costs bytes on every response and tells attackers which
 * library version to look up. Without http2, h2o's HTTP/1 side neither
 * upgrades (Upgrade: h2c) nor takes the HTTP/2 preface (prior knowledge, even
 * over TLS): h2o 2.2.5's HTTP/2 lets one client exhaust memory
 * (docs/http2.md). */
static h2o_pathconf_t *site_init(h2o_globalconf_t *conf, const struct config *cfg, size_t max_body, int observed,
                                 int http2)
{
    h2o_config_init(conf);
    conf->server_name = h2o_iovec_init(H2O_STRLIT(""));
    conf->max_request_entity_size = max_body;
    conf->http1.upgrade_to_http2 = http2;
    conf->http1.req_timeout = (uint64_t)cfg->request_timeout * 1000;
    /* h2o's own deadline for a TLS handshake (10 s unless set) comes a
     * second after --handshake-timeout, at which the worker closes, and
     * counts, a connection still silent (worker.c). */
    conf->handshake_timeout = ((uint64_t)cfg->handshake_timeout + 1) * 1000;
    conf->http2.idle_timeout = (uint64_t)cfg->idle_timeout * 1000;
    conf->http2.max_concurrent_requests_per_connection = cfg->http2_max_streams;
    h2o_hostconf_t *host = h2o_config_register_host(conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    http_framing_register(path);
    if (observed)
        request_log_register(path);
    return path;
}

void site_configure(h2o_globalconf_t *conf, const struct config *cfg, enum site_kind kind)
{
    switch (kind) {
    case SITE_DOCS:
        handler_docs_register(site_init(conf, cfg, SITE_MAX_GET_BODY, 1, cfg->http2), cfg);
        break;
    /* Only the public side may speak HTTP/2: the TokenReview and admin
     * clients (Vault, probes, Prometheus) use HTTP/1.1 over plain TCP. */
    case SITE_TOKENREVIEW:
        handler_tokenreview_register(site_init(conf, cfg, TOKENREVIEW_MAX_BODY, 1, 0), cfg);
        break;
    case SITE_ADMIN:
        handler_admin_register(site_init(conf, cfg, SITE_MAX_GET_BODY, 0, 0));
        break;
    }
}
