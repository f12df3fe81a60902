/* SPDX-License-Identifier: Apache-2.0 */
#include "server/server.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util/paths.h"
#include "push/publisher.h"
#include "server/conn/connbudget.h"
#include "server/extsigner/grpc_server.h"
#include "server/fdlimit.h"
#include "server/http/site.h"
#include "server/conn/listener.h"
#include "server/reload/bound_lookup.h"
#include "server/reload/mirror_pool.h"
#include "server/reload/mirror_thread.h"
#include "server/obs/accesslog.h"
#include "server/obs/status.h"
#include "server/tls/cert.h"
#include "server/reload/fleet.h"
#include "server/reload/health.h"
#include "server/reload/reload.h"
#include "server/reload/schedule.h"
#include "server/reload/watch.h"
#include "server/conn/worker.h"
#include "util/clock.h"
#include "util/log.h"

/* How long a stopping worker waits for the responses it is writing. */
#define SERVER_DRAIN_MS 10000

/* How long the shutdown waits for the reload thread to end. A pass reads
 * a few small files, so this is only ever reached when a read is stuck;
 * the process then exits without the thread. */
#define SERVER_RELOAD_STOP_MS 2000

/* The reload thread reports itself alive (health.h) at least this often. */
#define SERVER_HEARTBEAT_MS 1000

/* The kinds of listener: docs, TokenReview, admin. */
#define SERVER_NSITES 3

/* One kind of listener (see site.h) with its own h2o configuration,
 * addresses, and workers (one per thread, each with its own SO_REUSEPORT
 * sockets). */
struct server_site {
    h2o_globalconf_t conf;
    struct listener_addr *addrs;
    size_t naddrs;
    unsigned threads;
    struct worker_env env;
    const char *what;        /* what it serves, for the log; NULL: the two document URLs */
    enum cert_kind cert;     /* the certificate its TLS listeners serve */
    struct listener_fd *fds; /* threads * naddrs listening sockets, until the workers take them */
    size_t first_worker;     /* its workers: s->workers[first_worker .. + threads] */
};

/* What a site is made of: its kind, listener (budget, metrics) and the
 * addresses of its flags (plain_flag's, then tls_flag's). */
struct server_site_spec {
    enum site_kind kind;
    enum metrics_listener listener;
    unsigned threads;
    const char *what;
    const struct config_listen *plain, *tls;
    size_t nplain, ntls;
    const char *plain_flag, *tls_flag;
    enum cert_kind cert;
};

struct server {
    const struct config *cfg;
    struct accesslog *accesslog; /* --access-log, or NULL */
    struct server_site sites[SERVER_NSITES];
    size_t nsites;
    struct worker **workers;
    size_t nworkers;
    struct connbudget *budgets[METRICS_NLISTENERS]; /* each listener's, shared by its workers */
    /* What the reload thread works with: one issuer's reloader, or with
     * --issuers-dir the fleet's. */
    struct reload *reload;
    struct fleet *fleet;
    struct cert certs[CERT_NKINDS];
    struct watch *watch;
    struct mirror_thread *mirror; /* reads --upstream, or NULL */
    struct mirror_pool *pool;     /* reads a fleet's upstreams, or NULL */
    struct bound_lookup *bound;   /* --token-review-check-bound-objects, or NULL */
    struct schedule schedule;
    int warned_no_inotify;
    int wake_fd;                /* eventfd: SIGHUP and the stop wake the reload thread */
    atomic_int hup;             /* a re-read was asked for */
    atomic_int pool_woke;       /* the fleet's mirror pool read something new */
    atomic_int stop;            /* the reload thread must end, and nothing more reaches the workers */
    pthread_mutex_t publish_mu; /* held around server_publish, and around setting stop */
    pthread_t thread;
    int thread_started;
    int thread_abandoned; /* it did not stop in time: it may still use all this */
    /* --publish-to: pushes every snapshot to object storage, or NULL. */
    struct push_publisher *publisher;
    /* The external signer (--signing-key-dir): the state its calls answer
     * from, handed over after each snapshot, and its gRPC server. */
    struct signer_slot signer_slot;
    struct extsigner_grpc *extsigner; /* --external-signer-listen, or NULL */
};

