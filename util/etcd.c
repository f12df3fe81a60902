/* SPDX-License-Identifier: Apache-2.0 */
#include "util/etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/http_client.h"
#include "util/json.h"
#include "util/jsonw.h"

struct etcd {
    const struct etcd_config *cfg;
    atomic_size_t current; /* the member that answered last */
};

struct etcd *etcd_new(const struct etcd_config *cfg)
{
    struct etcd *e;

    if (cfg->nservers == 0 || (e = calloc(1, sizeof(*e))) == NULL)
        return NULL;
    e->cfg = cfg;
    atomic_init(&e->current, 0);
    return e;
}

void etcd_free(struct etcd *e)
{
    free(e);
}

const char *etcd_current(const struct etcd *e)
{
    return e->cfg->servers[atomic_load(&e->current) % e->cfg->nservers];
}

/* ---- base64 (standard, padded: what the gateway writes) ----------------- */

/* Writes "name":"<base64 of n bytes>" into w. */
static void etcd_b64_member(struct jsonw *w, const char *name, const void *data, size_t n)
{
    size_t cap = 4 * ((n + 2) / 3) + 1;
    unsigned char *out = malloc(cap);

    jsonw_key(w, name);
    if (out == NULL) {
        w->sb.failed = 1;
        return;
    }
    EVP_EncodeBlock(out, data, (int)n);
    jsonw_str(w, (const char *)out);
    OPENSSL_cleanse(out, cap);
    free(out);
}

/* Decodes the base64 text s into a new NUL-terminated buffer (*len bytes
 * before the NUL). NULL when s is not base64 or out of memory. */
static unsigned char *etcd_b64_decode(const char *s, size_t *len)
{
    size_t n = strlen(s), pad = 0;
    unsigned char *out;
    int got;

    if (n % 4 != 0 || n > ETCD_ANSWER_MAX || (out = malloc(n / 4 * 3 + 1)) == NULL)
        return NULL;
    if ((got = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n)) < 0) {
        free(out);
        return NULL;
    }
    while (pad < 2 && n > pad && s[n - 1 - pad] == '=')
        pad++;
    *len = (size_t)got - pad;
    out[*len] = '\0';
    return out;
}

/* The key (and range_end for a prefix) members of a request. */
static void etcd_key_members(struct jsonw *w, const char *key, int prefix)
{
    size_t n = strlen(key);
    char *end;

    etcd_b64_member(w, "key", key, n);
    if (!prefix)
        return;
    jsonw_raw(w, ",", 1);
    if ((end = strdup(key)) == NULL || n == 0) {
        /* every key: range_end "\0" */
        etcd_b64_member(w, "range_end", "", 1);
        free(end);
        return;
    }
    while (n > 0 && (unsigned char)end[n - 1] == 0xff)
        n--;
    if (n > 0)
        end[n - 1]++;
    etcd_b64_member(w, "range_end", end, n > 0 ? n : 1);
    free(end);
}

/* ---- numbers ------------------------------------------------------------ */

/* A 64-bit number of an answer (a JSON string, or a small number); an
 * absent member is 0, as the gateway leaves out zero values. -1 when it
 * is something else. */
static int etcd_int(const struct json_value *obj, const char *name, int64_t *out)
{
    const struct json_value *v = json_get(obj, name);
    char *end;

    *out = 0;
    if (v == NULL)
        return 0;
    if (v->type == JSON_NUMBER)
        return json_whole(v, INT64_MIN / 2, INT64_MAX / 2, out);
    if (v->type != JSON_STRING || v->str[0] == '\0')
        return -1;
    errno = 0;
    *out = strtoll(v->str, &end, 10);
    return errno == 0 && *end == '\0' ? 0 : -1;
}

/* ---- one call ------------------------------------------------------------ */

