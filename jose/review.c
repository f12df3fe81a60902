/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/review.h"

#include <string.h>
#include <strings.h>

int review_init(struct review *r, const struct config *cfg, char *const *issuer, size_t cache_size)
{
    memset(r, 0, sizeof(*r));
    r->cfg = cfg;
    r->issuers = cfg->issuers.count > 0 || issuer == NULL ? cfg->issuers.items : issuer;
    r->nissuers = cfg->issuers.count > 0 || issuer == NULL ? cfg->issuers.count : 1;
    r->api_audiences = cfg->api_audiences.count > 0 ? cfg->api_audiences.items : r->issuers;
    r->napi_audiences = cfg->api_audiences.count > 0 ? cfg->api_audiences.count : r->nissuers;
    r->caller_audiences =
        cfg->token_review_caller_audiences.count > 0 ? cfg->token_review_caller_audiences.items : r->api_audiences;
    r->ncaller_audiences =
        cfg->token_review_caller_audiences.count > 0 ? cfg->token_review_caller_audiences.count : r->napi_audiences;
    if (cache_size > 0 && (r->cache = vcache_create(cache_size)) == NULL)
        return -1;
    return 0;
}

void review_clear(struct review *r)
{
    vcache_free(r->cache);
    r->cache = NULL;
}

/* The verification policy of one review at now, of scope's issuer (NULL:
 * r's issuers); caller: of a TokenReview caller's own token (audiences
 * NULL: the caller audiences). */
static void review_policy(const struct review *r, const struct review_scope *scope, char *const *audiences,
                          size_t naudiences, int caller, time_t now, struct token_policy *p)
{
    const struct config *cfg = r->cfg;

    memset(p, 0, sizeof(*p));
    p->issuers = scope ? scope->issuer : r->issuers;
    p->nissuers = scope ? 1 : r->nissuers;
    p->api_audiences = scope ? scope->audiences : r->api_audiences;
    p->napi_audiences = scope ? scope->naudiences : r->napi_audiences;
    if (caller && audiences == NULL && cfg->token_review_caller_audiences.count == 0) {
        audiences = p->api_audiences;
        naudiences = p->napi_audiences;
    } else if (caller && audiences == NULL) {
        audiences = cfg->token_review_caller_audiences.items;
        naudiences = cfg->token_review_caller_audiences.count;
    }
    p->audiences = naudiences > 0 ? audiences : p->api_audiences;
    p->naudiences = naudiences > 0 ? naudiences : p->napi_audiences;
    p->algs = TOKEN_ALG_ALL;
    p->leeway = cfg->token_leeway;
    p->max_size = cfg->max_token_size;
    p->accept_legacy = cfg->accept_legacy_tokens;
    p->kidless_one_key = caller;
    p->now = now;
}

/* review_token, and the check of a caller's token (caller set), which
 * must cost one signature check at most: the caller is not known yet. */
static int review_verify(struct review *r, const struct review_scope *scope, const struct verifier *v,
                         const char *token, size_t len, char *const *audiences, size_t naudiences, int caller,
                         time_t now, struct review_result *out)
{
    struct token_policy p;

    memset(out, 0, sizeof(*out));
    review_policy(r, scope, audiences, naudiences, caller, now, &p);
    if (r->cache != NULL &&
        (out->user = vcache_get(r->cache, v->keys->id, token, len, p.audiences, p.naudiences, now)) != NULL) {
        out->cached = 1;
        return 0;
    }
    if (token_verify(v, &p, token, len, &out->token) != 0)
        return -1;
    out->user = &out->token.user;
    if (r->cache != NULL)
        vcache_put(r->cache, v->keys->id, token, len, p.audiences, p.naudiences, out->user);
    return 0;
}

int review_token(struct review *r, const struct verifier *v, const char *token, size_t len, char *const *audiences,
                 size_t naudiences, time_t now, struct review_result *out)
{
    return review_verify(r, NULL, v, token, len, audiences, naudiences, 0, now, out);
}

int review_token_in(struct review *r, const struct review_scope *scope, const struct verifier *v, const char *token,
                    size_t len, char *const *audiences, size_t naudiences, time_t now, struct review_result *out)
{
    return review_verify(r, scope, v, token, len, audiences, naudiences, 0, now, out);
}

void review_result_clear(struct review_result *out)
{
    token_result_clear(&out->token);
    out->user = NULL;
}

size_t review_bearer(const char *value, size_t len, const char **token)
{
    static const char scheme[] = "bearer ";
    const size_t n = sizeof(scheme) - 1;
    size_t end;

    while (len > 0 && (value[0] == ' ' || value[0] == '\t'))
        value++, len--;
    while (len > 0 && (value[len - 1] == ' ' || value[len - 1] == '\t'))
        len--;
    if (len <= n || strncasecmp(value, scheme, n) != 0)
        return 0;
    for (end = n; end < len && value[end] != ' '; end++)
        ;
    *token = value + n;
    return end - n;
}

enum review_caller review_caller_allowed(const struct review *r, const char *name)
{
    const struct config_strlist *allowed = &r->cfg->token_review_allowed_callers;

    for (size_t i = 0; i < allowed->count; i++)
        if (strcmp(allowed->items[i], name) == 0)
            return REVIEW_CALLER_ALLOWED;
    return REVIEW_CALLER_FORBIDDEN;
}

enum review_caller review_caller_token(struct review *r, const struct verifier *v, const char *token, size_t len,
                                       time_t now, struct review_result *out)
{
    if (review_verify(r, NULL, v, token, len, r->caller_audiences, r->ncaller_audiences, 1, now, out) != 0)
        return REVIEW_CALLER_UNAUTHENTICATED;
    return review_caller_allowed(r, out->user->username);
}

enum review_caller review_caller_token_in(struct review *r, const struct review_scope *scope, const struct verifier *v,
                                          const char *token, size_t len, time_t now, struct review_result *out)
{
    if (review_verify(r, scope, v, token, len, NULL, 0, 1, now, out) != 0)
        return REVIEW_CALLER_UNAUTHENTICATED;
    return review_caller_allowed(r, out->user->username);
}
