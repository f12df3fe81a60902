/* SPDX-License-Identifier: Apache-2.0 */
#include "server/http/handler_tokenreview.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jose/bound.h"
#include "jose/review.h"
#include "jose/token_iss.h"
#include "jose/token_user.h"
#include "jose/tokenreview.h"
#include "publish/routes.h"
#include "util/clock.h"
#include "util/paths.h"
#include "server/http/request_log.h"
#include "server/obs/metrics.h"
#include "server/reload/bound_lookup.h"
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

/* One thread's reviewing: its review (and cache), and with
 * --token-review-check-bound-objects the receiver through which the
 * lookup threads hand back the reviews that waited for objects. */
struct tokenreview_thread {
    struct review rv;
    const struct config *cfg;
    int bound;
    h2o_multithread_receiver_t receiver;
};

/* A review waiting for its bound objects, off the event loop: everything
 * its answer needs, owned here. req is NULL once the request is gone (its
 * client left): the answer is then dropped when it comes. */
struct tokenreview_pending {
    struct bound_wait wait; /* filled by the lookup threads */
    h2o_multithread_message_t msg;
    struct tokenreview_thread *thread;
    h2o_req_t *req;
    struct tokenreview_pending **link; /* in req's pool: cleared when the request is disposed */
    struct tokenreview_request review;
    struct token_user user;
    struct bound_claims claims;
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

/* Whose keys and policy a token is verified with. For one issuer, the
 * snapshot's keys and the review's own issuers (scope NULL). For a fleet
 * (top routes), the issuer the token's unverified iss names exactly, so
 * that each issuer's tokens are held to its own keys and audiences; a
 * token naming none of them gets no verifier and a reason in why. */
struct tokenreview_issuer {
    const struct verifier *v;
    const struct review_scope *scope;
    struct review_scope own; /* what scope points to in a fleet */
};

/* Fills is for token (len bytes) under the pinned snapshot top. Returns
 * 0; -1 with why (a TokenReview's error) when the token names no issuer
 * of the fleet; -2 when its issuer has no keys yet (answered 503). */
static int tokenreview_issuer_of(const struct snapshot *top, const char *token, size_t len,
                                 struct tokenreview_issuer *is, char *why, size_t whylen)
{
    const struct routes_issuer *ri;
    char iss[512];
    long n;

