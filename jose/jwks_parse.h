/*
 * jwks_parse: reads a JWKS document ({"keys":[...]}) as a relying party
 * does, into a keyset whose kids are the JWKs' own kids, ready to verify
 * tokens whose header names one of them.
 */
#ifndef OIDC_JWKS_PARSE_H
#define OIDC_JWKS_PARSE_H

#include <stddef.h>
#include "keys/keyset.h"

/* Documents larger than this, or nesting deeper, are refused unparsed. */
#define JWKS_MAX_LEN   (1024 * 1024)
#define JWKS_MAX_DEPTH 32

/* Parses len bytes of json (need not be NUL-terminated) into a new keyset
 * with a fresh id, in document order. Each key's kid (and the kid inside its
 * jwk) is the JWK's "kid"; its source is "keys[N]".
 *
 * Usable: kty RSA (n, e) with alg absent or RS256, and kty EC on P-256,
 * P-384 or P-521 (x, y of exactly the curve size, a point on the curve) with
 * alg absent or the curve's ES256/ES384/ES512. Skipped with a warning: use
 * other than "sig", other kty, other curves, private members, an alg that
 * does not match the key, a kid missing or not 1..43 printable characters
 * without quote or backslash, the same public key again under another kid.
 *
 * Errors (NULL, message in err, JWK-specific ones start with "keys[N]: "):
 * not JSON, too large or deep, no "keys" array, a JWK that is not an object
 * or has a member twice or a member of the wrong type, malformed key
 * material, two usable JWKs with one kid, and no usable key at all. */
struct keyset *jwks_parse(const char *json, size_t len, keyset_warn_cb warn, void *warn_ctx, char *err, size_t errlen);

#endif
