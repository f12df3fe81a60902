/* SPDX-License-Identifier: Apache-2.0 */
#include "server/conn/worker.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <time.h>
#include <h2o/http1.h>

#include "util/log.h"
#include "server/obs/metrics.h"
#include "server/conn/peer_progress.h"
#include "server/tls/tls.h"

/* Accepting in small batches keeps one busy listener from starving the
 * connections the loop already has. */
#define WORKER_ACCEPT_BATCH 16

/* How long accepting stops after accept() ran out of descriptors. */
#define WORKER_ACCEPT_PAUSE_MS 100

/* How often per --write-timeout the pending writes are checked: a
 * connection is closed between 1 and 1 + 1/8 timeouts after its client
 * last took a byte. */
#define WORKER_WRITE_CHECKS 8

/* A snapshot as one worker holds it: the worker's reference plus the count
 * of its requests still using it. A replaced snapshot is released when its
 * last request is disposed. All fields belong to the worker's thread. */
struct worker_pin {
    struct snapshot *snap;
    struct worker *worker;
    size_t inflight;
    int retired;
};

enum worker_msg_type { WORKER_MSG_SNAPSHOT, WORKER_MSG_TLS, WORKER_MSG_STOP };

struct worker_msg {
    h2o_multithread_message_t super;
    enum worker_msg_type type;
    struct snapshot *snap; /* SNAPSHOT: one reference, handed over */
    SSL_CTX *tls;          /* TLS: one reference, handed over */
    unsigned drain_ms;     /* STOP */
};

/* A listening socket and how its connections are accepted (TLS or not). */
struct worker_listener {
    h2o_socket_t *sock;
    struct worker *worker;
    int fd;
    int tls;
};

/* An open client connection, tracked so that the idle ones can be closed
 * at shutdown, the stalled ones after --write-timeout and the silent ones
 * after --handshake-timeout or to make room (h2o 2.2 has no API for
 * any). */
struct worker_conn {
    h2o_linklist_t link;
    h2o_linklist_t silent_link;     /* in the worker's silent list, oldest first, until found to have spoken */
    h2o_timeout_entry_t first_word; /* --handshake-timeout, while in the silent list */
    h2o_socket_t *sock;
    struct worker *worker;
    SSL_CTX *tls;                /* the certificate it was accepted with: a reference, see worker_serve_connection */
    struct tls_recheck recheck;  /* its client certificate against a newer context (tls.h) */
    struct connbudget_addr addr; /* whose share of the budget it counts in */
    int counted;                 /* holds a slot of the budget, given back when it closes or makes room */
    int is_tls;
    uint64_t progress;    /* peer_progress and bytes queued at the last check of a pending write */
    uint64_t progress_at; /* loop time (ms) that value was first seen; 0: no write pending then */
    int timed_out;        /* shut down by --write-timeout; h2o closes it */
};

struct worker {
    h2o_context_t ctx; /* first: handlers find the worker from req->conn->ctx */
    h2o_accept_ctx_t accept_plain;
    h2o_accept_ctx_t accept_tls; /* ssl_ctx: the current certificate, owned reference */
    h2o_evloop_t *loop;
    h2o_multithread_receiver_t receiver;
    h2o_linklist_t conns;  /* of struct worker_conn */
    h2o_linklist_t silent; /* of struct worker_conn, by silent_link: accepted recently, not yet heard */
    struct worker_listener *listeners;
    size_t nlisteners;
    struct worker_env env;
    h2o_globalconf_t *conf;
    sem_t ready; /* posted once the thread can take messages */
    struct metrics_thread *metrics;
    struct accesslog_buffer *accesslog;
    h2o_timeout_t flush_timeout;
    h2o_timeout_entry_t flush_entry;
    h2o_timeout_t accept_pause;
    h2o_timeout_entry_t accept_resume; /* linked while accepting is paused */
    h2o_timeout_t write_check;         /* --write-timeout / WORKER_WRITE_CHECKS */
    h2o_timeout_entry_t write_check_entry;
    h2o_timeout_t first_word; /* --handshake-timeout */
    struct worker_pin *pin;   /* NULL until the first snapshot arrives */
    size_t inflight;
    int has_tls;   /* one of the listeners is a TLS one */
    int listening; /* accepting began (worker_serving) */
    int stopping;
    struct timespec drain_deadline;
    pthread_t thread;
};

