/*
 * Unit tests for util/http_client: the policy (schemes, redirects, caps,
 * timeouts, proxies, TLS verification), what a response carries, and what
 * a request sends (headers, bearer token, PUT body, SigV4), against a
 * canned server on 127.0.0.1 that each test starts on a thread: it reads
 * one request per connection, records it, and writes the bytes the test
 * chose.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "test_support.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/http_client.h"
#include "util/printable.h"
#include "util/redact.h"

TestSuite(http_client, .fini = leak_check);

#define REQUEST_MAX (128 * 1024)

/* A canned server: one thread, one connection at a time. */
struct canned {
    int fd; /* listening */
    int port;
    pthread_t thread;
    atomic_int stop;
    const char *response; /* written after the request, then the connection closes */
    size_t response_len;
    int hang_ms;                   /* instead: say nothing for this long (or until the client leaves) */
    int head_only;                 /* instead: read the request head, then hang up */
    SSL_CTX *tls;                  /* speak TLS with this, or NULL */
    char request[REQUEST_MAX + 1]; /* the last request: head and body */
    size_t request_len;
    atomic_int connections;
};

/* Reads the request head, answers "Expect: 100-continue", then reads the
 * body Content-Length announces. Returns 0, or -1 when the client left. */
static int canned_read(struct canned *s, int fd, SSL *ssl)
{
    char *head_end = NULL; /* the body starts 4 bytes after it */
    size_t body = 0;       /* bytes of it */

    s->request_len = 0;
    for (;;) {
        if (head_end != NULL && s->request_len >= (size_t)(head_end + 4 - s->request) + body)
            return 0;
        int n = ssl ? SSL_read(ssl, s->request + s->request_len, (int)(REQUEST_MAX - s->request_len))
                    : (int)read(fd, s->request + s->request_len, REQUEST_MAX - s->request_len);
        if (n <= 0)
            return -1;
        s->request_len += (size_t)n;
        s->request[s->request_len] = '\0';
        if (head_end == NULL && (head_end = strstr(s->request, "\r\n\r\n")) != NULL) {
            if (s->head_only)
                return 0;
            const char *cl = strcasestr(s->request, "\r\nContent-Length:");
            body = cl != NULL && cl < head_end ? strtoul(cl + 17, NULL, 10) : 0;
            if (strcasestr(s->request, "\r\nExpect: 100-continue") != NULL) {
                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                if (ssl ? SSL_write(ssl, cont, sizeof(cont) - 1) <= 0 : write(fd, cont, sizeof(cont) - 1) <= 0)
                    return -1;
            }
        }
    }
}

/* Reads and ignores what the client sends, saying nothing, until it
 * leaves or hang_ms pass. */
static void canned_hang(struct canned *s, int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char buf[4096];

    while (poll(&p, 1, s->hang_ms) > 0 && read(fd, buf, sizeof(buf)) > 0)
        ;
}

/* Serves one accepted connection as configured. */
static void canned_serve(struct canned *s, int fd)
{
    SSL *ssl = NULL;

    if (s->tls != NULL) {
        ssl = SSL_new(s->tls);
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) != 1)
            goto out;
    }
    if (s->hang_ms > 0) {
        canned_hang(s, fd);
        goto out;
    }
    if (canned_read(s, fd, ssl) != 0 || s->head_only)
        goto out;
    for (size_t off = 0; off < s->response_len;) {
        int n = ssl ? SSL_write(ssl, s->response + off, (int)(s->response_len - off))
                    : (int)write(fd, s->response + off, s->response_len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    if (ssl != NULL)
        SSL_shutdown(ssl);
out:
    SSL_free(ssl);
    close(fd);
}

static void *canned_main(void *arg)
{
    struct canned *s = arg;
    sigset_t pipe;

    /* A client that hangs up must not kill the test with SIGPIPE while
     * this thread writes; the client's own protection is under test. */
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept(s->fd, NULL, NULL);
        if (fd < 0)
            continue;
        atomic_fetch_add(&s->connections, 1);
        canned_serve(s, fd);
    }
    return NULL;
}

