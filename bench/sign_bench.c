/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sign_bench: a load generator for the external signer's Sign call, on
 * gRPC's C core (the library the server uses, as kube-apiserver's grpc-go
 * is a gRPC implementation of the same protocol) with the messages
 * protoc-c generates from proto/externaljwt.proto.
 *
 *   sign_bench unix:PATH throughput SECONDS CONCURRENCY
 *       closed loop: CONCURRENCY calls always in flight; prints the calls
 *       completed per second.
 *   sign_bench unix:PATH rate SECONDS CALLS_PER_SECOND
 *       open loop: a call starts every 1/CALLS_PER_SECOND s on a fixed
 *       schedule whatever the answers do, and each latency is measured from
 *       the moment its call was due (not from when it could be sent), so a
 *       stall shows in the percentiles instead of thinning the load
 *       (coordinated omission); prints p50, p90, p99, p99.9 and max.
 *
 * Why C and not Python's grpcio: at 1,000 calls/s a Python client spends
 * more time per call in the interpreter and its GIL than the server spends
 * signing an ES256 token, and its timer jitter (sleeping to the next due
 * time) is of the order of the latencies measured. A C client on one core
 * keeps to its schedule within microseconds. Every call must succeed with
 * a signature, or the run fails (exit 1).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "externaljwt.pb-c.h"

#define MAX_INFLIGHT 8192
#define METHOD       "/v1alpha1.ExternalJWTSigner/Sign"
/* kube-shaped claims, base64url: what kube-apiserver sends to be signed */
#define CLAIMS                                                                                                         \
    "eyJhdWQiOlsiaHR0cHM6Ly9rdWJlcm5ldGVzLmRlZmF1bHQuc3ZjIl0sImV4cCI6MTczMTYxMzQxMywiaWF0IjoxNzAwMDc3NDEzLCJpc3Mi"     \
    "OiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMiLCJqdGkiOiJlYTI4ZWQ0OS03YjNiLTQxNzYtOTQ0Ny0zNTFmZjYxYWMzMjgiLCJr"     \
    "dWJlcm5ldGVzLmlvIjp7Im5hbWVzcGFjZSI6Imt1YmUtc3lzdGVtIiwicG9kIjp7Im5hbWUiOiJjb3JlZG5zLTY5Y2JmYjk3OTgtanY5Z24i"     \
    "LCJ1aWQiOiI3NzhhNTMwYy1iYjNmLTQ5ZjUtODc0Zi0xODFlNjI5ZmFhNmYifSwic2VydmljZWFjY291bnQiOnsibmFtZSI6ImNvcmVkbnMi"     \
    "LCJ1aWQiOiJhMDg3ZDVhMC1lMGI5LTRkZTMtOWQ2Ny0yYjIzY2RmMjI2ZmYifSwid2FybmFmdGVyIjoxNzAwMDgxMDIwfSwibmJmIjoxNzAw"     \
    "MDc3NDEzLCJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a3ViZS1zeXN0ZW06Y29yZWRucyJ9"
struct call {
    grpc_call *call;
    grpc_metadata_array initial, trailing;
    grpc_byte_buffer *request, *response; /* the call's own copy: sending takes the slices */
    grpc_status_code status;
    grpc_slice details;
    int64_t due_ns; /* when the call was due to start */
    atomic_int busy;
};

static grpc_channel *channel;
static grpc_completion_queue *cq;
static grpc_byte_buffer *request;
static struct call calls[MAX_INFLIGHT];
static long failures;

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void start_call(struct call *c, int64_t due_ns)
{
    grpc_slice method = grpc_slice_from_static_string(METHOD);
    grpc_op ops[6];

    memset(ops, 0, sizeof(ops));
    memset(c, 0, sizeof(*c));
    c->due_ns = due_ns;
    atomic_store(&c->busy, 1);
    grpc_metadata_array_init(&c->initial);
    grpc_metadata_array_init(&c->trailing);
    c->call = grpc_channel_create_call(
        channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
        gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(10, GPR_TIMESPAN)), NULL);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    c->request = grpc_byte_buffer_copy(request);
    ops[1].data.send_message.send_message = c->request;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &c->initial;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &c->response;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &c->trailing;
    ops[5].data.recv_status_on_client.status = &c->status;
    ops[5].data.recv_status_on_client.status_details = &c->details;
    if (grpc_call_start_batch(c->call, ops, 6, c, NULL) != GRPC_CALL_OK) {
        fprintf(stderr, "sign_bench: cannot start a call\n");
        exit(1);
    }
}

