/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doctor: checks an issuer from outside, the way a relying party does.
 * It fetches <issuer without trailing slash>/.well-known/openid-configuration
 * and then the jwks_uri it names, through util/http_client.h (https, the
 * chain verified against --ca-file or the system store, no redirects,
 * bounded sizes and times), and runs the checks of doc_checks, jwks_checks
 * and token_checks on what came back, then the documented rules of the
 * relying party given (rp_rules). Each finding goes into a report.
 *
 * Network failures are findings too: an unreachable JWKS is a FAIL of the
 * issuer, not an error of the command.
 */
#ifndef OIDC_DIAG_DOCTOR_H
#define OIDC_DIAG_DOCTOR_H

#include <stddef.h>
#include <time.h>

#include "diag/report.h"
#include "diag/rp_rules.h"

struct doctor_options {
    const char *issuer;  /* --issuer */
    const char *ca_file; /* --ca-file, or NULL: the system store */
    int allow_http;      /* --allow-insecure-issuer: fetch http URLs (still reported) */
    const char *token;   /* the --token-file token, or NULL */
    size_t token_len;
    char *const *audiences; /* --audience: what the token's aud must hold */
    size_t naudiences;
    unsigned targets; /* 1 << enum rp_target of each relying party whose rules --target asks for */
    time_t now;
    long timeout_ms; /* per request; 0: http_client's default */
};

/* Runs every check that applies, in order, into r (which the caller
 * clears). */
void doctor_run(const struct doctor_options *o, struct diag_report *r);

#endif
