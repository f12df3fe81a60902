/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the external signer's transport and calls
 * (server/extsigner/grpc_conn.c on nghttp2, service.c with the messages
 * protoc-c generates, jose/signer.c), as kube-apiserver's side of the Unix
 * socket would drive them.
 *
 * The input is what one client sends after the HTTP/2 connection preface,
 * which the target sends first so that the fuzzer need not find those 24
 * bytes: SETTINGS, HEADERS (HPACK), DATA, ... The connection is one end of
 * a socketpair served by grpc_conn on this thread; the target writes the
 * input to the other end, shuts its write side and lets the connection
 * read, answer and write until it ends (more than FUZZ_MAX_ROUNDS aborts:
 * a connection left open after its client has gone). Answers are read and
 * discarded. The signer state signs with tests/fixtures/ec256.pkcs8.key,
 * so Sign calls that get through are really signed.
 *
 * The fixtures directory is $OIDC_FUZZ_FIXTURES (fuzz/run.sh sets it), else
 * tests/fixtures under the current directory. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "jose/token_mint.h"
#include "keys/keyfile.h"
#include "keys/keyset.h"
#include "server/extsigner/grpc_conn.h"

#define FUZZ_MAX_ROUNDS 10000
#define FUZZ_PREFACE    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

static struct signer_slot slot;
/* A limit on unfinished calls' memory that one input can reach, so that
 * its refusals are fuzzed too; every input must give back all it took. */
static atomic_size_t buffered;
static struct grpc_conn_env env = {.slot = &slot, .max_claims = 1024, .max_buffered = 65536, .buffered = &buffered};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("OIDC_FUZZ_FIXTURES") ? getenv("OIDC_FUZZ_FIXTURES") : "tests/fixtures";
    char path[4096], err[256];
    char *paths[] = {path};
    struct keyset *ks;
    EVP_PKEY *priv;
    struct signer_state *s;

    (void)argc;
    (void)argv;
    snprintf(path, sizeof(path), "%s/ec256.pkcs8.key", dir);
    if ((ks = keyset_load(paths, 1, NULL, NULL, err, sizeof(err))) == NULL ||
        (priv = keyfile_read_private(path, err, sizeof(err))) == NULL) {
        fprintf(stderr, "fuzz_extsigner: cannot load %s: %s\n", path, err);
        abort();
    }
    struct signer_params p = {.published = ks,
                              .keys_changed = 1796100000,
                              .priv = priv,
                              .kid = ks->keys[0].kid,
                              .next_change = 1796100060,
                              .max_token_expiration = 3600};
    if ((s = signer_state_new(&p, err, sizeof(err))) == NULL) {
        fprintf(stderr, "fuzz_extsigner: %s\n", err);
        abort();
    }
    signer_slot_init(&slot);
    signer_slot_set(&slot, s);
    signer_state_release(s);
    EVP_PKEY_free(priv);
    keyset_free(ks);
    return 0;
}

/* Reads and drops what the server wrote, so that it never blocks. */
static void fuzz_drain(int fd)
{
    char buf[65536];

    while (read(fd, buf, sizeof(buf)) > 0)
        ;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2], rounds = 0;
    struct grpc_conn *c;

    if (size > 65536 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return 0;
    /* The socket buffers hold the whole input: the client's side is
     * written at once, before the server reads. */
    if (write(sv[1], FUZZ_PREFACE, strlen(FUZZ_PREFACE)) != (ssize_t)strlen(FUZZ_PREFACE) ||
        (size > 0 && write(sv[1], data, size) != (ssize_t)size)) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    shutdown(sv[1], SHUT_WR);
    if ((c = grpc_conn_new(sv[0], &env)) == NULL)
        abort();
    while (grpc_conn_io(c) == 0) {
        fuzz_drain(sv[1]);
        if (++rounds > FUZZ_MAX_ROUNDS) {
            fprintf(stderr, "fuzz_extsigner: the connection is still open after %d rounds\n", rounds);
            abort();
        }
    }
    grpc_conn_free(c);
    close(sv[1]);
    if (atomic_load(&buffered) != 0) {
        fprintf(stderr, "fuzz_extsigner: %zu bytes still counted after the connection ended\n",
                (size_t)atomic_load(&buffered));
        abort();
    }
    return 0;
}