static struct worker_pin *worker_pin_new(struct worker *w, struct snapshot *snap)
{
    struct worker_pin *pin = calloc(1, sizeof(*pin));
    if (pin != NULL) {
        pin->snap = snapshot_ref(snap);
        pin->worker = w;
    }
    return pin;
}

static void worker_pin_free(struct worker_pin *pin)
{
    snapshot_release(pin->snap);
    free(pin);
}

/* Pool dispose callback of a request's pin slot: the request is done with
 * its snapshot. */
static void worker_unpin(void *p)
{
    struct worker_pin *pin = *(struct worker_pin **)p;

    pin->worker->inflight--;
    if (--pin->inflight == 0 && pin->retired)
        worker_pin_free(pin);
}

const struct snapshot *worker_pin_snapshot(h2o_req_t *req)
{
    struct worker *w = (struct worker *)req->conn->ctx;
    struct worker_pin **slot = h2o_mem_alloc_shared(&req->pool, sizeof(*slot), worker_unpin);

    *slot = w->pin;
    w->pin->inflight++;
    w->inflight++;
    return w->pin->snap;
}

/* Retires pin: freed now, or by its last request. */
static void worker_retire_pin(struct worker_pin *pin)
{
    if (pin == NULL)
        return;
    pin->retired = 1;
    if (pin->inflight == 0)
        worker_pin_free(pin);
}

static void worker_swap_pin(struct worker *w, struct snapshot *snap)
{
    struct worker_pin *pin = worker_pin_new(w, snap);

    if (pin == NULL) {
        log_msg(LOG_ERROR, "out of memory: keeping the previous key set on one thread");
        return;
    }
    worker_retire_pin(w->pin);
    w->pin = pin;
}

static void worker_close_listeners(struct worker *w)
{
    if (h2o_timeout_is_linked(&w->accept_resume))
        h2o_timeout_unlink(&w->accept_resume);
    for (size_t i = 0; i < w->nlisteners; i++) {
        if (w->listeners[i].sock != NULL) {
            h2o_socket_read_stop(w->listeners[i].sock);
            h2o_socket_close(w->listeners[i].sock);
            w->listeners[i].sock = NULL;
        }
    }
}

/* New connections use the new certificate; open ones keep theirs (their
 * SSL objects hold a reference to the old context). */
static void worker_swap_tls(struct worker *w, SSL_CTX *tls)
{
    SSL_CTX_free(w->accept_tls.ssl_ctx);
    w->accept_tls.ssl_ctx = tls;
}

static void worker_begin_stop(struct worker *w, unsigned drain_ms)
{
    worker_close_listeners(w);
    h2o_context_request_shutdown(&w->ctx);
    clock_gettime(CLOCK_MONOTONIC, &w->drain_deadline);
    w->drain_deadline.tv_sec += drain_ms / 1000;
    w->drain_deadline.tv_nsec += (long)(drain_ms % 1000) * 1000000;
    if (w->drain_deadline.tv_nsec >= 1000000000) {
        w->drain_deadline.tv_sec++;
        w->drain_deadline.tv_nsec -= 1000000000;
    }
    w->stopping = 1;
}

static void worker_listen(struct worker *w, int on);

int worker_serving(const struct worker *w)
{
    return w->pin != NULL && (!w->has_tls || w->accept_tls.ssl_ctx != NULL);
}

/* Accepting begins once the worker has what every connection needs. */
static void worker_begin_listening(struct worker *w)
{
    if (w->listening || w->stopping || !worker_serving(w))
        return;
    w->listening = 1;
    worker_listen(w, 1);
}