/* A listening socket on 127.0.0.1 and a port the kernel picked. */
static int listen_any(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0, "bind: %s", strerror(errno));
    cr_assert_eq(listen(fd, 8), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* Starts a server that answers every request with response. */
static struct canned *canned_start(const char *response)
{
    struct canned *s = calloc(1, sizeof(*s));

    cr_assert_not_null(s);
    s->response = response;
    s->response_len = response ? strlen(response) : 0;
    s->fd = listen_any(&s->port);
    return s;
}

static void canned_run(struct canned *s)
{
    cr_assert_eq(pthread_create(&s->thread, NULL, canned_main, s), 0);
}

static void canned_stop(struct canned *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    close(s->fd);
    SSL_CTX_free(s->tls);
    free(s);
}

/* "http://127.0.0.1:<port><path>" */
static const char *canned_url(const struct canned *s, const char *scheme, const char *path)
{
    static char url[256];
    snprintf(url, sizeof(url), "%s://127.0.0.1:%d%s", scheme, s->port, path);
    return url;
}

/* An error's name, for the failure messages below. */
static const char *error_name(enum http_client_error e)
{
    static const char *const names[] = {"ok",         "request", "connect",  "tls",
                                        "tls_verify", "timeout", "response", "cancelled"};

    return (size_t)e < sizeof(names) / sizeof(names[0]) ? names[e] : "unknown";
}

/* GETs path from s over plain http; expects a response. */
static void get_ok(struct canned *s, const char *path, struct http_response *res)
{
    char err[512] = "";
    const struct http_request req = {.url = canned_url(s, "http", path), .allow_http = 1};
    enum http_client_error e = http_client_fetch(&req, res, err, sizeof(err));
    cr_assert_eq(e, HTTP_CLIENT_OK, "%s: %s", error_name(e), err);
}

/* Runs req expecting error want with a message that names the request
 * and contains part. */
static void expect_error(const struct http_request *req, enum http_client_error want, const char *part)
{
    struct http_response res;
    char err[512] = "", prefix[300], shown[260];
    enum http_client_error e = http_client_fetch(req, &res, err, sizeof(err));

    cr_expect_eq(e, want, "got %s, want %s: %s", error_name(e), error_name(want), err);
    snprintf(prefix, sizeof(prefix), "%s %s: ", req->method == HTTP_PUT ? "PUT" : "GET",
             redact_url(req->url, shown, 256));
    cr_expect(strncmp(err, prefix, strlen(prefix)) == 0, "\"%s\" does not start with \"%s\"", err, prefix);
    cr_expect(strstr(err, part) != NULL, "\"%s\" does not contain \"%s\"", err, part);
    cr_expect_null(res.body);
    cr_expect_eq(res.nheaders, 0);
    http_response_free(&res);
}

/* ------------------------------------------------------------------------ */
/* responses                                                                  */

Test(http_client, status_headers_and_body)
{
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\n"
                                    "Content-Type: application/jwk-set+json\r\n"
                                    "cache-control: max-age=60\r\n"
                                    "ETag:   \"abc\"  \r\n"
                                    "Cache-Control: public\r\n"
                                    "Content-Length: 11\r\n\r\n"
                                    "{\"keys\":[]}");
    struct http_response res;

    canned_run(s);
    get_ok(s, "/openid/v1/jwks?x=1#frag", &res);
    cr_expect_eq(res.status, 200);
    cr_expect_str_eq(res.reason, "OK");
    cr_expect_eq(res.body_len, 11);
    cr_expect_str_eq(res.body, "{\"keys\":[]}");
    cr_expect_str_eq(http_response_header(&res, "content-type"), "application/jwk-set+json");
    cr_expect_str_eq(http_response_header(&res, "ETAG"), "\"abc\"");
    cr_expect_str_eq(http_response_header(&res, "Cache-Control"), "max-age=60, public");
    cr_expect_null(http_response_header(&res, "Last-Modified"));
    cr_expect_eq(res.nheaders, 4);
    cr_expect_str_eq(res.headers[1].name, "cache-control");
    /* the request: path and query without the fragment, our User-Agent */
    cr_expect(strncmp(s->request, "GET /openid/v1/jwks?x=1 HTTP/1.1\r\n", 34) == 0, "%s", s->request);
    cr_expect(strstr(s->request, "\r\nUser-Agent: oidc-discovery/") != NULL, "%s", s->request);
    cr_expect(strstr(s->request, "frag") == NULL);
    http_response_free(&res);
    canned_stop(s);
}

/* Any status comes back as a response; the caller decides. */
Test(http_client, other_status_is_a_response)
{
    struct canned *s = canned_start("HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope");
    struct http_response res;
    char err[512];

    canned_run(s);
    get_ok(s, "/missing", &res);
    cr_expect_eq(res.status, 404);
    cr_expect_str_eq(res.body, "nope");
    const struct http_request req = {.url = canned_url(s, "http", "/missing")};
    cr_expect_eq(http_client_status_error(&req, &res, err, sizeof(err)), -1);
    char want[300];
    snprintf(want, sizeof(want), "GET %s: HTTP 404 Not Found", canned_url(s, "http", "/missing"));
    cr_expect_str_eq(err, want);
    http_response_free(&res);
    canned_stop(s);
}

/* A conditional GET: If-None-Match goes out, 304 and its ETag come back. */
Test(http_client, conditional_get)
{
    struct canned *s = canned_start("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n");
    const char *const headers[] = {"If-None-Match: \"v1\"", "Accept: application/json", NULL};
    struct http_response res;
    char err[512] = "";

    canned_run(s);
    const struct http_request req = {.url = canned_url(s, "http", "/x"), .allow_http = 1, .headers = headers};
    cr_assert_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect_eq(res.status, 304);
    cr_expect_eq(res.body_len, 0);
    cr_expect_str_eq(res.body, "");
    cr_expect_str_eq(http_response_header(&res, "ETag"), "\"v1\"");
    cr_expect(strstr(s->request, "\r\nIf-None-Match: \"v1\"\r\n") != NULL, "%s", s->request);
    cr_expect(strstr(s->request, "\r\nAccept: application/json\r\n") != NULL, "%s", s->request);
    http_response_free(&res);
    canned_stop(s);
}

