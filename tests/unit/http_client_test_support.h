/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the util/http_client unit tests (tests/unit/test_http_client_*.c)
 * share: a canned server on a thread that records each request and writes the
 * bytes the test chose, and checks of a request's result.
 */
#ifndef HTTP_CLIENT_TEST_SUPPORT_H
#define HTTP_CLIENT_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

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

#include "test_support.h"

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
static inline int canned_read(struct canned *s, int fd, SSL *ssl)
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
static inline void canned_hang(struct canned *s, int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char buf[4096];

    while (poll(&p, 1, s->hang_ms) > 0 && read(fd, buf, sizeof(buf)) > 0)
        ;
}

/* Serves one accepted connection as configured. */
static inline void canned_serve(struct canned *s, int fd)
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

static inline void *canned_main(void *arg)
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
static inline int listen_any(int *port)
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
static inline struct canned *canned_start(const char *response)
{
    struct canned *s = calloc(1, sizeof(*s));

    cr_assert_not_null(s);
    s->response = response;
    s->response_len = response ? strlen(response) : 0;
    s->fd = listen_any(&s->port);
    return s;
}

static inline void canned_run(struct canned *s)
{
    cr_assert_eq(pthread_create(&s->thread, NULL, canned_main, s), 0);
}

static inline void canned_stop(struct canned *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    close(s->fd);
    SSL_CTX_free(s->tls);
    free(s);
}

/* "http://127.0.0.1:<port><path>" */
static inline const char *canned_url(const struct canned *s, const char *scheme, const char *path)
{
    static char url[256];
    snprintf(url, sizeof(url), "%s://127.0.0.1:%d%s", scheme, s->port, path);
    return url;
}

/* An error's name, for the failure messages below. */
static inline const char *error_name(enum http_client_error e)
{
    static const char *const names[] = {"ok",         "request", "connect",  "tls",
                                        "tls_verify", "timeout", "response", "cancelled"};

    return (size_t)e < sizeof(names) / sizeof(names[0]) ? names[e] : "unknown";
}

/* GETs path from s over plain http; expects a response. */
static inline void get_ok(struct canned *s, const char *path, struct http_response *res)
{
    char err[512] = "";
    const struct http_request req = {.url = canned_url(s, "http", path), .allow_http = 1};
    enum http_client_error e = http_client_fetch(&req, res, err, sizeof(err));
    cr_assert_eq(e, HTTP_CLIENT_OK, "%s: %s", error_name(e), err);
}

/* Runs req expecting error want with a message that names the request
 * and contains part. */
static inline void expect_error(const struct http_request *req, enum http_client_error want, const char *part)
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

#endif