static void worker_on_message(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    struct worker *w = H2O_STRUCT_FROM_MEMBER(struct worker, receiver, receiver);

    while (!h2o_linklist_is_empty(messages)) {
        struct worker_msg *msg = H2O_STRUCT_FROM_MEMBER(struct worker_msg, super.link, messages->next);
        h2o_linklist_unlink(&msg->super.link);
        switch (msg->type) {
        case WORKER_MSG_SNAPSHOT:
            worker_swap_pin(w, msg->snap);
            snapshot_release(msg->snap);
            break;
        case WORKER_MSG_TLS:
            worker_swap_tls(w, msg->tls);
            break;
        case WORKER_MSG_STOP:
            worker_begin_stop(w, msg->drain_ms);
            break;
        }
        free(msg);
    }
    worker_begin_listening(w);
}

/* Gives conn's slot of the budget back, once. */
static void worker_release(struct worker_conn *conn)
{
    if (conn->counted)
        connbudget_release(conn->worker->env.budget, &conn->addr);
    conn->counted = 0;
}

/* conn has spoken, or is closing: it leaves the silent list and its
 * --handshake-timeout. */
static void worker_conn_heard(struct worker_conn *conn)
{
    if (h2o_linklist_is_linked(&conn->silent_link))
        h2o_linklist_unlink(&conn->silent_link);
    h2o_timeout_unlink(&conn->first_word);
}

static void worker_on_conn_close(void *data)
{
    struct worker_conn *conn = data;

    worker_release(conn);
    worker_conn_heard(conn);
    h2o_linklist_unlink(&conn->link);
    SSL_CTX_free(conn->tls);
    tls_recheck_clear(&conn->recheck);
    free(conn);
}

/* Whether conn's client has said anything: over TLS, finished its
 * handshake, since a ClientHello alone costs an attacker nothing;
 * otherwise sent a byte, which the kernel counts whether or not h2o has
 * read it yet. A Unix socket's kernel counts only what waits, so there
 * what h2o has read or answered counts too. */
static int worker_conn_spoke(struct worker_conn *conn)
{
    if (conn->is_tls)
        return tls_handshake_done(conn->sock, conn->tls);
    return peer_sent_any(h2o_socket_get_fd(conn->sock)) || conn->sock->bytes_written > 0 || conn->sock->input->size > 0;
}

/* Shutting the socket down makes h2o's pending read or write fail, so h2o
 * releases the connection itself (closing the socket under it would leave
 * h2o a freed one). SO_LINGER 0 makes the final close a reset, which frees
 * unsent data at once instead of the kernel trying to deliver it to a
 * client that does not read. */
static void worker_reset(struct worker_conn *conn)
{
    int fd = h2o_socket_get_fd(conn->sock);
    struct linger reset = {.l_onoff = 1, .l_linger = 0};

    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    shutdown(fd, SHUT_RDWR);
}

/* --handshake-timeout: a connection that has said nothing since it was
 * accepted is closed, long before --request-timeout, so that connections
 * opened and left silent hold a slot of the budget for seconds only. */
static void worker_on_first_word_deadline(h2o_timeout_entry_t *entry)
{
    struct worker_conn *conn = H2O_STRUCT_FROM_MEMBER(struct worker_conn, first_word, entry);

    worker_conn_heard(conn);
    if (worker_conn_spoke(conn))
        return;
    worker_reset(conn);
    atomic_fetch_add(&metrics_process.silent_timeouts[conn->worker->env.listener], 1);
}

/* The connection of w that has been silent longest, of addr only when
 * addr is given; NULL when there is none. Those found to have spoken
 * meanwhile leave the list on the way (the others of another address are
 * passed over unasked: one system call per connection considered). */
static struct worker_conn *worker_oldest_silent(struct worker *w, const struct connbudget_addr *addr)
{
    h2o_linklist_t *l = w->silent.next;

