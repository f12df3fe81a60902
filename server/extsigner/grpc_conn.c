/* SPDX-License-Identifier: Apache-2.0 */
#include "server/extsigner/grpc_conn.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "server/extsigner/service.h"
#include "util/strbuf.h"

/* Bytes read from the socket at once: a few dozen Sign calls. */
#define GRPC_CONN_READ 16384
/* Reads one connection may take in a row before the others' turn. */
#define GRPC_CONN_ROUNDS 8
/* Bytes of answers gathered before they are written: one write for all
 * the calls one read brought, bounded. */
#define GRPC_CONN_WRITE_BATCH 65536
/* The request headers of one call (kube-apiserver sends well under 1 KiB),
 * counted as HTTP/2 counts a header list (RFC 9113 §6.5.2). */
#define GRPC_CONN_MAX_HEADERS 16384
/* A request is claims (at most --max-token-size) and a field header. */
#define GRPC_MESSAGE_SLACK 64
/* What an open call costs before its first DATA, counted against
 * --external-signer-max-buffered-bytes: its struct grpc_stream and
 * nghttp2's stream, rounded up. */
#define GRPC_STREAM_COST 512

/* The paths of the calls: kube-apiserver 1.32 and 1.33 call v1alpha1,
 * later releases v1, with the same messages. */
static const struct {
    const char *path;
    enum service_method method;
} grpc_paths[] = {
    {"/v1alpha1.ExternalJWTSigner/Sign", SERVICE_SIGN},
    {"/v1alpha1.ExternalJWTSigner/FetchKeys", SERVICE_FETCH_KEYS},
    {"/v1alpha1.ExternalJWTSigner/Metadata", SERVICE_METADATA},
    {"/v1.ExternalJWTSigner/Sign", SERVICE_SIGN},
    {"/v1.ExternalJWTSigner/FetchKeys", SERVICE_FETCH_KEYS},
    {"/v1.ExternalJWTSigner/Metadata", SERVICE_METADATA},
};
#define GRPC_NPATHS ((int)(sizeof(grpc_paths) / sizeof(grpc_paths[0])))

/* One call, from its HEADERS to the stream's close. */
struct grpc_stream {
    int path;         /* index in grpc_paths, or -1 */
    int post, grpc;   /* :method is POST; content-type is application/grpc */
    int bad_timeout;  /* grpc-timeout does not parse */
    int has_deadline; /* grpc-timeout was given: deadline holds */
    int answered;     /* the answer is submitted: DATA still coming is dropped */
    int exhausted;    /* opened over --external-signer-max-buffered-bytes: answered so once its headers end */
    size_t charged;   /* what it counts in env->buffered */
    struct timespec deadline;
    size_t header_bytes;
    uint8_t *req; /* the DATA received: one length-prefixed message */
    size_t req_len;
    uint8_t *resp; /* the answer's length-prefixed message, when OK */
    size_t resp_len, resp_off;
    /* Every stream of the connection, so that grpc_conn_free frees those
     * still open: nghttp2_session_del calls no close callback. */
    struct grpc_stream *prev, *next;
};

struct grpc_conn {
    int fd;
    nghttp2_session *session;
    const struct grpc_conn_env *env;
    struct strbuf out; /* what nghttp2 produced; fd has taken the first out_off bytes */
    size_t out_off;
    struct grpc_stream *streams; /* open ones */
    size_t nstreams;
    uint8_t in[GRPC_CONN_READ];
};

/* A header for nghttp2_submit_*: nghttp2 copies name and value unless
 * flags say otherwise. */
static nghttp2_nv grpc_nv(const char *name, const char *value, uint8_t flags)
{
    nghttp2_nv nv = {(uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value), flags};
    return nv;
}

/* A header of static strings, which nghttp2 need not copy. */
static nghttp2_nv grpc_nv_static(const char *name, const char *value)
{
    return grpc_nv(name, value, NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE);
}

/* ---- parsing a call ----------------------------------------------------- */

/* grpc-timeout: 1 to 8 digits and a unit (Hours, Minutes, Seconds,
 * milli-, micro-, nanoseconds). Sets the stream's deadline from now; a
 * timeout longer than a year is as good as none. */
