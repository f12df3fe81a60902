/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server/obs/accesslog.c: lines are written by the writer thread; when it
 * falls behind they are dropped, counted in /metrics and reported in the
 * log instead of growing memory.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/obs/accesslog.h"
#include "server/obs/metrics.h"
#include "test_support.h"

static void redirect(void)
{
    cr_redirect_stderr();
}

TestSuite(accesslog, .init = redirect);

/* Reads a pipe to its end, counting the bytes. */
struct drain {
    int fd;
    size_t bytes;
};

static void *drain_main(void *arg)
{
    struct drain *d = arg;
    char buf[65536];
    ssize_t n;

    while ((n = read(d->fd, buf, sizeof(buf))) > 0)
        d->bytes += (size_t)n;
    return NULL;
}

static void append_lines(struct accesslog_buffer *buf, size_t n)
{
    static const char ua[] = "a user agent long enough to make each line a few hundred bytes, as real ones are";
    struct accesslog_entry e = {.remote = "127.0.0.1:1",
                                .remote_len = 11,
                                .method = "GET",
                                .method_len = 3,
                                .path = "/openid/v1/jwks",
                                .path_len = 15,
                                .user_agent = ua,
                                .user_agent_len = sizeof(ua) - 1,
                                .protocol = "HTTP/1.1",
                                .status = 200};

    for (size_t i = 0; i < n; i++)
        accesslog_append(buf, &e);
    accesslog_flush(buf);
}

/* A writer stuck on a full pipe: the worker side never blocks, the lines
 * past the queue's bound are dropped and counted, and once the writer can
 * go on, the log says how many. */
Test(accesslog, lines_dropped_behind_a_stuck_writer_are_counted_and_reported)
{
    int fds[2];
    char path[64], err[256], text[4096] = "";
    uint64_t before = atomic_load(&metrics_process.access_log_dropped);
    struct drain d = {0};
    pthread_t reader;
    size_t n;

    cr_assert_eq(pipe(fds), 0);
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[1]);
    struct accesslog *log = accesslog_open(path, err, sizeof(err));
    cr_assert_not_null(log, "%s", err);
    close(fds[1]);
    struct accesslog_buffer *buf = accesslog_buffer_new(log);
    cr_assert_not_null(buf);
    /* nobody reads the pipe yet: 100,000 lines of ~250 bytes exceed the
     * 16 MiB the writer may have queued */
    for (int round = 0; round < 100; round++)
        append_lines(buf, 1000);
    uint64_t dropped = atomic_load(&metrics_process.access_log_dropped) - before;
    cr_assert_gt(dropped, 0, "nothing was dropped");
    cr_assert_lt(dropped, 100000, "everything was dropped");
    d.fd = fds[0];
    cr_assert_eq(pthread_create(&reader, NULL, drain_main, &d), 0);
    accesslog_buffer_free(buf);
    accesslog_close(log);
    pthread_join(reader, NULL);
    close(fds[0]);
    cr_expect_gt(d.bytes, 16u * 1024 * 1024, "the queued lines were written");
    fflush(stderr);
    n = fread(text, 1, sizeof(text) - 1, cr_get_redirected_stderr());
    text[n] = '\0';
    char want[64];
    snprintf(want, sizeof(want), "access log: %llu lines dropped", (unsigned long long)dropped);
    cr_expect(strstr(text, want) != NULL, "no \"%s\" in:\n%s", want, text);
}
