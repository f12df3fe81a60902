/* SPDX-License-Identifier: Apache-2.0 */
/* The one file that uses OpenSSL's deprecated EC_KEY calls; ecdsa_raw.h
 * says why. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "jose/ecdsa_raw.h"

#include <openssl/ec.h>
#include <openssl/err.h>

#include "jose/signctx.h"

/* The signing copy lives in the signing library context (signctx.h says
 * why); with no such context, the key as it is. */
EC_KEY *ecdsa_raw_key(EVP_PKEY *priv)
{
    EC_KEY *from = EVP_PKEY_get1_EC_KEY(priv), *ec = NULL;
    OSSL_LIB_CTX *libctx = signctx_libctx();
    int nid;

    if (from != NULL && libctx != NULL && (nid = EC_GROUP_get_curve_name(EC_KEY_get0_group(from))) != NID_undef &&
        (ec = EC_KEY_new_by_curve_name_ex(libctx, NULL, nid)) != NULL &&
        (EC_KEY_set_private_key(ec, EC_KEY_get0_private_key(from)) != 1 ||
         EC_KEY_set_public_key(ec, EC_KEY_get0_public_key(from)) != 1)) {
        EC_KEY_free(ec);
        ec = NULL;
    }
    if (ec != NULL) {
        EC_KEY_free(from);
        from = ec;
    }
    ERR_clear_error();
    return from;
}

void ecdsa_raw_key_free(EC_KEY *ec)
{
    EC_KEY_free(ec);
}

int ecdsa_raw_sign(EC_KEY *ec, const unsigned char *md, size_t mdlen, unsigned char *raw, size_t coord_len)
{
    ECDSA_SIG *sig = ECDSA_do_sign(md, (int)mdlen, ec);
    int ok = sig != NULL && BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, (int)coord_len) == (int)coord_len &&
             BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + coord_len, (int)coord_len) == (int)coord_len;

    ECDSA_SIG_free(sig);
    if (!ok)
        ERR_clear_error();
    return ok ? 0 : -1;
}
