/* SPDX-License-Identifier: Apache-2.0 */
/*
 * site: what one kind of listener serves — the public documents, the
 * TokenReview API or the admin endpoints — as an h2o configuration with its
 * handler, limits and request hook. The server runs one per kind; the HTTP
 * fuzzer (fuzz/fuzz_http.c) builds the same ones to drive them in-process.
 */
#ifndef OIDC_SITE_H
#define OIDC_SITE_H

#include <h2o.h>
#include "config/config.h"

enum site_kind {
    SITE_DOCS,        /* --listen, --tls-listen: discovery document and JWKS */
    SITE_TOKENREVIEW, /* --token-review-listen */
    SITE_ADMIN,       /* --admin-listen: /livez, /readyz, /metrics */
};

/* Initialises conf as the configuration of kind with cfg's limits and
 * options. cfg must outlive conf; h2o_config_dispose(conf) frees it. */
void site_configure(h2o_globalconf_t *conf, const struct config *cfg, enum site_kind kind);

#endif
