/* SPDX-License-Identifier: Apache-2.0 */
/*
 * routes.c: the fleet's routing table (see routes.h): open addressing with
 * linear probing over a power-of-two array at most half full, keyed by an
 * FNV-1a hash of the lowercased host and the issuer's path; a second
 * array of slots finds an issuer by its exact URL (TokenReview).
 */
#include "publish/routes.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keys/keyset.h"

#define FNV_OFFSET 14695981039346656037ull
#define FNV_PRIME  1099511628211ull

struct route {
    char *key;       /* "host/path": host lowercased, then the path ("" for the root) */
    size_t host_len; /* the host's share of key */
    size_t key_len;
    uint64_t hash;
    struct snapshot *snap;
    char *iss; /* the issuer's exact URL */
    size_t iss_len;
    uint64_t iss_hash;
    char **audiences; /* owned copy of the entry's, or NULL: iss alone */
    struct routes_issuer found;
};

struct routes {
    struct route *routes;
    size_t count;
    uint32_t *slots;     /* 0: empty; else an index into routes plus one */
    uint32_t *iss_slots; /* the same, by exact issuer URL */
    size_t mask;         /* slots - 1, a power of two minus one */
};

/* A byte of a host name as it is compared: ASCII lowercase. */
static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Continues an FNV-1a hash over len bytes of s, lowercased when fold. */
static uint64_t hash_more(uint64_t h, const char *s, size_t len, int fold)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ (fold ? lower((unsigned char)s[i]) : (unsigned char)s[i])) * FNV_PRIME;
    return h;
}

/* The length of host[0..len) without its ":port" (an IPv6 literal keeps
 * its brackets). */
static size_t host_without_port(const char *host, size_t len)
{
    const char *end;

    if (len > 0 && host[0] == '[')
        return (end = memchr(host, ']', len)) != NULL ? (size_t)(end - host) + 1 : len;
    return (end = memchr(host, ':', len)) != NULL ? (size_t)(end - host) : len;
}

/* The path's length without its trailing slashes. */
static size_t path_trimmed(const char *path, size_t len)
{
    while (len > 0 && path[len - 1] == '/')
        len--;
    return len;
}

int routes_key(const char *issuer, char key[ROUTES_KEY_MAX])
{
    const char *host = strstr(issuer, "://"), *path;
    size_t host_len, path_len;

    if (host == NULL)
        return -1;
    host += 3;
    path = host + strcspn(host, "/?#");
    host_len = host_without_port(host, (size_t)(path - host));
    path_len = path_trimmed(path, strcspn(path, "?#"));
    if (host_len == 0 || host_len + path_len >= ROUTES_KEY_MAX)
        return -1;
    for (size_t i = 0; i < host_len; i++)
        key[i] = (char)lower((unsigned char)host[i]);
    memcpy(key + host_len, path, path_len);
    key[host_len + path_len] = '\0';
    return 0;
}

/* The slot where key (hash h) is, or the empty one where it would go. */
static size_t probe(const struct routes *r, uint64_t h, const char *host, size_t host_len, const char *path,
                    size_t path_len)
{
    size_t i = (size_t)h & r->mask;

    for (; r->slots[i] != 0; i = (i + 1) & r->mask) {
        const struct route *e = &r->routes[r->slots[i] - 1];
        if (e->hash == h && e->host_len == host_len && e->key_len == host_len + path_len &&
            strncasecmp(e->key, host, host_len) == 0 && memcmp(e->key + host_len, path, path_len) == 0)
            return i;
    }
    return i;
}

const struct snapshot *routes_find(const struct routes *r, const char *host, size_t host_len, const char *issuer_path,
                                   size_t path_len)
{
    uint64_t h;
    size_t i;

    host_len = host_without_port(host, host_len);
    path_len = path_trimmed(issuer_path, path_len);
    if (r->count == 0 || host_len == 0)
        return NULL;
    h = hash_more(hash_more(FNV_OFFSET, host, host_len, 1), issuer_path, path_len, 0);
    i = probe(r, h, host, host_len, issuer_path, path_len);
    return r->slots[i] != 0 ? r->routes[r->slots[i] - 1].snap : NULL;
}

/* The slot of iss (hash h) in r's issuer slots, or the empty one where
 * it would go. */
