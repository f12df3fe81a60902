/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tokenreview: the Kubernetes TokenReview API's JSON (authentication.k8s.io/v1),
 * as Vault's Kubernetes auth method and admission webhooks speak it:
 * parsing a request, rendering the review result and the Status object of a
 * refused request. No HTTP here; see handler_tokenreview for that.
 */
#ifndef OIDC_TOKENREVIEW_H
#define OIDC_TOKENREVIEW_H

#include <stddef.h>
#include "jose/token.h"

struct tokenreview_request {
    char *token;
    char **audiences; /* spec.audiences, when given */
    size_t naudiences;
    int has_audiences;
};

/* Parses a TokenReview request. Returns 0, or -1 with a message for a
 * Status object: invalid JSON, nesting too deep, a duplicate member, wrong
 * kind or apiVersion, a missing spec.token. */
int tokenreview_parse(const char *body, size_t len, struct tokenreview_request *out, char *err, size_t errlen);

void tokenreview_request_clear(struct tokenreview_request *req);

/* The TokenReview answer for req: the spec echoed, and a status with user
 * (authenticated) or, when user is NULL, the error message. Returns a
 * malloc'ed body, or NULL on out of memory. */
char *tokenreview_render(const struct tokenreview_request *req, const struct token_user *user, const char *error,
                         size_t *len);

/* A Kubernetes Status object for a refused request (code 400, 415, ...). */
char *tokenreview_render_status(int code, const char *reason, const char *message, size_t *len);

/* The Status kube-apiserver answers a caller without valid credentials
 * (401, reason Unauthorized, message "Unauthorized"). */
char *tokenreview_render_unauthorized(size_t *len);

/* The Status kube-apiserver answers an authenticated caller that may not
 * create TokenReviews (403, reason Forbidden, with details and the
 * message of its authorization filter naming user). */
char *tokenreview_render_forbidden(const char *user, size_t *len);

#endif
