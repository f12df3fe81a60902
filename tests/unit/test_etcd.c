/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/etcd.c against the canned server of http_client_test_support.h:
 * what a range, a transaction and a watch send to etcd's JSON gateway
 * (POST, base64 keys and values, 64-bit numbers as strings) and how the
 * answers are read (a range's keys decoded, a transaction's verdict, a
 * watch's stream of objects one per line, compaction), the next member
 * tried when one is down or has no quorum, and a refusal not retried.
 * The real etcd is in tests/e2e/test_signer_etcd.py.
 */
#include "http_client_test_support.h"
#include "util/etcd.h"

/* "http://127.0.0.1:<port>", a copy (canned_url's buffer is reused). */
static const char *base_of(const struct canned *s)
{
    static char url[2][64];
    static int n;
    char *u = url[n++ % 2];

    snprintf(u, 64, "http://127.0.0.1:%d", s->port);
    return u;
}

#define RANGE_ANSWER                                                                                                   \
    "{\"header\":{\"revision\":\"17\"},\"kvs\":[{\"key\":\"L3AvYQ==\",\"create_revision\":\"3\","                      \
    "\"mod_revision\":\"9\",\"version\":\"2\",\"value\":\"aGVsbG8=\"},{\"key\":\"L3AvYg==\",\"mod_revision\":\"4\"}]," \
    "\"count\":\"2\"}"

/* A response of status with the JSON body (a buffer of its own per
 * call, up to four at once). */
static char *http_answer(const char *status, const char *body)
{
    static char buf[4][4096];
    static int n;
    char *b = buf[n++ % 4];

    snprintf(b, 4096, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s", status,
             strlen(body), body);
    return b;
}

static char *http_ok(const char *body)
{
    return http_answer("200 OK", body);
}

Test(http_client, etcd_range_reads_a_prefix)
{
    struct canned *s = canned_start(http_ok(RANGE_ANSWER));
    const char *servers[] = {base_of(s)};
    const struct etcd_config cfg = {.servers = servers, .nservers = 1};
    struct etcd *e = etcd_new(&cfg);
    struct etcd_kvs kvs;
    char err[512] = "";

    canned_run(s);
    cr_assert_eq(etcd_range(e, "/p/", 1, &kvs, err, sizeof(err)), ETCD_OK, "%s", err);
    cr_expect(strncmp(s->request, "POST /v3/kv/range HTTP/1.1\r\n", 28) == 0, "%s", s->request);
    /* "/p/" and its range end "/p0" */
    cr_expect(strstr(s->request, "{\"key\":\"L3Av\",\"range_end\":\"L3Aw\"}") != NULL, "%s", s->request);
    cr_expect_eq(kvs.revision, 17);
    cr_assert_eq(kvs.count, 2);
    cr_expect_str_eq(kvs.kv[0].key, "/p/a");
    cr_expect_eq(kvs.kv[0].value_len, 5);
    cr_expect_eq(memcmp(kvs.kv[0].value, "hello", 5), 0);
    cr_expect_eq(kvs.kv[0].create_rev, 3);
    cr_expect_eq(kvs.kv[0].mod_rev, 9);
    cr_expect_str_eq(kvs.kv[1].key, "/p/b");
    cr_expect_eq(kvs.kv[1].value_len, 0, "an absent value is empty");
    etcd_kvs_free(&kvs);
    etcd_free(e);
    canned_stop(s);
}

Test(http_client, etcd_txn_sends_compares_and_reads_the_verdict)
{
    struct canned *s = canned_start(http_ok("{\"header\":{\"revision\":\"20\"},\"succeeded\":true}"));
    const char *servers[] = {base_of(s)};
    const struct etcd_config cfg = {.servers = servers, .nservers = 1};
    struct etcd *e = etcd_new(&cfg);
    const struct etcd_cmp cmp = {.key = "/p/rotation", .target = ETCD_MOD, .revision = 12};
    const struct etcd_op ops[] = {{.type = ETCD_PUT, .key = "/p/a", .value = "hi", .value_len = 2, .lease = 77},
                                  {.type = ETCD_DELETE, .key = "/p/b"}};
    int ok = 0;
    int64_t rev = 0;
    char err[512] = "";

    canned_run(s);
    cr_assert_eq(etcd_txn(e, &cmp, 1, ops, 2, &ok, &rev, err, sizeof(err)), ETCD_OK, "%s", err);
    cr_expect(ok == 1 && rev == 20);
    cr_expect(strstr(s->request,
                     "\r\n\r\n{\"compare\":[{\"key\":\"L3Avcm90YXRpb24=\",\"target\":\"MOD\","
                     "\"mod_revision\":\"12\",\"result\":\"EQUAL\"}],\"success\":[{\"request_put\":{"
                     "\"key\":\"L3AvYQ==\",\"value\":\"aGk=\",\"lease\":\"77\"}},{\"request_delete_range\":{"
                     "\"key\":\"L3AvYg==\"}}]}") != NULL,
              "%s", s->request);
    etcd_free(e);
    canned_stop(s);
}

/* A member that refuses connections is passed over; one that has no
 * quorum (HTTP 503) too; a refusal (403) ends the call, naming it. */
Test(http_client, etcd_tries_the_members_in_turn)
{
    struct canned *ok = canned_start(http_ok("{\"header\":{\"revision\":\"5\"},\"ID\":\"42\",\"TTL\":\"3\"}"));
    struct canned *noq = canned_start(
        http_answer("503 Service Unavailable", "{\"error\":\"etcdserver: request timed out\",\"code\":14}"));
    struct canned *deny =
        canned_start(http_answer("403 Forbidden", "{\"error\":\"etcdserver: permission denied\",\"code\":7}"));
    int down_port, down = listen_any(&down_port);
    char down_url[64], err[512] = "";
    int64_t id = 0;

    close(down); /* nobody listens there now */
    snprintf(down_url, sizeof(down_url), "http://127.0.0.1:%d", down_port);
    canned_run(ok);
    canned_run(noq);
    canned_run(deny);
    const char *servers[] = {down_url, base_of(noq), base_of(ok)};
    const struct etcd_config cfg = {.servers = servers, .nservers = 3};
    struct etcd *e = etcd_new(&cfg);
    cr_assert_eq(etcd_lease_grant(e, 3, &id, err, sizeof(err)), ETCD_OK, "%s", err);
    cr_expect_eq(id, 42);
    cr_expect_str_eq(etcd_current(e), servers[2], "the member that answered is tried first next time");
    etcd_free(e);

    const char *denied[] = {base_of(deny), base_of(ok)};
    const struct etcd_config cfg2 = {.servers = denied, .nservers = 2};
    e = etcd_new(&cfg2);
    cr_expect_eq(etcd_lease_grant(e, 3, &id, err, sizeof(err)), ETCD_REFUSED);
    cr_expect(strstr(err, "HTTP 403") && strstr(err, "permission denied"), "%s", err);
    etcd_free(e);
    canned_stop(ok);
    canned_stop(noq);
    canned_stop(deny);
}

struct seen {
    int answers, events, deleted;
    int64_t revision;
    char last_key[64];
};

static int on_events(void *ctx, const struct etcd_event *ev, size_t n, int64_t revision)
{
    struct seen *s = ctx;

    s->answers++;
    s->revision = revision;
    for (size_t i = 0; i < n; i++) {
        s->events++;
        s->deleted += ev[i].deleted;
        snprintf(s->last_key, sizeof(s->last_key), "%s", ev[i].kv.key);
    }
    return 0;
}

/* A watch's answer is a stream of objects, one per line; the stream's
 * end is the watch's (read again, watch again). */
Test(http_client, etcd_watch_reads_the_stream)
{
    struct canned *s = canned_start(http_ok(
        "{\"result\":{\"header\":{\"revision\":\"8\"},\"created\":true}}\n"
        "{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":[{\"kv\":{\"key\":\"L3AvYQ==\",\"mod_revision\":\"9\","
        "\"value\":\"eA==\"}}]}}\n"
        "{\"result\":{\"header\":{\"revision\":\"10\"},\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"L3AvYg==\","
        "\"mod_revision\":\"10\"}}]}}\n"));
    const char *servers[] = {base_of(s)};
    const struct etcd_config cfg = {.servers = servers, .nservers = 1};
    struct etcd *e = etcd_new(&cfg);
    struct seen seen = {0};
    char err[512] = "";

    canned_run(s);
    cr_assert_eq(etcd_watch(e, "/p/", 8, 5000, on_events, &seen, err, sizeof(err)), ETCD_OK, "%s", err);
    cr_expect(strstr(s->request,
                     "{\"create_request\":{\"key\":\"L3Av\",\"range_end\":\"L3Aw\",\"start_revision\":\"8\"}}") != NULL,
              "%s", s->request);
    cr_expect_eq(seen.answers, 3);
    cr_expect_eq(seen.events, 2);
    cr_expect_eq(seen.deleted, 1);
    cr_expect_eq(seen.revision, 10);
    cr_expect_str_eq(seen.last_key, "/p/b");
    etcd_free(e);
    canned_stop(s);
}

Test(http_client, etcd_watch_says_when_its_revision_is_compacted)
{
    struct canned *s = canned_start(
        http_ok("{\"result\":{\"header\":{\"revision\":\"50\"},\"compact_revision\":\"40\",\"canceled\":true}}\n"));
    const char *servers[] = {base_of(s)};
    const struct etcd_config cfg = {.servers = servers, .nservers = 1};
    struct etcd *e = etcd_new(&cfg);
    struct seen seen = {0};
    char err[512] = "";

    canned_run(s);
    cr_expect_eq(etcd_watch(e, "/p/", 3, 5000, on_events, &seen, err, sizeof(err)), ETCD_COMPACTED);
    cr_expect(strstr(err, "compacted") != NULL, "%s", err);
    cr_expect_eq(seen.answers, 0);
    etcd_free(e);
    canned_stop(s);
}