/* An interim 100 response is passed over, with its fields. */
Test(http_client, interim_response_skipped)
{
    struct canned *s = canned_start("HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n"
                                    "HTTP/1.1 200 Fine\r\nX-Final: 2\r\nContent-Length: 2\r\n\r\nok");
    struct http_response res;

    canned_run(s);
    get_ok(s, "/", &res);
    cr_expect_eq(res.status, 200);
    cr_expect_str_eq(res.reason, "Fine");
    cr_expect_null(http_response_header(&res, "X-Interim"));
    cr_expect_str_eq(http_response_header(&res, "X-Final"), "2");
    http_response_free(&res);
    canned_stop(s);
}

/* Bodies framed every way arrive whole: length, chunked (with a trailer,
 * which is not a header), and until the connection closes. */
Test(http_client, body_framings)
{
    static const char *const responses[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhe\r\n3;ext=1\r\nllo\r\n0\r\nX-Trailer: t\r\n\r\n",
        "HTTP/1.0 200 OK\r\n\r\nhello",
    };

    for (size_t i = 0; i < COUNT(responses); i++) {
        struct canned *s = canned_start(responses[i]);
        struct http_response res;
        canned_run(s);
        get_ok(s, "/", &res);
        cr_expect_str_eq(res.body, "hello", "response %zu", i);
        cr_expect_null(http_response_header(&res, "X-Trailer"));
        http_response_free(&res);
        canned_stop(s);
    }
}

/* ------------------------------------------------------------------------ */
/* caps and refusals of responses                                             */

/* Parameters hold arrays, not pointers: criterion runs each in a new
 * process. */
struct refused_response {
    char response[128];
    size_t max_body;
    char why[64];
};

static struct refused_response refused_responses[] = {
    {"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n01234567890", 10, "response body exceeds 10 bytes"},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n01234567890\r\n0\r\n\r\n", 10,
     "response body exceeds 10 bytes"},
    {"HTTP/1.0 200 OK\r\n\r\n01234567890", 10, "response body exceeds 10 bytes"},
    {"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\nxx", 0,
     "unsupported Content-Encoding \"gzip\""},
    {"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\nxx", 0, "folded header line"},
    {"HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 2\r\n\r\nxx", 0, "malformed response: "},
    {"HTTP/1.1 200 OK\r\nX A: 1\r\nContent-Length: 2\r\n\r\nxx", 0, "malformed response: "},
    {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nxx", 0,
     "malformed response: two different Content-Length values"},
    {"HTTP/1.1 200 OK\r\nX-A: a\x01z\r\nContent-Length: 2\r\n\r\nxx", 0, "control character in a header"},
    {"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nshort", 0, "connection closed before the end of the body"},
    {"", 0, "connection closed without a response"},
};

ParameterizedTestParameters(http_client, refused)
{
    return cr_make_param_array(struct refused_response, refused_responses, COUNT(refused_responses));
}

ParameterizedTest(struct refused_response *r, http_client, refused)
{
    struct canned *s = canned_start(r->response);

    canned_run(s);
    const struct http_request req = {.url = canned_url(s, "http", "/doc"), .allow_http = 1, .max_body = r->max_body};
    expect_error(&req, HTTP_CLIENT_ERR_RESPONSE, r->why);
    canned_stop(s);
}

/* A body of exactly the cap is fine. */
Test(http_client, body_at_cap)
{
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789");
    struct http_response res;
    char err[512] = "";

    canned_run(s);
    const struct http_request req = {.url = canned_url(s, "http", "/"), .allow_http = 1, .max_body = 10};
    cr_assert_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect_str_eq(res.body, "0123456789");
    http_response_free(&res);
    canned_stop(s);
}

/* A response with fields many or long fields, each value width bytes. */
static char *many_fields(size_t fields, int width)
{
    char *response = malloc(fields * ((size_t)width + 32) + 128);
    size_t n = 0;

    cr_assert_not_null(response);
    n += (size_t)sprintf(response + n, "HTTP/1.1 200 OK\r\n");
    for (size_t i = 0; i < fields; i++)
        n += (size_t)sprintf(response + n, "X-Filler-%04zu: %0*d\r\n", i, width, 0);
    sprintf(response + n, "Content-Length: 2\r\n\r\nxx");
    return response;
}

/* The head of a response may not exceed HTTP_CLIENT_HEADER_MAX bytes, nor
 * hold more than 100 fields; 99 and a Content-Length are fine. */
Test(http_client, header_caps)
{
    const struct {
        size_t fields;
        int width;
        const char *why;
    } cases[] = {
        {HTTP_CLIENT_HEADER_MAX / 1000 + 2, 980, "response headers exceed 65536 bytes"},
        {101, 1, "response has more than 100 header fields"},
        {99, 1, NULL},
    };

    for (size_t i = 0; i < COUNT(cases); i++) {
        char *response = many_fields(cases[i].fields, cases[i].width);
        struct canned *s = canned_start(response);
        struct http_response res;
        canned_run(s);
        const struct http_request req = {.url = canned_url(s, "http", "/"), .allow_http = 1};
        if (cases[i].why != NULL) {
            expect_error(&req, HTTP_CLIENT_ERR_RESPONSE, cases[i].why);
        } else {
            get_ok(s, "/", &res);
            cr_expect_eq(res.nheaders, 100);
            http_response_free(&res);
        }
        canned_stop(s);
        free(response);
    }
}

/* Trailers of a chunked body are not header fields, even when the body is
 * empty. */
