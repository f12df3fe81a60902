/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unix_listen: the one way this program creates a listening Unix socket
 * (--listen unix:PATH for a local reverse proxy, --external-signer-listen
 * unix:PATH for kube-apiserver), with the mode and owner asked for, that
 * nobody else can redirect.
 *
 * The socket's directory must be owned by this process's user or root and
 * not writable by group or others (checked on the open directory, and
 * refused naming the flag and the directory otherwise): whoever can write
 * there could swap the socket, between its bind and its chown, for a link
 * to a file of theirs choosing, and have that file given away. The mode
 * is the socket's from its creation (fchmod on the unbound socket, whose
 * mode bind(2) gives the file, under a umask of 0), never a chmod of the
 * path; the owner is set relative to the checked directory, without
 * following a link (fchownat, AT_SYMLINK_NOFOLLOW).
 *
 * A socket file already at the path is removed only when connecting to it
 * is refused (ECONNREFUSED: nobody listens, an earlier run's leftover);
 * one that accepts, whose backlog is full, or that cannot be probed is
 * refused, and so is any other kind of file.
 */
#ifndef OIDC_UNIX_LISTEN_H
#define OIDC_UNIX_LISTEN_H

#include <stddef.h>
#include <sys/types.h>

struct unix_listen {
    const char *flag; /* names the flag in messages: "--listen", "--external-signer-listen" */
    mode_t mode;      /* the socket file's, exactly (the umask does not narrow it) */
    uid_t uid;        /* its owner, or (uid_t)-1 to leave this process's */
    gid_t gid;        /* its group, or (gid_t)-1 */
    int backlog;
};

/* Creates, binds and listens on the Unix socket path as l asks. Returns
 * the descriptor (non-blocking, close-on-exec) with the inode of the
 * socket file in *ino, or -1 with the reason in err ("FLAG unix:PATH:
 * ...") and nothing left at the path. Changes the process's umask for the
 * duration of bind(2): every file this program creates passes its own
 * mode, none relies on the umask to narrow it. */
int unix_listen_open(const char *path, const struct unix_listen *l, ino_t *ino, char *err, size_t errlen);

#endif
