/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_client: libcurl behind the policy of http_client.h. libcurl does the
 * protocol (URL parsing, resolution, TLS, framing, chunked bodies, SigV4);
 * this file only chooses its options, checks what libcurl leaves to the
 * caller (the scheme and userinfo of a URL, header injection, the bearer
 * file), caps what arrives, and turns failures into messages that say what
 * went wrong in terms of the request.
 */
#include "util/http_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/file.h"
#include "util/printable.h"
#include "util/redact.h"

#define HTTP_URL_MAX  8192 /* longer URLs are refused */
#define HTTP_SHOW_MAX 256  /* of the URL in messages */

/* "Authorization: Bearer ", the token and its NUL. */
#define HTTP_BEARER_FIELD_MAX (HTTP_CLIENT_BEARER_MAX + 32)

/* More field lines than this in one response are refused: each is kept,
 * and a repeated one is joined to the first, so their number bounds the
 * work (kube-apiserver and S3 send some 10 to 20). */
#define HTTP_FIELDS_MAX 100

/* Characters of a header name (RFC 9110 section 5.6.2, tchar). */
#define HTTP_TCHARS "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/* The state of one call, shared with libcurl's callbacks. */
struct http_call {
    const struct http_request *req;
    struct http_response *res;
    char shown[HTTP_SHOW_MAX + 4]; /* the URL as messages show it */
    const char *method;
    int https;
    size_t max_body;
    size_t body_cap;             /* allocated for res->body */
    size_t header_bytes;         /* of the current response's head */
    size_t fields;               /* field lines in it */
    int interim;                 /* the current response is a 1xx */
    int head_done;               /* the final response's head has ended: later lines are trailers */
    const char *why;             /* set by a callback that stopped the transfer */
    char why_buf[160];           /* room for a why that needs formatting */
    const unsigned char *upload; /* the rest of a PUT's or POST's body */
    size_t upload_left;
    void *curl;  /* the easy handle, for a stream's status */
    int stopped; /* the stream's callback stopped the transfer */
    char *err;
    size_t errlen;
};

/* "GET", "PUT" or "POST", for messages. */
static const char *http_method_name(enum http_method m)
{
    return m == HTTP_PUT ? "PUT" : m == HTTP_POST ? "POST" : "GET";
}

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_init_rc = CURLE_FAILED_INIT;

