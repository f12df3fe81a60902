/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the HTTP request path through the server's own h2o
 * sites (server/http/site.c) — http_framing.c in front of handler_docs.c,
 * handler_tokenreview.c and handler_admin.c, request_log.c and worker.c.
 *
 * The first input byte picks the site; the rest is what one client sends
 * on one connection before shutting its write side down. The connection is
 * one end of a socketpair, served by a worker that runs on this thread
 * (worker_attach), so a run is a few rounds of the event loop on one
 * thread, none of which waits for a timer. libh2o itself is not instrumented: the
 * coverage that guides the fuzzer is that of our code.
 *
 * The fixtures directory is $OIDC_FUZZ_FIXTURES (fuzz/run.sh sets it), else
 * tests/fixtures under the current directory. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "keys/keyset.h"
#include "publish/publish.h"
#include "server/http/site.h"
#include "server/conn/worker.h"

/* Last-Modified of the published documents, fixed so that responses do not
 * depend on when the fuzzer started. */
#define FUZZ_NOW ((time_t)1796100000)

/* Event-loop rounds a connection may take. A request is answered in one or
 * two rounds and the input is a few KiB, so reaching this means the server
 * keeps a connection open after its client has finished and gone quiet. */
#define FUZZ_MAX_ROUNDS 10000

enum fuzz_site_id { FUZZ_DOCS, FUZZ_DOCS_STRICT, FUZZ_TOKENREVIEW, FUZZ_ADMIN, FUZZ_NSITES };

/* One site as a listener of the server has it, with its worker. */
struct fuzz_site {
    h2o_globalconf_t conf;
    struct worker *worker;
    h2o_evloop_t *loop;
};

/* The default options, and the restrictive ones (--path-prefix,
 * --allowed-hosts, --no-cors, the smallest header limit). */
static struct config cfg_open, cfg_strict;
static struct fuzz_site sites[FUZZ_NSITES];

/* config_parse of `serve` with the fixture keys, the issuer and audience of
 * fuzz/corpus/fuzz_token (so its valid tokens pass a TokenReview), and
 * extra flags. */
