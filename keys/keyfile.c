#include "keys/keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util/file.h"

const char *keyfile_kind(mode_t mode)
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
static ssize_t keyfile_read_all(int fd, char *buf, size_t len)
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

char *keyfile_read(const char *path, size_t max, size_t *len, struct stat *st, char *err, size_t errlen)
{
    struct stat own;
    char *buf = NULL;
    ssize_t got;
    /* O_NONBLOCK: opening a FIFO returns at once instead of waiting for a
     * writer; it changes nothing for the regular files that are read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

    if (st == NULL)
        st = &own;
    if (fd < 0 || fstat(fd, st) != 0) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    } else if (!S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "%s: cannot read: it is %s, not a regular file; put the file itself there", path,
                 keyfile_kind(st->st_mode));
    } else if ((size_t)st->st_size > max) {
        snprintf(err, errlen, "%s: cannot read: larger than %zu bytes", path, max);
    } else if ((buf = malloc((size_t)st->st_size + 1)) == NULL) {
        snprintf(err, errlen, "%s: cannot read: out of memory", path);
    } else if ((got = keyfile_read_all(fd, buf, (size_t)st->st_size)) < 0) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        keyfile_free(buf, (size_t)st->st_size);
        buf = NULL;
    } else {
        buf[got] = '\0';
        *len = (size_t)got;
    }
    if (fd >= 0)
        close(fd);
    return buf;
}

void keyfile_free(char *buf, size_t len)
{
    if (buf == NULL)
        return;
    OPENSSL_cleanse(buf, len);
    free(buf);
}

/* A private key that group or others can read may already have leaked
 * through a backup, a debug shell or another container sharing the volume. */
int keyfile_private_mode_warning(const char *path, const struct stat *st, char *msg, size_t len)
{
    if ((st->st_mode & (S_IRGRP | S_IROTH)) == 0)
        return 0;
    snprintf(msg, len, "%s: private key file is readable by group or others (mode %04o); chmod 600 it", path,
             (unsigned)(st->st_mode & 07777));
    return 1;
}

/* A Kubernetes Secret or ConfigMap volume is a world-writable tmpfs
 * mounted read-only: nobody can write there, whatever the mode says. */
int keyfile_dir_mode_warning(const char *dir, const char *what, int sticky_ok, char *msg, size_t len)
{
    struct stat st;
    struct statvfs fs;

    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || (st.st_mode & S_IWOTH) == 0)
        return 0;
    if (sticky_ok && (st.st_mode & S_ISVTX) != 0)
        return 0;
    if (statvfs(dir, &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0)
        return 0;
    snprintf(msg, len,
             "%s: %s is writable by others (mode %04o): any local user can add or replace the files read "
             "from it; chmod o-w it",
             dir, what, (unsigned)(st.st_mode & 07777));
    return 1;
}

int keyfile_open_own_dir(const char *dir, const char *what, const char *harm, char *err, size_t errlen)
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
                 "subdirectory (serve creates a missing one with mode 0700)",
                 what, dir, (unsigned)(st.st_mode & 07777), harm);
    } else {
        return fd;
    }
    close(fd);
    errno = EACCES;
    return -1;
}

int keyfile_read_at(int dirfd, const char *name, const char *path, const char *what, size_t max, char **text,
                    size_t *len, char *err, size_t errlen)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), rc = -1;
    struct stat st;

    *text = NULL;
    *len = 0;
    if (fd < 0 && errno == ENOENT)
        return 1;
    if (fd < 0 && errno == ELOOP)
        snprintf(err, errlen, "%s %s is a symbolic link; it must be a regular file", what, path);
    else if (fd < 0 || fstat(fd, &st) != 0)
        snprintf(err, errlen, "%s %s: cannot read: %s", what, path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(err, errlen, "%s %s is not a regular file", what, path);
    else if ((size_t)st.st_size > max || (*text = calloc(1, (size_t)st.st_size + 1)) == NULL)
        snprintf(err, errlen, "%s %s: larger than %zu bytes", what, path, max);
    else if (keyfile_read_all(fd, *text, (size_t)st.st_size) != st.st_size)
        snprintf(err, errlen, "%s %s: cannot read: %s", what, path, errno ? strerror(errno) : "it shrank");
    else
        rc = 0;
    if (rc == 0)
        *len = (size_t)st.st_size;
    if (fd >= 0)
        close(fd);
    if (rc != 0) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

int keyfile_write_pem_at(int dirfd, const char *name, EVP_PKEY *pkey, int private, mode_t mode)
{
    BIO *mem = BIO_new(BIO_s_mem());
    char *pem;
    long len;
    int rc = -1;

    if (mem != NULL &&
        (private ? PEM_write_bio_PrivateKey(mem, pkey, NULL, NULL, 0, NULL, NULL) : PEM_write_bio_PUBKEY(mem, pkey)) ==
            1 &&
        (len = BIO_get_mem_data(mem, &pem)) > 0)
        rc = file_write_atomic_at(dirfd, name, pem, (size_t)len, mode);
    else
        errno = ENOMEM;
    BIO_free(mem);
    return rc;
}
