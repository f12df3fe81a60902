/* SPDX-License-Identifier: Apache-2.0 */
#include "server/extsigner/unix_socket.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/unix_listen.h"

/* Connections kube-apiserver may have waiting to be accepted. */
#define UNIX_SOCKET_BACKLOG 64

_Static_assert(sizeof(((struct unix_socket *)0)->path) == sizeof(((struct sockaddr_un *)0)->sun_path),
               "unix_socket.path holds exactly a sun_path");

/* A user or group by name or number. */
static int unix_socket_id(const char *name, int group, unsigned *id)
{
    char *end;
    unsigned long n = strtoul(name, &end, 10);

    if (*name != '\0' && *end == '\0') {
        *id = (unsigned)n;
        return 0;
    }
    if (group) {
        struct group *g = getgrnam(name);
        if (g != NULL)
            *id = g->gr_gid;
        return g != NULL ? 0 : -1;
    }
    struct passwd *pw = getpwnam(name);
    if (pw != NULL)
        *id = pw->pw_uid;
    return pw != NULL ? 0 : -1;
}

/* The mode and owner the flags ask for, into l. */
static int unix_socket_wanted(const struct config *cfg, struct unix_listen *l, char *err, size_t errlen)
{
    const char *owner = cfg->external_signer_socket_owner;
    unsigned uid = (unsigned)-1, gid = (unsigned)-1;
    char user[256] = "";
    const char *colon = owner ? strchr(owner, ':') : NULL;

    l->mode = strcmp(cfg->external_signer_socket_mode, "0660") == 0 ? 0660 : 0600;
    if (owner != NULL) {
        snprintf(user, sizeof(user), "%.*s", (int)(colon ? (size_t)(colon - owner) : strlen(owner)), owner);
        if ((user[0] && unix_socket_id(user, 0, &uid) != 0) || (colon && unix_socket_id(colon + 1, 1, &gid) != 0)) {
            snprintf(err, errlen, "--external-signer-socket-owner %s: no such user or group", owner);
            return -1;
        }
    }
    l->uid = (uid_t)uid;
    l->gid = (gid_t)gid;
    return 0;
}

int unix_socket_open(struct unix_socket *s, const struct config *cfg, char *err, size_t errlen)
{
    const char *path = cfg->external_signer_listen + strlen("unix:");
    struct unix_listen l = {.flag = "--external-signer-listen", .backlog = UNIX_SOCKET_BACKLOG};

    memset(s, 0, sizeof(*s));
    s->fd = -1;
    /* a path too long for a socket is refused by unix_listen_open */
    snprintf(s->path, sizeof(s->path), "%s", path);
    if (unix_socket_wanted(cfg, &l, err, errlen) != 0 || (s->fd = unix_listen_open(path, &l, &s->ino, err, errlen)) < 0)
        return -1;
    return 0;
}

void unix_socket_close(struct unix_socket *s)
{
    struct stat st;

    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    if (s->ino != 0 && lstat(s->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == s->ino)
        unlink(s->path);
    s->ino = 0;
}
