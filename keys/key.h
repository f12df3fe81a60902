/* SPDX-License-Identifier: Apache-2.0 */
/*
 * key: one public signing key as it is published — the OpenSSL public key,
 * its kid, its JOSE algorithm and its pre-rendered JWK object.
 *
 * A struct key never holds private material: the loader derives the public
 * key and frees the private one before a struct key exists.
 */
#ifndef OIDC_KEY_H
#define OIDC_KEY_H

#include <stddef.h>
#include <openssl/evp.h>

/* base64url(SHA-256) is 43 characters: the kid key_init derives. */
#define KEY_KID_LEN 43

/* The longest kid a key can carry: one read from a JWKS (jwks_parse) keeps
 * the issuer's own, which need not be a derived one (KEP-740 external
 * signers may use up to 1024 characters). */
#define KEY_KID_MAX 1024

struct key {
    EVP_PKEY *pub;     /* public-only key, owned */
    char *kid;         /* as kube-apiserver derives it (KEY_KID_LEN), or as a JWKS gave it; owned */
    int kid_given;     /* kid came from a JWKS and is not the one key_kid derives */
    const char *alg;   /* "RS256", "ES256", "ES384" or "ES512" (static) */
    const char *curve; /* "P-256", "P-384", "P-521", or NULL for RSA (static) */
    int bits;          /* RSA modulus bits, or EC field bits */
    char *source;      /* "path" or "path (block N)", owned */
    char *path;        /* the file it was read from, as configured or listed, owned; NULL if none */
    char *path_real;   /* where path led (symlinks resolved) at that read, owned; NULL if unknown */
    char *jwk;         /* the JWK object as published, owned, NUL-terminated */
    size_t jwk_len;
};

/* Builds a struct key from a public key. Takes ownership of pub on success
 * and on failure (it is freed then). source is copied. kid is the key's
 * kid as a JWKS gave it (copied; it must pass key_kid_ok), or NULL for the
 * derived one. Returns 0, or -1 with a message in err (unsupported type or
 * curve, unusable kid). */
int key_init(struct key *k, EVP_PKEY *pub, const char *source, const char *kid, char *err, size_t errlen);

/* Whether kid can be kept as a JWKS gave it: 1 to KEY_KID_MAX printable
 * ASCII characters without quote or backslash, so that it is stored,
 * matched against token headers and re-rendered without any escaping. */
int key_kid_ok(const char *kid);

/* Checks that pub is a type kube-apiserver publishes: RSA, or ECDSA on
 * P-256, P-384 or P-521. Returns 0, or -1 with the reason in err. */
int key_check_type(EVP_PKEY *pub, char *err, size_t errlen);

/* A new public-only key with the public half of key (private or public):
 * re-created from its DER SubjectPublicKeyInfo, so that no private
 * material outlives whoever derived it, and a legacy key comes back as a
 * provider key. NULL when key has no public half to encode, or out of
 * memory. The caller frees both. */
EVP_PKEY *key_public_only(EVP_PKEY *key);

/* Makes dst a copy of src (the OpenSSL key shared, one more reference).
 * Returns 0, or -1 out of memory (dst then needs key_clear). */
int key_copy(struct key *dst, const struct key *src);

/* Frees what key_init allocated; safe on a zeroed struct. */
void key_clear(struct key *k);

/* Writes the kid of pub (base64url without padding of SHA-256 over the DER
 * SubjectPublicKeyInfo) into kid. Returns 0 or -1. */
int key_kid(EVP_PKEY *pub, char kid[KEY_KID_LEN + 1]);

/* base64 (standard, padded) of pub's DER SubjectPublicKeyInfo: how the
 * state files store a public key, public by nature. malloc'ed; NULL when
 * out of memory. */
char *key_spki_encode(EVP_PKEY *pub);

/* d2i_PUBKEY(NULL, pp, len), quicker for a named-curve EC key: the
 * public key of the DER SubjectPublicKeyInfo at *pp, which is advanced
 * past what was read; NULL when it does not decode. */
EVP_PKEY *key_d2i_pubkey(const unsigned char **pp, long len);

/* The public key key_spki_encode wrote, or NULL when spki does not decode. */
EVP_PKEY *key_spki_decode(const char *spki);

#endif
