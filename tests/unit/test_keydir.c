/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keys/keydir: the signing key directory on disk. It is
 * created 0700 and refused when others could write it; keys are written
 * 0600 as PKCS#8 and rotation.json round-trips; the lock admits one
 * holder; an import takes the operator's sa.key (PKCS#1 or SEC1) and
 * refuses what cannot sign; rotation.json that could let a guess sign is
 * refused whole (a kid that is not its key's, two signing keys, an unknown
 * role, a negative age, a link); a key file that is not the key of its
 * name is refused; files that are not the directory's are reported; a
 * key's role as `keys` and the status page show it.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"

#include "keys/keydir.h"
#include "keys/keydir_next.h"
#include "util/file.h"

#define T0 1800000000L

static char dir[64];
static char err[1024];

static void setup(void)
{
    tmpdir_make(dir, "keydir");
    err[0] = '\0';
}

static void teardown(void)
{
    tmpdir_remove(dir);
    leak_check();
}

TestSuite(keydir, .init = setup, .fini = teardown);

static mode_t mode_of(const char *name)
{
    char path[PATH_MAX];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return st.st_mode & 07777;
}

static void write_text(const char *name, const char *text)
{
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    cr_assert_not_null(f = fopen(path, "w"), "%s", path);
    fputs(text, f);
    fclose(f);
}

static char *read_path(const char *path)
{
    char *buf = calloc(1, 65536);
    FILE *f;

    cr_assert_not_null(f = fopen(path, "r"), "%s", path);
    cr_assert_gt(fread(buf, 1, 65535, f), 0, "%s", path);
    fclose(f);
    return buf;
}

static char *read_text(const char *name)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return read_path(path);
}

/* A directory holding one generated key of type with role, saved. */
static struct keydir *one_key(const char *type, enum rotation_role role)
{
    struct keydir *kd = keydir_new();

