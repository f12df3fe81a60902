/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/token.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jose/jws.h"
#include "jose/verifier.h"
#include "jose/jwt.h"
#include "util/printable.h"
#include "jose/token_user.h"

/* NumericDates beyond 2^53 seconds cannot be exact in a double and are not
 * dates anyway; bounding them (and the leeway) keeps the time arithmetic
 * free of overflow. */
#define TOKEN_DATE_MAX   9007199254740992.0
#define TOKEN_LEEWAY_MAX ((unsigned long)1 << 53)

#define TOKEN_SA_PREFIX    "system:serviceaccount:"
#define TOKEN_SA_GROUP     "system:serviceaccounts"
#define TOKEN_EXTRA_PREFIX "authentication.kubernetes.io/"

#define TOKEN_LEGACY_NS      "kubernetes.io/serviceaccount/namespace"
#define TOKEN_LEGACY_SECRET  "kubernetes.io/serviceaccount/secret.name"
#define TOKEN_LEGACY_SA_NAME "kubernetes.io/serviceaccount/service-account.name"
#define TOKEN_LEGACY_SA_UID  "kubernetes.io/serviceaccount/service-account.uid"

static const char *const token_error_names[] = {
    [TOKEN_OK] = "ok",
    [TOKEN_ERR_TOO_LARGE] = "too_large",
    [TOKEN_ERR_SEGMENTS] = "segments",
    [TOKEN_ERR_BASE64] = "base64",
    [TOKEN_ERR_JSON] = "json",
    [TOKEN_ERR_ALG_NONE] = "alg_none",
    [TOKEN_ERR_ALG_HMAC] = "alg_hmac",
    [TOKEN_ERR_ALG_UNSUPPORTED] = "alg_unsupported",
    [TOKEN_ERR_ALG_MISMATCH] = "alg_mismatch",
    [TOKEN_ERR_CRIT] = "crit",
    [TOKEN_ERR_EMBEDDED_KEY] = "embedded_key",
    [TOKEN_ERR_UNKNOWN_KID] = "unknown_kid",
    [TOKEN_ERR_ECDSA_FORMAT] = "ecdsa_format",
    [TOKEN_ERR_SIGNATURE] = "signature",
    [TOKEN_ERR_CLAIM_TYPE] = "claim_type",
    [TOKEN_ERR_EXPIRED] = "expired",
    [TOKEN_ERR_NOT_YET_VALID] = "not_yet_valid",
    [TOKEN_ERR_ISSUED_IN_FUTURE] = "issued_in_future",
    [TOKEN_ERR_ISSUER] = "issuer",
    [TOKEN_ERR_AUDIENCE] = "audience",
    [TOKEN_ERR_LEGACY] = "legacy",
    [TOKEN_ERR_CLAIMS] = "claims",
};

const char *token_error_name(enum token_error e)
{
    if ((size_t)e >= sizeof(token_error_names) / sizeof(token_error_names[0]) || token_error_names[e] == NULL)
        return "unknown";
    return token_error_names[e];
}

/* Header members that bring their own key or its location: trusting any of
 * them would let the token choose the key that verifies it. */
static const char *const token_embedded_key_members[] = {"jku", "x5u", "jwk", "x5c"};
static const char *const token_hmac_algs[] = {"HS256", "HS384", "HS512"};

/* The claims of a service-account token, pointing into the payload tree. */
struct token_sa {
    const char *ns, *name, *uid;
    const char *pod[2], *node[2], *secret[2]; /* name, uid; NULL when absent */
    const char *jti;
    int64_t exp; /* 0 when absent (legacy) */
};

/* Records why the token is refused; returns -1 so that callers can
 * `return token_fail(...)`. */
__attribute__((format(printf, 3, 4))) static int token_fail(struct token_result *out, enum token_error e,
                                                            const char *fmt, ...)
{
    va_list ap;

    out->error = e;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
    return -1;
}

/* Appends to a NUL-terminated buffer, truncating when it is full. */
__attribute__((format(printf, 3, 4))) static void token_append(char *dst, size_t size, const char *fmt, ...)
{
    size_t len = strlen(dst);
    va_list ap;

    if (len + 1 >= size)
        return;
    va_start(ap, fmt);
    vsnprintf(dst + len, size - len, fmt, ap);
    va_end(ap);
}

