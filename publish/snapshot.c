/* SPDX-License-Identifier: Apache-2.0 */
#include "publish/snapshot.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jose/verifier.h"
#include "publish/routes.h"
#include "util/b64url.h"

/* 18 bytes of SHA-256 (144 bits) make a collision-free ETag in practice and
 * encode to 24 base64url characters without padding. */
#define SNAPSHOT_ETAG_HASH_BYTES 18

/* A strong ETag derived from the body alone, so every replica serving the
 * same keys hands out the same validator — a CDN in front of several
 * replicas can revalidate against any of them. */
static void snapshot_etag(struct snapshot_doc *doc)
{
    unsigned char digest[SHA256_DIGEST_LENGTH];
    char enc[B64URL_ENCODED_LEN(SNAPSHOT_ETAG_HASH_BYTES) + 1];

    SHA256((const unsigned char *)doc->body.bytes, doc->body.len, digest);
    b64url_encode(digest, SNAPSHOT_ETAG_HASH_BYTES, enc);
    doc->etag_len = (size_t)snprintf(doc->etag, sizeof(doc->etag), "\"%s\"", enc);
}

static void snapshot_set_doc(struct snapshot_doc *doc, const char *content_type)
{
    snapshot_etag(doc);
    doc->content_type = content_type;
    doc->content_type_len = strlen(content_type);
}

struct snapshot *snapshot_build(const struct snapshot_params *params, struct keyset *ks, time_t loaded_at)
{
    struct snapshot *s = calloc(1, sizeof(*s));
    struct tm tm;

    if (s == NULL) {
        keyset_free(ks);
        return NULL;
    }
    s->keyset = ks;
    atomic_init(&s->refs, 1);
    s->loaded_at = loaded_at;
    if ((s->jwks_content_type = strdup(params->jwks_content_type)) == NULL ||
        render_discovery(params->issuer, params->jwks_uri, ks, &s->discovery.body) != 0 ||
        render_jwks(ks, &s->jwks.body) != 0 ||
        (!params->without_verifier && (s->verifier = verifier_new(ks)) == NULL)) {
        snapshot_release(s);
        return NULL;
    }
    snapshot_set_doc(&s->discovery, "application/json");
    snapshot_set_doc(&s->jwks, s->jwks_content_type);
    s->cache_control_len =
        (size_t)snprintf(s->cache_control, sizeof(s->cache_control), "public, max-age=%lu", params->max_age);
    gmtime_r(&loaded_at, &tm);
    s->last_modified_len = strftime(s->last_modified, sizeof(s->last_modified), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return s;
}

struct snapshot *snapshot_unavailable(const struct snapshot_params *params, unsigned long retry_after, time_t loaded_at)
{
    struct keyset *none = keyset_new();
    struct snapshot *s = none != NULL ? snapshot_build(params, none, loaded_at) : NULL;

    if (s != NULL) {
        s->unavailable = 1;
        s->retry_after_len = (size_t)snprintf(s->retry_after, sizeof(s->retry_after), "%lu", retry_after);
    }
    return s;
}

static int snapshot_same_doc(const struct snapshot_doc *a, const struct snapshot_doc *b)
{
    return a->body.len == b->body.len && memcmp(a->body.bytes, b->body.bytes, a->body.len) == 0 &&
           strcmp(a->content_type, b->content_type) == 0;
}

int snapshot_same_bytes(const struct snapshot *a, const struct snapshot *b)
{
    return a->unavailable == b->unavailable && snapshot_same_doc(&a->discovery, &b->discovery) &&
           snapshot_same_doc(&a->jwks, &b->jwks) && strcmp(a->cache_control, b->cache_control) == 0;
}

struct snapshot *snapshot_ref(struct snapshot *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void snapshot_release(struct snapshot *s)
{
    if (s == NULL || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    routes_free(s->routes);
    verifier_free(s->verifier);
    keyset_free(s->keyset);
    free(s->discovery.body.bytes);
    free(s->jwks.body.bytes);
    free(s->jwks_content_type);
    free(s);
}
