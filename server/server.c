#include "server/server.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/fdlimit.h"
#include "server/reload/health.h"
#include "server/listener.h"
#include "publish/paths.h"
#include "util/log.h"
#include "server/http/site.h"
#include "server/worker.h"

/* How long a stopping worker waits for the responses it is writing. */
#define SERVER_DRAIN_MS 10000

/* How long the shutdown waits for the reload thread to end. A pass reads
 * a few small files, so this is only ever reached when a read is stuck;
 * the process then exits without the thread. */
#define SERVER_RELOAD_STOP_MS 2000

/* Descriptors kept from client connections for stdio, key, state, log and
 * TLS files, inotify and the signalfd. */
#define SERVER_FD_MARGIN 64

/* One kind of listener (see site.h) with its own h2o configuration,
 * addresses, and workers (one per thread, each with its own SO_REUSEPORT
 * sockets). */
struct server_site {
    h2o_globalconf_t conf;
    const struct config_listen *plain;
    size_t nplain;
    const struct config_listen *tls;
    size_t ntls;
    unsigned threads;
    const struct worker_env *env;
    const char *what;      /* what it serves, for the log; NULL: the two document URLs */
    struct worker_fd *fds; /* threads * (nplain + ntls) listening sockets, until workers take them */
};

/* One listening socket of one thread. TCP listeners get a socket per
 * thread (SO_REUSEPORT); a Unix socket is opened once and shared. */
static int server_open_one(const struct config_listen *l, unsigned thread, int first_fd, char *err, size_t errlen)
{
    if (l->unix_path != NULL && thread > 0)
        return dup(first_fd);
    return listener_open(l, thread == 0, err, errlen);
}

/* Opens every listening socket of every worker of site before any thread
 * starts, so that a port in use is reported once, at start, as a clear
 * error. Returns threads * (nplain + ntls) sockets, or NULL. */
static struct worker_fd *server_open_listeners(const struct server_site *site)
{
    size_t per = site->nplain + site->ntls, n = (size_t)site->threads * per;
    struct worker_fd *fds = calloc(n ? n : 1, sizeof(*fds));
    char err[512];

    for (size_t i = 0; fds != NULL && i < n; i++) {
        size_t k = i % per;
        int tls = k >= site->nplain;
        const struct config_listen *l = tls ? &site->tls[k - site->nplain] : &site->plain[k];
        fds[i] =
            (struct worker_fd){.fd = server_open_one(l, (unsigned)(i / per), fds[k].fd, err, sizeof(err)), .tls = tls};
        if (fds[i].fd < 0) {
            log_msg(LOG_ERROR, "%s", err);
            while (i-- > 0)
                close(fds[i].fd);
            free(fds);
            return NULL;
        }
    }
    return fds;
}

static void server_log_site(const struct server_site *site)
{
    char url[300];

    for (size_t i = 0; i < site->nplain + site->ntls; i++) {
        int tls = i >= site->nplain;
        listener_url(tls ? &site->tls[i - site->nplain] : &site->plain[i], tls ? "https" : "http", url, sizeof(url));
        if (site->what != NULL)
            log_msg(LOG_INFO, "listening on %s (%u threads): %s", url, site->threads, site->what);
        else
            log_msg(LOG_INFO, "listening on %s (%u threads): %s" PATHS_DISCOVERY " %s" PATHS_JWKS, url, site->threads,
                    url, url);
    }
}

static void server_close_listeners(struct server_site *site)
{
    for (size_t i = 0; i < (size_t)site->threads * (site->nplain + site->ntls); i++)
        close(site->fds[i].fd);
    free(site->fds);
    site->fds = NULL;
}

/* Opens the sockets of every site before any worker starts. A port in use
 * anywhere then fails the start before any port accepts (and nothing is
 * logged as listening), and once one port accepts they all do: a probe or a
 * test may hit the admin port as soon as the public one answers.
 * "listening on" is logged as soon as the sockets listen, since from then on
 * a client that connects must find the line already written. */
static int server_open_sites(struct server_site *const *sites, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((sites[i]->fds = server_open_listeners(sites[i])) == NULL) {
            while (i-- > 0)
                server_close_listeners(sites[i]);
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++)
        server_log_site(sites[i]);
    return 0;
}

