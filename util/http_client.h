/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_client: the project's one outgoing HTTP(S) client, on libcurl. One
 * request in, one response out (status, headers, body), under a fixed
 * policy a caller cannot loosen by accident:
 *   - https only; plain http too only when the request allows it; no other
 *     scheme (CURLOPT_PROTOCOLS_STR), no userinfo, no control or non-ASCII
 *     byte in the URL;
 *   - TLS 1.2 or later, the peer verified against ca_file or, without one,
 *     the system store, and the certificate against the URL's host; the
 *     chain must end at a certificate of that store (no partial chains);
 *   - redirects are never followed: a 3xx is returned as a response;
 *   - a whole-transfer timeout (DNS included) and a connect timeout;
 *   - the response body is capped while it arrives (a larger one is cut off
 *     and refused, never buffered), the headers at HTTP_CLIENT_HEADER_MAX;
 *   - no content coding is asked for; a response that uses one anyway is
 *     refused rather than handed over compressed;
 *   - proxies named by the environment (https_proxy, ...) are ignored unless
 *     the request opts in: a credential meant for the server must not go to
 *     whatever a process's environment names;
 *   - HTTP/1.1, one connection per request;
 *   - messages show the URL (and a redirect's Location) only as redact_url
 *     does: an Azure SAS token is a query string, and whoever reads the
 *     logs must not get it;
 *   - the CA and bearer token files are read with util/file.h's file_read
 *     at each call (regular files only, never blocking), libcurl given the
 *     bytes: a FIFO put at either path fails the request, naming the file,
 *     instead of blocking the calling thread for good.
 *
 * Thread-safety: any thread may call http_client_fetch at any time. The
 * first call initialises libcurl (curl_global_init) through pthread_once;
 * libcurl >= 7.84 built "threadsafe" (Debian 12's is) makes that safe even
 * while other threads run, and it is never cleaned up (the process exit
 * does). Nothing else is shared between calls. No signal is used or
 * touched (CURLOPT_NOSIGNAL): libcurl resolves names on a thread of its
 * own, and on Linux writes with MSG_NOSIGNAL, TLS included, so a peer that
 * hangs up cannot raise SIGPIPE in a command that does not ignore it.
 */
#ifndef OIDC_HTTP_CLIENT_H
#define OIDC_HTTP_CLIENT_H

#include <stdatomic.h>
#include <stddef.h>

/* Defaults for a request that leaves these fields 0. */
#define HTTP_CLIENT_TIMEOUT_MS         10000
#define HTTP_CLIENT_CONNECT_TIMEOUT_MS 5000
#define HTTP_CLIENT_BODY_MAX           (1024 * 1024)

/* The status line and header fields of a response may not exceed this. */
#define HTTP_CLIENT_HEADER_MAX (64 * 1024)

/* A bearer token file larger than this is refused. */
#define HTTP_CLIENT_BEARER_MAX (64 * 1024)

/* A CA file larger than this is refused (a distribution's whole bundle is
 * some 200 KiB); so is a client certificate or key file. */
#define HTTP_CLIENT_CA_MAX (4 * 1024 * 1024)

enum http_method { HTTP_GET = 0, HTTP_PUT, HTTP_POST };

/* Credentials to sign a request with AWS Signature Version 4 (S3 and
 * compatible stores), by libcurl's CURLOPT_AWS_SIGV4. The payload hash is
 * sent as x-amz-content-sha256 and the session token, when there is one,
 * as x-amz-security-token; both are signed. An "X-Amz-Date" header among
 * the request's headers fixes the signing time (tests); else it is now.
 * The URL's query string is signed as written: keep it canonical (names
 * sorted, percent-encoded) or leave it out. */
struct http_sigv4 {
    const char *region;        /* "eu-west-1" */
    const char *service;       /* "s3" */
    const char *access_key_id; /* "AKIA..." */
    const char *secret_key;
    const char *session_token; /* or NULL */
};

struct http_request {
    enum http_method method; /* HTTP_GET (the zero value) or HTTP_PUT */
    const char *url;         /* https://host[:port]/path[?query]; a #fragment is not sent */
    int allow_http;          /* also accept http:// URLs */
    const char *ca_file;     /* PEM certificates to trust instead of the system store, or NULL */

    /* A client certificate (PEM, the chain after it) and its private key
     * (PEM, unencrypted) for TLS, both read with file_read at each call
     * (the key's bytes wiped after), or NULL: none. Both or neither. */
    const char *cert_file;
    const char *key_file;

    /* Extra header fields, "Name: value" each, NULL-terminated, or NULL
     * (e.g. "Accept: application/json", "If-None-Match: \"abc\"",
     * "Content-Type: application/json" for a PUT). A field with CR, LF or
     * another control character, or without a valid name, is refused. An
     * empty value ("Accept:") removes a field libcurl would send (do not
     * combine that with SigV4, which would sign it). */
    const char *const *headers;

    /* Sends "Authorization: Bearer <token>" with the token read from this
     * file at each call (so a rotated token is picked up), surrounding
     * whitespace removed, or NULL. The token never appears in a message. */
    const char *bearer_file;

    const struct http_sigv4 *sigv4; /* sign the request, or NULL */

    const void *body; /* request body for HTTP_PUT and HTTP_POST (may be empty); ignored for GET */
    size_t body_len;

    size_t max_body; /* response body cap; 0: HTTP_CLIENT_BODY_MAX */
    long timeout_ms; /* whole transfer, name resolution included; 0: HTTP_CLIENT_TIMEOUT_MS */

    /* Name resolution, TCP and TLS set-up; 0: HTTP_CLIENT_CONNECT_TIMEOUT_MS.
     * Never more than timeout_ms. */
    long connect_timeout_ms;

    int use_env_proxy; /* honour https_proxy, http_proxy, no_proxy, ... */

    /* When it turns non-zero, the request stops (within a second: libcurl
     * looks at it whenever data moves and at least once a second) and
     * fails with HTTP_CLIENT_ERR_CANCELLED; a thread being stopped must not
     * wait out a timeout. NULL: never. */
    const atomic_int *cancel;

    /* A response body read as a stream (a watch): when set, the body is
     * handed to it as it arrives, in pieces of any size, and not kept
     * (res->body stays empty); it returns 0 to go on, anything else to
     * stop the transfer, which then fails with HTTP_CLIENT_ERR_CANCELLED.
     * The whole-transfer timeout still holds: a stream ends with
     * HTTP_CLIENT_ERR_TIMEOUT at timeout_ms, and the caller reconnects.
     * Only a 2xx response's body is streamed; another's is kept as usual. */
    int (*on_data)(void *ctx, const char *data, size_t len);
    void *on_data_ctx;

    /* A connection to keep between requests (http_client_conn_new), or
     * NULL: the request opens one of its own and closes it. With one, a
     * request to the same host with the same TLS settings reuses the open
     * connection (no TCP or TLS set-up); one with other settings, or after
     * the server closed it, opens a new one. One thread's at a time. */
    struct http_client_conn *conn;
};

/* A kept-alive connection for http_request.conn. NULL when out of memory
 * (requests then open their own). */
struct http_client_conn *http_client_conn_new(void);

/* Closes the connection, if open, and frees it; NULL is fine. */
void http_client_conn_free(struct http_client_conn *conn);

/* One header field of a response. */
struct http_header {
    char *name;  /* as the server spelled it */
    char *value; /* surrounding whitespace removed; repeated fields joined with ", " */
};

/* What http_client_fetch returns: the final response (interim 1xx ones are
 * passed over). All of it is owned by the response; free it with
 * http_response_free. */
struct http_response {
    int status;      /* 200, 304, 404, 302 (not followed), ... */
    char reason[68]; /* the reason phrase, printable ASCII, may be empty */
    char *body;      /* NUL-terminated (the NUL is not counted), never NULL */
    size_t body_len;
    struct http_header *headers; /* in the order first seen */
    size_t nheaders;
};

/* Why a request got no response. */
enum http_client_error {
    HTTP_CLIENT_OK = 0,
    HTTP_CLIENT_ERR_REQUEST,    /* refused before sending: URL, scheme, header, bearer file, CA file */
    HTTP_CLIENT_ERR_CONNECT,    /* name resolution, connection refused or unreachable */
    HTTP_CLIENT_ERR_TLS,        /* handshake failed (protocol version, alert, ...) */
    HTTP_CLIENT_ERR_TLS_VERIFY, /* the certificate chain or name did not verify */
    HTTP_CLIENT_ERR_TIMEOUT,    /* the connect or whole-transfer timeout expired */
    HTTP_CLIENT_ERR_RESPONSE,   /* malformed, over a cap, content-coded, or cut short */
    HTTP_CLIENT_ERR_CANCELLED,  /* *cancel turned non-zero */
};

/* Sends the request and reads the response, whatever its status. Returns
 * HTTP_CLIENT_OK with *res filled (the caller checks res->status), or an
 * error with *res empty and a one-line message in err that starts with
 * "GET <url>: " (or "PUT <url>: ", the URL printable and cut at 256
 * characters). *res needs http_response_free either way. */
enum http_client_error http_client_fetch(const struct http_request *req, struct http_response *res, char *err,
                                         size_t errlen);

/* The value of res's header field name (compared case-insensitively), or
 * NULL. */
const char *http_response_header(const struct http_response *res, const char *name);

/* Writes the message for a response whose status the caller did not
 * expect: "GET <url>: HTTP 404 Not Found", and for a 3xx "... (redirects
 * are not followed; Location: <url>)". Returns -1, so that a caller can
 * `return http_client_status_error(...)`. */
int http_client_status_error(const struct http_request *req, const struct http_response *res, char *err, size_t errlen);

/* Frees what the response holds and empties it; the struct itself is the
 * caller's. An empty (zeroed) response is fine. */
void http_response_free(struct http_response *res);

#endif
