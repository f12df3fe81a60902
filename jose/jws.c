/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/jws.h"

#include "jose/ecdsa_raw.h"
#include "jose/signctx.h"

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/rsa.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* The alg's curve order, big-endian in coord_len bytes, into order: read
 * once per key, since building the group costs more than a verification. */
static int jws_curve_order(const struct jws_alg *a, unsigned char *order)
{
    EC_GROUP *group = EC_GROUP_new_by_curve_name(a->curve_nid);
    int ok = group != NULL && BN_bn2binpad(EC_GROUP_get0_order(group), order, (int)a->coord_len) == (int)a->coord_len;

    EC_GROUP_free(group);
    return ok ? 0 : -1;
}

/* The last context id handed out (a jws_key's verify_id, a jws_signer's
 * sign_id: one sequence, so the two never meet in a thread's cache). */
static atomic_ullong jws_ctx_ids;

/* Fetches a's digest into *md and makes *ctx, a context of pkey set up by
 * init (EVP_PKEY_verify_init or EVP_PKEY_sign_init) for a's padding and
 * digest, with a fresh id for its per-thread copies into *id. 0, or -1
 * (the caller frees what was made). */
static int jws_prepare_ctx(const struct jws_alg *a, EVP_PKEY *pkey, OSSL_LIB_CTX *libctx, int (*init)(EVP_PKEY_CTX *),
                           EVP_MD **md, EVP_PKEY_CTX **ctx, unsigned long long *id)
{
    *id = atomic_fetch_add(&jws_ctx_ids, 1) + 1;
    *md = EVP_MD_fetch(libctx, EVP_MD_get0_name(a->md()), NULL);
    *ctx = EVP_PKEY_CTX_new_from_pkey(libctx, pkey, NULL);
    if (*md == NULL || *ctx == NULL || init(*ctx) != 1 ||
        (a->coord_len == 0 && EVP_PKEY_CTX_set_rsa_padding(*ctx, RSA_PKCS1_PADDING) != 1) ||
        EVP_PKEY_CTX_set_signature_md(*ctx, *md) != 1) {
        ERR_clear_error();
        return -1;
    }
    return 0;
}

int jws_key_prepare(struct jws_key *v, const struct key *k)
{
    const struct jws_alg *a = jws_alg_find(k->alg);

    memset(v, 0, sizeof(*v));
    v->key = k;
    if (a == NULL || (a->coord_len != 0 && jws_curve_order(a, v->order) != 0))
        return -1;
    return jws_prepare_ctx(a, k->pub, NULL, EVP_PKEY_verify_init, &v->md, &v->verify_ctx, &v->verify_id);
}

void jws_key_clear(struct jws_key *v)
{
    EVP_PKEY_CTX_free(v->verify_ctx);
    EVP_MD_free(v->md);
    memset(v, 0, sizeof(*v));
}

/* 1 when the big-endian number x of len bytes is in [1, n-1]. */
static int jws_in_range(const unsigned char *x, const unsigned char *n, size_t len)
{
    size_t i = 0;

    while (i < len && x[i] == 0)
        i++;
    return i < len && memcmp(x, n, len) < 0;
}

/* Appends x (len big-endian bytes, not zero) to der as a minimal DER
 * INTEGER: leading zeros dropped, a zero prepended when the top bit is set
 * (or it would read as negative). Returns the bytes written. */
static size_t jws_der_integer(unsigned char *der, const unsigned char *x, size_t len)
{
    size_t o = 0;

    while (x[0] == 0) {
        x++;
        len--;
    }
    der[o++] = 0x02;
    der[o++] = (unsigned char)(len + (x[0] >> 7));
    if (x[0] & 0x80)
        der[o++] = 0;
    memcpy(der + o, x, len);
    return o + len;
}

/* Re-encodes a raw r || s signature as DER for OpenSSL (what i2d_ECDSA_SIG
 * writes, built by hand: no allocation), refusing any other length and r or
 * s outside [1, n-1]: OpenSSL would refuse those too, but as a plain bad
 * signature, and a malformed signature is worth telling apart. Returns the
 * DER length, or 0 when the format is wrong. */
