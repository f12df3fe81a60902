/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keys/: keys/keyset and what a key source may be (files,
 * directories, JWKS files).
 *
 * Expected values (kid, n, x, y) are computed at test time by the openssl CLI
 * and coreutils basenc, independently of the code under test
 * (keys_test_support.h).
 */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"
#include <criterion/parameterized.h>

#include <limits.h>
#include <openssl/core_names.h>
#include <openssl/pem.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "keys/key.h"
#include "keys/keyset.h"
#include "keys/pem.h"
#include "util/file.h"
#include "keys_test_support.h"

TestSuite(keyset, .fini = leak_check);
TestSuite(sources, .fini = leak_check);

/* ------------------------------------------------------------------------ */
/* keyset                                                                     */

/* The warning names the repeated key and where it was repeated. */
static void assert_mentions_duplicate(const char *msg, const char *kid, const char *path)
{
    cr_assert(strcasestr(msg, "duplicate") != NULL || strcasestr(msg, "same public key") != NULL,
              "warning does not say the key is a duplicate: \"%s\"", msg);
    cr_assert(strstr(msg, kid) != NULL, "warning does not name kid %s: \"%s\"", kid, msg);
    cr_assert(strstr(msg, path) != NULL, "warning does not name %s: \"%s\"", path, msg);
}

Test(keyset, duplicate_in_one_file)
{
    struct warns w = {0};
    char kid[KEY_KID_LEN + 1];
    struct keyset *ks = load_one("dup.pem", &w);
    openssl_kid(PUB, fx("rsa2048.pub"), kid);
    cr_assert_str_eq(ks->keys[0].kid, kid);
    cr_assert_eq(w.n, 1, "%d warnings", w.n);
    assert_mentions_duplicate(w.msg[0], kid, fx("dup.pem"));
    keyset_free(ks);
}

