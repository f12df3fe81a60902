/* SPDX-License-Identifier: Apache-2.0 */
#include "diag/jwks_checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/b64url.h"
#include "util/printable.h"

/* RSA moduli below this are refused by relying parties (and by jose/);
 * below the second, a warning: kube-apiserver's own keys are 2048 bits. */
#define JWKS_RSA_REFUSED_BITS 1024
#define JWKS_RSA_WEAK_BITS    2048

/* How much of a JWK member a message quotes. */
#define JWKS_SHOWN 64

/* The curves of EC keys: the alg each implies and the size of x and y. */
static const struct jwks_curve {
    const char *crv, *alg;
    size_t coord_len;
} jwks_curves[] = {
    {"P-256", "ES256", 32},
    {"P-384", "ES384", 48},
    {"P-521", "ES512", 66},
};

/* The algorithms of an RSA key (RFC 7518 section 3.1). */
static const char *const jwks_rsa_algs[] = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", NULL};

/* Members only private or symmetric JWKs carry (RFC 7518 section 6). */
static const char *const jwks_private_members[] = {"d", "p", "q", "dp", "dq", "qi", "oth", "k", NULL};

/* What one JWK is, as far as the checks care. */
struct jwk_facts {
    const char *kty, *kid, *use, *alg, *crv;
    const struct jwks_curve *curve; /* EC on a known curve */
    const char *private_member;
    const char *foreign_member;
    char size_problem[96]; /* "", or what is wrong with its size */
    int refused_size;      /* the size problem is a FAIL */
};

/* Up to a few "keys[N]" of one finding, for a message. */
struct index_list {
    char text[160];
    size_t len, count;
};

static void list_add(struct index_list *l, size_t i)
{
    if (l->count++ < 8)
        l->len += (size_t)snprintf(l->text + l->len, sizeof(l->text) - l->len, "%skeys[%zu]", l->len ? ", " : "", i);
    else if (l->count == 9)
        snprintf(l->text + l->len, sizeof(l->text) - l->len, ", ...");
}

static const struct jwks_curve *find_curve(const char *crv)
{
    for (size_t i = 0; crv != NULL && i < sizeof(jwks_curves) / sizeof(jwks_curves[0]); i++)
        if (strcmp(crv, jwks_curves[i].crv) == 0)
            return &jwks_curves[i];
    return NULL;
}

/* Decodes the base64url member name; returns its bytes (caller frees) and
 * sets *n, or NULL when it is absent or not base64url. */
static unsigned char *decode_member(const struct json_value *jwk, const char *name, size_t *n)
{
    const char *s = json_get_str(jwk, name);
    unsigned char *out = s ? malloc(B64URL_DECODED_MAX(strlen(s)) + 1) : NULL;

    if (out != NULL && b64url_decode(s, strlen(s), out, n) != 0) {
        free(out);
        out = NULL;
    }
    return out;
}

/* The bits of a big-endian unsigned integer. */
static size_t bit_length(const unsigned char *b, size_t n)
{
    while (n > 0 && b[0] == 0)
        b++, n--;
    if (n == 0)
        return 0;
    size_t bits = 8 * n;
    for (unsigned char top = b[0]; !(top & 0x80); top <<= 1)
        bits--;
    return bits;
}

/* RSA: n of at least JWKS_RSA_WEAK_BITS bits, and an e. */
static void judge_rsa_size(const struct json_value *jwk, struct jwk_facts *k)
{
    size_t nlen = 0, elen = 0, bits;
    unsigned char *n = decode_member(jwk, "n", &nlen), *e = decode_member(jwk, "e", &elen);

    if (n == NULL || e == NULL || nlen == 0 || elen == 0) {
        snprintf(k->size_problem, sizeof(k->size_problem), "has no valid base64url n and e");
        k->refused_size = 1;
    } else if ((bits = bit_length(n, nlen)) < JWKS_RSA_WEAK_BITS) {
        snprintf(k->size_problem, sizeof(k->size_problem), "is an RSA key of %zu bits", bits);
        k->refused_size = bits < JWKS_RSA_REFUSED_BITS;
    }
    free(n);
    free(e);
}

/* EC: x and y of exactly the curve's size. */
static void judge_ec_size(const struct json_value *jwk, struct jwk_facts *k)
{
    size_t xlen = 0, ylen = 0;
    unsigned char *x = decode_member(jwk, "x", &xlen), *y = decode_member(jwk, "y", &ylen);

    if (x == NULL || y == NULL || xlen != k->curve->coord_len || ylen != k->curve->coord_len) {
        snprintf(k->size_problem, sizeof(k->size_problem), "has no valid x and y of %zu bytes for %s",
                 k->curve->coord_len, k->curve->crv);
        k->refused_size = 1;
    }
    free(x);
    free(y);
}

