/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for server/reload/signerdir: the signing key directory as a
 * key source of the serving process, passes driven with made-up clocks.
 * The first key of an empty directory (made, imported, or refused when
 * other keys are published); the schedule through passes (generate,
 * promote, drop, at the times the flags say); two processes on one
 * directory (one rotates, the other follows and never signs with a key the
 * first does not publish, and takes over when the first stops); a process
 * that starts with keys already there (credited their age less the lag);
 * a next key whose file broke; a holder that cannot write.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"

#include "keys/keydir.h"
#include "publish/publish.h"
#include "server/obs/metrics.h"
#include "server/reload/signerdir.h"
#include "util/log.h"

#define T0  1800000000L
#define MS0 5000000
#define SEC 1000

static char dir[64];
static char err[1024];

static void setup(void)
{
    tmpdir_make(dir, "signerdir");
    log_init(LOG_ERROR, 0);
}

static void teardown(void)
{
    tmpdir_remove(dir);
    leak_check();
}

TestSuite(signerdir, .init = setup, .fini = teardown);

/* serve with the signing key directory, ec-p256, and short periods:
 * publish-ahead 10s, rotation-period 60s, lag (--key-reload-interval) 2s,
 * keep 30s + 0 + 2s; then the nextra arguments of extra. */
static void signer_config(struct config *cfg, const char *const *extra, size_t nextra)
{
    char *argv[32] = {"oidc-discovery",
                      "serve",
                      "--service-account-issuer",
                      "https://issuer.example",
                      "--signing-key-dir",
                      dir,
                      "--signing-key-type",
                      "ec-p256",
                      "--max-age",
                      "1s",
                      "--publish-ahead",
                      "10s",
                      "--rotation-period",
                      "60s",
                      "--max-token-lifetime",
                      "30s",
                      "--allow-short-token-lifetime",
                      "--token-leeway",
                      "0",
                      "--key-reload-interval",
                      "2s"};
    int argc = 21;
    enum config_command cmd;

    for (size_t i = 0; i < nextra; i++)
        argv[argc++] = (char *)extra[i];
    cr_assert_eq(config_parse(argc, argv, &cmd, cfg, err, sizeof(err)), 0, "%s", err);
}

/* One process: its signerdir and the snapshot it serves. */
struct proc {
    struct config *cfg;
    struct signerdir *sd;
    struct snapshot *snap;
};

static void proc_start(struct proc *p, struct config *cfg, int others, int64_t ms)
{
    p->cfg = cfg;
    p->snap = NULL;
    p->sd = signerdir_create(cfg, others, T0 + ms / SEC, MS0 + ms, err, sizeof(err));
    cr_assert_not_null(p->sd, "%s", err);
}

/* One reload pass at ms after MS0; returns the kid it signs with ("" for
 * none). */
static const char *proc_pass(struct proc *p, int64_t ms)
{
    const struct keydir *kd =
        signerdir_prepare(p->sd, p->snap ? p->snap->keyset : NULL, T0 + ms / SEC, MS0 + ms, err, sizeof(err));
    struct keyset *ks = keyset_new();

    cr_assert_not_null(kd, "%s", err);
    cr_assert_eq(keydir_add_public(dir, kd, ks, err, sizeof(err)), 0, "%s", err);
    snapshot_release(p->snap);
    cr_assert_not_null(p->snap = publish_snapshot(p->cfg, ks, T0 + ms / SEC));
    signerdir_state(p->sd, p->snap, NULL, T0 + ms / SEC, MS0 + ms);
    return signerdir_current(p->sd)->kid;
}

static void proc_stop(struct proc *p)
{
    signerdir_free(p->sd);
    snapshot_release(p->snap);
    p->sd = NULL;
    p->snap = NULL;
}

static int published(const struct proc *p, const char *kid)
{
    return keyset_find(p->snap->keyset, kid) != NULL;
}

