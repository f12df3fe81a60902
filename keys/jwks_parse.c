/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/jwks_parse.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

#include "util/b64url.h"
#include "util/json.h"
#include "util/printable.h"

/* Largest RSA modulus OpenSSL verifies with (OPENSSL_RSA_MAX_MODULUS_BITS),
 * largest public exponent it accepts for big moduli (64 bits), and the
 * smallest modulus worth trusting: below 1024 bits a key is factorable and
 * any token "signed" with it could be forged. */
#define JWKS_RSA_N_MAX    2048
#define JWKS_RSA_E_MAX    8
#define JWKS_RSA_MIN_BITS 1024
#define JWKS_EC_COORD_MAX 66

/* Decode buffers get two spare bytes: B64URL_DECODED_MAX rounds up. */
#define JWKS_SLACK 2

/* The curves a service-account token can be signed on, with the algorithm
 * each implies and the fixed size of x and y (RFC 7518 section 6.2.1.2). */
static const struct jwks_curve {
    const char *crv;
    const char *group;
    const char *alg;
    size_t coord_len;
} jwks_curves[] = {
    {"P-256", "prime256v1", "ES256", 32},
    {"P-384", "secp384r1", "ES384", 48},
    {"P-521", "secp521r1", "ES512", 66},
};

/* Members only private or symmetric JWKs carry (RFC 7518 section 6). */
static const char *const jwks_private_members[] = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"};

struct jwks_parser {
    struct keyset *ks;
    keyset_warn_cb warn;
    void *warn_ctx;
    size_t index; /* of the JWK being read, for messages */
    long only;    /* the one index to read, or -1 for all */
    char *err;
    size_t errlen;
};

/* How much of a document string a message quotes (see printable_copy). */
#define JWKS_SHOW_MAX 40

/* Formats "keys[N]: <what><message>": every finding names its JWK. */
__attribute__((format(printf, 5, 0))) static void jwks_vmsg(const struct jwks_parser *p, char *out, size_t outlen,
                                                            const char *what, const char *fmt, va_list ap)
{
    int n = snprintf(out, outlen, "keys[%zu]: %s", p->index, what);

    if (n >= 0 && (size_t)n < outlen)
        vsnprintf(out + n, outlen - (size_t)n, fmt, ap);
}

/* Records why the current JWK makes the whole document unusable. Returns -1. */
__attribute__((format(printf, 2, 3))) static int jwks_fail(struct jwks_parser *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    jwks_vmsg(p, p->err, p->errlen, "", fmt, ap);
    va_end(ap);
    return -1;
}

/* Reports a JWK left out of the set and why. Returns 0 (skipped). */
__attribute__((format(printf, 2, 3))) static int jwks_skip(struct jwks_parser *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (p->warn == NULL)
        return 0;
    va_start(ap, fmt);
    jwks_vmsg(p, msg, sizeof(msg), "skipped: ", fmt, ap);
    va_end(ap);
    p->warn(p->warn_ctx, msg);
    return 0;
}

/* Reads an optional string member (*out NULL when absent). Another type is
 * an error rather than a silent default. */
static int jwks_str(struct jwks_parser *p, const struct json_value *jwk, const char *name, const char **out)
{
    const struct json_value *v = json_get(jwk, name);

    *out = NULL;
    if (v == NULL)
        return 0;
    if (v->type != JSON_STRING)
        return jwks_fail(p, "\"%s\" is not a string", name);
    *out = v->str;
    return 0;
}

/* Reads a string member the JWK cannot do without. */
static int jwks_need_str(struct jwks_parser *p, const struct json_value *jwk, const char *name, const char **out)
{
    if (jwks_str(p, jwk, name, out) != 0)
        return -1;
    if (*out == NULL)
        return jwks_fail(p, "missing \"%s\"", name);
    return 0;
}

/* Decodes the required base64url member name (at most max bytes) into out,
 * which has room for max + JWKS_SLACK bytes. */