static void http_global_init(void)
{
    http_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Records a failure as "<METHOD> <url>: <message>". Returns e. */
__attribute__((format(printf, 3, 4))) static enum http_client_error
http_fail(struct http_call *c, enum http_client_error e, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(c->err, c->errlen, "%s %s: ", c->method, c->shown);

    if (n >= 0 && (size_t)n < c->errlen) {
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return e;
}

/* Checks what libcurl's URL parser accepts but the policy does not: bytes
 * that have no business in a URL read from a document (they could smuggle
 * a request line through a lenient parser), a scheme other than https (or
 * http when allowed), and userinfo. Leaves the parsed URL in *u. */
static enum http_client_error http_check_url(struct http_call *c, CURLU **u)
{
    const char *url = c->req->url;
    size_t n = strlen(url);
    char *scheme = NULL, *user = NULL;
    CURLUcode uc;
    enum http_client_error e = HTTP_CLIENT_OK;

    if (n > HTTP_URL_MAX)
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "URL is longer than %d characters", HTTP_URL_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
            return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "URL contains a space, control or non-ASCII character");
    if ((*u = curl_url()) == NULL)
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "out of memory");
    if ((uc = curl_url_set(*u, CURLUPART_URL, url, 0)) != CURLUE_OK)
        e = http_fail(c, HTTP_CLIENT_ERR_REQUEST, "not a valid URL (%s)", curl_url_strerror(uc));
    else if (curl_url_get(*u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
             (!(c->https = strcmp(scheme, "https") == 0) && !(c->req->allow_http && strcmp(scheme, "http") == 0)))
        e = http_fail(c, HTTP_CLIENT_ERR_REQUEST, "not an %s URL", c->req->allow_http ? "http or https" : "https");
    else if (curl_url_get(*u, CURLUPART_USER, &user, 0) == CURLUE_OK)
        e = http_fail(c, HTTP_CLIENT_ERR_REQUEST, "URL userinfo is not supported");
    curl_free(scheme);
    curl_free(user);
    return e;
}

/* A header field the caller passes: a token name, a colon, and a value of
 * visible characters, spaces and tabs only (no CR or LF to inject another
 * field or a request with). */
static int http_field_ok(const char *field)
{
    size_t name = strspn(field, HTTP_TCHARS);

    if (name == 0 || field[name] != ':')
        return 0;
    for (const char *p = field + name + 1; *p; p++)
        if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
            return 0;
    return 1;
}

/* Appends one field to *list. Returns 0 or -1 (out of memory). */
static int http_add_field(struct curl_slist **list, const char *field)
{
    struct curl_slist *l = curl_slist_append(*list, field);

    if (l == NULL)
        return -1;
    *list = l;
    return 0;
}

/* Space, tab, CR or LF: what may surround a token in its file. */
static int http_is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* Reads the bearer token file into "Authorization: Bearer <token>" in out
 * (HTTP_BEARER_FIELD_MAX bytes), with file_read: a FIFO or device put
 * there is refused instead of blocking the caller (the --upstream
 * mirror's thread) for good. The token must be visible ASCII: anything
 * else would be a broken header or an injected one. */
static enum http_client_error http_bearer_field(struct http_call *c, char *out)
{
    static const char prefix[] = "Authorization: Bearer ";
    const char *path = c->req->bearer_file;
    char why[1024], *text;
    size_t len, start = 0, end;
    enum http_client_error e = HTTP_CLIENT_OK;

    if ((text = file_read(path, HTTP_CLIENT_BEARER_MAX, &len, NULL, why, sizeof(why))) == NULL)
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "bearer token file %s", why);
    for (end = len; end > 0 && http_is_space(text[end - 1]); end--)
        ;
    while (start < end && http_is_space(text[start]))
        start++;
    for (size_t i = start; i < end && e == HTTP_CLIENT_OK; i++)
        if ((unsigned char)text[i] <= 0x20 || (unsigned char)text[i] >= 0x7f)
            e = http_fail(c, HTTP_CLIENT_ERR_REQUEST, "bearer token file %s holds a character a token cannot have",
                          path);
    if (e == HTTP_CLIENT_OK && start == end)
        e = http_fail(c, HTTP_CLIENT_ERR_REQUEST, "bearer token file %s is empty", path);
    if (e == HTTP_CLIENT_OK) {
        memcpy(out, prefix, sizeof(prefix) - 1);
        memcpy(out + sizeof(prefix) - 1, text + start, end - start);
        out[sizeof(prefix) - 1 + end - start] = '\0';
    }
    file_free(text, len);
    return e;
}

/* The SigV4 header fields: the payload's SHA-256 (libcurl 7.88 would hash
 * only a POST body, and S3 requires the field) and the session token. */
static enum http_client_error http_sigv4_fields(struct http_call *c, struct curl_slist **list)
{
    const struct http_sigv4 *s = c->req->sigv4;
    unsigned char md[32];
    char field[80 + 2 * sizeof(md)], *token;
    enum http_client_error e = HTTP_CLIENT_OK;
    const void *body = c->req->method != HTTP_GET ? c->req->body : NULL;
    size_t len = body != NULL ? c->req->body_len : 0;
    int n = snprintf(field, sizeof(field), "x-amz-content-sha256: ");

    if (EVP_Digest(body != NULL ? body : "", len, md, NULL, EVP_sha256(), NULL) != 1)
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "cannot hash the request body");
    for (size_t i = 0; i < sizeof(md); i++)
        n += snprintf(field + n, sizeof(field) - (size_t)n, "%02x", md[i]);
    if (http_add_field(list, field) != 0)
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "out of memory");
    if (s->session_token == NULL)
        return HTTP_CLIENT_OK;
    if ((token = malloc(strlen(s->session_token) + 32)) == NULL)
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "out of memory");
    sprintf(token, "x-amz-security-token: %s", s->session_token);
    if (!http_field_ok(token))
        e = http_fail(c, HTTP_CLIENT_ERR_REQUEST, "the SigV4 session token holds a control character");
    else if (http_add_field(list, token) != 0)
        e = http_fail(c, HTTP_CLIENT_ERR_REQUEST, "out of memory");
    OPENSSL_cleanse(token, strlen(token));
    free(token);
    return e;
}

/* The request's header fields: the caller's, then the bearer token, then
 * SigV4's. */
static enum http_client_error http_fields(struct http_call *c, struct curl_slist **list)
{
    const struct http_request *req = c->req;
    enum http_client_error e = HTTP_CLIENT_OK;
    char *bearer;

    for (const char *const *h = req->headers; h != NULL && *h != NULL; h++) {
        char shown[44];
        if (!http_field_ok(*h))
            return http_fail(c, HTTP_CLIENT_ERR_REQUEST,
                             "header field \"%s\" is not \"Name: value\" without control characters",
                             printable_copy(*h, shown, 40));
        if (http_add_field(list, *h) != 0)
            return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "out of memory");
    }
    if (req->bearer_file != NULL) {
        if ((bearer = malloc(HTTP_BEARER_FIELD_MAX)) == NULL)
            return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "out of memory");
        if ((e = http_bearer_field(c, bearer)) == HTTP_CLIENT_OK && http_add_field(list, bearer) != 0)
            e = http_fail(c, HTTP_CLIENT_ERR_REQUEST, "out of memory");
        OPENSSL_cleanse(bearer, HTTP_BEARER_FIELD_MAX);
        free(bearer);
    }
    if (e == HTTP_CLIENT_OK && req->sigv4 != NULL)
        e = http_sigv4_fields(c, list);
    return e;
}

