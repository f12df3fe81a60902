/*
 * util/file.c: the atomic file replacement every writer uses (state file,
 * exported documents, the dev key pair).
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
 * directory's #12 guarantee). */
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