static void grpc_parse_timeout(struct grpc_stream *st, const uint8_t *v, size_t len)
{
    static const char units[] = "HMSmun";
    static const long long per_unit_ns[] = {0, 0, 0, 1000000, 1000, 1};
    static const long long per_unit_s[] = {3600, 60, 1, 0, 0, 0};
    long long n = 0, s, ns;
    const char *unit;
    struct timespec now;

    if (len < 2 || len > 9 || (unit = memchr(units, v[len - 1], sizeof(units) - 1)) == NULL) {
        st->bad_timeout = 1;
        return;
    }
    for (size_t i = 0; i + 1 < len; i++) {
        if (v[i] < '0' || v[i] > '9') {
            st->bad_timeout = 1;
            return;
        }
        n = n * 10 + (v[i] - '0');
    }
    s = n * per_unit_s[unit - units];
    ns = n * per_unit_ns[unit - units];
    s += ns / 1000000000;
    ns %= 1000000000;
    if (s > 365LL * 86400)
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    st->deadline.tv_sec = now.tv_sec + (time_t)s;
    st->deadline.tv_nsec = now.tv_nsec + (long)ns;
    if (st->deadline.tv_nsec >= 1000000000) {
        st->deadline.tv_sec++;
        st->deadline.tv_nsec -= 1000000000;
    }
    st->has_deadline = 1;
}

