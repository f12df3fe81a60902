/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/watch.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define WATCH_MASK                                                                                                     \
    (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF |   \
     IN_MOVE_SELF)

/* One watched directory and the entry in it that matters ("" = any). */
struct watch_entry {
    int wd;
    char name[NAME_MAX + 1];
};

struct watch {
    int fd;
    struct watch_entry *entries;
    size_t count;
    size_t cap;
};

struct watch *watch_create(void)
{
    struct watch *w = calloc(1, sizeof(*w));

    if (w != NULL)
        w->fd = -1;
    return w;
}

int watch_fd(const struct watch *w)
{
    return w->fd;
}

static void watch_add(struct watch *w, const char *dir, const char *name)
{
    int wd = inotify_add_watch(w->fd, dir, WATCH_MASK);

    if (wd < 0)
        return;
    if (w->count == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        struct watch_entry *entries = realloc(w->entries, cap * sizeof(*entries));
        if (entries == NULL)
            return;
        w->entries = entries;
        w->cap = cap;
    }
    w->entries[w->count].wd = wd;
    snprintf(w->entries[w->count].name, sizeof(w->entries[0].name), "%s", name);
    w->count++;
}

/* Watches the directory holding path for path's name, and the directory of
 * the file path finally resolves to, when that is elsewhere (a symlink into
 * "..data"), for the resolved name. */
static void watch_file(struct watch *w, const char *path)
{
    char dir[PATH_MAX], base[PATH_MAX], resolved[PATH_MAX];

    snprintf(dir, sizeof(dir), "%s", path);
    snprintf(base, sizeof(base), "%s", path);
    watch_add(w, dirname(dir), basename(base));
    if (realpath(path, resolved) != NULL && strcmp(resolved, path) != 0) {
        snprintf(base, sizeof(base), "%s", resolved);
        watch_add(w, dirname(resolved), basename(base));
    }
}

/* A directory source: any change in it matters, and so does a change to
 * where each of its files really lives (a file rewritten in place). */
static void watch_dir(struct watch *w, const char *path)
{
    struct dirent **names = NULL;
    char entry[PATH_MAX];
    int n;

    watch_add(w, path, "");
    if ((n = scandir(path, &names, NULL, NULL)) < 0)
        return;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            snprintf(entry, sizeof(entry), "%s/%s", path, names[i]->d_name);
            watch_file(w, entry);
        }
        free(names[i]);
    }
    free(names);
}

void watch_reset(struct watch *w, char *const *paths, size_t npaths)
{
    struct stat st;

    /* The inotify descriptor is kept: closing one waits for the kernel to
     * retire its marks, which was seen to take seconds under load. Adding a
     * watch that exists returns it again; the kernel drops watches of
     * deleted directories itself. Only the table of what matters is new. */
    w->count = 0;
    if (w->fd < 0 && (w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
        return;
    for (size_t i = 0; i < npaths; i++) {
        watch_file(w, paths[i]);
        if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode))
            watch_dir(w, paths[i]);
    }
}

void watch_add_dirs(struct watch *w, char *const *dirs, size_t ndirs)
{
    if (w->fd < 0 && (w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
        return;
    for (size_t i = 0; i < ndirs; i++)
        watch_add(w, dirs[i], "");
}

/* The kubelet's atomic writer renames "..data_tmp" to "..data" and creates
 * "..<timestamp>" directories; those names always matter. */
static int watch_relevant(const struct watch *w, const struct inotify_event *ev)
{
    if (ev->mask & IN_Q_OVERFLOW)
        return 1;
    if (ev->len == 0 || strncmp(ev->name, "..", 2) == 0)
        return 1;
    for (size_t i = 0; i < w->count; i++)
        if (w->entries[i].wd == ev->wd && (w->entries[i].name[0] == '\0' || strcmp(w->entries[i].name, ev->name) == 0))
            return 1;
    return 0;
}

int watch_read(struct watch *w)
{
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    int relevant = 0;
    ssize_t n;

    while ((n = read(w->fd, buf, sizeof(buf))) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            relevant |= watch_relevant(w, ev);
            p += sizeof(*ev) + ev->len;
        }
    }
    return relevant;
}

void watch_free(struct watch *w)
{
    if (w == NULL)
        return;
    if (w->fd >= 0)
        close(w->fd);
    free(w->entries);
    free(w);
}
