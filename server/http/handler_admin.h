/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handler_admin: the admin listener (--admin-listen, never a public one):
 * /livez (the process serves), /readyz (see health.h), /metrics
 * (Prometheus text format) and, at "/", the status page for people
 * (server/obs/status.h).
 */
#ifndef OIDC_HANDLER_ADMIN_H
#define OIDC_HANDLER_ADMIN_H

#include <h2o.h>

void handler_admin_register(h2o_pathconf_t *pathconf);

#endif
