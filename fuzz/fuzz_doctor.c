/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: doctor's checks of what an issuer serves (diag/), which
 * read the JSON and the key material themselves rather than through
 * keys/jwks_parse. The input is a JWKS and a token, split at the first
 * NUL byte (no NUL: all JWKS, no token): diag_jwks_check on the first part
 * (and diag_doc_discovery on it, as a discovery document), then
 * diag_token_check on the second against it, and the issuer comparison of
 * the token's iss with a fixed issuer. Reports are rendered both ways and
 * freed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diag/doc_checks.h"
#include "diag/jwks_checks.h"
#include "diag/report.h"
#include "diag/token_checks.h"

#define FUZZ_ISSUER "https://fuzz.example"

/* Renders r both ways, so that the renderers see every message. */
static void render(struct diag_report *r)
{
    free(diag_render_text(r));
    free(diag_render_json(r, FUZZ_ISSUER, (const char *const[]){"aws"}, 1));
    diag_report_clear(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *nul = memchr(data, '\0', size);
    size_t jwks_len = nul ? (size_t)(nul - in) : size;
    char *auds[1] = {"fuzz"};
    struct diag_report r = {0};
    struct diag_jwks j;
    struct diag_token t;
    struct json_value *doc;
    char why[128];
    int have_jwks = diag_jwks_check(&r, in, jwks_len, &j) == 0;
    struct diag_token_input ti = {.issuer = FUZZ_ISSUER,
                                  .audiences = auds,
                                  .naudiences = 1,
                                  .jwks = have_jwks ? &j : NULL,
                                  .jwks_body = in,
                                  .jwks_len = jwks_len,
                                  .now = 1796100000,
                                  .leeway = 60};

    if ((doc = json_parse(data, jwks_len, why, sizeof(why))) != NULL) {
        diag_doc_discovery(&r, FUZZ_ISSUER, doc, 0);
        if (have_jwks)
            diag_doc_algorithms(&r, doc, j.algs, j.count);
        json_free(doc);
    }
    if (nul != NULL && diag_token_check(&r, nul + 1, size - jwks_len - 1, &ti, &t) == 0)
        diag_token_clear(&t);
    render(&r);
    diag_jwks_clear(&j);
    return 0;
}
