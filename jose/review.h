/* SPDX-License-Identifier: Apache-2.0 */
/*
 * review: the one policy by which this program reviews a token, for the
 * TokenReview endpoint and the verify command alike: the issuers a token
 * must name, the audiences it must carry (the review's, else the API
 * audiences, as kube-apiserver), the leeway, the size limit, legacy tokens,
 * and the cache of successful verifications in front of the signature
 * check.
 *
 * The TokenReview endpoint's callers are held to the same policy: a
 * caller's bearer token is a service-account token reviewed like any other
 * (same keys, issuers and cache), for the caller audiences, and the
 * caller, so authenticated or by a client certificate, must be named in
 * --token-review-allowed-callers.
 *
 * A struct review belongs to one thread (its cache is not thread-safe):
 * the server keeps one per worker thread.
 */
#ifndef OIDC_REVIEW_H
#define OIDC_REVIEW_H

#include <stddef.h>
#include <time.h>

#include "config/config.h"
#include "jose/token.h"
#include "jose/vcache.h"
#include "jose/verifier.h"

struct review {
    const struct config *cfg;
    char *const *issuers; /* cfg's, or the one given to review_init */
    size_t nissuers;
    /* --api-audiences, else the issuers (kube-apiserver's default): what a
     * review without audiences asks for, and what a token without aud is
     * taken to carry. */
    char *const *api_audiences;
    size_t napi_audiences;
    /* --token-review-caller-audiences, else the API audiences: what a
     * caller's bearer token must carry one of. */
    char *const *caller_audiences;
    size_t ncaller_audiences;
    struct vcache *cache; /* NULL: every review checks the signature */
};

/* One issuer of a fleet as a review holds a token to it: the token must
 * name exactly issuer and, without a review's own audiences, carry one of
 * the audiences (kube-apiserver's --api-audiences of that issuer). A
 * caller's token must carry one of --token-review-caller-audiences, else
 * of these. The strings belong to the caller. */
struct review_scope {
    char *const *issuer; /* one */
    char *const *audiences;
    size_t naudiences;
};

/* The outcome of one review. */
struct review_result {
    struct token_result token;     /* the error and message; its user is filled only by a fresh verification */
    const struct token_user *user; /* the user when valid (fresh or cached), else NULL; see review_token */
    int cached;                    /* 1 when the cache answered */
};

/* Sets r up for cfg, which it keeps a pointer to. issuer (a pointer to one
 * issuer string, or NULL) stands in for cfg's issuers when cfg names none:
 * verify --discovery-url takes the one the discovery document names.
 * cache_size 0 means no cache. Returns 0, or -1 when out of memory. */
int review_init(struct review *r, const struct config *cfg, char *const *issuer, size_t cache_size);

void review_clear(struct review *r);

/* Reviews token (len bytes) against the keys of v at now, for the given audiences
 * (a TokenReview's spec.audiences; none: the API audiences). Returns 0 and
 * sets out->user when the token is valid, else -1 with out->token.error and
 * message. out->user stays valid until the next review_token with r or
 * review_result_clear. Always call review_result_clear afterwards. */
int review_token(struct review *r, const struct verifier *v, const char *token, size_t len, char *const *audiences,
                 size_t naudiences, time_t now, struct review_result *out);

/* review_token for one issuer of a fleet (scope) instead of r's issuers
 * and API audiences; v holds that issuer's keys. */
int review_token_in(struct review *r, const struct review_scope *scope, const struct verifier *v, const char *token,
                    size_t len, char *const *audiences, size_t naudiences, time_t now, struct review_result *out);

void review_result_clear(struct review_result *out);

/* What a TokenReview caller turned out to be. */
enum review_caller {
    REVIEW_CALLER_ALLOWED,         /* authenticated and named in --token-review-allowed-callers */
    REVIEW_CALLER_FORBIDDEN,       /* authenticated, not named: 403 */
    REVIEW_CALLER_UNAUTHENTICATED, /* no credentials, or no valid ones: 401 */
};

/* The token of an Authorization header value, as kube-apiserver reads it:
 * "Bearer" (any case) and one space, then the token up to the next space,
 * blanks around the value ignored. Returns its length (*token points into
 * value), or 0 when the value is not a bearer token. */
size_t review_bearer(const char *value, size_t len, const char **token);

/* Authenticates a caller by its bearer token: a service-account token
 * verified as review_token verifies one, for the caller audiences (so
 * through the same cache), except that a token without kid is checked
 * only when one key of its alg is published: a refused caller costs one
 * signature check at most (token_policy.kidless_one_key). Then authorises
 * its username. out holds the
 * verification (out->user->username names an authenticated caller); call
 * review_result_clear afterwards. */
enum review_caller review_caller_token(struct review *r, const struct verifier *v, const char *token, size_t len,
                                       time_t now, struct review_result *out);

/* review_caller_token for a caller's token of one issuer of a fleet. */
enum review_caller review_caller_token_in(struct review *r, const struct review_scope *scope, const struct verifier *v,
                                          const char *token, size_t len, time_t now, struct review_result *out);

/* Authorises a caller authenticated otherwise (name: a client
 * certificate's RFC 4514 subject): exact, case-sensitive comparison with
 * each --token-review-allowed-callers entry. */
enum review_caller review_caller_allowed(const struct review *r, const char *name);

#endif
