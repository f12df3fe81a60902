/*
 * listener: listening sockets. Every worker thread gets its own socket per
 * --listen address, bound with SO_REUSEPORT, so the kernel spreads new
 * connections over the threads and no accept lock is shared.
 */
#ifndef OIDC_LISTENER_H
#define OIDC_LISTENER_H

#include <stddef.h>
#include "config/config.h"

/* Opens a non-blocking listening socket for l (TCP, or a Unix socket for
 * "unix:/path"; workers share one Unix socket through dup(2), since
 * SO_REUSEPORT does not apply to it). first marks the first socket of an
 * address: it fails when another process already listens there. Returns
 * the fd, or -1 with a message naming the address in err. */
int listener_open(const struct config_listen *l, int first, char *err, size_t errlen);

/* Formats l as a URL base with scheme ("http", "https"), e.g.
 * "http://127.0.0.1:8080", "https://[::1]:443", or "unix:/run/oidc.sock";
 * without a scheme (NULL) as "127.0.0.1:8080". */
void listener_url(const struct config_listen *l, const char *scheme, char *buf, size_t len);

#endif
