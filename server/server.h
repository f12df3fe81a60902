/*
 * server: runs the HTTP server until SIGTERM or SIGINT — h2o's global
 * configuration, one worker per --threads, the signal loop and the drain.
 */
#ifndef OIDC_SERVER_H
#define OIDC_SERVER_H

#include "config/config.h"
#include "reload.h"

/* Serves the snapshots of reload with cfg until SIGTERM or SIGINT. Returns
 * the process exit status: 0 after a clean shutdown, 1 when it could not
 * start. */
int server_run(const struct config *cfg, struct reload *reload);

#endif
