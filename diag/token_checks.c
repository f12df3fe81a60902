/* SPDX-License-Identifier: Apache-2.0 */
#include "diag/token_checks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/checks.h"
#include "diag/issuer.h"
#include "keys/jwks_parse.h"
#include "jose/jws.h"
#include "jose/jwt.h"
#include "jose/verifier.h"
#include "util/printable.h"

/* How much of a claim a message quotes. */
#define TOKEN_SHOWN 200

/* The form of a service account's sub (docs/compatibility.md §4). */
#define SUB_PREFIX "system:serviceaccount:"

/* Splits the token and parses its header and payload; "token.format". */
static int parse_token(struct diag_report *r, const char *token, size_t len, struct diag_token *out,
                       struct jwt_parts *parts)
{
    char why[128] = "";
    struct diag_check *c;
    int rc = jwt_split(token, len, parts);

    if (rc == 0 && (out->header = json_parse(parts->seg[0], parts->seglen[0], why, sizeof(why))) != NULL &&
        (out->payload = json_parse(parts->seg[1], parts->seglen[1], why, sizeof(why))) != NULL) {
        diag_add(r, DIAG_PASS, "token.format", "a JWS of %zu characters with JSON header and claims", len);
        return 0;
    }
    c = diag_add(r, DIAG_FAIL, "token.format", "the token is not a compact JWS%s%s",
                 rc == -1 ? " (it needs three dot-separated parts)"
                 : rc < 0 ? " (a part is not base64url)"
                          : ": ",
                 rc < 0 ? "" : why);
    diag_fix(r, c, "give --token-file a service-account token as the pod reads it (a projected token file)");
    return -1;
}

/* "token.kid" and "token.key": the header names a kid the JWKS publishes.
 * Returns whether the JWKS holds the token's kid. */
static int check_kid(struct diag_report *r, const char *kid, const struct diag_jwks *jwks)
{
    char shown[TOKEN_SHOWN + 8];
    struct diag_check *c;

    if (kid == NULL) {
        c = diag_add(r, DIAG_FAIL, "token.kid", "the header has no kid; relying parties pick the key by it");
        diag_fix(r, c, "sign with kube-apiserver, which puts the key's kid in every token");
        return 0;
    }
    printable_quote(kid, shown, sizeof(shown));
    diag_add(r, DIAG_PASS, "token.kid", "kid %s", shown);
    for (size_t i = 0; jwks != NULL && i < jwks->count; i++) {
        if (jwks->kids[i] != NULL && strcmp(jwks->kids[i], kid) == 0) {
            diag_add(r, DIAG_PASS, "token.key", "the JWKS publishes kid %s (keys[%zu])", shown, i);
            return 1;
        }
    }
    if (jwks != NULL) {
        c = diag_add(r, DIAG_FAIL, "token.key",
                     "the JWKS publishes no key with kid %s: the token was signed by an "
                     "unpublished key",
                     shown);
        diag_fix(r, c,
                 "publish the public key of the signing key (--service-account-key-file) and wait the JWKS's "
                 "max-age before signing with a new key");
    }
    return 0;
}

/* The more telling of two outcomes of trying keys: a key of the alg that
 * did not verify says more than one of another alg, which says more than
 * no key at all; the first verification failure is kept. */
static enum token_error more_telling(enum token_error so_far, enum token_error e)
{
    if (so_far == TOKEN_ERR_UNKNOWN_KID)
        return e;
    if (so_far == TOKEN_ERR_ALG_MISMATCH && e != TOKEN_ERR_UNKNOWN_KID)
        return e;
    return so_far;
}

/* Verifies the signature with the one key of ks (jwks_parse_key's).
 * *alg_seen is that key's alg. */