/* Forgets the headers of an interim (1xx) response, or of a response
 * libcurl read before the final one. */
static void http_clear_headers(struct http_response *res)
{
    for (size_t i = 0; i < res->nheaders; i++) {
        free(res->headers[i].name);
        free(res->headers[i].value);
    }
    free(res->headers);
    res->headers = NULL;
    res->nheaders = 0;
    res->reason[0] = '\0';
}

/* Stops the transfer from a callback with a reason. Returns 0, which is
 * what makes libcurl stop. */
static size_t http_abort(struct http_call *c, const char *why)
{
    if (c->why == NULL)
        c->why = why;
    return 0;
}

/* Adds a field to the response, joining a repeated one to the first
 * (RFC 9110 section 5.3). Returns 0 or -1. */
static int http_store_field(struct http_response *res, const char *name, size_t nlen, const char *value, size_t vlen)
{
    struct http_header *h;
    char *joined;

    for (size_t i = 0; i < res->nheaders; i++) {
        h = &res->headers[i];
        if (strlen(h->name) != nlen || strncasecmp(h->name, name, nlen) != 0)
            continue;
        size_t old = strlen(h->value);
        if ((joined = realloc(h->value, old + 2 + vlen + 1)) == NULL)
            return -1;
        memcpy(joined + old, ", ", 2);
        memcpy(joined + old + 2, value, vlen);
        joined[old + 2 + vlen] = '\0';
        h->value = joined;
        return 0;
    }
    if ((h = realloc(res->headers, (res->nheaders + 1) * sizeof(*h))) == NULL)
        return -1;
    res->headers = h;
    h = &res->headers[res->nheaders];
    h->name = strndup(name, nlen);
    h->value = strndup(value, vlen);
    if (h->name == NULL || h->value == NULL) {
        free(h->name);
        free(h->value);
        return -1;
    }
    res->nheaders++;
    return 0;
}

/* A bounded, printable, NUL-terminated copy of len bytes at s (which need
 * not be NUL-terminated), for messages; out holds max + 4 bytes. */
static const char *http_show(const char *s, size_t len, char *out, size_t max)
{
    char copy[128];

    len = len < sizeof(copy) - 1 ? len : sizeof(copy) - 1;
    memcpy(copy, s, len);
    copy[len] = '\0';
    return printable_copy(copy, out, max);
}

/* Reads "HTTP/x.y NNN reason": a new response begins, so the fields of an
 * earlier (interim) one are dropped. The status itself comes from libcurl;
 * only whether it is interim matters here. */
static void http_status_line(struct http_call *c, const char *line, size_t len)
{
    const char *end = line + len, *sp = memchr(line, ' ', len), *reason = end;

    http_clear_headers(c->res);
    c->header_bytes = len;
    c->fields = 0;
    c->interim = sp != NULL && end - sp > 1 && sp[1] == '1';
    if (sp != NULL && end - sp > 4 && sp[4] == ' ')
        reason = sp + 5;
    http_show(reason, (size_t)(end - reason), c->res->reason, sizeof(c->res->reason) - 4);
}