/* Checks that a finished call carried a signature; frees it. */
static void finish_call(struct call *c)
{
    int ok = c->status == GRPC_STATUS_OK && c->response != NULL;

    if (ok) {
        grpc_byte_buffer_reader r;
        grpc_byte_buffer_reader_init(&r, c->response);
        grpc_slice all = grpc_byte_buffer_reader_readall(&r);
        V1alpha1__SignJWTResponse *resp =
            v1alpha1__sign_jwtresponse__unpack(NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
        ok = resp != NULL && resp->signature[0] != '\0' && resp->header[0] != '\0';
        v1alpha1__sign_jwtresponse__free_unpacked(resp, NULL);
        grpc_slice_unref(all);
        grpc_byte_buffer_reader_destroy(&r);
    }
    if (!ok && failures++ < 3) {
        char *why = grpc_slice_to_c_string(c->details);
        fprintf(stderr, "sign_bench: a call failed: status %d %s\n", (int)c->status, why);
        gpr_free(why);
    }
    grpc_byte_buffer_destroy(c->request);
    grpc_byte_buffer_destroy(c->response);
    grpc_slice_unref(c->details);
    grpc_metadata_array_destroy(&c->initial);
    grpc_metadata_array_destroy(&c->trailing);
    grpc_call_unref(c->call);
    atomic_store(&c->busy, 0);
}

static struct call *next_event(int64_t until_ns)
{
    gpr_timespec deadline = gpr_time_add(
        gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_nanos(until_ns > now_ns() ? until_ns - now_ns() : 0, GPR_TIMESPAN));
    grpc_event ev = grpc_completion_queue_next(cq, deadline, NULL);

    return ev.type == GRPC_OP_COMPLETE ? ev.tag : NULL;
}

static void throughput(double seconds, int concurrency)
{
    int64_t start = now_ns(), end = start + (int64_t)(seconds * 1e9);
    long done = 0;
    int inflight = 0;

    for (int i = 0; i < concurrency; i++, inflight++)
        start_call(&calls[i], start);
    while (inflight > 0) {
        struct call *c = next_event(now_ns() + 1000000000);
        if (c == NULL)
            continue;
        finish_call(c);
        done++;
        inflight--;
        if (now_ns() < end) {
            start_call(c, now_ns());
            inflight++;
        }
    }
    printf("throughput %.1f calls/s calls %ld seconds %.2f in_flight %d\n", done / ((now_ns() - start) / 1e9), done,
           (now_ns() - start) / 1e9, concurrency);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* The rate mode's schedule, for the thread that starts the calls. */
struct schedule {
    long total;
    int64_t start_ns;
    double interval_ns;
};

/* Starts call i at start + i * interval, sleeping to each due time on the
 * monotonic clock (gRPC's completion-queue deadlines are too coarse for
 * this), in slot i of the ring; a slot still busy means more than
 * MAX_INFLIGHT calls are in flight: the server is not keeping up. */
static void *starter(void *arg)
{
    const struct schedule *s = arg;

    for (long i = 0; i < s->total; i++) {
        int64_t due = s->start_ns + (int64_t)((double)i * s->interval_ns);
        struct timespec ts = {.tv_sec = due / 1000000000, .tv_nsec = due % 1000000000};
        struct call *c = &calls[i % MAX_INFLIGHT];
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
            ;
        if (atomic_load(&c->busy)) {
            fprintf(stderr, "sign_bench: more than %d calls in flight: the server is not keeping up\n", MAX_INFLIGHT);
            exit(1);
        }
        start_call(c, due);
    }
    return NULL;
}

static void rate(double seconds, double per_second)
{
    struct schedule s = {(long)(seconds * per_second), now_ns() + 10000000, 1e9 / per_second};
    int64_t *lat = calloc((size_t)s.total, sizeof(*lat));
    pthread_t thread;
    long done = 0;

    pthread_create(&thread, NULL, starter, &s);
    while (done < s.total) {
        struct call *c = next_event(now_ns() + 1000000000);
        if (c != NULL) {
            lat[done++] = now_ns() - c->due_ns;
            finish_call(c);
        }
    }
    pthread_join(thread, NULL);
    qsort(lat, (size_t)s.total, sizeof(*lat), cmp_i64);
#define PCT(p) (lat[(size_t)((double)(s.total - 1) * (p))] / 1e6)
    printf("rate %.0f calls %ld p50_ms %.3f p90_ms %.3f p99_ms %.3f p999_ms %.3f max_ms %.3f\n", per_second, s.total,
           PCT(0.5), PCT(0.9), PCT(0.99), PCT(0.999), lat[s.total - 1] / 1e6);
    free(lat);
}

int main(int argc, char **argv)
{
    V1alpha1__SignJWTRequest req = V1ALPHA1__SIGN_JWTREQUEST__INIT;
    grpc_channel_credentials *creds;
    uint8_t buf[4096];
    grpc_slice s;

    if (argc != 5 || (strcmp(argv[2], "throughput") != 0 && strcmp(argv[2], "rate") != 0)) {
        fprintf(stderr, "usage: sign_bench unix:PATH throughput SECONDS CONCURRENCY\n"
                        "       sign_bench unix:PATH rate SECONDS CALLS_PER_SECOND\n");
        return 2;
    }
    grpc_init();
    creds = grpc_insecure_credentials_create();
    channel = grpc_channel_create(argv[1], creds, NULL);
    grpc_channel_credentials_release(creds);
    cq = grpc_completion_queue_create_for_next(NULL);
    req.claims = CLAIMS;
    s = grpc_slice_from_copied_buffer((const char *)buf, v1alpha1__sign_jwtrequest__pack(&req, buf));
    request = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    if (strcmp(argv[2], "throughput") == 0)
        throughput(atof(argv[3]), atoi(argv[4]) > MAX_INFLIGHT ? MAX_INFLIGHT : atoi(argv[4]));
    else
        rate(atof(argv[3]), atof(argv[4]));
    grpc_byte_buffer_destroy(request);
    grpc_channel_destroy(channel);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
    grpc_shutdown_blocking();
    if (failures > 0) {
        fprintf(stderr, "sign_bench: %ld calls failed\n", failures);
        return 1;
    }
    return 0;
}
