/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jwks_checks: doctor's checks of a JWKS document as relying parties read
 * it: every key with a kid, no kid twice, use "sig", an alg that matches
 * the key's type and curve, types relying parties verify with, no private
 * member, sound sizes, and the count of each type.
 *
 * It reads the JSON itself rather than through keys/jwks_parse, which
 * keeps only the keys a token can be verified with and skips the others:
 * here each of those is a finding to report.
 */
#ifndef OIDC_DIAG_JWKS_CHECKS_H
#define OIDC_DIAG_JWKS_CHECKS_H

#include <stddef.h>

#include "diag/report.h"
#include "diag/rp_rules.h"
#include "util/json.h"

/* A JWKS as the checks read it; the strings point into root. */
struct diag_jwks {
    struct json_value *root;
    size_t count;        /* keys in the "keys" array */
    struct rp_key *keys; /* count of them, for the relying-party rules */
    const char **kids;   /* count of them; NULL for a key without a kid string */
    const char **algs;   /* count of them: the key's alg, else the one its type implies; NULL when unknown */
};

/* Checks the len bytes of a JWKS, adding "jwks.*" checks to r. Returns 0
 * with *out filled (the keys may still have failed checks), or -1 when the
 * document is no JWKS at all ("jwks.json" says why) and *out is empty. */
int diag_jwks_check(struct diag_report *r, const char *body, size_t len, struct diag_jwks *out);

/* Frees what diag_jwks_check filled; safe on a zeroed struct. */
void diag_jwks_clear(struct diag_jwks *j);

#endif
