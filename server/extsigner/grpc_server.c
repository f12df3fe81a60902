/* SPDX-License-Identifier: Apache-2.0 */
#include "server/extsigner/grpc_server.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/extsigner/grpc_conn.h"
#include "server/extsigner/unix_socket.h"
#include "util/clock.h"
#include "util/log.h"

/* Events one epoll_wait returns at most. */
#define EXTSIGNER_EVENTS 64
/* Connections one thread serves at once: kube-apiserver keeps one per
 * API server process, and the socket is its owner's alone (0600 or 0660),
 * so this only bounds a local client gone wrong (the unfinished requests
 * of all connections together hold at most
 * --external-signer-max-buffered-bytes). A thread at this many makes room
 * for a new connection by closing its idle one that has been quiet
 * longest. */
#define EXTSIGNER_MAX_CONNS 64
/* A line about refused connections or failed accepts is logged at most
 * this often, with the count of those not logged since: a client that
 * reconnects in a loop must not flood the log. */
#define EXTSIGNER_LOG_EVERY_MS 10000

/* One kind of message logged at most every EXTSIGNER_LOG_EVERY_MS, shared
 * by the threads. */
struct extsigner_ratelimit {
    pthread_mutex_t mu;
    int64_t last_ms; /* when the last line was written; 0: never */
    unsigned long suppressed;
};

/* One connection as its thread keeps it. */
struct extsigner_conn {
    struct grpc_conn *c;
    int fd;
    int blocked;       /* waiting for EPOLLOUT (grpc_conn_blocked) */
    int64_t active_ms; /* when epoll last said it could read or write */
    struct extsigner_conn *prev, *next;
};

struct extsigner_thread {
    struct extsigner_grpc *x;
    int epfd;
    pthread_t thread;
    int started;
    struct extsigner_conn *conns; /* every connection of the thread */
    size_t nconns;
    int64_t swept_ms; /* when idle connections were last looked for */
};

struct extsigner_grpc {
    struct unix_socket sock;
    int stop_fd; /* an eventfd: readable once the threads must end */
    struct grpc_conn_env env;
    atomic_size_t buffered; /* env.buffered points here */
    int64_t idle_ms;        /* --external-signer-idle-timeout */
    struct extsigner_ratelimit refusals, accept_errors;
    struct extsigner_thread *threads;
    size_t nthreads;
};

/* Whether a line of r's kind may be written now; when it may, *suppressed
 * is how many were not written since the last one. */
static int extsigner_may_log(struct extsigner_ratelimit *r, unsigned long *suppressed)
{
    int64_t now = clock_now_ms();
    int may;

    pthread_mutex_lock(&r->mu);
    may = r->last_ms == 0 || now - r->last_ms >= EXTSIGNER_LOG_EVERY_MS;
    if (may) {
        *suppressed = r->suppressed;
        r->suppressed = 0;
        r->last_ms = now;
    } else {
        r->suppressed++;
    }
    pthread_mutex_unlock(&r->mu);
    return may;
}

/* ---- connections -------------------------------------------------------- */

/* Ends a connection: closed, freed and forgotten by its thread. */
static void extsigner_drop(struct extsigner_thread *t, struct extsigner_conn *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        t->conns = n->next;
    if (n->next)
        n->next->prev = n->prev;
    t->nconns--;
    grpc_conn_free(n->c); /* closing the fd takes it out of the epoll set */
    free(n);
}

/* Serves one connection that epoll says is ready, and waits next for what
 * it needs: to write its answers, or to read. */
static void extsigner_serve(struct extsigner_thread *t, struct extsigner_conn *n)
{
    struct epoll_event ev;
    int blocked;

    n->active_ms = clock_now_ms();
    if (grpc_conn_io(n->c) != 0) {
        extsigner_drop(t, n);
        return;
    }
    if ((blocked = grpc_conn_blocked(n->c)) == n->blocked)
        return;
    ev.events = blocked ? EPOLLOUT : EPOLLIN;
    ev.data.ptr = n;
    n->blocked = blocked;
    if (epoll_ctl(t->epfd, EPOLL_CTL_MOD, n->fd, &ev) != 0)
        extsigner_drop(t, n);
}

/* Says GOAWAY to a connection and ends it. */
static void extsigner_close(struct extsigner_thread *t, struct extsigner_conn *n)
{
    grpc_conn_goaway(n->c);
    extsigner_drop(t, n);
}