static int jwks_bytes(struct jwks_parser *p, const struct json_value *jwk, const char *name, unsigned char *out,
                      size_t max, size_t *n)
{
    const char *s;
    size_t len;

    if (jwks_need_str(p, jwk, name, &s) != 0)
        return -1;
    if ((len = strlen(s)) > B64URL_ENCODED_LEN(max))
        return jwks_fail(p, "\"%s\" is longer than %zu bytes", name, max);
    if (b64url_decode(s, len, out, n) != 0)
        return jwks_fail(p, "\"%s\" is not base64url without padding", name);
    if (*n == 0)
        return jwks_fail(p, "\"%s\" is empty", name);
    return 0;
}

/* Builds a public key from parameters, the OpenSSL 3 way (no deprecated
 * RSA or EC_KEY structures). NULL when OpenSSL refuses them. */
static EVP_PKEY *jwks_fromdata(const char *type, OSSL_PARAM_BLD *bld)
{
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    EVP_PKEY *pkey = NULL;

    if (params != NULL && ctx != NULL && EVP_PKEY_fromdata_init(ctx) == 1)
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return pkey;
}

/* An RSA key from n and e. An even modulus, or an exponent that is even or
 * 1 (every message would be its own signature), is malformed; a modulus too
 * short to trust is skipped. Returns 1 with *pkey, 0 skipped, -1 error. */
static int jwks_rsa(struct jwks_parser *p, const struct json_value *jwk, EVP_PKEY **pkey)
{
    unsigned char n[JWKS_RSA_N_MAX + JWKS_SLACK], e[JWKS_RSA_E_MAX + JWKS_SLACK];
    size_t nlen, elen;
    BIGNUM *bn_n = NULL, *bn_e = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    int rc = -1;

    if (jwks_bytes(p, jwk, "n", n, JWKS_RSA_N_MAX, &nlen) != 0 ||
        jwks_bytes(p, jwk, "e", e, JWKS_RSA_E_MAX, &elen) != 0)
        return -1;
    bn_n = BN_bin2bn(n, (int)nlen, NULL);
    bn_e = BN_bin2bn(e, (int)elen, NULL);
    if (bn_n == NULL || bn_e == NULL || (bld = OSSL_PARAM_BLD_new()) == NULL)
        jwks_fail(p, "out of memory");
    else if (!BN_is_odd(bn_n))
        jwks_fail(p, "\"n\" is not an RSA modulus (it is even)");
    else if (!BN_is_odd(bn_e) || BN_is_one(bn_e))
        jwks_fail(p, "\"e\" is not an RSA public exponent");
    else if (BN_num_bits(bn_n) < JWKS_RSA_MIN_BITS)
        rc = jwks_skip(p, "RSA modulus of %d bits is below %d bits", BN_num_bits(bn_n), JWKS_RSA_MIN_BITS);
    else if (OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) != 1 ||
             OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) != 1 ||
             (*pkey = jwks_fromdata("RSA", bld)) == NULL)
        jwks_fail(p, "n and e are not a valid RSA public key");
    else
        rc = 1;
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    return rc;
}

/* Checks the key the way a verifier must before trusting an EC point: on
 * the curve and in the right subgroup. */
static int jwks_public_check(EVP_PKEY *pkey)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    int ok = ctx != NULL && EVP_PKEY_public_check(ctx) == 1;

    EVP_PKEY_CTX_free(ctx);
    return ok ? 0 : -1;
}

/* An EC key from x and y of exactly the curve's coordinate size, as an
 * uncompressed point. Returns 1 with *pkey, or -1. */
static int jwks_ec(struct jwks_parser *p, const struct json_value *jwk, const struct jwks_curve *c, EVP_PKEY **pkey)
{
    unsigned char point[1 + 2 * JWKS_EC_COORD_MAX + JWKS_SLACK];
    size_t xlen, ylen;
    OSSL_PARAM_BLD *bld = NULL;
    int rc = -1;

    point[0] = 0x04;
    if (jwks_bytes(p, jwk, "x", point + 1, c->coord_len, &xlen) != 0)
        return -1;
    if (xlen != c->coord_len)
        return jwks_fail(p, "\"x\" is %zu bytes, %s needs %zu", xlen, c->crv, c->coord_len);
    if (jwks_bytes(p, jwk, "y", point + 1 + xlen, c->coord_len, &ylen) != 0)
        return -1;
    if (ylen != c->coord_len)
        return jwks_fail(p, "\"y\" is %zu bytes, %s needs %zu", ylen, c->crv, c->coord_len);
    if ((bld = OSSL_PARAM_BLD_new()) == NULL)
        jwks_fail(p, "out of memory");
    else if (OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, c->group, 0) != 1 ||
             OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, 1 + 2 * c->coord_len) != 1 ||
             (*pkey = jwks_fromdata("EC", bld)) == NULL || jwks_public_check(*pkey) != 0)
        jwks_fail(p, "x and y are not a point on %s", c->crv);
    else
        rc = 1;
    if (rc < 0) {
        EVP_PKEY_free(*pkey);
        *pkey = NULL;
    }
    OSSL_PARAM_BLD_free(bld);
    return rc;
}

