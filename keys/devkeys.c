/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/devkeys.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys/keyfile.h"

/* Writes pkey into dir as name (keyfile_write_pem_at). */
static int devkeys_write(int dirfd, const char *dir, const char *name, mode_t mode, EVP_PKEY *pkey, int private,
                         char *err, size_t errlen)
{
    if (keyfile_write_pem_at(dirfd, name, pkey, private, mode) == 0)
        return 0;
    snprintf(err, errlen, "%s/%s: cannot write: %s", dir, name, strerror(errno));
    return -1;
}

int devkeys_ensure(const char *dir, char *pub_path, size_t pub_path_len, char *err, size_t errlen)
{
    EVP_PKEY *pkey;
    int rc, dirfd;

    snprintf(pub_path, pub_path_len, "%s/sa.pub", dir);
    if (access(pub_path, F_OK) == 0)
        return 0;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create directory: %s", dir, strerror(errno));
        return -1;
    }
    if ((dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "%s: cannot open directory: %s", dir, strerror(errno));
        return -1;
    }
    if ((pkey = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048)) == NULL) {
        snprintf(err, errlen, "cannot generate an RSA key");
        close(dirfd);
        return -1;
    }
    rc = devkeys_write(dirfd, dir, "sa.key", 0600, pkey, 1, err, errlen) == 0 &&
                 devkeys_write(dirfd, dir, "sa.pub", 0644, pkey, 0, err, errlen) == 0
             ? 1
             : -1;
    EVP_PKEY_free(pkey);
    close(dirfd);
    return rc;
}
