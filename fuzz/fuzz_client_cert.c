/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the name a client certificate gives its caller on the
 * TokenReview listener (tls_subject, server/tls/tls.c), for any certificate
 * OpenSSL decodes from the input (DER). The name must be NULL (the
 * subject names nobody) or a non-empty string: an empty subject once
 * reached strndup as a NULL pointer, which the sanitizer build aborts on. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <openssl/x509.h>

#include "server/tls/tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const unsigned char *p = data;
    X509 *cert = d2i_X509(NULL, &p, (long)size);
    char *name;

    if (cert == NULL)
        return 0;
    name = tls_subject(cert);
    if (name != NULL && name[0] == '\0')
        abort();
    free(name);
    X509_free(cert);
    return 0;
}
