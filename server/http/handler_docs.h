/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handler_docs: the public listener's only handler. Serves the discovery
 * document and the JWKS from the worker's snapshot — GET and HEAD,
 * conditional requests, exact path match, with --cors the CORS headers and
 * preflight (OPTIONS) answers browsers need — and answers everything else
 * with 404 or 405.
 */
#ifndef OIDC_HANDLER_DOCS_H
#define OIDC_HANDLER_DOCS_H

#include <h2o.h>
#include "config/config.h"

/* Registers the handler on pathconf, with cfg's --cors, --path-prefix,
 * --allowed-hosts (421 for others) and --max-request-header-size (431).
 * cfg must outlive the server. */
void handler_docs_register(h2o_pathconf_t *pathconf, const struct config *cfg);

#endif