/* Whether the len bytes at s are word, ignoring case. */
static int http_is(const char *s, size_t len, const char *word)
{
    return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

/* Reads one header field line (CRLF removed) of the final response into
 * it, refusing what cannot be read one way only: a folded line, a line
 * without a name, a control character, and a content coding (none was
 * asked for, and a coded body handed over as is would be misread).
 * Returns 0, or what http_abort returns. */
static size_t http_header_field(struct http_call *c, const char *line, size_t len)
{
    size_t name = strspn(line, HTTP_TCHARS);
    const char *value, *end, *length;
    char shown[68];

    if (++c->fields > HTTP_FIELDS_MAX) {
        snprintf(c->why_buf, sizeof(c->why_buf), "response has more than %d header fields", HTTP_FIELDS_MAX);
        return http_abort(c, c->why_buf);
    }
    if (line[0] == ' ' || line[0] == '\t')
        return http_abort(c, "malformed response: folded header line");
    if (name == 0 || name >= len || line[name] != ':')
        return http_abort(c, "malformed response: bad header line");
    for (size_t i = name; i < len; i++)
        if (((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f)
            return http_abort(c, "malformed response: control character in a header");
    for (value = line + name + 1; value < line + len && (*value == ' ' || *value == '\t'); value++)
        ;
    for (end = line + len; end > value && (end[-1] == ' ' || end[-1] == '\t'); end--)
        ;
    if (http_is(line, name, "Content-Encoding") && !http_is(value, (size_t)(end - value), "identity")) {
        snprintf(c->why_buf, sizeof(c->why_buf), "unsupported Content-Encoding \"%s\"",
                 http_show(value, (size_t)(end - value), shown, 64));
        return http_abort(c, c->why_buf);
    }
    if (http_is(line, name, "Content-Length") && (length = http_response_header(c->res, "Content-Length")) != NULL &&
        (strlen(length) != (size_t)(end - value) || memcmp(length, value, strlen(length)) != 0))
        return http_abort(c, "malformed response: two different Content-Length values");
    if (http_store_field(c->res, line, name, value, (size_t)(end - value)) != 0)
        return http_abort(c, "out of memory");
    return 1;
}

/* libcurl's header callback: one whole line (not NUL-terminated) of a
 * status line, header fields or trailers, CRLF included. Caps the size of
 * each response's head and keeps the final response's fields; trailers
 * count towards the cap but are not kept. */
static size_t http_on_header(char *line, size_t size, size_t nitems, void *ctx)
{
    struct http_call *c = ctx;
    size_t whole = size * nitems, len = whole;

    if (len > HTTP_CLIENT_HEADER_MAX - c->header_bytes) {
        snprintf(c->why_buf, sizeof(c->why_buf), "response headers exceed %d bytes", HTTP_CLIENT_HEADER_MAX);
        return http_abort(c, c->why_buf);
    }
    c->header_bytes += len;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    if (c->head_done)
        return whole; /* a trailer */
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0)
        http_status_line(c, line, len);
    else if (len == 0)
        c->head_done = !c->interim;
    else if (http_header_field(c, line, len) == 0)
        return 0;
    return whole;
}

/* libcurl's write callback: appends to the body, never letting it grow
 * beyond the cap (a larger body stops the transfer instead). */
static size_t http_on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct http_call *c = ctx;
    struct http_response *res = c->res;
    size_t len = size * nmemb, cap = c->body_cap ? c->body_cap : 4096;
    long status = 0;
    char *body;

    if (c->req->on_data != NULL && c->curl != NULL &&
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status >= 200 && status < 300) {
        if (c->req->on_data(c->req->on_data_ctx, data, len) != 0) {
            c->stopped = 1;
            return 0;
        }
        return len;
    }
    if (len > c->max_body - res->body_len) {
        snprintf(c->why_buf, sizeof(c->why_buf), "response body exceeds %zu bytes", c->max_body);
        return http_abort(c, c->why_buf);
    }
    if (res->body_len + len + 1 > c->body_cap) {
        while (cap < res->body_len + len + 1)
            cap *= 2;
        cap = cap < c->max_body + 1 ? cap : c->max_body + 1;
        if ((body = realloc(res->body, cap)) == NULL)
            return http_abort(c, "out of memory");
        res->body = body;
        c->body_cap = cap;
    }
    memcpy(res->body + res->body_len, data, len);
    res->body_len += len;
    res->body[res->body_len] = '\0';
    return len;
}

/* libcurl's read callback for a PUT body held in memory. */
static size_t http_on_upload(char *buf, size_t size, size_t nitems, void *ctx)
{
    struct http_call *c = ctx;
    size_t n = size * nitems < c->upload_left ? size * nitems : c->upload_left;

    memcpy(buf, c->upload, n);
    c->upload += n;
    c->upload_left -= n;
    return n;
}

/* libcurl's progress callback, set only for a request that can be
 * cancelled: non-zero stops the transfer. */
static int http_on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    const struct http_call *c = ctx;

    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    return atomic_load(c->req->cancel) != 0;
}

/* Without a CA file, trusts OpenSSL's default store, found as every
 * OpenSSL program finds it (SSL_CERT_FILE, SSL_CERT_DIR, else the
 * distribution's paths), rather than the bundle path libcurl was built
 * with, which ignores those variables. */
static CURLcode http_on_ssl_ctx(CURL *curl, void *ssl_ctx, void *ctx)
{
    (void)curl, (void)ctx;
    return SSL_CTX_set_default_verify_paths(ssl_ctx) == 1 ? CURLE_OK : CURLE_SSL_CACERT_BADFILE;
}

/* "10 s" or "250 ms", for messages. */
static const char *http_duration(long ms, char *buf, size_t len)
{
    if (ms % 1000 == 0)
        snprintf(buf, len, "%ld s", ms / 1000);
    else
        snprintf(buf, len, "%ld ms", ms);
    return buf;
}

/* The whole-transfer and connect timeouts of the request, with defaults. */
static void http_timeouts(const struct http_request *req, long *total, long *connect)
{
    *total = req->timeout_ms > 0 ? req->timeout_ms : HTTP_CLIENT_TIMEOUT_MS;
    *connect = req->connect_timeout_ms > 0 ? req->connect_timeout_ms : HTTP_CLIENT_CONNECT_TIMEOUT_MS;
    if (*connect > *total)
        *connect = *total;
}

/* Says which step a timeout cut short, from how far the transfer got. */
static enum http_client_error http_fail_timeout(struct http_call *c, CURL *curl)
{
    curl_off_t dns = 0, tcp = 0, tls = 0, first = 0;
    long total, connect;
    char took[32];
    const char *step;
    int connecting;