/* What to tell the operator beside a TLS failure: which flag to look at. */
static const char *etcd_tls_hint(enum http_client_error he)
{
    switch (he) {
    case HTTP_CLIENT_ERR_TLS_VERIFY:
        return " (is --etcd-cafile the CA of etcd's server certificates, and the URL's host in them?)";
    case HTTP_CLIENT_ERR_TLS:
        return " (does etcd accept --etcd-certfile and --etcd-keyfile: of its --trusted-ca-file, not expired?)";
    case HTTP_CLIENT_ERR_REQUEST:
        return " (--etcd-cafile, --etcd-certfile, --etcd-keyfile)";
    default:
        return "";
    }
}

/* The gateway's message in an error answer, for err. */
static void etcd_answer_error(const struct http_response *res, const char *url, const char *path, char *err,
                              size_t errlen)
{
    char jerr[128];
    struct json_value *root = json_parse((const unsigned char *)res->body, res->body_len, jerr, sizeof(jerr));
    const char *msg = root != NULL ? json_get_str(root, "message") : NULL;

    if (msg == NULL && root != NULL)
        msg = json_get_str(root, "error");
    snprintf(err, errlen, "etcd %s%s: HTTP %d: %.200s", url, path, res->status, msg != NULL ? msg : "(no message)");
    json_free(root);
}

/* POSTs body to path on one member after another, from the current one,
 * until one answers 200; its JSON answer in *out (json_free it). With
 * on_data (a watch), the answer is streamed to it instead, and max_ms
 * bounds the stream: its end at max_ms is a success once *streamed says
 * an object came (else it was the connect that timed out). */
static enum etcd_rc etcd_post(struct etcd *e, const char *path, const char *body, size_t len, struct json_value **out,
                              int (*on_data)(void *, const char *, size_t), void *ctx, const size_t *streamed,
                              long max_ms, char *err, size_t errlen)
{
    static const char *const fields[] = {"Content-Type: application/json", "Accept: application/json", "Expect:", NULL};
    const struct etcd_config *cfg = e->cfg;
    size_t first = atomic_load(&e->current), n = cfg->nservers;
    enum etcd_rc rc = ETCD_UNREACHABLE;
    char url[1024], jerr[128];

    if (out != NULL)
        *out = NULL;
    for (size_t k = 0; k < n; k++) {
        size_t i = (first + k) % n;
        struct http_response res;
        enum http_client_error he;
        int room = snprintf(url, sizeof(url), "%s%s", cfg->servers[i], path);
        const struct http_request req = {
            .method = HTTP_POST,
            .url = url,
            .allow_http = 1,
            .ca_file = cfg->ca_file,
            .cert_file = cfg->cert_file,
            .key_file = cfg->key_file,
            .headers = fields,
            .body = body,
            .body_len = len,
            .max_body = ETCD_ANSWER_MAX,
            .timeout_ms = max_ms > 0            ? max_ms
                          : cfg->timeout_ms > 0 ? cfg->timeout_ms
                                                : ETCD_TIMEOUT_MS,
            .connect_timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : ETCD_TIMEOUT_MS,
            .cancel = cfg->cancel,
            .on_data = on_data,
            .on_data_ctx = ctx,
        };

        if (room < 0 || (size_t)room >= sizeof(url)) {
            snprintf(err, errlen, "--etcd-servers %s: URL too long", cfg->servers[i]);
            return ETCD_REFUSED;
        }
        he = http_client_fetch(&req, &res, err, errlen);
        if (he == HTTP_CLIENT_ERR_CANCELLED) {
            http_response_free(&res);
            return ETCD_CANCELLED;
        }
        if (he == HTTP_CLIENT_ERR_TIMEOUT && on_data != NULL && *streamed > 0) {
            /* a watch that ran its course */
            atomic_store(&e->current, i);
            http_response_free(&res);
            return ETCD_OK;
        }
        if (he != HTTP_CLIENT_OK) {
            size_t used = strlen(err);
            snprintf(err + used, errlen - used, "%s", etcd_tls_hint(he));
            rc = he == HTTP_CLIENT_ERR_REQUEST ? ETCD_REFUSED : ETCD_UNREACHABLE;
            http_response_free(&res);
            if (rc == ETCD_REFUSED)
                return rc;
            continue;
        }
        if (res.status != 200) {
            etcd_answer_error(&res, cfg->servers[i], path, err, errlen);
            rc = res.status >= 500 ? ETCD_UNREACHABLE : ETCD_REFUSED;
            http_response_free(&res);
            if (rc == ETCD_REFUSED)
                return rc;
            continue;
        }
        atomic_store(&e->current, i);
        rc = ETCD_OK;
        if (out != NULL &&
            (*out = json_parse((const unsigned char *)res.body, res.body_len, jerr, sizeof(jerr))) == NULL) {
            snprintf(err, errlen, "etcd %s%s: not a JSON answer: %s", cfg->servers[i], path, jerr);
            rc = ETCD_BAD_ANSWER;
        }
        http_response_free(&res);
        return rc;
    }
    return rc;
}

