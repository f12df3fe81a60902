/* SPDX-License-Identifier: Apache-2.0 */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *file_kind(mode_t mode)
{
    return S_ISFIFO(mode)   ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISREG(mode)  ? "a regular file"
                            : "not a regular file";
}

/* Reads exactly len bytes (a regular file's size as fstat saw it); a file
 * that shrank meanwhile gives fewer. Returns the count, or -1. */
static ssize_t file_read_all(int fd, char *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* The one body of file_read and file_read_at: the file open on fd, judged
 * by its own status (so that what is checked is what is read), named name
 * at the start of every message. */
static char *file_read_fd(int fd, const char *name, size_t max, size_t *len, struct stat *st, char *err, size_t errlen)
{
    char *buf = NULL;
    ssize_t got;

    if (fstat(fd, st) != 0) {
        snprintf(err, errlen, "%s: cannot read: %s", name, strerror(errno));
    } else if (!S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "%s: cannot read: it is %s, not a regular file; put the file itself there", name,
                 file_kind(st->st_mode));
    } else if ((size_t)st->st_size > max) {
        snprintf(err, errlen, "%s: cannot read: larger than %zu bytes", name, max);
    } else if ((buf = malloc((size_t)st->st_size + 1)) == NULL) {
        snprintf(err, errlen, "%s: cannot read: out of memory", name);
    } else if ((got = file_read_all(fd, buf, (size_t)st->st_size)) < 0) {
        snprintf(err, errlen, "%s: cannot read: %s", name, strerror(errno));
        file_free(buf, (size_t)st->st_size);
        buf = NULL;
    } else {
        buf[got] = '\0';
        *len = (size_t)got;
    }
    return buf;
}

char *file_read(const char *path, size_t max, size_t *len, struct stat *st, char *err, size_t errlen)
{
    struct stat own;
    char *buf = NULL;
    /* O_NONBLOCK: opening a FIFO returns at once instead of waiting for a
     * writer; it changes nothing for the regular files that are read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

    if (fd < 0)
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    else
        buf = file_read_fd(fd, path, max, len, st != NULL ? st : &own, err, errlen);
    if (fd >= 0)
        close(fd);
    return buf;
}

int file_read_at(int dirfd, const char *name, const char *path, const char *what, size_t max, char **text, size_t *len,
                 char *err, size_t errlen)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    char label[PATH_MAX + 64];
    struct stat st;

    *text = NULL;
    *len = 0;
    if (fd < 0 && errno == ENOENT)
        return 1;
    snprintf(label, sizeof(label), "%s %s", what, path);
    if (fd < 0 && errno == ELOOP)
        snprintf(err, errlen, "%s is a symbolic link; it must be a regular file", label);
    else if (fd < 0)
        snprintf(err, errlen, "%s: cannot read: %s", label, strerror(errno));
    else
        *text = file_read_fd(fd, label, max, len, &st, err, errlen);
    if (fd >= 0)
        close(fd);
    return *text != NULL ? 0 : -1;
}

void file_free(char *buf, size_t len)
{
    if (buf == NULL)
        return;
    OPENSSL_cleanse(buf, len);
    free(buf);
}

int file_open_own_dir(const char *dir, const char *what, const char *harm, char *err, size_t errlen)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    uid_t euid = geteuid();
    struct stat st;

    if (fd < 0) {
        if (errno != ENOENT)
            snprintf(err, errlen, "%s %s: cannot open: %s", what, dir, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s %s: %s", what, dir, strerror(errno));
    } else if (st.st_uid != euid && st.st_uid != 0) {
        snprintf(err, errlen,
                 "%s %s is owned by uid %u, not by this process's uid %u or root: its owner could %s; chown it "
                 "to uid %u or use a directory of your own",
                 what, dir, (unsigned)st.st_uid, (unsigned)euid, harm, (unsigned)euid);
    } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        snprintf(err, errlen,
                 "%s %s is writable by group or others (mode %04o): they could %s; chmod go-w it, or use a "
                 "directory of your own",
                 what, dir, (unsigned)(st.st_mode & 07777), harm);
    } else {
        return fd;
    }
    close(fd);
    errno = EACCES;
    return -1;
}

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
