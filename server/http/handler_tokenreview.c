#include "server/http/handler_tokenreview.h"

#include <string.h>
#include <time.h>

#include "jose/token.h"
#include "jose/vcache.h"
#include "publish/paths.h"
#include "server/obs/metrics.h"
#include "jose/tokenreview.h"
#include "server/worker.h"

/* Successful reviews remembered per thread: Vault re-reviews the same
 * token on every login. */
#define TOKENREVIEW_CACHE_SIZE 4096

struct handler_tokenreview {
    h2o_handler_t super;
    const struct config *cfg;
};

static h2o_generator_t tokenreview_generator = {NULL, NULL};

/* Sends body (malloc'ed, handed to the request's pool for freeing). */
static int tokenreview_send(h2o_req_t *req, int status, const char *reason, char *body, size_t len)
{
    if (body == NULL) {
        h2o_send_error_503(req, "Service Unavailable", "out of memory", 0);
        return 0;
    }
    req->res.status = status;
    req->res.reason = reason;
    req->res.content_length = len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    h2o_iovec_t buf = h2o_strdup(&req->pool, body, len);
    free(body);
    h2o_start_response(req, &tokenreview_generator);
    h2o_send(req, &buf, 1, H2O_SEND_STATE_FINAL);
    return 0;
}

static int tokenreview_refuse(h2o_req_t *req, int status, const char *reason, const char *message)
{
    size_t len;
    char *body = tokenreview_render_status(status, reason, message, &len);
    return tokenreview_send(req, status, reason, body, len);
}

/* Accepts application/json, with parameters (charset) or not. */
static int tokenreview_is_json(h2o_req_t *req)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    h2o_iovec_t v;

    if (i < 0)
        return 0;
    v = req->headers.entries[i].value;
    return v.len >= 16 && h2o_lcstris(v.base, 16, H2O_STRLIT("application/json")) &&
           (v.len == 16 || v.base[16] == ';' || v.base[16] == ' ');
}

/* The verification policy of one review: the request's audiences when it
 * names some, else the API audiences: --api-audiences, else the issuers (as
 * kube-apiserver), which a token without aud is taken to carry. */
static void tokenreview_policy(const struct config *cfg, const struct tokenreview_request *r, struct token_policy *p)
{
    memset(p, 0, sizeof(*p));
    p->issuers = cfg->issuers.items;
    p->nissuers = cfg->issuers.count;
    p->api_audiences = cfg->api_audiences.count > 0 ? cfg->api_audiences.items : cfg->issuers.items;
    p->napi_audiences = cfg->api_audiences.count > 0 ? cfg->api_audiences.count : cfg->issuers.count;
    p->audiences = r->naudiences > 0 ? r->audiences : p->api_audiences;
    p->naudiences = r->naudiences > 0 ? r->naudiences : p->napi_audiences;
    p->algs = TOKEN_ALG_ALL;
    p->leeway = cfg->token_leeway;
    p->max_size = cfg->max_token_size;
    p->accept_legacy = cfg->accept_legacy_tokens;
    p->now = time(NULL);
}

/* Reviews one token through the thread's cache (a hit skips the signature
 * check) and renders the answer. */
static char *tokenreview_answer(struct vcache *cache, struct metrics_thread *m, const struct keyset *ks,
                                const struct token_policy *p, const struct tokenreview_request *review, size_t *out_len)
{
    size_t len = strlen(review->token);
    const struct token_user *hit = vcache_get(cache, ks->id, review->token, len, p->audiences, p->naudiences, p->now);
    struct token_result res;
    char *body;

    if (hit != NULL) {
        metrics_add(&m->cache_hits, 1);
        metrics_add(&m->reviews[TOKEN_OK], 1);
        return tokenreview_render(review, hit, NULL, out_len);
    }
    if (token_verify(ks, p, review->token, len, &res) == 0) {
        vcache_put(cache, ks->id, review->token, len, p->audiences, p->naudiences, &res.user);
        atomic_store_explicit(&m->cache_entries, vcache_size(cache), memory_order_relaxed);
    }
    metrics_add(&m->reviews[res.error], 1);
    body = tokenreview_render(review, res.error == TOKEN_OK ? &res.user : NULL, res.message, out_len);
    token_result_clear(&res);
    return body;
}

static int tokenreview_on_req(h2o_handler_t *super, h2o_req_t *req)
{
    struct handler_tokenreview *self = (struct handler_tokenreview *)super;
    struct vcache *cache = h2o_context_get_handler_context(req->conn->ctx, super);
    struct tokenreview_request review;
    struct token_policy policy;
    char err[256], *body;
    size_t len;

    if (!h2o_memis(req->path_normalized.base, req->path_normalized.len, H2O_STRLIT(PATHS_TOKENREVIEW)))
        return tokenreview_refuse(req, 404, "NotFound", "the server could not find the requested resource");
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST"));
        return tokenreview_refuse(req, 405, "MethodNotAllowed", "only POST is allowed");
    }
    if (!tokenreview_is_json(req))
        return tokenreview_refuse(req, 415, "UnsupportedMediaType", "Content-Type must be application/json");
    if (tokenreview_parse(req->entity.base, req->entity.len, &review, err, sizeof(err)) != 0)
        return tokenreview_refuse(req, 400, "BadRequest", err);
    tokenreview_policy(self->cfg, &review, &policy);
    body = tokenreview_answer(cache, worker_metrics(req->conn->ctx), worker_pin_snapshot(req)->keyset, &policy, &review,
                              &len);
    tokenreview_request_clear(&review);
    return tokenreview_send(req, 201, "Created", body, len);
}

static void tokenreview_on_context_init(h2o_handler_t *super, h2o_context_t *ctx)
{
    h2o_context_set_handler_context(ctx, super, vcache_create(TOKENREVIEW_CACHE_SIZE));
}

static void tokenreview_on_context_dispose(h2o_handler_t *super, h2o_context_t *ctx)
{
    vcache_free(h2o_context_get_handler_context(ctx, super));
}

void handler_tokenreview_register(h2o_pathconf_t *pathconf, const struct config *cfg)
{
    struct handler_tokenreview *self = (void *)h2o_create_handler(pathconf, sizeof(*self));

    self->super.on_req = tokenreview_on_req;
    self->super.on_context_init = tokenreview_on_context_init;
    self->super.on_context_dispose = tokenreview_on_context_dispose;
    self->cfg = cfg;
}