/* Appends s quoted (printable_quote), so that token text echoed in a
 * message can neither break a log line nor fake a quote. */
static void token_quote(char *dst, size_t size, const char *s)
{
    size_t len = strlen(dst);

    if (size - len >= PRINTABLE_QUOTE_MIN)
        printable_quote(s, dst + len, size - len);
}

/* Writes a list as Go's %q prints a []string: ["a" "b"]. */
static void token_quote_list(char *dst, size_t size, const char *const *v, size_t n)
{
    dst[0] = '\0';
    token_append(dst, size, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            token_append(dst, size, " ");
        token_quote(dst, size, v[i]);
    }
    token_append(dst, size, "]");
}

/* token_fail with s quoted (token_quote) for the one %s of fmt: quoting
 * costs, so it is done on refusal only. */
__attribute__((format(printf, 3, 0))) static int token_fail_quoted(struct token_result *out, enum token_error e,
                                                                   const char *fmt, const char *s)
{
    char q[64] = "";

    token_quote(q, sizeof(q), s);
    return token_fail(out, e, fmt, q);
}

/* Refuses alg none, HMAC, and any algorithm the policy does not allow, then
 * crit and self-supplied keys. Sets *alg. */
static int token_check_header(const struct json_value *h, const struct token_policy *pol, const struct jws_alg **alg,
                              struct token_result *out)
{
    const struct json_value *v = json_get(h, "alg");
    unsigned allowed = pol->algs ? pol->algs : TOKEN_ALG_ALL;

    if (v == NULL || v->type != JSON_STRING)
        return token_fail(out, TOKEN_ERR_ALG_UNSUPPORTED, "token header has no alg string");
    if (strcmp(v->str, "none") == 0)
        return token_fail(out, TOKEN_ERR_ALG_NONE, "unsigned token (alg \"none\") refused");
    for (size_t i = 0; i < sizeof(token_hmac_algs) / sizeof(token_hmac_algs[0]); i++)
        if (strcmp(v->str, token_hmac_algs[i]) == 0)
            return token_fail_quoted(out, TOKEN_ERR_ALG_HMAC, "HMAC-signed token (alg %s) refused", v->str);
    *alg = jws_alg_find(v->str);
    if (*alg == NULL || ((*alg)->mask & allowed) == 0)
        return token_fail_quoted(out, TOKEN_ERR_ALG_UNSUPPORTED, "token alg %s is not supported", v->str);
    if (json_get(h, "crit") != NULL)
        return token_fail(out, TOKEN_ERR_CRIT, "token header has crit: no JWS extension is understood");
    for (size_t i = 0; i < sizeof(token_embedded_key_members) / sizeof(token_embedded_key_members[0]); i++)
        if (json_get(h, token_embedded_key_members[i]) != NULL)
            return token_fail(out, TOKEN_ERR_EMBEDDED_KEY,
                              "token header carries its own key (%s): only the configured keys are trusted",
                              token_embedded_key_members[i]);
    return 0;
}

/* Turns the outcome of one signature check into the result. */
static int token_signature_outcome(enum token_error e, const struct jws_alg *alg, struct token_result *out)
{
    if (e == TOKEN_ERR_ECDSA_FORMAT)
        return token_fail(out, e, "malformed %s signature: not %zu bytes of r || s with 0 < r, s < n", alg->name,
                          2 * alg->coord_len);
    if (e == TOKEN_ERR_SIGNATURE)
        return token_fail(out, e, "token signature is invalid");
    return 0;
}

/* How many keys of alg's the set holds. */
static size_t token_keys_of_alg(const struct verifier *v, const struct jws_alg *alg)
{
    size_t n = 0;

    for (size_t i = 0; i < v->keys->count; i++)
        n += strcmp(v->keys->keys[i].alg, alg->name) == 0;
    return n;
}

/* Verifies the signature with the key the kid names. Without a kid, with
 * each key of the alg's type until one verifies, as kube-apiserver does,
 * but with at most TOKEN_KIDLESS_MAX_KEYS of them (one, and only when it
 * is the only one, under kidless_one_key): each is a signature check that
 * anyone can make the server do for the price of one token. */
