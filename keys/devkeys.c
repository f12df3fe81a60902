#include "keys/devkeys.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes pkey to path (created with mode) as PEM, private or public. The
 * file is written under a temporary name and renamed, so a crash never
 * leaves half a key behind. */
static int devkeys_write(const char *path, mode_t mode, EVP_PKEY *pkey, int private, char *err, size_t errlen)
{
    char tmp[4096];
    FILE *f = NULL;
    int fd, ok;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
        snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    ok = private ? PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL) : PEM_write_PUBKEY(f, pkey);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, ok ? strerror(errno) : "PEM encoding failed");
        unlink(tmp);
        return -1;
    }
    return 0;
}

int devkeys_ensure(const char *dir, char *pub_path, size_t pub_path_len, char *err, size_t errlen)
{
    char key_path[4096];
    EVP_PKEY *pkey;
    int rc;

    snprintf(pub_path, pub_path_len, "%s/sa.pub", dir);
    snprintf(key_path, sizeof(key_path), "%s/sa.key", dir);
    if (access(pub_path, F_OK) == 0)
        return 0;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create directory: %s", dir, strerror(errno));
        return -1;
    }
    if ((pkey = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048)) == NULL) {
        snprintf(err, errlen, "cannot generate an RSA key");
        return -1;
    }
    rc = devkeys_write(key_path, 0600, pkey, 1, err, errlen) == 0 &&
                 devkeys_write(pub_path, 0644, pkey, 0, err, errlen) == 0
             ? 1
             : -1;
    EVP_PKEY_free(pkey);
    return rc;
}
