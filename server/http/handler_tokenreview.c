/* SPDX-License-Identifier: Apache-2.0 */
#include "server/http/handler_tokenreview.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jose/review.h"
#include "jose/tokenreview.h"
#include "util/paths.h"
#include "server/http/request_log.h"
#include "server/obs/metrics.h"
#include "server/conn/worker.h"
#include "util/log.h"

/* Successful verifications (reviews and callers' tokens) remembered per
 * thread: Vault re-reviews the same token on every login and sends the
 * same reviewer token every time. */
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

/* Counts the signature checks a verification cost, and one the cache
 * answered, or the cache's size after a fresh success stored one. */
static void tokenreview_count_cache(struct metrics_thread *m, const struct review *rv, const struct review_result *res)
{
    metrics_add(&m->signature_checks, res->token.signature_checks);
    if (res->cached)
        metrics_add(&m->cache_hits, 1);
    else if (res->user != NULL && rv->cache != NULL)
        atomic_store_explicit(&m->cache_entries, vcache_size(rv->cache), memory_order_relaxed);
}

/* Who calls, as kube-apiserver's authenticators find out: a verified
 * client certificate first (its subject), else the bearer token of the
 * Authorization header, verified as a review would (the same keys and
 * cache). The caller's name goes to the access log. */
static enum review_caller tokenreview_caller(struct review *rv, struct metrics_thread *m, const struct verifier *v,
                                             h2o_req_t *req, const char **name)
{
    char *subject;
    size_t len = worker_client_subject(req, &subject);
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    struct review_result res;
    enum review_caller who = REVIEW_CALLER_UNAUTHENTICATED;
    const char *token;

    if (len > 0) {
        who = review_caller_allowed(rv, subject);
        *name = subject;
    } else if (i >= 0 && (len = review_bearer(req->headers.entries[i].value.base, req->headers.entries[i].value.len,
                                              &token)) > 0) {
        who = review_caller_token(rv, v, token, len, time(NULL), &res);
        tokenreview_count_cache(m, rv, &res);
        if (res.user != NULL)
            *name = h2o_strdup(&req->pool, res.user->username, SIZE_MAX).base;
        review_result_clear(&res);
    }
    if (who != REVIEW_CALLER_UNAUTHENTICATED)
        request_log_caller(req, *name, strlen(*name));
    return who;
}

/* Answers a caller that may not call: 401 without valid credentials, 403
 * for one not allowed, both with kube-apiserver's Status bodies. */
static int tokenreview_refuse_caller(h2o_req_t *req, struct metrics_thread *m, enum review_caller who, const char *name)
{
    size_t len;
    char *body;

    if (who == REVIEW_CALLER_UNAUTHENTICATED) {
        metrics_add(&m->review_outcomes[METRICS_REVIEW_UNAUTHENTICATED], 1);
        body = tokenreview_render_unauthorized(&len);
        return tokenreview_send(req, 401, "Unauthorized", body, len);
    }
    metrics_add(&m->review_outcomes[METRICS_REVIEW_FORBIDDEN], 1);
    body = tokenreview_render_forbidden(name, &len);
    return tokenreview_send(req, 403, "Forbidden", body, len);
}

/* Reviews one token with the thread's review (its cache answers a token
 * seen before), counts the result and renders the answer; NULL when out
 * of memory. */
static char *tokenreview_answer(struct review *rv, struct metrics_thread *m, const struct verifier *v,
                                const struct tokenreview_request *req, size_t *out_len)
{
    struct review_result res;
    char *body;

    review_token(rv, v, req->token, strlen(req->token), req->audiences, req->naudiences, time(NULL), &res);
    tokenreview_count_cache(m, rv, &res);
    metrics_add(&m->reviews[res.token.error], 1);
    metrics_add(&m->review_outcomes[res.user != NULL ? METRICS_REVIEW_AUTHENTICATED : METRICS_REVIEW_NOT_AUTHENTICATED],
                1);
    body = tokenreview_render(req, res.user, res.token.message, out_len);
    review_result_clear(&res);
    return body;
}

/* As kube-apiserver: the caller is authenticated (401) and authorised
 * (403) before anything else is looked at, so that somebody without
 * credentials learns nothing, not even which paths exist, and costs no
 * more than one token verification. */
static int tokenreview_on_req(h2o_handler_t *super, h2o_req_t *req)
{
    struct review *rv = h2o_context_get_handler_context(req->conn->ctx, super);
    struct metrics_thread *m = worker_metrics(req->conn->ctx);
    const struct verifier *v;
    struct tokenreview_request review;
    const struct snapshot *snap;
    enum review_caller who;
    const char *name = NULL;
    char err[256], *body;
    size_t len;

    if (rv == NULL) /* the thread could not set its review up */
        return tokenreview_send(req, 503, "Service Unavailable", NULL, 0);
    /* An --upstream not read yet: no key is known, so neither a caller's
     * token nor the reviewed one can be checked; "unauthorized" or "not
     * authenticated" would be a wrong answer, not a late one. */
    if ((snap = worker_pin_snapshot(req))->unavailable)
        return tokenreview_refuse(req, 503, "ServiceUnavailable", "no keys are published yet; retry later");
    v = snap->verifier;
    if ((who = tokenreview_caller(rv, m, v, req, &name)) != REVIEW_CALLER_ALLOWED)
        return tokenreview_refuse_caller(req, m, who, name);
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
    body = tokenreview_answer(rv, m, v, &review, &len);
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
