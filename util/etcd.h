/* SPDX-License-Identifier: Apache-2.0 */
/*
 * etcd: a client of etcd's v3 API through its JSON gateway (grpc-gateway,
 * served on every etcd client URL from 3.4 on: /v3/kv/range, /v3/kv/txn,
 * /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke, /v3/watch),
 * over util/http_client.h (libcurl).
 *
 * Why the gateway and not etcd's gRPC API: the gateway is etcd's own
 * protocol stack too (the same handlers, the same auth, the same TLS with
 * client certificates kube-apiserver uses), it needs no generated code and
 * no HTTP/2 client (this program has nghttp2 only as a server, for the
 * external signer), and libcurl already gives the policy every outgoing
 * request of this program follows: TLS 1.2+, verified peers, bounded
 * bodies and headers, timeouts, cancellation, files read without
 * blocking. The few things it does here are one POST and one JSON answer
 * per call, and one long POST whose answer is a stream of JSON objects
 * (a watch), each on its own line. Keys and values are base64 in the JSON;
 * 64-bit numbers are JSON strings.
 *
 * Every call is bounded: a whole-request timeout, an answer of at most
 * ETCD_ANSWER_MAX bytes (a watch: each object), and each --etcd-servers
 * URL tried in turn, starting with the one that answered last, so a
 * member that is down costs one connect timeout once, not at every call.
 * A member that answers with an error of the cluster (no leader, timed
 * out: HTTP 5xx) counts as unreachable and the next is tried; one that
 * refuses the request (4xx: permission, a bad request) does not.
 *
 * Thread-safety: one struct etcd may be used by several threads at once;
 * only the index of the member last used is shared (atomic).
 */
#ifndef OIDC_ETCD_H
#define OIDC_ETCD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* One call's timeout, unless the configuration says otherwise. */
#define ETCD_TIMEOUT_MS 3000

/* An answer (or one object of a watch) larger than this is refused. */
#define ETCD_ANSWER_MAX (4 * 1024 * 1024)

/* At most this many --etcd-servers URLs. */
#define ETCD_SERVERS_MAX 16

struct etcd_config {
    const char *const *servers; /* "https://host:port" (http:// too, for a member without TLS) */
    size_t nservers;
    const char *ca_file, *cert_file, *key_file; /* --etcd-cafile, --etcd-certfile, --etcd-keyfile, or NULL */
    long timeout_ms;                            /* each call; 0: ETCD_TIMEOUT_MS */
    const atomic_int *cancel;                   /* a call stops when it turns non-zero, or NULL */
};

/* What a call ended with. */
enum etcd_rc {
    ETCD_OK = 0,
    ETCD_UNREACHABLE, /* no member answered, or each answered with an error of the cluster (no quorum) */
    ETCD_REFUSED,     /* a member refused the request (permission denied, bad request) */
    ETCD_BAD_ANSWER,  /* an answer that is not what etcd sends */
    ETCD_COMPACTED,   /* a watch's start revision has been compacted: read everything again */
    ETCD_CANCELLED,
};

/* One key of a range, or of a watch event. */
struct etcd_kv {
    char *key; /* NUL-terminated (a key with a NUL byte is refused) */
    unsigned char *value;
    size_t value_len;
    int64_t create_rev, mod_rev, version, lease;
};

struct etcd_kvs {
    struct etcd_kv *kv;
    size_t count;
    int64_t revision; /* the store's revision the range was read at */
};

struct etcd;

/* A client for cfg, which must outlive it (its strings are not copied).
 * NULL when out of memory or cfg has no servers. */
struct etcd *etcd_new(const struct etcd_config *cfg);

void etcd_free(struct etcd *e);

/* The URL the last call went to (for messages: redact_url'd by the
 * caller's message). */
const char *etcd_current(const struct etcd *e);

/* Reads key, or with prefix set every key starting with key, into *out
 * (etcd_kvs_free it), in key order. Linearizable: a member without quorum
 * does not answer. */
enum etcd_rc etcd_range(struct etcd *e, const char *key, int prefix, struct etcd_kvs *out, char *err, size_t errlen);

void etcd_kvs_free(struct etcd_kvs *kvs);

/* A comparison of a transaction: key's create or mod revision equals
 * revision (a create revision of 0: the key does not exist). */
enum etcd_target { ETCD_CREATE, ETCD_MOD };
struct etcd_cmp {
    const char *key;
    enum etcd_target target;
    int64_t revision;
};

/* An operation of a transaction: put value (with lease, or 0) at key, or
 * delete key. */
enum etcd_op_type { ETCD_PUT, ETCD_DELETE };
struct etcd_op {
    enum etcd_op_type type;
    const char *key;
    const void *value;
    size_t value_len;
    int64_t lease;
};

/* If every comparison holds, does every operation, atomically. ETCD_OK
 * with *succeeded (1: done; 0: a comparison failed, nothing done) and
 * *revision the store's revision after it. */
enum etcd_rc etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ops, size_t nops,
                      int *succeeded, int64_t *revision, char *err, size_t errlen);

/* A new lease of ttl_s seconds: its id in *id. */
enum etcd_rc etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id, char *err, size_t errlen);

/* Renews lease id; *ttl_s is what is left of it then, 0 when it has
 * expired (or was revoked): a new one is needed. */
enum etcd_rc etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s, char *err, size_t errlen);

/* Ends lease id now (its keys are deleted). */
enum etcd_rc etcd_lease_revoke(struct etcd *e, int64_t id, char *err, size_t errlen);

/* An event of a watch: a put or a delete (kv holds the key and its mod
 * revision then). */
struct etcd_event {
    int deleted;
    struct etcd_kv kv;
};

/* Called for each answer of a watch: its events (n may be 0: the watch
 * was created, or a progress report) and the store's revision as of it.
 * Returns 0 to go on, anything else to stop the watch (ETCD_CANCELLED). */
typedef int (*etcd_watch_cb)(void *ctx, const struct etcd_event *ev, size_t n, int64_t revision);

/* Watches every key starting with prefix from revision start_rev on, for
 * at most max_ms, handing the events to cb. Returns ETCD_OK when max_ms
 * passed (watch again from the last revision + 1), ETCD_COMPACTED when
 * start_rev is gone (read the prefix again and watch from its revision),
 * or an error: the stream broke, no member answered. */
enum etcd_rc etcd_watch(struct etcd *e, const char *prefix, int64_t start_rev, long max_ms, etcd_watch_cb cb, void *ctx,
                        char *err, size_t errlen);

#endif
