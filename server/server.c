#include "server.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handler_docs.h"
#include "listener.h"
#include "log.h"
#include "worker.h"

/* How long a stopping worker waits for the responses it is writing. */
#define SERVER_DRAIN_MS 10000

/* Nothing but GETs is served: a request body is never needed. */
#define SERVER_MAX_REQUEST_BODY 16384

static void server_configure(h2o_globalconf_t *conf, const struct config *cfg)
{
    h2o_config_init(conf);
    /* No Server header: it costs bytes on every response and tells
     * attackers which library version to look up. */
    conf->server_name = h2o_iovec_init(H2O_STRLIT(""));
    conf->max_request_entity_size = SERVER_MAX_REQUEST_BODY;
    h2o_hostconf_t *host = h2o_config_register_host(conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    handler_docs_register(path, cfg->cors);
}

/* Opens every listening socket of every worker before any thread starts, so
 * that a port in use is reported once, at start, as a clear error. */
static int *server_open_listeners(const struct config *cfg)
{
    size_t n = (size_t)cfg->threads * cfg->listen_count;
    int *fds = malloc(n * sizeof(*fds));
    char err[512];

    for (size_t i = 0; fds != NULL && i < n; i++) {
        if ((fds[i] = listener_open(&cfg->listens[i % cfg->listen_count], err, sizeof(err))) < 0) {
            log_msg(LOG_ERROR, "%s", err);
            while (i-- > 0)
                close(fds[i]);
            free(fds);
            return NULL;
        }
    }
    return fds;
}

/* Blocks the signals the main thread waits for; threads created afterwards
 * inherit the mask, so only sigwait sees them. */
static void server_block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void server_log_listeners(const struct config *cfg)
{
    char url[300];

    for (size_t i = 0; i < cfg->listen_count; i++) {
        listener_url(&cfg->listens[i], url, sizeof(url));
        log_msg(LOG_INFO, "listening on %s (%u threads): %s/.well-known/openid-configuration %s/openid/v1/jwks", url,
                cfg->threads, url, url);
    }
}

int server_run(const struct config *cfg, struct reload *reload)
{
    struct snapshot *snap = reload_current(reload);
    static h2o_globalconf_t conf;
    struct worker **workers = calloc(cfg->threads, sizeof(*workers));
    sigset_t signals;
    size_t started = 0;
    int *fds, rc = 1;

    server_block_signals(&signals);
    if (workers == NULL || (fds = server_open_listeners(cfg)) == NULL) {
        free(workers);
        return 1;
    }
    server_configure(&conf, cfg);
    for (; started < cfg->threads; started++) {
        const int *mine = fds + started * cfg->listen_count;
        int err = ENOMEM;
        if ((workers[started] = worker_create(&conf, mine, cfg->listen_count, snap)) == NULL ||
            (err = worker_start(workers[started])) != 0) {
            log_msg(LOG_ERROR, "cannot start worker thread: %s", strerror(err));
            break;
        }
    }
    if (started == cfg->threads) {
        server_log_listeners(cfg);
        log_msg(LOG_INFO, "received %s; shutting down", strsignal(reload_run(reload, workers, started, &signals)));
        rc = 0;
    }
    for (size_t i = 0; i < started; i++)
        worker_stop(workers[i], SERVER_DRAIN_MS);
    for (size_t i = 0; i < started; i++)
        worker_join(workers[i]);
    h2o_config_dispose(&conf);
    free(fds);
    free(workers);
    return rc;
}
