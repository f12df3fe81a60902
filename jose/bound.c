/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/bound.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

#define BOUND_SA_PREFIX     "system:serviceaccount:"
#define BOUND_EXTRA_PREFIX  "authentication.kubernetes.io/"
#define BOUND_INVALID_LABEL "kubernetes.io/legacy-token-invalid-since"

/* A legacy token's base64 is at most this long (the token is capped by
 * --max-token-size, at most 1 MiB). */
#define BOUND_TOKEN_B64_MAX (4 * ((1024 * 1024 + 2) / 3) + 1)

static const char *const bound_reason_names[BOUND_NREASONS] = {
    [BOUND_OK] = "ok",
    [BOUND_POD_DELETED] = "pod_deleted",
    [BOUND_NODE_DELETED] = "node_deleted",
    [BOUND_SECRET_DELETED] = "secret_deleted",
    [BOUND_SERVICEACCOUNT_DELETED] = "serviceaccount_deleted",
    [BOUND_UID_MISMATCH] = "uid_mismatch",
    [BOUND_TOKEN_MISMATCH] = "token_mismatch",
    [BOUND_API_UNREACHABLE] = "api_unreachable",
    [BOUND_API_ERROR] = "api_error",
};

/* The kinds as kube's messages and API paths name them. */
static const char *const bound_kind_names[BOUND_NKINDS] = {"serviceaccount", "pod", "secret", "node"};
static const char *const bound_kind_paths[BOUND_NKINDS] = {"serviceaccounts", "pods", "secrets", "nodes"};

const char *bound_reason_name(enum bound_reason r)
{
    return (size_t)r < BOUND_NREASONS ? bound_reason_names[r] : "unknown";
}

const char *bound_kind_name(enum bound_kind k)
{
    return (size_t)k < BOUND_NKINDS ? bound_kind_names[k] : "unknown";
}

/* A DNS label (namespaces) or subdomain (the other names): lower-case
 * letters, digits, '-' (and '.' for a subdomain), at most max bytes. Only
 * such names can be objects, and only they go into a URL path unescaped. */
static int bound_name_ok(const char *s, size_t max, int dots)
{
    size_t n = strlen(s);

    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || (dots && s[i] == '.')))
            return 0;
    return 1;
}

/* A uid as messages may show it unquoted: printable ASCII without blanks
 * or quotes, at most BOUND_UID_MAX bytes. */
