/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keys/seal.c: private keys sealed for the etcd store (AES-256-GCM, the kid
 * and the etcd key as associated data) and the encryption key file.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys/seal.h"
#include "test_support.h"

#define FLAG "signing-key-encryption-key-file"
#define HEX  "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF"
#define NAME "/oidc-discovery/keys/abc"

static char dir[64];

static void make_dir(void)
{
    tmpdir_make(dir, "seal");
}

static void remove_dir(void)
{
    tmpdir_remove(dir);
    leak_check();
}

TestSuite(seal, .init = make_dir, .fini = remove_dir);

/* Writes text to dir/name with mode; returns the path (static). */
static const char *write_key_file(const char *name, const char *text, mode_t mode)
{
    static char path[PATH_MAX];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cr_assert_eq(chmod(path, mode), 0);
    return path;
}

static struct seal_key key_of(unsigned char fill)
{
    struct seal_key k;
    memset(k.k, fill, sizeof(k.k));
    return k;
}

Test(seal, round_trip_and_the_value_hides_the_plain_text)
{
    struct seal_key k = key_of(7);
    const char *pem = "-----BEGIN PRIVATE KEY-----\nMIIB...\n-----END PRIVATE KEY-----\n";
    char err[512] = "";
    size_t slen = 0, plen = 0;
    unsigned char *s = seal_value(&k, "kid1", NAME, pem, strlen(pem), &slen, err, sizeof(err));
    char *p;

    cr_assert_not_null(s, "%s", err);
    cr_expect_eq(slen, strlen(pem) + SEAL_OVERHEAD);
    cr_expect_eq(memcmp(s, SEAL_MAGIC, SEAL_MAGIC_LEN), 0);
    cr_expect_null(memmem(s, slen, "PRIVATE KEY", 11), "the sealed value shows the PEM");
    p = seal_open(&k, "kid1", NAME, s, slen, &plen, err, sizeof(err));
    cr_assert_not_null(p, "%s", err);
    cr_expect_eq(plen, strlen(pem));
    cr_expect_str_eq(p, pem);
    seal_free(p, plen);
    free(s);
}

Test(seal, two_seals_of_one_key_differ)
{
    struct seal_key k = key_of(7);
    char err[512];
    size_t a_len, b_len;
    unsigned char *a = seal_value(&k, "kid1", NAME, "same", 4, &a_len, err, sizeof(err));
    unsigned char *b = seal_value(&k, "kid1", NAME, "same", 4, &b_len, err, sizeof(err));

    cr_assert(a && b);
    cr_expect_neq(memcmp(a, b, a_len), 0, "the nonce is not fresh");
    free(a);
    free(b);
}

/* What must not open: another key, another kid, another etcd key, one
 * bit changed anywhere, any truncation. The message names the etcd key. */
Test(seal, refuses_wrong_key_kid_name_tamper_and_truncation)
{
    struct seal_key k = key_of(7), other = key_of(8);
    char err[512] = "";
    size_t slen, plen;
    unsigned char *s = seal_value(&k, "kid1", NAME, "secret bytes", 12, &slen, err, sizeof(err));

    cr_assert_not_null(s);
    cr_expect_null(seal_open(&other, "kid1", NAME, s, slen, &plen, err, sizeof(err)));
    cr_expect_not_null(strstr(err, NAME), "%s", err);
    cr_expect_not_null(strstr(err, "--signing-key-encryption-key-file"), "%s", err);
    cr_expect_null(seal_open(&k, "kid2", NAME, s, slen, &plen, err, sizeof(err)));
    cr_expect_null(seal_open(&k, "kid1", "/oidc-discovery/keys/abd", s, slen, &plen, err, sizeof(err)));
    for (size_t i = 0; i < slen; i++) {
        s[i] ^= 0x01;
        cr_expect_null(seal_open(&k, "kid1", NAME, s, slen, &plen, err, sizeof(err)), "byte %zu changed opens", i);
        s[i] ^= 0x01;
    }
    for (size_t n = 0; n < slen; n++)
        cr_expect_null(seal_open(&k, "kid1", NAME, s, n, &plen, err, sizeof(err)), "cut at %zu opens", n);
    cr_expect_null(seal_open(&k, "kid1", NAME, "PEM!", 4, &plen, err, sizeof(err)));
    cr_expect_not_null(strstr(err, NAME), "%s", err);
    free(s);
}

Test(seal, reads_a_hex_key_file)
{
    struct seal_key k, same = key_of(0);
    char err[512] = "";
    char text[80];

    snprintf(text, sizeof(text), "  %s\n", HEX);
    cr_assert_eq(seal_key_read(FLAG, write_key_file("k", text, 0600), &k, err, sizeof(err)), 0, "%s", err);
    for (int i = 0; i < 16; i++)
        same.k[i] = same.k[16 + i] = (unsigned char)(i * 0x11);
    cr_expect_eq(memcmp(k.k, same.k, SEAL_KEY_LEN), 0);
    cr_assert_eq(seal_key_read(FLAG, write_key_file("k4", HEX, 0400), &k, err, sizeof(err)), 0, "%s", err);
}

/* A file group or others may touch, a short or long or non-hex key, a
 * missing file: each refused naming the flag and the path, never
 * quoting the contents. */
Test(seal, refuses_bad_modes_and_formats)
{
    static const struct {
        const char *text;
        mode_t mode;
        const char *says;
    } bad[] = {
        {HEX, 0640, "chmod 600"},
        {HEX, 0604, "chmod 600"},
        {HEX, 0620, "chmod 600"},
        {"00112233", 0600, "64 hex"},
        {HEX "00", 0600, "64 hex"},
        {"zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 0600, "64 hex"},
        {"", 0600, "64 hex"},
    };
    struct seal_key k;
    char err[512];

    for (size_t i = 0; i < COUNT(bad); i++) {
        const char *path = write_key_file("bad", bad[i].text, bad[i].mode);
        err[0] = '\0';
        cr_expect_eq(seal_key_read(FLAG, path, &k, err, sizeof(err)), -1, "case %zu accepted", i);
        cr_expect_not_null(strstr(err, "--" FLAG), "case %zu: %s", i, err);
        cr_expect_not_null(strstr(err, bad[i].says), "case %zu: %s", i, err);
        cr_expect_null(strstr(err, "00112233"), "case %zu quotes the key: %s", i, err);
    }
    cr_expect_eq(seal_key_read(FLAG, "/nonexistent/key", &k, err, sizeof(err)), -1);
    cr_expect_not_null(strstr(err, "--" FLAG), "%s", err);
}