Test(http_client, trailers_are_not_fields)
{
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nETag: \"t\"\r\n\r\n");
    struct http_response res;

    canned_run(s);
    get_ok(s, "/", &res);
    cr_expect_str_eq(res.body, "");
    cr_expect_null(http_response_header(&res, "ETag"));
    cr_expect_str_eq(http_response_header(&res, "Transfer-Encoding"), "chunked");
    http_response_free(&res);
    canned_stop(s);
}

/* ------------------------------------------------------------------------ */
/* policy                                                                     */

/* Redirects come back as responses, never followed. */
Test(http_client, redirect_not_followed)
{
    struct canned *s = canned_start("HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n");
    struct http_response res;
    char err[512], want[400];

    canned_run(s);
    get_ok(s, "/start", &res);
    cr_expect_eq(res.status, 302);
    cr_expect_eq(atomic_load(&s->connections), 1);
    cr_expect(strncmp(s->request, "GET /start ", 11) == 0);
    const struct http_request req = {.url = canned_url(s, "http", "/start")};
    http_client_status_error(&req, &res, err, sizeof(err));
    snprintf(want, sizeof(want), "GET %s: HTTP 302 Found (redirects are not followed; Location: /elsewhere)", req.url);
    cr_expect_str_eq(err, want);
    http_response_free(&res);
    canned_stop(s);
}

/* A credential in a URL (an Azure SAS token in the query, a password in
 * the userinfo, a token in the fragment) never reaches a message: not for
 * a refused connection, not in a status error, not in a redirect's
 * Location, not for a URL refused before sending. */
Test(http_client, url_secrets_never_in_messages)
{
    static const char sas[] = "sv=2021-08-06&ss=b&srt=co&sp=rwc&se=2030-01-01T00:00:00Z&sig=SeCrEtSiGnAtUrE%2Bvalue%3D";
    struct canned *s = canned_start("HTTP/1.1 302 Found\r\nLocation: https://elsewhere.example/x?"
                                    "sig=LocationSecret123&sv=1\r\nContent-Length: 0\r\n\r\n");
    struct http_response res;
    char url[512], err[512] = "";
    int closed = s->port;

    canned_run(s);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/c/openid/v1/jwks?%s", s->port, sas);
    struct http_request req = {.url = url, .allow_http = 1, .method = HTTP_PUT, .body = "{}", .body_len = 2};
    cr_assert_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect_eq(res.status, 302);
    http_client_status_error(&req, &res, err, sizeof(err));
    cr_expect(strstr(err, "SeCrEt") == NULL && strstr(err, "LocationSecret") == NULL, "%s", err);
    cr_expect(strstr(err, "?<redacted: sv, ss, srt, sp, se, sig>") != NULL, "%s", err);
    cr_expect(strstr(err, "Location: https://elsewhere.example/x?<redacted: sig, sv>") != NULL, "%s", err);
    http_response_free(&res);
    canned_stop(s);

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/c/openid/v1/jwks?%s", closed, sas);
    cr_expect_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_ERR_CONNECT);
    cr_expect(strstr(err, "SeCrEt") == NULL, "%s", err);
    cr_expect(strstr(err, "/c/openid/v1/jwks?<redacted: sv, ss, srt, sp, se, sig>: ") != NULL, "%s", err);

    snprintf(url, sizeof(url), "http://user:SeCrEtPassword@127.0.0.1:%d/#SeCrEtFragment", closed);
    cr_expect_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_ERR_REQUEST);
    cr_expect(strstr(err, "SeCrEt") == NULL, "%s", err);
    cr_expect(strstr(err, "http://<redacted>@127.0.0.1:") != NULL, "%s", err);
}

/* URLs refused before anything is sent. */
struct refused_url {
    char url[64];
    int allow_http;
    char why[48];
};

static struct refused_url refused_urls[] = {
    {"http://127.0.0.1:%d/", 0, "not an https URL"},
    {"HTTP://127.0.0.1:%d/", 0, "not an https URL"},
    {"ftp://127.0.0.1:%d/", 1, "not an http or https URL"},
    {"file:///etc/passwd", 1, "not an http or https URL"},
    {"gopher://127.0.0.1:%d/", 1, "not"},
    {"http://user:pw@127.0.0.1:%d/", 1, "URL userinfo is not supported"},
    {"http://127.0.0.1:%d/a b", 1, "space, control or non-ASCII"},
    {"http://127.0.0.1:%d/\r\nX: y", 1, "space, control or non-ASCII"},
    {"http://127.0.0.1:%d/\xc3\xa9", 1, "space, control or non-ASCII"},
    {"127.0.0.1:%d/no-scheme", 1, "not a valid URL"},
    {"http://[::1:%d/", 1, "not a valid URL"},
    {"http://127.0.0.1:99999/", 1, "not a valid URL"},
};

ParameterizedTestParameters(http_client, refused_url)
{
    return cr_make_param_array(struct refused_url, refused_urls, COUNT(refused_urls));
}

ParameterizedTest(struct refused_url *u, http_client, refused_url)
{
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    char url[256];

    canned_run(s);
    snprintf(url, sizeof(url), u->url, s->port);
    const struct http_request req = {.url = url, .allow_http = u->allow_http};
    expect_error(&req, HTTP_CLIENT_ERR_REQUEST, u->why);
    cr_expect_eq(atomic_load(&s->connections), 0, "%s reached the server", url);
    canned_stop(s);
}

