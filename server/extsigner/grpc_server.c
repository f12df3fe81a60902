#include "server/extsigner/grpc_server.h"

#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "server/extsigner/service.h"
#include "util/log.h"

/* Calls requested ahead, per method and thread: calls beyond wait in the
 * core until a thread is free. */
#define EXTSIGNER_AHEAD 4
/* Streams one connection may open at once. */
#define EXTSIGNER_MAX_STREAMS 1000
/* A request is claims (at most --max-token-size) and a field header. */
#define EXTSIGNER_MESSAGE_SLACK 64

/* The paths of the calls: kube-apiserver 1.32 and 1.33 call v1alpha1,
 * later releases v1, with the same messages. */
static const struct {
    const char *path;
    enum service_method method;
} extsigner_paths[] = {
    {"/v1alpha1.ExternalJWTSigner/Sign", SERVICE_SIGN},
    {"/v1alpha1.ExternalJWTSigner/FetchKeys", SERVICE_FETCH_KEYS},
    {"/v1alpha1.ExternalJWTSigner/Metadata", SERVICE_METADATA},
    {"/v1.ExternalJWTSigner/Sign", SERVICE_SIGN},
    {"/v1.ExternalJWTSigner/FetchKeys", SERVICE_FETCH_KEYS},
    {"/v1.ExternalJWTSigner/Metadata", SERVICE_METADATA},
};
#define EXTSIGNER_NPATHS (sizeof(extsigner_paths) / sizeof(extsigner_paths[0]))
/* Each thread also takes calls of any other method, to answer them
 * UNIMPLEMENTED instead of leaving them waiting. */
#define EXTSIGNER_OTHER ((int)EXTSIGNER_NPATHS)

struct extsigner_thread;

/* One call a thread has asked the core for, from request to answer. */
struct extsigner_call {
    struct extsigner_thread *t;
    int path; /* index in extsigner_paths, or EXTSIGNER_OTHER */
    int answering;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_call_details details; /* EXTSIGNER_OTHER */
    grpc_metadata_array metadata;
    grpc_byte_buffer *request, *response;
    grpc_slice status_details;
    int cancelled;
};

struct extsigner_thread {
    struct extsigner_grpc *x;
    grpc_completion_queue *cq;
    pthread_t thread;
    int started;
    struct extsigner_call calls[(EXTSIGNER_NPATHS + 1) * EXTSIGNER_AHEAD];
};

struct extsigner_grpc {
    grpc_server *server;
    void *methods[EXTSIGNER_NPATHS];
    struct extsigner_thread *threads;
    size_t nthreads;
    struct signer_slot *slot;
    size_t max_claims;
    atomic_int stopping;
    int shutdown_tag; /* its address tags the server's shutdown */
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    ino_t ino; /* of the socket created, so that stop removes only that one */
    int grpc_ready;
};

/* ---- one call ----------------------------------------------------------- */

/* Asks the core for the next call of c's method. */
static void extsigner_request(struct extsigner_call *c)
{
    struct extsigner_grpc *x = c->t->x;
    grpc_call_error e;

    grpc_metadata_array_init(&c->metadata);
    c->answering = 0;
    if (c->path == EXTSIGNER_OTHER) {
        grpc_call_details_init(&c->details);
        e = grpc_server_request_call(x->server, &c->call, &c->details, &c->metadata, c->t->cq, c->t->cq, c);
    } else {
        e = grpc_server_request_registered_call(x->server, x->methods[c->path], &c->call, &c->deadline, &c->metadata,
                                                &c->request, c->t->cq, c->t->cq, c);
    }
    if (e != GRPC_CALL_OK)
        log_msg(LOG_ERROR, "external signer: cannot wait for calls (gRPC error %d)", (int)e);
}

