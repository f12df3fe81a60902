/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/key.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/b64url.h"
#include "util/jsonw.h"

/* The curves kube-apiserver accepts, with their JOSE names and the fixed
 * coordinate size a JWK pads x and y to (RFC 7518 section 6.2.1.2). */
static const struct key_curve {
    const char *openssl_name;
    const char *jose_name;
    const char *alg;
    int bits;
    size_t coord_len;
} key_curves[] = {
    {"prime256v1", "P-256", "ES256", 256, 32},
    {"secp384r1", "P-384", "ES384", 384, 48},
    {"secp521r1", "P-521", "ES512", 521, 66},
};

/* The DER SubjectPublicKeyInfo of a named-curve EC key with an
 * uncompressed point, each curve's fixed prefix before the point: what
 * i2d_PUBKEY writes, byte for byte. */
static const struct key_spki_prefix {
    const char *openssl_name;
    size_t point_len;
    size_t len;
    unsigned char der[32];
} key_spki_prefixes[] = {
    {"prime256v1", 65, 26, {0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
                            0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00}},
    {"secp384r1", 97, 23, {0x30, 0x76, 0x30, 0x10, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02,
                           0x01, 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22, 0x03, 0x62, 0x00}},
    {"secp521r1", 133, 25, {0x30, 0x81, 0x9b, 0x30, 0x10, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02,
                            0x01, 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23, 0x03, 0x81, 0x86, 0x00}},
};

/* The DER of an EC key's SubjectPublicKeyInfo written from its point,
 * without OpenSSL 3's encoder framework: i2d_PUBKEY builds and fetches an
 * encoder context per call (~0.1 ms), and a fleet derives the kid and the
 * stored SPKI of tens of thousands of keys at start-up. NULL (the caller
 * then uses i2d_PUBKEY) for any other key, or one with explicit curve
 * parameters or a compressed point, whose encoding is not this one. */
static unsigned char *key_spki_der_ec(EVP_PKEY *pub, int *len)
{
    char group[64], form[32], encoding[32];
    unsigned char point[133], *der;
    size_t n;

    if (EVP_PKEY_get_base_id(pub) != EVP_PKEY_EC ||
        !EVP_PKEY_get_utf8_string_param(pub, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group), NULL) ||
        !EVP_PKEY_get_utf8_string_param(pub, OSSL_PKEY_PARAM_EC_ENCODING, encoding, sizeof(encoding), NULL) ||
        strcmp(encoding, OSSL_PKEY_EC_ENCODING_GROUP) != 0 ||
        !EVP_PKEY_get_utf8_string_param(pub, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, form, sizeof(form), NULL) ||
        strcmp(form, OSSL_PKEY_EC_POINT_CONVERSION_FORMAT_UNCOMPRESSED) != 0 ||
        !EVP_PKEY_get_octet_string_param(pub, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point, sizeof(point), &n))
        return NULL;
    for (size_t i = 0; i < sizeof(key_spki_prefixes) / sizeof(key_spki_prefixes[0]); i++) {
        const struct key_spki_prefix *p = &key_spki_prefixes[i];
        if (strcmp(group, p->openssl_name) != 0 || n != p->point_len || point[0] != 0x04)
            continue;
        if ((der = OPENSSL_malloc(p->len + n)) == NULL)
            return NULL;
        memcpy(der, p->der, p->len);
        memcpy(der + p->len, point, n);
        *len = (int)(p->len + n);
        return der;
    }
    return NULL;
}

/* The public key of an EC SubjectPublicKeyInfo with one of the prefixes
 * above, made from its point by EVP_PKEY_fromdata (which checks that the
 * point is on the curve) rather than by the decoder framework, which
 * builds and tries every decoder per call. NULL for any other DER. */
