/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/signer.h"

#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/b64url.h"
#include "util/jsonw.h"

/* The header of every token: exactly the members kube-apiserver allows,
 * compact (docs/compatibility.md §9). */
static char *signer_header(const char *alg, const char *kid, size_t *len)
{
    struct jsonw w = {0};
    char *json = NULL, *b64 = NULL;
    size_t n;

    jsonw_lit(&w, "{\"alg\":");
    jsonw_str(&w, alg);
    jsonw_lit(&w, ",\"kid\":");
    jsonw_str(&w, kid);
    jsonw_lit(&w, ",\"typ\":\"JWT\"}");
    if (jsonw_finish(&w, &json, &n) == 0 && (b64 = malloc(B64URL_ENCODED_LEN(n) + 1)) != NULL)
        *len = b64url_encode((const unsigned char *)json, n, b64);
    free(json);
    return b64;
}

/* Copies the published keys as FetchKeys returns them. */
static int signer_copy_keys(struct signer_state *s, const struct keyset *ks)
{
    if ((s->keys = calloc(ks->count ? ks->count : 1, sizeof(*s->keys))) == NULL)
        return -1;
    for (size_t i = 0; i < ks->count; i++, s->nkeys++) {
        struct signer_pub *k = &s->keys[i];
        unsigned char *der = NULL;
        int len = i2d_PUBKEY(ks->keys[i].pub, &der);
        if (len <= 0 || (k->kid = strdup(ks->keys[i].kid)) == NULL) {
            OPENSSL_free(der);
            return -1;
        }
        k->der = der;
        k->der_len = (size_t)len;
    }
    return 0;
}

/* Takes the signing key: its algorithm, the header of its tokens, and the
 * key prepared for signing. */
static int signer_take_key(struct signer_state *s, const struct signer_params *p, char *err, size_t errlen)
{
    const struct jws_alg *alg;
    struct key k;

    if (EVP_PKEY_up_ref(p->priv) != 1 || key_init(&k, p->priv, "", NULL, err, errlen) != 0)
        return -1; /* key_init freed the reference on failure */
    alg = jws_alg_find(k.alg);
    key_clear(&k);
    snprintf(s->kid, sizeof(s->kid), "%s", p->kid);
    if (alg == NULL || (s->header = signer_header(alg->name, s->kid, &s->header_len)) == NULL ||
        jws_signer_prepare(&s->key, alg, p->priv) != 0) {
        snprintf(err, errlen, "cannot prepare the key kid=%s for signing", p->kid);
        return -1;
    }
    return 0;
}