/* Whether a header name or value (not NUL-terminated) is exactly want. */
static int grpc_name_is(const uint8_t *name, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* application/grpc, alone or with a +format or ;parameters. */
static int grpc_content_type_ok(const uint8_t *v, size_t len)
{
    static const char base[] = "application/grpc";
    size_t n = sizeof(base) - 1;

    return len >= n && memcmp(v, base, n) == 0 && (len == n || v[n] == '+' || v[n] == ';');
}

/* Notes what the answer depends on of one request header; the others
 * (te, user-agent, grpc-accept-encoding, ...) change nothing. */
static void grpc_take_header(struct grpc_stream *st, const uint8_t *name, size_t namelen, const uint8_t *value,
                             size_t valuelen)
{
    if (grpc_name_is(name, namelen, ":method")) {
        st->post = valuelen == 4 && memcmp(value, "POST", 4) == 0;
    } else if (grpc_name_is(name, namelen, ":path")) {
        for (int i = 0; i < GRPC_NPATHS; i++)
            if (grpc_name_is(value, valuelen, grpc_paths[i].path))
                st->path = i;
    } else if (grpc_name_is(name, namelen, "content-type")) {
        st->grpc = grpc_content_type_ok(value, valuelen);
    } else if (grpc_name_is(name, namelen, "grpc-timeout")) {
        grpc_parse_timeout(st, value, valuelen);
    }
}

/* ---- the memory of unfinished calls ------------------------------------ */

/* Counts n more bytes held for st against the limit every connection
 * shares. -1, counting nothing, when they would pass it. */
static int grpc_charge(struct grpc_conn *c, struct grpc_stream *st, size_t n)
{
    size_t before = atomic_fetch_add(c->env->buffered, n);

    if (before + n > c->env->max_buffered) {
        atomic_fetch_sub(c->env->buffered, n);
        return -1;
    }
    st->charged += n;
    return 0;
}

/* st holds nothing more: its request is answered, or it is gone. */
static void grpc_uncharge(struct grpc_conn *c, struct grpc_stream *st)
{
    atomic_fetch_sub(c->env->buffered, st->charged);
    st->charged = 0;
}

/* ---- answering a call --------------------------------------------------- */

/* grpc-message is percent-encoded: every byte outside printable ASCII,
 * and '%' itself. */
static void grpc_percent_encode(const char *in, char *out, size_t outlen)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;

    for (const unsigned char *p = (const unsigned char *)in; *p && o + 4 <= outlen; p++) {
        if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
}

/* Answers with a status and no message: one HEADERS frame that ends the
 * stream (gRPC's Trailers-Only). */
static int grpc_answer_status(struct grpc_conn *c, int32_t id, enum rpc_status status, const char *message)
{
    char code[12], encoded[3 * sizeof(((struct service_reply *)0)->message) + 1];
    nghttp2_nv nv[4];

    snprintf(code, sizeof(code), "%d", (int)status);
    grpc_percent_encode(message, encoded, sizeof(encoded));
    nv[0] = grpc_nv_static(":status", "200");
    nv[1] = grpc_nv_static("content-type", "application/grpc");
    nv[2] = grpc_nv("grpc-status", code, NGHTTP2_NV_FLAG_NONE);
    nv[3] = grpc_nv("grpc-message", encoded, NGHTTP2_NV_FLAG_NONE);
    return nghttp2_submit_response(c->session, id, nv, 4, NULL);
}

/* Gives nghttp2 the answer's message, then the trailers that end it. */
static ssize_t grpc_read_answer(nghttp2_session *session, int32_t id, uint8_t *buf, size_t length, uint32_t *data_flags,
                                nghttp2_data_source *source, void *user_data)
{
    struct grpc_stream *st = source->ptr;
    size_t n = st->resp_len - st->resp_off;
    nghttp2_nv ok = grpc_nv_static("grpc-status", "0");

    (void)user_data;
    if (n > length)
        n = length;
    memcpy(buf, st->resp + st->resp_off, n);
    st->resp_off += n;
    if (st->resp_off == st->resp_len) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        if (nghttp2_submit_trailer(session, id, &ok, 1) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

/* Answers OK with reply's message, whose body st takes: the prefix is
 * written into the room the service left before it. */
static int grpc_answer_message(struct grpc_conn *c, int32_t id, struct grpc_stream *st, struct service_reply *reply)
{
    nghttp2_nv nv[2] = {grpc_nv_static(":status", "200"), grpc_nv_static("content-type", "application/grpc")};
    nghttp2_data_provider body = {.source.ptr = st, .read_callback = grpc_read_answer};

    st->resp = reply->body;
    reply->body = NULL;
    st->resp[0] = 0;
    st->resp[1] = (uint8_t)(reply->len >> 24);
    st->resp[2] = (uint8_t)(reply->len >> 16);
    st->resp[3] = (uint8_t)(reply->len >> 8);
    st->resp[4] = (uint8_t)reply->len;
    st->resp_len = SERVICE_MESSAGE_PREFIX + reply->len;
    return nghttp2_submit_response(c->session, id, nv, 2, &body);
}

/* Whether the caller has given up on the call already: answering it would
 * spend a signature nobody reads. */
static int grpc_deadline_passed(const struct grpc_stream *st)
{
    struct timespec now;

    if (!st->has_deadline)
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > st->deadline.tv_sec ||
           (now.tv_sec == st->deadline.tv_sec && now.tv_nsec >= st->deadline.tv_nsec);
}

/* The error a complete call gets before it reaches the service, or RPC_OK. */
static enum rpc_status grpc_refusal(const struct grpc_stream *st, const char **why)
{
    size_t len =
        st->req_len >= SERVICE_MESSAGE_PREFIX
            ? ((size_t)st->req[1] << 24 | (size_t)st->req[2] << 16 | (size_t)st->req[3] << 8 | (size_t)st->req[4])
            : 0;

    if (st->path < 0) {
        *why = "this socket serves v1alpha1.ExternalJWTSigner and v1.ExternalJWTSigner only";
        return RPC_UNIMPLEMENTED;
    }
    if (st->bad_timeout) {
        *why = "malformed grpc-timeout";
        return RPC_INTERNAL;
    }
    if (grpc_deadline_passed(st)) {
        *why = "the deadline passed before the call could be answered";
        return RPC_DEADLINE_EXCEEDED;
    }
    if (st->req_len < SERVICE_MESSAGE_PREFIX || st->req_len - SERVICE_MESSAGE_PREFIX != len) {
        *why = "the request is not one length-prefixed message";
        return RPC_INTERNAL;
    }
    if (st->req[0] != 0) {
        *why = "compressed messages are not accepted (grpc-accept-encoding: identity)";
        return RPC_UNIMPLEMENTED;
    }
    return RPC_OK;
}

/* Answers a call whose request has ended. A request that is not gRPC at
 * all (another method or content type) gets the HTTP status gRPC's
 * protocol gives for it, with no grpc-status. */
static int grpc_answer(struct grpc_conn *c, int32_t id, struct grpc_stream *st)
{
    struct service_reply reply;
    struct signer_state *s;
    const char *why = "";
    enum rpc_status refusal;
    int rc;

    st->answered = 1;
    if (!st->post || !st->grpc) {
        nghttp2_nv nv = grpc_nv_static(":status", st->post ? "415" : "405");
        return nghttp2_submit_response(c->session, id, &nv, 1, NULL);
    }
    if ((refusal = grpc_refusal(st, &why)) != RPC_OK)
        return grpc_answer_status(c, id, refusal, why);
    s = signer_slot_get(c->env->slot);
    service_call(grpc_paths[st->path].method, s, st->req + SERVICE_MESSAGE_PREFIX, st->req_len - SERVICE_MESSAGE_PREFIX,
                 c->env->max_claims, time(NULL), &reply);
    signer_state_release(s);
    /* The request has served its purpose: its bytes go back now rather
     * than when the answer has been written. */
    free(st->req);
    st->req = NULL;
    grpc_uncharge(c, st);
    rc = reply.status == RPC_OK ? grpc_answer_message(c, id, st, &reply)
                                : grpc_answer_status(c, id, reply.status, reply.message);
    free(reply.body);
    return rc;
}

/* ---- nghttp2's callbacks ------------------------------------------------ */

/* A new request: its stream's state, the connection's to free. */
static int grpc_on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct grpc_conn *c = user_data;
    struct grpc_stream *st;

    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    /* SETTINGS_MAX_CONCURRENT_STREAMS binds a client only once it has
     * acknowledged them: until then, this does. */
    if (c->nstreams >= GRPC_CONN_MAX_STREAMS || (st = calloc(1, sizeof(*st))) == NULL)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream */
    c->nstreams++;
    st->path = -1;
    st->exhausted = grpc_charge(c, st, GRPC_STREAM_COST) != 0;
    st->next = c->streams;
    if (c->streams)
        c->streams->prev = st;
    c->streams = st;
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, st);
    return 0;
}

/* One request header (HPACK-decoded and validated by nghttp2), counted
 * against GRPC_CONN_MAX_HEADERS: a stream over it is reset. */
static int grpc_on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                          const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data)
{
    struct grpc_stream *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);

    (void)flags;
    (void)user_data;
    if (st == NULL)
        return 0;
    st->header_bytes += namelen + valuelen + 32;
    if (st->header_bytes > GRPC_CONN_MAX_HEADERS)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (frame->headers.cat == NGHTTP2_HCAT_REQUEST)
        grpc_take_header(st, name, namelen, value, valuelen);
    return 0;
}

