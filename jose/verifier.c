/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/verifier.h"

#include <stdlib.h>

struct verifier *verifier_new(const struct keyset *ks)
{
    struct verifier *v = calloc(1, sizeof(*v));

    if (v == NULL || (v->prepared = calloc(ks->count ? ks->count : 1, sizeof(*v->prepared))) == NULL) {
        free(v);
        return NULL;
    }
    v->keys = ks;
    for (size_t i = 0; i < ks->count; i++) {
        if (jws_key_prepare(&v->prepared[i], &ks->keys[i]) != 0) {
            verifier_free(v);
            return NULL;
        }
    }
    return v;
}

const struct jws_key *verifier_find(const struct verifier *v, const char *kid)
{
    const struct key *k = keyset_find(v->keys, kid);

    return k != NULL ? &v->prepared[k - v->keys->keys] : NULL;
}

void verifier_free(struct verifier *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->keys->count; i++)
        jws_key_clear(&v->prepared[i]);
    free(v->prepared);
    free(v);
}