struct signer_state *signer_state_new(const struct signer_params *p, char *err, size_t errlen)
{
    struct signer_state *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->keys_changed = p->keys_changed;
    s->next_change = p->next_change;
    s->max_token_expiration = p->max_token_expiration;
    snprintf(s->unavailable, sizeof(s->unavailable), "%s", p->unavailable ? p->unavailable : "");
    if (p->priv != NULL && signer_take_key(s, p, err, errlen) != 0)
        goto fail;
    if (signer_copy_keys(s, p->published) != 0 ||
        (s->roles = calloc(p->nroles ? p->nroles : 1, sizeof(*s->roles))) == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (p->nroles > 0)
        memcpy(s->roles, p->roles, p->nroles * sizeof(*s->roles));
    s->nroles = p->nroles;
    return s;

fail:
    signer_state_release(s);
    return NULL;
}

struct signer_state *signer_state_ref(struct signer_state *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void signer_state_release(struct signer_state *s)
{
    if (s == NULL || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    jws_signer_clear(&s->key);
    free(s->header);
    for (size_t i = 0; i < s->nkeys; i++) {
        free(s->keys[i].kid);
        OPENSSL_free(s->keys[i].der);
    }
    free(s->keys);
    free(s->roles);
    free(s);
}

int signer_state_same(const struct signer_state *a, const struct signer_state *b)
{
    if ((a->key.priv == NULL) != (b->key.priv == NULL) || strcmp(a->kid, b->kid) != 0 ||
        strcmp(a->unavailable, b->unavailable) != 0 || a->keys_changed != b->keys_changed ||
        a->next_change != b->next_change || a->max_token_expiration != b->max_token_expiration ||
        a->nkeys != b->nkeys || a->nroles != b->nroles ||
        memcmp(a->roles, b->roles, a->nroles * sizeof(*a->roles)) != 0)
        return 0;
    for (size_t i = 0; i < a->nkeys; i++)
        if (strcmp(a->keys[i].kid, b->keys[i].kid) != 0)
            return 0;
    return 1;
}

/* Whether claims is a non-empty base64url string without padding: a
 * table look-up per character (a search of the alphabet per character
 * showed in the profile of a Sign call). */
static int signer_claims_ok(const char *claims, size_t len)
{
    static unsigned char ok[256];
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    if (!ok['A'])
        for (const char *c = alphabet; *c; c++)
            ok[(unsigned char)*c] = 1;
    if (len == 0 || len % 4 == 1)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!ok[(unsigned char)claims[i]])
            return 0;
    return 1;
}

enum signer_result signer_sign(const struct signer_state *s, const char *claims, size_t len, size_t max_len,
                               char **signature)
{
    size_t inlen = s->header_len + 1 + len, siglen = 0;
    unsigned char sig[JWS_SIG_MAX];
    char *input;
    int signed_ok;

    *signature = NULL;
    if (s->key.priv == NULL)
        return SIGNER_UNAVAILABLE;
    if (len > max_len || !signer_claims_ok(claims, len))
        return SIGNER_BAD_CLAIMS;
    if ((input = malloc(inlen)) == NULL)
        return SIGNER_FAILED;
    memcpy(input, s->header, s->header_len);
    input[s->header_len] = '.';
    memcpy(input + s->header_len + 1, claims, len);
    signed_ok = jws_signer_sign(&s->key, input, inlen, sig, &siglen) == 0;
    free(input);
    if (signed_ok && (*signature = malloc(B64URL_ENCODED_LEN(siglen) + 1)) != NULL)
        b64url_encode(sig, siglen, *signature);
    return *signature != NULL ? SIGNER_OK : SIGNER_FAILED;
}

int64_t signer_refresh_hint(const struct signer_state *s, time_t now)
{
    int64_t left = s->next_change == 0 ? SIGNER_REFRESH_MAX : (int64_t)(s->next_change - now);

    return left < 1 ? 1 : left > SIGNER_REFRESH_MAX ? SIGNER_REFRESH_MAX : left;
}

void signer_slot_init(struct signer_slot *slot)
{
    pthread_mutex_init(&slot->mu, NULL);
    pthread_mutex_init(&slot->retired_mu, NULL);
    slot->current = NULL;
    slot->retired = NULL;
}

void signer_slot_set(struct signer_slot *slot, struct signer_state *s)
{
    struct signer_state *old;

    signer_state_ref(s);
    pthread_mutex_lock(&slot->mu);
    old = slot->current;
    slot->current = s;
    pthread_mutex_unlock(&slot->mu);
    if (old != NULL) {
        /* the slot's reference moves to the retired list */
        pthread_mutex_lock(&slot->retired_mu);
        old->retired_next = slot->retired;
        slot->retired = old;
        pthread_mutex_unlock(&slot->retired_mu);
    }
    signer_slot_sweep(slot);
}

/* A retired state is out of the slot, so no call can take a new reference
 * to it: once the slot's is the only one left, it stays the only one, and
 * dropping it here frees the state on this thread. */
void signer_slot_sweep(struct signer_slot *slot)
{
    struct signer_state **at, *done = NULL;

    pthread_mutex_lock(&slot->retired_mu);
    for (at = &slot->retired; *at != NULL;) {
        struct signer_state *r = *at;
        if (atomic_load_explicit(&r->refs, memory_order_acquire) == 1) {
            *at = r->retired_next;
            r->retired_next = done;
            done = r;
        } else {
            at = &r->retired_next;
        }
    }
    pthread_mutex_unlock(&slot->retired_mu);
    while (done != NULL) {
        struct signer_state *next = done->retired_next;
        signer_state_release(done);
        done = next;
    }
}

struct signer_state *signer_slot_get(struct signer_slot *slot)
{
    struct signer_state *s;

    pthread_mutex_lock(&slot->mu);
    s = slot->current ? signer_state_ref(slot->current) : NULL;
    pthread_mutex_unlock(&slot->mu);
    return s;
}

void signer_slot_destroy(struct signer_slot *slot)
{
    signer_state_release(slot->current);
    slot->current = NULL;
    while (slot->retired != NULL) {
        struct signer_state *next = slot->retired->retired_next;
        signer_state_release(slot->retired);
        slot->retired = next;
    }
    pthread_mutex_destroy(&slot->retired_mu);
    pthread_mutex_destroy(&slot->mu);
}
