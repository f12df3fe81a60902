#include "jws.h"

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <stdlib.h>
#include <string.h>

static const struct jws_alg jws_algs[] = {
    {"RS256", TOKEN_ALG_RS256, EVP_sha256, 0, 0},
    {"ES256", TOKEN_ALG_ES256, EVP_sha256, NID_X9_62_prime256v1, 32},
    {"ES384", TOKEN_ALG_ES384, EVP_sha384, NID_secp384r1, 48},
    {"ES512", TOKEN_ALG_ES512, EVP_sha512, NID_secp521r1, 66},
};

const struct jws_alg *jws_alg_find(const char *name)
{
    for (size_t i = 0; i < sizeof(jws_algs) / sizeof(jws_algs[0]); i++)
        if (strcmp(name, jws_algs[i].name) == 0)
            return &jws_algs[i];
    return NULL;
}

/* Re-encodes a raw r || s signature as DER for OpenSSL, refusing any other
 * length and r or s outside [1, n-1]: OpenSSL would refuse those too, but
 * as a plain bad signature, and a malformed signature is worth telling
 * apart. NULL when the format is wrong (or memory ran out). */
static unsigned char *jws_raw_to_der(const struct jws_alg *a, const unsigned char *sig, size_t siglen, int *derlen)
{
    EC_GROUP *group = NULL;
    ECDSA_SIG *es = NULL;
    BIGNUM *r = NULL, *s = NULL;
    const BIGNUM *order;
    unsigned char *der = NULL;

    if (siglen != 2 * a->coord_len)
        return NULL;
    group = EC_GROUP_new_by_curve_name(a->curve_nid);
    r = BN_bin2bn(sig, (int)a->coord_len, NULL);
    s = BN_bin2bn(sig + a->coord_len, (int)a->coord_len, NULL);
    es = ECDSA_SIG_new();
    if (group == NULL || r == NULL || s == NULL || es == NULL)
        goto done;
    order = EC_GROUP_get0_order(group);
    if (BN_is_zero(r) || BN_is_zero(s) || BN_cmp(r, order) >= 0 || BN_cmp(s, order) >= 0)
        goto done;
    if (ECDSA_SIG_set0(es, r, s) != 1)
        goto done;
    r = s = NULL; /* owned by es now */
    if ((*derlen = i2d_ECDSA_SIG(es, &der)) <= 0) {
        OPENSSL_free(der);
        der = NULL;
    }
done:
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    EC_GROUP_free(group);
    return der;
}

/* One-shot digest and verify of a signature in OpenSSL's form. */
static int jws_evp_verify(const struct jws_alg *a, EVP_PKEY *pub, const void *msg, size_t msglen,
                          const unsigned char *sig, size_t siglen)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx != NULL && EVP_DigestVerifyInit(ctx, NULL, a->md(), NULL, pub) == 1 &&
             EVP_DigestVerify(ctx, sig, siglen, msg, msglen) == 1;

    EVP_MD_CTX_free(ctx);
    return ok;
}

enum token_error jws_verify(const struct jws_alg *a, EVP_PKEY *pub, const void *msg, size_t msglen,
                            const unsigned char *sig, size_t siglen)
{
    enum token_error e = TOKEN_ERR_SIGNATURE;
    unsigned char *der = NULL;
    int derlen = 0;

    if (a->coord_len == 0) {
        if (jws_evp_verify(a, pub, msg, msglen, sig, siglen))
            e = TOKEN_OK;
    } else if ((der = jws_raw_to_der(a, sig, siglen, &derlen)) == NULL) {
        e = TOKEN_ERR_ECDSA_FORMAT;
    } else if (jws_evp_verify(a, pub, msg, msglen, der, (size_t)derlen)) {
        e = TOKEN_OK;
    }
    OPENSSL_free(der);
    /* A failed verification leaves errors queued; they must not surface in
     * an unrelated later report. */
    ERR_clear_error();
    return e;
}

/* Turns OpenSSL's DER ECDSA signature into raw r || s, each left-padded to
 * the coordinate size. */
static unsigned char *jws_der_to_raw(const struct jws_alg *a, const unsigned char *der, size_t derlen, size_t *siglen)
{
    const unsigned char *p = der;
    ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)derlen);
    unsigned char *raw = es ? malloc(2 * a->coord_len) : NULL;

    if (raw != NULL && (BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, (int)a->coord_len) < 0 ||
                        BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + a->coord_len, (int)a->coord_len) < 0)) {
        free(raw);
        raw = NULL;
    }
    ECDSA_SIG_free(es);
    *siglen = 2 * a->coord_len;
    return raw;
}

unsigned char *jws_sign(const struct jws_alg *a, EVP_PKEY *priv, const void *msg, size_t msglen, size_t *siglen)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char *sig = NULL, *raw;
    size_t len = 0;

    if (ctx == NULL || EVP_DigestSignInit(ctx, NULL, a->md(), NULL, priv) != 1 ||
        EVP_DigestSign(ctx, NULL, &len, msg, msglen) != 1 || (sig = malloc(len)) == NULL ||
        EVP_DigestSign(ctx, sig, &len, msg, msglen) != 1) {
        free(sig);
        sig = NULL;
    }
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    if (sig == NULL || a->coord_len == 0) {
        *siglen = len;
        return sig;
    }
    raw = jws_der_to_raw(a, sig, len, siglen);
    free(sig);
    return raw;
}