    curl_easy_getinfo(curl, CURLINFO_NAMELOOKUP_TIME_T, &dns);
    curl_easy_getinfo(curl, CURLINFO_CONNECT_TIME_T, &tcp);
    curl_easy_getinfo(curl, CURLINFO_APPCONNECT_TIME_T, &tls);
    curl_easy_getinfo(curl, CURLINFO_STARTTRANSFER_TIME_T, &first);
    http_timeouts(c->req, &total, &connect);
    connecting = tcp == 0 || (c->https && tls == 0);
    if (dns == 0)
        step = "resolving the host name";
    else if (connecting) /* libcurl 7.88 records the TCP time only once TLS is up too */
        step = c->https ? "connecting (TCP and TLS handshake)" : "connecting";
    else
        step = first == 0 ? "waiting for the response" : "reading the response";
    if (dns == 0 || connecting) /* the connect timeout covers both */
        total = connect;
    return http_fail(c, HTTP_CLIENT_ERR_TIMEOUT, "timed out after %s %s", http_duration(total, took, sizeof(took)),
                     step);
}

/* Names what went wrong with the peer's certificate: OpenSSL's verdict on
 * the chain, or else libcurl's own message, which is about the name
 * (libcurl checks the name after the handshake, before it records the
 * chain's result: a failure there leaves X509_V_ERR_UNSPECIFIED). */
static enum http_client_error http_fail_verify(struct http_call *c, CURL *curl, const char *detail)
{
    long result = X509_V_OK;

    curl_easy_getinfo(curl, CURLINFO_SSL_VERIFYRESULT, &result);
    if (result != X509_V_OK && result != X509_V_ERR_UNSPECIFIED)
        return http_fail(c, HTTP_CLIENT_ERR_TLS_VERIFY, "TLS certificate verification failed: %s",
                         X509_verify_cert_error_string(result));
    return http_fail(c, HTTP_CLIENT_ERR_TLS_VERIFY, "TLS certificate verification failed: %s", detail);
}

/* Turns libcurl's result into a message about the request. detail is
 * libcurl's own message (made printable). */
static enum http_client_error http_fail_curl(struct http_call *c, CURL *curl, CURLU *u, CURLcode rc, const char *detail)
{
    char *host = NULL, *port = NULL;
    long os_errno = 0;
    enum http_client_error e;

    if (c->why != NULL)
        return http_fail(c, HTTP_CLIENT_ERR_RESPONSE, "%s", c->why);
    switch (rc) {
    case CURLE_SSL_CERTPROBLEM:
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "cannot use the client certificate %s: %s",
                         c->req->cert_file ? c->req->cert_file : "", detail);
    case CURLE_ABORTED_BY_CALLBACK:
        return http_fail(c, HTTP_CLIENT_ERR_CANCELLED, "cancelled");
    case CURLE_WRITE_ERROR:
        if (c->stopped)
            return http_fail(c, HTTP_CLIENT_ERR_CANCELLED, "stream stopped");
        return http_fail(c, HTTP_CLIENT_ERR_RESPONSE, "%s", detail);
    case CURLE_OPERATION_TIMEDOUT:
        return http_fail_timeout(c, curl);
    case CURLE_PEER_FAILED_VERIFICATION:
        return http_fail_verify(c, curl, detail);
    case CURLE_SSL_CACERT_BADFILE:
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "cannot load CA certificates from %s",
                         c->req->ca_file ? c->req->ca_file : "the system store");
    case CURLE_SSL_CONNECT_ERROR:
        return http_fail(c, HTTP_CLIENT_ERR_TLS, "TLS handshake failed: %s", detail);
    case CURLE_RECV_ERROR:
        /* TLS 1.3: a server that refuses the client certificate says so
         * with an alert after the handshake, at the first read */
        if (c->https && strstr(detail, "alert") != NULL)
            return http_fail(c, HTTP_CLIENT_ERR_TLS, "TLS: the server refused the connection: %s", detail);
        return http_fail(c, HTTP_CLIENT_ERR_RESPONSE, "%s", detail);
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return http_fail(c, HTTP_CLIENT_ERR_CONNECT, "%s", detail);
    case CURLE_COULDNT_CONNECT:
        curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &os_errno);
        curl_url_get(u, CURLUPART_HOST, &host, 0);
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
        e = http_fail(c, HTTP_CLIENT_ERR_CONNECT, "cannot connect to %s:%s: %s", host ? host : "?", port ? port : "?",
                      os_errno ? strerror((int)os_errno) : detail);
        curl_free(host);
        curl_free(port);
        return e;
    case CURLE_FILESIZE_EXCEEDED:
        return http_fail(c, HTTP_CLIENT_ERR_RESPONSE, "response body exceeds %zu bytes", c->max_body);
    case CURLE_GOT_NOTHING:
        return http_fail(c, HTTP_CLIENT_ERR_RESPONSE, "connection closed without a response");
    case CURLE_WEIRD_SERVER_REPLY:
        return http_fail(c, HTTP_CLIENT_ERR_RESPONSE, "malformed response: %s", detail);
    case CURLE_PARTIAL_FILE:
        return http_fail(c, HTTP_CLIENT_ERR_RESPONSE, "connection closed before the end of the body (%s)", detail);
    default:
        return http_fail(c, HTTP_CLIENT_ERR_RESPONSE, "%s", detail);
    }
}