/* Reads what the checks need of one JWK. */
static void read_jwk(const struct json_value *jwk, struct jwk_facts *k)
{
    memset(k, 0, sizeof(*k));
    k->kty = json_get_str(jwk, "kty");
    k->kid = json_get_str(jwk, "kid");
    k->use = json_get_str(jwk, "use");
    k->alg = json_get_str(jwk, "alg");
    k->crv = json_get_str(jwk, "crv");
    k->curve = k->kty && strcmp(k->kty, "EC") == 0 ? find_curve(k->crv) : NULL;
    for (const struct json_value *m = jwk->child; m != NULL; m = m->next) {
        if (k->private_member == NULL && rp_listed(jwks_private_members, m->name))
            k->private_member = m->name;
        if (k->foreign_member == NULL && !rp_gcp_member_ok(m->name))
            k->foreign_member = m->name;
    }
    if (k->kty && strcmp(k->kty, "RSA") == 0)
        judge_rsa_size(jwk, k);
    else if (k->curve != NULL)
        judge_ec_size(jwk, k);
}

/* The alg the key's type implies (RS256 for RSA, as kube-apiserver signs),
 * or NULL. */
static const char *implied_alg(const struct jwk_facts *k)
{
    if (k->curve != NULL)
        return k->curve->alg;
    return k->kty && strcmp(k->kty, "RSA") == 0 ? "RS256" : NULL;
}

/* Whether a present alg fits the key: an RSA algorithm for RSA, the
 * curve's for EC; other types are judged by jwks.key_types. */
static int alg_fits(const struct jwk_facts *k)
{
    if (k->kty && strcmp(k->kty, "RSA") == 0)
        return rp_listed(jwks_rsa_algs, k->alg);
    if (k->curve != NULL)
        return strcmp(k->alg, k->curve->alg) == 0;
    return 1;
}

/* "jwks.counts": how many keys of each type; none is a FAIL. */
static void check_counts(struct diag_report *r, const struct jwk_facts *k, size_t n)
{
    size_t rsa = 0, ec = 0;
    struct diag_check *c;

    for (size_t i = 0; i < n; i++) {
        rsa += k[i].kty && strcmp(k[i].kty, "RSA") == 0;
        ec += k[i].kty && strcmp(k[i].kty, "EC") == 0;
    }
    if (n == 0) {
        c = diag_add(r, DIAG_FAIL, "jwks.counts", "the JWKS has no keys: no token can be verified");
        diag_fix(r, c, "publish the public keys the API server verifies tokens with (--service-account-key-file)");
        return;
    }
    diag_add(r, DIAG_PASS, "jwks.counts", "%zu key%s: %zu RSA, %zu EC, %zu other", n, n == 1 ? "" : "s", rsa, ec,
             n - rsa - ec);
}

/* "jwks.kid" and "jwks.kid_unique": relying parties pick the key by the
 * token's kid; two keys under one kid are an error to panva/jose. */
static void check_kids(struct diag_report *r, const struct jwk_facts *k, size_t n)
{
    struct index_list missing = {0};
    char shown[JWKS_SHOWN + 8];
    struct diag_check *c;

    for (size_t i = 0; i < n; i++)
        if (k[i].kid == NULL || k[i].kid[0] == '\0')
            list_add(&missing, i);
    if (missing.count == 0) {
        diag_add(r, DIAG_PASS, "jwks.kid", "every key has a kid");
    } else {
        c = diag_add(r, DIAG_FAIL, "jwks.kid",
                     "%zu key(s) without a kid string (%s); relying parties pick the key by the token's kid, and "
                     "PyJWT ignores keys without one",
                     missing.count, missing.text);
        diag_fix(r, c, "give every key the kid its tokens carry (oidc-discovery derives kube-apiserver's)");
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; k[i].kid != NULL && j < n; j++) {
            if (k[j].kid == NULL || strcmp(k[i].kid, k[j].kid) != 0)
                continue;
            c = diag_add(r, DIAG_FAIL, "jwks.kid_unique",
                         "keys[%zu] and keys[%zu] share the kid %s; panva/jose refuses a kid that names two keys", i, j,
                         printable_quote(k[i].kid, shown, sizeof(shown)));
            diag_fix(r, c, "publish each key once, under a kid of its own");
            return;
        }
    }
    diag_add(r, DIAG_PASS, "jwks.kid_unique", "no kid names two keys");
}