/* A header field cannot smuggle in another field. */
Test(http_client, header_injection_refused)
{
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    const char *const bad[][2] = {{"X-A: b\r\nX-Injected: 1", NULL}, {"X-A b", NULL}, {": b", NULL}, {"X-A: \n", NULL}};

    canned_run(s);
    for (size_t i = 0; i < COUNT(bad); i++) {
        const struct http_request req = {.url = canned_url(s, "http", "/"), .allow_http = 1, .headers = bad[i]};
        expect_error(&req, HTTP_CLIENT_ERR_REQUEST, "is not \"Name: value\"");
    }
    cr_expect_eq(atomic_load(&s->connections), 0);
    canned_stop(s);
}

/* A silent server: the whole-transfer timeout ends the wait and says at
 * which step. */
Test(http_client, timeout_waiting_for_response)
{
    struct canned *s = canned_start(NULL);
    struct timespec t0, t1;

    s->hang_ms = 10000;
    canned_run(s);
    const struct http_request req = {.url = canned_url(s, "http", "/slow"), .allow_http = 1, .timeout_ms = 300};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_error(&req, HTTP_CLIENT_ERR_TIMEOUT, "timed out after 300 ms waiting for the response");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_expect_lt(t1.tv_sec - t0.tv_sec, 9, "the timeout did not end the call");
    canned_stop(s);
}

/* Sets the flag it is given after 200 ms, as a stopping thread would. */
static void *cancel_later(void *arg)
{
    struct timespec pause = {.tv_nsec = 200 * 1000000L};

    nanosleep(&pause, NULL);
    atomic_store((atomic_int *)arg, 1);
    return NULL;
}

/* A cancelled request ends long before its timeout, as cancelled; one
 * cancelled before it starts is not sent at all. */
Test(http_client, cancel_ends_a_request)
{
    struct canned *s = canned_start(NULL);
    atomic_int cancel = 0;
    struct timespec t0, t1;
    pthread_t t;

    s->hang_ms = 10000;
    canned_run(s);
    const struct http_request req = {
        .url = canned_url(s, "http", "/slow"), .allow_http = 1, .timeout_ms = 9000, .cancel = &cancel};
    cr_assert_eq(pthread_create(&t, NULL, cancel_later, &cancel), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_error(&req, HTTP_CLIENT_ERR_CANCELLED, "cancelled");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(t, NULL);
    cr_expect_lt(t1.tv_sec - t0.tv_sec, 5, "the cancel did not end the call");
    cr_expect_eq(atomic_load(&s->connections), 1);
    expect_error(&req, HTTP_CLIENT_ERR_CANCELLED, "cancelled");
    cr_expect_eq(atomic_load(&s->connections), 1, "a cancelled request was sent");
    canned_stop(s);
}

/* A server that accepts but never completes the TLS handshake runs into
 * the connect timeout, which covers the handshake. */
Test(http_client, timeout_during_handshake)
{
    struct canned *s = canned_start(NULL);

    s->hang_ms = 10000;
    canned_run(s);
    const struct http_request req = {.url = canned_url(s, "https", "/"), .timeout_ms = 5000, .connect_timeout_ms = 250};
    expect_error(&req, HTTP_CLIENT_ERR_TIMEOUT, "timed out after 250 ms connecting (TCP and TLS handshake)");
    canned_stop(s);
}

Test(http_client, connection_refused)
{
    int port, fd = listen_any(&port);
    char url[64];

    close(fd);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
    const struct http_request req = {.url = url, .allow_http = 1};
    char want[80];
    snprintf(want, sizeof(want), "cannot connect to 127.0.0.1:%d: Connection refused", port);
    expect_error(&req, HTTP_CLIENT_ERR_CONNECT, want);
}

/* Proxies from the environment are used only when the request says so. */
Test(http_client, env_proxy_only_when_allowed)
{
    struct canned *direct = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\ndirect");
    struct canned *proxy = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nproxy");
    struct http_response res;
    char env[64], err[512] = "";

    canned_run(direct);
    canned_run(proxy);
    snprintf(env, sizeof(env), "http://127.0.0.1:%d", proxy->port);
    setenv("http_proxy", env, 1);
    setenv("all_proxy", env, 1);
    unsetenv("no_proxy");
    unsetenv("NO_PROXY");
    get_ok(direct, "/x", &res);
    cr_expect_str_eq(res.body, "direct");
    cr_expect_eq(atomic_load(&proxy->connections), 0);
    http_response_free(&res);

    const struct http_request req = {.url = "http://192.0.2.1/x", .allow_http = 1, .use_env_proxy = 1};
    cr_assert_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect_str_eq(res.body, "proxy");
    cr_expect(strncmp(proxy->request, "GET http://192.0.2.1/x HTTP/1.1\r\n", 33) == 0, "%s", proxy->request);
    http_response_free(&res);
    unsetenv("http_proxy");
    unsetenv("all_proxy");
    canned_stop(direct);
    canned_stop(proxy);
}

/* ------------------------------------------------------------------------ */
/* what a request sends                                                       */

static char tmpdir[64];

static void tmp_setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/oidc-http-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void tmp_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    cr_expect_eq(system(cmd), 0);
    leak_check();
}

TestSuite(http_client_files, .init = tmp_setup, .fini = tmp_teardown);

