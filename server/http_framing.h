/*
 * http_framing: refuses HTTP/1 requests whose body framing two parsers
 * could read differently (request smuggling, RFC 9112 6.1 and 6.3), which
 * h2o 2.2.5 accepts: Content-Length with Transfer-Encoding, several
 * Content-Length fields, or a body where none belongs.
 */
#ifndef OIDC_HTTP_FRAMING_H
#define OIDC_HTTP_FRAMING_H

#include <h2o.h>

/* 1 when req must be refused (400, connection closed). body_forbidden:
 * the method takes no body (GET, HEAD), so any chunked body is refused. */
int http_framing_ambiguous(h2o_req_t *req, int body_forbidden);

#endif
