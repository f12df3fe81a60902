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

#endif
