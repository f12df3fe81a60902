/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doc_checks: doctor's checks of the discovery document and of the HTTP
 * headers both documents are served with, each adding one check to a
 * report. Pure functions of what was fetched, so unit tests call them
 * with made-up documents.
 */
#ifndef OIDC_DIAG_DOC_CHECKS_H
#define OIDC_DIAG_DOC_CHECKS_H

#include <stddef.h>

#include "diag/report.h"
#include "util/json.h"

/* "issuer.url": the issuer doctor was given is an https URL (http is a
 * FAIL, or a WARN with allow_http) with a host and no user information,
 * query or fragment; a trailing slash is noted. Returns whether its
 * discovery document can be fetched. */
int diag_doc_issuer_url(struct diag_report *r, const char *issuer, int allow_http);

/* The Content-Type value (NULL: none) of the discovery document (jwks 0:
 * application/json) or of the JWKS (jwks 1: application/json or
 * application/jwk-set+json), under the check id. */
void diag_doc_content_type(struct diag_report *r, const char *id, const char *value, int jwks);

/* The Cache-Control value (NULL: none): a max-age relying parties and
 * caches can plan a rotation by, of at most a day. */
void diag_doc_cache_control(struct diag_report *r, const char *id, const char *value);

/* The discovery document's members: "discovery.issuer" (byte for byte the
 * issuer, naming the difference), "discovery.members" (those OpenID
 * Connect Discovery requires, of the right types) and
 * "discovery.jwks_uri" (an https URL; http is a WARN with allow_http).
 * Returns the jwks_uri to fetch (in doc), or NULL when there is none
 * usable, which stops the checks of the JWKS. */
const char *diag_doc_discovery(struct diag_report *r, const char *issuer, const struct json_value *doc, int allow_http);

/* "discovery.algorithms": id_token_signing_alg_values_supported lists the
 * algorithm of every key (algs, n of them, NULL entries skipped). */
void diag_doc_algorithms(struct diag_report *r, const struct json_value *doc, const char *const *algs, size_t n);

#endif
