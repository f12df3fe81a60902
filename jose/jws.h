/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jws: the JOSE signature algorithms kube-apiserver signs service-account
 * tokens with (RS256, ES256, ES384, ES512), and signing and verifying with
 * them. ECDSA signatures travel as raw r || s (RFC 7518 section 3.4), not
 * as OpenSSL's DER; the conversion both ways lives here.
 */
#ifndef OIDC_JWS_H
#define OIDC_JWS_H

#include <stddef.h>
#include <openssl/evp.h>

#include "jose/token.h"
#include "keys/key.h"

struct jws_alg {
    const char *name;          /* "RS256", ... as in the JOSE header and struct key */
    unsigned mask;             /* TOKEN_ALG_* */
    const EVP_MD *(*md)(void); /* EVP_sha256, ... */
    int curve_nid;             /* NID of the ECDSA curve, 0 for RSA */
    size_t coord_len;          /* ECDSA: bytes of r and of s; 0 for RSA */
};

/* The algorithm called name (byte-exact), or NULL when it is none of the
 * four. */
const struct jws_alg *jws_alg_find(const char *name);

/* Bytes of the largest ECDSA group order (P-521). */
#define JWS_ORDER_MAX 66

/* Largest DER ECDSA signature: SEQUENCE header (3) and two INTEGERs of
 * P-521 coordinates with a sign byte (2 + 67 each). */
#define JWS_DER_MAX (3 + 2 * (2 + JWS_ORDER_MAX + 1))

/* Largest signature a key makes: an RSA modulus of 16384 bits, the most
 * OpenSSL works with (OPENSSL_RSA_MAX_MODULUS_BITS). */
#define JWS_SIG_MAX 2048

/* A public key prepared for verification, so that no verification looks
 * anything up by name. Read-only once prepared: threads that share it
 * verify concurrently. */
struct jws_key {
    const struct key *key;              /* the key (its alg and pub), not owned */
    EVP_MD *md;                         /* the alg's digest, fetched once, owned */
    EVP_PKEY_CTX *verify_ctx;           /* verify-initialised for the alg, owned; only ever copied */
    unsigned long long verify_id;       /* names verify_ctx's per-thread copies (jws.c); never reused */
    unsigned char order[JWS_ORDER_MAX]; /* ECDSA: the group order, big-endian, in the alg's coord_len bytes */
};

/* Prepares v for k, which must outlive it: the digest, a verify-initialised
 * context, a fresh verify_id and, for ECDSA, the group order. Returns 0, or
 * -1 (jws_key_clear frees what was made). */
int jws_key_prepare(struct jws_key *v, const struct key *k);

/* Frees what jws_key_prepare made; safe on a zeroed struct. */
void jws_key_clear(struct jws_key *v);

/* Verifies sig over msg with k, whose alg must be a (else
 * TOKEN_ERR_SIGNATURE). Returns TOKEN_OK, TOKEN_ERR_ECDSA_FORMAT (an ECDSA
 * signature that is not 2 x coord_len bytes, or whose r or s is 0 or not
 * below the group order) or TOKEN_ERR_SIGNATURE. Safe to call from many
 * threads on one key: each verifies with its own copy of the key's
 * context, kept for the next verification until the thread exits. */
enum token_error jws_verify(const struct jws_alg *a, const struct jws_key *k, const void *msg, size_t msglen,
                            const unsigned char *sig, size_t siglen);

/* Signs msg with priv. Returns a malloc'ed signature in JWS form (raw r || s
 * for ECDSA) and sets *siglen, or NULL. */
unsigned char *jws_sign(const struct jws_alg *a, EVP_PKEY *priv, const void *msg, size_t msglen, size_t *siglen);

/* A private key prepared for signing many times, as jws_key is for
 * verifying: the digest fetched and, for RSA, a sign-initialised context
 * made once, so that a signature costs the hash and the private-key
 * operation (what `openssl speed` measures), not OpenSSL's look-ups and
 * set-up, which for ES256 cost as much again. ECDSA keys sign through
 * ecdsa_raw.h, which gives r || s without a DER round trip. Read-only once
 * prepared. */
struct jws_signer {
    const struct jws_alg *alg;
    EVP_PKEY *priv;             /* a reference, owned */
    EVP_MD *md;                 /* owned */
    EVP_PKEY_CTX *sign_ctx;     /* RSA: sign-initialised, owned; only ever copied */
    unsigned long long sign_id; /* RSA: names sign_ctx's per-thread copies; never reused */
    EC_KEY *ec;                 /* ECDSA: priv's EC key, a reference, owned; NULL for RSA */
};

/* Prepares s to sign with priv (a reference is taken) under a, which must
 * be priv's algorithm. 0, or -1 (jws_signer_clear frees what was made). */
int jws_signer_prepare(struct jws_signer *s, const struct jws_alg *a, EVP_PKEY *priv);

/* Frees what jws_signer_prepare made; safe on a zeroed struct. */
void jws_signer_clear(struct jws_signer *s);

/* Signs msg with a prepared key into sig, in JWS form (raw r || s for
 * ECDSA), and sets *siglen. 0, or -1. Safe to call from many threads on one
 * key: for RSA each thread signs with its own copy of the context, kept for
 * the next signature until the thread exits. */
int jws_signer_sign(const struct jws_signer *s, const void *msg, size_t msglen, unsigned char sig[JWS_SIG_MAX],
                    size_t *siglen);

#endif