static enum token_error verify_with(struct diag_report *r, const struct keyset *ks, const struct jws_alg *alg,
                                    const struct jwt_parts *parts, const char **alg_seen)
{
    struct verifier *v;
    enum token_error e;

    *alg_seen = ks->keys[0].alg;
    if (strcmp(ks->keys[0].alg, alg->name) != 0)
        return TOKEN_ERR_ALG_MISMATCH;
    if ((v = verifier_new(ks)) == NULL) {
        r->out_of_memory = 1;
        return TOKEN_ERR_UNKNOWN_KID;
    }
    e = jws_verify(alg, &v->prepared[0], parts->signing_input, parts->signing_input_len, parts->seg[2],
                   parts->seglen[2]);
    verifier_free(v);
    return e;
}

/* Tries each published key under kid (every key without a kid), one at a
 * time, as relying parties try the candidates a kid names: node jose
 * accepts a token whose kid is unique in a JWKS where another kid names
 * two keys, and tries both keys of a kid that names two. Returns TOKEN_OK
 * or the most telling failure; *alg_seen is the alg of a key of that kid
 * (NULL: none). */
static enum token_error verify_published(struct diag_report *r, const struct diag_token_input *in,
                                         const struct jws_alg *alg, const char *kid, const struct jwt_parts *parts,
                                         const char **alg_seen)
{
    enum token_error result = TOKEN_ERR_UNKNOWN_KID;
    char err[256];

    for (size_t i = 0; i < in->jwks->count && result != TOKEN_OK; i++) {
        struct keyset *ks;
        if (kid != NULL && (in->jwks->kids[i] == NULL || strcmp(in->jwks->kids[i], kid) != 0))
            continue;
        if ((ks = jwks_parse_key(in->jwks_body, in->jwks_len, i, err, sizeof(err))) == NULL)
            continue; /* a key no relying party can use: the jwks checks say why */
        result = more_telling(result, verify_with(r, ks, alg, parts, alg_seen));
        keyset_free(ks);
    }
    return result;
}

/* Reports what verify_published found. */
static void report_signature(struct diag_report *r, enum token_error e, const struct jws_alg *alg, const char *alg_seen)
{
    struct diag_check *c;

    switch (e) {
    case TOKEN_OK:
        diag_add(r, DIAG_PASS, "token.signature", "the %s signature verifies with the published key", alg->name);
        return;
    case TOKEN_ERR_UNKNOWN_KID:
        c = diag_add(r, DIAG_FAIL, "token.signature",
                     "no published key of the token's kid and alg can verify it (see the jwks checks)");
        break;
    case TOKEN_ERR_ALG_MISMATCH:
        c = diag_add(r, DIAG_FAIL, "token.signature", "the token says %s, but the published key is %s", alg->name,
                     alg_seen ? alg_seen : "another");
        break;
    default:
        c = diag_add(r, DIAG_FAIL, "token.signature",
                     "the signature does not verify with the published key (%s): it was signed by another key "
                     "under the same kid, or altered",
                     token_error_name(e));
        break;
    }
    diag_fix(r, c,
             "publish the public half of the key that signs the tokens (the API server's "
             "--service-account-signing-key-file)");
}

/* "token.signature": verified as relying parties verify, with jose/ and
 * the keys it reads from the published JWKS. */
static void check_signature(struct diag_report *r, const struct jwt_parts *parts, const char *alg_name, const char *kid,
                            const struct diag_token_input *in)
{
    const struct jws_alg *alg = alg_name ? jws_alg_find(alg_name) : NULL;
    const char *alg_seen = NULL;
    char shown[TOKEN_SHOWN + 8];
    struct diag_check *c;

    if (alg == NULL) {
        c = diag_add(r, DIAG_FAIL, "token.signature", "alg %s is none of RS256, ES256, ES384 and ES512",
                     alg_name ? printable_quote(alg_name, shown, sizeof(shown)) : "(none)");
        diag_fix(r, c, "sign with kube-apiserver's algorithms (RSA: RS256; ECDSA: ES256, ES384, ES512)");
    } else if (in->jwks == NULL) {
        c = diag_add(r, DIAG_FAIL, "token.signature", "the JWKS cannot be read to verify with");
        diag_fix(r, c, "fix the JWKS as the jwks checks say");
    } else {
        report_signature(r, verify_published(r, in, alg, kid, parts, &alg_seen), alg, alg_seen);
    }
}

