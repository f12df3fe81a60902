/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keyfile: judges the permissions of the files an operator names as keys
 * or certificates, reads private keys, and writes keys. The files
 * themselves are read with util/file.h's file_read: regular files only,
 * never blocking.
 */
#ifndef OIDC_KEYFILE_H
#define OIDC_KEYFILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <openssl/evp.h>

/* Writes a warning into msg and returns 1 when the private key file path,
 * whose status is st, is readable by group or others; 0 otherwise. */
int keyfile_private_mode_warning(const char *path, const struct stat *st, char *msg, size_t len);

/* Writes a warning into msg and returns 1 when the directory dir can be
 * written by users other than its owner and group, on a file system
 * mounted read-write: they could add or replace the files read from it.
 * what names the directory's role ("key directory"). With sticky set,
 * a sticky directory (others may add files but not replace anyone
 * else's) passes. A directory that cannot be looked at returns 0: the
 * read that follows reports it. */
int keyfile_dir_mode_warning(const char *dir, const char *what, int sticky_ok, char *msg, size_t len);

/* OpenSSL's pem_password_cb that answers with no pass phrase: its default
 * would ask on the terminal, where a server (or a script) has nobody to
 * answer, and encrypted keys are not supported anyway. Pass it to every
 * PEM_read_bio_* call. */
int keyfile_no_password(char *buf, int size, int rwflag, void *u);

/* The first private key (PKCS#1, PKCS#8 or SEC1) of the PEM text pem, or
 * NULL when it holds none (an encrypted one counts as none). */
EVP_PKEY *keyfile_private_from_pem(const char *pem, size_t len);

/* Reads the first private key of the PEM file path (as kube-apiserver's
 * sa.key), through file_read with pem.h's PEM_MAX_FILE_SIZE cap. NULL with
 * a message naming the file otherwise: unreadable, not a regular file, too
 * large, or no unencrypted PKCS#1, PKCS#8 or SEC1 private key. */
EVP_PKEY *keyfile_read_private(const char *path, char *err, size_t errlen);

/* Writes pkey as PEM (PKCS#8 when private, else PKIX) over name in the
 * directory dirfd, with file_write_atomic_at: a crash never leaves half a
 * key behind. The PEM is built in memory, in a BIO that wipes its buffer
 * when freed. 0, or -1 with errno set. */
int keyfile_write_pem_at(int dirfd, const char *name, EVP_PKEY *pkey, int private, mode_t mode);

#endif
