/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "keys/pem.h"
#include "util/file.h"

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

/* A pass phrase is never asked for: -1 makes OpenSSL fail the read of an
 * encrypted block instead of prompting. */
int keyfile_no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

/* The text is parsed from memory: the file was read with file_read, never
 * by OpenSSL, which would open the path itself and wait on a FIFO. */
EVP_PKEY *keyfile_private_from_pem(const char *pem, size_t len)
{
    BIO *bio = len <= PEM_MAX_FILE_SIZE ? BIO_new_mem_buf(pem, (int)len) : NULL;
    EVP_PKEY *pk = bio ? PEM_read_bio_PrivateKey(bio, NULL, keyfile_no_password, NULL) : NULL;

    BIO_free(bio);
    ERR_clear_error();
    return pk;
}

/* One loader for every private key file an operator names (the token
 * command's, the one the signing key directory imports), so that each
 * is read the same way and within the same cap. */
EVP_PKEY *keyfile_read_private(const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    char *pem = file_read(path, PEM_MAX_FILE_SIZE, &len, NULL, err, errlen);
    EVP_PKEY *priv = pem != NULL ? keyfile_private_from_pem(pem, len) : NULL;

    if (pem != NULL && priv == NULL)
        snprintf(err, errlen, "%s: no unencrypted PKCS#1, PKCS#8 or SEC1 private key", path);
    file_free(pem, len);
    return priv;
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
