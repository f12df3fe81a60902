/* SPDX-License-Identifier: Apache-2.0 */
#include "server/http/http_framing.h"

#include <string.h>

/* The fields of an HTTP/1 request head that decide how it is read. */
struct http_framing_fields {
    size_t host, content_length, transfer_encoding;
};

static h2o_generator_t http_framing_generator = {NULL, NULL};

/* Counts the fields of the raw HTTP/1 request head that h2o 2.2.5 does not
 * keep in req->headers: it keeps the last Host field only and neither
 * Content-Length nor Transfer-Encoding (just which one frames the body).
 * The head is read again from the socket's input buffer: h2o consumes each
 * request from that buffer only after answering it, so the current head
 * starts at input->bytes, already parsed (and its names lower-cased) by
 * h2o. */
static void http_framing_count(const h2o_buffer_t *in, struct http_framing_fields *f)
{
    const char *p = in->bytes, *end = in->bytes + (in->size < H2O_MAX_REQLEN ? in->size : H2O_MAX_REQLEN);
    const char *eol;
    int first = 1;

    memset(f, 0, sizeof(*f));
    for (; p < end && (eol = memchr(p, '\n', (size_t)(end - p))) != NULL; p = eol + 1, first = 0) {
        size_t len = (size_t)(eol - p) - (eol > p && eol[-1] == '\r');
        if (len == 0 && !first)
            return; /* the empty line ending the head */
        if (first)
            continue; /* the request line */
        if (len > 5 && h2o_lcstris(p, 5, H2O_STRLIT("host:")))
            f->host++;
        else if (len > 15 && h2o_lcstris(p, 15, H2O_STRLIT("content-length:")))
            f->content_length++;
        else if (len > 18 && h2o_lcstris(p, 18, H2O_STRLIT("transfer-encoding:")))
            f->transfer_encoding++;
    }
}

/* The Host fields alone, without reading the whole head, for the usual
 * request with neither Content-Length nor Transfer-Encoding: h2o then
 * leaves the value of the last Host field in the input buffer, so a
 * repeated one is a "\nhost:" before that field's line (names are
 * lower-cased in place). Clients send Host first, so this searches little
 * more than the request line. Returns -1 when the value is not in the
 * buffer: without a Host field h2o names its default host instead. */
static int http_framing_count_hosts(const h2o_buffer_t *in, h2o_iovec_t host, struct http_framing_fields *f)
{
    const char *line;

    memset(f, 0, sizeof(*f));
    if (host.base == NULL || host.base < in->bytes || host.base > in->bytes + in->size ||
        (line = memrchr(in->bytes, '\n', (size_t)(host.base - in->bytes))) == NULL)
        return -1;
    f->host = 1 + (memmem(in->bytes, (size_t)(line - in->bytes), "\nhost:", 6) != NULL);
    return 0;
}

static int http_framing_refuse(h2o_req_t *req, const char *body, size_t len, int close)
{
    static const h2o_iovec_t type = {H2O_STRLIT("application/json")};
    h2o_iovec_t buf = h2o_iovec_init(body, len);
    int is_head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));

    /* whatever follows a message with ambiguous framing cannot be trusted
     * to start a request (RFC 9112 6.3 point 3) */
    if (close)
        req->http1_is_persistent = 0;
    req->res.status = 400;
    req->res.reason = "Bad Request";
    req->res.content_length = len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, type.base, type.len);
    h2o_start_response(req, &http_framing_generator);
    h2o_send(req, is_head ? NULL : &buf, is_head ? 0 : 1, H2O_SEND_STATE_FINAL);
    return 0;
}

/* h2o 2.2.5 lets Transfer-Encoding win over Content-Length, takes the
 * first of two Content-Length fields, reads a chunked body on GET and keeps
 * the connection open, so a proxy in front that frames the message the
 * other way would see a different next request. It also decodes a chunked
 * body in HTTP/1.0, which has no Transfer-Encoding: an HTTP/1.0
 * intermediary reads such a body up to the end of the connection, so the
 * message is faulty framing (RFC 9112 6.1) however the fields look. It
 * takes the last of two Host fields, where a proxy may have routed by the
 * first. HTTP/2 frames messages itself and carries the authority once: not
 * checked. */
static int http_framing_on_req(h2o_handler_t *self, h2o_req_t *req)
{
    h2o_socket_t *sock;
    struct http_framing_fields f;
    int body_forbidden = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
                         h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));

    (void)self;
    if (req->version >= 0x200 || req->conn->callbacks->get_socket == NULL ||
        (sock = req->conn->callbacks->get_socket(req->conn)) == NULL || sock->input == NULL)
        return -1;
    /* h2o saw neither body field when there is no entity; an HTTP/1.0
     * head is always read whole, whatever h2o made of its body */
    if (req->entity.base != NULL || req->version < 0x101 ||
        http_framing_count_hosts(sock->input, req->input.authority, &f) != 0)
        http_framing_count(sock->input, &f);
    if (f.content_length > 1 || (f.content_length > 0 && f.transfer_encoding > 0) ||
        (f.transfer_encoding > 0 && body_forbidden))
        return http_framing_refuse(req, H2O_STRLIT("{\"error\":\"ambiguous message framing\"}"), 1);
    if (f.transfer_encoding > 0 && req->version < 0x101)
        return http_framing_refuse(req, H2O_STRLIT("{\"error\":\"Transfer-Encoding in an HTTP/1.0 request\"}"), 1);
    if (f.host > 1)
        return http_framing_refuse(req, H2O_STRLIT("{\"error\":\"more than one Host header\"}"), 0);
    if (f.host == 0 && req->version >= 0x101)
        return http_framing_refuse(req, H2O_STRLIT("{\"error\":\"an HTTP/1.1 request needs a Host header\"}"), 0);
    return -1;
}

void http_framing_register(h2o_pathconf_t *pathconf)
{
    h2o_handler_t *self = h2o_create_handler(pathconf, sizeof(*self));

    self->on_req = http_framing_on_req;
}