    while (l != &w->silent) {
        struct worker_conn *conn = H2O_STRUCT_FROM_MEMBER(struct worker_conn, silent_link, l);
        l = l->next;
        if (addr != NULL && (!conn->addr.known || conn->addr.key != addr->key))
            continue;
        if (!worker_conn_spoke(conn))
            return conn;
        worker_conn_heard(conn);
    }
    return NULL;
}

/* How many connections, oldest first, are looked at for one between two
 * requests: the admin listener's budget by default. */
#define WORKER_IDLE_SCAN 64

/* With env.idle_make_room (the admin listener), the connection of w (of
 * addr only when addr is given) accepted first that is between two
 * requests: nothing to write, nothing read and nothing waiting to be
 * read. The admin listener's handlers
 * answer at once, so such a connection has no request under way, and its
 * client (Prometheus, a probe that kept the connection) reconnects. This
 * keeps clients that send a request and then hold the connection open
 * from locking the probes out for --request-timeout. NULL when there is
 * none among the first WORKER_IDLE_SCAN. */
static struct worker_conn *worker_oldest_idle(struct worker *w, const struct connbudget_addr *addr)
{
    int looked = 0;

    if (!w->env.idle_make_room)
        return NULL;
    for (h2o_linklist_t *l = w->conns.next; l != &w->conns && looked < WORKER_IDLE_SCAN; l = l->next, looked++) {
        struct worker_conn *conn = H2O_STRUCT_FROM_MEMBER(struct worker_conn, link, l);
        if (addr != NULL && (!conn->addr.known || conn->addr.key != addr->key))
            continue;
        if (conn->counted && !h2o_socket_is_writing(conn->sock) && conn->sock->input->size == 0 &&
            !peer_unread(h2o_socket_get_fd(conn->sock)))
            return conn;
    }
    return NULL;
}

/* Closes conn, which has said nothing yet (or, on the admin listener, is
 * between requests), to make room for a new connection: its slot is given
 * back now, for the newcomer. */
static void worker_evict(struct worker_conn *conn)
{
    worker_conn_heard(conn);
    worker_release(conn);
    worker_reset(conn);
    atomic_fetch_add(&metrics_process.connections_evicted[conn->worker->env.listener], 1);
}

/* Takes a slot of the budget for a new connection from addr. Each kind of
 * listener has its own budget, so clients filling the public one leave
 * TokenReview and the probes answered; within one, an address may hold
 * its share only. At the budget or the share, the connection that has
 * been silent longest (of that address, for the share) makes room rather
 * than the newcomer being refused: connections opened and left silent
 * then cannot lock out a client that speaks at once, such as a probe,
 * even from the same address; on the admin listener, neither can
 * connections held open between requests. Without such a connection on this thread
 * the newcomer is refused, which costs the client a retry but keeps the
 * server's memory bounded. At most two make room: one for the budget and
 * one for the share (another thread may take a slot given back meanwhile,
 * which then costs this newcomer its turn). Returns 1 when admitted. */
static int worker_admit(struct worker *w, struct worker_conn *conn)
{
    enum metrics_listener l = w->env.listener;

    if (w->env.budget == NULL)
        return 1;
    for (int made = 0;; made++) {
        enum connbudget_verdict v = connbudget_take(w->env.budget, &conn->addr);
        const struct connbudget_addr *of = v == CONNBUDGET_ADDRESS_FULL ? &conn->addr : NULL;
        struct worker_conn *room;
        if (v == CONNBUDGET_TAKEN) {
            conn->counted = 1;
            return 1;
        }
        if (made == 2 || ((room = worker_oldest_silent(w, of)) == NULL && (room = worker_oldest_idle(w, of)) == NULL))
            break;
        worker_evict(room);
    }
    atomic_fetch_add(&metrics_process.connections_refused[l], 1);
    return 0;
}