/* The one door by which the workers get what they serve: the first
 * snapshot and certificates at start, then each new one a reload builds
 * (NULL: unchanged). Each site's workers get the certificate of its kind.
 * Nothing passes once the stop has begun, since the workers may be gone
 * then. */
static void server_publish(struct server *s, struct snapshot *snap, SSL_CTX *const tls[CERT_NKINDS])
{
    pthread_mutex_lock(&s->publish_mu);
    for (size_t i = 0; !atomic_load(&s->stop) && i < s->nsites; i++) {
        const struct server_site *site = &s->sites[i];
        for (size_t w = site->first_worker; w < site->first_worker + site->threads && w < s->nworkers; w++) {
            if (tls[site->cert] != NULL)
                worker_publish_tls(s->workers[w], tls[site->cert]);
            if (snap != NULL)
                worker_publish(s->workers[w], snap);
        }
    }
    pthread_mutex_unlock(&s->publish_mu);
}

/* Hands the external signer a new state (NULL: unchanged), after the
 * snapshot it was built from went to the workers: kube-apiserver is never
 * told of a key the JWKS does not show yet. Every pass frees the states
 * replaced earlier that calls held then (not a gRPC thread: see
 * struct signer_slot), so a retired key leaves memory within a pass. */
static void server_publish_signer(struct server *s, struct signer_state *st)
{
    if (st != NULL)
        signer_slot_set(&s->signer_slot, st);
    else
        signer_slot_sweep(&s->signer_slot);
}

/* The snapshot the workers serve now: the issuer's, or the fleet's
 * routing one. */
static struct snapshot *server_current(const struct server *s)
{
    return s->fleet ? fleet_current(s->fleet) : reload_current(s->reload);
}

/* What the status page shows after a pass. */
static struct status *server_status(const struct server *s)
{
    return s->fleet ? fleet_status(s->fleet) : reload_status(s->reload);
}

/* Re-creates every watch before the files are read, so a path that
 * appeared, vanished or now points elsewhere is watched correctly. A
 * fleet's issuer and key files are watched through their directories. */
static void server_rewatch(struct server *s)
{
    const struct config *cfg = s->cfg;
    char *paths[cfg->key_files.count + 3 + 3 * CERT_NKINDS], **dirs = NULL;
    size_t n = cfg->key_files.count, ndirs = s->fleet ? fleet_watch_dirs(s->fleet, &dirs) : 0;

    if (n > 0) /* none with only an --upstream or --signing-key-dir: items is NULL then */
        memcpy(paths, cfg->key_files.items, n * sizeof(paths[0]));
    if (s->fleet == NULL && cfg->issuers_dir != NULL) /* before the first pass */
        paths[n++] = cfg->issuers_dir;
    if (cfg->signing_key_file != NULL)
        paths[n++] = cfg->signing_key_file;
    if (cfg->signing_key_dir != NULL)
        paths[n++] = cfg->signing_key_dir;
    for (int k = 0; k < CERT_NKINDS; k++)
        n += cert_watch_paths(&s->certs[k], paths + n);
    watch_reset(s->watch, paths, n);
    watch_add_dirs(s->watch, dirs, ndirs);
    for (size_t i = 0; i < ndirs; i++)
        free(dirs[i]);
    free(dirs);
    if (watch_fd(s->watch) < 0 && !s->warned_no_inotify) {
        log_msg(LOG_WARN, "inotify unavailable (%s); keys are re-read every %lus and on SIGHUP", strerror(errno),
                cfg->key_reload_interval);
        s->warned_no_inotify = 1;
    }
}

/* One pass: the key files and the certificates, and whatever changed to
 * the workers. */
