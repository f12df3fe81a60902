/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paths: the URL paths this server answers, as kube-apiserver serves them
 * (the two documents, TokenReview) and as probes and Prometheus expect them
 * (the admin listener). Defined once: the handlers, the metrics labels, the
 * log lines, the exported objects and the default jwks_uri all use these.
 */
#ifndef OIDC_PATHS_H
#define OIDC_PATHS_H

/* The discovery document, relative to the issuer (OpenID Connect
 * Discovery 1.0 section 4). */
#define PATHS_DISCOVERY "/.well-known/openid-configuration"

/* The JWKS, at kube-apiserver's path; the default jwks_uri is the issuer
 * plus this. */
#define PATHS_JWKS "/openid/v1/jwks"

/* The TokenReview API (authentication.k8s.io/v1). */
#define PATHS_TOKENREVIEW "/apis/authentication.k8s.io/v1/tokenreviews"

/* The admin listener's probes and metrics. */
#define PATHS_LIVEZ   "/livez"
#define PATHS_READYZ  "/readyz"
#define PATHS_METRICS "/metrics"

/* The admin listener's status page, for people (server/obs/status.h). */
#define PATHS_STATUS "/"

#endif
