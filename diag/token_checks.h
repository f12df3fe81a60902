/* SPDX-License-Identifier: Apache-2.0 */
/*
 * token_checks: doctor's checks of one token against the published JWKS,
 * one finding each: its form, its kid, whether the JWKS publishes that
 * kid, the signature (verified by jose/ with the key the JWKS gives), iss
 * byte for byte, aud, the times and the sub form. Unlike jose/token.c,
 * which stops at the first reason to refuse a token, every claim is
 * reported, so that one run shows all there is to fix.
 */
#ifndef OIDC_DIAG_TOKEN_CHECKS_H
#define OIDC_DIAG_TOKEN_CHECKS_H

#include <stddef.h>
#include <time.h>

#include "diag/jwks_checks.h"
#include "diag/report.h"
#include "util/json.h"

struct diag_token_input {
    const char *issuer;     /* --issuer */
    char *const *audiences; /* --audience, each of which aud must hold; may be none */
    size_t naudiences;
    const struct diag_jwks *jwks; /* the published keys, or NULL when the JWKS could not be read */
    const char *jwks_body;        /* the JWKS itself, for jose's reader */
    size_t jwks_len;
    time_t now;
    unsigned long leeway; /* seconds, for exp, nbf and iat */
};

/* The token's decoded parts; iss and alg point into them (NULL when
 * absent), for the relying-party rules. */
struct diag_token {
    struct json_value *header, *payload;
    const char *iss, *alg;
};

/* Adds the "token.*" checks of the len bytes of token to r. Returns 0 with
 * *out filled, or -1 when the token is no JWS at all ("token.format" says
 * why) and *out is empty. */
int diag_token_check(struct diag_report *r, const char *token, size_t len, const struct diag_token_input *in,
                     struct diag_token *out);

void diag_token_clear(struct diag_token *t);

#endif