Test(signerdir, an_empty_directory_gets_a_first_key_that_signs_at_once)
{
    struct config cfg;
    struct proc p;
    struct keydir *kd;

    signer_config(&cfg, NULL, 0);
    proc_start(&p, &cfg, 0, 0);
    const char *kid = proc_pass(&p, 0);
    cr_assert_eq(keydir_read(dir, &kd, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(kd->count, 1);
    cr_expect_str_eq(kid, kd->rot[0].kid);
    cr_expect(kd->rot[0].trusted);
    cr_expect(signerdir_current(p.sd)->key.priv != NULL);
    cr_expect_eq(signerdir_current(p.sd)->max_token_expiration, 30);
    keydir_free(kd);
    proc_stop(&p);
    config_free(&cfg);
}

Test(signerdir, an_empty_directory_beside_published_keys_needs_the_import)
{
    static const char *const import[] = {"--signing-key-import", FIXTURES "/rsa2048.pkcs1.key"};
    struct config cfg, with_import;
    struct proc p;

    signer_config(&cfg, NULL, 0);
    cr_expect_null(signerdir_create(&cfg, 1, T0, MS0, err, sizeof(err)));
    cr_expect(strstr(err, "--signing-key-import") && strstr(err, dir), "%s", err);
    signer_config(&with_import, import, COUNT(import));
    proc_start(&p, &with_import, 1, 0);
    struct keyset *sa = fixture_keyset1("rsa2048.pkcs1.key");
    cr_expect_str_eq(proc_pass(&p, 0), sa->keys[0].kid, "signs with sa.key at once");
    keyset_free(sa);
    proc_stop(&p);
    config_free(&cfg);
    config_free(&with_import);
}

Test(signerdir, a_corrupt_rotation_json_stops_the_start)
{
    struct config cfg;
    char path[PATH_MAX];
    FILE *f;

    signer_config(&cfg, NULL, 0);
    snprintf(path, sizeof(path), "%s/rotation.json", dir);
    cr_assert_not_null(f = fopen(path, "w"));
    fputs("{\"version\":1,\"keys\":[{\"kid\":", f);
    fclose(f);
    cr_expect_null(signerdir_create(&cfg, 0, T0, MS0, err, sizeof(err)));
    cr_expect(strstr(err, path) != NULL, "names the file: %s", err);
    config_free(&cfg);
}

/* The schedule with ahead 10s, period 60s, lag 2s, keep 32s: the next key
 * is made at 50s, signs at 63s (published 10 + 1 slack + 2 lag), and the
 * first leaves at 95s (retired for 32s). */
Test(signerdir, the_schedule_runs_through_passes)
{
    struct config cfg;
    struct proc p;
    char first[KEY_KID_LEN + 1] = "", second[KEY_KID_LEN + 1] = "";
    int64_t made = -1, promoted = -1, dropped = -1;

    signer_config(&cfg, NULL, 0);
    proc_start(&p, &cfg, 0, 0);
    snprintf(first, sizeof(first), "%s", proc_pass(&p, 0));
    for (int64_t ms = 500; ms <= 100 * SEC; ms += 500) {
        const char *kid = proc_pass(&p, ms);
        if (made < 0 && p.snap->keyset->count == 2) {
            made = ms;
            memcpy(second, p.snap->keyset->keys[1].kid, KEY_KID_LEN + 1);
        }
        if (promoted < 0 && strcmp(kid, first) != 0) {
            promoted = ms;
            cr_expect_str_eq(kid, second);
        }
        if (dropped < 0 && !published(&p, first))
            dropped = ms;
        int64_t due = signerdir_due(p.sd) - MS0;
        cr_expect(due > ms, "the next step is in the future: %lld at %lld", (long long)due, (long long)ms);
    }
    cr_expect_eq(made, 50 * SEC);
    cr_expect_eq(promoted, 63 * SEC);
    cr_expect_eq(dropped, 95 * SEC);
    cr_expect_eq(atomic_load(&metrics_signer.lock_held), 1);
    proc_stop(&p);
    config_free(&cfg);
}

/* Two processes on one directory, passes alternating 250 ms apart: B
 * follows what A decides, each signs only with keys both publish, and when
 * A stops, B takes the lock and goes on rotating. */
Test(signerdir, two_processes_follow_one_rotation)
{
    struct config cfg;
    struct proc a, b;
    int switches = 0, b_made = 0;
    char last_b[KEY_KID_LEN + 1] = "";

    signer_config(&cfg, NULL, 0);
    proc_start(&a, &cfg, 0, 0);
    proc_pass(&a, 0);
    proc_start(&b, &cfg, 0, 250);
    proc_pass(&b, 250);
    for (int64_t ms = 500; ms <= 150 * SEC; ms += 500) {
        const char *ka = proc_pass(&a, ms), *kb = proc_pass(&b, ms + 250);
        cr_assert(published(&b, ka), "A signs with %s at %lld, which B does not publish", ka, (long long)ms);
        cr_assert(published(&a, kb), "B signs with %s at %lld, which A does not publish", kb, (long long)ms);
        switches += last_b[0] && strcmp(last_b, kb) != 0;
        snprintf(last_b, sizeof(last_b), "%s", kb);
    }
    cr_expect_geq(switches, 2, "B followed the rotations");
    struct keyset *before = b.snap->keyset;
    b.snap->keyset = keyset_new(); /* keep the set of that moment */
    proc_stop(&a);
    for (int64_t ms = 150 * SEC + 500; ms <= 220 * SEC; ms += 500) {
        proc_pass(&b, ms);
        for (size_t i = 0; i < b.snap->keyset->count; i++)
            b_made |= keyset_find(before, b.snap->keyset->keys[i].kid) == NULL;
    }
    keyset_free(before);
    cr_expect_eq(atomic_load(&metrics_signer.lock_held), 1, "B holds the lock");
    cr_expect(b_made, "and made a key");
    proc_stop(&b);
    config_free(&cfg);
}

/* Writes rotation.json for keys made beforehand: a retired key R and a
 * signing key S published 12 s so far (not trusted). */
static void two_keys(struct config *cfg, char r[KEY_KID_LEN + 1], char s[KEY_KID_LEN + 1])
{
    struct keydir *kd = keydir_new();

    (void)cfg;
    cr_assert_eq(keydir_generate(dir, kd, "ec-p256", ROTATION_RETIRED, 0, T0, err, sizeof(err)), 0);
    cr_assert_eq(keydir_generate(dir, kd, "ec-p256", ROTATION_SIGNING, 0, T0, err, sizeof(err)), 1);
    kd->rot[0].published_ms = 100 * SEC;
    kd->rot[0].keep_ms = 32 * SEC;
    kd->rot[1].published_ms = 12 * SEC;
    cr_assert_eq(keydir_save(dir, kd, err, sizeof(err)), 0, "%s", err);
    memcpy(r, kd->rot[0].kid, KEY_KID_LEN + 1);
    memcpy(s, kd->rot[1].kid, KEY_KID_LEN + 1);
    keydir_free(kd);
}

/* A process that starts with keys in place counts each as published here
 * for its age in the directory less the lag (it may have served a set
 * without it that long before it stopped): S, 12 s old, counts 10 s of the
 * 11 s (10 + 1 slack) it needs, so the process signs with R for a second. */
Test(signerdir, a_start_credits_the_directorys_ages_less_the_lag)
{
    struct config cfg;
    struct proc p;
    char r[KEY_KID_LEN + 1], s[KEY_KID_LEN + 1];
    int lockfd;

    signer_config(&cfg, NULL, 0);
    two_keys(&cfg, r, s);
    cr_assert_eq(keydir_lock(dir, &lockfd, err, sizeof(err)), 1, "another process holds the lock");
    proc_start(&p, &cfg, 0, 0);
    cr_expect_str_eq(proc_pass(&p, 0), r);
    cr_expect_eq(atomic_load(&metrics_signer.signing_fallback), 1);
    cr_expect_eq(signerdir_due(p.sd), MS0 + SEC, "a pass is due when S may sign");
    cr_expect_str_eq(proc_pass(&p, 999), r);
    cr_expect_str_eq(proc_pass(&p, 1000), s);
    cr_expect_eq(atomic_load(&metrics_signer.signing_fallback), 0);
    close(lockfd);
    proc_stop(&p);
    config_free(&cfg);
}

/* A next key whose file broke never signed: it is discarded and another
 * made, rather than promoted into a key nobody can sign with. */
Test(signerdir, a_next_key_whose_file_broke_is_replaced)
{
    struct config cfg;
    struct proc p;
    char path[PATH_MAX], broken[KEY_KID_LEN + 1] = "";
    FILE *f;

    signer_config(&cfg, NULL, 0);
    proc_start(&p, &cfg, 0, 0);
    proc_pass(&p, 0);
    for (int64_t ms = 500; ms <= 50 * SEC; ms += 500)
        proc_pass(&p, ms);
    cr_assert_eq(p.snap->keyset->count, 2, "the next key was made at 50s");
    memcpy(broken, p.snap->keyset->keys[1].kid, KEY_KID_LEN + 1);
    snprintf(path, sizeof(path), "%s/key-%s.pem", dir, broken);
    cr_assert_not_null(f = fopen(path, "w"));
    fputs("garbage", f);
    fclose(f);
    /* The process had loaded it already; a new one (a restart) has not. */
    proc_stop(&p);
    proc_start(&p, &cfg, 0, 50 * SEC + 100);
    for (int64_t ms = 50 * SEC + 500; ms <= 70 * SEC; ms += 500)
        proc_pass(&p, ms);
    cr_expect_null(keyset_find(p.snap->keyset, broken), "the broken key left");
    cr_expect_eq(p.snap->keyset->count, 2, "a new next key took its place");
    cr_expect(signerdir_current(p.sd)->key.priv != NULL);
    proc_stop(&p);
    config_free(&cfg);
}

/* A holder that cannot write rotation.json gives up the lock rather than
 * act alone, and takes it again once it can. */
Test(signerdir, a_holder_that_cannot_write_lets_go)
{
    struct config cfg;
    struct proc p;
    char tmp[PATH_MAX];

    signer_config(&cfg, NULL, 0);
    proc_start(&p, &cfg, 0, 0);
    proc_pass(&p, 0);
    snprintf(tmp, sizeof(tmp), "%s/rotation.json.tmp", dir);
    cr_assert_eq(mkdir(tmp, 0700), 0, "a directory where the temporary file goes");
    proc_pass(&p, 50 * SEC);
    cr_expect_eq(atomic_load(&metrics_signer.lock_held), 0);
    cr_expect_eq(p.snap->keyset->count, 1, "what the directory says: no next key");
    int files = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        files += strncmp(e->d_name, "key-", 4) == 0;
    closedir(d);
    cr_expect_eq(files, 1, "the key made but not saved is not left behind");
    cr_expect_eq(rmdir(tmp), 0);
    proc_pass(&p, 51 * SEC);
    cr_expect_eq(atomic_load(&metrics_signer.lock_held), 1, "the lock, taken again");
    /* The ages it had not saved yet are lost: the schedule resumes from
     * what the directory says, later rather than sooner. */
    cr_expect_eq(p.snap->keyset->count, 1);
    for (int64_t ms = 51 * SEC + 500; ms <= 102 * SEC && p.snap->keyset->count == 1; ms += 500)
        proc_pass(&p, ms);
    cr_expect_eq(p.snap->keyset->count, 2, "the next key, made by the holder again");
    proc_stop(&p);
    config_free(&cfg);
}
