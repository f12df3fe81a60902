#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes all of buf to fd; short writes and interruptions are retried. */
static int file_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Creates tmp in dirfd afresh and fills it: see file.h for why the name is
 * removed first and then created exclusively, without following a link. */
static int file_write_new(int dirfd, const char *tmp, const void *buf, size_t len, mode_t mode)
{
    int fd, ok;

    if (unlinkat(dirfd, tmp, 0) != 0 && errno != ENOENT)
        return -1;
    if ((fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)) < 0)
        return -1;
    ok = fchmod(fd, mode) == 0 && file_write_all(fd, buf, len) == 0 && fsync(fd) == 0;
    if (close(fd) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

int file_write_atomic_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode)
{
    char tmp[NAME_MAX + 1];
    int saved;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (file_write_new(dirfd, tmp, buf, len, mode) == 0 && renameat(dirfd, tmp, dirfd, name) == 0) {
        fsync(dirfd); /* makes the rename itself durable; the data already is */
        return 0;
    }
    saved = errno ? errno : EIO;
    unlinkat(dirfd, tmp, 0);
    errno = saved;
    return -1;
}

int file_write_atomic(const char *path, const void *buf, size_t len, mode_t mode)
{
    char dir[PATH_MAX], base[PATH_MAX];
    int dirfd, rc, saved;

    if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(base, dir, sizeof(base));
    if ((dirfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -1;
    rc = file_write_atomic_at(dirfd, basename(base), buf, len, mode);
    saved = errno;
    close(dirfd);
    errno = saved;
    return rc;
}