static void server_reload_pass(struct server *s)
{
    time_t now = time(NULL);
    int64_t now_ms = clock_now_ms();
    struct snapshot *snap;
    SSL_CTX *tls[CERT_NKINDS];

    schedule_ran(&s->schedule, now_ms);
    server_rewatch(s);
    snap = s->fleet ? fleet_pass(s->fleet, now, now_ms) : reload_pass(s->reload, now, now_ms);
    for (int k = 0; k < CERT_NKINDS; k++)
        tls[k] = cert_reload(&s->certs[k], now);
    server_publish(s, snap, tls);
    if (s->fleet != NULL) {
        status_publish(server_status(s));
        return; /* no signer (config/ refuses it with --issuers-dir); each issuer's publisher is the fleet's */
    }
    server_publish_signer(s, reload_signer_changed(s->reload));
    if (snap != NULL)
        push_publisher_offer(s->publisher, snap);
    status_publish(server_status(s));
}

/* Milliseconds until the next pass is due. */
static int server_reload_timeout(const struct server *s)
{
    int64_t now = clock_now_ms(), confirm_at, next;
    time_t wall_at;

    if (s->fleet != NULL)
        fleet_deadlines(s->fleet, &confirm_at, &wall_at);
    else
        reload_deadlines(s->reload, &confirm_at, &wall_at);
    next = schedule_next(&s->schedule, confirm_at, wall_at, now, time(NULL));
    return next <= now ? 0 : next - now > SERVER_HEARTBEAT_MS ? SERVER_HEARTBEAT_MS : (int)(next - now);
}

/* Takes what woke the thread: a re-read asked for (SIGHUP) is due now
 * (and a read of the --upstream), and so is a pass with a new set from
 * the --upstream; a change to a watched file after the debounce. */
