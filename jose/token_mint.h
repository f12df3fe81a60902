/* SPDX-License-Identifier: Apache-2.0 */
/*
 * token_mint: signs a token shaped exactly like the bound service-account
 * tokens kube-apiserver issues, for tests, demos and benchmarks
 * (`oidc-discovery token`). Never used by the server itself.
 */
#ifndef OIDC_TOKEN_MINT_H
#define OIDC_TOKEN_MINT_H

#include <stddef.h>
#include <time.h>
#include <openssl/evp.h>

struct token_claims {
    const char *issuer;
    char *const *audiences;
    size_t naudiences;
    const char *namespace_;
    const char *service_account;
    const char *service_account_uid;
    const char *pod_name; /* optional (NULL), with pod_uid */
    const char *pod_uid;
    const char *node_name; /* optional (NULL), with node_uid */
    const char *node_uid;
    time_t now;             /* iat and nbf */
    unsigned long duration; /* exp = now + duration */
};

/* Signs a token for c with priv: RS256 for RSA, ES256/384/512 by curve; the
 * header is {"alg":...,"kid":...} with kube-apiserver's kid, the payload
 * carries aud, exp, iat, iss, jti (a fresh UUID), kubernetes.io, nbf and sub
 * as kube-apiserver writes them. Returns a malloc'ed NUL-terminated token,
 * or NULL with a message. */
char *token_mint(EVP_PKEY *priv, const struct token_claims *c, char *err, size_t errlen);

#endif
