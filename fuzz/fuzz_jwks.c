/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: JWKS parsing (keys/jwks_parse.c) over arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "keys/jwks_parse.h"
#include "keys/keyset.h"

static void ignore_warning(void *ctx, const char *msg)
{
    (void)ctx, (void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    struct keyset *ks = jwks_parse((const char *)data, size, ignore_warning, NULL, err, sizeof(err));

    keyset_free(ks);
    return 0;
}