/* etcd_post with the request written by w (consumed). */
static enum etcd_rc etcd_call(struct etcd *e, const char *path, struct jsonw *w, struct json_value **out, char *err,
                              size_t errlen)
{
    char *body;
    size_t len;
    enum etcd_rc rc;

    if (jsonw_finish(w, &body, &len) != 0) {
        snprintf(err, errlen, "out of memory");
        return ETCD_REFUSED;
    }
    rc = etcd_post(e, path, body, len, out, NULL, NULL, NULL, 0, err, errlen);
    OPENSSL_cleanse(body, len); /* may hold a sealed key: no need to leave it around */
    free(body);
    return rc;
}

/* ---- reading answers ----------------------------------------------------- */

static void etcd_kv_clear(struct etcd_kv *kv)
{
    free(kv->key);
    if (kv->value != NULL)
        OPENSSL_cleanse(kv->value, kv->value_len);
    free(kv->value);
    memset(kv, 0, sizeof(*kv));
}

/* Reads one mvccpb.KeyValue. 0, or -1 when it is not one. */
static int etcd_kv_read(const struct json_value *v, struct etcd_kv *kv)
{
    const char *key = json_get_str(v, "key"), *value = json_get_str(v, "value");
    size_t klen = 0;

    memset(kv, 0, sizeof(*kv));
    if (v == NULL || v->type != JSON_OBJECT || key == NULL)
        return -1;
    if ((kv->key = (char *)etcd_b64_decode(key, &klen)) == NULL || strlen(kv->key) != klen ||
        (value != NULL && (kv->value = etcd_b64_decode(value, &kv->value_len)) == NULL) ||
        (value == NULL && (kv->value = calloc(1, 1)) == NULL) || etcd_int(v, "create_revision", &kv->create_rev) ||
        etcd_int(v, "mod_revision", &kv->mod_rev) || etcd_int(v, "version", &kv->version) ||
        etcd_int(v, "lease", &kv->lease)) {
        etcd_kv_clear(kv);
        return -1;
    }
    return 0;
}

/* The header's revision of an answer. */
static int etcd_revision(const struct json_value *root, int64_t *rev)
{
    return etcd_int(json_get(root, "header"), "revision", rev);
}

void etcd_kvs_free(struct etcd_kvs *kvs)
{
    for (size_t i = 0; kvs->kv != NULL && i < kvs->count; i++)
        etcd_kv_clear(&kvs->kv[i]);
    free(kvs->kv);
    memset(kvs, 0, sizeof(*kvs));
}

enum etcd_rc etcd_range(struct etcd *e, const char *key, int prefix, struct etcd_kvs *out, char *err, size_t errlen)
{
    struct jsonw w = {0};
    struct json_value *root = NULL;
    const struct json_value *kvs, *v;
    enum etcd_rc rc;
    size_t n = 0;

