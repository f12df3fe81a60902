#include "http_framing.h"

#include <string.h>

/* Counts the Content-Length and Transfer-Encoding fields of the raw
 * HTTP/1 request head. h2o 2.2.5 keeps neither in req->headers (it only
 * remembers which one frames the body), so the head is read again from the
 * socket's input buffer: h2o consumes each request from that buffer only
 * after answering it, so the current head starts at input->bytes, already
 * parsed (and its names lower-cased) by h2o. */
static void http_framing_count(const h2o_buffer_t *in, size_t *cl, size_t *te)
{
    const char *p = in->bytes, *end = in->bytes + (in->size < H2O_MAX_REQLEN ? in->size : H2O_MAX_REQLEN);
    const char *eol;
    int first = 1;

    *cl = *te = 0;
    for (; p < end && (eol = memchr(p, '\n', (size_t)(end - p))) != NULL; p = eol + 1, first = 0) {
        size_t len = (size_t)(eol - p) - (eol > p && eol[-1] == '\r');
        if (len == 0 && !first)
            return; /* the empty line ending the head */
        if (first)
            continue; /* the request line */
        if (len > 15 && h2o_lcstris(p, 15, H2O_STRLIT("content-length:")))
            ++*cl;
        else if (len > 18 && h2o_lcstris(p, 18, H2O_STRLIT("transfer-encoding:")))
            ++*te;
    }
}

/* Request smuggling (RFC 9112 6.1, 6.3): h2o 2.2.5 lets Transfer-Encoding
 * win over Content-Length, takes the first of two Content-Length fields and
 * reads a chunked body on GET, then keeps the connection open. A proxy in
 * front that frames the message the other way would see a different next
 * request, so such messages are refused and the connection closed. None of
 * the documents takes a body, so a chunked GET or HEAD is refused too.
 * HTTP/2 frames messages itself and is not affected. */
int http_framing_ambiguous(h2o_req_t *req, int body_forbidden)
{
    h2o_socket_t *sock;
    size_t cl, te;

    if (req->version >= 0x200 || req->entity.base == NULL || req->conn->callbacks->get_socket == NULL ||
        (sock = req->conn->callbacks->get_socket(req->conn)) == NULL || sock->input == NULL)
        return 0; /* h2o saw neither field: no body, nothing to smuggle */
    http_framing_count(sock->input, &cl, &te);
    return cl > 1 || (cl > 0 && te > 0) || (te > 0 && body_forbidden);
}
