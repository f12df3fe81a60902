/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bound: what kube-apiserver's service-account authenticator checks after
 * a token's signature and claims, and this server does with
 * --token-review-check-bound-objects: the objects the token names must
 * still exist, with the uids it names (docs/vault-kubernetes-auth.md,
 * "Bound objects"). Here are the rules and nothing else: which objects a
 * token names (bound_claims_of), the API path of each (bound_path), what
 * an API server's answer says about one (bound_object_read), and the
 * verdict over them in kube-apiserver's order, with its words
 * (bound_judge). Asking the API server, and caching, is
 * server/reload/bound_lookup.h's.
 */
#ifndef OIDC_BOUND_H
#define OIDC_BOUND_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "jose/token.h"

/* The kinds of object a token can be bound to. */
enum bound_kind { BOUND_SERVICEACCOUNT, BOUND_POD, BOUND_SECRET, BOUND_NODE, BOUND_NKINDS };

/* Why a review was refused by the check (metrics label: bound_reason_name). */
enum bound_reason {
    BOUND_OK,
    BOUND_POD_DELETED,            /* the pod is gone, or being deleted past the grace */
    BOUND_NODE_DELETED,           /* the node is gone, or being deleted past the grace */
    BOUND_SECRET_DELETED,         /* the secret is gone or being deleted (or marked invalid) */
    BOUND_SERVICEACCOUNT_DELETED, /* the service account is gone or being deleted */
    BOUND_UID_MISMATCH,           /* an object of that name with another uid */
    BOUND_TOKEN_MISMATCH,         /* a legacy token that is not its secret's token any more */
    BOUND_API_UNREACHABLE,        /* the API server did not answer (connect, TLS, timeout, 5xx) */
    BOUND_API_ERROR,              /* it answered, but not with the object (401, 403, malformed) */
    BOUND_NREASONS
};

/* A token names at most its service account and one other object (kube
 * does not look up the node of a pod-bound token). */
#define BOUND_MAX_OBJECTS 2

/* Kubernetes' limits: a namespace is a DNS label, the other names DNS
 * subdomains; a uid is a UUID, but any short printable value is taken. */
#define BOUND_NS_MAX   63
#define BOUND_NAME_MAX 253
#define BOUND_UID_MAX  128

/* The largest object answer read (a pod with its managed fields is far
 * smaller; etcd stores at most 1.5 MiB). */
#define BOUND_OBJECT_MAX (2 * 1024 * 1024)

/* How long before now a deletion must have been asked for to make a bound
 * token invalid: kube-apiserver's leeway (jwt.DefaultLeeway), so that a
 * pod terminating gracefully keeps its token until its grace ends. */
#define BOUND_DELETION_LEEWAY 60

/* One object to look up. */
struct bound_ref {
    enum bound_kind kind;
    char ns[BOUND_NS_MAX + 1]; /* empty for a node */
    char name[BOUND_NAME_MAX + 1];
    char uid[BOUND_UID_MAX + 1]; /* what the token says; empty for a legacy token's secret */
};

/* The objects of one token, in kube-apiserver's order of checking. */
struct bound_claims {
    struct bound_ref refs[BOUND_MAX_OBJECTS];
    size_t n;
    int legacy;
    /* A legacy token: SHA-256 of its standard base64, which is how the
     * API server's JSON carries the secret's token data (compared
     * without keeping either). */
    unsigned char token_sha256[32];
};

/* What an API server said about one object. */
enum bound_state { BOUND_FOUND, BOUND_MISSING, BOUND_FAILED };
struct bound_object {
    enum bound_state state;
    int unreachable;                /* BOUND_FAILED: no answer (else a refusal or a bad answer) */
    char uid[BOUND_UID_MAX + 1];    /* BOUND_FOUND: metadata.uid */
    int64_t deletion;               /* metadata.deletionTimestamp (unix seconds), or 0 */
    int has_token;                  /* a secret with data.token: */
    unsigned char token_sha256[32]; /*   SHA-256 of that base64 text */
    int legacy_invalid;             /* a secret labelled kubernetes.io/legacy-token-invalid-since */
    char error[200];                /* BOUND_FAILED: why (no URL, no credential) */
};

/* The objects the verified token's user names (u: a valid token's;
 * token/len: the token itself, for a legacy one's secret). Returns 0, or
 * -1 with a message when a name cannot be one of Kubernetes' (no such
 * object can exist). */
int bound_claims_of(const struct token_user *u, const char *token, size_t len, struct bound_claims *out, char *err,
                    size_t errlen);

/* The API path of r (/api/v1/namespaces/NS/pods/NAME, /api/v1/nodes/NAME). */
void bound_path(const struct bound_ref *r, char *out, size_t len);

/* A cache key for r: kind, namespace and name, unique per object. */
void bound_key(const struct bound_ref *r, char *out, size_t len);

/* The object of a bound_key (its uid left empty). */
void bound_ref_of_key(const char *key, struct bound_ref *r);
#define BOUND_KEY_MAX (BOUND_NS_MAX + BOUND_NAME_MAX + 8)

/* Reads an API server's answer for an object of kind: 200 with the
 * object, 404 (missing), or anything else (failed: 5xx counts as
 * unreachable). */
void bound_object_read(enum bound_kind kind, int status, const char *body, size_t len, struct bound_object *out);

/* The verdict over the objects of c (objs[i] answers c->refs[i]) at now,
 * in kube-apiserver's order and words: 0 when the token stands, else -1
 * with the reason and the message of the review's error. */
int bound_judge(const struct bound_claims *c, const struct bound_object *objs, time_t now, enum bound_reason *reason,
                char *msg, size_t msglen);

/* Stable names for metrics: "pod_deleted", "uid_mismatch", ... */
const char *bound_reason_name(enum bound_reason r);
const char *bound_kind_name(enum bound_kind k);

#endif