    memset(out, 0, sizeof(*out));
    jsonw_raw(&w, "{", 1);
    etcd_key_members(&w, key, prefix);
    jsonw_raw(&w, "}", 1);
    if ((rc = etcd_call(e, "/v3/kv/range", &w, &root, err, errlen)) != ETCD_OK)
        return rc;
    kvs = json_get(root, "kvs");
    for (v = kvs != NULL ? kvs->child : NULL; v != NULL; v = v->next)
        n++;
    if ((kvs != NULL && kvs->type != JSON_ARRAY) || etcd_revision(root, &out->revision) != 0 ||
        (out->kv = calloc(n ? n : 1, sizeof(*out->kv))) == NULL)
        rc = ETCD_BAD_ANSWER;
    for (v = kvs != NULL ? kvs->child : NULL; rc == ETCD_OK && v != NULL; v = v->next, out->count++)
        if (etcd_kv_read(v, &out->kv[out->count]) != 0)
            rc = ETCD_BAD_ANSWER;
    json_free(root);
    if (rc != ETCD_OK) {
        snprintf(err, errlen, "etcd %s/v3/kv/range: an answer that is not a range's", etcd_current(e));
        etcd_kvs_free(out);
    }
    return rc;
}

enum etcd_rc etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ops, size_t nops,
                      int *succeeded, int64_t *revision, char *err, size_t errlen)
{
    struct jsonw w = {0};
    struct json_value *root = NULL;
    const struct json_value *ok;
    enum etcd_rc rc;
    char num[32];

    jsonw_raw(&w, "{\"compare\":[", 12);
    for (size_t i = 0; i < ncmp; i++) {
        const char *target = cmp[i].target == ETCD_CREATE ? "create_revision" : "mod_revision";
        jsonw_raw(&w, i ? ",{" : "{", i ? 2 : 1);
        etcd_key_members(&w, cmp[i].key, 0);
        jsonw_lit(&w, cmp[i].target == ETCD_CREATE ? ",\"target\":\"CREATE\"," : ",\"target\":\"MOD\",");
        snprintf(num, sizeof(num), "%" PRId64, cmp[i].revision);
        jsonw_key(&w, target);
        jsonw_str(&w, num);
        jsonw_raw(&w, ",\"result\":\"EQUAL\"}", 18);
    }
    jsonw_raw(&w, "],\"success\":[", 13);
    for (size_t i = 0; i < nops; i++) {
        jsonw_raw(&w, i ? "," : "", i ? 1 : 0);
        jsonw_lit(&w, ops[i].type == ETCD_PUT ? "{\"request_put\":{" : "{\"request_delete_range\":{");
        etcd_key_members(&w, ops[i].key, 0);
        if (ops[i].type == ETCD_PUT) {
            jsonw_raw(&w, ",", 1);
            etcd_b64_member(&w, "value", ops[i].value, ops[i].value_len);
            snprintf(num, sizeof(num), "%" PRId64, ops[i].lease);
            jsonw_raw(&w, ",", 1);
            jsonw_key(&w, "lease");
            jsonw_str(&w, num);
        }
        jsonw_raw(&w, "}}", 2);
    }
    jsonw_raw(&w, "]}", 2);
    if ((rc = etcd_call(e, "/v3/kv/txn", &w, &root, err, errlen)) != ETCD_OK)
        return rc;
    ok = json_get(root, "succeeded");
    if ((ok != NULL && ok->type != JSON_BOOL) || etcd_revision(root, revision) != 0) {
        snprintf(err, errlen, "etcd %s/v3/kv/txn: an answer that is not a transaction's", etcd_current(e));
        rc = ETCD_BAD_ANSWER;
    }
    *succeeded = ok != NULL && ok->boolean;
    json_free(root);
    return rc;
}

enum etcd_rc etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id, char *err, size_t errlen)
{
    struct jsonw w = {0};
    struct json_value *root = NULL;
    enum etcd_rc rc;
    char num[32];