static size_t jws_raw_to_der(const struct jws_alg *a, const struct jws_key *k, const unsigned char *sig, size_t siglen,
                             unsigned char der[JWS_DER_MAX])
{
    const unsigned char *r = sig, *s = sig + a->coord_len;
    size_t body, head;

    if (siglen != 2 * a->coord_len || !jws_in_range(r, k->order, a->coord_len) ||
        !jws_in_range(s, k->order, a->coord_len))
        return 0;
    /* The body goes after the longest SEQUENCE header (3 bytes: P-521's
     * body is over 127 bytes), then moves back when the header is shorter. */
    body = jws_der_integer(der + 3, r, a->coord_len);
    body += jws_der_integer(der + 3 + body, s, a->coord_len);
    head = body < 128 ? 2 : 3;
    der[0] = 0x30;
    if (head == 3)
        der[1] = 0x81;
    der[head - 1] = (unsigned char)body;
    memmove(der + head, der + 3, body);
    return head + body;
}

/* Each thread's verification state. EVP_PKEY_verify writes to its context
 * (the RSA provider keeps a buffer there), so threads cannot share a key's
 * prepared one, and copying it for every verification costs allocations;
 * so does a new digest context each time. Instead each thread keeps one
 * digest context and copies of the verify contexts of the last few keys it
 * used, freed when it exits (pthread key destructor); signing keys
 * (jws_signer) are kept the same way. A copy is found by its key's id,
 * which no other key ever gets: a key freed and another prepared at its
 * address must not find the old copy. */
#define JWS_THREAD_KEYS 4

struct jws_thread {
    EVP_MD_CTX *digest;
    struct {
        unsigned long long id; /* a verify_id or sign_id; 0: empty */
        EVP_PKEY_CTX *ctx;
    } keys[JWS_THREAD_KEYS];
    unsigned next; /* the slot to reuse when the key is not there: round robin */
};

static pthread_once_t jws_thread_once = PTHREAD_ONCE_INIT;
static pthread_key_t jws_thread_key;
static int jws_thread_key_ok;

static void jws_thread_free(void *arg)
{
    struct jws_thread *t = arg;

    EVP_MD_CTX_free(t->digest);
    for (int i = 0; i < JWS_THREAD_KEYS; i++)
        EVP_PKEY_CTX_free(t->keys[i].ctx);
    free(t);
}

static void jws_thread_key_create(void)
{
    jws_thread_key_ok = pthread_key_create(&jws_thread_key, jws_thread_free) == 0;
}

/* The calling thread's state, created on first use; NULL when out of
 * memory. */
static struct jws_thread *jws_thread_get(void)
{
    struct jws_thread *t;

    if (pthread_once(&jws_thread_once, jws_thread_key_create) != 0 || !jws_thread_key_ok)
        return NULL;
    if ((t = pthread_getspecific(jws_thread_key)) != NULL)
        return t;
    if ((t = calloc(1, sizeof(*t))) == NULL || (t->digest = EVP_MD_CTX_new()) == NULL ||
        pthread_setspecific(jws_thread_key, t) != 0) {
        if (t != NULL)
            jws_thread_free(t);
        return NULL;
    }
    return t;
}

/* The thread's copy of the prepared context tmpl, whose id is id, made on
 * first use (replacing the copy of another key when all slots are taken);
 * NULL when out of memory. */
static EVP_PKEY_CTX *jws_thread_ctx(struct jws_thread *t, unsigned long long id, EVP_PKEY_CTX *tmpl)
{
    unsigned slot;

    for (slot = 0; slot < JWS_THREAD_KEYS; slot++)
        if (t->keys[slot].id == id)
            return t->keys[slot].ctx;
    slot = t->next++ % JWS_THREAD_KEYS;
    EVP_PKEY_CTX_free(t->keys[slot].ctx);
    t->keys[slot].ctx = EVP_PKEY_CTX_dup(tmpl);
    t->keys[slot].id = t->keys[slot].ctx != NULL ? id : 0;
    return t->keys[slot].ctx;
}

/* Hashes msg with md into the thread's digest context: the digest and its
 * length into md_out and *mdlen. 1, or 0. */
static int jws_thread_digest(struct jws_thread *t, const EVP_MD *md, const void *msg, size_t msglen,
                             unsigned char *md_out, unsigned *mdlen)
{
    return EVP_DigestInit_ex2(t->digest, md, NULL) == 1 && EVP_DigestUpdate(t->digest, msg, msglen) == 1 &&
           EVP_DigestFinal_ex(t->digest, md_out, mdlen) == 1;
}

/* Hashes msg and checks sig over the digest with the thread's contexts:
 * EVP_DigestVerify, without its per-call set-up. */