/* True when conn has had a write pending for --write-timeout in which its
 * client took nothing. The kernel is asked (peer_progress) only while a
 * write is pending, so an idle or quick connection costs no system call. */
static int worker_conn_stalled(struct worker_conn *conn, uint64_t now, uint64_t timeout_ms)
{
    uint64_t progress;

    if (conn->timed_out || !h2o_socket_is_writing(conn->sock)) {
        conn->progress_at = 0;
        return 0;
    }
    progress = conn->sock->bytes_written + peer_progress(h2o_socket_get_fd(conn->sock));
    if (conn->progress_at == 0 || progress != conn->progress) {
        conn->progress = progress;
        conn->progress_at = now;
        return 0;
    }
    return now - conn->progress_at >= timeout_ms;
}

/* foreach_request callback: the HTTP/1 request being answered on a timed
 * out connection must not keep it alive. Once its write fails, h2o 2.2.5
 * would otherwise go on to answer the pipelined requests it has already
 * read, each write failing at once, and log every one as served. */
static int worker_end_keepalive(h2o_req_t *req, void *unused)
{
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    struct worker_conn *conn = sock != NULL ? sock->on_close.data : NULL;

    (void)unused;
    if (conn != NULL && conn->timed_out)
        req->http1_is_persistent = 0;
    return 0;
}

/* A pending write that made no progress for --write-timeout: the
 * connection is reset (worker_reset). */
static void worker_time_out(struct worker *w, struct worker_conn *conn)
{
    conn->timed_out = 1;
    worker_reset(conn);
    if (w->metrics != NULL)
        metrics_add(&w->metrics->write_timeouts, 1);
}

/* --write-timeout. Over HTTP/1, h2o 2.2.5 (lib/http1.c) stops reading and
 * clears its request timer once a request is complete, and starts both
 * again only when the last byte of the response has been handed to the
 * kernel (on_send_complete): there is no timer while a response is
 * written, so a client that stops reading would hold its connection, and
 * a slot of its listener's budget, for good. The same reading pause means
 * that pipelined requests are answered one at a time: at most one
 * response per connection is ever queued. The worker checks its
 * connections every timeout / WORKER_WRITE_CHECKS; h2o_socket_is_writing
 * tells which have a write pending (HTTP/1, HTTP/2 or a TLS handshake),
 * and a request costs nothing. */
static void worker_on_write_check(h2o_timeout_entry_t *entry)
{
    struct worker *w = H2O_STRUCT_FROM_MEMBER(struct worker, write_check_entry, entry);
    uint64_t now = h2o_now(w->loop);
    /* While the worker drains, a stalled client gets one check, not the
     * whole timeout: the drain would otherwise wait for it to the end. */
    uint64_t timeout = w->stopping ? w->write_check.timeout : w->env.write_timeout_ms;
    int any = 0;

    for (h2o_linklist_t *l = w->conns.next; l != &w->conns; l = l->next) {
        struct worker_conn *conn = H2O_STRUCT_FROM_MEMBER(struct worker_conn, link, l);
        if (worker_conn_stalled(conn, now, timeout)) {
            worker_time_out(w, conn);
            any = 1;
        }
    }
    if (any)
        H2O_HTTP1_CALLBACKS.foreach_request(&w->ctx, worker_end_keepalive, NULL);
    h2o_timeout_link(w->loop, &w->write_check, &w->write_check_entry);
}

/* h2o 2.2 keeps a bare pointer to the SSL_CTX of a TLS connection until
 * the client's first bytes arrive, and only then makes the SSL object that
 * holds a reference. A certificate swap in between would free the context
 * under it, so each TLS connection holds its own reference until it
 * closes. */