/* "token.iss": byte for byte the issuer. */
static void check_iss(struct diag_report *r, const char *iss, const char *issuer)
{
    char diff[128], a[TOKEN_SHOWN + 8], b[TOKEN_SHOWN + 8];
    struct diag_check *c;

    if (iss == NULL) {
        c = diag_add(r, DIAG_FAIL, "token.iss", "the token has no iss string");
        diag_fix(r, c, "use a bound service-account token (Kubernetes 1.21 or later), not a legacy one");
    } else if (!issuer_difference(issuer, iss, diff, sizeof(diff))) {
        diag_add(r, DIAG_PASS, "token.iss", "iss %s is --issuer byte for byte", printable_quote(iss, a, sizeof(a)));
    } else {
        c = diag_add(r, DIAG_FAIL, "token.iss", "iss %s differs from --issuer %s by %s",
                     printable_quote(iss, a, sizeof(a)), printable_quote(issuer, b, sizeof(b)), diff);
        diag_fix(r, c, "make the API server's --service-account-issuer the published issuer, byte for byte");
    }
}

/* Whether aud (a string or an array of strings) holds want. */
static int aud_has(const struct json_value *aud, const char *want)
{
    if (aud->type == JSON_STRING)
        return strcmp(aud->str, want) == 0;
    for (const struct json_value *v = aud->child; v != NULL; v = v->next)
        if (v->type == JSON_STRING && strcmp(v->str, want) == 0)
            return 1;
    return 0;
}

/* "token.aud": holds every --audience. */
static void check_aud(struct diag_report *r, const struct json_value *payload, const struct diag_token_input *in)
{
    const struct json_value *aud = json_get(payload, "aud");
    char shown[TOKEN_SHOWN + 8];
    struct diag_check *c;

    if (aud == NULL || (aud->type != JSON_STRING && aud->type != JSON_ARRAY)) {
        c = diag_add(r, DIAG_FAIL, "token.aud", "the token has no aud; relying parties require their own audience");
        diag_fix(r, c, "request a projected token with the relying party's audience (serviceAccountToken.audience)");
        return;
    }
    for (size_t i = 0; i < in->naudiences; i++) {
        if (aud_has(aud, in->audiences[i]))
            continue;
        c = diag_add(r, DIAG_FAIL, "token.aud", "aud does not hold %s, the audience the relying party expects",
                     printable_quote(in->audiences[i], shown, sizeof(shown)));
        diag_fix(r, c,
                 "request the projected token with that audience (serviceAccountToken.audience), or register "
                 "the token's audience with the relying party");
        return;
    }
    if (in->naudiences > 0)
        diag_add(r, DIAG_PASS, "token.aud", "aud holds every --audience");
    else
        diag_add(r, DIAG_PASS, "token.aud", "the token has an aud (give --audience to check it holds yours)");
}

/* A NumericDate claim: 1 with *t, 0 absent, -1 not a number. */
static int date_of(const struct json_value *payload, const char *name, time_t *t)
{
    const struct json_value *v = json_get(payload, name);

    if (v == NULL)
        return 0;
    if (v->type != JSON_NUMBER || !isfinite(v->num) || fabs(v->num) > 1e15)
        return -1;
    *t = (time_t)v->num;
    return 1;
}

/* "token.lifetime": exp, nbf and iat against now, with the leeway; a
 * token past its exp but inside the leeway is about to be refused. */
