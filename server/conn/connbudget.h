/* SPDX-License-Identifier: Apache-2.0 */
/*
 * connbudget: the connection budget of one kind of listener, shared by
 * its workers: how many connections it holds in all (--max-connections and
 * its siblings, as fdlimit fits them), and how many of those one client
 * address may hold (--connection-share-per-address of the budget). The
 * share keeps one host from taking every slot; an IPv6 client counts by
 * its /64, since one host is commonly given a whole /64 and could
 * otherwise take a new address per connection. Connections over a Unix
 * socket have no address and count in the total only.
 *
 * Every worker of the listener takes and gives back slots here, under a
 * lock held for one lookup in a table of the addresses that hold
 * connections (bounded by the budget). The open connections of the
 * listener are counted in metrics_process.connections.
 */
#ifndef OIDC_CONNBUDGET_H
#define OIDC_CONNBUDGET_H

#include <stdint.h>

#include "server/obs/metrics.h"

/* Whom a connection counts against: an IPv4 address, an IPv6 /64, or
 * nobody (known 0: a Unix socket). */
struct connbudget_addr {
    uint64_t key;
    int known;
};

enum connbudget_verdict {
    CONNBUDGET_TAKEN,        /* the connection holds a slot now */
    CONNBUDGET_FULL,         /* the listener is at its budget */
    CONNBUDGET_ADDRESS_FULL, /* its address holds its share already */
};

struct connbudget;

/* A budget of total connections for listener l, of which one address may
 * hold share_percent percent (at least one). NULL when out of memory. */
struct connbudget *connbudget_new(enum metrics_listener l, unsigned long total, unsigned long share_percent);

void connbudget_free(struct connbudget *b);

/* Whom the connected socket fd counts against. */
struct connbudget_addr connbudget_addr_of(int fd);

/* Takes a slot for a connection from a, or says why not. Thread-safe. */
enum connbudget_verdict connbudget_take(struct connbudget *b, const struct connbudget_addr *a);

/* Gives back the slot a connection from a took. Thread-safe. */
void connbudget_release(struct connbudget *b, const struct connbudget_addr *a);

/* The most connections one address may hold. */
unsigned long connbudget_per_address(const struct connbudget *b);

#endif
