/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/token_mint.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/b64url.h"
#include "util/jsonw.h"
#include "jose/jws.h"
#include "keys/key.h"

/* The public half of priv as a struct key: that brings the kid and alg the
 * server publishes for it, and refuses key types it would not publish. */
static int token_mint_public(EVP_PKEY *priv, struct key *k, char *err, size_t errlen)
{
    EVP_PKEY *pub = key_public_only(priv);

    if (pub == NULL) {
        snprintf(err, errlen, "cannot derive the public key");
        return -1;
    }
    return key_init(k, pub, "signing key", NULL, err, errlen);
}

/* A random (version 4) UUID, as kube-apiserver's jti. */
static int token_mint_uuid(char out[37])
{
    unsigned char b[16];

    if (RAND_bytes(b, sizeof(b)) != 1)
        return -1;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return 0;
}

/* Appends ,"name":N. */
static void token_mint_number(struct jsonw *w, const char *name, long long n)
{
    char num[32];

    jsonw_raw(w, ",", 1);
    jsonw_key(w, name);
    snprintf(num, sizeof(num), "%lld", n);
    jsonw_lit(w, num);
}

/* Appends ,"what":{"name":...,"uid":...} when name is set. */
static void token_mint_ref(struct jsonw *w, const char *what, const char *name, const char *uid)
{
    if (name == NULL)
        return;
    jsonw_raw(w, ",", 1);
    jsonw_key(w, what);
    jsonw_lit(w, "{\"name\":");
    jsonw_str(w, name);
    jsonw_lit(w, ",\"uid\":");
    jsonw_str(w, uid);
    jsonw_raw(w, "}", 1);
}

/* The payload, members in the order kube-apiserver writes them (go-jose
 * merges the claims through a map, so they come out sorted by name). */
static void token_mint_payload(struct jsonw *w, const struct token_claims *c, const char *jti, const char *sub)
{
    jsonw_lit(w, "{\"aud\":[");
    for (size_t i = 0; i < c->naudiences; i++) {
        if (i > 0)
            jsonw_raw(w, ",", 1);
        jsonw_str(w, c->audiences[i]);
    }
    jsonw_raw(w, "]", 1);
    token_mint_number(w, "exp", (long long)c->now + (long long)c->duration);
    token_mint_number(w, "iat", (long long)c->now);
    jsonw_lit(w, ",\"iss\":");
    jsonw_str(w, c->issuer);
    jsonw_lit(w, ",\"jti\":");
    jsonw_str(w, jti);
    jsonw_lit(w, ",\"kubernetes.io\":{\"namespace\":");
    jsonw_str(w, c->namespace_);
    token_mint_ref(w, "node", c->node_name, c->node_uid);
    token_mint_ref(w, "pod", c->pod_name, c->pod_uid);
    token_mint_ref(w, "serviceaccount", c->service_account, c->service_account_uid);
    jsonw_raw(w, "}", 1);
    token_mint_number(w, "nbf", (long long)c->now);
    jsonw_lit(w, ",\"sub\":");
    jsonw_str(w, sub);
    jsonw_raw(w, "}", 1);
}

/* Appends the base64url form of n bytes. */
static void token_mint_segment(struct jsonw *w, const void *data, size_t n)
{
    char *enc = malloc(B64URL_ENCODED_LEN(n) + 1);

    if (enc == NULL) {
        w->sb.failed = 1;
        return;
    }
    jsonw_raw(w, enc, b64url_encode(data, n, enc));
    free(enc);
}

/* Checks that the claims describe a token kube-apiserver could issue. */
static int token_mint_check(const struct token_claims *c, char *err, size_t errlen)
{
    if (c->issuer == NULL || c->namespace_ == NULL || c->service_account == NULL || c->service_account_uid == NULL)
        snprintf(err, errlen, "issuer, namespace, service account and its uid are required");
    else if ((c->pod_name == NULL) != (c->pod_uid == NULL) || (c->node_name == NULL) != (c->node_uid == NULL))
        snprintf(err, errlen, "a pod or node needs both a name and a uid");
    else
        return 0;
    return -1;
}

/* Signs the signing input already in w and appends "." and the signature. */
static void token_mint_sign(struct jsonw *w, const struct jws_alg *alg, EVP_PKEY *priv)
{
    size_t siglen = 0;
    unsigned char *sig = w->sb.failed ? NULL : jws_sign(alg, priv, w->sb.p, w->sb.len, &siglen);

    if (sig == NULL) {
        w->sb.failed = 1;
        return;
    }
    jsonw_raw(w, ".", 1);
    token_mint_segment(w, sig, siglen);
    free(sig);
}

char *token_mint(EVP_PKEY *priv, const struct token_claims *c, char *err, size_t errlen)
{
    struct key k = {0};
    struct jsonw header = {0}, payload = {0}, token = {0};
    char jti[37], *sub = NULL, *out = NULL;
    size_t len;

    if (token_mint_check(c, err, errlen) != 0 || token_mint_public(priv, &k, err, errlen) != 0)
        return NULL;
    if (token_mint_uuid(jti) != 0 ||
        asprintf(&sub, "system:serviceaccount:%s:%s", c->namespace_, c->service_account) < 0) {
        snprintf(err, errlen, "out of randomness or memory");
        sub = NULL;
        goto done;
    }
    jsonw_lit(&header, "{\"alg\":");
    jsonw_str(&header, k.alg);
    jsonw_lit(&header, ",\"kid\":");
    jsonw_str(&header, k.kid);
    jsonw_raw(&header, "}", 1);
    token_mint_payload(&payload, c, jti, sub);
    token.sb.failed = header.sb.failed || payload.sb.failed;
    token_mint_segment(&token, header.sb.p, header.sb.len);
    jsonw_raw(&token, ".", 1);
    token_mint_segment(&token, payload.sb.p, payload.sb.len);
    token_mint_sign(&token, jws_alg_find(k.alg), priv);
    if (jsonw_finish(&token, &out, &len) != 0)
        snprintf(err, errlen, "cannot sign the token (out of memory or an unusable key)");
done:
    free(sub);
    free(header.sb.p);
    free(payload.sb.p);
    key_clear(&k);
    return out;
}