static EVP_PKEY *key_spki_parse_ec(const unsigned char *der, long len)
{
    EVP_PKEY_CTX *ctx = NULL;
    EVP_PKEY *pub = NULL;

    for (size_t i = 0; i < sizeof(key_spki_prefixes) / sizeof(key_spki_prefixes[0]); i++) {
        const struct key_spki_prefix *p = &key_spki_prefixes[i];
        if ((size_t)len != p->len + p->point_len || memcmp(der, p->der, p->len) != 0 || der[p->len] != 0x04)
            continue;
        OSSL_PARAM params[] = {
            OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)p->openssl_name, 0),
            OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (unsigned char *)der + p->len, p->point_len),
            OSSL_PARAM_END,
        };
        if ((ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) == NULL || EVP_PKEY_fromdata_init(ctx) <= 0 ||
            EVP_PKEY_fromdata(ctx, &pub, EVP_PKEY_PUBLIC_KEY, params) <= 0)
            pub = NULL;
        EVP_PKEY_CTX_free(ctx);
        return pub;
    }
    return NULL;
}

EVP_PKEY *key_d2i_pubkey(const unsigned char **pp, long len)
{
    EVP_PKEY *pub = key_spki_parse_ec(*pp, len);

    if (pub == NULL)
        return d2i_PUBKEY(NULL, pp, len);
    *pp += len;
    return pub;
}

/* pub's DER SubjectPublicKeyInfo (OPENSSL_free it), or NULL. */
static unsigned char *key_spki_der(EVP_PKEY *pub, int *len)
{
    unsigned char *der = key_spki_der_ec(pub, len);

    if (der == NULL && (*len = i2d_PUBKEY(pub, &der)) <= 0) {
        OPENSSL_free(der);
        return NULL;
    }
    return der;
}

int key_kid(EVP_PKEY *pub, char kid[KEY_KID_LEN + 1])
{
    unsigned char digest[SHA256_DIGEST_LENGTH];
    int len = 0;
    unsigned char *der = key_spki_der(pub, &len);

    if (der == NULL)
        return -1;
    SHA256(der, (size_t)len, digest);
    OPENSSL_free(der);
    b64url_encode(digest, sizeof(digest), kid);
    return 0;
}

/* Appends "name":"<base64url of raw>". */
static void key_put_raw(struct jsonw *w, const char *name, const unsigned char *raw, size_t len)
{
    char enc[B64URL_ENCODED_LEN(1024) + 1];

    b64url_encode(raw, len, enc);
    jsonw_raw(w, ",", 1);
    jsonw_key(w, name);
    jsonw_str(w, enc);
}

/* Appends "name":"<base64url of bn>" where bn is written big-endian in
 * exactly width bytes, or in its minimal length when width is 0. */
static int key_put_bn(struct jsonw *w, const char *name, const BIGNUM *bn, size_t width)
{
    unsigned char raw[1024];
    size_t len = width ? width : (size_t)BN_num_bytes(bn);

    if (len > sizeof(raw) || BN_bn2binpad(bn, raw, (int)len) < 0)
        return -1;
    key_put_raw(w, name, raw, len);
    return 0;
}

/* Fetches a BIGNUM parameter of pub and appends it as a JWK member. */
static int key_put_param(struct jsonw *w, EVP_PKEY *pub, const char *param, const char *name, size_t width)
{
    BIGNUM *bn = NULL;
    int rc = -1;

    if (EVP_PKEY_get_bn_param(pub, param, &bn) == 1)
        rc = key_put_bn(w, name, bn, width);
    BN_free(bn);
    return rc;
}

/* Appends an EC key's "x" and "y", each coord_len bytes: taken from its
 * uncompressed point (one parameter fetch; the coordinates in it are
 * already padded to the field size), or, for a key whose point comes
 * compressed, as two BIGNUM parameters. */
