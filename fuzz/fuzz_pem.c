/* libFuzzer target: PEM parsing (keys/pem.c) over arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "keys/pem.h"

static int take_key(void *ctx, EVP_PKEY *pub, const char *path, int block, int was_private, char *err, size_t errlen)
{
    (void)path, (void)block, (void)was_private, (void)err, (void)errlen;
    (*(int *)ctx)++;
    EVP_PKEY_free(pub);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    int n = 0;

    pem_read_mem("fuzz.pem", (const char *)data, size, take_key, &n, err, sizeof(err));
    return 0;
}
