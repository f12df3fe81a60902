/* SPDX-License-Identifier: Apache-2.0 */
#include "publish/render.h"

#include <stdlib.h>
#include <string.h>

#include "util/jsonw.h"

int render_jwks(const struct keyset *ks, struct render_doc *out)
{
    struct jsonw w = {0};

    jsonw_lit(&w, "{\"keys\":[");
    for (size_t i = 0; i < ks->count; i++) {
        if (i > 0)
            jsonw_raw(&w, ",", 1);
        jsonw_raw(&w, ks->keys[i].jwk, ks->keys[i].jwk_len);
    }
    jsonw_lit(&w, "]}");
    return jsonw_finish(&w, &out->bytes, &out->len);
}

static int render_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends the distinct algorithms of ks, sorted ascending as kube-apiserver
 * does, as a JSON array. */
static void render_algs(struct jsonw *w, const struct keyset *ks)
{
    const char *algs[ks->count ? ks->count : 1];
    size_t n = 0;

    for (size_t i = 0; i < ks->count; i++)
        algs[n++] = ks->keys[i].alg;
    qsort(algs, n, sizeof(algs[0]), render_cmp_str);
    jsonw_raw(w, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(algs[i], algs[i - 1]) == 0)
            continue;
        if (i > 0)
            jsonw_raw(w, ",", 1);
        jsonw_str(w, algs[i]);
    }
    jsonw_raw(w, "]", 1);
}

int render_discovery(const char *issuer, const char *jwks_uri, const struct keyset *ks, struct render_doc *out)
{
    struct jsonw w = {0};

    jsonw_raw(&w, "{", 1);
    jsonw_key(&w, "issuer");
    jsonw_str(&w, issuer);
    jsonw_raw(&w, ",", 1);
    jsonw_key(&w, "jwks_uri");
    jsonw_str(&w, jwks_uri);
    jsonw_lit(&w, ",\"response_types_supported\":[\"id_token\"],\"subject_types_supported\":[\"public\"],"
                  "\"id_token_signing_alg_values_supported\":");
    render_algs(&w, ks);
    jsonw_raw(&w, "}", 1);
    return jsonw_finish(&w, &out->bytes, &out->len);
}