static int token_check_signature(const struct verifier *v, const struct json_value *h, const struct jws_alg *alg,
                                 const struct jwt_parts *parts, const struct token_policy *pol,
                                 struct token_result *out)
{
    const struct json_value *kid = json_get(h, "kid");
    const struct jws_key *k;
    enum token_error e;
    size_t tried = 0, skipped = 0, candidates;

    if (kid != NULL) {
        if (kid->type != JSON_STRING || (k = verifier_find(v, kid->str)) == NULL)
            return token_fail(out, TOKEN_ERR_UNKNOWN_KID, "token kid is not one of the configured keys");
        if (strcmp(k->key->alg, alg->name) != 0)
            return token_fail(out, TOKEN_ERR_ALG_MISMATCH, "token alg %s does not match its key (%s)", alg->name,
                              k->key->alg);
        out->signature_checks = 1;
        e = jws_verify(alg, k, parts->signing_input, parts->signing_input_len, parts->seg[2], parts->seglen[2]);
        return token_signature_outcome(e, alg, out);
    }
    if (pol->kidless_one_key && (candidates = token_keys_of_alg(v, alg)) > 1)
        return token_fail(out, TOKEN_ERR_UNKNOWN_KID,
                          "token has no kid and %zu %s keys are configured: a caller's token without kid is "
                          "checked only when one key of its alg is",
                          candidates, alg->name);
    for (size_t i = 0; i < v->keys->count; i++) {
        if (strcmp(v->keys->keys[i].alg, alg->name) != 0)
            continue;
        if (tried == TOKEN_KIDLESS_MAX_KEYS) {
            skipped++;
            continue;
        }
        tried++;
        out->signature_checks++;
        e = jws_verify(alg, &v->prepared[i], parts->signing_input, parts->signing_input_len, parts->seg[2],
                       parts->seglen[2]);
        /* A format error does not depend on the key: stop at the first. */
        if (e != TOKEN_ERR_SIGNATURE)
            return token_signature_outcome(e, alg, out);
    }
    if (tried == 0)
        return token_fail(out, TOKEN_ERR_UNKNOWN_KID, "token has no kid and no %s key is configured", alg->name);
    if (skipped > 0)
        return token_fail(out, TOKEN_ERR_UNKNOWN_KID,
                          "token has no kid and none of the first %d %s keys verifies its signature (a token "
                          "without kid is checked against at most %d keys; %zu more are configured)",
                          TOKEN_KIDLESS_MAX_KEYS, alg->name, TOKEN_KIDLESS_MAX_KEYS, skipped);
    return token_fail(out, TOKEN_ERR_UNKNOWN_KID, "token has no kid and no configured key verifies its signature");
}

/* Parses a decoded segment; what names it in the message. */
static struct json_value *token_parse(const unsigned char *json, size_t len, const char *what, struct token_result *out)
{
    char why[128];
    struct json_value *v = json_parse(json, len, why, sizeof(why));

    if (v == NULL)
        token_fail(out, TOKEN_ERR_JSON, "token %s is not valid: %s", what, why);
    return v;
}

/* Parses the decoded header into *owned, or, when it is exactly
 * kube-apiserver's compact form, into *compact without the JSON parser
 * (jwt_parse_compact_header: the same tree, so the same decisions). */
static const struct json_value *token_parse_header(const struct jwt_parts *parts, struct jwt_compact_header *compact,
                                                   struct json_value **owned, struct token_result *out)
{
    const struct json_value *h = jwt_parse_compact_header(parts->seg[0], parts->seglen[0], compact);

    return h != NULL ? h : (*owned = token_parse(parts->seg[0], parts->seglen[0], "header", out));
}

/* Reads the optional string member name of obj: 1 when present (in *s), 0
 * when absent, -1 when of another type. label names it in messages. */
static int token_get_string(const struct json_value *obj, const char *name, const char *label, const char **s,
                            struct token_result *out)
{
    const struct json_value *v = json_get(obj, name);

    *s = NULL;
    if (v == NULL)
        return 0;
    if (v->type != JSON_STRING)
        return token_fail(out, TOKEN_ERR_CLAIM_TYPE, "token claim %s is not a string", label);
    *s = v->str;
    return 1;
}