/* A copy of a private-key fixture with the given mode, loaded. */
static void load_private_with_mode(mode_t mode, struct warns *w, char *path, size_t len)
{
    char err[1024], cmd[PATH_MAX * 2 + 16];
    struct keyset *ks;
    int fd;

    snprintf(path, len, "/tmp/oidc-mode-XXXXXX");
    cr_assert_geq(fd = mkstemp(path), 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "cp %s %s", fx("ec256.sec1.key"), path);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(chmod(path, mode), 0);
    char *argv[] = {path};
    ks = keyset_load(argv, 1, on_warn, w, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    keyset_free(ks);
    unlink(path);
}

Test(keyset, private_key_mode)
{
    struct warns loose = {0}, tight = {0};
    char path[PATH_MAX];

    load_private_with_mode(0644, &loose, path, sizeof path);
    cr_assert_eq(loose.mode_warnings, 1);
    cr_assert(strstr(loose.mode_msg, path) != NULL, "names the file: %s", loose.mode_msg);
    load_private_with_mode(0600, &tight, path, sizeof path);
    cr_assert_eq(tight.mode_warnings, 0, "%s", tight.mode_msg);
}

Test(keyset, duplicate_across_files)
{
    static const char *const names[] = {"rsa2048.pub", "ec256.pub", "rsa2048.crt", "rsa2048.pub"};
    struct warns w = {0};
    char err[1024], kid[KEY_KID_LEN + 1];
    struct keyset *ks = load(names, COUNT(names), &w, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, 2);
    openssl_kid(PUB, fx("rsa2048.pub"), kid);
    cr_assert_str_eq(ks->keys[0].kid, kid, "the first occurrence is kept");
    cr_assert(strstr(ks->keys[0].source, fx("rsa2048.pub")) != NULL, "source %s", ks->keys[0].source);
    cr_assert_eq(w.n, 2, "%d warnings", w.n);
    assert_mentions_duplicate(w.msg[0], kid, fx("rsa2048.crt"));
    keyset_free(ks);
}

Test(keyset, duplicate_without_callback)
{
    struct keyset *ks = load_one("dup.pem", NULL);
    keyset_free(ks);
}

Test(keyset, small_rsa_warns)
{
    struct warns w = {0};
    struct keyset *ks = load_one("rsa1024.pub", &w);
    cr_assert_eq(ks->keys[0].bits, 1024);
    cr_assert_eq(w.n, 1, "%d warnings", w.n);
    cr_assert(strstr(w.msg[0], "2048") != NULL, "warning does not mention 2048: \"%s\"", w.msg[0]);
    keyset_free(ks);
}

Test(keyset, no_warning_for_good_keys)
{
    static const char *const names[] = {"rsa2048.pub", "rsa4096.pub", "ec256.pub", "ec384.pub", "ec521.padded.pub"};
    struct warns w = {0};
    char err[1024];
    struct keyset *ks = load(names, COUNT(names), &w, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, COUNT(names));
    cr_assert_eq(w.n, 0, "unexpected warning: %s", w.msg[0]);
    keyset_free(ks);
}

/* Files in the given order, then blocks in file order. */
Test(keyset, order_files_then_blocks)
{
    static const char *const files[] = {"rsa4096.pub", "multi.pem", "ec521.padded.sec1.key"};
    static const struct {
        const char *pub, *file;
    } want[] = {
        {"rsa4096.pub", "rsa4096.pub"},
        {"rsa2048.pub", "multi.pem"},
        {"ec256.pub", "multi.pem"},
        {"ec384.pub", "multi.pem"},
        {"ec521.padded.pub", "ec521.padded.sec1.key"},
    };
    char err[1024];
    struct keyset *ks = load(files, COUNT(files), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, COUNT(want), "%zu keys", ks->count);
    for (size_t i = 0; i < COUNT(want); i++) {
        char kid[KEY_KID_LEN + 1];
        openssl_kid(PUB, fx(want[i].pub), kid);
        cr_assert_str_eq(ks->keys[i].kid, kid, "key %zu is not %s", i, want[i].pub);
        cr_assert(strstr(ks->keys[i].source, fx(want[i].file)) != NULL, "key %zu source %s", i, ks->keys[i].source);
    }
    keyset_free(ks);
}

Test(keyset, find_by_kid)
{
    char err[1024];
    static const char *const names[] = {"multi.pem", "rsa4096.pub"};
    struct keyset *ks = load(names, COUNT(names), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, 4);
    for (size_t i = 0; i < ks->count; i++) {
        char kid[KEY_KID_MAX + 1];
        snprintf(kid, sizeof kid, "%s", ks->keys[i].kid); /* a different pointer */
        cr_assert_eq(keyset_find(ks, kid), &ks->keys[i], "kid %s", kid);
        kid[KEY_KID_LEN - 1] = '\0';
        cr_assert_null(keyset_find(ks, kid), "a kid prefix matched");
    }
    char other[KEY_KID_LEN + 1];
    openssl_kid(PUB, fx("ec384.pub"), other);
    cr_assert_not_null(keyset_find(ks, other));
    openssl_kid(PUB, fx("ec521.padded.pub"), other);
    cr_assert_null(keyset_find(ks, other));
    cr_assert_null(keyset_find(ks, ""));
    keyset_free(ks);
}

/* One bad file fails the whole load, and the message names that file. */
Test(keyset, one_bad_file_fails_all)
{
    static const char *const names[] = {"rsa2048.pub", "multi.pem", "garbage.pem", "ec256.pub"};
    char err[1024];
    struct warns w = {0};
    cr_assert_null(load(names, COUNT(names), &w, err, sizeof err));
    assert_err(err, fx("garbage.pem"), NOKEYS);
}

Test(keyset, unsupported_second_block)
{
    size_t len;
    char path[PATH_MAX], err[1024] = "";
    char *pem = concat(good_then_unsupported, COUNT(good_then_unsupported), &len);
    write_tmp(pem, len, path);
    free(pem);
    char *paths[] = {path};
    struct keyset *ks = keyset_load(paths, 1, NULL, NULL, err, sizeof err);
    unlink(path);
    cr_assert_null(ks);
    assert_err(err, path, "block 2");
    cr_assert(strcasestr(err, "unsupported") != NULL, "\"%s\"", err);
}

Test(keyset, no_paths)
{
    char err[1024];
    cr_assert_null(load(NULL, 0, NULL, err, sizeof err));
    cr_assert_neq(err[0], '\0', "no error message");
}

/* ------------------------------------------------------------------------ */
/* What a key source may be                                                  */

/* A fresh directory under /tmp, and a path inside it. */
static void src_dir(char dir[64])
{
    snprintf(dir, 64, "/tmp/oidc-sources-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static const char *src_path(const char *dir, const char *name)
{
    static char buf[4][PATH_MAX];
    static unsigned next;
    char *p = buf[next++ % 4];
    snprintf(p, PATH_MAX, "%s/%s", dir, name);
    return p;
}

/* Copies a fixture to dir/name. */
static void src_put(const char *dir, const char *name, const char *fixture)
{
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", fx(fixture), src_path(dir, name));
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void src_rm(const char *dir)
{
    char cmd[PATH_MAX];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'; rm -rf '%s'", dir, dir);
    cr_assert_eq(system(cmd), 0);
}

/* keyset_load of one path; NULL with err filled, or the set. */
static struct keyset *src_load(const char *path, struct warns *w, char *err, size_t errlen)
{
    char *argv[] = {(char *)path};
    err[0] = '\0';
    return keyset_load(argv, 1, w ? on_warn : NULL, w, err, errlen);
}

Test(sources, ca_certificate_is_refused_and_says_what_to_do)
{
    char err[1024];
    cr_assert_null(src_load(fx("ca/rsa2048.ca.crt"), NULL, err, sizeof err));
    assert_err(err, fx("ca/rsa2048.ca.crt"), "basicConstraints CA:TRUE");
    cr_assert(strstr(err, "sa.pub") != NULL, "does not point at sa.pub: %s", err);
    /* the same key in a leaf certificate is a key source */
    struct keyset *ks = load_one("rsa2048.crt", NULL);
    keyset_free(ks);
}

Test(sources, ca_certificate_among_other_blocks_fails_the_file)
{
    /* another key first: rsa2048.pub itself would be refused, its CA
     * certificate being in the same file */
    static const char *const names[] = {"ec256.pub", "ca/rsa2048.ca.crt"};
    size_t len;
    char path[PATH_MAX], err[1024];
    char *pem = concat(names, COUNT(names), &len);
    write_tmp(pem, len, path);
    free(pem);
    cr_assert_null(src_load(path, NULL, err, sizeof err));
    unlink(path);
    assert_err(err, path, "block 2");
}

Test(sources, pki_directory_is_refused)
{
    /* kubeadm's /etc/kubernetes/pki, reduced: CA, front-proxy CA,
     * apiserver pair, the service-account pair, etcd/ */
    static const char *const layout[][2] = {
        {"apiserver.crt", "rsa2048.crt"}, {"apiserver.key", "rsa2048.pkcs1.key"},   {"ca.crt", "rsa2048.crt"},
        {"ca.key", "rsa2048.pkcs8.key"},  {"front-proxy-ca.key", "ec384.sec1.key"}, {"sa.key", "ec256.sec1.key"},
        {"sa.pub", "ec256.pub"},
    };
    char dir[64], err[1024];

    src_dir(dir);
    cr_assert_eq(mkdir(src_path(dir, "etcd"), 0700), 0);
    for (size_t i = 0; i < COUNT(layout); i++)
        src_put(dir, layout[i][0], layout[i][1]);
    cr_assert_null(src_load(dir, NULL, err, sizeof err), "a PKI directory was loaded");
    cr_assert(strstr(err, src_path(dir, "ca.crt")) != NULL, "does not name ca.crt: %s", err);
    cr_assert(strstr(err, src_path(dir, "sa.pub")) != NULL, "does not point at sa.pub: %s", err);

    /* without ca.*, the front-proxy CA key alone still gives it away */
    unlink(src_path(dir, "ca.crt"));
    unlink(src_path(dir, "ca.key"));
    cr_assert_null(src_load(dir, NULL, err, sizeof err));
    cr_assert(strstr(err, src_path(dir, "front-proxy-ca.key")) != NULL, "%s", err);

    /* pointing at the service-account key itself works */
    struct keyset *ks = src_load(src_path(dir, "sa.pub"), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, 1);
    keyset_free(ks);
    src_rm(dir);
}

Test(sources, file_named_like_a_ca_key_is_refused)
{
    static const char *const names[] = {"ca.key", "ca.pem", "ca-key.pem", "server-ca.crt", "client-ca.key"};
    char dir[64], err[1024];

    src_dir(dir);
    for (size_t i = 0; i < COUNT(names); i++) {
        src_put(dir, names[i], "ec256.pub");
        cr_assert_null(src_load(src_path(dir, names[i]), NULL, err, sizeof err), "%s loaded", names[i]);
        assert_err(err, src_path(dir, names[i]), "CA");
    }
    /* names that merely contain "ca" are fine */
    src_put(dir, "cascade.pub", "ec256.pub");
    struct keyset *ks = src_load(src_path(dir, "cascade.pub"), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    keyset_free(ks);
    src_rm(dir);
}

/* The name rules are the file's, in any case, and cover every CA name a
 * PKI layout uses: kubernetes-ca.pem was published with the cluster CA's
 * kid, and so was CA.KEY. */
Test(sources, ca_names_in_any_case_and_every_layout)
{
    static const char *const refused[] = {
        "CA.KEY",          "Ca.Crt",      "kubernetes-ca.pem", "front-proxy-ca", "front-proxy-ca.crt",
        "etcd-ca-key.pem", "root_ca.crt", "ca.key.pem",        "SERVER-CA.KEY",  "ca_key.pem"};
    static const char *const fine[] = {"cascade.pub", "sa.key",        "sa.pub",     "rsa2048.ca.crt.pub",
                                       "ca-not.pub",  "apiserver.key", "capital.pem"};
    char dir[64], err[1024];

    src_dir(dir);
    for (size_t i = 0; i < COUNT(refused); i++) {
        src_put(dir, refused[i], "ec256.pub");
        cr_expect_null(src_load(src_path(dir, refused[i]), NULL, err, sizeof err), "%s loaded", refused[i]);
        cr_expect(strstr(err, "CA") != NULL, "%s: %s", refused[i], err);
        unlink(src_path(dir, refused[i]));
    }
    for (size_t i = 0; i < COUNT(fine); i++) {
        src_put(dir, fine[i], "ec256.pub");
        struct keyset *ks = src_load(src_path(dir, fine[i]), NULL, err, sizeof err);
        cr_expect_not_null(ks, "%s: %s", fine[i], err);
        keyset_free(ks);
        unlink(src_path(dir, fine[i]));
    }
    /* a directory holding one, in upper case, is a PKI directory */
    src_put(dir, "sa.pub", "ec256.pub");
    src_put(dir, "FRONT-PROXY-CA.CRT", "rsa2048.crt");
    cr_expect_null(src_load(dir, NULL, err, sizeof err));
    cr_expect(strstr(err, "looks like a PKI directory") != NULL, "%s", err);
    src_rm(dir);
}

/* A link named like a service-account key that leads to a CA's key is a
 * CA's key: the rules look at the file reached, given as a key file and
 * as a directory's entry. */
Test(sources, link_to_a_ca_key_is_refused)
{
    char dir[64], err[1024], sub[PATH_MAX], pki[PATH_MAX];

    src_dir(dir);
    snprintf(sub, sizeof sub, "%s/t", dir);
    snprintf(pki, sizeof pki, "%s/pki", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(mkdir(pki, 0700), 0);
    src_put(dir, "pki/ca.key", "ec256.sec1.key");
    cr_assert_eq(symlink("../pki/ca.key", src_path(dir, "t/sa.key")), 0);
    cr_assert_null(src_load(src_path(dir, "t/sa.key"), NULL, err, sizeof err), "a link to ca.key was loaded");
    assert_err(err, src_path(dir, "t/sa.key"), "named like a CA's key");
    cr_expect(strstr(err, "pki/ca.key") != NULL, "does not name the file reached: %s", err);
    /* t/ as a directory source: its one entry leads to ca.key */
    cr_assert_null(src_load(sub, NULL, err, sizeof err), "a directory with a link to ca.key was loaded");
    cr_expect(strstr(err, "pki/ca.key") != NULL, "%s", err);
    src_rm(dir);
}

/* By content: a key whose public half is that of a CA certificate
 * (CA:TRUE) beside it is the CA's key, whatever the names; a leaf
 * certificate beside it changes nothing. */
Test(sources, key_of_a_ca_certificate_beside_it_is_refused)
{
    char dir[64], err[1024];

    src_dir(dir);
    src_put(dir, "sa.key", "rsa2048.pkcs8.key");
    src_put(dir, "sa.pub", "ec256.pub");
    src_put(dir, "leaf.crt", "rsa2048.crt");
    struct keyset *ks = src_load(src_path(dir, "sa.key"), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    keyset_free(ks);
    src_put(dir, "issuer.crt", "ca/rsa2048.ca.crt");
    cr_assert_null(src_load(src_path(dir, "sa.key"), NULL, err, sizeof err), "a CA's key was loaded");
    assert_err(err, src_path(dir, "sa.key"), "CA:TRUE");
    cr_expect(strstr(err, src_path(dir, "issuer.crt")) != NULL, "does not name the certificate: %s", err);
    /* the directory as a source: refused too (the certificate is read first) */
    cr_assert_null(src_load(dir, NULL, err, sizeof err), "a directory with a CA's key was loaded");
    cr_expect(strstr(err, "CA:TRUE") != NULL, "%s", err);
    /* another key beside the same certificate is fine */
    ks = src_load(src_path(dir, "sa.pub"), NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    keyset_free(ks);
    src_rm(dir);
}

/* Without O_NONBLOCK, opening a FIFO waits for a writer: the timeout
 * turns that hang into a failure. */
Test(sources, fifo_is_refused_without_blocking, .timeout = 10)
{
    char dir[64], err[1024];

    src_dir(dir);
    cr_assert_eq(mkfifo(src_path(dir, "sa.pub"), 0600), 0);
    cr_assert_null(src_load(src_path(dir, "sa.pub"), NULL, err, sizeof err));
    assert_err(err, src_path(dir, "sa.pub"), "FIFO");
    /* in a directory source too: an error, not a key silently missing */
    src_put(dir, "other.pub", "ec256.pub");
    cr_assert_null(src_load(dir, NULL, err, sizeof err));
    assert_err(err, src_path(dir, "sa.pub"), "FIFO");
    src_rm(dir);
}

Test(sources, directory_skips_subdirectories_hidden_entries_and_dangling_links)
{
    char dir[64], err[1024];

    src_dir(dir);
    src_put(dir, "sa.pub", "ec256.pub");
    cr_assert_eq(mkdir(src_path(dir, "etcd"), 0700), 0);
    src_put(dir, "etcd/peer.pub", "rsa2048.pub");
    src_put(dir, ".hidden.pub", "ec384.pub");
    cr_assert_eq(symlink("..data/gone.pub", src_path(dir, "gone.pub")), 0);
    struct keyset *ks = src_load(dir, NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_eq(ks->count, 1, "%zu keys", ks->count);
    cr_assert(strstr(ks->keys[0].source, "sa.pub") != NULL, "%s", ks->keys[0].source);
    keyset_free(ks);
    src_rm(dir);
}

Test(sources, keys_record_the_file_they_came_from)
{
    char dir[64], err[1024], real[PATH_MAX];

    src_dir(dir);
    cr_assert_eq(mkdir(src_path(dir, "..2026_01"), 0700), 0);
    src_put(dir, "..2026_01/sa.pub", "ec256.pub");
    cr_assert_eq(symlink("..2026_01", src_path(dir, "..data")), 0);
    cr_assert_eq(symlink("..data/sa.pub", src_path(dir, "sa.pub")), 0);
    struct keyset *ks = src_load(dir, NULL, err, sizeof err);
    cr_assert_not_null(ks, "%s", err);
    cr_assert_not_null(realpath(src_path(dir, "..2026_01/sa.pub"), real));
    cr_assert_str_eq(ks->keys[0].path, src_path(dir, "sa.pub"));
    cr_assert_str_eq(ks->keys[0].path_real, real);
    /* and a copy keeps them */
    struct keyset *copy = keyset_new();
    cr_assert_eq(keyset_add_copy(copy, &ks->keys[0], err, sizeof err), 1, "%s", err);
    cr_assert_eq(keyset_add_copy(copy, &ks->keys[0], err, sizeof err), 0, "a duplicate is not added");
    cr_assert_str_eq(copy->keys[0].path, ks->keys[0].path);
    cr_assert_str_eq(copy->keys[0].path_real, real);
    cr_assert_str_eq(copy->keys[0].kid, ks->keys[0].kid);
    keyset_free(copy);
    keyset_free(ks);
    src_rm(dir);
}

/* Counts the warnings that mention "writable by others" and name path. */
static int writable_warnings(const struct warns *w, const char *path)
{
    int n = 0;
    for (int i = 0; i < w->n; i++)
        n += strstr(w->msg[i], "writable by others") != NULL && strstr(w->msg[i], path) != NULL;
    return n;
}

Test(sources, directory_writable_by_others_warns)
{
    char dir[64], err[1024];
    struct warns open_dir = {0}, closed = {0}, sticky = {0}, open_parent = {0};
    struct keyset *ks;

    src_dir(dir);
    src_put(dir, "sa.pub", "ec256.pub");
    cr_assert_eq(chmod(dir, 0777), 0);
    cr_assert_not_null(ks = src_load(dir, &open_dir, err, sizeof err), "%s", err);
    keyset_free(ks);
    cr_assert_eq(writable_warnings(&open_dir, dir), 1, "a world-writable key directory: %d", open_dir.n);
    cr_assert_not_null(ks = src_load(src_path(dir, "sa.pub"), &open_parent, err, sizeof err), "%s", err);
    keyset_free(ks);
    cr_assert_eq(writable_warnings(&open_parent, dir), 1, "a key file others can replace");
    /* sticky: others may add files but not replace this one */
    cr_assert_eq(chmod(dir, 01777), 0);
    cr_assert_not_null(ks = src_load(src_path(dir, "sa.pub"), &sticky, err, sizeof err), "%s", err);
    keyset_free(ks);
    cr_assert_eq(writable_warnings(&sticky, dir), 0, "%s", sticky.msg[0]);
    cr_assert_eq(chmod(dir, 0755), 0);
    cr_assert_not_null(ks = src_load(dir, &closed, err, sizeof err), "%s", err);
    keyset_free(ks);
    cr_assert_eq(writable_warnings(&closed, dir), 0, "%s", closed.msg[0]);
    src_rm(dir);
}

/* ------------------------------------------------------------------------ */
/* JWKS files (`kubectl get --raw /openid/v1/jwks > jwks.json`)              */

/* A JWKS of the fixtures under kids written to a temporary file. */
static void jwks_file(const char *const *names, const char *const *kids, size_t n, char path[PATH_MAX])
{
    char *text = fixture_jwks(names, kids, n);
    write_tmp(text, strlen(text), path);
    free(text);
}

Test(sources, jwks_file_keeps_kids_and_order)
{
    static const char *const names[] = {"ec384.pub", "rsa2048.pub", "ec256.pub"};
    static const char *const kids[] = {"external-signer:ec384/1", NULL, "k"};
    char path[PATH_MAX], err[1024], derived[KEY_KID_LEN + 1];
    struct keyset *ks;

    jwks_file(names, kids, COUNT(names), path);
    cr_assert_not_null(ks = src_load(path, NULL, err, sizeof err), "%s", err);
    unlink(path);
    cr_assert_eq(ks->count, 3);
    openssl_kid(PUB, fx("rsa2048.pub"), derived);
    cr_assert_str_eq(ks->keys[0].kid, "external-signer:ec384/1");
    cr_assert_str_eq(ks->keys[1].kid, derived, "a kube kid stays what it is");
    cr_assert_str_eq(ks->keys[2].kid, "k");
    cr_assert(ks->keys[0].kid_given && !ks->keys[1].kid_given && ks->keys[2].kid_given);
    cr_assert(strstr(ks->keys[0].jwk, "\"kid\":\"external-signer:ec384/1\"") != NULL, "%s", ks->keys[0].jwk);
    cr_assert(strstr(ks->keys[0].source, path) != NULL && strstr(ks->keys[0].source, "keys[0]") != NULL,
              "source %s names the file and the JWK", ks->keys[0].source);
    cr_assert_str_eq(ks->keys[2].path, path, "the file is recorded (for the removal guard)");
    keyset_free(ks);
}

/* The same key from a PEM file and a JWKS under its kube kid is one key;
 * one kid for two keys across files is refused, naming both. */
Test(sources, jwks_file_with_pem_files)
{
    static const char *const same[] = {"rsa2048.pub"};
    char jwks[PATH_MAX], other[PATH_MAX], err[1024];
    struct warns w = {0};
    struct keyset *ks;
    char derived[KEY_KID_LEN + 1];

    jwks_file(same, (const char *const[]){NULL}, 1, jwks);
    char *both[] = {(char *)fx("rsa2048.pub"), jwks};
    cr_assert_not_null(ks = keyset_load(both, 2, on_warn, &w, err, sizeof err), "%s", err);
    cr_assert_eq(ks->count, 1, "published once");
    cr_assert_eq(w.n, 1, "%d warnings", w.n);
    keyset_free(ks);
    openssl_kid(PUB, fx("rsa2048.pub"), derived);
    jwks_file((const char *const[]){"ec256.pub"}, (const char *const[]){derived}, 1, other);
    char *clash[] = {(char *)fx("rsa2048.pub"), other};
    cr_assert_null(keyset_load(clash, 2, NULL, NULL, err, sizeof err));
    assert_err(err, other, "also names another key");
    cr_assert(strstr(err, "rsa2048.pub") != NULL, "names the other key's file: %s", err);
    unlink(jwks);
    unlink(other);
}

/* A JWKS file is read as strictly as an upstream's: private members are
 * never published, and a file without a usable key fails the load. */
Test(sources, jwks_file_errors_name_the_file)
{
    static const char *const bad[] = {
        "{\"keys\":[]}",
        "{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\",\"kid\":\"h\"}]}",
        "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"a\",\"n\":\"AQAB\",\"e\":\"AQAB\",\"d\":\"AQAB\"}]}",
        "{\"keys\":[{\"kty\":\"RSA\"",
    };
    char path[PATH_MAX], err[1024];

    for (size_t i = 0; i < COUNT(bad); i++) {
        write_tmp(bad[i], strlen(bad[i]), path);
        cr_assert_null(src_load(path, NULL, err, sizeof err), "case %zu loaded", i);
        assert_err(err, path, NULL);
        unlink(path);
    }
}