/* "jwks.use": "sig"; PyJWT ignores keys with another use. */
static void check_use(struct diag_report *r, const struct jwk_facts *k, size_t n)
{
    struct index_list other = {0}, missing = {0};
    struct diag_check *c;

    for (size_t i = 0; i < n; i++) {
        if (k[i].use == NULL)
            list_add(&missing, i);
        else if (strcmp(k[i].use, "sig") != 0)
            list_add(&other, i);
    }
    if (other.count > 0) {
        c = diag_add(r, DIAG_FAIL, "jwks.use",
                     "%zu key(s) with a use other than \"sig\" (%s); relying parties do not verify tokens with them",
                     other.count, other.text);
        diag_fix(r, c, "publish signing keys with \"use\":\"sig\"");
    } else if (missing.count > 0) {
        c = diag_add(r, DIAG_WARN, "jwks.use", "%zu key(s) without use (%s); kube-apiserver publishes \"use\":\"sig\"",
                     missing.count, missing.text);
        diag_fix(r, c, "add \"use\":\"sig\" to every key");
    } else {
        diag_add(r, DIAG_PASS, "jwks.use", "every key has use \"sig\"");
    }
}

/* "jwks.alg": present, and the key's own. */
static void check_algs(struct diag_report *r, const struct jwk_facts *k, size_t n)
{
    struct index_list missing = {0};
    char shown[JWKS_SHOWN + 8];
    struct diag_check *c;

    for (size_t i = 0; i < n; i++) {
        if (k[i].alg == NULL) {
            list_add(&missing, i);
        } else if (!alg_fits(&k[i])) {
            c = diag_add(r, DIAG_FAIL, "jwks.alg", "keys[%zu] is %s%s%s but its alg is %s; relying parties refuse it",
                         i, k[i].kty, k[i].curve ? " " : "", k[i].curve ? k[i].curve->crv : "",
                         printable_quote(k[i].alg, shown, sizeof(shown)));
            diag_fix(r, c,
                     "give each key the alg of its type: RS256 for RSA, ES256, ES384 or ES512 for P-256, P-384 "
                     "or P-521");
            return;
        }
    }
    if (missing.count > 0) {
        c = diag_add(r, DIAG_WARN, "jwks.alg",
                     "%zu key(s) without alg (%s); kube-apiserver publishes it and some clients need it", missing.count,
                     missing.text);
        diag_fix(r, c, "add the alg of each key: RS256 for RSA, ES256, ES384 or ES512 by curve");
        return;
    }
    diag_add(r, DIAG_PASS, "jwks.alg", "every key's alg matches its type");
}

/* "jwks.key_types": RSA, or EC on P-256, P-384 or P-521, the keys
 * Kubernetes tokens are signed with. */
static void check_types(struct diag_report *r, const struct jwk_facts *k, size_t n)
{
    struct index_list other = {0};
    struct diag_check *c;

    for (size_t i = 0; i < n; i++) {
        if (k[i].kty == NULL) {
            c = diag_add(r, DIAG_FAIL, "jwks.key_types", "keys[%zu] has no kty string", i);
            diag_fix(r, c, "publish JWKs as RFC 7517 writes them, with kty");
            return;
        }
        if (strcmp(k[i].kty, "RSA") != 0 && k[i].curve == NULL)
            list_add(&other, i);
    }
    if (other.count == 0) {
        diag_add(r, DIAG_PASS, "jwks.key_types", "every key is RSA or EC on P-256, P-384 or P-521");
        return;
    }
    c = diag_add(r, DIAG_WARN, "jwks.key_types",
                 "%zu key(s) of another type or curve (%s); relying parties of Kubernetes tokens verify RSA and "
                 "EC P-256/384/521 keys only",
                 other.count, other.text);
    diag_fix(r, c, "sign with RSA or ECDSA P-256, P-384 or P-521 keys");
}

/* "jwks.private": nothing secret in a public document. */
static void check_private(struct diag_report *r, const struct jwk_facts *k, size_t n)
{
    struct diag_check *c;

    for (size_t i = 0; i < n; i++) {
        if (k[i].private_member == NULL)
            continue;
        c = diag_add(r, DIAG_FAIL, "jwks.private",
                     "keys[%zu] has the private member \"%s\": the JWKS publishes a private key", i,
                     k[i].private_member);
        diag_fix(r, c, "publish public keys only, and replace the exposed key: anyone can sign tokens with it");
        return;
    }
    diag_add(r, DIAG_PASS, "jwks.private", "no key has a private member");
}

