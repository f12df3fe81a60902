/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/file.c: the atomic file replacement every writer uses (state file,
 * exported documents, the dev key pair), and the one reader of the files
 * this program is named (regular files only, never blocking).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"
#include "util/file.h"

static char dir[64];

static void make_dir(void)
{
    tmpdir_make(dir, "file");
}

static void remove_dir(void)
{
    tmpdir_remove(dir);
    leak_check();
}

TestSuite(file, .init = make_dir, .fini = remove_dir);

static void path_in_dir(const char *name, char *path)
{
    snprintf(path, PATH_MAX, "%s/%s", dir, name);
}

static char *read_all(const char *path, size_t *len)
{
    static char buf[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    n = read(fd, buf, sizeof(buf));
    close(fd);
    cr_assert_geq(n, 0);
    *len = (size_t)n;
    return buf;
}

/* Only the target is left in the directory: no temporary file. */
static void expect_only(const char *name)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof(cmd), "test \"$(ls -A '%s')\" = '%s'", dir, name);
    cr_expect_eq(system(cmd), 0, "%s holds something besides %s", dir, name);
}

Test(file, replaces_the_target_with_the_exact_mode)
{
    char path[PATH_MAX];
    size_t len;
    struct stat st;
    mode_t old = umask(077);

    path_in_dir("doc.json", path);
    cr_assert_eq(file_write_atomic(path, "old", 3, 0644), 0, "%s", strerror(errno));
    cr_assert_eq(file_write_atomic(path, "new bytes", 9, 0644), 0, "%s", strerror(errno));
    umask(old);
    char *got = read_all(path, &len);
    cr_expect_eq(len, 9);
    cr_expect_eq(memcmp(got, "new bytes", 9), 0);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0644, "mode %o: the umask must not narrow it", st.st_mode & 07777);
    expect_only("doc.json");
}

/* A link planted at NAME.tmp is removed, never written through (the state
 * directory's guarantee). */
Test(file, never_writes_through_a_planted_link)
{
    char victim[PATH_MAX], link[PATH_MAX], target[PATH_MAX];
    size_t len;
    struct stat st;
    int dirfd;

    snprintf(victim, sizeof(victim), "%s.victim", dir);
    path_in_dir("keys.json.tmp", link);
    path_in_dir("keys.json", target);
    FILE *f = fopen(victim, "w");
    cr_assert_not_null(f);
    fputs("precious\n", f);
    fclose(f);
    cr_assert_eq(symlink(victim, link), 0);
    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_eq(file_write_atomic_at(dirfd, "keys.json", "{}\n", 3, 0600), 0, "%s", strerror(errno));
    close(dirfd);
    char *got = read_all(victim, &len);
    cr_expect_eq(len, 9);
    cr_expect_eq(memcmp(got, "precious\n", 9), 0, "the link's target was written");
    unlink(victim);
    cr_assert_eq(lstat(target, &st), 0);
    cr_expect(S_ISREG(st.st_mode));
    cr_expect_eq(st.st_mode & 07777, 0600);
    expect_only("keys.json");
}

/* A rename that fails (the target is a directory) leaves the target as it
 * was and no temporary file. */
Test(file, failure_leaves_nothing_behind)
{
    char path[PATH_MAX];
    struct stat st;

    path_in_dir("doc.json", path);
    cr_assert_eq(mkdir(path, 0755), 0);
    cr_expect_eq(file_write_atomic(path, "new", 3, 0644), -1);
    cr_expect_eq(errno, EISDIR, "%s", strerror(errno));
    cr_assert_eq(stat(path, &st), 0);
    cr_expect(S_ISDIR(st.st_mode));
    expect_only("doc.json");
}

Test(file, missing_directory_is_an_error)
{
    char path[PATH_MAX];

    path_in_dir("missing/doc.json", path);
    cr_expect_eq(file_write_atomic(path, "x", 1, 0644), -1);
    cr_expect_eq(errno, ENOENT);
}

/* file_read, the one reader of the files this program is named: a
 * regular file comes back whole, NUL-terminated, with its status. */
Test(file, read_returns_the_bytes_and_status)
{
    char path[PATH_MAX], err[512] = "";
    struct stat st;
    size_t len = 0;

    path_in_dir("token", path);
    cr_assert_eq(file_write_atomic(path, "abc\n", 4, 0640), 0);
    char *text = file_read(path, 4, &len, &st, err, sizeof(err));
    cr_assert_not_null(text, "%s", err);
    cr_expect_eq(len, 4);
    cr_expect_str_eq(text, "abc\n");
    cr_expect_eq(st.st_mode & 07777, 0640);
    file_free(text, len);
}

/* Each refusal names the path and says what is wrong; none blocks (a FIFO
 * without a writer would hold open(2) for good: .timeout turns that into a
 * failure). */
Test(file, read_refusals_name_the_path, .timeout = 30)
{
    char fifo[PATH_MAX], big[PATH_MAX], missing[PATH_MAX], want[PATH_MAX + 128], err[PATH_MAX + 256];
    size_t len = 0;
    const struct {
        const char *path, *why;
    } cases[] = {
        {fifo, "cannot read: it is a FIFO, not a regular file; put the file itself there"},
        {dir, "cannot read: it is a directory, not a regular file; put the file itself there"},
        {"/dev/null", "cannot read: it is a character device, not a regular file; put the file itself there"},
        {big, "cannot read: larger than 4 bytes"},
        {missing, "cannot read: No such file or directory"},
    };

    path_in_dir("fifo", fifo);
    path_in_dir("big", big);
    path_in_dir("missing", missing);
    cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", strerror(errno));
    cr_assert_eq(file_write_atomic(big, "12345", 5, 0600), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(want, sizeof(want), "%s: %s", cases[i].path, cases[i].why);
        err[0] = '\0';
        cr_expect_null(file_read(cases[i].path, 4, &len, NULL, err, sizeof(err)), "%s was read", cases[i].path);
        cr_expect_str_eq(err, want);
    }
}

/* file_read_at: the same reader inside a directory the caller opened; a
 * missing file is 1, a link is refused rather than followed, a FIFO
 * refused without blocking. */
Test(file, read_at_refuses_links_and_fifos, .timeout = 30)
{
    char path[PATH_MAX], err[PATH_MAX + 256] = "", *text = NULL;
    size_t len = 0;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    cr_assert_geq(dirfd, 0);
    path_in_dir("state.json", path);
    cr_expect_eq(file_read_at(dirfd, "state.json", path, "state file", 64, &text, &len, err, sizeof(err)), 1);
    cr_assert_eq(file_write_atomic(path, "{}", 2, 0600), 0);
    cr_assert_eq(file_read_at(dirfd, "state.json", path, "state file", 64, &text, &len, err, sizeof(err)), 0, "%s",
                 err);
    cr_expect_str_eq(text, "{}");
    cr_expect_eq(len, 2);
    file_free(text, len);
    cr_assert_eq(symlink(path, strcat(strcpy(err, dir), "/link")), 0);
    cr_expect_eq(file_read_at(dirfd, "link", "L", "state file", 64, &text, &len, err, sizeof(err)), -1);
    cr_expect_str_eq(err, "state file L is a symbolic link; it must be a regular file");
    cr_assert_eq(mkfifoat(dirfd, "fifo", 0600), 0);
    cr_expect_eq(file_read_at(dirfd, "fifo", "F", "state file", 64, &text, &len, err, sizeof(err)), -1);
    cr_expect_str_eq(err, "state file F: cannot read: it is a FIFO, not a regular file; put the file itself there");
    cr_expect_null(text);
    close(dirfd);
}
