#include "server.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handler_docs.h"
#include "handler_tokenreview.h"
#include "listener.h"
#include "log.h"
#include "worker.h"

/* How long a stopping worker waits for the responses it is writing. */
#define SERVER_DRAIN_MS 10000

/* The public listeners serve GETs only: a request body is never needed. */
#define SERVER_MAX_DOCS_BODY 16384

/* One kind of listener — the public documents, or the TokenReview API —
 * with its own h2o configuration, addresses, and workers (one per thread,
 * each with its own SO_REUSEPORT sockets). */
struct server_site {
    h2o_globalconf_t conf;
    const struct config_listen *listens;
    size_t nlistens;
    const char *what; /* what it serves, for the log; NULL: the two document URLs */
};

/* A fresh h2o configuration with one handler for every path. No Server
 * header: it costs bytes on every response and tells attackers which
 * library version to look up. */
static h2o_pathconf_t *server_configure(h2o_globalconf_t *conf, size_t max_body)
{
    h2o_config_init(conf);
    conf->server_name = h2o_iovec_init(H2O_STRLIT(""));
    conf->max_request_entity_size = max_body;
    h2o_hostconf_t *host = h2o_config_register_host(conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    return h2o_config_register_path(host, "/", 0);
}

/* Opens every listening socket of every worker of site before any thread
 * starts, so that a port in use is reported once, at start, as a clear
 * error. Returns threads * nlistens descriptors, or NULL. */
static int *server_open_listeners(const struct server_site *site, unsigned threads)
{
    size_t n = (size_t)threads * site->nlistens;
    int *fds = malloc(n * sizeof(*fds));
    char err[512];

    for (size_t i = 0; fds != NULL && i < n; i++) {
        if ((fds[i] = listener_open(&site->listens[i % site->nlistens], err, sizeof(err))) < 0) {
            log_msg(LOG_ERROR, "%s", err);
            while (i-- > 0)
                close(fds[i]);
            free(fds);
            return NULL;
        }
    }
    return fds;
}

/* Creates and starts the workers of site, appending them to workers.
 * Returns 0, or -1 (logged) with the ones that did start still listed. */
static int server_start_site(const struct server_site *site, unsigned threads, struct snapshot *snap,
                             struct worker **workers, size_t *nworkers)
{
    int *fds = server_open_listeners(site, threads);
    int rc = fds ? 0 : -1;
    char url[300];

    for (unsigned t = 0; rc == 0 && t < threads; t++) {
        struct worker *w =
            worker_create((h2o_globalconf_t *)&site->conf, fds + t * site->nlistens, site->nlistens, snap);
        int err = w ? worker_start(w) : ENOMEM;
        if (err != 0) {
            log_msg(LOG_ERROR, "cannot start a worker thread: %s", strerror(err));
            rc = -1;
            break;
        }
        workers[(*nworkers)++] = w;
    }
    for (size_t i = 0; rc == 0 && i < site->nlistens; i++) {
        listener_url(&site->listens[i], url, sizeof(url));
        if (site->what != NULL)
            log_msg(LOG_INFO, "listening on %s (%u threads): %s", url, threads, site->what);
        else
            log_msg(LOG_INFO, "listening on %s (%u threads): %s/.well-known/openid-configuration %s/openid/v1/jwks",
                    url, threads, url, url);
    }
    free(fds);
    return rc;
}

/* Blocks the signals the main thread waits for; threads created afterwards
 * inherit the mask, so only the reloader's signalfd sees them. */
static void server_block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int server_run(const struct config *cfg, struct reload *reload)
{
    static struct server_site docs, review;
    size_t nworkers = 0, max_workers = (size_t)cfg->threads * 2;
    struct worker **workers = calloc(max_workers, sizeof(*workers));
    sigset_t signals;
    int rc = 1;

    server_block_signals(&signals);
    if (workers == NULL)
        return 1;
    docs = (struct server_site){.listens = cfg->listens, .nlistens = cfg->listen_count};
    handler_docs_register(server_configure(&docs.conf, SERVER_MAX_DOCS_BODY), cfg->cors);
    review = (struct server_site){.listens = cfg->token_review_listens,
                                  .nlistens = cfg->token_review_listen_count,
                                  .what = "POST /apis/authentication.k8s.io/v1/tokenreviews"};
    handler_tokenreview_register(server_configure(&review.conf, TOKENREVIEW_MAX_BODY), cfg);
    if (server_start_site(&docs, cfg->threads, reload_current(reload), workers, &nworkers) == 0 &&
        (!cfg->enable_token_review ||
         server_start_site(&review, cfg->threads, reload_current(reload), workers, &nworkers) == 0)) {
        log_msg(LOG_INFO, "received %s; shutting down", strsignal(reload_run(reload, workers, nworkers, &signals)));
        rc = 0;
    }
    for (size_t i = 0; i < nworkers; i++)
        worker_stop(workers[i], SERVER_DRAIN_MS);
    for (size_t i = 0; i < nworkers; i++)
        worker_join(workers[i]);
    h2o_config_dispose(&docs.conf);
    h2o_config_dispose(&review.conf);
    free(workers);
    return rc;
}
