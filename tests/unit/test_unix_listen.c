/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/unix_listen.c: the listening Unix sockets of --listen unix:PATH and
 * --external-signer-listen unix:PATH. Its directory must be one nobody
 * else can write to (else the socket could be swapped for a link between
 * bind and chown, and a file of the attacker's choosing given away); the
 * socket gets exactly the mode and owner asked for, from its creation and
 * without following a link; a socket file already there is replaced only
 * when connecting to it is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "test_support.h"
#include "util/unix_listen.h"

static char dir[64];

static void make_dir(void)
{
    tmpdir_make(dir, "unixlisten");
}

static void remove_dir(void)
{
    tmpdir_remove(dir);
    leak_check();
}

TestSuite(unix_listen, .init = make_dir, .fini = remove_dir);

static const struct unix_listen plain = {
    .flag = "--listen", .mode = 0666, .uid = (uid_t)-1, .gid = (gid_t)-1, .backlog = 8};

/* dir/name into path. */
static void path_in(const char *d, const char *name, char *path)
{
    cr_assert_lt((size_t)snprintf(path, PATH_MAX, "%s/%s", d, name), PATH_MAX);
}

/* A socket file bound at path; listening when listening, else left as a
 * killed server leaves it (nobody accepts: connecting is refused). Returns
 * the descriptor, or -1 after closing it. */
static int bound_socket(const char *path, int listening)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
    if (listening) {
        cr_assert_eq(listen(fd, 1), 0);
        return fd;
    }
    close(fd);
    return -1;
}

/* A directory group or others can write to is refused before anything is
 * created in it, naming the flag, the path and the directory. */
Test(unix_listen, refuses_a_directory_others_can_write)
{
    const mode_t modes[] = {0777, 01777, 0770, 0702};
    char sub[PATH_MAX], path[PATH_MAX], err[1024], want[PATH_MAX * 2];
    ino_t ino = 1;
    struct stat st;

    path_in(dir, "shared", sub);
    path_in(sub, "s.sock", path);
    cr_assert_eq(mkdir(sub, 0700), 0);
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        cr_assert_eq(chmod(sub, modes[i]), 0);
        err[0] = '\0';
        cr_expect_eq(unix_listen_open(path, &plain, &ino, err, sizeof(err)), -1, "mode %04o accepted", modes[i]);
        cr_assert_lt((size_t)snprintf(want, sizeof(want),
                                      "--listen unix:%s: the socket's directory %s is writable by group or others "
                                      "(mode %04o)",
                                      path, sub, (unsigned)modes[i]),
                     sizeof(want));
        cr_expect_eq(strncmp(err, want, strlen(want)), 0, "%s\nwant %s", err, want);
        cr_expect_eq(ino, 0);
        cr_expect_eq(lstat(path, &st), -1, "a socket was left in a refused directory");
    }
}

/* A directory another user owns could be opened up by that user. */
Test(unix_listen, refuses_a_directory_of_another_user)
{
    char sub[PATH_MAX], path[PATH_MAX], err[1024] = "";
    ino_t ino;

    if (geteuid() != 0)
        cr_skip_test("needs root to give a directory away");
    path_in(dir, "theirs", sub);
    path_in(sub, "s.sock", path);
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(chown(sub, 65534, 65534), 0);
    cr_expect_eq(unix_listen_open(path, &plain, &ino, err, sizeof(err)), -1);
    cr_expect_neq(strstr(err, "is owned by uid 65534"), NULL, "%s", err);
}

Test(unix_listen, missing_directory)
{
    char path[PATH_MAX], err[1024] = "", want[PATH_MAX * 2];
    ino_t ino;

    path_in(dir, "none/s.sock", path);
    cr_expect_eq(unix_listen_open(path, &plain, &ino, err, sizeof(err)), -1);
    cr_assert_lt((size_t)snprintf(want, sizeof(want),
                                  "--listen unix:%s: cannot listen: the directory %s/none does not exist", path, dir),
                 sizeof(want));
    cr_expect_str_eq(err, want);
}

/* The mode asked for, whatever the umask: neither narrowed (0666 under
 * umask 077, for a reverse proxy of another user) nor widened. */