/* Same for a member that must be present and non-empty. Returns 0 or -1. */
static int token_need_string(const struct json_value *obj, const char *name, const char *label, const char **s,
                             struct token_result *out)
{
    int rc = token_get_string(obj, name, label, s, out);

    if (rc == 0 || (rc == 1 && **s == '\0'))
        return token_fail(out, TOKEN_ERR_CLAIMS, "token has no %s claim", label);
    return rc < 0 ? -1 : 0;
}

/* Reads an optional NumericDate: a JSON number, integer or not (RFC 7519),
 * truncated to whole seconds as Go's int64(f) does. Returns 1 when present
 * (in *t), 0 when absent, -1 when not a number or out of range. */
static int token_get_date(const struct json_value *payload, const char *name, int64_t *t, struct token_result *out)
{
    const struct json_value *v = json_get(payload, name);

    *t = 0;
    if (v == NULL)
        return 0;
    if (v->type != JSON_NUMBER)
        return token_fail(out, TOKEN_ERR_CLAIM_TYPE, "token claim %s is not a number", name);
    if (!(v->num >= -TOKEN_DATE_MAX && v->num <= TOKEN_DATE_MAX))
        return token_fail(out, TOKEN_ERR_CLAIM_TYPE, "token claim %s is out of range", name);
    *t = (int64_t)v->num;
    return 1;
}

/* exp, nbf and iat with the policy's leeway, as kube-apiserver checks them;
 * exp is required of bound tokens only. */
static int token_check_times(const struct json_value *payload, const struct token_policy *pol, int need_exp,
                             int64_t *exp, struct token_result *out)
{
    int64_t now = (int64_t)pol->now, nbf, iat;
    int64_t leeway = (int64_t)(pol->leeway < TOKEN_LEEWAY_MAX ? pol->leeway : TOKEN_LEEWAY_MAX);
    int has_exp, has_nbf, has_iat;

    if ((has_exp = token_get_date(payload, "exp", exp, out)) < 0 ||
        (has_nbf = token_get_date(payload, "nbf", &nbf, out)) < 0 ||
        (has_iat = token_get_date(payload, "iat", &iat, out)) < 0)
        return -1;
    if (!has_exp && need_exp)
        return token_fail(out, TOKEN_ERR_CLAIMS, "token has no exp claim");
    if (has_exp && *exp + leeway <= now)
        return token_fail(out, TOKEN_ERR_EXPIRED, "service account token has expired");
    if (has_nbf && nbf - leeway > now)
        return token_fail(out, TOKEN_ERR_NOT_YET_VALID, "service account token is not valid yet");
    if (has_iat && iat - leeway > now)
        return token_fail(out, TOKEN_ERR_ISSUED_IN_FUTURE, "service account token is issued in the future");
    return 0;
}

/* iss must be one of the policy's issuers, byte for byte; the legacy issuer
 * is a separate, opt-in case. Sets *legacy. */
static int token_check_issuer(const struct json_value *payload, const struct token_policy *pol, int *legacy,
                              struct token_result *out)
{
    const char *iss;
    char q[128] = "";

    if (token_get_string(payload, "iss", "iss", &iss, out) < 0)
        return -1;
    if (iss == NULL)
        return token_fail(out, TOKEN_ERR_ISSUER, "token has no iss claim");
    *legacy = strcmp(iss, TOKEN_LEGACY_ISSUER) == 0;
    if (*legacy)
        return pol->accept_legacy
                   ? 0
                   : token_fail(out, TOKEN_ERR_LEGACY, "legacy (Secret-based) service account tokens are not accepted");
    for (size_t i = 0; i < pol->nissuers; i++)
        if (strcmp(iss, pol->issuers[i]) == 0)
            return 0;
    token_quote(q, sizeof(q), iss);
    return token_fail(out, TOKEN_ERR_ISSUER, "token issuer %s is not accepted", q);
}

static int token_wanted(const struct token_policy *pol, const char *aud)
{
    for (size_t i = 0; i < pol->naudiences; i++)
        if (strcmp(aud, pol->audiences[i]) == 0)
            return 1;
    return 0;
}

/* Lists the token's aud, a string or an array of strings, into *auds
 * (pointers into the tree; malloc'ed array). */
