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

/* Connections kube-apiserver may have waiting to be accepted. */
#define UNIX_SOCKET_BACKLOG 64

_Static_assert(sizeof(((struct unix_socket *)0)->path) == sizeof(((struct sockaddr_un *)0)->sun_path),
               "unix_socket.path holds exactly a sun_path");

/* Refuses a path that holds anything but a socket nobody serves, and
 * removes such a stale socket. 0, or -1 (err). */
static int unix_socket_free_path(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    int fd, live;

    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen,
                 "--external-signer-listen unix:%s: the path holds a file that is not a socket; remove it "
                 "or choose another path",
                 path);
        return -1;
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    live = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (fd >= 0)
        close(fd);
    if (live) {
        snprintf(err, errlen,
                 "--external-signer-listen unix:%s: another process serves this socket; stop it or "
                 "choose another path",
                 path);
        return -1;
    }
    unlink(path);
    return 0;
}

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

/* Gives the socket the mode and owner the flags ask for. */
static int unix_socket_own(const struct config *cfg, const char *path, char *err, size_t errlen)
{
    const char *owner = cfg->external_signer_socket_owner;
    mode_t mode = strcmp(cfg->external_signer_socket_mode, "0660") == 0 ? 0660 : 0600;
    unsigned uid = (unsigned)-1, gid = (unsigned)-1;
    char user[256] = "";
    const char *colon = owner ? strchr(owner, ':') : NULL;

    if (owner != NULL) {
        snprintf(user, sizeof(user), "%.*s", (int)(colon ? (size_t)(colon - owner) : strlen(owner)), owner);
        if ((user[0] && unix_socket_id(user, 0, &uid) != 0) || (colon && unix_socket_id(colon + 1, 1, &gid) != 0)) {
            snprintf(err, errlen, "--external-signer-socket-owner %s: no such user or group", owner);
            return -1;
        }
        if (chown(path, (uid_t)uid, (gid_t)gid) != 0) {
            snprintf(err, errlen, "--external-signer-socket-owner %s: cannot give unix:%s to it: %s%s", owner, path,
                     strerror(errno), errno == EPERM ? " (another user needs root; a group, membership)" : "");
            return -1;
        }
    }
    if (chmod(path, mode) != 0) {
        snprintf(err, errlen, "--external-signer-listen unix:%s: cannot chmod: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Binds fd to the path under a umask that leaves only the owner (umask is
 * per process: the threads that run now create no files). */
static int unix_socket_bind(struct unix_socket *s, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    mode_t old;
    int rc;

    memcpy(sa.sun_path, s->path, sizeof(sa.sun_path));
    old = umask(0177);
    rc = bind(s->fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc != 0 || listen(s->fd, UNIX_SOCKET_BACKLOG) != 0 || stat(s->path, &st) != 0) {
        snprintf(err, errlen,
                 "--external-signer-listen unix:%s: cannot listen: %s (is its directory there and "
                 "writable?)",
                 s->path, strerror(errno));
        return -1;
    }
    s->ino = st.st_ino;
    return 0;
}

int unix_socket_open(struct unix_socket *s, const struct config *cfg, char *err, size_t errlen)
{
    const char *path = cfg->external_signer_listen + strlen("unix:");

    memset(s, 0, sizeof(*s));
    s->fd = -1;
    if (strlen(path) >= sizeof(s->path)) {
        snprintf(err, errlen, "--external-signer-listen unix:%s: the path is longer than a socket's can be (%zu)", path,
                 sizeof(s->path) - 1);
        return -1;
    }
    memcpy(s->path, path, strlen(path) + 1);
    if (unix_socket_free_path(s->path, err, errlen) != 0)
        return -1;
    if ((s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
        snprintf(err, errlen, "--external-signer-listen unix:%s: cannot create a socket: %s", s->path, strerror(errno));
        return -1;
    }
    if (unix_socket_bind(s, err, errlen) != 0 || unix_socket_own(cfg, s->path, err, errlen) != 0) {
        unix_socket_close(s);
        return -1;
    }
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
