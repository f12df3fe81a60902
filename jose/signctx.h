/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signctx: the OpenSSL library context that signing keys sign in.
 *
 * In OpenSSL 3.0 every draw from a thread's random generator takes the lock
 * of its library context's primary generator, which every other thread's
 * TLS handshakes, key generation and sealing also take: the external
 * signer's thread was seen waiting there for the etcd thread (strace's
 * futex calls with stacks). An ECDSA nonce and RSA's blinding both draw;
 * in a context of their own, they draw from generators no other thread
 * uses.
 */
#ifndef OIDC_SIGNCTX_H
#define OIDC_SIGNCTX_H

#include <openssl/types.h>

/* The signing context, made on first use and kept for the process's life;
 * NULL (OpenSSL's default context) when it cannot be made. */
OSSL_LIB_CTX *signctx_libctx(void);

#endif
