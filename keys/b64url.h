/*
 * b64url: base64url without padding (RFC 4648 section 5), the encoding of
 * every binary member of a JWK and of the kid.
 */
#ifndef OIDC_B64URL_H
#define OIDC_B64URL_H

#include <stddef.h>

/* Characters needed to encode n bytes, without the terminating NUL. */
#define B64URL_ENCODED_LEN(n) (((n) / 3) * 4 + ((n) % 3 ? (n) % 3 + 1 : 0))

/* Encodes n bytes of in into out, which must hold B64URL_ENCODED_LEN(n) + 1
 * bytes; out is NUL-terminated. Returns the encoded length. */
size_t b64url_encode(const unsigned char *in, size_t n, char *out);

#endif
