/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unix_socket: the listening socket of --external-signer-listen unix:PATH,
 * created with the mode and owner the flags ask for
 * (--external-signer-socket-mode, --external-signer-socket-owner), and
 * removed at the end only if it is still the one created.
 *
 * kube-apiserver trusts whatever answers on this path to sign its tokens,
 * so the socket is never, even for an instant, reachable by anyone the
 * flags did not name, and its directory must be one nobody else can write
 * to: util/unix_listen.h makes it, as it makes --listen's.
 */
#ifndef OIDC_EXTSIGNER_UNIX_SOCKET_H
#define OIDC_EXTSIGNER_UNIX_SOCKET_H

#include <stddef.h>
#include <sys/types.h>

#include "config/config.h"

struct unix_socket {
    int fd; /* listening, non-blocking, close-on-exec */
    char path[108];
    ino_t ino; /* of the socket created */
};

/* Binds and listens on the path of cfg->external_signer_listen with
 * unix_listen_open. A stale socket left by a process that is gone is
 * replaced; one another process still serves, any other file at the path,
 * or a directory others can write to, is refused. 0, or -1 with the reason
 * in err (naming the flag) and nothing left behind. */
int unix_socket_open(struct unix_socket *s, const struct config *cfg, char *err, size_t errlen);

/* Closes the socket and removes its path if it still holds the socket
 * unix_socket_open created (not one put there since). */
void unix_socket_close(struct unix_socket *s);

#endif
