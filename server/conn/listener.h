/* SPDX-License-Identifier: Apache-2.0 */
/*
 * listener: listening sockets. Every worker thread gets its own socket per
 * listen address, bound with SO_REUSEPORT, so the kernel spreads new
 * connections over the threads and no accept lock is shared. Port 0 binds
 * a port the kernel chooses; the other threads' sockets join that one.
 */
#ifndef OIDC_LISTENER_H
#define OIDC_LISTENER_H

#include <stddef.h>
#include "config/config.h"

/* A listening socket for a worker, and whether it speaks TLS. */
struct listener_fd {
    int fd;
    int tls;
};

/* One address served, the flag that asked for it (named in errors),
 * whether it speaks TLS, and the port it is bound to: the configured one,
 * or the kernel's choice for port 0. */
struct listener_addr {
    const struct config_listen *l;
    const char *flag; /* "--listen", "--admin-listen", ... */
    int tls;
    unsigned short port; /* set by listener_open_all */
};

/* Opens a socket on each of the n addresses for each of threads workers:
 * element t * n + i of the returned array (threads * n of them) is thread
 * t's socket on address i, and each address's port is set. A Unix socket
 * ("unix:/path") is opened once and shared through dup(2), since
 * SO_REUSEPORT does not apply to it; a stale socket file left by an earlier
 * run is replaced. A TCP address fails when another process already
 * listens there. Returns the array, or NULL with a message naming the
 * flag and the address in err (and what to do about a port in use), and
 * nothing left open. */
struct listener_fd *listener_open_all(struct listener_addr *addrs, size_t n, unsigned threads, char *err,
                                      size_t errlen);

/* Closes the count sockets of fds (listener_open_all's) and frees it. */
void listener_close_all(struct listener_fd *fds, size_t count);

/* Formats a as a URL base with its scheme and bound port, e.g.
 * "http://127.0.0.1:8080", "https://[::1]:443", or "unix:/run/oidc.sock". */
void listener_url(const struct listener_addr *a, char *buf, size_t len);

#endif