    snprintf(num, sizeof(num), "%" PRId64, ttl_s);
    jsonw_raw(&w, "{\"TTL\":", 7);
    jsonw_str(&w, num);
    jsonw_raw(&w, "}", 1);
    if ((rc = etcd_call(e, "/v3/lease/grant", &w, &root, err, errlen)) != ETCD_OK)
        return rc;
    if (etcd_int(root, "ID", id) != 0 || *id == 0) {
        snprintf(err, errlen, "etcd %s/v3/lease/grant: no lease in the answer (%.100s)", etcd_current(e),
                 json_get_str(root, "error") ? json_get_str(root, "error") : "");
        rc = ETCD_BAD_ANSWER;
    }
    json_free(root);
    return rc;
}

/* The body of a lease request: {"ID":"<id>"}. */
static void etcd_lease_body(struct jsonw *w, int64_t id)
{
    char num[32];

    snprintf(num, sizeof(num), "%" PRId64, id);
    jsonw_raw(w, "{\"ID\":", 6);
    jsonw_str(w, num);
    jsonw_raw(w, "}", 1);
}

enum etcd_rc etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s, char *err, size_t errlen)
{
    struct jsonw w = {0};
    struct json_value *root = NULL;
    enum etcd_rc rc;

    etcd_lease_body(&w, id);
    if ((rc = etcd_call(e, "/v3/lease/keepalive", &w, &root, err, errlen)) != ETCD_OK)
        return rc;
    /* a stream of one answer: {"result":{...,"TTL":"5"}} (no TTL: expired) */
    if (json_get(root, "result") == NULL || etcd_int(json_get(root, "result"), "TTL", ttl_s) != 0) {
        snprintf(err, errlen, "etcd %s/v3/lease/keepalive: %.200s", etcd_current(e),
                 json_get_str(json_get(root, "error"), "message") ? json_get_str(json_get(root, "error"), "message")
                                                                  : "an answer that is not a keepalive's");
        rc = ETCD_BAD_ANSWER;
    }
    json_free(root);
    return rc;
}

enum etcd_rc etcd_lease_revoke(struct etcd *e, int64_t id, char *err, size_t errlen)
{
    struct jsonw w = {0};
    struct json_value *root = NULL;
    enum etcd_rc rc;

    etcd_lease_body(&w, id);
    rc = etcd_call(e, "/v3/lease/revoke", &w, &root, err, errlen);
    json_free(root);
    return rc;
}

/* ---- watch --------------------------------------------------------------- */

/* A watch's stream, split into its objects (one per line). */
struct etcd_stream {
    struct etcd *e;
    etcd_watch_cb cb;
    void *ctx;
    char *line;
    size_t len, cap;
    size_t objects;  /* read so far */
    enum etcd_rc rc; /* set when the stream stopped for a reason of its own */
    char why[512];   /* and why (the HTTP client's message of the stop would say only that it stopped) */
};

/* Hands one object of the stream to the callback. 0 to go on, -1 to stop
 * (s->rc says why). */
