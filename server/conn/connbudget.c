/* SPDX-License-Identifier: Apache-2.0 */
#include "server/conn/connbudget.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Slots of the address table at first; it doubles whenever it is half
 * full, so a lookup probes a slot or two. */
#define CONNBUDGET_FIRST_SLOTS 64

/* The key of an IPv4 address: its 32 bits under a prefix of all ones,
 * ffff:ffff::/32, which is multicast as IPv6 and so never the /64 of a
 * client. */
#define CONNBUDGET_V4 0xffffffff00000000ULL

/* An address and how many connections it holds; count 0: a free slot. */
struct connbudget_entry {
    uint64_t key;
    unsigned long count;
};

struct connbudget {
    pthread_mutex_t mu;
    enum metrics_listener listener;
    unsigned long total, per_address, used;
    struct connbudget_entry *slots; /* open addressing, linear probing */
    size_t nslots;                  /* a power of two */
    size_t nused;                   /* slots with a count */
};

struct connbudget *connbudget_new(enum metrics_listener l, unsigned long total, unsigned long share_percent)
{
    struct connbudget *b = calloc(1, sizeof(*b));

    if (b == NULL || (b->slots = calloc(CONNBUDGET_FIRST_SLOTS, sizeof(*b->slots))) == NULL) {
        free(b);
        return NULL;
    }
    pthread_mutex_init(&b->mu, NULL);
    b->listener = l;
    b->total = total;
    b->per_address = total / 100 * share_percent + total % 100 * share_percent / 100;
    if (b->per_address == 0)
        b->per_address = 1;
    b->nslots = CONNBUDGET_FIRST_SLOTS;
    return b;
}

void connbudget_free(struct connbudget *b)
{
    if (b == NULL)
        return;
    pthread_mutex_destroy(&b->mu);
    free(b->slots);
    free(b);
}

unsigned long connbudget_per_address(const struct connbudget *b)
{
    return b->per_address;
}

/* Reads 8 bytes as a big-endian number. */
static uint64_t connbudget_be64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

struct connbudget_addr connbudget_addr_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    struct connbudget_addr a = {0};

    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
        return a;
    if (ss.ss_family == AF_INET) {
        a.key = CONNBUDGET_V4 | ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr);
        a.known = 1;
    } else if (ss.ss_family == AF_INET6) {
        const struct in6_addr *in6 = &((struct sockaddr_in6 *)&ss)->sin6_addr;
        const unsigned char *b = in6->s6_addr;
        /* An IPv4 client of a dual-stack socket counts as itself. */
        a.key = IN6_IS_ADDR_V4MAPPED(in6)
                    ? CONNBUDGET_V4 | (uint64_t)b[12] << 24 | (uint64_t)b[13] << 16 | (uint64_t)b[14] << 8 | b[15]
                    : connbudget_be64(b);
        a.known = 1;
    }
    return a;
}

/* The slot key hashes to first (Fibonacci hashing spreads consecutive
 * addresses). */
static size_t connbudget_home(const struct connbudget *b, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (b->nslots - 1);
}

/* The slot of key, or the free slot where it would go. */
static struct connbudget_entry *connbudget_find(struct connbudget *b, uint64_t key)
{
    size_t i = connbudget_home(b, key);

    while (b->slots[i].count != 0 && b->slots[i].key != key)
        i = (i + 1) & (b->nslots - 1);
    return &b->slots[i];
}

/* Doubles the table. -1 when out of memory (the table is unchanged). */
static int connbudget_grow(struct connbudget *b)
{
    struct connbudget_entry *old = b->slots, *grown = calloc(b->nslots * 2, sizeof(*grown));
    size_t n = b->nslots;

    if (grown == NULL)
        return -1;
    b->slots = grown;
    b->nslots = n * 2;
    for (size_t i = 0; i < n; i++)
        if (old[i].count != 0)
            *connbudget_find(b, old[i].key) = old[i];
    free(old);
    return 0;
}

/* Frees slot i and moves up the entries after it that probed past it, so
 * that every entry stays reachable from its home slot without
 * tombstones. */
static void connbudget_remove(struct connbudget *b, size_t i)
{
    size_t mask = b->nslots - 1, j = i;

    b->slots[i].count = 0;
    b->nused--;
    for (;;) {
        size_t home;
        j = (j + 1) & mask;
        if (b->slots[j].count == 0)
            return;
        home = connbudget_home(b, b->slots[j].key);
        /* j's entry may fill the hole at i unless its home lies in (i, j]. */
        if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
            b->slots[i] = b->slots[j];
            b->slots[j].count = 0;
            i = j;
        }
    }
}

/* Counts one more connection of a's address; the caller holds the lock
 * and has checked the share. */
static enum connbudget_verdict connbudget_take_address(struct connbudget *b, const struct connbudget_addr *a)
{
    struct connbudget_entry *e = connbudget_find(b, a->key);

    if (e->count >= b->per_address)
        return CONNBUDGET_ADDRESS_FULL;
    if (e->count == 0) {
        if ((b->nused + 1) * 2 > b->nslots) {
            /* Out of memory: the address cannot be counted, so it gets
             * nothing rather than more than its share. */
            if (connbudget_grow(b) != 0)
                return CONNBUDGET_ADDRESS_FULL;
            e = connbudget_find(b, a->key);
        }
        e->key = a->key;
        b->nused++;
    }
    e->count++;
    return CONNBUDGET_TAKEN;
}

enum connbudget_verdict connbudget_take(struct connbudget *b, const struct connbudget_addr *a)
{
    enum connbudget_verdict v = CONNBUDGET_TAKEN;

    pthread_mutex_lock(&b->mu);
    if (b->used >= b->total)
        v = CONNBUDGET_FULL;
    else if (a->known)
        v = connbudget_take_address(b, a);
    if (v == CONNBUDGET_TAKEN) {
        b->used++;
        atomic_fetch_add(&metrics_process.connections[b->listener], 1);
    }
    pthread_mutex_unlock(&b->mu);
    return v;
}

void connbudget_release(struct connbudget *b, const struct connbudget_addr *a)
{
    pthread_mutex_lock(&b->mu);
    if (a->known) {
        struct connbudget_entry *e = connbudget_find(b, a->key);
        if (e->count > 1)
            e->count--;
        else if (e->count == 1)
            connbudget_remove(b, (size_t)(e - b->slots));
    }
    b->used--;
    atomic_fetch_sub(&metrics_process.connections[b->listener], 1);
    pthread_mutex_unlock(&b->mu);
}