    cr_assert_eq(keydir_generate(dir, kd, type, role, 0, T0, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(keydir_save(dir, kd, err, sizeof(err)), 0, "%s", err);
    return kd;
}

Test(keydir, a_missing_directory_is_created_0700)
{
    char sub[PATH_MAX];
    int fd;

    snprintf(sub, sizeof(sub), "%s/keys", dir);
    cr_assert_lt(keydir_open(sub, 0, err, sizeof(err)), 0);
    cr_expect(strstr(err, "does not exist") != NULL, "%s", err);
    cr_assert_geq(fd = keydir_open(sub, 1, err, sizeof(err)), 0, "%s", err);
    close(fd);
    cr_expect_eq(mode_of("keys"), 0700);
}

Test(keydir, a_directory_others_can_write_is_refused)
{
    chmod(dir, 0770);
    cr_expect_lt(keydir_open(dir, 0, err, sizeof(err)), 0);
    cr_expect(strstr(err, "signing key directory") && strstr(err, "writable by group or others"), "%s", err);
}

/* The directory holds private keys: 0755 (readable by all) was accepted
 * and a key file of mode 0644 drew no word; both are refused, naming the
 * path, by what every pass and the start check. */
Test(keydir, private_modes_are_enforced)
{
    struct keydir *kd = one_key("ec-p256", ROTATION_SIGNING);
    char name[80], path[PATH_MAX];
    int fd;

    snprintf(name, sizeof(name), "key-%s.pem", kd->rot[0].kid);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    cr_assert_eq(keydir_check_modes(dir, err, sizeof(err)), 0, "%s", err);
    for (mode_t m = 0640; m != 0; m = m == 0640 ? 0644 : m == 0644 ? 0604 : 0) {
        cr_assert_eq(chmod(path, m), 0);
        cr_expect_eq(keydir_check_modes(dir, err, sizeof(err)), -1, "mode %04o passed", (unsigned)m);
        cr_expect(strstr(err, path) != NULL && strstr(err, "chmod 600") != NULL, "%s", err);
    }
    cr_assert_eq(chmod(path, 0600), 0);
    for (mode_t m = 0750; m != 0; m = m == 0750 ? 0755 : m == 0755 ? 0701 : 0) {
        cr_assert_eq(chmod(dir, m), 0);
        cr_expect_lt(fd = keydir_open(dir, 0, err, sizeof(err)), 0, "mode %04o opened", (unsigned)m);
        if (fd >= 0)
            close(fd);
        cr_expect(strstr(err, dir) != NULL && strstr(err, "chmod 700") != NULL, "%s", err);
        cr_expect_eq(keydir_check_modes(dir, err, sizeof(err)), -1);
    }
    cr_assert_eq(chmod(dir, 0700), 0);
    cr_expect_eq(keydir_check_modes(dir, err, sizeof(err)), 0, "%s", err);
    keydir_free(kd);
}

Test(keydir, generated_keys_are_pkcs8_0600_and_round_trip)
{
    for (size_t t = 0; keydir_types[t] != NULL; t++) {
        struct keydir *kd = keydir_new(), *back = NULL;
        char name[80], *pem;
        int i = keydir_generate(dir, kd, keydir_types[t], ROTATION_NEXT, 0, T0, err, sizeof(err));
        cr_assert_geq(i, 0, "%s: %s", keydir_types[t], err);
        cr_expect_str_eq(kd->pub[i].type, keydir_types[t]);
        kd->rot[i].published_ms = 1234;
        kd->rot[i].keep_ms = 99;
        kd->rot[i].published_at = T0 + 1;
        cr_assert_eq(keydir_save(dir, kd, err, sizeof(err)), 0, "%s", err);
        snprintf(name, sizeof(name), "key-%s.pem", kd->rot[i].kid);
        cr_expect_eq(mode_of(name), 0600);
        cr_expect_eq(mode_of(KEYDIR_STATE_FILE), 0600);
        pem = read_text(name);
        cr_expect(strncmp(pem, "-----BEGIN PRIVATE KEY-----", 27) == 0, "%s", pem);
        free(pem);
        cr_assert_eq(keydir_read(dir, &back, err, sizeof(err)), 0, "%s", err);
        cr_assert_eq(back->count, kd->count);
        cr_expect_eq(memcmp(&back->rot[i], &kd->rot[i], sizeof(kd->rot[i])), 0, "every field comes back");
        cr_expect_str_eq(back->pub[i].spki, kd->pub[i].spki);
        EVP_PKEY *priv = keydir_load_private(dir, kd->rot[i].kid, err, sizeof(err));
        cr_expect_not_null(priv, "%s", err);
        EVP_PKEY_free(priv);
        keydir_free(back);
        keydir_free(kd);
        unlink(KEYDIR_STATE_FILE);
    }
}

Test(keydir, no_rotation_json_is_an_empty_directory)
{
    struct keydir *kd = NULL;

    cr_expect_eq(keydir_read(dir, &kd, err, sizeof(err)), 1);
    cr_assert_not_null(kd);
    cr_expect_eq(kd->count, 0);
    keydir_free(kd);
}

Test(keydir, the_lock_admits_one_holder)
{
    int a = -1, b = -1, c = -1;

    cr_assert_eq(keydir_lock(dir, &a, err, sizeof(err)), 1, "%s", err);
    cr_expect_eq(keydir_lock(dir, &b, err, sizeof(err)), 0, "held");
    close(a);
    cr_expect_eq(keydir_lock(dir, &c, err, sizeof(err)), 1, "released with its descriptor");
    close(c);
}

Test(keydir, an_import_takes_sa_key_and_signs_at_once)
{
    static const char *const good[] = {"rsa2048.pkcs1.key", "ec256.sec1.key", "rsa2048.pkcs8.key"};
    static const char *const bad[] = {"ed25519.key", "encrypted.pkcs8.key", "rsa2048.pub", "garbage.pem"};
    char path[PATH_MAX];

    for (size_t i = 0; i < COUNT(good); i++) {
        struct keydir *kd = keydir_new();
        snprintf(path, sizeof(path), "%s/%s", FIXTURES, good[i]);
        int at = keydir_import(dir, kd, path, T0, err, sizeof(err));
        cr_assert_eq(at, 0, "%s: %s", good[i], err);
        cr_expect_eq(kd->rot[0].role, ROTATION_SIGNING);
        cr_expect(kd->rot[0].trusted);
        cr_expect_eq(kd->rot[0].activated_at, T0);
        struct keyset *ks = fixture_keyset1(good[i]);
        cr_expect_str_eq(kd->rot[0].kid, ks->keys[0].kid, "the kid of sa.key");
        keyset_free(ks);
        keydir_free(kd);
    }
    for (size_t i = 0; i < COUNT(bad); i++) {
        struct keydir *kd = keydir_new();
        snprintf(path, sizeof(path), "%s/%s", FIXTURES, bad[i]);
        cr_expect_lt(keydir_import(dir, kd, path, T0, err, sizeof(err)), 0, "%s imported", bad[i]);
        cr_expect(strstr(err, path) != NULL, "names the file: %s", err);
        cr_expect_eq(kd->count, 0);
        keydir_free(kd);
    }
}

/* rotation.json edited into something that could let a guess sign. */
Test(keydir, a_doubtful_rotation_json_is_refused_whole)
{
    struct keydir *kd = one_key("ec-p256", ROTATION_SIGNING), *back;
    char *good = read_text(KEYDIR_STATE_FILE), *text, *at;
    struct {
        const char *from, *to, *says;
    } edits[] = {
        {"\"role\":\"signing\"", "\"role\":\"boss\"", "role"},
        {"\"published_ms\":0", "\"published_ms\":-5", "an age"},
        {"\"published_ms\":0", "\"published_ms\":1.5", "an age"},
        {"\"created\":1800000000", "\"created\":\"soon\"", "a date"},
        {"\"kid\":\"", "\"kid\":\"x", "kid is not the one its spki gives"},
        {"\"version\":1", "\"version\":2", "not a version 1"},
    };

    for (size_t i = 0; i < COUNT(edits); i++) {
        cr_assert_not_null(at = strstr(good, edits[i].from), "%s", edits[i].from);
        cr_assert_geq(asprintf(&text, "%.*s%s%s", (int)(at - good), good, edits[i].to, at + strlen(edits[i].from)), 0);
        write_text(KEYDIR_STATE_FILE, text);
        back = NULL;
        cr_expect_eq(keydir_read(dir, &back, err, sizeof(err)), -1, "%s read", text);
        cr_expect_null(back);
        cr_expect(strstr(err, edits[i].says) != NULL && strstr(err, KEYDIR_STATE_FILE) != NULL, "%s", err);
        free(text);
    }
    /* Two signing keys. */
    struct keydir *two = keydir_new();
    cr_assert_geq(keydir_generate(dir, two, "ec-p256", ROTATION_SIGNING, 0, T0, err, sizeof(err)), 0);
    cr_assert_geq(keydir_generate(dir, two, "ec-p256", ROTATION_SIGNING, 0, T0, err, sizeof(err)), 0);
    cr_assert_eq(keydir_save(dir, two, err, sizeof(err)), 0);
    cr_expect_eq(keydir_read(dir, &back, err, sizeof(err)), -1);
    cr_expect(strstr(err, "more than one signing key") != NULL, "%s", err);
    keydir_free(two);
    /* A link is not followed. */
    char target[PATH_MAX], link[PATH_MAX];
    snprintf(target, sizeof(target), "%s/elsewhere.json", dir);
    snprintf(link, sizeof(link), "%s/%s", dir, KEYDIR_STATE_FILE);
    write_text("elsewhere.json", good);
    unlink(link);
    cr_assert_eq(symlink(target, link), 0);
    cr_expect_eq(keydir_read(dir, &back, err, sizeof(err)), -1);
    cr_expect(strstr(err, "symbolic link") != NULL, "%s", err);
    free(good);
    keydir_free(kd);
}

Test(keydir, a_key_file_must_hold_the_key_of_its_name)
{
    struct keydir *kd = one_key("ec-p256", ROTATION_SIGNING);
    char name[80], *other;
    EVP_PKEY *priv;

    snprintf(name, sizeof(name), "key-%s.pem", kd->rot[0].kid);
    other = read_path(FIXTURES "/ec256.pkcs8.key");
    write_text(name, other);
    cr_expect_null(priv = keydir_load_private(dir, kd->rot[0].kid, err, sizeof(err)));
    cr_expect(strstr(err, "holds another key than the one of its name") != NULL, "%s", err);
    write_text(name, "-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n");
    cr_expect_null(keydir_load_private(dir, kd->rot[0].kid, err, sizeof(err)));
    cr_expect(strstr(err, "holds no private key") != NULL, "%s", err);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unlink(path);
    cr_expect_null(keydir_load_private(dir, kd->rot[0].kid, err, sizeof(err)));
    cr_expect(strstr(err, "is missing") != NULL, "%s", err);
    free(other);
    keydir_free(kd);
}

static char reported[8][512];
static size_t nreported;

static void record(void *ctx, const char *msg)
{
    (void)ctx;
    if (nreported < 8)
        snprintf(reported[nreported++], sizeof(reported[0]), "%s", msg);
}

Test(keydir, files_that_are_not_the_directorys_are_reported)
{
    struct keydir *kd = one_key("ec-p256", ROTATION_SIGNING);
    char own[80];

    snprintf(own, sizeof(own), "key-%s.pem.tmp", kd->rot[0].kid);
    write_text(own, "being written");
    write_text("notes.txt", "hello");
    write_text("key-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.pem", "a key no rotation.json names");
    int lockfd;
    cr_assert_eq(keydir_lock(dir, &lockfd, err, sizeof(err)), 1);
    nreported = 0;
    keydir_report_foreign(dir, kd, record, NULL);
    cr_expect_eq(nreported, 2, "%zu reports", nreported);
    for (size_t i = 0; i < nreported; i++)
        cr_expect((strstr(reported[i], "/notes.txt:") || strstr(reported[i], "/key-AAAA")) &&
                      strstr(reported[i], "neither published nor used to sign"),
                  "%s", reported[i]);
    close(lockfd);
    keydir_free(kd);
}

Test(keydir, public_keys_join_a_set_once)
{
    struct keydir *kd = keydir_new();
    struct keyset *ks = fixture_keyset1("rsa2048.pub");
    char path[PATH_MAX], kid[KEY_KID_LEN + 1];

    snprintf(path, sizeof(path), "%s/%s", FIXTURES, "rsa2048.pkcs1.key");
    cr_assert_eq(keydir_import(dir, kd, path, T0, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(keydir_generate(dir, kd, "ec-p256", ROTATION_NEXT, 0, T0, err, sizeof(err)), 1, "%s", err);
    cr_assert_eq(keydir_add_public(dir, kd, ks, err, sizeof(err)), 0, "%s", err);
    cr_expect_eq(ks->count, 2, "sa.key imported while sa.pub is a key file: published once");
    cr_expect_str_eq(ks->keys[1].kid, kd->rot[1].kid);
    cr_expect(strstr(ks->keys[1].source, "/key-") != NULL, "%s", ks->keys[1].source);
    keydir_forget(kd, 1, kid);
    cr_expect_eq(kd->count, 1);
    cr_expect_eq(keydir_remove_file(dir, kid, err, sizeof(err)), 0, "%s", err);
    cr_expect_null(keydir_load_private(dir, kid, err, sizeof(err)));
    keyset_free(ks);
    keydir_free(kd);
}

/* The role text `keys` and the status page show: the role's name, and for
 * a retired key until when it stays published at the earliest. */
Test(keydir, role_of_a_key_as_keys_shows_it)
{
    struct rotation_key rot[3] = {
        {.kid = "kid-next", .role = ROTATION_NEXT},
        {.kid = "kid-signing", .role = ROTATION_SIGNING, .keep_ms = 3600000},
        {.kid = "kid-retired", .role = ROTATION_RETIRED, .keep_ms = 3600000, .retired_ms = 600000}};
    struct keydir kd = {.rot = rot, .count = 3, .cap = 3};
    struct rotation_policy p = {.keep_ms = 60000};
    struct keydir_role r;

    keydir_role_of(&kd, "kid-next", &p, T0, &r);
    cr_expect_str_eq(r.name, "next");
    cr_expect_str_eq(r.until, "");
    cr_expect_str_eq(r.text, "next");
    keydir_role_of(&kd, "kid-signing", &p, T0, &r);
    cr_expect_str_eq(r.text, "signing");
    keydir_role_of(&kd, "kid-retired", &p, T0, &r);
    cr_expect_str_eq(r.name, "retired");
    cr_expect_str_eq(r.until, "2027-01-15T08:50:00Z", "its keep time less the 10 minutes it has been retired");
    cr_expect_str_eq(r.text, "retired until 2027-01-15T08:50:00Z");
    keydir_role_of(&kd, "kid-elsewhere", &p, T0, &r);
    cr_expect_null(r.name, "not a key of the directory");
    cr_expect_str_eq(r.text, "");
    keydir_role_of(NULL, "kid-next", &p, T0, &r);
    cr_expect_null(r.name, "no directory");
}

/* One call per reload pass: the keys age, then every step they call for is
 * taken and written, and the caller is told which. */
Test(keydir, next_ages_generates_and_promotes_in_one_call)
{
    struct keydir *kd = one_key("ec-p256", ROTATION_SIGNING), *disk = NULL;
    struct rotation_policy p = {.period_ms = 60000, .ahead_ms = 10000, .lag_ms = 0, .keep_ms = 30000};
    int in[2] = {1, 1};
    struct keydir_next next;
    char first[KEY_KID_LEN + 1];

    memcpy(first, kd->rot[0].kid, sizeof(first));
    cr_assert_eq(keydir_next(dir, kd, &p, in, 55000, "ec-p256", T0, &next), 0, "%s", next.err);
    cr_assert_eq(next.nsteps, 1, "the signing key is due a successor, which is not yet due to sign");
    cr_expect_eq(next.steps[0].action, ROTATION_GENERATE);
    cr_expect_str_eq(next.steps[0].type, "ec-p256");
    cr_expect_gt(next.due_in_ms, 0);
    cr_assert_eq(keydir_read(dir, &disk, err, sizeof(err)), 0, "%s", err);
    cr_expect_eq(disk->count, 2, "written to rotation.json");
    keydir_free(disk);

    cr_assert_eq(keydir_next(dir, kd, &p, in, 20000, "ec-p256", T0 + 20, &next), 0, "%s", next.err);
    cr_assert_eq(next.nsteps, 1);
    cr_expect_eq(next.steps[0].action, ROTATION_PROMOTE);
    cr_expect_str_eq(next.steps[0].retired, first);
    cr_expect_eq(next.steps[0].published_s, 20);
    cr_expect_gt(next.steps[0].retired_until, T0 + 20);
    cr_assert_eq(keydir_read(dir, &disk, err, sizeof(err)), 0, "%s", err);
    cr_expect_eq(disk->rot[0].role, ROTATION_RETIRED);
    cr_expect_eq(disk->rot[1].role, ROTATION_SIGNING);
    keydir_free(disk);
    keydir_free(kd);
}

/* A next key whose file no longer loads never signed: it is discarded
 * rather than promoted, and another is made in the same call. */
Test(keydir, next_discards_a_next_key_that_cannot_sign)
{
    struct keydir *kd = one_key("ec-p256", ROTATION_SIGNING);
    struct rotation_policy p = {.period_ms = 60000, .ahead_ms = 10000, .lag_ms = 0, .keep_ms = 30000};
    int in[2] = {1, 1};
    struct keydir_next next;
    char path[256], lost[KEY_KID_LEN + 1];

    cr_assert_eq(keydir_next(dir, kd, &p, in, 55000, "ec-p256", T0, &next), 0, "%s", next.err);
    cr_assert_eq(kd->count, 2);
    memcpy(lost, kd->rot[1].kid, sizeof(lost));
    snprintf(path, sizeof(path), "%s/key-%s.pem", dir, lost);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(keydir_next(dir, kd, &p, in, 20000, "ec-p256", T0 + 20, &next), 0, "%s", next.err);
    cr_assert_eq(next.nsteps, 2);
    cr_expect_eq(next.steps[0].action, ROTATION_DROP);
    cr_expect_eq(next.steps[0].discarded, 1);
    cr_expect_str_eq(next.steps[0].kid, lost);
    cr_expect_eq(next.steps[1].action, ROTATION_GENERATE);
    cr_expect_str_neq(next.steps[1].kid, lost);
    cr_expect_eq(kd->rot[0].role, ROTATION_SIGNING, "the signing key goes on signing");
    keydir_free(kd);
}

/* What etcd keeps of a directory (keys/keystore.c): rotation.json's text
 * round-trips through keydir_render_text and keydir_parse_text, a key's
 * PEM comes out as stored, and goes into another directory only as the
 * key of its kid. */
Test(keydir, the_state_and_keys_travel_as_text)
{
    struct keydir *kd = keydir_new(), *back = NULL;
    char other[64], *text = NULL, *pem;
    size_t len = 0, plen = 0;
    int i = keydir_generate(dir, kd, "ec-p256", ROTATION_SIGNING, 1, T0, err, sizeof(err));
    int j = keydir_generate(dir, kd, "ec-p256", ROTATION_NEXT, 0, T0, err, sizeof(err));

    cr_assert(i >= 0 && j >= 0, "%s", err);
    kd->rot[j].published_ms = 4321;
    cr_assert_eq(keydir_render_text(kd, &text, &len), 0);
    cr_assert_eq(keydir_parse_text("etcd /p/rotation", text, len, &back, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(back->count, 2);
    cr_expect_eq(memcmp(&back->rot[j], &kd->rot[j], sizeof(kd->rot[j])), 0);
    keydir_free(back);
    cr_expect_eq(keydir_parse_text("etcd /p/rotation", "{\"version\":1", 12, &back, err, sizeof(err)), -1);
    cr_expect_not_null(strstr(err, "etcd /p/rotation"), "%s", err);
    free(text);

    pem = keydir_key_pem(dir, kd->rot[i].kid, &plen, err, sizeof(err));
    cr_assert_not_null(pem, "%s", err);
    tmpdir_make(other, "keydir-other");
    cr_expect_eq(keydir_install_key(other, kd->rot[i].kid, pem, plen, err, sizeof(err)), 0, "%s", err);
    EVP_PKEY *priv = keydir_load_private(other, kd->rot[i].kid, err, sizeof(err));
    cr_expect_not_null(priv, "%s", err);
    EVP_PKEY_free(priv);
    cr_expect_eq(keydir_install_key(other, kd->rot[j].kid, pem, plen, err, sizeof(err)), -1, "another kid's key");
    cr_expect_not_null(strstr(err, "another key"), "%s", err);
    cr_expect_eq(keydir_install_key(other, kd->rot[j].kid, "not a key", 9, err, sizeof(err)), -1);
    cr_expect_null(keydir_key_pem(dir, "nokid", &plen, err, sizeof(err)));
    file_free(pem, strlen(pem));
    tmpdir_remove(other);
    keydir_free(back);
    keydir_free(kd);
}