/* The supported curve called crv, or NULL. */
static const struct jwks_curve *jwks_find_curve(const char *crv)
{
    for (size_t i = 0; i < sizeof(jwks_curves) / sizeof(jwks_curves[0]); i++)
        if (strcmp(crv, jwks_curves[i].crv) == 0)
            return &jwks_curves[i];
    return NULL;
}

/* The first private member of jwk, or NULL: such a JWK is never used, so
 * its secret never reaches a struct key. */
static const char *jwks_private_member(const struct json_value *jwk)
{
    for (size_t i = 0; i < sizeof(jwks_private_members) / sizeof(jwks_private_members[0]); i++)
        if (json_get(jwk, jwks_private_members[i]) != NULL)
            return jwks_private_members[i];
    return NULL;
}

/* The key of the set that is pkey under another kid, or NULL. */
static const struct key *jwks_same_key(const struct jwks_parser *p, const EVP_PKEY *pkey)
{
    for (size_t i = 0; i < p->ks->count; i++)
        if (EVP_PKEY_eq(p->ks->keys[i].pub, pkey) == 1)
            return &p->ks->keys[i];
    return NULL;
}

/* Adds a built key (ownership taken) under its JWK's kid. The same public
 * key under a second kid is left out: one key, one kid in the set. Returns
 * 1 added, 0 skipped, -1 error. */
static int jwks_add(struct jwks_parser *p, EVP_PKEY *pkey, const char *kid)
{
    char source[32], why[256], shown[JWKS_SHOW_MAX + 4];
    const struct key *dup = jwks_same_key(p, pkey);

    if (dup != NULL) {
        EVP_PKEY_free(pkey);
        return jwks_skip(p, "same public key as %s (kid \"%s\")", dup->source,
                         printable_copy(dup->kid, shown, JWKS_SHOW_MAX));
    }
    snprintf(source, sizeof(source), "keys[%zu]", p->index);
    /* never a duplicate: the caller looked its kid up first */
    return keyset_add(p->ks, pkey, source, kid, &dup, why, sizeof(why)) < 0 ? jwks_fail(p, "%s", why) : 1;
}

/* Reads one JWK: malformed is an error, unusable-but-valid is skipped.
 * Returns 1 added, 0 skipped, -1 error. */
