/*
 * handler_docs: the public listener's only handler. Serves the discovery
 * document and the JWKS from the worker's snapshot — GET and HEAD,
 * conditional requests, exact path match — and answers everything else with
 * 404 or 405.
 */
#ifndef OIDC_HANDLER_DOCS_H
#define OIDC_HANDLER_DOCS_H

#include <h2o.h>

/* Registers the handler on pathconf. cors adds
 * Access-Control-Allow-Origin: * to every answer about the documents. */
void handler_docs_register(h2o_pathconf_t *pathconf, int cors);

#endif
