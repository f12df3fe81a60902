/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/pem.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include "keys/key.h"

/* How a PEM block type is decoded into a key. */
enum pem_kind { PEM_SKIP, PEM_RSA_PRIVATE, PEM_EC_PRIVATE, PEM_PKCS8, PEM_SPKI, PEM_RSA_PUBLIC, PEM_CERT };

static const struct {
    const char *name;
    enum pem_kind kind;
} pem_kinds[] = {
    {"RSA PRIVATE KEY", PEM_RSA_PRIVATE}, {"EC PRIVATE KEY", PEM_EC_PRIVATE},
    {"PRIVATE KEY", PEM_PKCS8},           {"PUBLIC KEY", PEM_SPKI},
    {"RSA PUBLIC KEY", PEM_RSA_PUBLIC},   {"CERTIFICATE", PEM_CERT},
};

static enum pem_kind pem_kind_of(const char *name)
{
    for (size_t i = 0; i < sizeof(pem_kinds) / sizeof(pem_kinds[0]); i++)
        if (strcmp(name, pem_kinds[i].name) == 0)
            return pem_kinds[i].kind;
    return PEM_SKIP;
}

/* Decodes the DER body of one block. The whole body must be consumed: like
 * Go's parsers (kube-apiserver), trailing bytes make the block malformed.
 * *is_ca is set for a CA certificate, which gives no key. */
static EVP_PKEY *pem_decode(enum pem_kind kind, const unsigned char *der, long len, int *is_ca)
{
    const unsigned char *p = der;
    EVP_PKEY *pkey = NULL;

    switch (kind) {
    case PEM_RSA_PRIVATE:
        pkey = d2i_PrivateKey(EVP_PKEY_RSA, NULL, &p, len);
        break;
    case PEM_EC_PRIVATE:
        pkey = d2i_PrivateKey(EVP_PKEY_EC, NULL, &p, len);
        break;
    case PEM_PKCS8: {
        PKCS8_PRIV_KEY_INFO *p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, len);
        if (p8 != NULL)
            pkey = EVP_PKCS82PKEY(p8);
        PKCS8_PRIV_KEY_INFO_free(p8);
        break;
    }
    case PEM_SPKI:
        pkey = key_d2i_pubkey(&p, len);
        break;
    case PEM_RSA_PUBLIC:
        pkey = d2i_PublicKey(EVP_PKEY_RSA, NULL, &p, len);
        break;
    case PEM_CERT: {
        X509 *cert = d2i_X509(NULL, &p, len);
        /* kube-apiserver would publish a CA's key as a token-signing key,
         * and relying parties would then take whatever that CA's private
         * key signs for a service-account token: the CA certificate of a
         * PKI directory (kubeadm's ca.crt, front-proxy-ca.crt) is a
         * mistake, never an intent. basicConstraints CA:TRUE decides. */
        *is_ca = cert != NULL && (X509_get_extension_flags(cert) & EXFLAG_CA) != 0;
        if (cert != NULL && !*is_ca)
            pkey = X509_get_pubkey(cert);
        X509_free(cert);
        break;
    }
    case PEM_SKIP:
        break;
    }
    if (pkey != NULL && p != der + len) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
    return pkey;
}

/* Which decoded keys go through key_public_only: private ones, to drop the
 * private material, and PKCS#1 public ones, which OpenSSL decodes as legacy
 * RSA objects, so that every key handed on is of the same provider kind.
 * The other public blocks decode to public-only provider keys already; the
 * round trip (an encode and a second decode, about 200 us per key with
 * OpenSSL 3.0) would be pure cost for them. */
static int pem_needs_round_trip(enum pem_kind kind)
{
    return kind == PEM_RSA_PRIVATE || kind == PEM_EC_PRIVATE || kind == PEM_PKCS8 || kind == PEM_RSA_PUBLIC;
}

static int pem_is_encrypted(const char *name, const char *header)
{
    return strcmp(name, "ENCRYPTED PRIVATE KEY") == 0 || strstr(header, "ENCRYPTED") != NULL;
}

/* Handles one block: skip it, or decode it and hand its public key to cb.
 * Returns 1 when a key was delivered, 0 when skipped, -1 on error. */
