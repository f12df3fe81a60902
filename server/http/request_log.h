/*
 * request_log: the hook h2o calls when a request is done. It counts the
 * request in the thread's metrics and, with --access-log, appends its line.
 */
#ifndef OIDC_REQUEST_LOG_H
#define OIDC_REQUEST_LOG_H

#include <h2o.h>

void request_log_register(h2o_pathconf_t *pathconf);

#endif
