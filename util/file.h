/*
 * file: the one way this program replaces a file, so that a reader (a
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
#include <sys/types.h>

/* Replaces name (one path component) in the directory dirfd, an open
 * directory the caller has checked, with the len bytes of buf. Returns 0,
 * or -1 with errno set and nothing left behind. */
int file_write_atomic_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode);

/* The same for a path, in the directory path names (or the current one). */
int file_write_atomic(const char *path, const void *buf, size_t len, mode_t mode);

#endif