static int etcd_stream_object(struct etcd_stream *s, const char *text, size_t len)
{
    char jerr[128];
    struct json_value *root = json_parse((const unsigned char *)text, len, jerr, sizeof(jerr));
    const struct json_value *res = json_get(root, "result"), *evs = json_get(res, "events"), *v;
    struct etcd_event *ev = NULL;
    int64_t rev = 0, compacted = 0;
    size_t n = 0, i = 0;
    int rc = -1;

    if (res == NULL || etcd_revision(res, &rev) != 0 || etcd_int(res, "compact_revision", &compacted) != 0) {
        snprintf(s->why, sizeof(s->why), "etcd %s/v3/watch: %.200s", etcd_current(s->e),
                 root != NULL && json_get_str(json_get(root, "error"), "message") != NULL
                     ? json_get_str(json_get(root, "error"), "message")
                     : "an answer that is not a watch's");
        s->rc = ETCD_BAD_ANSWER;
        goto out;
    }
    if (compacted != 0) {
        snprintf(s->why, sizeof(s->why), "etcd %s/v3/watch: revisions up to %" PRId64 " have been compacted",
                 etcd_current(s->e), compacted);
        s->rc = ETCD_COMPACTED;
        goto out;
    }
    if (json_get(res, "canceled") != NULL && json_get(res, "canceled")->boolean) {
        snprintf(s->why, sizeof(s->why), "etcd %s/v3/watch: cancelled by etcd: %.200s", etcd_current(s->e),
                 json_get_str(res, "cancel_reason") ? json_get_str(res, "cancel_reason") : "");
        s->rc = ETCD_UNREACHABLE;
        goto out;
    }
    for (v = evs != NULL ? evs->child : NULL; v != NULL; v = v->next)
        n++;
    if ((ev = calloc(n ? n : 1, sizeof(*ev))) == NULL) {
        s->rc = ETCD_BAD_ANSWER;
        goto out;
    }
    for (v = evs != NULL ? evs->child : NULL; v != NULL; v = v->next, i++) {
        const char *type = json_get_str(v, "type");
        ev[i].deleted = type != NULL && strcmp(type, "DELETE") == 0;
        if (etcd_kv_read(json_get(v, "kv"), &ev[i].kv) != 0) {
            snprintf(s->why, sizeof(s->why), "etcd %s/v3/watch: an event that is not one", etcd_current(s->e));
            s->rc = ETCD_BAD_ANSWER;
            goto out;
        }
    }
    if (s->cb(s->ctx, ev, n, rev) != 0) {
        snprintf(s->why, sizeof(s->why), "watch stopped");
        s->rc = ETCD_CANCELLED;
        goto out;
    }
    rc = 0;
out:
    for (size_t k = 0; ev != NULL && k < n; k++)
        etcd_kv_clear(&ev[k].kv);
    free(ev);
    json_free(root);
    return rc;
}

/* http_client's on_data: collects lines, each an object, capped at
 * ETCD_ANSWER_MAX. */
static int etcd_stream_data(void *ctx, const char *data, size_t len)
{
    struct etcd_stream *s = ctx;

    for (size_t i = 0; i < len; i++) {
        if (data[i] == '\n') {
            int rc = s->len > 0 ? etcd_stream_object(s, s->line, s->len) : 0;
            s->objects += s->len > 0;
            s->len = 0;
            if (rc != 0)
                return -1;
            continue;
        }
        if (s->len + 1 >= s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 16384;
            char *p;
            if (cap > ETCD_ANSWER_MAX || (p = realloc(s->line, cap)) == NULL) {
                snprintf(s->why, sizeof(s->why), "etcd %s/v3/watch: an answer over %d bytes", etcd_current(s->e),
                         ETCD_ANSWER_MAX);
                s->rc = ETCD_BAD_ANSWER;
                return -1;
            }
            s->line = p;
            s->cap = cap;
        }
        s->line[s->len++] = data[i];
    }
    return 0;
}

enum etcd_rc etcd_watch(struct etcd *e, const char *prefix, int64_t start_rev, long max_ms, etcd_watch_cb cb, void *ctx,
                        char *err, size_t errlen)
{
    struct etcd_stream s = {.e = e, .cb = cb, .ctx = ctx, .rc = ETCD_OK};
    struct jsonw w = {0};
    enum etcd_rc rc;
    char num[32], *body;
    size_t len;

    snprintf(num, sizeof(num), "%" PRId64, start_rev);
    jsonw_raw(&w, "{\"create_request\":{", 19);
    etcd_key_members(&w, prefix, 1);
    jsonw_raw(&w, ",\"start_revision\":", 18);
    jsonw_str(&w, num);
    jsonw_raw(&w, "}}", 2);
    if (jsonw_finish(&w, &body, &len) != 0) {
        snprintf(err, errlen, "out of memory");
        return ETCD_REFUSED;
    }
    rc = etcd_post(e, "/v3/watch", body, len, NULL, etcd_stream_data, &s, &s.objects, max_ms, err, errlen);
    free(body);
    free(s.line);
    if ((rc == ETCD_CANCELLED || rc == ETCD_OK) && s.rc != ETCD_OK) {
        snprintf(err, errlen, "%s", s.why);
        return s.rc;
    }
    return rc;
}
