/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/vcache.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "jose/token_user.h"

/* One cached verification. Entries live in a ring that is overwritten in
 * insertion order (FIFO eviction) and are found through hash chains. */
struct vcache_entry {
    unsigned char key[SHA256_DIGEST_LENGTH];
    int used;
    size_t next; /* next entry in the same bucket, or VCACHE_NONE */
    struct token_user user;
};

#define VCACHE_NONE ((size_t)-1)

struct vcache {
    struct vcache_entry *entries;
    size_t capacity;
    size_t *buckets; /* heads of the chains, VCACHE_NONE when empty */
    size_t nbuckets; /* a power of two */
    size_t ring;     /* the slot the next put overwrites */
    size_t size;
    uint64_t keyset_id;
    uint64_t hits;
};

struct vcache *vcache_create(size_t capacity)
{
    struct vcache *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->capacity = capacity;
    for (c->nbuckets = 1; c->nbuckets < capacity; c->nbuckets *= 2)
        ;
    c->entries = calloc(capacity ? capacity : 1, sizeof(*c->entries));
    c->buckets = malloc(c->nbuckets * sizeof(*c->buckets));
    if (c->entries == NULL || c->buckets == NULL) {
        vcache_free(c);
        return NULL;
    }
    for (size_t i = 0; i < c->nbuckets; i++)
        c->buckets[i] = VCACHE_NONE;
    return c;
}

/* Feeds one length-prefixed byte string to the digest. */
static int vcache_hash_part(EVP_MD_CTX *md, const void *p, size_t len)
{
    uint64_t n = len;

    return EVP_DigestUpdate(md, &n, sizeof(n)) == 1 && EVP_DigestUpdate(md, p, len) == 1;
}

/* SHA-256 over the token and the audiences, each preceded by its length
 * (and the audiences by their count), so that no two different requests
 * hash the same input: without the lengths, token "ab" with audience "c"
 * and token "abc" with none could collide. Returns 0 or -1. */
static int vcache_key(const char *token, size_t len, char *const *audiences, size_t naudiences,
                      unsigned char key[SHA256_DIGEST_LENGTH])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    uint64_t count = naudiences;
    int ok = md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 && vcache_hash_part(md, token, len) &&
             EVP_DigestUpdate(md, &count, sizeof(count)) == 1;

    for (size_t i = 0; ok && i < naudiences; i++)
        ok = vcache_hash_part(md, audiences[i], strlen(audiences[i]));
    ok = ok && EVP_DigestFinal_ex(md, key, NULL) == 1;
    EVP_MD_CTX_free(md);
    return ok ? 0 : -1;
}

static size_t vcache_bucket(const struct vcache *c, const unsigned char key[SHA256_DIGEST_LENGTH])
{
    size_t h;

    memcpy(&h, key, sizeof(h));
    return h & (c->nbuckets - 1);
}

/* Unlinks entry i from its chain and frees its user. */
static void vcache_remove(struct vcache *c, size_t i)
{
    size_t *link = &c->buckets[vcache_bucket(c, c->entries[i].key)];

    while (*link != i)
        link = &c->entries[*link].next;
    *link = c->entries[i].next;
    token_user_clear(&c->entries[i].user);
    c->entries[i].used = 0;
    c->size--;
}

/* Drops everything cached for a key set other than id: its keys may be
 * gone, so what they verified no longer holds. */
static void vcache_use_keyset(struct vcache *c, uint64_t id)
{
    if (c->keyset_id == id)
        return;
    for (size_t i = 0; i < c->capacity; i++)
        if (c->entries[i].used)
            vcache_remove(c, i);
    c->keyset_id = id;
}

static size_t vcache_find(const struct vcache *c, const unsigned char key[SHA256_DIGEST_LENGTH])
{
    size_t i = c->buckets[vcache_bucket(c, key)];

    while (i != VCACHE_NONE && memcmp(c->entries[i].key, key, SHA256_DIGEST_LENGTH) != 0)
        i = c->entries[i].next;
    return i;
}

const struct token_user *vcache_get(struct vcache *c, uint64_t keyset_id, const char *token, size_t len,
                                    char *const *audiences, size_t naudiences, time_t now)
{
    unsigned char key[SHA256_DIGEST_LENGTH];
    size_t i;

    vcache_use_keyset(c, keyset_id);
    if (vcache_key(token, len, audiences, naudiences, key) != 0 || (i = vcache_find(c, key)) == VCACHE_NONE)
        return NULL;
    /* No leeway here: the cache never extends a token past its exp. */
    if (now >= c->entries[i].user.exp) {
        vcache_remove(c, i);
        return NULL;
    }
    c->hits++;
    return &c->entries[i].user;
}

void vcache_put(struct vcache *c, uint64_t keyset_id, const char *token, size_t len, char *const *audiences,
                size_t naudiences, const struct token_user *user)
{
    unsigned char key[SHA256_DIGEST_LENGTH];
    struct vcache_entry *e;
    size_t i, b;

    if (c->capacity == 0 || user->exp == 0)
        return;
    vcache_use_keyset(c, keyset_id);
    if (vcache_key(token, len, audiences, naudiences, key) != 0)
        return;
    /* A second put of the same request replaces the first. */
    if ((i = vcache_find(c, key)) != VCACHE_NONE)
        vcache_remove(c, i);
    e = &c->entries[c->ring];
    if (e->used)
        vcache_remove(c, c->ring);
    if (token_user_copy(&e->user, user) != 0)
        return;
    memcpy(e->key, key, sizeof(key));
    b = vcache_bucket(c, key);
    e->used = 1;
    e->next = c->buckets[b];
    c->buckets[b] = c->ring;
    c->size++;
    c->ring = (c->ring + 1) % c->capacity;
}

size_t vcache_size(const struct vcache *c)
{
    return c->size;
}

void vcache_free(struct vcache *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; c->entries != NULL && i < c->capacity; i++)
        if (c->entries[i].used)
            vcache_remove(c, i);
    free(c->entries);
    free(c->buckets);
    free(c);
}
