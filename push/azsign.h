/* SPDX-License-Identifier: Apache-2.0 */
/*
 * azsign: Azure Storage's SharedKey authorization for the Blob service
 * ("Authorize with Shared Key", service version 2015-02-21 and later):
 * the string to sign (the verb, eleven standard headers, the x-ms-
 * headers lowercased and sorted, the canonicalized resource) and its
 * HMAC-SHA256 under the account key. libcurl has no Azure signer, and the
 * scheme is one HMAC over a string, so it is written here (OpenSSL's HMAC
 * does the cryptography); Azurite, Microsoft's emulator, checks it in the
 * end-to-end tests.
 */
#ifndef OIDC_PUSH_AZSIGN_H
#define OIDC_PUSH_AZSIGN_H

#include <stddef.h>

/* The string to sign of a request: method ("GET", "PUT"), the URL's path
 * as sent ("/container/prefix/blob", or with an emulator's path-style
 * addressing "/account/container/..."), its header fields ("Name: value",
 * NULL-terminated: the standard ones and every x-ms- one are picked out),
 * and the body's length (0: none). No query string: SharedKey requests
 * here carry none. Returns a malloc'ed string, or NULL (out of memory). */
char *push_azsign_string(const char *account, const char *method, const char *path, const char *const *headers,
                         size_t content_length);

/* Writes "Authorization: SharedKey ACCOUNT:SIGNATURE" for the string to
 * sign under the decoded account key. Returns 0, or -1 when out does not
 * hold it. */
int push_azsign_field(const char *account, const unsigned char *key, size_t keylen, const char *to_sign, char *out,
                      size_t outlen);

/* Decodes the base64 account key (surrounding whitespace ignored) into out
 * (at least strlen(b64) bytes). Returns the length, or -1 when it is not
 * base64. */
int push_azsign_decode_key(const char *b64, unsigned char *out);

#endif
