/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/signctx.h"

#include <pthread.h>

#include <openssl/crypto.h>

static pthread_once_t signctx_once = PTHREAD_ONCE_INIT;
static OSSL_LIB_CTX *signctx; /* lives as long as the process */

static void signctx_new(void)
{
    signctx = OSSL_LIB_CTX_new();
}

OSSL_LIB_CTX *signctx_libctx(void)
{
    return pthread_once(&signctx_once, signctx_new) == 0 ? signctx : NULL;
}