/* "jwks.sizes": RSA of at least 2048 bits, EC points of the curve's size. */
static void check_sizes(struct diag_report *r, const struct jwk_facts *k, size_t n)
{
    struct diag_check *c;
    size_t weak = n;

    for (size_t i = 0; i < n; i++) {
        if (k[i].size_problem[0] == '\0')
            continue;
        if (!k[i].refused_size) {
            weak = weak < n ? weak : i;
            continue;
        }
        c = diag_add(r, DIAG_FAIL, "jwks.sizes", "keys[%zu] %s; relying parties refuse it", i, k[i].size_problem);
        diag_fix(r, c, "publish RSA keys of 2048 bits or more, EC points as RFC 7518 encodes them");
        return;
    }
    if (weak < n) {
        c = diag_add(r, DIAG_WARN, "jwks.sizes", "keys[%zu] %s; 2048 bits is the least to trust today", weak,
                     k[weak].size_problem);
        diag_fix(r, c, "rotate to an RSA key of 2048 bits or more (or ECDSA P-256)");
        return;
    }
    diag_add(r, DIAG_PASS, "jwks.sizes", "RSA keys of 2048 bits or more, EC points of their curve's size");
}

/* Parses body into j->root and finds its "keys" array of objects;
 * "jwks.json" says what is wrong. */
static const struct json_value *parse_keys(struct diag_report *r, const char *body, size_t len, struct diag_jwks *j)
{
    const struct json_value *keys;
    char why[128];
    struct diag_check *c;
    size_t i = 0;

    if ((j->root = json_parse((const unsigned char *)body, len, why, sizeof(why))) == NULL) {
        c = diag_add(r, DIAG_FAIL, "jwks.json", "the JWKS is not a JSON object: %s", why);
    } else if ((keys = json_get(j->root, "keys")) == NULL || keys->type != JSON_ARRAY) {
        c = diag_add(r, DIAG_FAIL, "jwks.json", "the JWKS has no \"keys\" array");
    } else {
        for (const struct json_value *v = keys->child; v != NULL; v = v->next, i++) {
            if (v->type != JSON_OBJECT) {
                c = diag_add(r, DIAG_FAIL, "jwks.json", "keys[%zu] is not a JSON object", i);
                diag_fix(r, c, "publish the JWKS oidc-discovery renders: {\"keys\":[JWK, ...]}");
                return NULL;
            }
        }
        j->count = i;
        return keys;
    }
    diag_fix(r, c, "publish the JWKS oidc-discovery renders: {\"keys\":[JWK, ...]}");
    return NULL;
}

int diag_jwks_check(struct diag_report *r, const char *body, size_t len, struct diag_jwks *out)
{
    const struct json_value *keys;
    struct jwk_facts *facts = NULL;
    size_t i = 0;

    memset(out, 0, sizeof(*out));
    if ((keys = parse_keys(r, body, len, out)) == NULL) {
        diag_jwks_clear(out);
        return -1;
    }
    facts = calloc(out->count + 1, sizeof(*facts));
    out->keys = calloc(out->count + 1, sizeof(*out->keys));
    out->kids = calloc(out->count + 1, sizeof(*out->kids));
    out->algs = calloc(out->count + 1, sizeof(*out->algs));
    if (facts == NULL || out->keys == NULL || out->kids == NULL || out->algs == NULL) {
        r->out_of_memory = 1;
        free(facts);
        diag_jwks_clear(out);
        return -1;
    }
    for (const struct json_value *v = keys->child; v != NULL; v = v->next, i++) {
        read_jwk(v, &facts[i]);
        out->keys[i] = (struct rp_key){facts[i].kty, facts[i].alg, facts[i].foreign_member};
        out->kids[i] = facts[i].kid;
        out->algs[i] = facts[i].alg ? facts[i].alg : implied_alg(&facts[i]);
    }
    check_counts(r, facts, out->count);
    check_kids(r, facts, out->count);
    check_use(r, facts, out->count);
    check_algs(r, facts, out->count);
    check_types(r, facts, out->count);
    check_private(r, facts, out->count);
    check_sizes(r, facts, out->count);
    free(facts);
    return 0;
}

void diag_jwks_clear(struct diag_jwks *j)
{
    json_free(j->root);
    free(j->keys);
    free(j->kids);
    free(j->algs);
    memset(j, 0, sizeof(*j));
}