static const char *tmp_path(const char *name)
{
    static char path[128];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    return path;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

/* The bearer token is read at each call, so a rotated one is used. */
Test(http_client_files, bearer_token_file)
{
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    char path[128], err[512] = "";
    struct http_response res;

    canned_run(s);
    snprintf(path, sizeof(path), "%s", tmp_path("token"));
    write_file(path, "  eyJhbGciOiJSUzI1NiJ9.first\n");
    const struct http_request req = {.url = canned_url(s, "http", "/"), .allow_http = 1, .bearer_file = path};
    cr_assert_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect(strstr(s->request, "\r\nAuthorization: Bearer eyJhbGciOiJSUzI1NiJ9.first\r\n") != NULL, "%s", s->request);
    http_response_free(&res);
    write_file(path, "second");
    cr_assert_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect(strstr(s->request, "\r\nAuthorization: Bearer second\r\n") != NULL, "%s", s->request);
    http_response_free(&res);
    canned_stop(s);
}

Test(http_client_files, bearer_token_file_refused)
{
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    const char *const cases[][2] = {
        {"", "is empty"},
        {"\n\n", "is empty"},
        {"two words", "holds a character a token cannot have"},
        {"tok\r\nX-Injected: 1", "holds a character a token cannot have"},
    };
    char path[128], want[256];

    canned_run(s);
    snprintf(path, sizeof(path), "%s", tmp_path("token"));
    for (size_t i = 0; i < COUNT(cases); i++) {
        write_file(path, cases[i][0]);
        const struct http_request req = {.url = canned_url(s, "http", "/"), .allow_http = 1, .bearer_file = path};
        snprintf(want, sizeof(want), "bearer token file %s %s", path, cases[i][1]);
        expect_error(&req, HTTP_CLIENT_ERR_REQUEST, want);
    }
    snprintf(path, sizeof(path), "%s", tmp_path("missing"));
    const struct http_request req = {.url = canned_url(s, "http", "/"), .allow_http = 1, .bearer_file = path};
    snprintf(want, sizeof(want), "bearer token file %s: cannot read: No such file or directory", path);
    expect_error(&req, HTTP_CLIENT_ERR_REQUEST, want);
    cr_expect_eq(atomic_load(&s->connections), 0);
    canned_stop(s);
}

/* A PUT sends its body with its length and the caller's fields. */
Test(http_client, put_body)
{
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nETag: \"e1\"\r\nContent-Length: 0\r\n\r\n");
    const char *const headers[] = {"Content-Type: application/json", NULL};
    struct http_response res;
    char err[512] = "";

    canned_run(s);
    const struct http_request req = {.method = HTTP_PUT,
                                     .url = canned_url(s, "http", "/bucket/jwks"),
                                     .allow_http = 1,
                                     .headers = headers,
                                     .body = "{\"keys\":[]}",
                                     .body_len = 11};
    cr_assert_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect_eq(res.status, 200);
    cr_expect_str_eq(http_response_header(&res, "ETag"), "\"e1\"");
    cr_expect(strncmp(s->request, "PUT /bucket/jwks HTTP/1.1\r\n", 27) == 0, "%s", s->request);
    cr_expect(strstr(s->request, "\r\nContent-Length: 11\r\n") != NULL, "%s", s->request);
    cr_expect(strstr(s->request, "\r\nContent-Type: application/json\r\n") != NULL, "%s", s->request);
    cr_expect(strstr(s->request, "\r\n\r\n{\"keys\":[]}") != NULL, "%s", s->request);
    http_response_free(&res);
    canned_stop(s);
}

/* The value of field name in the recorded request head, copied. */
static const char *request_field(const struct canned *s, const char *name, char *out, size_t outlen)
{
    char key[64];
    snprintf(key, sizeof(key), "\r\n%s: ", name);
    const char *at = strcasestr(s->request, key);
    cr_assert_not_null(at, "no %s in %s", name, s->request);
    at += strlen(key);
    size_t n = strcspn(at, "\r");
    cr_assert_lt(n, outlen);
    memcpy(out, at, n);
    out[n] = '\0';
    return out;
}

/* AWS's own examples of signed S3 requests (Signature Version 4, "Examples:
 * Signature Calculations in AWS Signature Version 4", GET Object and PUT
 * Object): the same requests must carry the same signatures. */
struct sigv4_case {
    enum http_method method;
    char path[32];
    char headers[4][48];
    char body[32];
    char authorization[256];
};

