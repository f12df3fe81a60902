/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: token verification (jose/token.c, jose/jwt.c, jose/jws.c)
 * against a fixed key set (tests/fixtures/rsa2048.pub and ec256.pub) and a
 * fixed policy, plus the strict JSON parser (json_parse) on the raw input,
 * checked against its reference, yajl (fuzz/jwt_oracle.h).
 *
 * The fixtures directory is $OIDC_FUZZ_FIXTURES (fuzz/run.sh sets it), else
 * tests/fixtures under the current directory. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jose/jwt.h"
#include "jose/verifier.h"
#include "keys/keyset.h"
#include "jose/token.h"
#include "jwt_oracle.h"

/* Inside the lifetime of the seed tokens in fuzz/corpus/fuzz_token (minted
 * with --duration 365d at 1796001918), so valid seeds reach the claim checks. */
#define FUZZ_NOW ((time_t)1796100000)

static struct keyset *keys;
static struct verifier *verifier;
static char issuer[] = "https://fuzz.example", audience[] = "fuzz";
static char *issuers[] = {issuer}, *audiences[] = {audience};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("OIDC_FUZZ_FIXTURES");
    char rsa[4096], ec[4096], err[512];
    char *paths[] = {rsa, ec};

    (void)argc, (void)argv;
    if (dir == NULL || dir[0] == '\0')
        dir = "tests/fixtures";
    snprintf(rsa, sizeof(rsa), "%s/rsa2048.pub", dir);
    snprintf(ec, sizeof(ec), "%s/ec256.pub", dir);
    if ((keys = keyset_load(paths, 2, NULL, NULL, err, sizeof(err))) == NULL) {
        fprintf(stderr, "fuzz_token: cannot load keys (set OIDC_FUZZ_FIXTURES to tests/fixtures): %s\n", err);
        exit(1);
    }
    if ((verifier = verifier_new(keys)) == NULL) {
        fprintf(stderr, "fuzz_token: out of memory\n");
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct token_policy policy = {
        .issuers = issuers,
        .nissuers = 1,
        .audiences = audiences,
        .naudiences = 1,
        .algs = TOKEN_ALG_ALL,
        .leeway = TOKEN_DEFAULT_LEEWAY,
        .max_size = TOKEN_DEFAULT_MAX_SIZE,
        .now = FUZZ_NOW,
        .accept_legacy = (size & 1) != 0, /* both ways, cheaply */
    };
    struct token_result res;
    struct json_value *root;
    char err[256];

    memset(&res, 0, sizeof(res));
    token_verify(verifier, &policy, (const char *)data, size, &res);
    token_result_clear(&res);

    root = json_parse(data, size, err, sizeof(err));
    oracle_check(data, size, root);
    json_free(root);
    return 0;
}