static void fuzz_config(struct config *cfg, const char *dir, const char *const *extra, size_t nextra)
{
    char rsa[4096], ec[4096], err[CONFIG_ERR_MAX];
    const char *base[] = {"oidc-discovery",
                          "serve",
                          "--service-account-issuer",
                          "https://fuzz.example",
                          "--api-audiences",
                          "fuzz",
                          "--service-account-key-file",
                          rsa,
                          "--service-account-key-file",
                          ec,
                          "--enable-token-review",
                          "--token-review-listen",
                          "127.0.0.1:8443",
                          "--token-review-insecure-http",
                          "--token-review-allowed-callers",
                          "system:serviceaccount:fuzz:caller"};
    const char *args[sizeof(base) / sizeof(base[0]) + 8];
    size_t argc = 0;
    enum config_command cmd;

    snprintf(rsa, sizeof(rsa), "%s/rsa2048.pub", dir);
    snprintf(ec, sizeof(ec), "%s/ec256.pub", dir);
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        args[argc++] = base[i];
    for (size_t i = 0; i < nextra && argc < sizeof(args) / sizeof(args[0]); i++)
        args[argc++] = extra[i];
    if (config_parse((int)argc, (char **)args, &cmd, cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz_http: %s (set OIDC_FUZZ_FIXTURES to tests/fixtures)\n", err);
        exit(1);
    }
}

/* The documents both configurations publish: the config's key files. */
static struct snapshot *fuzz_snapshot(const struct config *cfg)
{
    char err[512];
    struct keyset *ks = keyset_load(cfg->key_files.items, cfg->key_files.count, NULL, NULL, err, sizeof(err));
    struct snapshot *snap = ks ? publish_snapshot(cfg, ks, FUZZ_NOW) : NULL;

    if (snap == NULL) {
        fprintf(stderr, "fuzz_http: cannot publish the fixture keys: %s\n", ks ? "out of memory" : err);
        exit(1);
    }
    return snap;
}

/* The site's worker, on this thread, serving snap: handed over as the
 * server hands it (a message to the worker's loop), then taken by a few
 * rounds of the loop. */
static void fuzz_site_init(struct fuzz_site *site, const struct config *cfg, enum site_kind kind, struct snapshot *snap)
{
    const struct worker_env env = {.budget = NULL};

    site_configure(&site->conf, cfg, kind);
    if ((site->worker = worker_create(&site->conf, NULL, 0, &env)) == NULL) {
        fprintf(stderr, "fuzz_http: out of memory\n");
        exit(1);
    }
    site->loop = worker_attach(site->worker);
    worker_publish(site->worker, snap);
    for (int round = 0; !worker_serving(site->worker); round++) {
        if (round == FUZZ_MAX_ROUNDS) {
            fprintf(stderr, "fuzz_http: the worker never took its snapshot\n");
            exit(1);
        }
        h2o_evloop_run(site->loop, 10);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *const strict[] = {"--path-prefix",
                                         "/oidc",
                                         "--allowed-hosts",
                                         "fuzz.example,localhost:8080",
                                         "--no-cors",
                                         "--max-request-header-size",
                                         "1024"};
    const char *dir = getenv("OIDC_FUZZ_FIXTURES");
    struct snapshot *snap;

    (void)argc, (void)argv;
    if (dir == NULL || dir[0] == '\0')
        dir = "tests/fixtures";
    signal(SIGPIPE, SIG_IGN); /* as the server: a client that left is an error return */
    fuzz_config(&cfg_open, dir, NULL, 0);
    fuzz_config(&cfg_strict, dir, strict, sizeof(strict) / sizeof(strict[0]));
    snap = fuzz_snapshot(&cfg_open);
    fuzz_site_init(&sites[FUZZ_DOCS], &cfg_open, SITE_DOCS, snap);
    fuzz_site_init(&sites[FUZZ_DOCS_STRICT], &cfg_strict, SITE_DOCS, snap);
    fuzz_site_init(&sites[FUZZ_TOKENREVIEW], &cfg_open, SITE_TOKENREVIEW, snap);
    fuzz_site_init(&sites[FUZZ_ADMIN], &cfg_open, SITE_ADMIN, snap);
    snapshot_release(snap); /* the workers hold theirs */
    return 0;
}

static void fuzz_die(const char *what)
{
    fprintf(stderr, "fuzz_http: %s: %s\n", what, strerror(errno));
    abort();
}

/* Reads and discards what the server has sent so far. Returns 1 once the
 * server has closed the connection. */
static int fuzz_drain(int fd)
{
    char buf[16384];
    ssize_t n;

    while ((n = read(fd, buf, sizeof(buf))) > 0)
        ;
    if (n == 0)
        return 1;
    if (errno != EAGAIN && errno != ECONNRESET)
        fuzz_die("read");
    return errno == ECONNRESET;
}

/* Sends what the socket takes of the len bytes at req; returns how many.
 * A server that has closed the connection takes them all: the client
 * would stop sending. */
static size_t fuzz_send(int fd, const uint8_t *req, size_t len)
{
    ssize_t n = len ? write(fd, req, len) : 0;

    if (n >= 0)
        return (size_t)n;
    if (errno == EPIPE || errno == ECONNRESET)
        return len;
    if (errno != EAGAIN)
        fuzz_die("write");
    return 0;
}

/* Plays the client of one connection: sends req (as fast as the socket
 * takes it), then shuts its write side down, reading every response, until
 * the server closes the connection. */
static void fuzz_exchange(struct fuzz_site *site, const uint8_t *req, size_t len)
{
    int fds[2], shut = 0, closed = 0;
    size_t sent = 0;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0)
        fuzz_die("socketpair");
    worker_serve_connection(site->worker, h2o_evloop_socket_create(site->loop, fds[0], 0), 0);
    for (int round = 0; !closed; round++) {
        if (round == FUZZ_MAX_ROUNDS) {
            fprintf(stderr, "fuzz_http: the connection is still open %d rounds after the request\n", round);
            abort();
        }
        sent += fuzz_send(fds[1], req + sent, len - sent);
        if (sent == len && !shut) {
            shutdown(fds[1], SHUT_WR);
            shut = 1;
        }
        h2o_evloop_run(site->loop, 0);
        closed = fuzz_drain(fds[1]);
    }
    close(fds[1]);
    h2o_evloop_run(site->loop, 0); /* frees the closed socket */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    fuzz_exchange(&sites[data[0] % FUZZ_NSITES], data + 1, size - 1);
    return 0;
}