/* The idle connection of t (grpc_conn_idle) quiet for longest, or NULL.
 * The list runs newest first: of connections last active in the same
 * millisecond, the oldest is taken. */
static struct extsigner_conn *extsigner_quietest(struct extsigner_thread *t)
{
    struct extsigner_conn *best = NULL;

    for (struct extsigner_conn *n = t->conns; n != NULL; n = n->next)
        if (grpc_conn_idle(n->c) && (best == NULL || n->active_ms <= best->active_ms))
            best = n;
    return best;
}

/* --external-signer-idle-timeout: closes the connections of t that epoll
 * has not woken for that long. Looked for at most every quarter of it. */
static void extsigner_sweep(struct extsigner_thread *t)
{
    int64_t now = clock_now_ms();
    struct extsigner_conn *n = t->conns;

    if (now - t->swept_ms < t->x->idle_ms / 4)
        return;
    t->swept_ms = now;
    while (n != NULL) {
        struct extsigner_conn *next = n->next;
        if (now - n->active_ms >= t->x->idle_ms)
            extsigner_close(t, n);
        n = next;
    }
}

/* How long t's epoll_wait may sleep: until its next sweep is due, or for
 * good without a connection. */
static int extsigner_wait_ms(const struct extsigner_thread *t)
{
    return t->conns == NULL ? -1 : (int)(t->x->idle_ms / 4 > 0 ? t->x->idle_ms / 4 : 1);
}

/* A thread full of connections that are all busy closes a new one; the
 * line says so at most every EXTSIGNER_LOG_EVERY_MS. */
static void extsigner_refuse(struct extsigner_thread *t, int fd)
{
    unsigned long suppressed;

    close(fd);
    if (extsigner_may_log(&t->x->refusals, &suppressed))
        log_msg(LOG_WARN,
                "external signer: %d connections with calls open on one thread; closing a new one (%lu more "
                "closed since the last such line)",
                EXTSIGNER_MAX_CONNS, suppressed);
}

/* Takes one accepted connection onto thread t; at EXTSIGNER_MAX_CONNS,
 * its quietest idle connection makes room, since a client that opens
 * connections and leaves them idle must not lock kube-apiserver out. */
static void extsigner_adopt(struct extsigner_thread *t, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN};
    struct extsigner_conn *n;

    if (t->nconns >= EXTSIGNER_MAX_CONNS) {
        if ((n = extsigner_quietest(t)) == NULL) {
            extsigner_refuse(t, fd);
            return;
        }
        extsigner_close(t, n);
    }
    if ((n = calloc(1, sizeof(*n))) == NULL || (n->c = grpc_conn_new(fd, &t->x->env)) == NULL) {
        if (n == NULL)
            close(fd);
        free(n);
        log_msg(LOG_ERROR, "external signer: out of memory for a connection");
        return;
    }
    ev.data.ptr = n;
    n->fd = fd;
    n->next = t->conns;
    if (t->conns)
        t->conns->prev = n;
    t->conns = n;
    t->nconns++;
    /* The server's SETTINGS go out now, as any answer would. */
    if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        extsigner_drop(t, n);
    else
        extsigner_serve(t, n);
}

/* Accepts what the socket has. Another thread may have taken it first. */
static void extsigner_accept(struct extsigner_thread *t)
{
    for (;;) {
        int fd = accept4(t->x->sock.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            extsigner_adopt(t, fd);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            /* Out of descriptors: the socket stays readable, so wait a
             * little rather than spin. */
            struct timespec pause = {0, 10 * 1000 * 1000};
            unsigned long suppressed;
            if (extsigner_may_log(&t->x->accept_errors, &suppressed))
                log_msg(LOG_ERROR,
                        "external signer: cannot accept a connection: %s (%lu more failures since the "
                        "last such line)",
                        strerror(errno), suppressed);
            nanosleep(&pause, NULL);
        }
        return;
    }
}

/* ---- threads ------------------------------------------------------------ */

/* One thread's event loop, until the stop eventfd wakes it; the
 * connections it still has are told GOAWAY and closed. */