static int key_put_ec_xy(struct jsonw *w, EVP_PKEY *pub, size_t coord_len)
{
    unsigned char point[133];
    size_t n;

    if (EVP_PKEY_get_octet_string_param(pub, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point, sizeof(point), &n) == 1 &&
        n == 1 + 2 * coord_len && point[0] == 0x04) {
        key_put_raw(w, "x", point + 1, coord_len);
        key_put_raw(w, "y", point + 1 + coord_len, coord_len);
        return 0;
    }
    return key_put_param(w, pub, OSSL_PKEY_PARAM_EC_PUB_X, "x", coord_len) |
           key_put_param(w, pub, OSSL_PKEY_PARAM_EC_PUB_Y, "y", coord_len);
}

/* The JWK members and their order are kube-apiserver's (Go's jose library):
 * RSA use,kty,kid,alg,n,e and EC use,kty,kid,crv,alg,x,y. */
static int key_render_jwk(struct key *k, const struct key_curve *curve)
{
    struct jsonw w = {0};
    int rc;

    jsonw_lit(&w, "{\"use\":\"sig\",\"kty\":");
    jsonw_str(&w, curve ? "EC" : "RSA");
    jsonw_lit(&w, ",\"kid\":");
    jsonw_str(&w, k->kid);
    if (curve) {
        jsonw_lit(&w, ",\"crv\":");
        jsonw_str(&w, curve->jose_name);
    }
    jsonw_lit(&w, ",\"alg\":");
    jsonw_str(&w, k->alg);
    if (curve)
        rc = key_put_ec_xy(&w, k->pub, curve->coord_len);
    else
        rc = key_put_param(&w, k->pub, OSSL_PKEY_PARAM_RSA_N, "n", 0) |
             key_put_param(&w, k->pub, OSSL_PKEY_PARAM_RSA_E, "e", 0);
    jsonw_raw(&w, "}", 1);
    if (jsonw_finish(&w, &k->jwk, &k->jwk_len) != 0)
        return -1;
    return rc;
}

/* Finds the supported curve of an EC key; NULL with a message otherwise. */
static const struct key_curve *key_find_curve(EVP_PKEY *pub, char *err, size_t errlen)
{
    char name[64] = "unknown";

    EVP_PKEY_get_utf8_string_param(pub, OSSL_PKEY_PARAM_GROUP_NAME, name, sizeof(name), NULL);
    for (size_t i = 0; i < sizeof(key_curves) / sizeof(key_curves[0]); i++)
        if (strcmp(name, key_curves[i].openssl_name) == 0)
            return &key_curves[i];
    snprintf(err, errlen, "unsupported ECDSA curve %s (supported: P-256, P-384, P-521)", name);
    return NULL;
}

int key_check_type(EVP_PKEY *pub, char *err, size_t errlen)
{
    switch (EVP_PKEY_get_base_id(pub)) {
    case EVP_PKEY_RSA:
        return 0;
    case EVP_PKEY_EC:
        return key_find_curve(pub, err, errlen) != NULL ? 0 : -1;
    default:
        snprintf(err, errlen, "unsupported key type %s (supported: RSA, ECDSA P-256, P-384, P-521)",
                 EVP_PKEY_get0_type_name(pub) ? EVP_PKEY_get0_type_name(pub) : "unknown");
        return -1;
    }
}

int key_kid_ok(const char *kid)
{
    size_t n = strlen(kid);

    if (n == 0 || n > KEY_KID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)kid[i] < 0x20 || (unsigned char)kid[i] > 0x7e || kid[i] == '"' || kid[i] == '\\')
            return 0;
    return 1;
}

/* Gives k its kid: the derived one, or the one a JWKS gave (kept even when
 * it is not kube's form: an external signer's kid need not be). */
