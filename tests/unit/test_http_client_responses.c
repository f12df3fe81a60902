/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for util/http_client: what a response carries, the caps and
 * refusals of responses, and the policy (schemes, redirects, timeouts,
 * proxies), against the canned server of http_client_test_support.h on
 * 127.0.0.1 that each test starts on a thread: it reads one request per
 * connection, records it, and writes the bytes the test chose.
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
#include "http_client_test_support.h"

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

/* A kept connection that the server closed after its answer serves the
 * next request on a new one, with that request's own path and answer; and
 * freeing it frees libcurl's handle (the suite's leak check). */
Test(http_client, kept_connection_closed_by_the_server_reconnects)
{
    struct canned *s = canned_start("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    struct http_client_conn *conn = http_client_conn_new();
    char err[512] = "";

    cr_assert_not_null(conn);
    canned_run(s);
    for (int i = 0; i < 2; i++) {
        struct http_response res;
        char path[16];
        snprintf(path, sizeof(path), "/r%d", i);
        const struct http_request req = {.url = canned_url(s, "http", path), .allow_http = 1, .conn = conn};
        enum http_client_error e = http_client_fetch(&req, &res, err, sizeof(err));
        cr_assert_eq(e, HTTP_CLIENT_OK, "%s: %s", error_name(e), err);
        cr_expect_eq(res.status, 200);
        cr_expect_eq(res.body_len, 2);
        cr_expect(strncmp(s->request, i == 0 ? "GET /r0 " : "GET /r1 ", 8) == 0, "%s", s->request);
        http_response_free(&res);
    }
    cr_expect_eq(atomic_load(&s->connections), 2);
    http_client_conn_free(conn);
    http_client_conn_free(NULL);
    canned_stop(s);
}

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
