/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/token_user.h"

#include <stdlib.h>
#include <string.h>

void token_user_clear(struct token_user *u)
{
    free(u->username);
    free(u->uid);
    free(u->secret_name);
    free(u->secret_uid);
    for (size_t i = 0; i < 2; i++)
        free(u->groups[i]);
    for (size_t i = 0; i < u->nextra; i++)
        free(u->extra[i].value);
    for (size_t i = 0; i < u->naudiences; i++)
        free(u->audiences[i]);
    free(u->audiences);
    memset(u, 0, sizeof(*u));
}

/* strdup that lets NULL through and counts failures, so that a copy is one
 * straight sequence with a single check at the end. */
static char *token_user_dup(const char *s, int *failed)
{
    char *d;

    if (s == NULL)
        return NULL;
    if ((d = strdup(s)) == NULL)
        *failed = 1;
    return d;
}

int token_user_copy(struct token_user *dst, const struct token_user *src)
{
    int failed = 0;

    memset(dst, 0, sizeof(*dst));
    dst->username = token_user_dup(src->username, &failed);
    dst->uid = token_user_dup(src->uid, &failed);
    for (size_t i = 0; i < 2; i++)
        dst->groups[i] = token_user_dup(src->groups[i], &failed);
    for (; dst->nextra < src->nextra; dst->nextra++) {
        dst->extra[dst->nextra].key = src->extra[dst->nextra].key;
        dst->extra[dst->nextra].value = token_user_dup(src->extra[dst->nextra].value, &failed);
    }
    if (src->naudiences > 0 && (dst->audiences = calloc(src->naudiences, sizeof(char *))) == NULL)
        failed = 1;
    for (; dst->audiences != NULL && dst->naudiences < src->naudiences; dst->naudiences++)
        dst->audiences[dst->naudiences] = token_user_dup(src->audiences[dst->naudiences], &failed);
    dst->exp = src->exp;
    dst->secret_name = token_user_dup(src->secret_name, &failed);
    dst->secret_uid = token_user_dup(src->secret_uid, &failed);
    dst->legacy = src->legacy;
    if (failed)
        token_user_clear(dst);
    return failed ? -1 : 0;
}
