/*
 * keyfile: reads the files an operator names as keys or certificates, and
 * judges their permissions, without ever blocking on what is not a file.
 *
 * open(2) of a FIFO waits for a writer and read(2) of a device may never
 * return, so a FIFO left where a key file was would freeze whoever reads
 * it. Files are opened non-blocking and their type is checked on the open
 * descriptor: anything but a regular file is refused, naming the path.
 */
#ifndef OIDC_KEYFILE_H
#define OIDC_KEYFILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <openssl/evp.h>

/* Reads the regular file at path, at most max bytes, into a new buffer
 * (NUL-terminated, *len bytes before the NUL). The file's status, as of
 * the open descriptor, goes to *st when st is not NULL. Returns NULL with
 * a message naming path in err: missing, unreadable, not a regular file
 * (a FIFO, socket, device or directory), or larger than max. Release the
 * buffer with keyfile_free. */
char *keyfile_read(const char *path, size_t max, size_t *len, struct stat *st, char *err, size_t errlen);

/* Wipes (the text may hold a private key) and frees what keyfile_read
 * returned; NULL is fine. */
void keyfile_free(char *buf, size_t len);

/* What kind of file a mode is, for messages: "a FIFO", "a directory", ... */
const char *keyfile_kind(mode_t mode);

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

/* Opens the directory dir, where this server keeps what it writes itself
 * (what: "state directory", ...), and checks the directory it reached, so
 * that the checked one is the one used: owned by the effective uid or
 * root, not writable by group or others, or whoever can write there could
 * do harm ("make this server publish keys"). Returns the descriptor, or
 * -1 with errno kept and, unless the directory is missing (ENOENT), the
 * reason, naming dir, in err. */
int keyfile_open_own_dir(const char *dir, const char *what, const char *harm, char *err, size_t errlen);

/* Reads the file name in the directory dirfd (path: the same, for
 * messages; what: "state file", ...) into *text, NUL-terminated, *len
 * bytes; free() it. A link is refused rather than followed, and so is
 * anything but a regular file (opened without blocking: a FIFO planted
 * there cannot hang the reader) or a file over max bytes. Returns 0, 1
 * when there is no such file, -1 with the reason in err. */
int keyfile_read_at(int dirfd, const char *name, const char *path, const char *what, size_t max, char **text,
                    size_t *len, char *err, size_t errlen);

/* Writes pkey as PEM (PKCS#8 when private, else PKIX) over name in the
 * directory dirfd, with file_write_atomic_at: a crash never leaves half a
 * key behind. The PEM is built in memory, in a BIO that wipes its buffer
 * when freed. 0, or -1 with errno set. */
int keyfile_write_pem_at(int dirfd, const char *name, EVP_PKEY *pkey, int private, mode_t mode);

#endif