static int bound_uid_ok(const char *s)
{
    size_t n = strlen(s);

    if (n > BOUND_UID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
            return 0;
    return 1;
}

/* Copies a checked string of at most max bytes (plain copies: this runs
 * for every review). */
static void bound_copy(char *dst, const char *src, size_t max)
{
    size_t n = src != NULL ? strlen(src) : 0;

    n = n < max ? n : max;
    memcpy(dst, src != NULL ? src : "", n);
    dst[n] = '\0';
}

/* Fills a ref, checking its names; 0 or -1. */
static int bound_ref_set(struct bound_ref *r, enum bound_kind kind, const char *ns, const char *name, const char *uid)
{
    r->kind = kind;
    if ((ns != NULL && !bound_name_ok(ns, BOUND_NS_MAX, 0)) || !bound_name_ok(name, BOUND_NAME_MAX, 1) ||
        (uid != NULL && !bound_uid_ok(uid)))
        return -1;
    bound_copy(r->ns, ns, BOUND_NS_MAX);
    bound_copy(r->name, name, BOUND_NAME_MAX);
    bound_copy(r->uid, uid, BOUND_UID_MAX);
    return 0;
}

/* The value of the user's extra key (authentication.kubernetes.io/...), or NULL. */
static const char *bound_extra(const struct token_user *u, const char *key)
{
    for (size_t i = 0; i < u->nextra; i++)
        if (strcmp(u->extra[i].key, key) == 0)
            return u->extra[i].value;
    return NULL;
}

/* SHA-256 of the standard, padded base64 of token, as Go's JSON encodes a
 * secret's []byte data. */
static int bound_token_hash(const char *token, size_t len, unsigned char out[32])
{
    size_t cap = 4 * ((len + 2) / 3) + 1;
    unsigned char *b64;
    int n;

    if (cap > BOUND_TOKEN_B64_MAX || (b64 = malloc(cap)) == NULL)
        return -1;
    n = EVP_EncodeBlock(b64, (const unsigned char *)token, (int)len);
    SHA256(b64, (size_t)n, out);
    free(b64);
    return 0;
}

int bound_claims_of(const struct token_user *u, const char *token, size_t len, struct bound_claims *out, char *err,
                    size_t errlen)
{
    const char *sa = u->username + strlen(BOUND_SA_PREFIX), *colon = strchr(sa, ':');
    const char *pod = bound_extra(u, BOUND_EXTRA_PREFIX "pod-name"),
               *node = bound_extra(u, BOUND_EXTRA_PREFIX "node-name");
    char ns[BOUND_NS_MAX + 2];
    struct bound_ref *r = out->refs;
    int bad = 0;

    memset(out, 0, sizeof(*out));
    out->legacy = u->legacy;
    if (strncmp(u->username, BOUND_SA_PREFIX, strlen(BOUND_SA_PREFIX)) != 0 || colon == NULL ||
        (size_t)(colon - sa) > BOUND_NS_MAX) {
        snprintf(err, errlen, "token names no service account that can exist");
        return -1;
    }
    snprintf(ns, sizeof(ns), "%.*s", (int)(colon - sa), sa);
    /* kube-apiserver's order: a legacy token's secret first, else the
     * service account, then the secret, pod or (without a pod) node. */
    if (u->legacy)
        bad |= bound_ref_set(&r[out->n++], BOUND_SECRET, ns, u->secret_name ? u->secret_name : "", NULL);
    bad |= bound_ref_set(&r[out->n++], BOUND_SERVICEACCOUNT, ns, colon + 1, u->uid);
    if (!u->legacy && u->secret_name != NULL)
        bad |= bound_ref_set(&r[out->n++], BOUND_SECRET, ns, u->secret_name, u->secret_uid);
    else if (pod != NULL)
        bad |= bound_ref_set(&r[out->n++], BOUND_POD, ns, pod, bound_extra(u, BOUND_EXTRA_PREFIX "pod-uid"));
    else if (node != NULL)
        bad |= bound_ref_set(&r[out->n++], BOUND_NODE, NULL, node, bound_extra(u, BOUND_EXTRA_PREFIX "node-uid"));
    if (bad) {
        snprintf(err, errlen, "token is bound to an object whose name or uid no Kubernetes object can have");
        return -1;
    }
    if (u->legacy && bound_token_hash(token, len, out->token_sha256) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void bound_path(const struct bound_ref *r, char *out, size_t len)
{
    if (r->kind == BOUND_NODE)
        snprintf(out, len, "/api/v1/nodes/%s", r->name);
    else
        snprintf(out, len, "/api/v1/namespaces/%s/%s/%s", r->ns, bound_kind_paths[r->kind], r->name);
}

void bound_key(const struct bound_ref *r, char *out, size_t len)
{
    size_t ns = strlen(r->ns), name = strlen(r->name);

    if (len < ns + name + 4) { /* never with BOUND_KEY_MAX */
        out[0] = '\0';
        return;
    }
    out[0] = (char)('0' + r->kind);
    out[1] = '/';
    memcpy(out + 2, r->ns, ns);
    out[2 + ns] = '/';
    memcpy(out + 3 + ns, r->name, name + 1);
}

void bound_ref_of_key(const char *key, struct bound_ref *r)
{
    const char *ns = key + 2, *name = strchr(ns, '/');

    memset(r, 0, sizeof(*r));
    r->kind = (enum bound_kind)(key[0] - '0');
    /* names have no '/' (bound_name_ok), so the second one ends the namespace */
    if (name != NULL && (size_t)(name - ns) <= BOUND_NS_MAX) {
        memcpy(r->ns, ns, (size_t)(name - ns));
        r->ns[name - ns] = '\0';
        bound_copy(r->name, name + 1, BOUND_NAME_MAX);
    }
}

/* Kubernetes' metav1.Time in JSON: RFC 3339 in UTC, whole seconds
 * ("2026-01-02T03:04:05Z"). 0 when it is not that. */
static int64_t bound_time(const char *s)
{
    struct tm tm = {0};
    char z;

    if (s == NULL || strlen(s) != 20 ||
        sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
               &tm.tm_sec, &z) != 7 ||
        z != 'Z')
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm);
}

__attribute__((format(printf, 2, 3))) static void bound_fail(struct bound_object *out, const char *fmt, ...)
{
    va_list ap;

    out->state = BOUND_FAILED;
    va_start(ap, fmt);
    vsnprintf(out->error, sizeof(out->error), fmt, ap);
    va_end(ap);
}

/* The metadata (and a secret's token) of a 200 answer. */
static void bound_object_parse(enum bound_kind kind, const char *body, size_t len, struct bound_object *out)
{
    char why[128];
    struct json_value *root = json_parse((const unsigned char *)body, len, why, sizeof(why));
    const struct json_value *meta = json_get(root, "metadata");
    const char *uid = json_get_str(meta, "uid"), *deletion = json_get_str(meta, "deletionTimestamp");
    const struct json_value *labels = json_get(meta, "labels"), *data = json_get(root, "data");
    const char *token = kind == BOUND_SECRET ? json_get_str(data, "token") : NULL;

    if (root == NULL)
        bound_fail(out, "its answer is not JSON: %s", why);
    else if (uid == NULL || *uid == '\0' || !bound_uid_ok(uid))
        bound_fail(out, "its answer has no usable metadata.uid");
    else if (deletion != NULL && (out->deletion = bound_time(deletion)) == 0)
        bound_fail(out, "its answer's metadata.deletionTimestamp is not a time");
    else {
        out->state = BOUND_FOUND;
        snprintf(out->uid, sizeof(out->uid), "%s", uid);
        out->legacy_invalid = json_get(labels, BOUND_INVALID_LABEL) != NULL;
        if ((out->has_token = token != NULL))
            SHA256((const unsigned char *)token, strlen(token), out->token_sha256);
    }
    json_free(root);
}

void bound_object_read(enum bound_kind kind, int status, const char *body, size_t len, struct bound_object *out)
{
    memset(out, 0, sizeof(*out));
    if (status == 200)
        bound_object_parse(kind, body, len, out);
    else if (status == 404)
        out->state = BOUND_MISSING;
    else if (status == 401 || status == 403)
        bound_fail(out, "the API server refused the lookup (HTTP %d): the server's credentials may not get %s", status,
                   bound_kind_paths[kind]);
    else {
        bound_fail(out, "the API server answered HTTP %d", status);
        out->unreachable = status >= 500 || status == 429;
    }
}

/* The outcome of one check: writes the message, returns -1. */
__attribute__((format(printf, 5, 6))) static int bound_refuse(enum bound_reason *reason, enum bound_reason why,
                                                              char *msg, size_t msglen, const char *fmt, ...)
{
    va_list ap;

    *reason = why;
    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
    return -1;
}

/* "pod team-a/web-0" or "node n1", as messages name an object. */
static void bound_name(const struct bound_ref *r, char *out, size_t len)
{
    snprintf(out, len, "%s %s%s%s", bound_kind_names[r->kind], r->ns, *r->ns ? "/" : "", r->name);
}

/* A bound token's deletion rule: asked for before now minus the leeway
 * (a graceful deletion's timestamp is when the grace ends). A legacy
 * token's: asked for at all. */
static int bound_deleted(const struct bound_object *o, int legacy, time_t now)
{
    return o->deletion != 0 && (legacy || o->deletion < (int64_t)now - BOUND_DELETION_LEEWAY);
}

static const enum bound_reason bound_deleted_reasons[BOUND_NKINDS] = {BOUND_SERVICEACCOUNT_DELETED, BOUND_POD_DELETED,
                                                                      BOUND_SECRET_DELETED, BOUND_NODE_DELETED};

/* The service account, as kube-apiserver checks it (its getter's
 * NotFound error, then deletion, then uid). */
static int bound_judge_sa(const struct bound_ref *r, const struct bound_object *o, int legacy, time_t now,
                          enum bound_reason *reason, char *msg, size_t msglen)
{
    if (o->state == BOUND_MISSING)
        return bound_refuse(reason, BOUND_SERVICEACCOUNT_DELETED, msg, msglen, "serviceaccounts \"%s\" not found",
                            r->name);
    if (bound_deleted(o, legacy, now))
        return bound_refuse(reason, BOUND_SERVICEACCOUNT_DELETED, msg, msglen, "service account %s/%s has been deleted",
                            r->ns, r->name);
    if (strcmp(o->uid, r->uid) != 0)
        return bound_refuse(reason, BOUND_UID_MISMATCH, msg, msglen,
                            "service account UID (%s) does not match claim (%s)", o->uid, r->uid);
    return 0;
}

/* A legacy token's secret: there, not being deleted nor marked invalid,
 * and still holding this token. */
static int bound_judge_legacy_secret(const struct bound_claims *c, const struct bound_ref *r,
                                     const struct bound_object *o, enum bound_reason *reason, char *msg, size_t msglen)
{
    char name[BOUND_KEY_MAX + 16];

    bound_name(r, name, sizeof(name));
    if (o->state == BOUND_MISSING)
        return bound_refuse(reason, BOUND_SECRET_DELETED, msg, msglen,
                            "token has been invalidated: %s no longer exists", name);
    if (o->deletion != 0)
        return bound_refuse(reason, BOUND_SECRET_DELETED, msg, msglen,
                            "token has been invalidated: %s is being deleted", name);
    if (o->legacy_invalid)
        return bound_refuse(reason, BOUND_SECRET_DELETED, msg, msglen,
                            "the token in %s has been marked invalid (label " BOUND_INVALID_LABEL ")", name);
    if (!o->has_token || memcmp(o->token_sha256, c->token_sha256, sizeof(c->token_sha256)) != 0)
        return bound_refuse(reason, BOUND_TOKEN_MISMATCH, msg, msglen, "token does not match server's copy");
    return 0;
}

/* A bound token's secret, pod or node: there, with the token's uid, and
 * not deleted past the leeway. kube says "service account token has been
 * invalidated" for the first and last; the object is named after it. */
static int bound_judge_object(const struct bound_ref *r, const struct bound_object *o, time_t now,
                              enum bound_reason *reason, char *msg, size_t msglen)
{
    static const char *const claim[BOUND_NKINDS] = {"", "pod ref", "secret ref", "node ref"};
    static const char *const kube_uid[BOUND_NKINDS] = {"", "pod UID", "secret UID", "node UID"};
    enum bound_reason deleted = bound_deleted_reasons[r->kind];
    char name[BOUND_KEY_MAX + 16];

    if (o->state == BOUND_FOUND && strcmp(o->uid, r->uid) == 0 && !bound_deleted(o, 0, now))
        return 0; /* the common case, without formatting a name */
    bound_name(r, name, sizeof(name));
    if (o->state == BOUND_MISSING)
        return bound_refuse(reason, deleted, msg, msglen,
                            "service account token has been invalidated: %s (uid %s) no longer exists", name, r->uid);
    if (strcmp(o->uid, r->uid) != 0)
        return bound_refuse(reason, BOUND_UID_MISMATCH, msg, msglen,
                            "%s (%s) does not match service account %s claim (%s)", kube_uid[r->kind], o->uid,
                            claim[r->kind], r->uid);
    if (bound_deleted(o, 0, now))
        return bound_refuse(reason, deleted, msg, msglen,
                            "service account token has been invalidated: %s (uid %s) is being deleted", name, r->uid);
    return 0;
}

int bound_judge(const struct bound_claims *c, const struct bound_object *objs, time_t now, enum bound_reason *reason,
                char *msg, size_t msglen)
{
    *reason = BOUND_OK;
    msg[0] = '\0';
    for (size_t i = 0; i < c->n; i++) {
        const struct bound_ref *r = &c->refs[i];
        const struct bound_object *o = &objs[i];
        char name[BOUND_KEY_MAX + 16];
        int rc;

        if (o->state == BOUND_FAILED) {
            bound_name(r, name, sizeof(name));
            return bound_refuse(reason, o->unreachable ? BOUND_API_UNREACHABLE : BOUND_API_ERROR, msg, msglen,
                                "cannot confirm that %s still exists: %s; refused until the API server answers", name,
                                o->error);
        }
        if (r->kind == BOUND_SERVICEACCOUNT)
            rc = bound_judge_sa(r, o, c->legacy, now, reason, msg, msglen);
        else if (c->legacy)
            rc = bound_judge_legacy_secret(c, r, o, reason, msg, msglen);
        else
            rc = bound_judge_object(r, o, now, reason, msg, msglen);
        if (rc != 0)
            return rc;
    }
    return 0;
}
