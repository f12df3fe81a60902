/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b64url: base64url without padding (RFC 4648 section 5), the encoding of
 * every binary member of a JWK, of the kid and of each segment of a JWS.
 */
#ifndef OIDC_B64URL_H
#define OIDC_B64URL_H

#include <stddef.h>

/* Characters needed to encode n bytes, without the terminating NUL. */
#define B64URL_ENCODED_LEN(n) (((n) / 3) * 4 + ((n) % 3 ? (n) % 3 + 1 : 0))

/* Encodes n bytes of in into out, which must hold B64URL_ENCODED_LEN(n) + 1
 * bytes; out is NUL-terminated. Returns the encoded length. */
size_t b64url_encode(const unsigned char *in, size_t n, char *out);

/* Bytes that n characters decode to at most: the size of out for
 * b64url_decode. */
#define B64URL_DECODED_MAX(n) ((n) / 4 * 3 + 2)

/* Decodes n characters of in into out (B64URL_DECODED_MAX(n) bytes) and sets
 * *outlen. Strict, like Go's base64.RawURLEncoding.Strict(): padding ('='),
 * any character outside A-Z a-z 0-9 - _, a length of 1 mod 4 and non-zero
 * unused bits in the last character are all refused, so that one byte string
 * has exactly one encoding. Returns 0, or -1 on any of those. */
int b64url_decode(const char *in, size_t n, unsigned char *out, size_t *outlen);

#endif