static int jws_pkey_verify(const struct jws_key *k, const void *msg, size_t msglen, const unsigned char *sig,
                           size_t siglen)
{
    struct jws_thread *t = jws_thread_get();
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    EVP_PKEY_CTX *ctx;

    return t != NULL && jws_thread_digest(t, k->md, msg, msglen, md, &mdlen) &&
           (ctx = jws_thread_ctx(t, k->verify_id, k->verify_ctx)) != NULL &&
           EVP_PKEY_verify(ctx, sig, siglen, md, mdlen) == 1;
}

enum token_error jws_verify(const struct jws_alg *a, const struct jws_key *k, const void *msg, size_t msglen,
                            const unsigned char *sig, size_t siglen)
{
    enum token_error e = TOKEN_ERR_SIGNATURE;
    unsigned char der[JWS_DER_MAX];
    size_t derlen;

    /* The prepared state is the key's alg's: never check with another. */
    if (strcmp(a->name, k->key->alg) != 0)
        return TOKEN_ERR_SIGNATURE;
    if (a->coord_len == 0) {
        if (jws_pkey_verify(k, msg, msglen, sig, siglen))
            e = TOKEN_OK;
    } else if ((derlen = jws_raw_to_der(a, k, sig, siglen, der)) == 0) {
        e = TOKEN_ERR_ECDSA_FORMAT;
    } else if (jws_pkey_verify(k, msg, msglen, der, derlen)) {
        e = TOKEN_OK;
    }
    /* A failed verification leaves errors queued; they must not surface in
     * an unrelated later report. (Peeking first is cheaper than clearing an
     * empty queue.) */
    if (ERR_peek_error() != 0)
        ERR_clear_error();
    return e;
}

unsigned char *jws_sign(const struct jws_alg *a, EVP_PKEY *priv, const void *msg, size_t msglen, size_t *siglen)
{
    struct jws_signer s;
    unsigned char sig[JWS_SIG_MAX], *out = NULL;

    if (jws_signer_prepare(&s, a, priv) == 0 && jws_signer_sign(&s, msg, msglen, sig, siglen) == 0 &&
        (out = malloc(*siglen)) != NULL)
        memcpy(out, sig, *siglen);
    jws_signer_clear(&s);
    return out;
}

int jws_signer_prepare(struct jws_signer *s, const struct jws_alg *a, EVP_PKEY *priv)
{
    memset(s, 0, sizeof(*s));
    s->alg = a;
    if (EVP_PKEY_up_ref(priv) != 1)
        return -1;
    s->priv = priv;
    if (a->coord_len == 0)
        return jws_prepare_ctx(a, priv, signctx_libctx(), EVP_PKEY_sign_init, &s->md, &s->sign_ctx, &s->sign_id);
    s->md = EVP_MD_fetch(NULL, EVP_MD_get0_name(a->md()), NULL);
    s->ec = ecdsa_raw_key(priv);
    ERR_clear_error();
    return s->md != NULL && s->ec != NULL ? 0 : -1;
}

void jws_signer_clear(struct jws_signer *s)
{
    ecdsa_raw_key_free(s->ec);
    EVP_PKEY_CTX_free(s->sign_ctx);
    EVP_MD_free(s->md);
    EVP_PKEY_free(s->priv);
    memset(s, 0, sizeof(*s));
}

/* s's signature of the digest md into sig and *len. RSA signs into the
 * largest size any key can need rather than asking OpenSSL for the size
 * first: that second EVP_PKEY_sign call cost 0.9% of an external signer's
 * Sign call (perf, bench/sign_bench's load). 0, or -1. */
static int jws_signer_digest(const struct jws_signer *s, struct jws_thread *t, const unsigned char *md, unsigned mdlen,
                             unsigned char sig[JWS_SIG_MAX], size_t *len)
{
    EVP_PKEY_CTX *ctx;

    if (s->ec != NULL) {
        *len = 2 * s->alg->coord_len;
        return ecdsa_raw_sign(s->ec, md, mdlen, sig, s->alg->coord_len);
    }
    *len = JWS_SIG_MAX;
    if ((ctx = jws_thread_ctx(t, s->sign_id, s->sign_ctx)) == NULL || EVP_PKEY_sign(ctx, sig, len, md, mdlen) != 1) {
        ERR_clear_error();
        return -1;
    }
    return 0;
}

int jws_signer_sign(const struct jws_signer *s, const void *msg, size_t msglen, unsigned char sig[JWS_SIG_MAX],
                    size_t *siglen)
{
    struct jws_thread *t = jws_thread_get();
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;

    if (t == NULL || !jws_thread_digest(t, s->md, msg, msglen, md, &mdlen)) {
        ERR_clear_error();
        return -1;
    }
    return jws_signer_digest(s, t, md, mdlen, sig, siglen);
}