#define HTTP_SET(opt, val)                                                                                             \
    do {                                                                                                               \
        if (rc == CURLE_OK)                                                                                            \
            rc = curl_easy_setopt(curl, opt, val);                                                                     \
    } while (0)

/* Sets the policy of http_client.h: schemes, redirects, HTTP/1.1,
 * timeouts, TLS and trust, proxies. ca holds the bytes of req->ca_file
 * (libcurl copies them). Returns CURLE_OK or the first option libcurl
 * refused. */
static CURLcode http_set_policy(CURL *curl, const struct http_request *req, const char *ca, size_t ca_len,
                                const struct curl_blob *cert, const struct curl_blob *key)
{
    struct curl_blob ca_blob = {.data = (void *)ca, .len = ca_len, .flags = CURL_BLOB_COPY};
    long total, connect;
    CURLcode rc = CURLE_OK;

    http_timeouts(req, &total, &connect);
    HTTP_SET(CURLOPT_PROTOCOLS_STR, req->allow_http ? "http,https" : "https");
    HTTP_SET(CURLOPT_FOLLOWLOCATION, 0L);
    HTTP_SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    HTTP_SET(CURLOPT_NOSIGNAL, 1L);
    HTTP_SET(CURLOPT_TIMEOUT_MS, total);
    HTTP_SET(CURLOPT_CONNECTTIMEOUT_MS, connect);
    HTTP_SET(CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    HTTP_SET(CURLOPT_SSL_VERIFYPEER, 1L);
    HTTP_SET(CURLOPT_SSL_VERIFYHOST, 2L);
    HTTP_SET(CURLOPT_SSL_OPTIONS, (long)CURLSSLOPT_NO_PARTIALCHAIN);
    HTTP_SET(CURLOPT_CAINFO, (char *)NULL);
    HTTP_SET(CURLOPT_CAPATH, (char *)NULL);
    if (ca != NULL)
        HTTP_SET(CURLOPT_CAINFO_BLOB, &ca_blob);
    else
        HTTP_SET(CURLOPT_SSL_CTX_FUNCTION, http_on_ssl_ctx);
    if (!req->use_env_proxy)
        HTTP_SET(CURLOPT_PROXY, ""); /* "": no proxy, whatever the environment says */
    if (cert != NULL) {
        HTTP_SET(CURLOPT_SSLCERTTYPE, "PEM");
        HTTP_SET(CURLOPT_SSLCERT_BLOB, cert);
        HTTP_SET(CURLOPT_SSLKEYTYPE, "PEM");
        HTTP_SET(CURLOPT_SSLKEY_BLOB, key);
    }
    return rc;
}

/* Sets what this request sends and where the response goes. */
static CURLcode http_set_exchange(CURL *curl, struct http_call *c, CURLU *u, struct curl_slist *fields, char *errbuf)
{
    const struct http_request *req = c->req;
    CURLcode rc = CURLE_OK;
    char provider[160];

    HTTP_SET(CURLOPT_CURLU, u);
    HTTP_SET(CURLOPT_USERAGENT, "oidc-discovery/" OIDC_VERSION);
    HTTP_SET(CURLOPT_HTTPHEADER, fields);
    HTTP_SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_body);
    HTTP_SET(CURLOPT_HEADERFUNCTION, http_on_header);
    HTTP_SET(CURLOPT_HEADERDATA, c);
    HTTP_SET(CURLOPT_WRITEFUNCTION, http_on_body);
    HTTP_SET(CURLOPT_WRITEDATA, c);
    HTTP_SET(CURLOPT_ERRORBUFFER, errbuf);
    if (req->method == HTTP_POST) {
        HTTP_SET(CURLOPT_POST, 1L);
        HTTP_SET(CURLOPT_POSTFIELDS, c->upload != NULL ? (const void *)c->upload : "");
        HTTP_SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->upload_left);
    } else if (req->method == HTTP_PUT) {
        HTTP_SET(CURLOPT_UPLOAD, 1L);
        HTTP_SET(CURLOPT_READFUNCTION, http_on_upload);
        HTTP_SET(CURLOPT_READDATA, c);
        HTTP_SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->upload_left);
    }
    if (req->cancel != NULL) {
        HTTP_SET(CURLOPT_NOPROGRESS, 0L);
        HTTP_SET(CURLOPT_XFERINFOFUNCTION, http_on_progress);
        HTTP_SET(CURLOPT_XFERINFODATA, c);
    }
    if (req->sigv4 != NULL) {
        snprintf(provider, sizeof(provider), "aws:amz:%s:%s", req->sigv4->region, req->sigv4->service);
        HTTP_SET(CURLOPT_AWS_SIGV4, provider); /* libcurl copies strings */
        HTTP_SET(CURLOPT_USERNAME, req->sigv4->access_key_id);
        HTTP_SET(CURLOPT_PASSWORD, req->sigv4->secret_key);
    }
    return rc;
}

