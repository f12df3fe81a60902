/* SPDX-License-Identifier: Apache-2.0 */
/*
 * token_user: ownership of struct token_user (token.h) — freeing one and
 * deep-copying one, shared by token verification and the vcache.
 */
#ifndef OIDC_TOKEN_USER_H
#define OIDC_TOKEN_USER_H

#include "jose/token.h"

/* Frees every string of u and zeroes it; safe on a zeroed struct. */
void token_user_clear(struct token_user *u);

/* Makes dst an independent copy of src. Returns 0, or -1 (out of memory)
 * with dst zeroed. */
int token_user_copy(struct token_user *dst, const struct token_user *src);

#endif