void worker_serve_connection(struct worker *w, h2o_socket_t *sock, int tls)
{
    struct worker_conn *conn = calloc(1, sizeof(*conn));

    if (conn == NULL) {
        h2o_socket_close(sock);
        return;
    }
    conn->sock = sock;
    conn->worker = w;
    conn->is_tls = tls;
    conn->addr = connbudget_addr_of(h2o_socket_get_fd(sock));
    if (!worker_admit(w, conn)) {
        free(conn);
        h2o_socket_close(sock);
        return;
    }
    if (tls && SSL_CTX_up_ref(w->accept_tls.ssl_ctx))
        conn->tls = w->accept_tls.ssl_ctx;
    h2o_linklist_insert(&w->conns, &conn->link);
    if (w->env.handshake_timeout_ms != 0) {
        h2o_linklist_insert(&w->silent, &conn->silent_link);
        conn->first_word.cb = worker_on_first_word_deadline;
        h2o_timeout_link(w->loop, &w->first_word, &conn->first_word);
    }
    sock->on_close.cb = worker_on_conn_close;
    sock->on_close.data = conn;
    h2o_accept(tls ? &w->accept_tls : &w->accept_plain, sock);
}

static void worker_on_accept(h2o_socket_t *listener_sock, const char *err);

static void worker_listen(struct worker *w, int on)
{
    for (size_t i = 0; i < w->nlisteners; i++) {
        if (w->listeners[i].sock == NULL)
            continue;
        if (on)
            h2o_socket_read_start(w->listeners[i].sock, worker_on_accept);
        else
            h2o_socket_read_stop(w->listeners[i].sock);
    }
}

static void worker_on_accept_resume(h2o_timeout_entry_t *entry)
{
    struct worker *w = H2O_STRUCT_FROM_MEMBER(struct worker, accept_resume, entry);

    worker_listen(w, 1);
}

/* accept() failed for want of descriptors or kernel memory. The pending
 * connection stays queued and the listener stays readable, so retrying at
 * once would spin the thread on the same error; instead the worker stops
 * accepting for WORKER_ACCEPT_PAUSE_MS while it keeps serving its open
 * connections, some of which will close meanwhile. */
static void worker_pause_accepting(struct worker *w)
{
    atomic_fetch_add(&metrics_process.accept_pauses, 1);
    worker_listen(w, 0);
    h2o_timeout_link(w->loop, &w->accept_pause, &w->accept_resume);
}

