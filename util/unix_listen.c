/* SPDX-License-Identifier: Apache-2.0 */
#include "util/unix_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/file.h"

/* What one call works on: the path as a socket address, and its directory,
 * opened and checked, with the last component to use inside it. */
struct unix_listen_at {
    struct sockaddr_un sa;
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char base[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int dirfd;
};

/* Opens the socket's directory as file_open_own_dir checks it: nobody but
 * this process's user (or root) may add, remove or rename entries there. */
static int unix_listen_open_dir(struct unix_listen_at *at, const char *path, const char *flag, char *err, size_t errlen)
{
    char what[sizeof(at->dir) + 64], copy[sizeof(at->dir)];

    snprintf(copy, sizeof(copy), "%s", path);
    snprintf(at->dir, sizeof(at->dir), "%s", dirname(copy));
    snprintf(copy, sizeof(copy), "%s", path);
    snprintf(at->base, sizeof(at->base), "%s", basename(copy));
    snprintf(what, sizeof(what), "%s unix:%s: the socket's directory", flag, path);
    err[0] = '\0';
    if ((at->dirfd = file_open_own_dir(at->dir, what,
                                       "replace the socket with a link and have what it names given "
                                       "this socket's mode and owner",
                                       err, errlen)) < 0 &&
        err[0] == '\0')
        snprintf(err, errlen, "%s unix:%s: cannot listen: the directory %s does not exist", flag, path, at->dir);
    return at->dirfd;
}

/* Whether a socket file is served: connecting is refused (ECONNREFUSED)
 * only when nobody listens on it. The probe does not block: a full
 * backlog (EAGAIN) is a live server too. 1 served, 0 stale, -1 unknown
 * (errno). */
static int unix_listen_served(const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), rc, saved;

    if (fd < 0)
        return -1;
    rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ? 1
         : errno == ECONNREFUSED                                    ? 0
         : errno == EAGAIN || errno == EINPROGRESS                  ? 1
                                                                    : -1;
    saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* Frees the path: nothing there, or a stale socket, removed. Anything else
 * is refused. 0, or -1 (err). */
static int unix_listen_free_path(const struct unix_listen_at *at, const char *path, const char *flag, char *err,
                                 size_t errlen)
{
    struct stat st;
    int served;

    if (fstatat(at->dirfd, at->base, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s unix:%s: the path holds %s, not a socket; remove it or choose another path", flag,
                 path, S_ISLNK(st.st_mode) ? "a symbolic link" : file_kind(st.st_mode));
        return -1;
    }
    if ((served = unix_listen_served(&at->sa)) == 0 && unlinkat(at->dirfd, at->base, 0) == 0)
        return 0;
    if (served > 0)
        snprintf(err, errlen, "%s unix:%s: another process serves this socket; stop it or choose another path", flag,
                 path);
    else
        snprintf(err, errlen,
                 "%s unix:%s: cannot tell whether another process serves this socket (%s); remove it "
                 "if none does",
                 flag, path, strerror(errno));
    return -1;
}

/* Binds fd to the path with exactly mode: bind(2) gives the file the
 * unbound socket's mode less the umask, so the socket's mode is set first
 * and the umask cleared meanwhile. The file is never, even for an instant,
 * more open than asked, and no chmod of a path follows. */
static int unix_listen_bind(int fd, const struct unix_listen_at *at, mode_t mode)
{
    mode_t old;
    int rc, saved;

    if (fchmod(fd, mode) != 0)
        return -1;
    old = umask(0);
    rc = bind(fd, (const struct sockaddr *)&at->sa, sizeof(at->sa));
    saved = errno;
    umask(old);
    errno = saved;
    return rc;
}

/* Binds, gives the socket file its owner and listens; *ino gets the file's
 * inode. The file is looked up in the checked directory and a link is
 * never followed, so nothing but the socket just created is chowned. */
static int unix_listen_create(int fd, const struct unix_listen_at *at, const struct unix_listen *l, ino_t *ino)
{
    struct stat st;

    if (unix_listen_bind(fd, at, l->mode) != 0)
        return -1;
    if (fstatat(at->dirfd, at->base, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    *ino = st.st_ino;
    if (!S_ISSOCK(st.st_mode)) {
        errno = EEXIST;
        return -1;
    }
    if ((l->uid != (uid_t)-1 || l->gid != (gid_t)-1) &&
        fchownat(at->dirfd, at->base, l->uid, l->gid, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    return listen(fd, l->backlog);
}

int unix_listen_open(const char *path, const struct unix_listen *l, ino_t *ino, char *err, size_t errlen)
{
    struct unix_listen_at at = {.sa = {.sun_family = AF_UNIX}, .dirfd = -1};
    int fd = -1, saved;
    struct stat st;

    *ino = 0;
    if (strlen(path) >= sizeof(at.sa.sun_path)) {
        snprintf(err, errlen, "%s unix:%s: the path is longer than a socket's can be (%zu)", l->flag, path,
                 sizeof(at.sa.sun_path) - 1);
        return -1;
    }
    memcpy(at.sa.sun_path, path, strlen(path) + 1);
    if (unix_listen_open_dir(&at, path, l->flag, err, errlen) < 0)
        return -1;
    if (unix_listen_free_path(&at, path, l->flag, err, errlen) == 0 &&
        (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) >= 0 &&
        unix_listen_create(fd, &at, l, ino) == 0) {
        close(at.dirfd);
        return fd;
    }
    saved = errno;
    if (fd >= 0) {
        snprintf(err, errlen, "%s unix:%s: cannot listen: %s%s", l->flag, path, strerror(saved),
                 saved == EPERM && (l->uid != (uid_t)-1 || l->gid != (gid_t)-1)
                     ? " (giving the socket to another user needs root; to a group, membership)"
                     : "");
        close(fd);
    } else if (err[0] == '\0') {
        snprintf(err, errlen, "%s unix:%s: cannot create a socket: %s", l->flag, path, strerror(saved));
    }
    /* only the socket this call created, never a file put there since */
    if (*ino != 0 && fstatat(at.dirfd, at.base, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == *ino &&
        S_ISSOCK(st.st_mode))
        unlinkat(at.dirfd, at.base, 0);
    *ino = 0;
    close(at.dirfd);
    return -1;
}
