/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request_log: the hook h2o calls when a request is done. It counts the
 * request in the thread's metrics and, with --access-log, appends its line.
 */
#ifndef OIDC_REQUEST_LOG_H
#define OIDC_REQUEST_LOG_H

#include <h2o.h>

void request_log_register(h2o_pathconf_t *pathconf);

/* Names who made req (the TokenReview caller) for its access-log line:
 * the name (len bytes) is copied into the request's pool. */
void request_log_caller(h2o_req_t *req, const char *name, size_t len);

#endif