static void check_times(struct diag_report *r, const struct json_value *payload, const struct diag_token_input *in)
{
    time_t exp = 0, nbf = 0, iat = 0;
    int has_exp = date_of(payload, "exp", &exp), has_nbf = date_of(payload, "nbf", &nbf);
    int has_iat = date_of(payload, "iat", &iat);
    long lw = (long)in->leeway;
    enum diag_status status = DIAG_FAIL;
    struct diag_check *c;

    if (has_exp < 0 || has_nbf < 0 || has_iat < 0 || has_exp == 0) {
        c = diag_add(r, status, "token.lifetime", "%s",
                     has_exp == 0 ? "the token has no exp: it never expires" : "exp, nbf or iat is not a number");
    } else if (exp + lw <= in->now) {
        c = diag_add(r, status, "token.lifetime", "the token expired %lld s ago", (long long)(in->now - exp));
    } else if (has_nbf && nbf - lw > in->now) {
        c = diag_add(r, status, "token.lifetime", "the token is not valid for another %lld s (nbf)",
                     (long long)(nbf - in->now));
    } else if (has_iat && iat - lw > in->now) {
        c = diag_add(r, status, "token.lifetime", "the token is issued %lld s in the future (iat): clocks differ",
                     (long long)(iat - in->now));
    } else if (exp <= in->now) {
        status = DIAG_WARN;
        c = diag_add(r, status, "token.lifetime",
                     "the token expired %lld s ago, inside the %ld s leeway of kube-apiserver: about to be refused",
                     (long long)(in->now - exp), lw);
    } else {
        if (has_iat)
            diag_add(r, DIAG_PASS, "token.lifetime", "valid for another %lld s (lifetime %lld s)",
                     (long long)(exp - in->now), (long long)(exp - iat));
        else
            diag_add(r, DIAG_PASS, "token.lifetime", "valid for another %lld s (no iat)", (long long)(exp - in->now));
        return;
    }
    diag_fix(r, c, "use a current projected token (the kubelet renews it), and keep the clocks in sync");
}

/* "token.sub": system:serviceaccount:NAMESPACE:NAME, which relying
 * parties' trust conditions (AWS's :sub, Entra's subject) are written
 * against. */
static void check_sub(struct diag_report *r, const char *sub)
{
    char shown[TOKEN_SHOWN + 8], ns[256];
    const char *rest = sub && strncmp(sub, SUB_PREFIX, strlen(SUB_PREFIX)) == 0 ? sub + strlen(SUB_PREFIX) : NULL;
    const char *colon = rest ? strchr(rest, ':') : NULL;
    struct diag_check *c;

    if (colon != NULL && (size_t)(colon - rest) < sizeof(ns)) {
        snprintf(ns, sizeof(ns), "%.*s", (int)(colon - rest), rest);
        if (config_check_dns_name(ns) == NULL && config_check_dns_name(colon + 1) == NULL) {
            diag_add(r, DIAG_PASS, "token.sub", "sub %s", printable_quote(sub, shown, sizeof(shown)));
            return;
        }
    }
    c = diag_add(r, DIAG_WARN, "token.sub", "sub %s is not system:serviceaccount:NAMESPACE:NAME",
                 sub ? printable_quote(sub, shown, sizeof(shown)) : "missing");
    diag_fix(r, c, "check the subject the relying party's trust conditions name (AWS :sub, Entra subject)");
}

int diag_token_check(struct diag_report *r, const char *token, size_t len, const struct diag_token_input *in,
                     struct diag_token *out)
{
    struct jwt_parts parts = {0};
    const char *kid;

    memset(out, 0, sizeof(*out));
    if (parse_token(r, token, len, out, &parts) != 0) {
        diag_token_clear(out);
        jwt_parts_clear(&parts);
        return -1;
    }
    out->alg = json_get_str(out->header, "alg");
    out->iss = json_get_str(out->payload, "iss");
    kid = json_get_str(out->header, "kid");
    if (check_kid(r, kid, in->jwks) || (kid == NULL && in->jwks != NULL))
        check_signature(r, &parts, out->alg, kid, in);
    check_iss(r, out->iss, in->issuer);
    check_aud(r, out->payload, in);
    check_times(r, out->payload, in);
    check_sub(r, json_get_str(out->payload, "sub"));
    jwt_parts_clear(&parts);
    return 0;
}

void diag_token_clear(struct diag_token *t)
{
    json_free(t->header);
    json_free(t->payload);
    memset(t, 0, sizeof(*t));
}