    memset(is, 0, sizeof(*is));
    if (top->routes == NULL) {
        is->v = top->verifier;
        return 0;
    }
    if ((n = token_iss_peek(token, len, iss, sizeof(iss))) < 0) {
        snprintf(why, whylen, "token names no issuer this server reviews for (no readable iss claim)");
        return -1;
    }
    if ((ri = routes_find_issuer(top->routes, iss, (size_t)n)) == NULL) {
        iss[strcspn(iss, "\"\\\r\n")] = '\0'; /* a reason quotes it, cut at a character it cannot show */
        snprintf(why, whylen, "token issuer \"%.180s\" is not an issuer this server reviews for", iss);
        return -1;
    }
    if (ri->snap->unavailable || ri->snap->verifier == NULL)
        return -2;
    is->own = (struct review_scope){ri->issuer, ri->audiences, ri->naudiences};
    is->scope = &is->own;
    is->v = ri->snap->verifier;
    return 0;
}

/* Who calls, as kube-apiserver's authenticators find out: a verified
 * client certificate first (its subject), else the bearer token of the
 * Authorization header, verified as a review would (the same keys and
 * cache; in a fleet, those of the issuer it names). The caller's name
 * goes to the access log. */
static enum review_caller tokenreview_caller(struct review *rv, struct metrics_thread *m, const struct snapshot *top,
                                             h2o_req_t *req, const char **name)
{
    char *subject;
    size_t len = worker_client_subject(req, &subject);
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    struct review_result res;
    struct tokenreview_issuer is;
    enum review_caller who = REVIEW_CALLER_UNAUTHENTICATED;
    const char *token;
    char why[8];

    if (len > 0) {
        who = review_caller_allowed(rv, subject);
        *name = subject;
    } else if (i >= 0 &&
               (len = review_bearer(req->headers.entries[i].value.base, req->headers.entries[i].value.len, &token)) >
                   0 &&
               tokenreview_issuer_of(top, token, len, &is, why, sizeof(why)) == 0) {
        who = is.scope != NULL ? review_caller_token_in(rv, is.scope, is.v, token, len, time(NULL), &res)
                               : review_caller_token(rv, is.v, token, len, time(NULL), &res);
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

/* Counts a review's result and answers it 201: user authenticated, or
 * refused with message (error: the token's; bound: the bound-object
 * check's reason, BOUND_OK when it did not refuse). */
static int tokenreview_finish(h2o_req_t *req, struct metrics_thread *m, const struct tokenreview_request *review,
                              const struct token_user *user, enum token_error error, enum bound_reason bound,
                              const char *message)
{
    size_t len;
    char *body;

    if (bound != BOUND_OK)
        metrics_add(&m->bound_refused[bound], 1);
    else
        metrics_add(&m->reviews[error], 1);
    metrics_add(&m->review_outcomes[user != NULL ? METRICS_REVIEW_AUTHENTICATED : METRICS_REVIEW_NOT_AUTHENTICATED], 1);
    body = tokenreview_render(review, user, message, &len);
    return tokenreview_send(req, 201, "Created", body, len);
}

/* Answers a review whose bound objects are all known (objs), as
 * kube-apiserver would. */
static int tokenreview_judge(h2o_req_t *req, struct metrics_thread *m, const struct tokenreview_request *review,
                             const struct token_user *user, const struct bound_claims *c,
                             const struct bound_object *objs)
{
    enum bound_reason why;
    char msg[512];

    if (bound_judge(c, objs, time(NULL), &why, msg, sizeof(msg)) != 0)
        return tokenreview_finish(req, m, review, NULL, TOKEN_OK, why, msg);
    return tokenreview_finish(req, m, review, user, TOKEN_OK, BOUND_OK, NULL);
}

/* Frees a pending review (on its thread); its request, if any, is answered. */
static void tokenreview_pending_free(struct tokenreview_pending *p)
{
    if (p->req != NULL)
        *p->link = NULL;
    tokenreview_request_clear(&p->review);
    token_user_clear(&p->user);
    free(p);
}

/* The request of a pending review is gone: its answer will be dropped. */
static void tokenreview_on_dispose(void *arg)
{
    struct tokenreview_pending **link = arg;

    if (*link != NULL)
        (*link)->req = NULL;
}

/* On a lookup thread: the objects are known; the review goes back to its
 * event loop's thread. */
static void tokenreview_wake(struct bound_wait *w)
{
    struct tokenreview_pending *p = H2O_STRUCT_FROM_MEMBER(struct tokenreview_pending, wait, w);

    h2o_multithread_send_message(&p->thread->receiver, &p->msg);
}

/* On the event loop's thread: the reviews whose objects are known are
 * answered (those whose client left, dropped). */
static void tokenreview_on_message(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    (void)receiver;
    while (!h2o_linklist_is_empty(messages)) {
        struct tokenreview_pending *p = H2O_STRUCT_FROM_MEMBER(struct tokenreview_pending, msg.link, messages->next);
        h2o_linklist_unlink(&p->msg.link);
        if (p->req != NULL)
            tokenreview_judge(p->req, worker_metrics(p->req->conn->ctx), &p->review, &p->user, &p->claims, p->wait.out);
        tokenreview_pending_free(p);
    }
}

/* A valid token's bound objects (--token-review-check-bound-objects):
 * answered now when the cache knows them all; else the review waits for
 * the lookup threads, off the loop, taking review (left empty) and a copy
 * of user. */
static int tokenreview_bound(struct tokenreview_thread *t, struct metrics_thread *m, h2o_req_t *req,
                             struct tokenreview_request *review, const struct token_user *user)
{
    struct bound_lookup *l = bound_lookup_current();
    struct bound_object objs[BOUND_MAX_OBJECTS];
    struct tokenreview_pending *p;
    struct bound_claims c;
    unsigned hits;
    int64_t now = clock_now_ms();
    char err[160];

    if (l == NULL)
        return tokenreview_refuse(req, 503, "ServiceUnavailable", "the bound-object lookup is not running");
    if (bound_claims_of(user, review->token, strlen(review->token), &c, err, sizeof(err)) != 0)
        return tokenreview_finish(req, m, review, NULL, TOKEN_ERR_CLAIMS, BOUND_OK, err);
    if (bound_lookup_get(l, c.refs, c.n, now, NULL, objs, &hits) == 1) {
        metrics_add(&m->bound_cache_hits, hits);
        return tokenreview_judge(req, m, review, user, &c, objs);
    }
    if ((p = calloc(1, sizeof(*p))) == NULL || token_user_copy(&p->user, user) != 0) {
        free(p);
        return tokenreview_send(req, 503, "Service Unavailable", NULL, 0);
    }
    p->wait.done = tokenreview_wake;
    p->thread = t;
    p->req = req;
    p->claims = c;
    p->review = *review;
    memset(review, 0, sizeof(*review));
    p->link = h2o_mem_alloc_shared(&req->pool, sizeof(*p->link), tokenreview_on_dispose);
    *p->link = p;
    if (bound_lookup_get(l, c.refs, c.n, now, &p->wait, NULL, &hits) == 1) { /* answered meanwhile */
        metrics_add(&m->bound_cache_hits, hits);
        tokenreview_judge(req, m, &p->review, &p->user, &c, p->wait.out);
        tokenreview_pending_free(p);
        return 0;
    }
    metrics_add(&m->bound_cache_hits, hits);
    metrics_add(&m->bound_cache_misses, c.n - hits);
    return 0;
}

/* Reviews one token with the thread's review (its cache answers a token
 * seen before), then, when the check is on, its bound objects; answers
 * now or, for objects not cached, once they are known. */
static int tokenreview_answer(struct tokenreview_thread *t, struct metrics_thread *m, const struct snapshot *top,
                              h2o_req_t *req, struct tokenreview_request *review)
{
    struct review_result res;
    struct tokenreview_issuer is;
    size_t len = strlen(review->token);
    char why[256];
    int rc;

    if ((rc = tokenreview_issuer_of(top, review->token, len, &is, why, sizeof(why))) == -1)
        return tokenreview_finish(req, m, review, NULL, TOKEN_ERR_ISSUER, BOUND_OK, why);
    if (rc == -2)
        return tokenreview_refuse(req, 503, "ServiceUnavailable",
                                  "the token's issuer has no keys published yet; retry later");
    if (is.scope != NULL)
        review_token_in(&t->rv, is.scope, is.v, review->token, len, review->audiences, review->naudiences, time(NULL),
                        &res);
    else
        review_token(&t->rv, is.v, review->token, len, review->audiences, review->naudiences, time(NULL), &res);
    tokenreview_count_cache(m, &t->rv, &res);
    if (res.user != NULL && t->bound)
        rc = tokenreview_bound(t, m, req, review, res.user);
    else
        rc = tokenreview_finish(req, m, review, res.user, res.token.error, BOUND_OK, res.token.message);
    review_result_clear(&res);
    return rc;
}

/* As kube-apiserver: the caller is authenticated (401) and authorised
 * (403) before anything else is looked at, so that somebody without
 * credentials learns nothing, not even which paths exist, and costs no
 * more than one token verification. */
static int tokenreview_on_req(h2o_handler_t *super, h2o_req_t *req)
{
    struct tokenreview_thread *t = h2o_context_get_handler_context(req->conn->ctx, super);
    struct metrics_thread *m = worker_metrics(req->conn->ctx);
    struct tokenreview_request review;
    const struct snapshot *snap;
    enum review_caller who;
    const char *name = NULL;
    char err[256];
    int rc;

    if (t == NULL) /* the thread could not set its review up */
        return tokenreview_send(req, 503, "Service Unavailable", NULL, 0);
    /* An --upstream not read yet: no key is known, so neither a caller's
     * token nor the reviewed one can be checked; "unauthorized" or "not
     * authenticated" would be a wrong answer, not a late one. */
    if ((snap = worker_pin_snapshot(req))->unavailable)
        return tokenreview_refuse(req, 503, "ServiceUnavailable", "no keys are published yet; retry later");
    if ((who = tokenreview_caller(&t->rv, m, snap, req, &name)) != REVIEW_CALLER_ALLOWED)
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
    rc = tokenreview_answer(t, m, snap, req, &review);
    tokenreview_request_clear(&review);
    return rc;
}

/* Each thread reviews with its own struct review (and cache), and with
 * --token-review-check-bound-objects takes back on its loop the reviews
 * that waited for objects. Out of memory here, the thread answers its
 * reviews 503. */
static void tokenreview_on_context_init(h2o_handler_t *super, h2o_context_t *ctx)
{
    struct handler_tokenreview *self = (struct handler_tokenreview *)super;
    struct tokenreview_thread *t = calloc(1, sizeof(*t));

    if (t != NULL && review_init(&t->rv, self->cfg, NULL, TOKENREVIEW_CACHE_SIZE) != 0) {
        free(t);
        t = NULL;
    }
    if (t == NULL) {
        log_msg(LOG_ERROR, "out of memory: a thread's TokenReview requests will be answered 503");
    } else if ((t->bound = self->cfg->token_review_check_bound_objects)) {
        t->cfg = self->cfg;
        h2o_multithread_register_receiver(ctx->queue, &t->receiver, tokenreview_on_message);
    }
    h2o_context_set_handler_context(ctx, super, t);
}

static void tokenreview_on_context_dispose(h2o_handler_t *super, h2o_context_t *ctx)
{
    struct tokenreview_thread *t = h2o_context_get_handler_context(ctx, super);

    if (t == NULL)
        return;
    if (t->bound)
        h2o_multithread_unregister_receiver(ctx->queue, &t->receiver);
    review_clear(&t->rv);
    free(t);
}

void handler_tokenreview_register(h2o_pathconf_t *pathconf, const struct config *cfg)
{
    struct handler_tokenreview *self = (void *)h2o_create_handler(pathconf, sizeof(*self));

    self->super.on_req = tokenreview_on_req;
    self->super.on_context_init = tokenreview_on_context_init;
    self->super.on_context_dispose = tokenreview_on_context_dispose;
    self->cfg = cfg;
}