/* Answers st RESOURCE_EXHAUSTED at once (the rest of its request is
 * dropped): the calls open on every connection hold all the memory they
 * may. */
static int grpc_answer_exhausted(struct grpc_conn *c, int32_t id, struct grpc_stream *st)
{
    st->answered = 1;
    return grpc_answer_status(c, id, RPC_RESOURCE_EXHAUSTED,
                              "the signer holds too many unfinished calls (--external-signer-max-buffered-bytes)");
}

/* Keeps the request's bytes, up to one message of the largest size a call
 * takes and while the memory of every connection's unfinished calls
 * allows; a larger request, or one over that, is answered at once and the
 * rest dropped. */
static int grpc_on_data(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                        void *user_data)
{
    struct grpc_conn *c = user_data;
    struct grpc_stream *st = nghttp2_session_get_stream_user_data(session, id);
    size_t limit = SERVICE_MESSAGE_PREFIX + c->env->max_claims + GRPC_MESSAGE_SLACK;
    uint8_t *grown;

    (void)flags;
    if (st == NULL || st->answered)
        return 0;
    if (len > limit - st->req_len) {
        char why[128];
        snprintf(why, sizeof(why), "the request is larger than %zu bytes (--max-token-size)", limit);
        st->answered = 1;
        return grpc_answer_status(c, id, RPC_RESOURCE_EXHAUSTED, why) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (grpc_charge(c, st, len) != 0)
        return grpc_answer_exhausted(c, id, st) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
    if ((grown = realloc(st->req, st->req_len + len)) == NULL)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    memcpy(grown + st->req_len, data, len);
    st->req = grown;
    st->req_len += len;
    return 0;
}

/* A frame that ends a request (HEADERS or DATA with END_STREAM): the call
 * is complete and answered now, on this thread. A call opened over the
 * memory limit is answered once its headers are complete. */
static int grpc_on_frame(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct grpc_stream *st;

    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (st == NULL || st->answered)
        return 0;
    if (st->exhausted)
        return grpc_answer_exhausted(user_data, frame->hd.stream_id, st) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    return grpc_answer(user_data, frame->hd.stream_id, st) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
}

/* Frees a stream nghttp2 has closed, or one still open at the end. */
static void grpc_stream_free(struct grpc_conn *c, struct grpc_stream *st)
{
    if (st->prev)
        st->prev->next = st->next;
    else
        c->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    c->nstreams--;
    grpc_uncharge(c, st);
    free(st->req);
    free(st->resp);
    free(st);
}

/* A stream is over (answered, reset, or refused). */
static int grpc_on_close(nghttp2_session *session, int32_t id, uint32_t error_code, void *user_data)
{
    struct grpc_stream *st = nghttp2_session_get_stream_user_data(session, id);

    (void)error_code;
    if (st != NULL)
        grpc_stream_free(user_data, st);
    return 0;
}

/* ---- the connection ----------------------------------------------------- */

/* A server session whose callbacks take calls for c, with the server's
 * SETTINGS queued. */
static nghttp2_session *grpc_session_new(struct grpc_conn *c)
{
    nghttp2_session_callbacks *cb;
    nghttp2_session *session = NULL;
    nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, GRPC_CONN_MAX_STREAMS},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, GRPC_CONN_MAX_HEADERS},
    };

    if (nghttp2_session_callbacks_new(&cb) != 0)
        return NULL;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, grpc_on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, grpc_on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, grpc_on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, grpc_on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, grpc_on_close);
    if (nghttp2_session_server_new(&session, cb, c) == 0 &&
        nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings, sizeof(settings) / sizeof(settings[0])) != 0) {
        nghttp2_session_del(session);
        session = NULL;
    }
    nghttp2_session_callbacks_del(cb);
    return session;
}

