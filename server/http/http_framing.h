/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_framing: the first handler of every site (public, TokenReview,
 * admin), for every path and method. It refuses the HTTP/1 requests that
 * two parsers could read differently and that h2o 2.2.5 accepts:
 * ambiguous body framing (request smuggling, RFC 9112 6.1 and 6.3:
 * Content-Length with Transfer-Encoding, several Content-Length fields, or
 * a chunked body on GET or HEAD, or any Transfer-Encoding in HTTP/1.0),
 * answered 400 with the connection closed;
 * and a repeated Host field, or none in HTTP/1.1 (RFC 9112 3.2), answered
 * 400. Anything else goes on to the site's own handler.
 */
#ifndef OIDC_HTTP_FRAMING_H
#define OIDC_HTTP_FRAMING_H

#include <h2o.h>

/* Registers the check on pathconf; call it before the site's handler. */
void http_framing_register(h2o_pathconf_t *pathconf);

#endif
