/* SPDX-License-Identifier: Apache-2.0 */
/*
 * token_iss: the issuer a token names, read before anything is verified,
 * so that a server reviewing for a fleet of issuers knows whose keys and
 * audiences to verify the token with. Nothing here is trusted: the name
 * only picks an issuer, whose verification then requires that exact iss
 * (token.c), so a token that lies about its issuer, or one this reader
 * misreads, is refused, never accepted. Reads the payload in a buffer of
 * its own on the stack: no allocation, no lock.
 */
#ifndef OIDC_TOKEN_ISS_H
#define OIDC_TOKEN_ISS_H

#include <stddef.h>

/* Payloads larger than this many decoded bytes are not read (a token of
 * the default --max-token-size always fits). */
#define TOKEN_ISS_PAYLOAD_MAX 12290

/* Copies the top-level "iss" string of token's payload (len bytes) into
 * iss (cap bytes, NUL-terminated) and returns its length, or -1 when the
 * token has no payload segment, it is not base64url, too large, not a
 * JSON object, has no string iss, or the iss does not fit. Escapes other
 * than \/, \\ and \" are not read (issuer URLs need none). */
long token_iss_peek(const char *token, size_t len, char *iss, size_t cap);

#endif
