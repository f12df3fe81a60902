/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handler_tokenreview: POST /apis/authentication.k8s.io/v1/tokenreviews,
 * served only on the --token-review-listen listeners, holding the line
 * kube-apiserver holds: the caller authenticates first, with a client
 * certificate from --token-review-client-ca-file or a bearer
 * service-account token this server verifies (jose/review.h), and must be
 * named in --token-review-allowed-callers; 401 and 403 Status objects
 * otherwise, whatever the path. Then the token is verified against the
 * worker's current key set and answered like kube-apiserver does: 201
 * with the review for valid and invalid tokens alike, 400 with a Status
 * object for a malformed request.
 */
#ifndef OIDC_HANDLER_TOKENREVIEW_H
#define OIDC_HANDLER_TOKENREVIEW_H

#include <h2o.h>
#include "config/config.h"

/* Largest request body accepted (413 beyond it). */
#define TOKENREVIEW_MAX_BODY (64 * 1024)

/* Registers the handler on pathconf. cfg must outlive the server. */
void handler_tokenreview_register(h2o_pathconf_t *pathconf, const struct config *cfg);

#endif