static int jwks_read_jwk(struct jwks_parser *p, const struct json_value *jwk)
{
    const char *kty, *use, *alg, *kid, *crv, *name, *want = "RS256";
    const struct jwks_curve *curve = NULL;
    const struct key *prev;
    EVP_PKEY *pkey = NULL;
    char shown[JWKS_SHOW_MAX + 4];
    int rc;

    if (jwk->type != JSON_OBJECT)
        return jwks_fail(p, "not a JSON object");
    if (jwks_need_str(p, jwk, "kty", &kty) != 0 || jwks_str(p, jwk, "use", &use) != 0 ||
        jwks_str(p, jwk, "alg", &alg) != 0 || jwks_str(p, jwk, "kid", &kid) != 0 || jwks_str(p, jwk, "crv", &crv) != 0)
        return -1;
    if (use != NULL && strcmp(use, "sig") != 0)
        return jwks_skip(p, "use \"%s\" is not \"sig\"", printable_copy(use, shown, JWKS_SHOW_MAX));
    if (strcmp(kty, "RSA") != 0 && strcmp(kty, "EC") != 0)
        return jwks_skip(p, "unsupported kty \"%s\" (supported: RSA, EC)", printable_copy(kty, shown, JWKS_SHOW_MAX));
    if ((name = jwks_private_member(jwk)) != NULL)
        return jwks_skip(p, "holds private key member \"%s\"", name);
    if (strcmp(kty, "EC") == 0) {
        if (crv == NULL)
            return jwks_fail(p, "missing \"crv\"");
        if ((curve = jwks_find_curve(crv)) == NULL)
            return jwks_skip(p, "unsupported crv \"%s\" (supported: P-256, P-384, P-521)",
                             printable_copy(crv, shown, JWKS_SHOW_MAX));
        want = curve->alg;
    }
    if (alg != NULL && strcmp(alg, want) != 0)
        return jwks_skip(p, "alg \"%s\" does not match the key (%s)", printable_copy(alg, shown, JWKS_SHOW_MAX), want);
    if (kid == NULL)
        return jwks_skip(p, "no \"kid\" to match token headers on");
    if (!key_kid_ok(kid))
        return jwks_skip(p, "kid \"%s\" is not 1 to %d printable characters without quote or backslash",
                         printable_copy(kid, shown, JWKS_SHOW_MAX), KEY_KID_MAX);
    if ((prev = keyset_find(p->ks, kid)) != NULL)
        return jwks_fail(p, "kid \"%s\" is also the kid of %s", printable_copy(kid, shown, JWKS_SHOW_MAX),
                         prev->source);
    rc = curve != NULL ? jwks_ec(p, jwk, curve, &pkey) : jwks_rsa(p, jwk, &pkey);
    return rc <= 0 ? rc : jwks_add(p, pkey, kid);
}

/* Reads every JWK of the "keys" array, stopping at the first error. */
static int jwks_read_keys(struct jwks_parser *p, const struct json_value *keys)
{
    p->index = 0;
    for (const struct json_value *v = keys->child; v != NULL; v = v->next, p->index++)
        if ((p->only < 0 || p->index == (size_t)p->only) && jwks_read_jwk(p, v) < 0)
            return -1;
    return 0;
}

/* Reads the document's "keys" array into the keyset; the strict reader
 * has refused duplicate members, deep nesting and U+0000 already. */
static int jwks_read(struct jwks_parser *p, const char *json, size_t len)
{
    char why[128];
    struct json_value *root;
    const struct json_value *keys;
    int rc = -1;

    if (len > JWKS_MAX_LEN) {
        snprintf(p->err, p->errlen, "JWKS is larger than %d bytes", JWKS_MAX_LEN);
        return -1;
    }
    if ((root = json_parse((const unsigned char *)json, len, why, sizeof(why))) == NULL) {
        snprintf(p->err, p->errlen, "JWKS is not valid JSON: %s", why);
        return -1;
    }
    if ((keys = json_get(root, "keys")) == NULL || keys->type != JSON_ARRAY)
        snprintf(p->err, p->errlen, "JWKS has no \"keys\" array");
    else if (jwks_read_keys(p, keys) == 0)
        rc = 0;
    json_free(root);
    return rc;
}

/* jwks_parse with p's settings. */
static struct keyset *jwks_parse_with(struct jwks_parser p, const char *json, size_t len, char *err, size_t errlen)
{
    struct keyset *ks = NULL;

    if ((p.ks = keyset_new()) == NULL) {
        snprintf(err, errlen, "out of memory");
    } else if (jwks_read(&p, json, len) != 0) {
        /* err says why */
    } else if (p.ks->count == 0) {
        snprintf(err, errlen, "JWKS has no usable RSA or ECDSA signing key");
    } else {
        ks = p.ks;
        p.ks = NULL;
    }
    keyset_free(p.ks);
    ERR_clear_error(); /* failures were turned into messages */
    return ks;
}

struct keyset *jwks_parse(const char *json, size_t len, keyset_warn_cb warn, void *warn_ctx, char *err, size_t errlen)
{
    struct jwks_parser p = {.warn = warn, .warn_ctx = warn_ctx, .only = -1, .err = err, .errlen = errlen};

    return jwks_parse_with(p, json, len, err, errlen);
}

struct keyset *jwks_parse_key(const char *json, size_t len, size_t index, char *err, size_t errlen)
{
    struct jwks_parser p = {.only = index > LONG_MAX ? LONG_MAX : (long)index, .err = err, .errlen = errlen};

    return jwks_parse_with(p, json, len, err, errlen);
}
