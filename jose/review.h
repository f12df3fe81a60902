/*
 * review: the one policy by which this program reviews a token, for the
 * TokenReview endpoint and the verify command alike: the issuers a token
 * must name, the audiences it must carry (the review's, else the API
 * audiences, as kube-apiserver), the leeway, the size limit, legacy tokens,
 * and the cache of successful verifications in front of the signature
 * check.
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
    struct vcache *cache; /* NULL: every review checks the signature */
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

void review_result_clear(struct review_result *out);

#endif
