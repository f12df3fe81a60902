/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for util/http_client: what a request sends (bearer token, PUT
 * body, SigV4) and TLS verification, against the canned server of
 * http_client_test_support.h on 127.0.0.1 that each test starts on a thread:
 * it reads one request per connection, records it, and writes the bytes the
 * test chose.
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
