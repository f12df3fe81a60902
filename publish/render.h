/* SPDX-License-Identifier: Apache-2.0 */
/*
 * render: the two published documents, byte for byte as kube-apiserver
 * writes them (Go encoding/json, compact, no trailing newline).
 */
#ifndef OIDC_RENDER_H
#define OIDC_RENDER_H

#include <stddef.h>
#include "keys/keyset.h"

/* A malloc'ed, NUL-terminated document; free with free(). */
struct render_doc {
    char *bytes;
    size_t len;
};

/* {"keys":[<jwk>,...]} in key-set order. Returns 0 or -1 (out of memory). */
int render_jwks(const struct keyset *ks, struct render_doc *out);

/* The discovery document: issuer, jwks_uri, response_types_supported,
 * subject_types_supported, and the distinct algorithms of ks sorted
 * ascending. Returns 0 or -1 (out of memory). */
int render_discovery(const char *issuer, const char *jwks_uri, const struct keyset *ks, struct render_doc *out);

#endif