struct grpc_conn *grpc_conn_new(int fd, const struct grpc_conn_env *env)
{
    struct grpc_conn *c = calloc(1, sizeof(*c));

    if (c == NULL || (c->session = grpc_session_new(c)) == NULL) {
        free(c);
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->env = env;
    return c;
}

/* Appends what nghttp2 has to send to c->out, up to a batch. */
static int grpc_conn_collect(struct grpc_conn *c)
{
    while (c->out.len < GRPC_CONN_WRITE_BATCH) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(c->session, &data);
        if (n <= 0)
            return n < 0 ? -1 : 0;
        strbuf_add(&c->out, (const char *)data, (size_t)n);
        if (c->out.failed)
            return -1;
    }
    return 0;
}

/* Writes until nghttp2 has nothing more or the socket is full. */
static int grpc_conn_flush(struct grpc_conn *c)
{
    for (;;) {
        ssize_t n;
        if (c->out_off == c->out.len) {
            c->out_off = c->out.len = 0; /* the allocation is kept for the next batch */
            if (grpc_conn_collect(c) != 0)
                return -1;
            if (c->out.len == 0)
                break;
        }
        n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        c->out_off += (size_t)n;
    }
    return nghttp2_session_want_read(c->session) || nghttp2_session_want_write(c->session) ? 0 : -1;
}

/* Reads and answers until the socket has nothing more, up to
 * GRPC_CONN_ROUNDS reads: while calls are answered the client sends the
 * next ones, and reading them at once saves a wait in epoll per batch.
 * The bound lets the thread's other connections have their turn. */
int grpc_conn_io(struct grpc_conn *c)
{
    for (int round = 0; round < GRPC_CONN_ROUNDS && !grpc_conn_blocked(c); round++) {
        ssize_t n = read(c->fd, c->in, sizeof(c->in));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0 || nghttp2_session_mem_recv(c->session, c->in, (size_t)n) < 0 || grpc_conn_flush(c) != 0)
            return -1;
    }
    return grpc_conn_flush(c);
}

int grpc_conn_blocked(const struct grpc_conn *c)
{
    return c->out_off < c->out.len;
}

int grpc_conn_idle(const struct grpc_conn *c)
{
    return c->nstreams == 0 && !grpc_conn_blocked(c);
}

void grpc_conn_goaway(struct grpc_conn *c)
{
    if (nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR) == 0)
        grpc_conn_flush(c);
}

void grpc_conn_free(struct grpc_conn *c)
{
    if (c == NULL)
        return;
    nghttp2_session_del(c->session);
    while (c->streams != NULL)
        grpc_stream_free(c, c->streams);
    close(c->fd);
    free(c->out.p);
    free(c);
}