/* Checks the SigV4 parameters: libcurl reads region and service with
 * sscanf up to a colon, and silently cuts them at 64 characters. */
static enum http_client_error http_check_sigv4(struct http_call *c)
{
    const struct http_sigv4 *s = c->req->sigv4;
    const char *const parts[] = {s->region, s->service};

    for (size_t i = 0; i < 2; i++)
        if (parts[i] == NULL || parts[i][0] == '\0' || strlen(parts[i]) > 64 ||
            strspn(parts[i], "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(parts[i]))
            return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "SigV4 %s must be 1 to 64 of a-z, 0-9 and '-'",
                             i == 0 ? "region" : "service");
    if (s->access_key_id == NULL || s->secret_key == NULL || s->access_key_id[0] == '\0')
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "SigV4 needs an access key id and a secret key");
    return HTTP_CLIENT_OK;
}

/* Wipes and frees the client certificate's and key's bytes (libcurl
 * copied them). */
static void http_free_identity(struct curl_blob *cert, struct curl_blob *key)
{
    file_free(cert->data, cert->len);
    file_free(key->data, key->len);
    cert->data = key->data = NULL;
}

/* Reads the client certificate and key files, with file_read, into blobs
 * libcurl copies (CURL_BLOB_COPY): libcurl would open the paths itself,
 * and wait forever on a FIFO put there. */
static enum http_client_error http_client_identity(struct http_call *c, struct curl_blob *cert, struct curl_blob *key)
{
    const struct http_request *req = c->req;
    char why[1024];
    size_t len = 0;

    if (req->cert_file == NULL && req->key_file == NULL)
        return HTTP_CLIENT_OK;
    if (req->cert_file == NULL || req->key_file == NULL)
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "a client certificate needs both its file and its key's");
    if ((cert->data = file_read(req->cert_file, HTTP_CLIENT_CA_MAX, &len, NULL, why, sizeof(why))) == NULL)
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "cannot load the client certificate from %s", why);
    cert->len = len;
    cert->flags = CURL_BLOB_COPY;
    if ((key->data = file_read(req->key_file, HTTP_CLIENT_CA_MAX, &len, NULL, why, sizeof(why))) == NULL)
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "cannot load the client key from %s", why);
    key->len = len;
    key->flags = CURL_BLOB_COPY;
    return HTTP_CLIENT_OK;
}

/* Runs the transfer once the request passed its checks. The CA file is
 * read here, with file_read, and handed to libcurl as bytes: libcurl
 * would open the path itself, and wait forever on a FIFO put there. */
/* A libcurl handle kept between requests: it holds the open connection
 * (and its TLS session), which libcurl reuses when the next request's host
 * and TLS options match. */
struct http_client_conn {
    CURL *curl;
};

struct http_client_conn *http_client_conn_new(void)
{
    return calloc(1, sizeof(struct http_client_conn));
}

void http_client_conn_free(struct http_client_conn *conn)
{
    if (conn == NULL)
        return;
    if (conn->curl != NULL)
        curl_easy_cleanup(conn->curl);
    free(conn);
}

/* The handle for a request: the kept one (its options cleared, its
 * connection kept) or a new one. */
static CURL *http_handle(const struct http_request *req)
{
    if (req->conn == NULL)
        return curl_easy_init();
    if (req->conn->curl == NULL)
        req->conn->curl = curl_easy_init();
    else
        curl_easy_reset(req->conn->curl);
    return req->conn->curl;
}

/* Done with a request's handle: a kept one forgets the request's options
 * (pointers into this call's stack) and keeps its connection; one of its
 * own is closed. broken: the handle is not to be used again. */
static void http_handle_done(const struct http_request *req, CURL *curl, int broken)
{
    if (req->conn == NULL) {
        curl_easy_cleanup(curl);
    } else if (broken) {
        curl_easy_cleanup(curl);
        req->conn->curl = NULL;
    } else {
        curl_easy_reset(curl);
    }
}

static enum http_client_error http_perform(struct http_call *c, CURLU *u, struct curl_slist *fields)
{
    char errbuf[CURL_ERROR_SIZE] = "", detail[CURL_ERROR_SIZE + 4], why[1024], *ca = NULL;
    struct curl_blob cert = {0}, key = {0};
    CURL *curl = NULL;
    enum http_client_error e = HTTP_CLIENT_OK;
    long status = 0;
    size_t ca_len = 0;
    CURLcode rc;

