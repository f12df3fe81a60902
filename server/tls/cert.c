/* SPDX-License-Identifier: Apache-2.0 */
#include "server/tls/cert.h"

#include <stdatomic.h>
#include <string.h>

#include "server/reload/health.h"
#include "util/log.h"
#include "util/clock.h"

/* Where each kind's expiry goes for /metrics. */
static atomic_int_fast64_t *cert_not_after_gauge(enum cert_kind kind)
{
    return kind == CERT_PUBLIC ? &metrics_process.tls_cert_not_after : &metrics_process.token_review_cert_not_after;
}

/* Counts and logs a reload that failed. */
static void cert_failed(struct cert *c, const char *err, time_t now)
{
    health_reload_result(c->source, 0, now);
    atomic_fetch_add(&metrics_process.reload_failures[c->source], 1);
    if (c->ctx != NULL)
        log_msg(LOG_ERROR, "%s reload failed, keeping the current one: %s", c->what, err);
    else
        log_msg(LOG_ERROR, "cannot start: %s unusable: %s", c->what, err);
}

SSL_CTX *cert_reload(struct cert *c, time_t now)
{
    struct tls_files files;
    char err[1024], when[CLOCK_RFC3339_SIZE];
    time_t not_after = 0;
    SSL_CTX *ctx;

    if (!c->wanted)
        return NULL;
    if (tls_files_read(&c->paths, &files, err, sizeof(err)) != 0) {
        cert_failed(c, err, now);
        return NULL;
    }
    if (files.key_warning[0] != '\0')
        log_once(LOG_WARN, "%s", files.key_warning);
    if (c->ctx != NULL && memcmp(files.digest, c->digest, sizeof(files.digest)) == 0) {
        tls_files_free(&files);
        health_reload_result(c->source, 1, now);
        return NULL;
    }
    if ((ctx = tls_context_new(&files, c->http2, &not_after, err, sizeof(err))) != NULL)
        memcpy(c->digest, files.digest, sizeof(files.digest));
    tls_files_free(&files);
    if (ctx == NULL) {
        cert_failed(c, err, now);
        return NULL;
    }
    health_reload_result(c->source, 1, now);
    SSL_CTX_free(c->ctx);
    c->ctx = ctx;
    atomic_store(cert_not_after_gauge(c->kind), (long long)not_after);
    log_msg(LOG_INFO, "%s loaded from %s (expires %s)", c->what, c->paths.cert_file, clock_rfc3339(not_after, when));
    return ctx;
}

void cert_init(struct cert *c, const struct config *cfg, enum cert_kind kind)
{
    memset(c, 0, sizeof(*c));
    c->kind = kind;
    if (kind == CERT_PUBLIC) {
        c->paths = (struct tls_paths){
            "tls-cert-file", cfg->tls_cert_file, "tls-private-key-file", cfg->tls_key_file, NULL, NULL};
        c->http2 = cfg->http2;
        c->wanted = cfg->tls_listen_count > 0;
        c->source = METRICS_SOURCE_TLS;
        c->what = "TLS certificate";
        return;
    }
    c->paths = (struct tls_paths){"token-review-tls-cert-file",        cfg->token_review_tls_cert_file,
                                  "token-review-tls-private-key-file", cfg->token_review_tls_key_file,
                                  "token-review-client-ca-file",       cfg->token_review_client_ca_file};
    c->http2 = 0; /* the TokenReview site speaks HTTP/1.1 only (site.c) */
    c->wanted = cfg->enable_token_review && cfg->token_review_tls_cert_file != NULL;
    c->source = METRICS_SOURCE_TOKEN_REVIEW_TLS;
    c->what = "TokenReview TLS certificate";
}

int cert_load(struct cert *c, time_t now)
{
    cert_reload(c, now);
    return c->wanted && c->ctx == NULL ? -1 : 0;
}

size_t cert_watch_paths(const struct cert *c, char **paths)
{
    size_t n = 0;

    if (!c->wanted)
        return 0;
    paths[n++] = (char *)c->paths.cert_file;
    paths[n++] = (char *)c->paths.key_file;
    if (c->paths.ca_file != NULL)
        paths[n++] = (char *)c->paths.ca_file;
    return n;
}

void cert_clear(struct cert *c)
{
    SSL_CTX_free(c->ctx);
    memset(c, 0, sizeof(*c));
}