static int worker_accept_exhausted(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

static void worker_on_accept(h2o_socket_t *listener_sock, const char *err)
{
    struct worker_listener *listener = listener_sock->data;

    if (err != NULL)
        return;
    for (int i = 0; i < WORKER_ACCEPT_BATCH; i++) {
        h2o_socket_t *sock = h2o_evloop_socket_accept(listener_sock);
        if (sock == NULL) {
            if (worker_accept_exhausted(errno))
                worker_pause_accepting(listener->worker);
            break;
        }
        worker_serve_connection(listener->worker, sock, listener->tls);
    }
}

struct worker *worker_create(h2o_globalconf_t *conf, const struct listener_fd *fds, size_t nfds,
                             const struct worker_env *env)
{
    struct worker *w = calloc(1, sizeof(*w));

    if (w == NULL || (w->listeners = calloc(nfds ? nfds : 1, sizeof(*w->listeners))) == NULL ||
        sem_init(&w->ready, 0, 0) != 0) {
        if (w != NULL)
            free(w->listeners);
        free(w);
        return NULL;
    }
    w->conf = conf;
    w->env = *env;
    w->metrics = metrics_thread_new();
    for (size_t i = 0; i < nfds; i++) {
        w->listeners[i] = (struct worker_listener){.worker = w, .fd = fds[i].fd, .tls = fds[i].tls};
        w->has_tls |= fds[i].tls;
    }
    w->nlisteners = nfds;
    return w;
}

/* Builds the event loop on the worker's own thread: h2o 2.2 keeps per-thread
 * buffer pools, and a loop set up on one thread and run on another would
 * share the first thread's pool without a lock. */
static void worker_init_loop(struct worker *w)
{
    w->loop = h2o_evloop_create();
    h2o_context_init(&w->ctx, w->loop, w->conf);
    w->accept_plain = (h2o_accept_ctx_t){.ctx = &w->ctx, .hosts = w->conf->hosts};
    w->accept_tls = w->accept_plain;
    h2o_linklist_init_anchor(&w->conns);
    h2o_linklist_init_anchor(&w->silent);
    h2o_multithread_register_receiver(w->ctx.queue, &w->receiver, worker_on_message);
    h2o_timeout_init(w->loop, &w->accept_pause, WORKER_ACCEPT_PAUSE_MS);
    w->accept_resume.cb = worker_on_accept_resume;
    if (w->env.write_timeout_ms != 0) {
        h2o_timeout_init(w->loop, &w->write_check, w->env.write_timeout_ms / WORKER_WRITE_CHECKS);
        w->write_check_entry.cb = worker_on_write_check;
        h2o_timeout_link(w->loop, &w->write_check, &w->write_check_entry);
    }
    if (w->env.handshake_timeout_ms != 0)
        h2o_timeout_init(w->loop, &w->first_word, w->env.handshake_timeout_ms);
    for (size_t i = 0; i < w->nlisteners; i++) {
        w->listeners[i].sock = h2o_evloop_socket_create(w->loop, w->listeners[i].fd, H2O_SOCKET_FLAG_DONT_READ);
        w->listeners[i].sock->data = &w->listeners[i];
    }
}

/* Tears the loop down on its own thread, for the same reason. h2o asserts
 * that no connection and no timer is left when disposing; connections that
 * would not close are left to the process exit. */
static void worker_dispose_loop(struct worker *w)
{
    h2o_multithread_unregister_receiver(w->ctx.queue, &w->receiver);
    worker_close_listeners(w);
    if (!h2o_linklist_is_empty(&w->conns))
        return;
    /* h2o_context_request_shutdown armed this one for HTTP/2. */
    if (h2o_timeout_is_linked(&w->ctx.http2._graceful_shutdown_timeout))
        h2o_timeout_unlink(&w->ctx.http2._graceful_shutdown_timeout);
    h2o_timeout_dispose(w->loop, &w->accept_pause);
    if (w->env.write_timeout_ms != 0) {
        h2o_timeout_unlink(&w->write_check_entry);
        h2o_timeout_dispose(w->loop, &w->write_check);
    }
    if (w->env.handshake_timeout_ms != 0)
        h2o_timeout_dispose(w->loop, &w->first_word);
    h2o_context_dispose(&w->ctx);
    h2o_evloop_destroy(w->loop);
}

/* The certificate is checked against the worker's current context, the
 * one new connections get: a client CA reloaded since the connection
 * opened may no longer trust it. */
size_t worker_client_subject(h2o_req_t *req, char **subject)
{
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    struct worker_conn *conn = sock != NULL ? sock->on_close.data : NULL;
    X509 *cert =
        conn != NULL && conn->tls != NULL
            ? tls_client_certificate(sock, conn->tls, conn->worker->accept_tls.ssl_ctx, time(NULL), &conn->recheck)
            : NULL;
    char *text = cert != NULL ? tls_subject(cert) : NULL;
    h2o_iovec_t copy = text != NULL ? h2o_strdup(&req->pool, text, SIZE_MAX) : h2o_iovec_init(NULL, 0);

    free(text);
    *subject = copy.base;
    return copy.len;
}

struct metrics_thread *worker_metrics(h2o_context_t *ctx)
{
    return ((struct worker *)ctx)->metrics;
}

struct accesslog_buffer *worker_accesslog(h2o_context_t *ctx)
{
    return ((struct worker *)ctx)->accesslog;
}

/* Hands the access-log lines of this thread to the writer regularly, so a
 * quiet server still writes its last lines promptly. */
static void worker_on_flush(h2o_timeout_entry_t *entry)
{
    struct worker *w = H2O_STRUCT_FROM_MEMBER(struct worker, flush_entry, entry);

    accesslog_flush(w->accesslog);
    h2o_timeout_link(w->loop, &w->flush_timeout, &w->flush_entry);
}

static void worker_start_accesslog(struct worker *w)
{
    if (w->env.accesslog == NULL || (w->accesslog = accesslog_buffer_new(w->env.accesslog)) == NULL)
        return;
    h2o_timeout_init(w->loop, &w->flush_timeout, ACCESSLOG_FLUSH_MS);
    w->flush_entry.cb = worker_on_flush;
    h2o_timeout_link(w->loop, &w->flush_timeout, &w->flush_entry);
}

static void worker_stop_accesslog(struct worker *w)
{
    if (w->accesslog == NULL)
        return;
    h2o_timeout_unlink(&w->flush_entry);
    h2o_timeout_dispose(w->loop, &w->flush_timeout);
    accesslog_buffer_free(w->accesslog);
    w->accesslog = NULL;
}

static int worker_drained(struct worker *w)
{
    struct timespec now;

    if (w->inflight == 0)
        return 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > w->drain_deadline.tv_sec ||
           (now.tv_sec == w->drain_deadline.tv_sec && now.tv_nsec >= w->drain_deadline.tv_nsec);
}

/* Closes the connections left once no response is being written: idle
 * keep-alive ones and ones still sending a request. Shutting the socket
 * down makes h2o see end-of-stream and release the connection itself. */
static void worker_close_idle(struct worker *w)
{
    for (int rounds = 0; rounds < 100 && !h2o_linklist_is_empty(&w->conns); rounds++) {
        for (h2o_linklist_t *l = w->conns.next; l != &w->conns; l = l->next) {
            struct worker_conn *conn = H2O_STRUCT_FROM_MEMBER(struct worker_conn, link, l);
            shutdown(h2o_socket_get_fd(conn->sock), SHUT_RDWR);
        }
        h2o_evloop_run(w->loop, 10);
    }
}

h2o_evloop_t *worker_attach(struct worker *w)
{
    worker_init_loop(w);
    worker_start_accesslog(w);
    return w->loop;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    worker_attach(w);
    sem_post(&w->ready);
    while (!w->stopping)
        h2o_evloop_run(w->loop, INT32_MAX);
    while (!worker_drained(w))
        h2o_evloop_run(w->loop, 10);
    worker_close_idle(w);
    worker_stop_accesslog(w);
    worker_dispose_loop(w);
    return NULL;
}

int worker_start(struct worker *w)
{
    int err = pthread_create(&w->thread, NULL, worker_main, w);

    while (err == 0 && sem_wait(&w->ready) != 0)
        ;
    return err;
}

static void worker_send(struct worker *w, struct worker_msg m)
{
    struct worker_msg *msg = malloc(sizeof(*msg));

    if (msg == NULL) {
        log_msg(LOG_ERROR, "out of memory: cannot message a worker thread");
        snapshot_release(m.snap);
        SSL_CTX_free(m.tls);
        return;
    }
    *msg = m;
    h2o_multithread_send_message(&w->receiver, &msg->super);
}

void worker_publish(struct worker *w, struct snapshot *snap)
{
    worker_send(w, (struct worker_msg){.type = WORKER_MSG_SNAPSHOT, .snap = snapshot_ref(snap)});
}

void worker_publish_tls(struct worker *w, SSL_CTX *tls)
{
    if (SSL_CTX_up_ref(tls))
        worker_send(w, (struct worker_msg){.type = WORKER_MSG_TLS, .tls = tls});
}

void worker_stop(struct worker *w, unsigned drain_ms)
{
    worker_send(w, (struct worker_msg){.type = WORKER_MSG_STOP, .drain_ms = drain_ms});
}

void worker_join(struct worker *w)
{
    pthread_join(w->thread, NULL);
    sem_destroy(&w->ready);
    worker_retire_pin(w->pin);
    SSL_CTX_free(w->accept_tls.ssl_ctx);
    free(w->listeners);
    free(w);
}
