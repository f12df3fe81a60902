#include "server/reload/cert.h"

#include <stdatomic.h>
#include <string.h>

#include "server/obs/metrics.h"
#include "server/reload/health.h"
#include "server/tls.h"
#include "util/log.h"

/* Counts and logs a reload that failed. */
static void cert_failed(struct cert *c, const char *err, time_t now)
{
    health_reload_result(METRICS_SOURCE_TLS, 0, now);
    atomic_fetch_add(&metrics_process.reload_failures[METRICS_SOURCE_TLS], 1);
    if (c->ctx != NULL)
        log_msg(LOG_ERROR, "TLS certificate reload failed, keeping the current one: %s", err);
    else
        log_msg(LOG_ERROR, "cannot start: TLS certificate unusable: %s", err);
}

SSL_CTX *cert_reload(struct cert *c, time_t now)
{
    const struct config *cfg = c->cfg;
    struct tls_files files;
    char err[1024];
    time_t not_after = 0;
    SSL_CTX *ctx;

    if (cfg->tls_listen_count == 0)
        return NULL;
    if (tls_files_read(cfg->tls_cert_file, cfg->tls_key_file, &files, err, sizeof(err)) != 0) {
        cert_failed(c, err, now);
        return NULL;
    }
    if (files.key_warning[0] != '\0')
        log_once(LOG_WARN, "%s", files.key_warning);
    if (c->ctx != NULL && memcmp(files.digest, c->digest, sizeof(files.digest)) == 0) {
        tls_files_free(&files);
        health_reload_result(METRICS_SOURCE_TLS, 1, now);
        return NULL;
    }
    if ((ctx = tls_context_new(&files, cfg->http2, &not_after, err, sizeof(err))) != NULL)
        memcpy(c->digest, files.digest, sizeof(files.digest));
    tls_files_free(&files);
    if (ctx == NULL) {
        cert_failed(c, err, now);
        return NULL;
    }
    health_reload_result(METRICS_SOURCE_TLS, 1, now);
    SSL_CTX_free(c->ctx);
    c->ctx = ctx;
    atomic_store(&metrics_process.tls_cert_not_after, (long long)not_after);
    log_msg(LOG_INFO, "TLS certificate loaded from %s (expires %lld)", cfg->tls_cert_file, (long long)not_after);
    return ctx;
}

int cert_init(struct cert *c, const struct config *cfg, time_t now)
{
    memset(c, 0, sizeof(*c));
    c->cfg = cfg;
    cert_reload(c, now);
    return cfg->tls_listen_count > 0 && c->ctx == NULL ? -1 : 0;
}

void cert_clear(struct cert *c)
{
    SSL_CTX_free(c->ctx);
    memset(c, 0, sizeof(*c));
}