static void server_take_wakeups(struct server *s, int watch_ready)
{
    struct keyset *upstream;
    uint64_t n;

    if (read(s->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN) {
        /* Nothing to drain. */
    }
    if (atomic_exchange(&s->hup, 0)) {
        log_msg(LOG_INFO, "SIGHUP: reloading keys");
        schedule_requested(&s->schedule, clock_now_ms());
        if (s->fleet != NULL)
            fleet_force(s->fleet);
        if (s->fleet != NULL)
            fleet_mirror_hurry(s->fleet);
        if (s->mirror != NULL)
            mirror_thread_hurry(s->mirror);
    }
    if (s->pool != NULL && atomic_exchange(&s->pool_woke, 0))
        schedule_requested(&s->schedule, clock_now_ms()); /* a fleet pass takes what the pool read */
    if (s->mirror != NULL && (upstream = mirror_thread_take(s->mirror)) != NULL) {
        reload_upstream(s->reload, upstream);
        schedule_requested(&s->schedule, clock_now_ms());
    }
    if (watch_ready && watch_read(s->watch))
        schedule_changed(&s->schedule, clock_now_ms());
}

/* The reload thread: waits for a change, a request, a deadline or the
 * stop, and reports itself alive on every turn (so that a pass stuck in
 * a read shows on /livez). */
static void *server_reload_main(void *arg)
{
    struct server *s = arg;

    while (!atomic_load(&s->stop)) {
        struct pollfd fds[2] = {{.fd = s->wake_fd, .events = POLLIN}, {.fd = watch_fd(s->watch), .events = POLLIN}};

        health_reload_alive(clock_now_ms(), 1);
        if (poll(fds, 2, server_reload_timeout(s)) < 0 && errno != EINTR) {
            log_msg(LOG_ERROR, "the key reload loop ends: poll: %s", strerror(errno));
            break; /* /livez turns 503: a restart is the way out */
        }
        server_take_wakeups(s, (fds[1].revents & POLLIN) != 0);
        if (!atomic_load(&s->stop) && server_reload_timeout(s) == 0)
            server_reload_pass(s);
    }
    if (atomic_load(&s->stop) && s->fleet != NULL)
        fleet_save_at_exit(s->fleet, time(NULL), clock_now_ms());
    else if (atomic_load(&s->stop))
        reload_save_at_exit(s->reload, time(NULL), clock_now_ms());
    return NULL;
}

/* Wakes the reload thread; eventfd writes never block (the counter only
 * adds). */
static void server_wake(struct server *s)
{
    uint64_t one = 1;

    if (write(s->wake_fd, &one, sizeof(one)) < 0) {
        /* The counter is full: the thread is awake already. */
    }
}

/* The wake callback of mirror_thread (a new set from the --upstream
 * waits) and of the etcd thread (a new set from etcd waits). */
static void server_wake_cb(void *s)
{
    server_wake(s);
}

/* The wake callback of the fleet's mirror pool: a set or a change of an
 * upstream's health waits for a fleet pass. */
static void server_pool_wake_cb(void *arg)
{
    struct server *s = arg;

    atomic_store(&s->pool_woke, 1);
    server_wake(s);
}

/* Stops the reload thread: once this returns, nothing more reaches the
 * workers. Waits up to timeout_ms for the thread to end; returns 0, or -1
 * when it did not (stuck in a read): it is then abandoned. */
static int server_reload_stop(struct server *s, unsigned timeout_ms)
{
    struct timespec deadline;

    pthread_mutex_lock(&s->publish_mu);
    atomic_store(&s->stop, 1);
    pthread_mutex_unlock(&s->publish_mu);
    if (!s->thread_started)
        return 0;
    server_wake(s);
    deadline = clock_deadline(CLOCK_REALTIME, timeout_ms);
    if (pthread_timedjoin_np(s->thread, NULL, &deadline) != 0) {
        s->thread_abandoned = 1;
        log_msg(LOG_ERROR, "the key reload thread did not stop within %ums (stuck reading a file); exiting without it",
                timeout_ms);
        return -1;
    }
    health_reload_alive(clock_now_ms(), 0);
    return 0;
}

/* What is served first: the key set and the certificate, read on this
 * thread before any worker starts, and what the reload thread needs.
 * Returns 0, 2 when the inputs give nothing to serve, 1 otherwise (logged). */
static int server_prepare_reload(struct server *s)
{
    const struct config *cfg = s->cfg;
    time_t now = time(NULL);
    int64_t now_ms = clock_now_ms();

    health_init(cfg->key_reload_interval, now_ms);
    if ((s->watch = watch_create()) == NULL || (s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        log_msg(LOG_ERROR, "cannot set up the key reloader: %s", strerror(errno ? errno : ENOMEM));
        return 1;
    }
    for (int k = 0; k < CERT_NKINDS; k++)
        cert_init(&s->certs[k], cfg, (enum cert_kind)k);
    server_rewatch(s);
    if (cfg->issuers_dir != NULL && (s->fleet = fleet_create(cfg, now, now_ms)) == NULL)
        return 2;
    if (s->fleet != NULL) /* its key files' directories are known once the issuer files are read */
        server_rewatch(s);
    if ((s->fleet == NULL && ((s->reload = reload_create(cfg, now, now_ms)) == NULL ||
                              reload_signer_start(s->reload, server_wake_cb, s) != 0)) ||
        cert_load(&s->certs[CERT_PUBLIC], now) != 0 || cert_load(&s->certs[CERT_TOKEN_REVIEW], now) != 0)
        return 2;
    schedule_init(&s->schedule, cfg->key_reload_interval, now_ms);
    return 0;
}

/* --publish-to: opens the targets (credentials missing stop the start,
 * before any port answers) and starts pushing the first snapshot. */
static int server_start_publisher(struct server *s)
{
    char err[1280];

    if (s->cfg->publish_to.count == 0 || s->fleet != NULL) /* a fleet's issuers publish each (fleet.c) */
        return 0;
    if ((s->publisher = push_publisher_start(s->cfg, reload_current(s->reload), err, sizeof(err))) == NULL) {
        log_msg(LOG_ERROR, "%s", err);
        return -1;
    }
    return 0;
}

/* Adds the site spec describes, with its connection budget (the open-file
 * limit's share, fdlimit.c) and each address's share of that. */
static int server_add_site(struct server *s, const struct server_site_spec *spec,
                           const unsigned long budget[METRICS_NLISTENERS])
{
    struct server_site *site = &s->sites[s->nsites];
    size_t n = spec->nplain + spec->ntls;
    struct connbudget **b = &s->budgets[spec->listener];

    if ((site->addrs = calloc(n ? n : 1, sizeof(*site->addrs))) == NULL ||
        (*b = connbudget_new(spec->listener, budget[spec->listener], s->cfg->connection_share)) == NULL) {
        free(site->addrs);
        site->addrs = NULL;
        log_msg(LOG_ERROR, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int tls = i >= spec->nplain;
        site->addrs[i] = (struct listener_addr){.l = tls ? &spec->tls[i - spec->nplain] : &spec->plain[i],
                                                .flag = tls ? spec->tls_flag : spec->plain_flag,
                                                .tls = tls};
    }
    site->naddrs = n;
    site->threads = spec->threads;
    site->what = spec->what;
    site->cert = spec->cert;
    site->env = (struct worker_env){.accesslog = spec->listener != METRICS_LISTENER_ADMIN ? s->accesslog : NULL,
                                    .listener = spec->listener,
                                    .budget = *b,
                                    .write_timeout_ms = (uint64_t)s->cfg->write_timeout * 1000,
                                    .handshake_timeout_ms = (uint64_t)s->cfg->handshake_timeout * 1000,
                                    .idle_make_room = spec->listener == METRICS_LISTENER_ADMIN};
    site_configure(&site->conf, s->cfg, spec->kind);
    s->nsites++;
    return 0;
}

/* The sites cfg asks for: the documents always, TokenReview and admin
 * when enabled. The TokenReview listeners speak TLS unless
 * --token-review-insecure-http says otherwise (config/ allows nothing
 * else). */
static int server_add_sites(struct server *s)
{
    const struct config *cfg = s->cfg;
    size_t review = cfg->enable_token_review ? cfg->token_review_listen_count : 0;
    int review_tls = !cfg->token_review_insecure_http;
    const struct server_site_spec specs[SERVER_NSITES] = {
        {SITE_DOCS, METRICS_LISTENER_PUBLIC, cfg->threads, NULL, cfg->listens, cfg->tls_listens, cfg->listen_count,
         cfg->tls_listen_count, "--listen", "--tls-listen", CERT_PUBLIC},
        {SITE_TOKENREVIEW, METRICS_LISTENER_TOKENREVIEW, cfg->threads, "POST " PATHS_TOKENREVIEW,
         cfg->token_review_listens, cfg->token_review_listens, review_tls ? 0 : review, review_tls ? review : 0,
         "--token-review-listen", "--token-review-listen", CERT_TOKEN_REVIEW},
        {SITE_ADMIN, METRICS_LISTENER_ADMIN, 1, PATHS_LIVEZ " " PATHS_READYZ " " PATHS_METRICS " " PATHS_STATUS,
         cfg->admin_listens, NULL, cfg->admin_listen_count, 0, "--admin-listen", NULL, CERT_PUBLIC},
    };
    unsigned long budget[METRICS_NLISTENERS];

    fdlimit_budgets(cfg, budget);
    for (size_t i = 0; i < SERVER_NSITES; i++)
        if (specs[i].nplain + specs[i].ntls > 0 && server_add_site(s, &specs[i], budget) != 0)
            return -1;
    return 0;
}

static void server_log_site(const struct server_site *site)
{
    char url[300];

    for (size_t i = 0; i < site->naddrs; i++) {
        listener_url(&site->addrs[i], url, sizeof(url));
        const char *s = site->threads == 1 ? "" : "s";
        if (site->what != NULL)
            log_msg(LOG_INFO, "listening on %s (%u thread%s): %s", url, site->threads, s, site->what);
        else
            log_msg(LOG_INFO, "listening on %s (%u thread%s): %s" PATHS_DISCOVERY " %s" PATHS_JWKS, url, site->threads,
                    s, url, url);
    }
}

/* Opens the sockets of every site before any worker starts. A port in use
 * anywhere then fails the start before any port accepts (and nothing is
 * logged as listening), and once one port accepts they all do: a probe or a
 * test may hit the admin port as soon as the public one answers.
 * "listening on" is logged, with the port each address got, as soon as the
 * sockets listen, since from then on a client that connects must find the
 * line already written. */
static int server_open_sites(struct server *s)
{
    char err[512];

    for (size_t i = 0; i < s->nsites; i++) {
        struct server_site *site = &s->sites[i];
        if ((site->fds = listener_open_all(site->addrs, site->naddrs, site->threads, err, sizeof(err))) == NULL) {
            log_msg(LOG_ERROR, "%s", err);
            return -1;
        }
    }
    for (size_t i = 0; i < s->nsites; i++)
        server_log_site(&s->sites[i]);
    return 0;
}

/* Creates and starts the workers of every site on its open sockets. They
 * accept once server_publish has handed them what they serve. Returns 0,
 * or -1 (logged) with the ones that did start listed. */
static int server_start_workers(struct server *s)
{
    if ((s->workers = calloc((size_t)s->cfg->threads * 2 + 1, sizeof(*s->workers))) == NULL) {
        log_msg(LOG_ERROR, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < s->nsites; i++) {
        struct server_site *site = &s->sites[i];
        site->first_worker = s->nworkers;
        for (unsigned t = 0; t < site->threads; t++) {
            struct worker *w =
                worker_create(&site->conf, site->fds + (size_t)t * site->naddrs, site->naddrs, &site->env);
            int err = w ? worker_start(w) : ENOMEM;
            if (err != 0) {
                /* The sockets no worker took are still the site's. */
                for (size_t k = (size_t)(t + (w != NULL)) * site->naddrs; k < (size_t)site->threads * site->naddrs; k++)
                    close(site->fds[k].fd);
                free(site->fds);
                site->fds = NULL;
                log_msg(LOG_ERROR, "cannot start a worker thread: %s", strerror(err));
                return -1;
            }
            s->workers[s->nworkers++] = w;
        }
        free(site->fds); /* the sockets are the workers' now */
        site->fds = NULL;
    }
    return 0;
}

/* Blocks the signals the main thread waits for, before any other thread
 * starts: threads inherit the mask, so only server_wait_signal sees them.
 * SIGPIPE is ignored: a write to a client that left fails instead. Without
 * either the server could not be stopped cleanly, so it does not start. */
static int server_block_signals(sigset_t *set)
{
    struct sigaction ignore = {.sa_handler = SIG_IGN};
    int err = 0;

    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    sigemptyset(&ignore.sa_mask);
    if ((err = pthread_sigmask(SIG_BLOCK, set, NULL)) == 0 && sigaction(SIGPIPE, &ignore, NULL) != 0)
        err = errno;
    if (err != 0)
        log_msg(LOG_ERROR, "cannot set up signal handling (%s); not starting: SIGTERM could not stop the server",
                strerror(err));
    return err != 0 ? -1 : 0;
}

/* SIGHUP: the reload thread re-reads the inputs now. */
static void server_hup(struct server *s)
{
    atomic_store(&s->hup, 1);
    server_wake(s);
}

/* Waits for SIGTERM or SIGINT and returns it, passing each SIGHUP on to
 * the reload thread. This thread does nothing else, so a signal is acted
 * on even while a key file read on the reload thread never returns. */
static int server_wait_signal(struct server *s, const sigset_t *signals)
{
    for (;;) {
        int sig = sigwaitinfo(signals, NULL);
        if (sig == SIGHUP) {
            server_hup(s);
        } else if (sig > 0) {
            return sig;
        } else if (errno != EINTR) {
            log_msg(LOG_ERROR, "cannot wait for signals (%s); shutting down", strerror(errno));
            return SIGTERM;
        }
    }
}

/* SIGTERM or SIGINT: /readyz answers 503 at once, and the listeners keep
 * serving for --shutdown-grace so load balancers notice and drain before
 * they close. A second SIGTERM or SIGINT ends the grace at once: someone
 * at a terminal pressed Ctrl-C again, or an orchestrator lost patience.
 * SIGHUP still reloads meanwhile. */
static void server_grace(struct server *s, const sigset_t *signals, int sig)
{
    int64_t end = clock_now_ms() + (int64_t)s->cfg->shutdown_grace * 1000, left;

    health_begin_shutdown();
    if (s->cfg->shutdown_grace == 0) {
        log_msg(LOG_INFO, "received %s; shutting down", strsignal(sig));
        return;
    }
    log_msg(LOG_INFO,
            "received %s; /readyz answers 503, serving %lus more before shutting down (signal again to "
            "stop now)",
            strsignal(sig), s->cfg->shutdown_grace);
    while ((left = end - clock_now_ms()) > 0) {
        struct timespec wait = {.tv_sec = (time_t)(left / 1000), .tv_nsec = (long)(left % 1000) * 1000000};
        int got = sigtimedwait(signals, NULL, &wait);
        if (got == SIGHUP) {
            server_hup(s);
        } else if (got > 0) {
            log_msg(LOG_INFO, "received %s during the grace; shutting down now", strsignal(got));
            return;
        } else if (errno != EAGAIN && errno != EINTR) {
            log_msg(LOG_ERROR, "cannot wait for signals (%s); shutting down", strerror(errno));
            return;
        }
    }
}

/* With --token-review-check-bound-objects, the threads that look up
 * tokens' objects at the --upstream, before any review can ask. */
static int server_start_bound(struct server *s)
{
    const struct bound_lookup_params p = {
        .ttl_ms = (int64_t)s->cfg->token_review_bound_object_cache_ttl * 1000,
        .cfg = s->cfg,
    };

    if (!s->cfg->token_review_check_bound_objects)
        return 0;
    return (s->bound = bound_lookup_start(&p)) != NULL ? 0 : -1;
}

/* Starts everything; 0, or the exit status of a failed start. */
static int server_start(struct server *s, sigset_t *signals)
{
    char err[512];
    SSL_CTX *tls[CERT_NKINDS];
    int rc;

    if (server_block_signals(signals) != 0)
        return 1;
    if (s->cfg->access_log != NULL && (s->accesslog = accesslog_open(s->cfg->access_log, err, sizeof(err))) == NULL) {
        log_msg(LOG_ERROR, "--access-log %s", err);
        return 1;
    }
    if ((rc = server_prepare_reload(s)) != 0)
        return rc;
    if (server_start_publisher(s) != 0)
        return 2;
    /* The signer's socket opens now, so that a path in use stops the start
     * before any port answers; its slot stays empty (calls answer
     * UNAVAILABLE) until the first snapshot is the workers', below. */
    if (s->cfg->external_signer_listen != NULL &&
        (s->extsigner = extsigner_grpc_start(s->cfg, &s->signer_slot, err, sizeof(err))) == NULL) {
        log_msg(LOG_ERROR, "%s", err);
        return 1;
    }
    if (server_start_bound(s) != 0 || server_add_sites(s) != 0 || server_open_sites(s) != 0 ||
        server_start_workers(s) != 0)
        return 1;
    if (s->fleet == NULL && s->cfg->upstream != NULL &&
        (s->mirror = mirror_thread_start(s->cfg, server_wake_cb, s)) == NULL)
        return 1;
    if (s->fleet != NULL) { /* even with no upstream yet: a file may name one later */
        if ((s->pool = mirror_pool_start(server_pool_wake_cb, s)) == NULL)
            return 1;
        fleet_mirror(s->fleet, s->pool);
    }
    status_publish(server_status(s));
    for (int k = 0; k < CERT_NKINDS; k++)
        tls[k] = s->certs[k].ctx;
    server_publish(s, server_current(s), tls);
    if (s->reload != NULL)
        server_publish_signer(s, reload_signer_current(s->reload));
    health_reload_alive(clock_now_ms(), 1);
    if ((errno = pthread_create(&s->thread, NULL, server_reload_main, s)) != 0) {
        log_msg(LOG_ERROR, "cannot start the key reload thread: %s", strerror(errno));
        return 1;
    }
    s->thread_started = 1;
    return 0;
}

/* Drains and joins the workers, and frees what the sites hold. */
static void server_stop_workers(struct server *s)
{
    if (s->nworkers > 0)
        log_msg(LOG_INFO, "shutting down: finishing in-flight requests");
    for (size_t i = 0; i < s->nworkers; i++)
        worker_stop(s->workers[i], SERVER_DRAIN_MS);
    for (size_t i = 0; i < s->nworkers; i++)
        worker_join(s->workers[i]);
    free(s->workers);
    for (size_t i = 0; i < s->nsites; i++) {
        listener_close_all(s->sites[i].fds, (size_t)s->sites[i].threads * s->sites[i].naddrs);
        free(s->sites[i].addrs);
        h2o_config_dispose(&s->sites[i].conf);
    }
    for (int l = 0; l < METRICS_NLISTENERS; l++)
        connbudget_free(s->budgets[l]);
}

static void server_free(struct server *s)
{
    status_clear();
    extsigner_grpc_stop(s->extsigner);
    signer_slot_destroy(&s->signer_slot);
    reload_free(s->reload);
    fleet_free(s->fleet);
    for (int k = 0; k < CERT_NKINDS; k++)
        cert_clear(&s->certs[k]);
    watch_free(s->watch);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    pthread_mutex_destroy(&s->publish_mu);
    accesslog_close(s->accesslog);
    free(s);
}

int server_run(const struct config *cfg)
{
    struct server *s = calloc(1, sizeof(*s));
    sigset_t signals;
    int rc;

    if (s == NULL) {
        log_msg(LOG_ERROR, "out of memory");
        return 1;
    }
    s->cfg = cfg;
    s->wake_fd = -1;
    pthread_mutex_init(&s->publish_mu, NULL);
    signer_slot_init(&s->signer_slot);
    if ((rc = server_start(s, &signals)) == 0)
        server_grace(s, &signals, server_wait_signal(s, &signals));
    if (server_reload_stop(s, SERVER_RELOAD_STOP_MS) != 0)
        rc = 1;
    if (!s->thread_abandoned)
        push_publisher_stop(s->publisher); /* nothing offers any more */
    /* A read of the --upstream that does not end in time is harmless to
     * leave behind, but it still uses s and cfg: exit without freeing. */
    if (s->mirror != NULL && mirror_thread_stop(s->mirror, SERVER_RELOAD_STOP_MS) != 0)
        s->thread_abandoned = 1;
    if (s->pool != NULL && mirror_pool_stop(s->pool, SERVER_RELOAD_STOP_MS) != 0)
        s->thread_abandoned = 1;
    bound_lookup_stop(s->bound); /* the waiting reviews answered while their loops run */
    server_stop_workers(s);
    bound_lookup_free(s->bound); /* no loop reads it any more */
    if (s->thread_abandoned) {
        accesslog_close(s->accesslog);
        _exit(rc); /* the reload thread is stuck in a read and still uses s and cfg: free nothing, run no atexit */
    }
    server_free(s);
    return rc;
}