/* Frees what the finished (or never started) call holds. */
static void extsigner_clear(struct extsigner_call *c)
{
    grpc_byte_buffer_destroy(c->request);
    grpc_byte_buffer_destroy(c->response);
    c->request = c->response = NULL;
    grpc_slice_unref(c->status_details);
    c->status_details = grpc_empty_slice();
    grpc_metadata_array_destroy(&c->metadata);
    if (c->path == EXTSIGNER_OTHER)
        grpc_call_details_destroy(&c->details);
    if (c->call != NULL)
        grpc_call_unref(c->call);
    c->call = NULL;
}

/* The request's bytes, in one slice. */
static grpc_slice extsigner_request_bytes(grpc_byte_buffer *request)
{
    grpc_byte_buffer_reader reader;
    grpc_slice all = grpc_empty_slice();

    if (request != NULL && grpc_byte_buffer_reader_init(&reader, request)) {
        all = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
    }
    return all;
}

/* Computes the answer of a call that has arrived. */
static void extsigner_answer_of(struct extsigner_call *c, struct service_reply *reply)
{
    struct extsigner_grpc *x = c->t->x;
    grpc_slice bytes;
    struct signer_state *s;

    if (c->path == EXTSIGNER_OTHER) {
        memset(reply, 0, sizeof(*reply));
        reply->status = GRPC_STATUS_UNIMPLEMENTED;
        snprintf(reply->message, sizeof(reply->message),
                 "this socket serves v1alpha1.ExternalJWTSigner and v1.ExternalJWTSigner only");
        return;
    }
    bytes = extsigner_request_bytes(c->request);
    s = signer_slot_get(x->slot);
    service_call(extsigner_paths[c->path].method, s, GRPC_SLICE_START_PTR(bytes), GRPC_SLICE_LENGTH(bytes),
                 x->max_claims, time(NULL), reply);
    signer_state_release(s);
    grpc_slice_unref(bytes);
}

/* Answers a call that has arrived: initial metadata, the response (when
 * OK) and the status in one batch, with the close that tells when the
 * call is over. */
static void extsigner_answer(struct extsigner_call *c)
{
    struct service_reply reply;
    grpc_op ops[4];
    size_t n = 0;
    grpc_call_error e;

    extsigner_answer_of(c, &reply);
    memset(ops, 0, sizeof(ops));
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (reply.status == GRPC_STATUS_OK) {
        grpc_slice body = grpc_slice_new(reply.body, reply.len, free);
        c->response = grpc_raw_byte_buffer_create(&body, 1);
        grpc_slice_unref(body);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->response;
    }
    c->status_details = grpc_slice_from_copied_string(reply.status == GRPC_STATUS_OK ? "" : reply.message);
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = reply.status;
    ops[n++].data.send_status_from_server.status_details = &c->status_details;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    c->answering = 1;
    if ((e = grpc_call_start_batch(c->call, ops, n, c, NULL)) != GRPC_CALL_OK) {
        log_msg(LOG_ERROR, "external signer: cannot answer a call (gRPC error %d)", (int)e);
        extsigner_clear(c);
        extsigner_request(c);
    }
}

/* What the completion queue said about call c. */
static void extsigner_event(struct extsigner_call *c, int ok)
{
    if (!c->answering && ok) {
        extsigner_answer(c);
        return;
    }
    /* An answer done with (sent, or cancelled by the client) frees the
     * slot for the next call; a request that failed means the server is
     * shutting down. */
    extsigner_clear(c);
    if (c->answering && !atomic_load(&c->t->x->stopping))
        extsigner_request(c);
}

/* ---- threads ------------------------------------------------------------ */

static void *extsigner_main(void *arg)
{
    struct extsigner_thread *t = arg;
    struct extsigner_grpc *x = t->x;

    for (;;) {
        grpc_event ev = grpc_completion_queue_next(t->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        if (ev.tag == &x->shutdown_tag) {
            /* No call is left: every queue can end. */
            for (size_t i = 0; i < x->nthreads; i++)
                grpc_completion_queue_shutdown(x->threads[i].cq);
            continue;
        }
        extsigner_event(ev.tag, ev.success);
    }
    return NULL;
}

/* ---- the socket --------------------------------------------------------- */

/* Refuses a path that holds anything but a socket nobody serves, and
 * removes such a stale socket. 0, or -1 (err). */
static int extsigner_free_path(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    int fd, live;

    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen,
                 "--external-signer-listen unix:%s: the path holds a file that is not a socket; remove it "
                 "or choose another path",
                 path);
        return -1;
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    live = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (fd >= 0)
        close(fd);
    if (live) {
        snprintf(err, errlen,
                 "--external-signer-listen unix:%s: another process serves this socket; stop it or "
                 "choose another path",
                 path);
        return -1;
    }
    unlink(path);
    return 0;
}