/* Creates and starts the workers of site on its open sockets, appending
 * them to workers. Returns 0, or -1 (logged) with the ones that did start
 * still listed. */
static int server_start_site(struct server_site *site, struct snapshot *snap, struct worker **workers, size_t *nworkers)
{
    size_t per = site->nplain + site->ntls;
    struct worker_fd *fds = site->fds;
    int rc = 0;

    site->fds = NULL;
    for (unsigned t = 0; rc == 0 && t < site->threads; t++) {
        struct worker *w = worker_create((h2o_globalconf_t *)&site->conf, fds + t * per, per, snap, site->env);
        int err = w ? worker_start(w) : ENOMEM;
        if (err != 0) {
            log_msg(LOG_ERROR, "cannot start a worker thread: %s", strerror(err));
            rc = -1;
            break;
        }
        workers[(*nworkers)++] = w;
    }
    free(fds);
    return rc;
}

/* Blocks the signals the main thread waits for; threads created afterwards
 * inherit the mask, so only server_wait_signal sees them. */
static void server_block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Waits for SIGTERM or SIGINT and returns it, passing each SIGHUP on to
 * the reloader. This thread does nothing else, so a signal is acted on
 * even while a key file read on the reload thread never returns. */
static int server_wait_signal(const sigset_t *signals, struct reload *reload)
{
    for (;;) {
        int sig = sigwaitinfo(signals, NULL);
        if (sig == SIGHUP)
            reload_request(reload);
        else if (sig > 0)
            return sig;
    }
}

/* SIGTERM: /readyz turns 503 at once, and the listeners keep serving for
 * --shutdown-grace so load balancers notice and drain before they close. */
static void server_grace(const struct config *cfg, int sig)
{
    struct timespec left = {.tv_sec = (time_t)cfg->shutdown_grace};

    health_begin_shutdown();
    log_msg(LOG_INFO, "received %s; /readyz answers 503, serving %lus more before shutting down", strsignal(sig),
            cfg->shutdown_grace);
    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}

/* The descriptors that are not client connections, counted high: each
 * worker (up to two per thread, and the admin one) has an epoll fd, a
 * message pipe and a socket per address at most. */
static unsigned long server_fd_reserve(const struct config *cfg)
{
    unsigned long addresses =
        cfg->listen_count + cfg->tls_listen_count + cfg->token_review_listen_count + cfg->admin_listen_count;

    return SERVER_FD_MARGIN + ((unsigned long)cfg->threads * 2 + 1) * (3 + addresses);
}

/* The connection budget of each listener that is on (0 for one that is
 * off): its flag, or less when the open-file limit cannot hold them all.
 * Connections over a budget are then closed at once instead of waiting in
 * the kernel's queue while accept fails and the loop spins. The admin
 * listener is served first, since its probes decide whether the process is
 * restarted, then TokenReview; the public listeners get what is left. */
static void server_budgets(const struct config *cfg, unsigned long budget[METRICS_NLISTENERS])
{
    static const enum metrics_listener order[] = {METRICS_LISTENER_ADMIN, METRICS_LISTENER_TOKENREVIEW,
                                                  METRICS_LISTENER_PUBLIC};
    static const char *const what[METRICS_NLISTENERS] = {"the public listeners", "the TokenReview listener",
                                                         "the admin listener"};
    static const char *const flag[METRICS_NLISTENERS] = {"--max-connections", "--token-review-max-connections",
                                                         "--admin-max-connections"};
    const unsigned long want[METRICS_NLISTENERS] = {
        [METRICS_LISTENER_PUBLIC] = cfg->max_connections,
        [METRICS_LISTENER_TOKENREVIEW] = cfg->enable_token_review ? cfg->token_review_max_connections : 0,
        [METRICS_LISTENER_ADMIN] = cfg->admin_listen_count > 0 ? cfg->admin_max_connections : 0,
    };
    unsigned long left = fdlimit_raise(server_fd_reserve(cfg));

    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        enum metrics_listener l = order[i];
        budget[l] = want[l] <= left ? want[l] : left > 0 ? left : 1;
        left -= budget[l] < left ? budget[l] : left;
        if (budget[l] < want[l])
            log_msg(LOG_WARN,
                    "the open-file limit leaves room for %lu connections of %s, fewer than %s %lu; more are "
                    "closed at once (raise LimitNOFILE= or ulimit -n)",
                    budget[l], what[l], flag[l], want[l]);
    }
}

