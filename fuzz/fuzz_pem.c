/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: PEM parsing (keys/pem.c) over arbitrary bytes.
 *
 * The callback takes two keys and refuses the third, as keyset's refuses a
 * bad one, which ends the file there. Decoding one key costs OpenSSL 3.0
 * some 100 us and a thousand allocations, and without the cap the fuzzer,
 * rewarded for longer runs of the block loop, grows inputs of a dozen keys
 * that go no further into pem.c than two do; with it, the refusal path is
 * covered too. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <openssl/evp.h>

#include "keys/pem.h"

#define FUZZ_PEM_MAX_KEYS 2

static int take_key(void *ctx, EVP_PKEY *pub, const char *path, int block, int was_private, char *err, size_t errlen)
{
    int *n = ctx;

    (void)was_private;
    EVP_PKEY_free(pub);
    if (++*n > FUZZ_PEM_MAX_KEYS) {
        snprintf(err, errlen, "%s: block %d: too many keys", path, block);
        return -1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    int n = 0;

    pem_read_mem("fuzz.pem", (const char *)data, size, take_key, &n, err, sizeof(err));
    return 0;
}
