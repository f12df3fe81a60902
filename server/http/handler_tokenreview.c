#include "server/http/handler_tokenreview.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jose/review.h"
#include "publish/paths.h"
#include "server/obs/metrics.h"
#include "jose/tokenreview.h"
#include "server/worker.h"
#include "util/log.h"

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

/* Reviews one token with the thread's review (its cache answers a token
 * seen before), counts the result and renders the answer; NULL when out
 * of memory. */
static char *tokenreview_answer(struct review *rv, struct metrics_thread *m, const struct verifier *v,
                                const struct tokenreview_request *req, size_t *out_len)
{
    struct review_result res;
    char *body;

    if (rv == NULL)
        return NULL; /* the thread could not set its review up */
    review_token(rv, v, req->token, strlen(req->token), req->audiences, req->naudiences, time(NULL), &res);
    if (res.cached)
        metrics_add(&m->cache_hits, 1);
    else if (res.user != NULL && rv->cache != NULL)
        atomic_store_explicit(&m->cache_entries, vcache_size(rv->cache), memory_order_relaxed);
    metrics_add(&m->reviews[res.token.error], 1);
    body = tokenreview_render(req, res.user, res.token.message, out_len);
    review_result_clear(&res);
    return body;
}

static int tokenreview_on_req(h2o_handler_t *super, h2o_req_t *req)
{
    struct review *rv = h2o_context_get_handler_context(req->conn->ctx, super);
    struct tokenreview_request review;
    const struct snapshot *snap;
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
    /* An --upstream not read yet: no key is known, and "not authenticated"
     * would be a wrong answer, not a late one. */
    if ((snap = worker_pin_snapshot(req))->unavailable) {
        tokenreview_request_clear(&review);
        return tokenreview_refuse(req, 503, "ServiceUnavailable", "no keys are published yet; retry later");
    }
    body = tokenreview_answer(rv, worker_metrics(req->conn->ctx), snap->verifier, &review, &len);
    tokenreview_request_clear(&review);
    return tokenreview_send(req, 201, "Created", body, len);
}

/* Each thread reviews with its own struct review (and cache). Out of
 * memory here, the thread answers its reviews 503. */
static void tokenreview_on_context_init(h2o_handler_t *super, h2o_context_t *ctx)
{
    struct handler_tokenreview *self = (struct handler_tokenreview *)super;
    struct review *rv = malloc(sizeof(*rv));

    if (rv != NULL && review_init(rv, self->cfg, NULL, TOKENREVIEW_CACHE_SIZE) != 0) {
        free(rv);
        rv = NULL;
    }
    if (rv == NULL)
        log_msg(LOG_ERROR, "out of memory: a thread's TokenReview requests will be answered 503");
    h2o_context_set_handler_context(ctx, super, rv);
}

static void tokenreview_on_context_dispose(h2o_handler_t *super, h2o_context_t *ctx)
{
    struct review *rv = h2o_context_get_handler_context(ctx, super);

    if (rv != NULL)
        review_clear(rv);
    free(rv);
}

void handler_tokenreview_register(h2o_pathconf_t *pathconf, const struct config *cfg)
{
    struct handler_tokenreview *self = (void *)h2o_create_handler(pathconf, sizeof(*self));

    self->super.on_req = tokenreview_on_req;
    self->super.on_context_init = tokenreview_on_context_init;
    self->super.on_context_dispose = tokenreview_on_context_dispose;
    self->cfg = cfg;
}
