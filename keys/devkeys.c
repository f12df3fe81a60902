#include "keys/devkeys.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"

/* Writes pkey to path (with mode) as PEM, private or public, with
 * file_write_atomic: a crash never leaves half a key behind. The PEM is
 * built in memory first; a memory BIO wipes its buffer when freed. */
static int devkeys_write(const char *path, mode_t mode, EVP_PKEY *pkey, int private, char *err, size_t errlen)
{
    BIO *mem = BIO_new(BIO_s_mem());
    char *pem;
    long len;
    int rc = -1;

    if (mem == NULL ||
        (private ? PEM_write_bio_PrivateKey(mem, pkey, NULL, NULL, 0, NULL, NULL) : PEM_write_bio_PUBKEY(mem, pkey)) !=
            1 ||
        (len = BIO_get_mem_data(mem, &pem)) <= 0)
        snprintf(err, errlen, "%s: cannot write: PEM encoding failed", path);
    else if (file_write_atomic(path, pem, (size_t)len, mode) != 0)
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    else
        rc = 0;
    BIO_free(mem);
    return rc;
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