    if (c->req->ca_file != NULL &&
        (ca = file_read(c->req->ca_file, HTTP_CLIENT_CA_MAX, &ca_len, NULL, why, sizeof(why))) == NULL)
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "cannot load CA certificates from %s", why);
    if ((e = http_client_identity(c, &cert, &key)) != HTTP_CLIENT_OK || (curl = http_handle(c->req)) == NULL) {
        free(ca);
        http_free_identity(&cert, &key);
        return e != HTTP_CLIENT_OK ? e : http_fail(c, HTTP_CLIENT_ERR_REQUEST, "cannot set up libcurl");
    }
    rc = http_set_policy(curl, c->req, ca, ca_len, cert.data ? &cert : NULL, &key);
    free(ca); /* libcurl keeps its own copy */
    http_free_identity(&cert, &key);
    c->curl = curl;
    if (rc != CURLE_OK || (rc = http_set_exchange(curl, c, u, fields, errbuf)) != CURLE_OK) {
        http_handle_done(c->req, curl, 1);
        return http_fail(c, HTTP_CLIENT_ERR_REQUEST, "libcurl refused an option: %s", curl_easy_strerror(rc));
    }
    rc = curl_easy_perform(curl);
    if (rc != CURLE_OK) {
        printable_copy(errbuf[0] ? errbuf : curl_easy_strerror(rc), detail, CURL_ERROR_SIZE - 1);
        redact_url_parts_in(detail, c->req->url); /* should libcurl ever quote the URL */
        e = http_fail_curl(c, curl, u, rc, detail);
    } else {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        c->res->status = (int)status;
    }
    http_handle_done(c->req, curl, 0);
    return e;
}

/* Wipes and frees the request's fields: one may hold a bearer token. */
static void http_free_fields(struct curl_slist *fields)
{
    for (struct curl_slist *l = fields; l != NULL; l = l->next)
        OPENSSL_cleanse(l->data, strlen(l->data));
    curl_slist_free_all(fields);
}

enum http_client_error http_client_fetch(const struct http_request *req, struct http_response *res, char *err,
                                         size_t errlen)
{
    struct http_call call = {.req = req, .res = res, .err = err, .errlen = errlen};
    struct curl_slist *fields = NULL;
    CURLU *u = NULL;
    enum http_client_error e;

    memset(res, 0, sizeof(*res));
    redact_url(req->url, call.shown, HTTP_SHOW_MAX);
    call.method = http_method_name(req->method);
    call.max_body = req->max_body == 0             ? HTTP_CLIENT_BODY_MAX
                    : req->max_body < SIZE_MAX / 2 ? req->max_body
                                                   : SIZE_MAX / 2;
    if (req->method != HTTP_GET) {
        call.upload = req->body;
        call.upload_left = req->body != NULL ? req->body_len : 0;
    }
    pthread_once(&http_once, http_global_init);
    if (http_init_rc != CURLE_OK)
        e = http_fail(&call, HTTP_CLIENT_ERR_REQUEST, "cannot initialise libcurl: %s",
                      curl_easy_strerror(http_init_rc));
    else if (req->cancel != NULL && atomic_load(req->cancel))
        e = http_fail(&call, HTTP_CLIENT_ERR_CANCELLED, "cancelled");
    else if ((e = http_check_url(&call, &u)) == HTTP_CLIENT_OK &&
             (req->sigv4 == NULL || (e = http_check_sigv4(&call)) == HTTP_CLIENT_OK) &&
             (e = http_fields(&call, &fields)) == HTTP_CLIENT_OK)
        e = http_perform(&call, u, fields);
    http_free_fields(fields);
    curl_url_cleanup(u);
    if (e == HTTP_CLIENT_OK && res->body == NULL && (res->body = calloc(1, 1)) == NULL)
        e = http_fail(&call, HTTP_CLIENT_ERR_RESPONSE, "out of memory");
    if (e != HTTP_CLIENT_OK)
        http_response_free(res);
    return e;
}

const char *http_response_header(const struct http_response *res, const char *name)
{
    for (size_t i = 0; i < res->nheaders; i++)
        if (strcasecmp(res->headers[i].name, name) == 0)
            return res->headers[i].value;
    return NULL;
}

int http_client_status_error(const struct http_request *req, const struct http_response *res, char *err, size_t errlen)
{
    char shown[HTTP_SHOW_MAX + 4], location[HTTP_SHOW_MAX + 4];
    const char *to = http_response_header(res, "Location");
    int n = snprintf(err, errlen, "%s %s: HTTP %d%s%s", http_method_name(req->method),
                     redact_url(req->url, shown, HTTP_SHOW_MAX), res->status, res->reason[0] ? " " : "", res->reason);

    if (res->status >= 300 && res->status < 400 && n >= 0 && (size_t)n < errlen)
        snprintf(err + n, errlen - (size_t)n, " (redirects are not followed%s%s)", to ? "; Location: " : "",
                 to ? redact_url(to, location, HTTP_SHOW_MAX) : "");
    return -1;
}

void http_response_free(struct http_response *res)
{
    http_clear_headers(res);
    free(res->body);
    memset(res, 0, sizeof(*res));
}
