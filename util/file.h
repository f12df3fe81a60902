/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file: the one way this program reads a file an operator or its own
 * state names, and the one way it replaces a file.
 *
 * Reading: key and certificate files, CA bundles, token and secret files,
 * the config file, state files. open(2) of a FIFO waits for a writer and
 * read(2) of a device may never return, so a FIFO left where such a file
 * was would freeze whoever reads it (a reload pass, the --upstream
 * mirror's refreshes, and with them a prompt exit). Files are opened
 * non-blocking, their type is checked on the open descriptor, and
 * anything but a regular file is refused, naming the path; so is a file
 * over the caller's size limit. Libraries that open files themselves
 * (OpenSSL's *_file functions, libcurl's CURLOPT_CAINFO) are given bytes
 * read here instead.
 *
 * Replacing: the one way this program replaces a file, so that a reader (a
 * restarted server reading its state, a web server serving an exported
 * document, `dev` finding its key pair) sees the old bytes or the new ones,
 * never a torn file, and a crash leaves no half-written one in place.
 *
 * The new bytes go to NAME.tmp beside the target: any file or link left at
 * that name is removed first (unlinking a link removes the link, not its
 * target), and it is created with O_EXCL | O_NOFOLLOW, so one planted
 * between the two steps makes the write fail rather than be followed. It
 * gets exactly the given mode (whatever the umask), is flushed to disk,
 * renamed over the target, and the directory is flushed so that the
 * rename survives a crash too. One writer per target at a time: two at
 * once would share NAME.tmp.
 */
#ifndef OIDC_FILE_H
#define OIDC_FILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Reads the regular file at path, at most max bytes, into a new buffer
 * (NUL-terminated, *len bytes before the NUL). The file's status, as of
 * the open descriptor, goes to *st when st is not NULL. Returns NULL with
 * a message starting with path in err: missing, unreadable, not a regular
 * file (a FIFO, socket, device or directory), or larger than max. Release
 * the buffer with file_free. */
char *file_read(const char *path, size_t max, size_t *len, struct stat *st, char *err, size_t errlen);

/* Reads the file name in the directory dirfd the same way (path: the
 * same, for messages; what: "state file", ..., starts them), and refuses
 * a symbolic link rather than follow it. Returns 0 with the buffer in
 * *text (release it with file_free), 1 when there is no such file, -1
 * with the reason in err. */
int file_read_at(int dirfd, const char *name, const char *path, const char *what, size_t max, char **text, size_t *len,
                 char *err, size_t errlen);

/* Wipes (the text may hold a private key or a token) and frees what
 * file_read or file_read_at returned; NULL is fine. */
void file_free(char *buf, size_t len);

/* What kind of file a mode is, for messages: "a FIFO", "a directory", ... */
const char *file_kind(mode_t mode);

/* Opens the directory dir, where this server keeps or creates what only
 * it may change (what: "state directory", "--listen unix:PATH: the
 * socket's directory", ...), and checks the directory it reached, so that
 * the checked one is the one used: owned by the effective uid or root,
 * not writable by group or others, or whoever can write there could do
 * harm ("make this server publish keys"). Returns the descriptor, or -1
 * with errno kept and, unless the directory is missing (ENOENT), the
 * reason, naming dir, in err. */
int file_open_own_dir(const char *dir, const char *what, const char *harm, char *err, size_t errlen);

/* Replaces name (one path component) in the directory dirfd, an open
 * directory the caller has checked, with the len bytes of buf. Returns 0,
 * or -1 with errno set and nothing left behind. */
int file_write_atomic_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode);

/* The same for a path, in the directory path names (or the current one). */
int file_write_atomic(const char *path, const void *buf, size_t len, mode_t mode);

#endif