static struct sigv4_case sigv4_cases[] = {
    {HTTP_GET,
     "/test.txt",
     {"Host: examplebucket.s3.amazonaws.com", "Range: bytes=0-9", "x-amz-date: 20130524T000000Z"},
     "",
     "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
     "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
     "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
    {HTTP_PUT,
     "/test%24file.text",
     {"Host: examplebucket.s3.amazonaws.com", "Date: Fri, 24 May 2013 00:00:00 GMT", "x-amz-date: 20130524T000000Z",
      "x-amz-storage-class: REDUCED_REDUNDANCY"},
     "Welcome to Amazon S3.",
     "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
     "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
     "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
};

ParameterizedTestParameters(http_client, sigv4_aws_examples)
{
    return cr_make_param_array(struct sigv4_case, sigv4_cases, COUNT(sigv4_cases));
}

ParameterizedTest(struct sigv4_case *c, http_client, sigv4_aws_examples)
{
    static const struct http_sigv4 creds = {.region = "us-east-1",
                                            .service = "s3",
                                            .access_key_id = "AKIAIOSFODNN7EXAMPLE",
                                            .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    const char *headers[5] = {0};
    struct http_response res;
    char err[512] = "", value[512];

    for (size_t i = 0; i < COUNT(c->headers) && c->headers[i][0]; i++)
        headers[i] = c->headers[i];
    canned_run(s);
    const struct http_request req = {.method = c->method,
                                     .url = canned_url(s, "http", c->path),
                                     .allow_http = 1,
                                     .headers = headers,
                                     .sigv4 = &creds,
                                     .body = c->body,
                                     .body_len = strlen(c->body)};
    cr_assert_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect_str_eq(request_field(s, "Authorization", value, sizeof(value)), c->authorization);
    http_response_free(&res);
    canned_stop(s);
}

/* A session token goes out as x-amz-security-token, signed. */
Test(http_client, sigv4_session_token)
{
    static const struct http_sigv4 creds = {.region = "eu-west-1",
                                            .service = "s3",
                                            .access_key_id = "AKID",
                                            .secret_key = "secret",
                                            .session_token = "tok"};
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    struct http_response res;
    char err[512] = "", value[512];

    canned_run(s);
    const struct http_request req = {.url = canned_url(s, "http", "/o"), .allow_http = 1, .sigv4 = &creds};
    cr_assert_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect_str_eq(request_field(s, "x-amz-security-token", value, sizeof(value)), "tok");
    request_field(s, "Authorization", value, sizeof(value));
    cr_expect(strstr(value, "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") != NULL, "%s",
              value);
    cr_expect(strstr(value, "/eu-west-1/s3/aws4_request") != NULL, "%s", value);
    http_response_free(&res);

    const struct http_sigv4 bad = {.region = "eu:west", .service = "s3", .access_key_id = "A", .secret_key = "s"};
    const struct http_request bad_req = {.url = canned_url(s, "http", "/o"), .allow_http = 1, .sigv4 = &bad};
    expect_error(&bad_req, HTTP_CLIENT_ERR_REQUEST, "SigV4 region must be");
    canned_stop(s);
}

/* ------------------------------------------------------------------------ */
/* TLS                                                                        */

/* Runs an openssl command line; fails the test when it fails. */
static void openssl_cmd(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    strncat(cmd, " >/dev/null 2>&1", sizeof(cmd) - strlen(cmd) - 1);
    cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

/* A CA (EC P-256) called name in tmpdir. */
static void make_ca(const char *name)
{
    openssl_cmd("openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout %s/%s.key "
                "-out %s/%s.crt -subj '/CN=test CA %s' -days 2 -addext basicConstraints=critical,CA:TRUE "
                "-addext keyUsage=critical,keyCertSign,cRLSign",
                tmpdir, name, tmpdir, name, name);
}

/* A server certificate called name for subjectAltName san, signed by ca. */
static void make_cert(const char *ca, const char *name, const char *san)
{
    char ext[128];

    snprintf(ext, sizeof(ext), "%s/%s.ext", tmpdir, name);
    FILE *f = fopen(ext, "w");
    cr_assert_not_null(f);
    fprintf(f, "subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n", san);
    fclose(f);
    openssl_cmd("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout %s/%s.key "
                "-out %s/%s.csr -subj '/CN=%s'",
                tmpdir, name, tmpdir, name, name);
    openssl_cmd("openssl x509 -req -in %s/%s.csr -CA %s/%s.crt -CAkey %s/%s.key -CAcreateserial -out %s/%s.crt "
                "-days 1 -extfile %s",
                tmpdir, name, tmpdir, ca, tmpdir, ca, tmpdir, name, ext);
}

/* A canned https server presenting certificate name; head_only as in
 * struct canned. */
static struct canned *tls_start(const char *name, const char *response, int head_only)
{
    struct canned *s = canned_start(response);
    char crt[128], key[128];

    snprintf(crt, sizeof(crt), "%s/%s.crt", tmpdir, name);
    snprintf(key, sizeof(key), "%s/%s.key", tmpdir, name);
    s->tls = SSL_CTX_new(TLS_server_method());
    cr_assert_not_null(s->tls);
    cr_assert_eq(SSL_CTX_use_certificate_chain_file(s->tls, crt), 1);
    cr_assert_eq(SSL_CTX_use_PrivateKey_file(s->tls, key, SSL_FILETYPE_PEM), 1);
    s->head_only = head_only;
    canned_run(s);
    return s;
}

/* A FIFO at the token or CA path fails the request at once, naming the
 * file, before any connection: opened blocking (the CA by libcurl), it
 * held the caller (the --upstream mirror's thread) until a writer came.
 * .timeout turns a blocked call into a failure. */
Test(http_client_files, fifo_as_token_or_ca_file_refused, .timeout = 30)
{
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    char fifo[128], want[384];

    canned_run(s);
    snprintf(fifo, sizeof(fifo), "%s", tmp_path("fifo"));
    cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", strerror(errno));
    const struct http_request token = {.url = canned_url(s, "http", "/"), .allow_http = 1, .bearer_file = fifo};
    snprintf(want, sizeof(want), "bearer token file %s: cannot read: it is a FIFO, not a regular file", fifo);
    expect_error(&token, HTTP_CLIENT_ERR_REQUEST, want);
    const struct http_request ca = {.url = canned_url(s, "https", "/"), .ca_file = fifo};
    snprintf(want, sizeof(want), "cannot load CA certificates from %s: cannot read: it is a FIFO, not a regular file",
             fifo);
    expect_error(&ca, HTTP_CLIENT_ERR_REQUEST, want);
    cr_expect_eq(atomic_load(&s->connections), 0);
    canned_stop(s);
}

Test(http_client_files, tls_private_ca)
{
    char ca[128], other[128], err[512] = "";
    struct http_response res;

    make_ca("ca");
    make_ca("other");
    make_cert("ca", "good", "IP:127.0.0.1");
    make_cert("ca", "wrongname", "DNS:other.example");
    snprintf(ca, sizeof(ca), "%s/ca.crt", tmpdir);
    snprintf(other, sizeof(other), "%s/other.crt", tmpdir);

    struct canned *s = tls_start("good", "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecure", 0);
    const struct http_request ok = {.url = canned_url(s, "https", "/"), .ca_file = ca};
    cr_assert_eq(http_client_fetch(&ok, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect_str_eq(res.body, "secure");
    http_response_free(&res);

    /* the system store does not know the test CA, nor does another CA */
    const struct http_request system = {.url = canned_url(s, "https", "/")};
    expect_error(&system, HTTP_CLIENT_ERR_TLS_VERIFY, "TLS certificate verification failed: ");
    const struct http_request wrong_ca = {.url = canned_url(s, "https", "/"), .ca_file = other};
    expect_error(&wrong_ca, HTTP_CLIENT_ERR_TLS_VERIFY, "TLS certificate verification failed: unable to get local");
    const struct http_request no_file = {.url = canned_url(s, "https", "/"), .ca_file = tmp_path("none.crt")};
    expect_error(&no_file, HTTP_CLIENT_ERR_REQUEST, "cannot load CA certificates from ");
    canned_stop(s);

    s = tls_start("wrongname", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0);
    const struct http_request name = {.url = canned_url(s, "https", "/"), .ca_file = ca};
    expect_error(&name, HTTP_CLIENT_ERR_TLS_VERIFY, "TLS certificate verification failed: ");
    expect_error(&name, HTTP_CLIENT_ERR_TLS_VERIFY, "'127.0.0.1'");
    canned_stop(s);
}

/* The CA file holds trust anchors: a certificate in it that is not a
 * root (here the server's own) does not end a chain, as with OpenSSL's
 * defaults (libcurl would otherwise accept such partial chains). */
Test(http_client_files, tls_no_partial_chain)
{
    char leaf[128];

    make_ca("ca");
    make_cert("ca", "good", "IP:127.0.0.1");
    snprintf(leaf, sizeof(leaf), "%s/good.crt", tmpdir);
    struct canned *s = tls_start("good", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0);
    const struct http_request req = {.url = canned_url(s, "https", "/"), .ca_file = leaf};
    expect_error(&req, HTTP_CLIENT_ERR_TLS_VERIFY, "TLS certificate verification failed: unable to get local issuer");
    canned_stop(s);
}

/* Without a CA file the system store is OpenSSL's, so SSL_CERT_FILE
 * reaches it as it reaches every OpenSSL program. */
Test(http_client_files, tls_system_store_is_openssls)
{
    char ca[128], err[512] = "";
    struct http_response res;

    make_ca("ca");
    make_cert("ca", "good", "IP:127.0.0.1");
    snprintf(ca, sizeof(ca), "%s/ca.crt", tmpdir);
    setenv("SSL_CERT_FILE", ca, 1);
    struct canned *s = tls_start("good", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0);
    const struct http_request req = {.url = canned_url(s, "https", "/")};
    cr_assert_eq(http_client_fetch(&req, &res, err, sizeof(err)), HTTP_CLIENT_OK, "%s", err);
    cr_expect_str_eq(res.body, "ok");
    http_response_free(&res);
    unsetenv("SSL_CERT_FILE");
    canned_stop(s);
}

/* A server that hangs up while a large body is still going out makes the
 * writes fail: the call fails, and the process, which does not ignore
 * SIGPIPE, lives on. */
Test(http_client_files, peer_hangs_up_during_upload)
{
    const size_t len = 8 * 1024 * 1024;
    char ca[128], err[512] = "";
    char *body = malloc(len);
    struct http_response res;

    cr_assert_not_null(body);
    memset(body, 'x', len);
    make_ca("ca");
    make_cert("ca", "good", "IP:127.0.0.1");
    snprintf(ca, sizeof(ca), "%s/ca.crt", tmpdir);
    struct canned *s = tls_start("good", NULL, 1);
    const struct http_request req = {
        .method = HTTP_PUT, .url = canned_url(s, "https", "/big"), .ca_file = ca, .body = body, .body_len = len};
    enum http_client_error e = http_client_fetch(&req, &res, err, sizeof(err));
    cr_expect_eq(e, HTTP_CLIENT_ERR_RESPONSE, "%s: %s", error_name(e), err);
    http_response_free(&res);
    canned_stop(s);
    free(body);
}