Test(unix_listen, exact_mode_whatever_the_umask)
{
    const struct {
        mode_t mode, umask;
    } cases[] = {{0666, 077}, {0600, 0}, {0660, 022}, {0660, 0}};
    char path[PATH_MAX], err[1024] = "";
    struct stat st;
    ino_t ino;

    path_in(dir, "s.sock", path);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct unix_listen l = plain;
        l.mode = cases[i].mode;
        mode_t old = umask(cases[i].umask);
        int fd = unix_listen_open(path, &l, &ino, err, sizeof(err));
        umask(old);
        cr_assert_geq(fd, 0, "%s", err);
        cr_assert_eq(lstat(path, &st), 0);
        cr_expect(S_ISSOCK(st.st_mode));
        cr_expect_eq(st.st_mode & 07777, cases[i].mode, "mode %04o, want %04o (umask %03o)", st.st_mode & 07777,
                     cases[i].mode, cases[i].umask);
        cr_expect_eq(st.st_ino, ino);
        cr_expect_eq(umask(old), old, "the umask was not put back");
        close(fd);
        unlink(path);
    }
}

/* The owner asked for, on the socket itself. */
Test(unix_listen, owner_and_group)
{
    char path[PATH_MAX], err[1024] = "";
    struct unix_listen l = plain;
    struct stat st;
    ino_t ino;
    int fd;

    if (geteuid() != 0)
        cr_skip_test("needs root to give the socket away");
    path_in(dir, "s.sock", path);
    l.mode = 0660;
    l.uid = 65534;
    l.gid = 65534;
    fd = unix_listen_open(path, &l, &ino, err, sizeof(err));
    cr_assert_geq(fd, 0, "%s", err);
    cr_assert_eq(lstat(path, &st), 0);
    cr_expect_eq(st.st_uid, 65534);
    cr_expect_eq(st.st_gid, 65534);
    cr_expect_eq(st.st_mode & 07777, 0660);
    close(fd);
}

/* A link planted at the path is refused, and what it names keeps its
 * mode and owner. */
Test(unix_listen, a_planted_link_is_not_followed)
{
    char path[PATH_MAX], victim[PATH_MAX], err[1024] = "";
    struct unix_listen l = plain;
    struct stat before, after;
    ino_t ino;

    path_in(dir, "victim", victim);
    path_in(dir, "s.sock", path);
    int vfd = open(victim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    cr_assert_geq(vfd, 0);
    close(vfd);
    cr_assert_eq(symlink(victim, path), 0);
    cr_assert_eq(stat(victim, &before), 0);
    l.uid = 65534;
    l.gid = 65534;
    cr_expect_eq(unix_listen_open(path, &l, &ino, err, sizeof(err)), -1);
    cr_expect_neq(strstr(err, "the path holds a symbolic link, not a socket"), NULL, "%s", err);
    cr_assert_eq(stat(victim, &after), 0);
    cr_expect_eq(after.st_mode, before.st_mode);
    cr_expect_eq(after.st_uid, before.st_uid);
    cr_expect_eq(after.st_gid, before.st_gid);
}

/* One rule for what is already at the path: a socket nobody listens on
 * (connecting is refused) is replaced; a served one, or any other file,
 * is refused and left alone. */
Test(unix_listen, stale_socket_replaced_live_one_and_files_refused)
{
    char path[PATH_MAX], err[1024] = "";
    struct stat st;
    ino_t ino;
    int fd, live;

    path_in(dir, "s.sock", path);
    bound_socket(path, 0);
    fd = unix_listen_open(path, &plain, &ino, err, sizeof(err));
    cr_assert_geq(fd, 0, "a stale socket was not replaced: %s", err);
    close(fd);
    unlink(path);

    live = bound_socket(path, 1);
    cr_expect_eq(unix_listen_open(path, &plain, &ino, err, sizeof(err)), -1);
    cr_expect_neq(strstr(err, "another process serves this socket"), NULL, "%s", err);
    cr_expect_eq(lstat(path, &st), 0, "the served socket was removed");
    close(live);
    unlink(path);

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_expect_eq(unix_listen_open(path, &plain, &ino, err, sizeof(err)), -1);
    cr_expect_neq(strstr(err, "the path holds a regular file, not a socket"), NULL, "%s", err);
    cr_expect_eq(lstat(path, &st), 0);
    cr_expect(S_ISREG(st.st_mode));
}