static void *extsigner_main(void *arg)
{
    struct extsigner_thread *t = arg;
    struct extsigner_grpc *x = t->x;
    struct epoll_event ev[EXTSIGNER_EVENTS];

    for (;;) {
        int n = epoll_wait(t->epfd, ev, EXTSIGNER_EVENTS, extsigner_wait_ms(t));
        if (n < 0 && errno != EINTR) {
            log_msg(LOG_ERROR, "external signer: epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == &x->stop_fd)
                goto stop;
            if (ev[i].data.ptr == &x->sock)
                extsigner_accept(t);
            else
                extsigner_serve(t, ev[i].data.ptr);
        }
        extsigner_sweep(t);
    }
stop:
    while (t->conns != NULL)
        extsigner_close(t, t->conns);
    return NULL;
}

/* Creates thread t's epoll set: the socket, shared with the other threads
 * (EPOLLEXCLUSIVE: one of them wakes for a new connection), and the stop
 * eventfd, which wakes them all. */
static int extsigner_thread_init(struct extsigner_grpc *x, struct extsigner_thread *t)
{
    struct epoll_event listen_ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &x->sock};
    struct epoll_event stop_ev = {.events = EPOLLIN, .data.ptr = &x->stop_fd};

    t->x = x;
    if ((t->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return -1;
    if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, x->sock.fd, &listen_ev) != 0 ||
        epoll_ctl(t->epfd, EPOLL_CTL_ADD, x->stop_fd, &stop_ev) != 0)
        return -1;
    return 0;
}

/* ---- start and stop ----------------------------------------------------- */

/* Creates the socket, the stop eventfd and the threads. */
static int extsigner_setup(struct extsigner_grpc *x, const struct config *cfg, char *err, size_t errlen)
{
    if (unix_socket_open(&x->sock, cfg, err, errlen) != 0)
        return -1;
    if ((x->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (x->threads = calloc(x->nthreads, sizeof(*x->threads))) == NULL) {
        snprintf(err, errlen, "cannot start the external signer: %s", strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < x->nthreads; i++)
        x->threads[i].epfd = -1;
    for (size_t i = 0; i < x->nthreads; i++) {
        struct extsigner_thread *t = &x->threads[i];
        if (extsigner_thread_init(x, t) != 0 || (errno = pthread_create(&t->thread, NULL, extsigner_main, t)) != 0) {
            snprintf(err, errlen, "cannot start an external signer thread: %s", strerror(errno));
            return -1;
        }
        t->started = 1;
    }
    return 0;
}

struct extsigner_grpc *extsigner_grpc_start(const struct config *cfg, struct signer_slot *slot, char *err,
                                            size_t errlen)
{
    struct extsigner_grpc *x = calloc(1, sizeof(*x));

    if (x == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    x->sock.fd = x->stop_fd = -1;
    x->env.slot = slot;
    x->env.max_claims = cfg->max_token_size;
    x->env.max_buffered = cfg->signer_max_buffered;
    x->env.buffered = &x->buffered;
    x->idle_ms = (int64_t)cfg->signer_idle_timeout * 1000;
    pthread_mutex_init(&x->refusals.mu, NULL);
    pthread_mutex_init(&x->accept_errors.mu, NULL);
    x->nthreads = cfg->external_signer_threads;
    if (extsigner_setup(x, cfg, err, errlen) != 0) {
        extsigner_grpc_stop(x);
        return NULL;
    }
    log_msg(LOG_INFO,
            "external signer listening on unix:%s (%zu threads, mode %s): v1alpha1.ExternalJWTSigner and "
            "v1.ExternalJWTSigner",
            x->sock.path, x->nthreads, cfg->external_signer_socket_mode);
    return x;
}

void extsigner_grpc_stop(struct extsigner_grpc *x)
{
    uint64_t one = 1;

    if (x == NULL)
        return;
    if (x->stop_fd >= 0 && write(x->stop_fd, &one, sizeof(one)) != sizeof(one))
        log_msg(LOG_ERROR, "external signer: cannot wake its threads to stop: %s", strerror(errno));
    for (size_t i = 0; x->threads != NULL && i < x->nthreads; i++) {
        if (x->threads[i].started)
            pthread_join(x->threads[i].thread, NULL);
        if (x->threads[i].epfd >= 0)
            close(x->threads[i].epfd);
    }
    unix_socket_close(&x->sock);
    if (x->stop_fd >= 0)
        close(x->stop_fd);
    pthread_mutex_destroy(&x->refusals.mu);
    pthread_mutex_destroy(&x->accept_errors.mu);
    free(x->threads);
    free(x);
}
