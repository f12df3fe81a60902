/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vcache: a bounded cache of successful token verifications, so that
 * repeated reviews of one token cost a hash and a lookup instead of a
 * signature check. Keyed by SHA-256 of the token and the wanted audiences;
 * an entry ends at the token's exp, and every entry ends when the key set
 * changes. Not thread-safe: one cache per thread.
 */
#ifndef OIDC_VCACHE_H
#define OIDC_VCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "jose/token.h"

struct vcache;

struct vcache *vcache_create(size_t capacity);

/* The cached user for (token, audiences) verified against the key set whose
 * id is keyset_id, or NULL. The pointer is valid until the next call. */
const struct token_user *vcache_get(struct vcache *c, uint64_t keyset_id, const char *token, size_t len,
                                    char *const *audiences, size_t naudiences, time_t now);

/* Stores a copy of user (a successful verification). Evicts the oldest entry
 * when full. Legacy tokens (exp 0) are not cached. */
void vcache_put(struct vcache *c, uint64_t keyset_id, const char *token, size_t len, char *const *audiences,
                size_t naudiences, const struct token_user *user);

size_t vcache_size(const struct vcache *c);

void vcache_free(struct vcache *c);

#endif
