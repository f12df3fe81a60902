/*
 * listener: listening sockets. Every worker thread gets its own socket per
 * --listen address, bound with SO_REUSEPORT, so the kernel spreads new
 * connections over the threads and no accept lock is shared.
 */
#ifndef OIDC_LISTENER_H
#define OIDC_LISTENER_H

#include <stddef.h>
#include "config/config.h"

/* Opens a non-blocking listening socket for l. Returns the fd, or -1 with a
 * message naming the address in err. */
int listener_open(const struct config_listen *l, char *err, size_t errlen);

/* Formats l as a URL base, e.g. "http://127.0.0.1:8080" or "http://[::1]:80". */
void listener_url(const struct config_listen *l, char *buf, size_t len);

#endif