int server_run(const struct config *cfg, struct reload *reload, struct accesslog *accesslog)
{
    static struct server_site docs, review, admin;
    struct server_site *sites[3];
    size_t nsites = 0;
    unsigned long budget[METRICS_NLISTENERS];
    uint64_t write_timeout_ms = (uint64_t)cfg->write_timeout * 1000;
    struct worker_env docs_env, review_env, admin_env;
    size_t nworkers = 0;
    struct worker **workers = calloc((size_t)cfg->threads * 2 + 1, sizeof(*workers));
    sigset_t signals;
    int rc = 1;

    server_block_signals(&signals);
    if (workers == NULL)
        return 1;
    server_budgets(cfg, budget);
    docs_env = (struct worker_env){.tls = reload_tls(reload),
                                   .accesslog = accesslog,
                                   .listener = METRICS_LISTENER_PUBLIC,
                                   .max_connections = budget[METRICS_LISTENER_PUBLIC],
                                   .write_timeout_ms = write_timeout_ms};
    review_env = (struct worker_env){.accesslog = accesslog,
                                     .listener = METRICS_LISTENER_TOKENREVIEW,
                                     .max_connections = budget[METRICS_LISTENER_TOKENREVIEW],
                                     .write_timeout_ms = write_timeout_ms};
    admin_env = (struct worker_env){.listener = METRICS_LISTENER_ADMIN,
                                    .max_connections = budget[METRICS_LISTENER_ADMIN],
                                    .write_timeout_ms = write_timeout_ms};
    docs = (struct server_site){.plain = cfg->listens,
                                .nplain = cfg->listen_count,
                                .tls = cfg->tls_listens,
                                .ntls = cfg->tls_listen_count,
                                .threads = cfg->threads,
                                .env = &docs_env};
    site_configure(&docs.conf, cfg, SITE_DOCS);
    review = (struct server_site){.plain = cfg->token_review_listens,
                                  .nplain = cfg->token_review_listen_count,
                                  .threads = cfg->threads,
                                  .env = &review_env,
                                  .what = "POST " PATHS_TOKENREVIEW};
    site_configure(&review.conf, cfg, SITE_TOKENREVIEW);
    admin = (struct server_site){.plain = cfg->admin_listens,
                                 .nplain = cfg->admin_listen_count,
                                 .threads = 1,
                                 .env = &admin_env,
                                 .what = PATHS_LIVEZ " " PATHS_READYZ " " PATHS_METRICS};
    site_configure(&admin.conf, cfg, SITE_ADMIN);
    sites[nsites++] = &docs;
    if (cfg->enable_token_review)
        sites[nsites++] = &review;
    if (cfg->admin_listen_count > 0)
        sites[nsites++] = &admin;
    if (server_open_sites(sites, nsites) == 0) {
        size_t started = 0;
        while (started < nsites && server_start_site(sites[started], reload_current(reload), workers, &nworkers) == 0)
            started++;
        for (size_t i = started + 1; i < nsites; i++)
            server_close_listeners(sites[i]);
        rc = started == nsites ? 0 : 1;
    }
    if (rc == 0 && (errno = reload_start(reload, workers, nworkers)) != 0) {
        log_msg(LOG_ERROR, "cannot start the key reload thread: %s", strerror(errno));
        rc = 1;
    }
    if (rc == 0)
        server_grace(cfg, server_wait_signal(&signals, reload));
    if (reload_stop(reload, SERVER_RELOAD_STOP_MS) != 0)
        rc = 1;
    if (nworkers > 0)
        log_msg(LOG_INFO, "shutting down: finishing in-flight requests");
    for (size_t i = 0; i < nworkers; i++)
        worker_stop(workers[i], SERVER_DRAIN_MS);
    for (size_t i = 0; i < nworkers; i++)
        worker_join(workers[i]);
    h2o_config_dispose(&docs.conf);
    h2o_config_dispose(&review.conf);
    h2o_config_dispose(&admin.conf);
    free(workers);
    return rc;
}
