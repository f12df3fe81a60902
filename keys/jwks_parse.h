/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jwks_parse: reads a JWKS document ({"keys":[...]}) as a relying party
 * does, into a keyset whose kids are the JWKs' own kids: for verifying
 * tokens whose header names one of them (verify --discovery-url), and as a
 * key source (a JWKS file given to --service-account-key-file, the JWKS of
 * an --upstream API server), whose keys are published again under the
 * kids they came with.
 */
#ifndef OIDC_JWKS_PARSE_H
#define OIDC_JWKS_PARSE_H

#include <stddef.h>
#include "keys/keyset.h"

/* Documents larger than this are refused unparsed. */
#define JWKS_MAX_LEN (1024 * 1024)

/* Parses len bytes of json (need not be NUL-terminated) into a new keyset
 * with a fresh id, in document order. Each key's kid (and the kid inside its
 * jwk) is the JWK's "kid", exactly as given (kid_given when it is not the
 * derived one); its source is "keys[N]".
 *
 * Usable: kty RSA (n, e) with alg absent or RS256, and kty EC on P-256,
 * P-384 or P-521 (x, y of exactly the curve size, a point on the curve) with
 * alg absent or the curve's ES256/ES384/ES512; RSA moduli of 1024 to 16384
 * bits with an exponent of at most 64 bits. Skipped with a warning: use
 * other than "sig", other kty, other curves, private members, an alg that
 * does not match the key, a kid missing or not one key_kid_ok takes, an
 * RSA modulus below 1024 bits, the same public key again under another kid.
 *
 * Errors (NULL, message in err, JWK-specific ones start with "keys[N]: "):
 * too large, not JSON as util/json.h reads it (so also a member given
 * twice anywhere, nesting deeper than JSON_MAX_DEPTH, U+0000), no "keys"
 * array, a JWK that is not an object or has a member of the wrong type,
 * malformed key material, two usable JWKs with one kid, and no usable key
 * at all. */
struct keyset *jwks_parse(const char *json, size_t len, keyset_warn_cb warn, void *warn_ctx, char *err, size_t errlen);

/* The one key keys[index] of the document, read by the same rules (a key
 * that would be skipped is an error here): for a relying party's way of
 * trying each key a token's kid names, one at a time, when the document
 * breaks the one-kid-one-key rule that jwks_parse enforces. */
struct keyset *jwks_parse_key(const char *json, size_t len, size_t index, char *err, size_t errlen);

#endif