static int token_get_audiences(const struct json_value *payload, const char ***auds, size_t *n,
                               struct token_result *out)
{
    const struct json_value *v = json_get(payload, "aud");
    const struct json_value *first = v != NULL && v->type == JSON_ARRAY ? v->child : v;
    size_t count = 0;

    *auds = NULL;
    *n = 0;
    /* A lone string is walked as a list of one: it ends at itself. */
    for (const struct json_value *e = first; e != NULL; e = e == v ? NULL : e->next, count++)
        if (e->type != JSON_STRING)
            return token_fail(out, TOKEN_ERR_CLAIM_TYPE, "token claim aud is not a string or an array of strings");
    if ((*auds = calloc(count + 1, sizeof(**auds))) == NULL)
        return token_fail(out, TOKEN_ERR_CLAIMS, "out of memory");
    for (const struct json_value *e = first; e != NULL; e = e == v ? NULL : e->next)
        (*auds)[(*n)++] = e->str;
    return 0;
}

/* Keeps the token audiences that are wanted, in token order, in the user;
 * none at all is kube-apiserver's audience error. A token without aud (a
 * legacy one) is taken to carry the API audiences, as kube-apiserver takes
 * it: it is good for what the server itself accepts, never for the other
 * audiences a review may ask for. */
static int token_check_audience(const struct json_value *payload, const struct token_policy *pol, struct token_user *u,
                                struct token_result *out)
{
    const char **claimed;
    const char *const *auds;
    size_t n;
    int rc = -1;

    if (token_get_audiences(payload, &claimed, &n, out) != 0)
        return -1;
    auds = claimed;
    if (n == 0) {
        auds = (const char *const *)pol->api_audiences;
        n = pol->napi_audiences;
    }
    if ((u->audiences = calloc(n + 1, sizeof(char *))) == NULL) {
        token_fail(out, TOKEN_ERR_CLAIMS, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (!token_wanted(pol, auds[i]))
            continue;
        if ((u->audiences[u->naudiences] = strdup(auds[i])) == NULL) {
            token_fail(out, TOKEN_ERR_CLAIMS, "out of memory");
            goto done;
        }
        u->naudiences++;
    }
    if (u->naudiences == 0) {
        char have[112], want[112];
        token_quote_list(have, sizeof(have), auds, n);
        token_quote_list(want, sizeof(want), (const char *const *)pol->audiences, pol->naudiences);
        token_fail(out, TOKEN_ERR_AUDIENCE, "token audiences %s is invalid for the target audiences %s", have, want);
        goto done;
    }
    rc = 0;
done:
    free(claimed);
    return rc;
}

/* A {name, uid} object claim kubernetes.io.<what>, with the labels of its
 * messages spelled out at compile time rather than printed per token. */
struct token_ref_claim {
    const char *what, *label, *name_label, *uid_label;
};
#define TOKEN_REF_CLAIM(what) what, "kubernetes.io." what, "kubernetes.io." what ".name", "kubernetes.io." what ".uid"
static const struct token_ref_claim token_ref_sa = {TOKEN_REF_CLAIM("serviceaccount")};
static const struct token_ref_claim token_ref_pod = {TOKEN_REF_CLAIM("pod")};
static const struct token_ref_claim token_ref_node = {TOKEN_REF_CLAIM("node")};
static const struct token_ref_claim token_ref_secret = {TOKEN_REF_CLAIM("secret")};

/* Reads the {name, uid} object claim rc: 1 when present and complete, 0
 * when absent, -1 otherwise. */
static int token_get_ref(const struct json_value *k8s, const struct token_ref_claim *rc, const char *ref[2],
                         struct token_result *out)
{
    const struct json_value *o = json_get(k8s, rc->what);

