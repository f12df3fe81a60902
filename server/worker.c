#include "worker.h"

#include <pthread.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"

/* Accepting in small batches keeps one busy listener from starving the
 * connections the loop already has. */
#define WORKER_ACCEPT_BATCH 16

/* A snapshot as one worker holds it: the worker's reference plus the count
 * of its requests still using it. A replaced snapshot is released when its
 * last request is disposed. All fields belong to the worker's thread. */
struct worker_pin {
    struct snapshot *snap;
    struct worker *worker;
    size_t inflight;
    int retired;
};

struct worker_msg {
    h2o_multithread_message_t super;
    struct snapshot *snap; /* NULL: stop */
    unsigned drain_ms;
};

/* An open client connection, tracked so that the idle ones can be closed
 * at shutdown (h2o 2.2 has no API for that). */
struct worker_conn {
    h2o_linklist_t link;
    h2o_socket_t *sock;
    struct worker *worker;
};

struct worker {
    h2o_context_t ctx; /* first: handlers find the worker from req->conn->ctx */
    h2o_accept_ctx_t accept_ctx;
    h2o_evloop_t *loop;
    h2o_multithread_receiver_t receiver;
    h2o_linklist_t conns; /* of struct worker_conn */
    h2o_socket_t **listeners;
    size_t nlisteners;
    struct worker_pin *pin;
    size_t inflight;
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

static void worker_swap_pin(struct worker *w, struct snapshot *snap)
{
    struct worker_pin *pin = worker_pin_new(w, snap);

    if (pin == NULL) {
        log_msg(LOG_ERROR, "out of memory: keeping the previous key set on one thread");
        return;
    }
    w->pin->retired = 1;
    if (w->pin->inflight == 0)
        worker_pin_free(w->pin);
    w->pin = pin;
}

static void worker_close_listeners(struct worker *w)
{
    for (size_t i = 0; i < w->nlisteners; i++) {
        if (w->listeners[i] != NULL) {
            h2o_socket_read_stop(w->listeners[i]);
            h2o_socket_close(w->listeners[i]);
            w->listeners[i] = NULL;
        }
    }
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

static void worker_on_message(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    struct worker *w = H2O_STRUCT_FROM_MEMBER(struct worker, receiver, receiver);

    while (!h2o_linklist_is_empty(messages)) {
        struct worker_msg *msg = H2O_STRUCT_FROM_MEMBER(struct worker_msg, super.link, messages->next);
        h2o_linklist_unlink(&msg->super.link);
        if (msg->snap != NULL) {
            worker_swap_pin(w, msg->snap);
            snapshot_release(msg->snap);
        } else {
            worker_begin_stop(w, msg->drain_ms);
        }
        free(msg);
    }
}

static void worker_on_conn_close(void *data)
{
    struct worker_conn *conn = data;

    h2o_linklist_unlink(&conn->link);
    free(conn);
}

static void worker_on_accept(h2o_socket_t *listener, const char *err)
{
    struct worker *w = listener->data;

    if (err != NULL)
        return;
    for (int i = 0; i < WORKER_ACCEPT_BATCH; i++) {
        h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
        struct worker_conn *conn;
        if (sock == NULL)
            break;
        if ((conn = calloc(1, sizeof(*conn))) == NULL) {
            h2o_socket_close(sock);
            continue;
        }
        conn->sock = sock;
        conn->worker = w;
        h2o_linklist_insert(&w->conns, &conn->link);
        sock->on_close.cb = worker_on_conn_close;
        sock->on_close.data = conn;
        h2o_accept(&w->accept_ctx, sock);
    }
}

struct worker *worker_create(h2o_globalconf_t *conf, const int *fds, size_t nfds, struct snapshot *snap)
{
    struct worker *w = calloc(1, sizeof(*w));

    if (w == NULL || (w->listeners = calloc(nfds, sizeof(*w->listeners))) == NULL ||
        (w->pin = worker_pin_new(w, snap)) == NULL) {
        if (w != NULL)
            free(w->listeners);
        free(w);
        return NULL;
    }
    w->loop = h2o_evloop_create();
    h2o_context_init(&w->ctx, w->loop, conf);
    w->accept_ctx.ctx = &w->ctx;
    w->accept_ctx.hosts = conf->hosts;
    h2o_linklist_init_anchor(&w->conns);
    h2o_multithread_register_receiver(w->ctx.queue, &w->receiver, worker_on_message);
    for (size_t i = 0; i < nfds; i++) {
        w->listeners[i] = h2o_evloop_socket_create(w->loop, fds[i], H2O_SOCKET_FLAG_DONT_READ);
        w->listeners[i]->data = w;
        h2o_socket_read_start(w->listeners[i], worker_on_accept);
    }
    w->nlisteners = nfds;
    return w;
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

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    while (!w->stopping)
        h2o_evloop_run(w->loop, INT32_MAX);
    while (!worker_drained(w))
        h2o_evloop_run(w->loop, 10);
    worker_close_idle(w);
    return NULL;
}

int worker_start(struct worker *w)
{
    return pthread_create(&w->thread, NULL, worker_main, w);
}

static void worker_send(struct worker *w, struct snapshot *snap, unsigned drain_ms)
{
    struct worker_msg *msg = calloc(1, sizeof(*msg));

    if (msg == NULL) {
        log_msg(LOG_ERROR, "out of memory: cannot message a worker thread");
        snapshot_release(snap);
        return;
    }
    msg->snap = snap;
    msg->drain_ms = drain_ms;
    h2o_multithread_send_message(&w->receiver, &msg->super);
}

void worker_publish(struct worker *w, struct snapshot *snap)
{
    worker_send(w, snapshot_ref(snap), 0);
}

void worker_stop(struct worker *w, unsigned drain_ms)
{
    worker_send(w, NULL, drain_ms);
}

void worker_join(struct worker *w)
{
    pthread_join(w->thread, NULL);
    h2o_multithread_unregister_receiver(w->ctx.queue, &w->receiver);
    worker_close_listeners(w);
    if (h2o_linklist_is_empty(&w->conns)) {
        /* h2o asserts that no connection and no timer is left when
         * disposing; h2o_context_request_shutdown armed one for HTTP/2. */
        if (h2o_timeout_is_linked(&w->ctx.http2._graceful_shutdown_timeout))
            h2o_timeout_unlink(&w->ctx.http2._graceful_shutdown_timeout);
        h2o_context_dispose(&w->ctx);
        h2o_evloop_destroy(w->loop);
    }
    w->pin->retired = 1;
    if (w->pin->inflight == 0)
        worker_pin_free(w->pin);
    free(w->listeners);
    free(w);
}