static int pem_handle_block(const char *path, int block, const char *name, const char *header, unsigned char *der,
                            long len, pem_key_cb cb, void *ctx, char *err, size_t errlen)
{
    enum pem_kind kind = pem_kind_of(name);
    EVP_PKEY *key, *pub;
    char why[256];
    int was_private = kind == PEM_RSA_PRIVATE || kind == PEM_EC_PRIVATE || kind == PEM_PKCS8, is_ca = 0;

    if (pem_is_encrypted(name, header)) {
        snprintf(err, errlen, "%s: block %d: encrypted PEM (%s) is not supported", path, block, name);
        return -1;
    }
    if (kind == PEM_SKIP)
        return 0;
    key = pem_decode(kind, der, len, &is_ca);
    if (is_ca) {
        snprintf(err, errlen,
                 "%s: block %d: a CA certificate (basicConstraints CA:TRUE) is not a service-account key: "
                 "publishing it would let the CA's private key sign tokens; point at the service-account "
                 "key (sa.pub, or sa.key) instead",
                 path, block);
        return -1;
    }
    if (key == NULL) {
        snprintf(err, errlen, "%s: block %d: malformed %s (invalid DER)", path, block, name);
        return -1;
    }
    pub = key;
    if (pem_needs_round_trip(kind)) {
        pub = key_public_only(key);
        EVP_PKEY_free(key);
    }
    if (pub == NULL) {
        snprintf(err, errlen, "%s: block %d: cannot derive the public key of %s", path, block, name);
        return -1;
    }
    if (key_check_type(pub, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: block %d: %s", path, block, why);
        EVP_PKEY_free(pub);
        return -1;
    }
    return cb(ctx, pub, path, block, was_private, err, errlen) == 0 ? 1 : -1;
}

/* PEM_read_bio reports the end of input as a "no start line" error; any
 * other error means the block itself is broken (bad base64, no end line). */
static int pem_at_end(void)
{
    unsigned long e = ERR_peek_last_error();
    return ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
}

/* Handles one block of a walk; returns 1 when a key was delivered, 0 when
 * the block was passed over, -1 to stop with err. */
typedef int (*pem_block_fn)(void *ctx, int block, const char *name, const char *header, unsigned char *der, long len,
                            char *err, size_t errlen);

/* Walks the PEM blocks of text in order, wiping each block's DER (it may
 * be a private key) once handled. Returns the keys delivered, or -1 with
 * err: a malformed block, too large a text, or what fn said. */
static int pem_each_block(const char *path, const char *pem, size_t len, pem_block_fn fn, void *ctx, char *err,
                          size_t errlen)
{
    BIO *bio = len <= PEM_MAX_FILE_SIZE ? BIO_new_mem_buf(pem, (int)len) : NULL;
    int keys = 0, block = 0, rc = 0;

    if (bio == NULL) {
        snprintf(err, errlen, "%s: cannot read (too large or out of memory)", path);
        return -1;
    }
    ERR_clear_error();
    while (rc >= 0) {
        char *name = NULL, *header = NULL;
        unsigned char *der = NULL;
        long derlen = 0;

        if (!PEM_read_bio(bio, &name, &header, &der, &derlen)) {
            if (!pem_at_end()) {
                snprintf(err, errlen, "%s: block %d: malformed PEM (bad base64 or missing END line)", path, block + 1);
                rc = -1;
            }
            break;
        }
        rc = fn(ctx, ++block, name, header, der, derlen, err, errlen);
        keys += rc > 0;
        OPENSSL_cleanse(der, (size_t)derlen);
        OPENSSL_free(name);
        OPENSSL_free(header);
        OPENSSL_free(der);
    }
    ERR_clear_error();
    BIO_free(bio);
    return rc < 0 ? -1 : keys;
}

/* What pem_read_mem's walk hands each block. */
struct pem_reader {
    const char *path;
    pem_key_cb cb;
    void *ctx;
};

static int pem_read_block(void *ctx, int block, const char *name, const char *header, unsigned char *der, long len,
                          char *err, size_t errlen)
{
    struct pem_reader *r = ctx;

    return pem_handle_block(r->path, block, name, header, der, len, r->cb, r->ctx, err, errlen);
}

int pem_read_mem(const char *path, const char *pem, size_t len, pem_key_cb cb, void *ctx, char *err, size_t errlen)
{
    struct pem_reader r = {path, cb, ctx};
    int keys = pem_each_block(path, pem, len, pem_read_block, &r, err, errlen);

    if (keys == 0) {
        snprintf(err, errlen, "%s: data does not contain any valid RSA or ECDSA public keys", path);
        return -1;
    }
    return keys;
}

/* pem_ca_keys' walk: a CA certificate's public key goes to cb; every
 * other block, a broken one too, is passed over. */
static int pem_ca_block(void *ctx, int block, const char *name, const char *header, unsigned char *der, long len,
                        char *err, size_t errlen)
{
    struct pem_reader *r = ctx;
    const unsigned char *p = der;
    X509 *cert;
    EVP_PKEY *pub;

    (void)header;
    if (pem_kind_of(name) != PEM_CERT || (cert = d2i_X509(NULL, &p, len)) == NULL)
        return 0;
    pub = (X509_get_extension_flags(cert) & EXFLAG_CA) != 0 ? X509_get_pubkey(cert) : NULL;
    X509_free(cert);
    if (pub == NULL)
        return 0;
    return r->cb(r->ctx, pub, r->path, block, 0, err, errlen) == 0 ? 1 : -1;
}

int pem_ca_keys(const char *name, const char *pem, size_t len, pem_key_cb cb, void *ctx)
{
    struct pem_reader r = {name, cb, ctx};
    char err[256];

    ERR_clear_error();
    return pem_each_block(name, pem, len, pem_ca_block, &r, err, sizeof(err));
}
