/*
 * server: runs the HTTP server until SIGTERM or SIGINT — h2o's global
 * configuration, one worker per --threads, the signal loop and the drain.
 */
#ifndef OIDC_SERVER_H
#define OIDC_SERVER_H

#include "config/config.h"
#include "server/obs/accesslog.h"
#include "server/reload/reload.h"

/* Serves the snapshots (and TLS certificate) of reload with cfg until
 * SIGTERM or SIGINT, then for --shutdown-grace more. accesslog may be NULL.
 * Returns the process exit status: 0 after a clean shutdown, 1 when it
 * could not start. */
int server_run(const struct config *cfg, struct reload *reload, struct accesslog *accesslog);

#endif