static size_t probe_iss(const struct routes *r, uint64_t h, const char *iss, size_t len)
{
    size_t i = (size_t)h & r->mask;

    for (; r->iss_slots[i] != 0; i = (i + 1) & r->mask) {
        const struct route *e = &r->routes[r->iss_slots[i] - 1];
        if (e->iss_hash == h && e->iss_len == len && memcmp(e->iss, iss, len) == 0)
            return i;
    }
    return i;
}

const struct routes_issuer *routes_find_issuer(const struct routes *r, const char *iss, size_t len)
{
    size_t i;

    if (r->count == 0)
        return NULL;
    i = probe_iss(r, hash_more(FNV_OFFSET, iss, len, 0), iss, len);
    return r->iss_slots[i] != 0 ? &r->routes[r->iss_slots[i] - 1].found : NULL;
}

size_t routes_count(const struct routes *r)
{
    return r->count;
}

void routes_free(struct routes *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->count; i++) {
        snapshot_release(r->routes[i].snap);
        free(r->routes[i].key);
        free(r->routes[i].iss);
        for (size_t j = 0; r->routes[i].audiences && j < r->routes[i].found.naudiences; j++)
            free(r->routes[i].audiences[j]);
        free(r->routes[i].audiences);
    }
    free(r->routes);
    free(r->slots);
    free(r->iss_slots);
    free(r);
}

/* Makes route rt (of entry e, already counted in r) findable by its
 * exact issuer URL, with a copy of its audiences. 0, or -1 when out of
 * memory (routes_free frees what was copied). */
static int routes_add_issuer(struct routes *r, struct route *rt, const struct routes_entry *e)
{
    if ((rt->iss = strdup(e->issuer)) == NULL)
        return -1;
    rt->iss_len = strlen(rt->iss);
    rt->iss_hash = hash_more(FNV_OFFSET, rt->iss, rt->iss_len, 0);
    rt->found = (struct routes_issuer){&rt->iss, rt->snap, &rt->iss, 1};
    if (e->naudiences > 0) {
        if ((rt->audiences = calloc(e->naudiences, sizeof(*rt->audiences))) == NULL)
            return -1;
        rt->found.naudiences = 0;
        for (size_t i = 0; i < e->naudiences; i++)
            if ((rt->audiences[rt->found.naudiences++] = strdup(e->audiences[i])) == NULL)
                return -1;
        rt->found.audiences = rt->audiences;
    }
    /* one URL has one route key, so a duplicate URL was refused above */
    r->iss_slots[probe_iss(r, rt->iss_hash, rt->iss, rt->iss_len)] = (uint32_t)r->count;
    return 0;
}

/* Adds entry e to r (which has room). 0, or -1 on a bad URL, a duplicate
 * or out of memory. */
static int routes_add(struct routes *r, const struct routes_entry *e)
{
    char key[ROUTES_KEY_MAX];
    struct route *rt = &r->routes[r->count];
    size_t slot;

    if (routes_key(e->issuer, key) != 0 || (rt->key = strdup(key)) == NULL)
        return -1;
    rt->key_len = strlen(key);
    rt->host_len = strcspn(key, "/");
    rt->hash = hash_more(FNV_OFFSET, key, rt->key_len, 0);
    slot = probe(r, rt->hash, key, rt->host_len, key + rt->host_len, rt->key_len - rt->host_len);
    if (r->slots[slot] != 0) {
        free(rt->key);
        return -1;
    }
    rt->snap = snapshot_ref(e->snap);
    r->slots[slot] = (uint32_t)++r->count;
    return routes_add_issuer(r, rt, e);
}

struct snapshot *routes_build(const struct routes_entry *entries, size_t n, time_t now)
{
    struct routes *r = calloc(1, sizeof(*r));
    struct snapshot *s = NULL;
    size_t slots = 8;
    int ok = r != NULL;

    while (slots < 2 * n)
        slots *= 2;
    if (ok && ((r->routes = calloc(n ? n : 1, sizeof(*r->routes))) == NULL ||
               (r->slots = calloc(slots, sizeof(*r->slots))) == NULL ||
               (r->iss_slots = calloc(slots, sizeof(*r->iss_slots))) == NULL))
        ok = 0;
    if (r != NULL)
        r->mask = slots - 1;
    for (size_t i = 0; ok && i < n; i++)
        ok = routes_add(r, &entries[i]) == 0;
    if (ok && (s = calloc(1, sizeof(*s))) != NULL && (s->keyset = keyset_new()) != NULL) {
        atomic_init(&s->refs, 1);
        s->loaded_at = now;
        s->routes = r;
        return s;
    }
    free(s);
    routes_free(r);
    return NULL;
}
