/* SPDX-License-Identifier: Apache-2.0 */
/*
 * accesslog: --access-log, one JSON object per request and line, written
 * without blocking the event loops: each worker thread appends lines to its
 * own buffer (no lock), and hands full buffers — or whatever it has, every
 * ACCESSLOG_FLUSH_MS — to one writer thread that does the write(2) calls. A
 * slow disk makes lines wait, never requests; if the writer falls too far
 * behind, lines are dropped instead of growing memory. Dropped lines, and
 * lines lost to write errors, are counted in /metrics and reported in the
 * log every ten seconds at most.
 */
#ifndef OIDC_ACCESSLOG_H
#define OIDC_ACCESSLOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#define ACCESSLOG_FLUSH_MS 100

struct accesslog;        /* the process-wide log and its writer thread */
struct accesslog_buffer; /* one worker thread's pending lines */

/* What one line records. Strings need not be NUL-terminated. */
struct accesslog_entry {
    struct timeval time; /* when the request arrived */
    const char *remote;  /* "1.2.3.4:5678", "[::1]:5678" or "unix" */
    size_t remote_len;
    const char *method;
    size_t method_len;
    const char *path;
    size_t path_len;
    const char *user_agent; /* NULL when absent */
    size_t user_agent_len;
    const char *caller; /* who called the TokenReview API, or NULL: no such line (no "caller" member) */
    size_t caller_len;
    const char *protocol; /* "HTTP/1.1", "HTTP/2", ... */
    int status;
    uint64_t bytes;       /* response body bytes sent */
    uint64_t duration_us; /* arrival to last byte handed to the socket */
};

/* Opens path ("-" for standard output; a file is opened for appending and
 * created 0640) and starts the writer thread. NULL with a message. */
struct accesslog *accesslog_open(const char *path, char *err, size_t errlen);

/* A buffer for one worker thread; call on that thread. */
struct accesslog_buffer *accesslog_buffer_new(struct accesslog *log);

/* Appends one line (JSON: time (RFC 3339 with microseconds, UTC), remote,
 * method, path, status, bytes, duration_us, user_agent, protocol, and
 * caller when there is one). Called on the buffer's thread; never blocks. */
void accesslog_append(struct accesslog_buffer *buf, const struct accesslog_entry *e);

/* Hands what the buffer holds to the writer; the worker calls it from a
 * timer every ACCESSLOG_FLUSH_MS and before it ends. */
void accesslog_flush(struct accesslog_buffer *buf);

void accesslog_buffer_free(struct accesslog_buffer *buf);

/* Writes everything pending, stops the writer thread and closes the file. */
void accesslog_close(struct accesslog *log);

#endif