    if (o == NULL)
        return 0;
    if (o->type != JSON_OBJECT)
        return token_fail(out, TOKEN_ERR_CLAIM_TYPE, "token claim %s is not an object", rc->label);
    if (token_need_string(o, "name", rc->name_label, &ref[0], out) != 0 ||
        token_need_string(o, "uid", rc->uid_label, &ref[1], out) != 0)
        return -1;
    return 1;
}

/* The kubernetes.io claims of a bound token: namespace, service account,
 * and exactly one bound object (a pod-bound token may also name its node). */
static int token_bound_claims(const struct json_value *payload, struct token_sa *c, struct token_result *out)
{
    const struct json_value *k8s = json_get(payload, "kubernetes.io");
    const char *sa[2] = {NULL, NULL};
    int has_sa, has_pod, has_node, has_secret;

    if (k8s == NULL)
        return token_fail(out, TOKEN_ERR_CLAIMS, "token has no kubernetes.io claim");
    if (k8s->type != JSON_OBJECT)
        return token_fail(out, TOKEN_ERR_CLAIM_TYPE, "token claim kubernetes.io is not an object");
    if (token_need_string(k8s, "namespace", "kubernetes.io.namespace", &c->ns, out) != 0 ||
        (has_sa = token_get_ref(k8s, &token_ref_sa, sa, out)) < 0 ||
        (has_pod = token_get_ref(k8s, &token_ref_pod, c->pod, out)) < 0 ||
        (has_node = token_get_ref(k8s, &token_ref_node, c->node, out)) < 0 ||
        (has_secret = token_get_ref(k8s, &token_ref_secret, c->secret, out)) < 0)
        return -1;
    if (!has_sa)
        return token_fail(out, TOKEN_ERR_CLAIMS, "token has no kubernetes.io.serviceaccount claim");
    /* A token is bound to at most one object (a pod-bound one may name its
     * node too); `kubectl create token` issues tokens bound to none. */
    if (has_secret && (has_pod || has_node))
        return token_fail(out, TOKEN_ERR_CLAIMS, "token is bound to a secret and to a pod or node");
    c->name = sa[0];
    c->uid = sa[1];
    return 0;
}

/* The flat claims of a legacy (Secret-based) token, all required, as
 * kube-apiserver's legacy validator wants them. */
static int token_legacy_claims(const struct json_value *payload, struct token_sa *c, struct token_result *out)
{
    if (token_need_string(payload, TOKEN_LEGACY_NS, TOKEN_LEGACY_NS, &c->ns, out) != 0 ||
        token_need_string(payload, TOKEN_LEGACY_SECRET, TOKEN_LEGACY_SECRET, &c->secret[0], out) != 0 ||
        token_need_string(payload, TOKEN_LEGACY_SA_NAME, TOKEN_LEGACY_SA_NAME, &c->name, out) != 0 ||
        token_need_string(payload, TOKEN_LEGACY_SA_UID, TOKEN_LEGACY_SA_UID, &c->uid, out) != 0)
        return -1;
    return 0;
}

/* Ends token_concat's arguments: a null pointer of the type va_arg reads
 * (a bare NULL may be a plain 0 of another width in a variadic call). */
#define TOKEN_CONCAT_END ((const char *)NULL)

/* Joins the string arguments up to TOKEN_CONCAT_END into a new string
 * (plain copies: printf's machinery costs more than the rest of the user).
 * Counts a failure in *failed instead of returning it, so that building the
 * user is one straight sequence with one check. */
__attribute__((sentinel)) static char *token_concat(int *failed, ...)
{
    const char *part;
    size_t len = 0;
    char *s, *p;
    va_list ap;

    va_start(ap, failed);
    while ((part = va_arg(ap, const char *)) != NULL)
        len += strlen(part);
    va_end(ap);
    if ((s = p = malloc(len + 1)) == NULL) {
        *failed = 1;
        return NULL;
    }
    va_start(ap, failed);
    while ((part = va_arg(ap, const char *)) != NULL) {
        size_t n = strlen(part);
        memcpy(p, part, n);
        p += n;
    }
    va_end(ap);
    *p = '\0';
    return s;
}

/* Adds an extra, prefix then value, when the value is present and not
 * empty (kube-apiserver skips an empty jti); the key is static. */
static void token_add_extra(struct token_user *u, const char *key, const char *prefix, const char *value, int *failed)
{
    if (value == NULL || *value == '\0')
        return;
    u->extra[u->nextra].key = key;
    u->extra[u->nextra++].value = token_concat(failed, prefix, value, TOKEN_CONCAT_END);
}

/* Fills the user as kube-apiserver's service-account authenticator does. */
static int token_build_user(const struct token_sa *c, int legacy, struct token_user *u, struct token_result *out)
{
    int failed = 0;

    u->username = token_concat(&failed, TOKEN_SA_PREFIX, c->ns, ":", c->name, TOKEN_CONCAT_END);
    u->uid = token_concat(&failed, c->uid, TOKEN_CONCAT_END);
    u->groups[0] = token_concat(&failed, TOKEN_SA_GROUP, TOKEN_CONCAT_END);
    u->groups[1] = token_concat(&failed, TOKEN_SA_GROUP ":", c->ns, TOKEN_CONCAT_END);
    token_add_extra(u, TOKEN_EXTRA_PREFIX "pod-name", "", c->pod[0], &failed);
    token_add_extra(u, TOKEN_EXTRA_PREFIX "pod-uid", "", c->pod[1], &failed);
    token_add_extra(u, TOKEN_EXTRA_PREFIX "node-name", "", c->node[0], &failed);
    token_add_extra(u, TOKEN_EXTRA_PREFIX "node-uid", "", c->node[1], &failed);
    token_add_extra(u, TOKEN_EXTRA_PREFIX "credential-id", "JTI=", c->jti, &failed);
    u->exp = (time_t)c->exp;
    if (c->secret[0] != NULL)
        u->secret_name = token_concat(&failed, c->secret[0], TOKEN_CONCAT_END);
    if (c->secret[1] != NULL)
        u->secret_uid = token_concat(&failed, c->secret[1], TOKEN_CONCAT_END);
    u->legacy = legacy;
    return failed ? token_fail(out, TOKEN_ERR_CLAIMS, "out of memory") : 0;
}

/* Every claim check after the signature, in kube-apiserver's order, then
 * the user. */
static int token_check_claims(const struct json_value *payload, const struct token_policy *pol,
                              struct token_result *out)
{
    struct token_sa c = {0};
    const char *sub;
    int legacy = 0;