/* A user or group by name or number. */
static int extsigner_id(const char *name, int group, unsigned *id)
{
    char *end;
    unsigned long n = strtoul(name, &end, 10);

    if (*name != '\0' && *end == '\0') {
        *id = (unsigned)n;
        return 0;
    }
    if (group) {
        struct group *g = getgrnam(name);
        if (g != NULL)
            *id = g->gr_gid;
        return g != NULL ? 0 : -1;
    }
    struct passwd *pw = getpwnam(name);
    if (pw != NULL)
        *id = pw->pw_uid;
    return pw != NULL ? 0 : -1;
}

/* Gives the socket the mode and owner the flags ask for. */
static int extsigner_own_socket(const struct config *cfg, const char *path, char *err, size_t errlen)
{
    const char *owner = cfg->external_signer_socket_owner;
    mode_t mode = strcmp(cfg->external_signer_socket_mode, "0660") == 0 ? 0660 : 0600;
    unsigned uid = (unsigned)-1, gid = (unsigned)-1;
    char user[256] = "";
    const char *colon = owner ? strchr(owner, ':') : NULL;

    if (owner != NULL) {
        snprintf(user, sizeof(user), "%.*s", (int)(colon ? (size_t)(colon - owner) : strlen(owner)), owner);
        if ((user[0] && extsigner_id(user, 0, &uid) != 0) || (colon && extsigner_id(colon + 1, 1, &gid) != 0)) {
            snprintf(err, errlen, "--external-signer-socket-owner %s: no such user or group", owner);
            return -1;
        }
        if (chown(path, (uid_t)uid, (gid_t)gid) != 0) {
            snprintf(err, errlen, "--external-signer-socket-owner %s: cannot give unix:%s to it: %s%s", owner, path,
                     strerror(errno), errno == EPERM ? " (another user needs root; a group, membership)" : "");
            return -1;
        }
    }
    if (chmod(path, mode) != 0) {
        snprintf(err, errlen, "--external-signer-listen unix:%s: cannot chmod: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Binds the socket, never readable by others: it is created under a
 * umask that leaves only the owner (the threads that exist now are
 * gRPC's, which create no files), then given its mode and owner. */
static int extsigner_bind(struct extsigner_grpc *x, const struct config *cfg, char *err, size_t errlen)
{
    char addr[sizeof(x->path) + 8];
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    struct stat st;
    mode_t old;
    int port;

    snprintf(addr, sizeof(addr), "unix:%s", x->path);
    old = umask(0177);
    port = grpc_server_add_http2_port(x->server, addr, creds);
    umask(old);
    grpc_server_credentials_release(creds);
    if (port == 0 || stat(x->path, &st) != 0) {
        snprintf(err, errlen, "--external-signer-listen %s: cannot listen (is its directory there and writable?)",
                 addr);
        return -1;
    }
    x->ino = st.st_ino;
    return extsigner_own_socket(cfg, x->path, err, errlen);
}

/* ---- start and stop ----------------------------------------------------- */

static grpc_server *extsigner_create_server(size_t max_message)
{
    grpc_arg args[2];
    grpc_channel_args list = {.num_args = 2, .args = args};

    memset(args, 0, sizeof(args));
    args[0].type = GRPC_ARG_INTEGER;
    args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    args[0].value.integer = (int)max_message;
    args[1].type = GRPC_ARG_INTEGER;
    args[1].key = (char *)GRPC_ARG_MAX_CONCURRENT_STREAMS;
    args[1].value.integer = EXTSIGNER_MAX_STREAMS;
    return grpc_server_create(&list, NULL);
}

/* Creates the server, its queues and methods, and binds the socket. */
static int extsigner_setup(struct extsigner_grpc *x, const struct config *cfg, char *err, size_t errlen)
{
    grpc_init();
    x->grpc_ready = 1;
    if ((x->server = extsigner_create_server(x->max_claims + EXTSIGNER_MESSAGE_SLACK)) == NULL ||
        (x->threads = calloc(x->nthreads, sizeof(*x->threads))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < x->nthreads; i++) {
        x->threads[i].x = x;
        x->threads[i].cq = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(x->server, x->threads[i].cq, NULL);
    }
    for (size_t p = 0; p < EXTSIGNER_NPATHS; p++)
        x->methods[p] = grpc_server_register_method(x->server, extsigner_paths[p].path, NULL,
                                                    GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    if (extsigner_free_path(x->path, err, errlen) != 0 || extsigner_bind(x, cfg, err, errlen) != 0)
        return -1;
    grpc_server_start(x->server);
    return 0;
}

/* Asks for the first calls of every method on each thread's queue and
 * starts the thread. */
static int extsigner_start_threads(struct extsigner_grpc *x, char *err, size_t errlen)
{
    for (size_t i = 0; i < x->nthreads; i++) {
        struct extsigner_thread *t = &x->threads[i];
        for (size_t k = 0; k < sizeof(t->calls) / sizeof(t->calls[0]); k++) {
            struct extsigner_call *c = &t->calls[k];
            c->t = t;
            c->path = (int)(k / EXTSIGNER_AHEAD);
            c->status_details = grpc_empty_slice();
            extsigner_request(c);
        }
        if ((errno = pthread_create(&t->thread, NULL, extsigner_main, t)) != 0) {
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
    x->slot = slot;
    x->nthreads = cfg->external_signer_threads;
    x->max_claims = cfg->max_token_size;
    snprintf(x->path, sizeof(x->path), "%s", cfg->external_signer_listen + strlen("unix:"));
    if (extsigner_setup(x, cfg, err, errlen) != 0 || extsigner_start_threads(x, err, errlen) != 0) {
        extsigner_grpc_stop(x);
        return NULL;
    }
    log_msg(LOG_INFO,
            "external signer listening on unix:%s (%zu threads, mode %s): v1alpha1.ExternalJWTSigner and "
            "v1.ExternalJWTSigner",
            x->path, x->nthreads, cfg->external_signer_socket_mode);
    return x;
}

/* Removes the socket this server created, not one put there since. */
static void extsigner_unlink(const struct extsigner_grpc *x)
{
    struct stat st;

    if (x->ino != 0 && lstat(x->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == x->ino)
        unlink(x->path);
}

void extsigner_grpc_stop(struct extsigner_grpc *x)
{
    if (x == NULL)
        return;
    atomic_store(&x->stopping, 1);
    if (x->server != NULL && x->threads != NULL) {
        /* The shutdown tag reaches thread 0's queue once no call is left;
         * whoever takes it shuts every queue down. A queue whose thread
         * never started is drained here, by the same loop. */
        grpc_server_shutdown_and_notify(x->server, x->threads[0].cq, &x->shutdown_tag);
        grpc_server_cancel_all_calls(x->server);
        for (size_t i = 0; i < x->nthreads; i++)
            if (!x->threads[i].started)
                extsigner_main(&x->threads[i]);
        for (size_t i = 0; i < x->nthreads; i++)
            if (x->threads[i].started)
                pthread_join(x->threads[i].thread, NULL);
    }
    if (x->server != NULL)
        grpc_server_destroy(x->server);
    for (size_t i = 0; x->threads != NULL && i < x->nthreads; i++)
        grpc_completion_queue_destroy(x->threads[i].cq);
    extsigner_unlink(x);
    free(x->threads);
    if (x->grpc_ready)
        grpc_shutdown_blocking();
    free(x);
}
