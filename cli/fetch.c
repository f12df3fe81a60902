#include "cli/fetch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/printable.h"

#define FETCH_URL_MAX  8192  /* longer URLs are refused */
#define FETCH_HOST_MAX 253   /* a DNS name, or an IP literal */
#define FETCH_LINE_MAX 8192  /* one status, header, chunk-size or trailer line */
#define FETCH_BUF_SIZE 16384 /* receive buffer: must exceed FETCH_LINE_MAX */
#define FETCH_SHOW_MAX 256   /* of the URL in messages */

/* Characters of a header name (RFC 9110 section 5.6.2, tchar). */
#define FETCH_TCHARS "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

enum fetch_op { FETCH_HANDSHAKE, FETCH_SEND, FETCH_RECV };

/* What each step is doing, for messages. */
static const char *const fetch_doing[] = {"during the handshake", "sending the request", "reading the response"};

/* What the connection and the request need from the URL. */
struct fetch_target {
    int https;
    int is_ip;                          /* host is an IP literal: no SNI, IP SAN check */
    char host[FETCH_HOST_MAX + 1];      /* without brackets: what TLS verifies */
    char authority[FETCH_HOST_MAX + 9]; /* host[:port] as written: the Host header */
    char connect[FETCH_HOST_MAX + 9];   /* host:port, IPv6 in brackets: for BIO_new_connect */
    const char *path;                   /* path and query, up to any fragment */
    size_t path_len;
};

/* The status line and the headers that decide how the body is framed. */
struct fetch_head {
    int status;
    char reason[64];
    int chunked;
    int has_length;
    size_t length;
};

struct fetch {
    struct fetch_target t;
    char shown[FETCH_SHOW_MAX + 4]; /* the URL as messages show it */
    char *err;
    size_t errlen;
    long long deadline_ms; /* CLOCK_MONOTONIC */
    BIO *conn;             /* until handed to ssl */
    SSL_CTX *ctx;
    SSL *ssl;
    int fd;
    char in[FETCH_BUF_SIZE]; /* received, not yet consumed: in[pos..len) */
    size_t in_pos, in_len;
    size_t header_budget; /* left of FETCH_HEADER_MAX */
    char *body;
    size_t body_len, body_cap, max_body;
};