    if (token_check_issuer(payload, pol, &legacy, out) != 0 ||
        token_check_times(payload, pol, !legacy, &c.exp, out) != 0 ||
        token_check_audience(payload, pol, &out->user, out) != 0 ||
        (legacy ? token_legacy_claims(payload, &c, out) : token_bound_claims(payload, &c, out)) != 0 ||
        token_get_string(payload, "jti", "jti", &c.jti, out) < 0 ||
        token_need_string(payload, "sub", "sub", &sub, out) != 0 || token_build_user(&c, legacy, &out->user, out) != 0)
        return -1;
    if (strcmp(sub, out->user.username) != 0)
        return token_fail(out, TOKEN_ERR_CLAIMS, "token sub does not name its service account");
    return 0;
}

int token_verify(const struct verifier *v, const struct token_policy *policy, const char *token, size_t len,
                 struct token_result *out)
{
    size_t max = policy->max_size ? policy->max_size : TOKEN_DEFAULT_MAX_SIZE;
    struct jwt_parts parts = {0};
    struct json_value *owned_header = NULL, *payload = NULL;
    struct jwt_compact_header compact;
    const struct json_value *header;
    const struct jws_alg *alg = NULL;
    int rc = -1, split;

    memset(out, 0, sizeof(*out));
    if (len > max) {
        token_fail(out, TOKEN_ERR_TOO_LARGE, "token is larger than %zu bytes", max);
        goto done;
    }
    if ((split = jwt_split(token, len, &parts)) != 0) {
        if (split == -1)
            token_fail(out, TOKEN_ERR_SEGMENTS, "token is not three dot-separated segments");
        else
            token_fail(out, TOKEN_ERR_BASE64, "token segment is not unpadded base64url");
        goto done;
    }
    if ((header = token_parse_header(&parts, &compact, &owned_header, out)) == NULL ||
        token_check_header(header, policy, &alg, out) != 0 ||
        token_check_signature(v, header, alg, &parts, policy, out) != 0 ||
        (payload = token_parse(parts.seg[1], parts.seglen[1], "payload", out)) == NULL)
        goto done;
    rc = token_check_claims(payload, policy, out);
done:
    if (rc != 0)
        token_user_clear(&out->user);
    json_free(owned_header);
    json_free(payload);
    jwt_parts_clear(&parts);
    return rc;
}

void token_result_clear(struct token_result *r)
{
    token_user_clear(&r->user);
    r->error = TOKEN_OK;
    r->message[0] = '\0';
    r->signature_checks = 0;
}
