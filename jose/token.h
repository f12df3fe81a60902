/* SPDX-License-Identifier: Apache-2.0 */
/*
 * token: strict verification of Kubernetes service-account tokens (compact
 * JWS) against a key set, with kube-apiserver's rules, for relying parties
 * that cannot call the cluster. See docs/compatibility.md §4.
 *
 * Everything about the input is bounded and checked before any signature
 * work: size, segment count, base64url alphabet (no padding), JSON shape
 * (no duplicate members, nesting at most JSON_MAX_DEPTH), header members
 * (no alg "none", no HMAC, no crit, no jku/x5u/jwk).
 */
#ifndef OIDC_TOKEN_H
#define OIDC_TOKEN_H

#include <stddef.h>
#include <time.h>
#include "config/config.h"
#include "keys/keyset.h"

/* The flags' defaults (config/config.h; the rows of --max-token-size and
 * --token-leeway use them too). */
#define TOKEN_DEFAULT_MAX_SIZE CONFIG_MAX_TOKEN_SIZE
#define TOKEN_DEFAULT_LEEWAY   CONFIG_TOKEN_LEEWAY
#define TOKEN_LEGACY_ISSUER    "kubernetes/serviceaccount"

/* The most keys a token without kid is checked against (the first of its
 * alg, in published order). kube-apiserver tries them all, but a bad
 * kid-less token then costs a signature check per key; real clusters have
 * a few keys, and kube-apiserver puts a kid in the tokens it signs. A
 * TokenReview caller's own token, checked before the caller is known,
 * gets one check at most (token_policy.kidless_one_key). */
#define TOKEN_KIDLESS_MAX_KEYS 16

/* Why a token was refused. Each has a stable name (token_error_name) for
 * metrics and a human message in struct token_result. */
enum token_error {
    TOKEN_OK = 0,
    TOKEN_ERR_TOO_LARGE,        /* over policy max_size */
    TOKEN_ERR_SEGMENTS,         /* not exactly three dot-separated segments */
    TOKEN_ERR_BASE64,           /* padding or a character outside base64url */
    TOKEN_ERR_JSON,             /* invalid JSON, duplicate member, too deep, not an object */
    TOKEN_ERR_ALG_NONE,         /* alg "none" */
    TOKEN_ERR_ALG_HMAC,         /* HS256/384/512 */
    TOKEN_ERR_ALG_UNSUPPORTED,  /* missing alg, or one not allowed by the policy */
    TOKEN_ERR_ALG_MISMATCH,     /* alg does not match the key's type or curve */
    TOKEN_ERR_CRIT,             /* any crit header */
    TOKEN_ERR_EMBEDDED_KEY,     /* jku, x5u or jwk header */
    TOKEN_ERR_UNKNOWN_KID,      /* kid not in the key set (or no key verifies a kid-less token) */
    TOKEN_ERR_ECDSA_FORMAT,     /* ECDSA signature of the wrong length, DER, or r/s out of range */
    TOKEN_ERR_SIGNATURE,        /* the signature does not verify */
    TOKEN_ERR_CLAIM_TYPE,       /* a claim of the wrong type (non-numeric exp/nbf/iat, ...) */
    TOKEN_ERR_EXPIRED,          /* exp + leeway <= now */
    TOKEN_ERR_NOT_YET_VALID,    /* nbf - leeway > now */
    TOKEN_ERR_ISSUED_IN_FUTURE, /* iat - leeway > now */
    TOKEN_ERR_ISSUER,           /* iss not one of the policy issuers */
    TOKEN_ERR_AUDIENCE,         /* aud does not intersect the wanted audiences */
    TOKEN_ERR_LEGACY,           /* a legacy (Secret-based) token while they are not accepted */
    TOKEN_ERR_CLAIMS,           /* missing or inconsistent service-account claims */
};

/* JOSE algorithms, as a bitmask for token_policy.algs. */
#define TOKEN_ALG_RS256 0x01u
#define TOKEN_ALG_ES256 0x02u
#define TOKEN_ALG_ES384 0x04u
#define TOKEN_ALG_ES512 0x08u
#define TOKEN_ALG_ALL   (TOKEN_ALG_RS256 | TOKEN_ALG_ES256 | TOKEN_ALG_ES384 | TOKEN_ALG_ES512)

struct token_policy {
    char *const *issuers; /* accepted iss values (byte-exact) */
    size_t nissuers;
    char *const *audiences; /* wanted audiences (a review's, else the API audiences); aud must intersect them */
    size_t naudiences;
    /* The API audiences (--api-audiences, default the issuers): a token
     * without aud (a legacy one) is taken to carry these, as kube-apiserver
     * takes it. None: such a token carries no audience and is refused. */
    char *const *api_audiences;
    size_t napi_audiences;
    unsigned algs;        /* TOKEN_ALG_* allowed (0 means TOKEN_ALG_ALL) */
    unsigned long leeway; /* seconds, for exp, nbf and iat */
    size_t max_size;      /* bytes (0 means TOKEN_DEFAULT_MAX_SIZE) */
    time_t now;
    int accept_legacy; /* accept iss "kubernetes/serviceaccount" tokens */
    /* A token without kid is checked only when a single key of its alg is
     * configured, and refused before any signature check otherwise. For a
     * TokenReview caller's own token: the caller is not authenticated yet,
     * so its token may cost one signature check, no more (tokens that
     * kube-apiserver signs all carry a kid). */
    int kidless_one_key;
};

/* The authenticated user, as kube-apiserver's service-account
 * authenticator reports it. All strings owned by the result. */
#define TOKEN_MAX_EXTRA 5
struct token_user {
    char *username;  /* system:serviceaccount:<namespace>:<name> */
    char *uid;       /* the service account's uid */
    char *groups[2]; /* system:serviceaccounts, system:serviceaccounts:<namespace> */
    struct {
        const char *key; /* static: authentication.kubernetes.io/pod-name, ... */
        char *value;
    } extra[TOKEN_MAX_EXTRA]; /* pod-name, pod-uid, node-name, node-uid, credential-id, when present */
    size_t nextra;
    char **audiences; /* the token audiences that matched the wanted ones, in token order */
    size_t naudiences;
    time_t exp; /* 0 for a legacy token (never expires) */
    /* What else the token is bound to, for a check of the bound objects
     * (jose/bound.h); never part of a review's answer. */
    char *secret_name, *secret_uid; /* kubernetes.io.secret, or a legacy token's secret (no uid); else NULL */
    int legacy;                     /* a legacy (Secret-based) token */
};

struct token_result {
    enum token_error error;
    char message[256]; /* human reason when error != TOKEN_OK, e.g. "service account token has expired" */
    struct token_user user;
    /* Signature verifications this token cost: 1 with a kid, 0 when
     * refused before any, up to TOKEN_KIDLESS_MAX_KEYS without a kid. */
    unsigned signature_checks;
};

struct verifier; /* jose/verifier.h: a key set prepared for verification */

/* Verifies token (len bytes, not necessarily NUL-terminated) against the
 * keys of v under policy. Returns 0 and fills out->user when valid;
 * otherwise returns -1 with out->error and out->message set and out->user
 * empty. Always call token_result_clear afterwards. */
int token_verify(const struct verifier *v, const struct token_policy *policy, const char *token, size_t len,
                 struct token_result *out);

void token_result_clear(struct token_result *r);

/* Stable snake_case name of an error, e.g. "expired", "alg_none". */
const char *token_error_name(enum token_error e);

#endif