/* Records a failure as "GET <url>: <message>". Returns -1. */
__attribute__((format(printf, 2, 3))) static int fetch_fail(struct fetch *f, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(f->err, f->errlen, "GET %s: ", f->shown);

    if (n >= 0 && (size_t)n < f->errlen) {
        va_start(ap, fmt);
        vsnprintf(f->err + n, f->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The most telling reason OpenSSL queued: a system error's text (refused,
 * unreachable), else the detail of the last library error (a resolver
 * message) or its reason. Empties the queue so nothing leaks to later
 * callers. */
static const char *fetch_reason(char *buf, size_t len)
{
    unsigned long e, sys = 0, last = 0;
    const char *data, *last_data = "";
    int flags;

    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        if (ERR_SYSTEM_ERROR(e) && sys == 0)
            sys = e;
        else if (!ERR_SYSTEM_ERROR(e)) {
            last = e;
            last_data = flags & ERR_TXT_STRING ? data : "";
        }
    }
    if (sys != 0)
        snprintf(buf, len, "%s", strerror(ERR_GET_REASON(sys)));
    else if (last != 0 && ERR_reason_error_string(last) != NULL)
        snprintf(buf, len, "%s", *last_data ? last_data : ERR_reason_error_string(last));
    else
        snprintf(buf, len, "%s", errno != 0 ? strerror(errno) : "connection closed");
    return buf;
}

/* Monotonic milliseconds: the deadline must not move with the wall clock. */
static long long fetch_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for the socket to be ready, within what is left of the budget of
 * the whole fetch, so that a slow peer cannot stretch it step by step. */
static int fetch_wait(struct fetch *f, short events, const char *doing)
{
    for (;;) {
        long long left = f->deadline_ms - fetch_now_ms();
        struct pollfd pfd = {.fd = f->fd, .events = events};
        int r;

        if (left <= 0)
            return fetch_fail(f, "timed out after %d s %s", FETCH_TIMEOUT_MS / 1000, doing);
        if ((r = poll(&pfd, 1, (int)left)) > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return fetch_fail(f, "poll: %s", strerror(errno));
    }
}

/* Checks the host part of the URL: an IPv6 literal (bracketed) must parse,
 * a name may only hold the characters of DNS names and IPv4 addresses. */
static int fetch_check_host(struct fetch *f, const char *host, size_t len, int bracketed)
{
    unsigned char addr[sizeof(struct in6_addr)];

    if (len == 0 || len > FETCH_HOST_MAX)
        return fetch_fail(f, "URL host is empty or longer than %d characters", FETCH_HOST_MAX);
    memcpy(f->t.host, host, len);
    f->t.host[len] = '\0';
    if (bracketed) {
        if (inet_pton(AF_INET6, f->t.host, addr) != 1)
            return fetch_fail(f, "URL host [%s] is not an IPv6 address", f->t.host);
        f->t.is_ip = 1;
        return 0;
    }
    if (strspn(f->t.host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != len)
        return fetch_fail(f, "URL host \"%s\" is not a valid host name", f->t.host);
    f->t.is_ip = inet_pton(AF_INET, f->t.host, addr) == 1;
    return 0;
}

/* Checks a URL port: 1 to 65535, digits only. */
static int fetch_check_port(struct fetch *f, const char *port, size_t len)
{
    unsigned long v = 0;

    for (size_t i = 0; i < len && v <= 65535; i++) {
        if (port[i] < '0' || port[i] > '9')
            return fetch_fail(f, "URL port is not a number");
        v = v * 10 + (unsigned long)(port[i] - '0');
    }
    if (len == 0 || v == 0 || v > 65535)
        return fetch_fail(f, "URL port is not between 1 and 65535");
    return 0;
}

/* Splits url into host, port and path. Strict: no whitespace, control or
 * non-ASCII characters (a URL read from a fetched document must not inject
 * request lines), no userinfo, https unless http is allowed. */
static int fetch_parse_url(struct fetch *f, const char *url, int allow_http)
{
    const char *auth, *end, *host_end, *after, *port;
    size_t n = strlen(url), port_len;
    int bracketed;

    if (n > FETCH_URL_MAX)
        return fetch_fail(f, "URL is longer than %d characters", FETCH_URL_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
            return fetch_fail(f, "URL contains a space, control or non-ASCII character");
    if (strncasecmp(url, "https://", 8) == 0)
        f->t.https = 1;
    else if (!allow_http || strncasecmp(url, "http://", 7) != 0)
        return fetch_fail(f, "not an %s URL", allow_http ? "http or https" : "https");
    auth = url + (f->t.https ? 8 : 7);
    end = auth + strcspn(auth, "/?#");
    if (memchr(auth, '@', (size_t)(end - auth)) != NULL)
        return fetch_fail(f, "URL userinfo is not supported");
    bracketed = *auth == '[';
    if (bracketed && (host_end = memchr(auth, ']', (size_t)(end - auth))) == NULL)
        return fetch_fail(f, "URL has an unterminated IPv6 address");
    if (!bracketed && (host_end = memchr(auth, ':', (size_t)(end - auth))) == NULL)
        host_end = end;
    after = host_end + bracketed;
    if (fetch_check_host(f, auth + bracketed, (size_t)(host_end - auth - bracketed), bracketed) != 0)
        return -1;
    port = f->t.https ? "443" : "80";
    port_len = strlen(port);
    if (after < end && *after != ':')
        return fetch_fail(f, "URL has text after the host");
    if (after < end && fetch_check_port(f, port = after + 1, port_len = (size_t)(end - after - 1)) != 0)
        return -1;
    snprintf(f->t.authority, sizeof(f->t.authority), "%.*s", (int)(end - auth), auth);
    snprintf(f->t.connect, sizeof(f->t.connect), "%.*s:%.*s", (int)(after - auth), auth, (int)port_len, port);
    f->t.path = end;
    f->t.path_len = strcspn(end, "#");
    return 0;
}

/* One step of op, over TLS or the plain socket, waiting within the budget
 * whenever the non-blocking socket is not ready. Returns the bytes moved (1
 * for a finished handshake), 0 at a clean end of stream, or -1. */
static int fetch_io(struct fetch *f, enum fetch_op op, void *buf, int n)
{
    char why[256];
    short events;
    int r;

    for (;;) {
        ERR_clear_error();
        errno = 0;
        if (f->ssl != NULL) {
            r = op == FETCH_HANDSHAKE ? SSL_connect(f->ssl)
                : op == FETCH_SEND    ? SSL_write(f->ssl, buf, n)
                                      : SSL_read(f->ssl, buf, n);
            if (r > 0)
                return r;
            switch (SSL_get_error(f->ssl, r)) {
            case SSL_ERROR_WANT_READ:
                events = POLLIN;
                break;
            case SSL_ERROR_WANT_WRITE:
                events = POLLOUT;
                break;
            case SSL_ERROR_ZERO_RETURN:
                return 0;
            default:
                return fetch_fail(f, "TLS error %s: %s", fetch_doing[op], fetch_reason(why, sizeof(why)));
            }
        } else {
            r = op == FETCH_SEND ? BIO_write(f->conn, buf, n) : BIO_read(f->conn, buf, n);
            if (r > 0)
                return r;
            if (r == 0 && op == FETCH_RECV)
                return 0;
            if (!BIO_should_retry(f->conn))
                return fetch_fail(f, "%s: %s", fetch_doing[op], fetch_reason(why, sizeof(why)));
            events = op == FETCH_SEND ? POLLOUT : POLLIN;
        }
        if (fetch_wait(f, events, fetch_doing[op]) != 0)
            return -1;
    }
}

/* Opens the TCP connection without blocking, so that connecting is bounded
 * by the deadline like every later step. */
static int fetch_connect(struct fetch *f)
{
    char why[256];

    if ((f->conn = BIO_new_connect(f->t.connect)) == NULL)
        return fetch_fail(f, "out of memory");
    BIO_set_nbio(f->conn, 1);
    while (BIO_do_connect(f->conn) <= 0) {
        if (!BIO_should_retry(f->conn))
            return fetch_fail(f, "cannot connect to %s: %s", f->t.connect, fetch_reason(why, sizeof(why)));
        f->fd = (int)BIO_get_fd(f->conn, NULL);
        if (fetch_wait(f, POLLOUT, "connecting") != 0)
            return -1;
    }
    f->fd = (int)BIO_get_fd(f->conn, NULL);
    return 0;
}

/* Names what went wrong with the peer's certificate; a name mismatch says
 * which name was expected. */
static int fetch_fail_verify(struct fetch *f, long result)
{
    int mismatch = result == X509_V_ERR_HOSTNAME_MISMATCH || result == X509_V_ERR_IP_ADDRESS_MISMATCH;

    return fetch_fail(f, "TLS certificate verification failed: %s%s%s%s", X509_verify_cert_error_string(result),
                      mismatch ? " (the certificate is not valid for " : "", mismatch ? f->t.host : "",
                      mismatch ? ")" : "");
}

/* Wraps the connection in TLS 1.2 or later, verifying the chain against
 * ca_file or the system store and the certificate against the URL's host. */
static int fetch_tls(struct fetch *f, const char *ca_file)
{
    char why[256];
    int loaded;

    if ((f->ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
        SSL_CTX_set_min_proto_version(f->ctx, TLS1_2_VERSION) != 1)
        return fetch_fail(f, "cannot set up TLS: %s", fetch_reason(why, sizeof(why)));
    SSL_CTX_set_verify(f->ctx, SSL_VERIFY_PEER, NULL);
    loaded = ca_file != NULL ? SSL_CTX_load_verify_locations(f->ctx, ca_file, NULL)
                             : SSL_CTX_set_default_verify_paths(f->ctx);
    if (loaded != 1)
        return fetch_fail(f, "cannot load CA certificates from %s: %s", ca_file ? ca_file : "the system paths",
                          fetch_reason(why, sizeof(why)));
    if ((f->ssl = SSL_new(f->ctx)) == NULL)
        return fetch_fail(f, "cannot set up TLS: %s", fetch_reason(why, sizeof(why)));
    SSL_set_bio(f->ssl, f->conn, f->conn);
    f->conn = NULL;
    SSL_set_hostflags(f->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if ((f->t.is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(f->ssl), f->t.host)
                    : SSL_set1_host(f->ssl, f->t.host) && SSL_set_tlsext_host_name(f->ssl, f->t.host)) != 1)
        return fetch_fail(f, "cannot set up TLS for host %s", f->t.host);
    if (fetch_io(f, FETCH_HANDSHAKE, NULL, 0) > 0)
        return 0;
    if (SSL_get_verify_result(f->ssl) != X509_V_OK)
        return fetch_fail_verify(f, SSL_get_verify_result(f->ssl));
    return -1;
}

/* Sends the whole request, however the socket splits it. */
static int fetch_send(struct fetch *f)
{
    char req[FETCH_URL_MAX + 512];
    int n = snprintf(req, sizeof(req),
                     "GET %s%.*s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\nUser-Agent: "
                     "oidc-discovery\r\nConnection: close\r\n\r\n",
                     *f->t.path == '/' ? "" : "/", (int)f->t.path_len, f->t.path, f->t.authority);

    for (int off = 0, r; off < n; off += r)
        if ((r = fetch_io(f, FETCH_SEND, req + off, n - off)) <= 0)
            return r < 0 ? -1 : fetch_fail(f, "connection closed while sending the request");
    return 0;
}

/* Reads more of the response, first moving what is unconsumed to the start
 * of the buffer. Returns the bytes read, 0 at the end of the stream, -1. */
static int fetch_fill(struct fetch *f)
{
    int r;

    memmove(f->in, f->in + f->in_pos, f->in_len - f->in_pos);
    f->in_len -= f->in_pos;
    f->in_pos = 0;
    if ((r = fetch_io(f, FETCH_RECV, f->in + f->in_len, (int)(sizeof(f->in) - f->in_len))) > 0)
        f->in_len += (size_t)r;
    return r;
}

/* Returns the next line, CRLF removed, NUL-terminated in place (valid until
 * the next read). A bare LF, a control character or an overlong line is
 * malformed. budget, when not NULL, is charged for the line (headers). */
static int fetch_line(struct fetch *f, const char *what, size_t *budget, char **line)
{
    size_t scanned = 0, n;
    char *start, *lf;
    int r;

    for (;;) {
        start = f->in + f->in_pos;
        if ((lf = memchr(start + scanned, '\n', f->in_len - f->in_pos - scanned)) != NULL)
            break;
        scanned = f->in_len - f->in_pos;
        if (scanned >= FETCH_LINE_MAX)
            return fetch_fail(f, "malformed response: %s longer than %d bytes", what, FETCH_LINE_MAX);
        if ((r = fetch_fill(f)) <= 0)
            return r < 0 ? -1 : fetch_fail(f, "connection closed in the middle of the %s", what);
    }
    n = (size_t)(lf - start);
    if (n == 0 || start[n - 1] != '\r')
        return fetch_fail(f, "malformed response: %s does not end in CRLF", what);
    start[n - 1] = '\0';
    for (size_t i = 0; i + 1 < n; i++)
        if (((unsigned char)start[i] < 0x20 && start[i] != '\t') || start[i] == 0x7f)
            return fetch_fail(f, "malformed response: control character in the %s", what);
    if (budget != NULL && n + 1 > *budget)
        return fetch_fail(f, "response headers exceed %d bytes", FETCH_HEADER_MAX);
    if (budget != NULL)
        *budget -= n + 1;
    f->in_pos += n + 1;
    *line = start;
    return 0;
}

/* Parses "HTTP/1.x SP 3DIGIT SP reason-phrase". */
static int fetch_status(struct fetch *f, const char *line, struct fetch_head *h)
{
    char shown[FETCH_SHOW_MAX + 4];

    if (strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
        strspn(line + 9, "0123456789") != 3 || (line[12] != ' ' && line[12] != '\0')) {
        printable_copy(line, shown, 64);
        return fetch_fail(f, "malformed status line \"%s\"", shown);
    }
    h->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    printable_copy(line[12] ? line + 13 : "", h->reason, sizeof(h->reason) - 4);
    return 0;
}

/* The value of digit c in base 10 or 16, or -1. */
static int fetch_digit(char c, int base)
{
    int v = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : 16;

    return v < base ? v : -1;
}

/* Parses a size: decimal for Content-Length, hex for a chunk, digits only
 * (no sign, no spaces). Returns the digits read, 0 when none or on
 * overflow. */
static size_t fetch_number(const char *s, int base, size_t *out)
{
    size_t i, v = 0;

    *out = 0;
    for (i = 0; fetch_digit(s[i], base) >= 0; i++) {
        if (v > (SIZE_MAX - (size_t)base) / (size_t)base)
            return 0;
        v = v * (size_t)base + (size_t)fetch_digit(s[i], base);
    }
    *out = v;
    return i;
}

/* Records the headers that frame and encode the body; the others are
 * ignored. Anything ambiguous (folding, two lengths, an unknown transfer or
 * content coding) is refused rather than guessed at. */
static int fetch_header(struct fetch *f, char *line, struct fetch_head *h)
{
    char *value = strchr(line, ':'), *end, shown[68];
    size_t length;

    if (value == NULL || value == line || strspn(line, FETCH_TCHARS) != (size_t)(value - line))
        return fetch_fail(f, "malformed response: bad header line");
    *value++ = '\0';
    value += strspn(value, " \t");
    for (end = value + strlen(value); end > value && (end[-1] == ' ' || end[-1] == '\t'); end--)
        end[-1] = '\0';
    printable_copy(value, shown, 64);
    if (strcasecmp(line, "Content-Length") == 0) {
        if (fetch_number(value, 10, &length) != strlen(value) || *value == '\0' ||
            (h->has_length && length != h->length))
            return fetch_fail(f, "malformed response: Content-Length \"%s\"", shown);
        h->has_length = 1;
        h->length = length;
    } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
        if (strcasecmp(value, "chunked") != 0 || h->chunked)
            return fetch_fail(f, "unsupported Transfer-Encoding \"%s\"", shown);
        h->chunked = 1;
    } else if (strcasecmp(line, "Content-Encoding") == 0 && strcasecmp(value, "identity") != 0) {
        return fetch_fail(f, "unsupported Content-Encoding \"%s\"", shown);
    }
    return 0;
}

/* Reads the status line and headers, passing over interim 1xx responses. */
static int fetch_head(struct fetch *f, struct fetch_head *h)
{
    char *line;

    do {
        memset(h, 0, sizeof(*h));
        if (fetch_line(f, "status line", &f->header_budget, &line) != 0 || fetch_status(f, line, h) != 0)
            return -1;
        for (;;) {
            if (fetch_line(f, "header", &f->header_budget, &line) != 0)
                return -1;
            if (*line == '\0')
                break;
            if (fetch_header(f, line, h) != 0)
                return -1;
        }
    } while (h->status >= 100 && h->status < 200 && h->status != 101);
    return 0;
}

/* Appends n bytes to the body, never letting it grow beyond max_body. */
static int fetch_append(struct fetch *f, const char *p, size_t n)
{
    size_t cap = f->body_cap ? f->body_cap : 4096;
    char *body;

    if (n > f->max_body - f->body_len)
        return fetch_fail(f, "response body exceeds %zu bytes", f->max_body);
    if (f->body_len + n + 1 > f->body_cap) {
        while (cap < f->body_len + n + 1)
            cap *= 2;
        cap = cap < f->max_body + 1 ? cap : f->max_body + 1;
        if ((body = realloc(f->body, cap)) == NULL)
            return fetch_fail(f, "out of memory");
        f->body = body;
        f->body_cap = cap;
    }
    memcpy(f->body + f->body_len, p, n);
    f->body_len += n;
    f->body[f->body_len] = '\0';
    return 0;
}

/* Moves exactly n body bytes from the connection into the body. */
static int fetch_copy(struct fetch *f, size_t n)
{
    size_t take;
    int r;

    if (n > f->max_body - f->body_len)
        return fetch_fail(f, "response body exceeds %zu bytes", f->max_body);
    while (n > 0) {
        if (f->in_pos == f->in_len && (r = fetch_fill(f)) <= 0)
            return r < 0 ? -1 : fetch_fail(f, "connection closed %zu bytes before the end of the body", n);
        take = f->in_len - f->in_pos < n ? f->in_len - f->in_pos : n;
        if (fetch_append(f, f->in + f->in_pos, take) != 0)
            return -1;
        f->in_pos += take;
        n -= take;
    }
    return 0;
}

/* A body without length ends where the connection does; over TLS only a
 * close_notify ends it, a bare close is an error (truncation). */
static int fetch_until_close(struct fetch *f)
{
    int r;

    do {
        if (fetch_append(f, f->in + f->in_pos, f->in_len - f->in_pos) != 0)
            return -1;
        f->in_pos = f->in_len;
    } while ((r = fetch_fill(f)) > 0);
    return r;
}

/* Decodes a chunked body (RFC 9112 section 7.1): hex size, optional
 * extensions, data, CRLF, and after the zero-size chunk, trailer lines. */
static int fetch_chunked(struct fetch *f)
{
    size_t size, digits;
    char *line, *ext;

    for (;;) {
        if (fetch_line(f, "chunk size line", NULL, &line) != 0)
            return -1;
        digits = fetch_number(line, 16, &size);
        ext = line + digits + strspn(line + digits, " \t");
        if (digits == 0 || (*ext != '\0' && *ext != ';'))
            return fetch_fail(f, "malformed response: bad chunk size line");
        if (size == 0)
            break;
        if (fetch_copy(f, size) != 0 || fetch_line(f, "chunk end", NULL, &line) != 0)
            return -1;
        if (*line != '\0')
            return fetch_fail(f, "malformed response: chunk longer than its size");
    }
    do {
        if (fetch_line(f, "trailer", &f->header_budget, &line) != 0)
            return -1;
    } while (*line != '\0');
    return 0;
}

/* Reads the response: only 200 is accepted, then the body as framed. */
static int fetch_response(struct fetch *f)
{
    struct fetch_head h;
    int rc;

    if (fetch_head(f, &h) != 0)
        return -1;
    if (h.status >= 300 && h.status < 400)
        return fetch_fail(f, "HTTP %d (redirects are not followed)", h.status);
    if (h.status != 200)
        return fetch_fail(f, "HTTP %d%s%s", h.status, h.reason[0] ? " " : "", h.reason);
    if (h.chunked && h.has_length)
        return fetch_fail(f, "malformed response: both Content-Length and Transfer-Encoding");
    rc = h.chunked ? fetch_chunked(f) : h.has_length ? fetch_copy(f, h.length) : fetch_until_close(f);
    return rc == 0 ? fetch_append(f, "", 0) : -1;
}

/* Keeps a peer that closes early from killing the process with SIGPIPE
 * while we write, without touching the process-wide disposition: the
 * signal is blocked in this thread for the call. */
static void fetch_block_sigpipe(sigset_t *old)
{
    sigset_t pipe;

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, old);
}

/* Consumes a SIGPIPE our writes raised, then restores the signal mask. */
static void fetch_restore_sigpipe(const sigset_t *old)
{
    static const struct timespec now = {0, 0};
    sigset_t pipe, pending;

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (!sigismember(old, SIGPIPE) && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
        sigtimedwait(&pipe, NULL, &now);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

int fetch_url(const char *url, const char *ca_file, int allow_http, size_t max_body, char **body, size_t *len,
              char *err, size_t errlen)
{
    struct fetch fetch = {0}, *f = &fetch;
    sigset_t old;
    int rc = -1;

    *body = NULL;
    *len = 0;
    printable_copy(url, f->shown, FETCH_SHOW_MAX);
    f->err = err;
    f->errlen = errlen;
    f->fd = -1;
    f->deadline_ms = fetch_now_ms() + FETCH_TIMEOUT_MS;
    f->header_budget = FETCH_HEADER_MAX;
    f->max_body = max_body < SIZE_MAX / 2 ? max_body : SIZE_MAX / 2;
    fetch_block_sigpipe(&old);
    if (fetch_parse_url(f, url, allow_http) == 0 && fetch_connect(f) == 0 &&
        (!f->t.https || fetch_tls(f, ca_file) == 0) && fetch_send(f) == 0 && fetch_response(f) == 0) {
        *body = f->body;
        *len = f->body_len;
        f->body = NULL;
        rc = 0;
    }
    SSL_free(f->ssl);
    BIO_free_all(f->conn);
    SSL_CTX_free(f->ctx);
    free(f->body);
    ERR_clear_error(); /* failures were turned into messages */
    fetch_restore_sigpipe(&old);
    return rc;
}