static int key_set_kid(struct key *k, const char *kid, char *err, size_t errlen)
{
    char derived[KEY_KID_LEN + 1];

    if (key_kid(k->pub, derived) != 0) {
        snprintf(err, errlen, "cannot encode the public key");
        return -1;
    }
    if (kid != NULL && strcmp(kid, derived) != 0 && !key_kid_ok(kid)) {
        snprintf(err, errlen, "kid is not 1 to %d printable characters without quote or backslash", KEY_KID_MAX);
        return -1;
    }
    k->kid_given = kid != NULL && strcmp(kid, derived) != 0;
    if ((k->kid = strdup(k->kid_given ? kid : derived)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int key_init(struct key *k, EVP_PKEY *pub, const char *source, const char *kid, char *err, size_t errlen)
{
    const struct key_curve *curve = NULL;

    memset(k, 0, sizeof(*k));
    k->pub = pub;
    if (key_check_type(pub, err, errlen) != 0)
        goto fail;
    if (EVP_PKEY_get_base_id(pub) == EVP_PKEY_EC) {
        curve = key_find_curve(pub, err, errlen);
        k->alg = curve->alg;
        k->curve = curve->jose_name;
        k->bits = curve->bits;
    } else {
        k->alg = "RS256";
        k->bits = EVP_PKEY_get_bits(pub);
    }
    if (key_set_kid(k, kid, err, errlen) != 0)
        goto fail;
    if ((k->source = strdup(source)) == NULL || key_render_jwk(k, curve) != 0) {
        snprintf(err, errlen, "cannot encode the public key");
        goto fail;
    }
    return 0;

fail:
    key_clear(k);
    return -1;
}

/* A copy that shares the OpenSSL key and duplicates the rest, rather than
 * a key_init of the same key: the removal guard copies every published key
 * on every pass, and deriving the kid and rendering the JWK again would
 * only give the same bytes at the cost of a fleet's start-up. */
int key_copy(struct key *dst, const struct key *src)
{
    *dst = *src;
    dst->pub = NULL;
    dst->kid = strdup(src->kid);
    dst->source = strdup(src->source);
    dst->jwk = malloc(src->jwk_len + 1);
    dst->path = src->path ? strdup(src->path) : NULL;
    dst->path_real = src->path_real ? strdup(src->path_real) : NULL;
    if (dst->jwk != NULL)
        memcpy(dst->jwk, src->jwk, src->jwk_len + 1);
    if (dst->kid == NULL || dst->source == NULL || dst->jwk == NULL || (src->path && !dst->path) ||
        (src->path_real && !dst->path_real) || EVP_PKEY_up_ref(src->pub) != 1)
        return -1;
    dst->pub = src->pub;
    return 0;
}

void key_clear(struct key *k)
{
    EVP_PKEY_free(k->pub);
    free(k->source);
    free(k->path);
    free(k->path_real);
    free(k->jwk);
    free(k->kid);
    memset(k, 0, sizeof(*k));
}

/* The one place a public half is derived: pem.c for every key file block,
 * keydir.c for a key it generates or imports, token_mint.c for the kid of
 * the key it signs with. */
EVP_PKEY *key_public_only(EVP_PKEY *key)
{
    int len = 0;
    unsigned char *der = key_spki_der(key, &len);
    const unsigned char *p = der;
    EVP_PKEY *pub = der != NULL ? key_d2i_pubkey(&p, len) : NULL;

    OPENSSL_free(der);
    return pub;
}

char *key_spki_encode(EVP_PKEY *pub)
{
    int len = 0;
    unsigned char *der = key_spki_der(pub, &len);
    char *b64 = der != NULL ? malloc((size_t)(len + 2) / 3 * 4 + 1) : NULL;

    if (b64 != NULL)
        EVP_EncodeBlock((unsigned char *)b64, der, len);
    OPENSSL_free(der);
    return b64;
}

EVP_PKEY *key_spki_decode(const char *spki)
{
    size_t len = strlen(spki), pad = 0;
    unsigned char *der = malloc(len / 4 * 3 + 3);
    const unsigned char *p = der;
    EVP_PKEY *pub = NULL;
    int n;

    while (pad < len && pad < 2 && spki[len - 1 - pad] == '=')
        pad++;
    if (der != NULL && len % 4 == 0 && (n = EVP_DecodeBlock(der, (const unsigned char *)spki, (int)len)) > 0)
        pub = key_d2i_pubkey(&p, n - (int)pad);
    free(der);
    return pub;
}
