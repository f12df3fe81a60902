/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch: inotify watches on the key files, so a rotation is seen within
 * milliseconds. A file is watched through its directory, which catches
 * atomic renames over it and the kubelet's "..data" symlink swap in a
 * Secret or ConfigMap volume; events about other files in that directory
 * (logs, the state file, unrelated certificates) are ignored.
 */
#ifndef OIDC_WATCH_H
#define OIDC_WATCH_H

#include <stddef.h>

struct watch;

struct watch *watch_create(void);

/* Watches paths (files or directories) as they are now, forgetting what
 * was watched for earlier layouts. Called before each read of the files:
 * whatever changes after it raises an event. */
void watch_reset(struct watch *w, char *const *paths, size_t npaths);

/* Adds watches on directories, for any change of any entry in them (a
 * fleet's issuer files and each issuer's key files), after watch_reset:
 * one watch per directory however many files it holds, and no look at
 * the files themselves, so that a fleet of thousands is watched at the
 * cost of its directories. A kubelet volume's "..data" swap happens in
 * the directory and is seen. */
void watch_add_dirs(struct watch *w, char *const *dirs, size_t ndirs);

/* The descriptor to poll for POLLIN, or -1 when inotify is unavailable. */
int watch_fd(const struct watch *w);

/* Reads the pending events; 1 when one of them concerns a watched path. */
int watch_read(struct watch *w);

void watch_free(struct watch *w);

#endif
