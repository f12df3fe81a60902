/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the reload decisions (server/reload): when the next pass
 * is due (schedule: debounce, requests, the periodic re-read, removal
 * confirmation, wall-clock deadlines and their floor), and what a pass
 * publishes (reload: additions at once, removals once confirmed, retained
 * keys until their expiry, the state saved on a change and every
 * RELOAD_STATE_REFRESH seconds), and the signing-key watch (signing).
 *
 * The key files are fixture PEMs copied into a fresh temporary directory;
 * both clocks are passed in, so nothing here waits.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"

#include "config/config.h"
#include "keys/history.h"
#include "keys/jwks_parse.h"
#include "server/reload/reload.h"
#include "server/reload/schedule.h"
#include "server/reload/signing.h"
#include "util/log.h"

#define T0  1800000000L /* wall clock of the first pass */
#define MS0 5000000     /* monotonic ms of the first pass */
#define MIN 60000       /* one minute, in ms */

/* --- schedule ----------------------------------------------------------- */

TestSuite(schedule);

Test(schedule, periodic_pass_every_interval)
{
    struct schedule s;

    schedule_init(&s, 60, MS0);
    cr_expect_eq(schedule_next(&s, 0, 0, MS0, T0), MS0 + MIN);
    schedule_ran(&s, MS0 + MIN);
    cr_expect_eq(schedule_next(&s, 0, 0, MS0 + MIN, T0 + 60), MS0 + 2 * MIN);
}

/* A burst of inotify events is read once, SCHEDULE_DEBOUNCE_MS after its
 * last event; a pass clears it. */
Test(schedule, changes_are_debounced)
{
    struct schedule s;

    schedule_init(&s, 60, MS0);
    schedule_changed(&s, MS0 + 100);
    cr_expect_eq(schedule_next(&s, 0, 0, MS0 + 100, T0), MS0 + 100 + SCHEDULE_DEBOUNCE_MS);
    schedule_changed(&s, MS0 + 110);
    cr_expect_eq(schedule_next(&s, 0, 0, MS0 + 110, T0), MS0 + 110 + SCHEDULE_DEBOUNCE_MS, "the burst goes on");
    schedule_ran(&s, MS0 + 135);
    cr_expect_eq(schedule_next(&s, 0, 0, MS0 + 135, T0), MS0 + 135 + MIN);
}

Test(schedule, a_request_is_due_at_once)
{
    struct schedule s;

    schedule_init(&s, 60, MS0);
    schedule_requested(&s, MS0 + 7);
    cr_expect_eq(schedule_next(&s, 0, 0, MS0 + 7, T0), MS0 + 7);
}

Test(schedule, removal_confirmation_is_a_deadline)
{
    struct schedule s;

    schedule_init(&s, 60, MS0);
    cr_expect_eq(schedule_next(&s, MS0 + 1000, 0, MS0 + 10, T0), MS0 + 1000);
    cr_expect_eq(schedule_next(&s, MS0 + 2 * MIN, 0, MS0 + 10, T0), MS0 + MIN, "the periodic pass comes first");
}

/* A retained key's expiry or the signing key maturing: wall-clock seconds,
 * turned into monotonic ms from the instant given on both clocks. */
Test(schedule, wall_clock_deadlines)
{
    struct schedule s;

    schedule_init(&s, 60, MS0);
    cr_expect_eq(schedule_next(&s, 0, T0 + 12, MS0 + 2000, T0 + 2), MS0 + 2000 + 10000);
    cr_expect_eq(schedule_next(&s, 0, T0 + 3600, MS0, T0), MS0 + MIN, "the periodic pass comes first");
}

/* A deadline that has passed (the files were broken at a retained key's
 * expiry, so the pass could not drop it) is retried a second after the
 * last pass, not in a spin. */
Test(schedule, a_passed_deadline_does_not_spin)
{
    struct schedule s;

    schedule_init(&s, 60, MS0);
    schedule_ran(&s, MS0 + 500);
    cr_expect_eq(schedule_next(&s, 0, T0 - 30, MS0 + 600, T0), MS0 + 500 + SCHEDULE_RETRY_MS);
    cr_expect_eq(schedule_next(&s, 0, T0 - 30, MS0 + 5000, T0 + 4), MS0 + 500 + SCHEDULE_RETRY_MS,
                 "due (in the past): the loop runs a pass now");
}

/* --- reload ------------------------------------------------------------- */

static char tmp[64], keys[128], state[128];
static struct config cfg;
static struct reload *r;

static void reload_setup(void)
{
    log_init(LOG_ERROR, 0); /* the passes log every key; only failures matter here */
    tmpdir_make(tmp, "reload");
    snprintf(keys, sizeof(keys), "%s/keys", tmp);
    snprintf(state, sizeof(state), "%s/state", tmp);
    cr_assert_eq(mkdir(keys, 0700), 0);
}

static void reload_teardown(void)
{
    reload_free(r);
    r = NULL;
    config_free(&cfg);
    tmpdir_remove(tmp);
    leak_check();
}

TestSuite(reload, .init = reload_setup, .fini = reload_teardown);

#define PUT(name, ...) fixture_write(keys, name, (const char *const[]){__VA_ARGS__, NULL})

static void drop(const char *name)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/%s", keys, name);
    cr_assert_eq(unlink(path), 0, "%s", path);
}

/* serve over the key directory with the given extra flags, and the
 * reloader's first pass at T0. */
static void start(const char *const *extra, size_t nextra)
{
    serve_config(&cfg, "https://a.example", keys, extra, nextra);
    cr_assert_not_null(r = reload_create(&cfg, T0, MS0));
}

#define START(...)                                                                                                     \
    start((const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

static size_t published(void)
{
    return reload_current(r)->keyset->count;
}

static int64_t confirm_at(void)
{
    int64_t c;
    time_t w;

    reload_deadlines(r, &c, &w);
    return c;
}

static time_t wall_at(void)
{
    int64_t c;
    time_t w;

    reload_deadlines(r, &c, &w);
    return w;
}

/* The last_seen of the first key in the state file. */
static long long stored_last_seen(void)
{
    char path[PATH_MAX], buf[8192];
    FILE *f;
    size_t n;
    const char *p;

    snprintf(path, sizeof(path), "%s/keys.json", state);
    cr_assert_not_null(f = fopen(path, "r"), "%s", path);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    cr_assert_not_null(p = strstr(buf, "\"last_seen\":"), "%s", buf);
    return atoll(p + strlen("\"last_seen\":"));
}

Test(reload, unchanged_files_publish_nothing_new)
{
    PUT("a.pub", "rsa2048.pub");
    START("--key-reload-interval", "60s");
    struct snapshot *first = reload_current(r);
    cr_expect_eq(published(), 1);
    cr_expect_null(reload_pass(r, T0 + 60, MS0 + MIN));
    cr_expect_eq(reload_current(r), first, "the same bytes: the same snapshot, ETag and Last-Modified");
}

Test(reload, an_added_key_is_published_at_once)
{
    PUT("a.pub", "rsa2048.pub");
    START("--key-reload-interval", "60s");
    PUT("b.pub", "ec256.pub");
    struct snapshot *next = reload_pass(r, T0 + 1, MS0 + 1000);
    cr_assert_not_null(next);
    cr_expect_eq(next, reload_current(r));
    cr_expect_eq(published(), 2);
}

/* A file rewritten in place with fewer keys may be half-written: the key
 * stays until a read RELOAD_REMOVAL_CONFIRM_MS later finds the same set,
 * and that re-read is the schedule's deadline. */
Test(reload, a_removal_waits_for_a_confirming_read)
{
    PUT("a.pub", "rsa2048.pub", "ec256.pub");
    START("--key-reload-interval", "60s");
    cr_expect_eq(published(), 2);
    cr_expect_eq(confirm_at(), 0);
    PUT("a.pub", "rsa2048.pub");
    cr_expect_null(reload_pass(r, T0 + 1, MS0 + 1000), "held: the documents do not change");
    cr_expect_eq(published(), 2);
    cr_expect_eq(confirm_at(), MS0 + 1000 + RELOAD_REMOVAL_CONFIRM_MS);
    cr_expect_null(reload_pass(r, T0 + 1, MS0 + 1500), "too soon to confirm");
    cr_expect_eq(published(), 2);
    cr_expect_not_null(reload_pass(r, T0 + 2, MS0 + 1000 + RELOAD_REMOVAL_CONFIRM_MS));
    cr_expect_eq(published(), 1);
    cr_expect_eq(confirm_at(), 0);
}

/* A key that left stays published for --key-retention; its expiry is the
 * schedule's wall-clock deadline, and the pass at that time drops it. */
Test(reload, a_retained_key_expires_on_its_deadline)
{
    PUT("a.pub", "rsa2048.pub");
    PUT("b.pub", "ec256.pub");
    START("--key-retention", "30s", "--state-dir", state, "--key-reload-interval", "60s");
    drop("b.pub");
    reload_pass(r, T0 + 1, MS0 + 1000);
    reload_pass(r, T0 + 2, MS0 + 1000 + RELOAD_REMOVAL_CONFIRM_MS);
    cr_expect_eq(published(), 2, "retained");
    cr_expect_eq(wall_at(), T0 + 2 + 30, "seen until its removal was confirmed, at T0 + 2");
    cr_expect_null(reload_pass(r, T0 + 31, MS0 + 31000));
    cr_expect_eq(published(), 2);
    cr_expect_not_null(reload_pass(r, T0 + 32, MS0 + 32000));
    cr_expect_eq(published(), 1);
    cr_expect_eq(wall_at(), 0);
}

/* The state is written when a key comes or goes, and otherwise only every
 * RELOAD_STATE_REFRESH seconds (to keep last_seen fresh on disk). */
Test(reload, state_is_saved_on_change_and_every_refresh)
{
    PUT("a.pub", "rsa2048.pub");
    START("--key-retention", "1h", "--state-dir", state, "--key-reload-interval", "60s");
    cr_expect_eq(stored_last_seen(), T0, "the first pass added the key");
    reload_pass(r, T0 + 60, MS0 + MIN);
    cr_expect_eq(stored_last_seen(), T0, "nothing changed: not saved");
    reload_pass(r, T0 + RELOAD_STATE_REFRESH - 1, MS0 + 2 * MIN);
    cr_expect_eq(stored_last_seen(), T0);
    reload_pass(r, T0 + RELOAD_STATE_REFRESH, MS0 + 3 * MIN);
    cr_expect_eq(stored_last_seen(), T0 + RELOAD_STATE_REFRESH, "refreshed");
    reload_save_at_exit(r, T0 + RELOAD_STATE_REFRESH + 7, MS0 + 4 * MIN);
    cr_expect_eq(stored_last_seen(), T0 + RELOAD_STATE_REFRESH + 7, "saved at exit");
}

/* While the signing key is younger than --max-age its maturing is a
 * deadline (the log says when it becomes safe to sign with). */
Test(reload, the_signing_key_maturing_is_a_deadline)
{
    char signing[PATH_MAX];

    snprintf(signing, sizeof(signing), "%s/rsa2048.pkcs8.key", FIXTURES);
    PUT("a.pub", "rsa2048.pub");
    START("--signing-key-file", signing, "--max-age", "600", "--key-reload-interval", "60s");
    cr_expect_eq(wall_at(), T0 + 600);
    reload_pass(r, T0 + 599, MS0 + MIN);
    cr_expect_eq(wall_at(), T0 + 600);
    reload_pass(r, T0 + 600, MS0 + 2 * MIN);
    cr_expect_eq(wall_at(), 0, "mature");
}

/* What the status page shows (reload_status): every published key with
 * when it was first seen, until when a retained one stays, the signing
 * key's role as it matures, and the last pass with its error. */
Test(reload, status_shows_keys_history_role_and_last_pass)
{
    char signing[PATH_MAX], garbage[PATH_MAX];
    struct status *st;

    snprintf(signing, sizeof(signing), "%s/rsa2048.pkcs8.key", FIXTURES);
    PUT("a.pub", "rsa2048.pub");
    PUT("b.pub", "ec256.pub");
    START("--signing-key-file", signing, "--max-age", "600", "--key-retention", "30s", "--state-dir", state,
          "--key-reload-interval", "60s");
    cr_assert_not_null(st = reload_status(r));
    cr_expect_str_eq(st->issuer, "https://a.example");
    cr_expect_str_eq(st->jwks_uri, "https://a.example/openid/v1/jwks");
    cr_expect_eq(st->generation, 1);
    cr_expect_eq(st->published_at, T0);
    cr_expect_eq(st->reload_at, T0);
    cr_expect_null(st->reload_error);
    cr_assert_eq(st->nkeys, 2);
    for (size_t i = 0; i < 2; i++) {
        cr_expect_str_eq(st->keys[i].kid, reload_current(r)->keyset->keys[i].kid);
        cr_expect_eq(st->keys[i].first_seen, T0);
        cr_expect_eq(st->keys[i].retained_until, 0);
    }
    cr_expect_str_eq(st->keys[0].alg, "RS256");
    cr_expect_eq(st->keys[0].bits, 2048);
    cr_expect_null(st->keys[0].curve);
    cr_expect_str_eq(st->keys[0].role, "signing (published for less than --max-age)");
    cr_expect_str_eq(st->keys[1].curve, "P-256");
    cr_expect_null(st->keys[1].role);
    status_release(st);

    drop("b.pub");
    reload_pass(r, T0 + 1, MS0 + 1000);
    reload_pass(r, T0 + 2, MS0 + 1000 + RELOAD_REMOVAL_CONFIRM_MS);
    snprintf(garbage, sizeof(garbage), "%s/a.pub", keys);
    PUT("a.pub", "garbage.pem");
    reload_pass(r, T0 + 600, MS0 + 2 * MIN);
    cr_assert_not_null(st = reload_status(r));
    cr_expect_eq(st->reload_at, T0 + 600);
    cr_assert_not_null(st->reload_error, "the last pass failed");
    cr_expect_not_null(strstr(st->reload_error, garbage), "%s", st->reload_error);
    cr_expect_eq(st->reload_failures, 1);
    cr_assert_eq(st->nkeys, 2, "the last good set stays");
    cr_expect_eq(st->keys[1].retained_until, T0 + 2 + 30);
    cr_expect_str_eq(st->keys[0].role, "signing", "mature at T0 + 600");
    status_release(st);
}

Test(reload, nothing_to_publish_refuses_to_start)
{
    serve_config(&cfg, "https://a.example", keys, NULL, 0);
    cr_expect_null(reload_create(&cfg, T0, MS0), "an empty key directory");
}

/* --- signing ------------------------------------------------------------ */

static struct keyset *ks;
static struct history *hist;

static void signing_teardown(void)
{
    keyset_free(ks);
    history_free(hist);
    ks = NULL;
    hist = NULL;
    leak_check();
}

TestSuite(signing, .init = reload_setup, .fini = signing_teardown);

/* The published set fixture, first seen at T0. */
static void publish_fixture(const char *name)
{
    char err[256];

    ks = fixture_keyset1(name);
    cr_assert_not_null(hist = calloc(1, sizeof(*hist)));
    cr_assert_geq(history_apply(hist, ks, 0, T0, NULL, NULL, err, sizeof(err)), 0, "%s", err);
}

Test(signing, states)
{
    char signing_file[PATH_MAX];
    struct signing s;

    snprintf(signing_file, sizeof(signing_file), "%s/rsa2048.pkcs8.key", FIXTURES);
    publish_fixture("rsa2048.pub");
    signing_init(&s, signing_file, 600);
    cr_expect_eq(signing_check(&s, ks, hist, T0 + 10), SIGNING_YOUNG);
    cr_expect_eq(s.mature_at, T0 + 600);
    cr_expect_eq(signing_check(&s, ks, hist, T0 + 600), SIGNING_MATURE);
    cr_expect_eq(s.mature_at, 0);
    signing_teardown();

    publish_fixture("ec256.pub");
    cr_expect_eq(signing_check(&s, ks, hist, T0 + 10), SIGNING_UNPUBLISHED, "the set lacks the signing key");
    cr_expect_eq(s.mature_at, 0);
    snprintf(signing_file, sizeof(signing_file), "%s/missing.key", FIXTURES);
    signing_init(&s, signing_file, 600);
    cr_expect_eq(signing_check(&s, ks, hist, T0 + 10), SIGNING_UNREADABLE);
    signing_init(&s, NULL, 600);
    cr_expect_eq(signing_check(&s, ks, hist, T0 + 10), SIGNING_UNKNOWN, "nothing to watch");
}

/* --- reload with an --upstream ------------------------------------------- */

/* serve with --upstream (and the key directory when files), the extra
 * flags, and the first pass at T0. */
static void start_upstream(int files, const char *const *extra, size_t nextra)
{
    char *argv[24] = {"oidc-discovery",    "serve",      "--service-account-issuer",
                      "https://a.example", "--upstream", "https://api.example:6443"};
    char err[CONFIG_ERR_MAX];
    enum config_command cmd;
    int argc = 6;

    if (files) {
        argv[argc++] = "--service-account-key-file";
        argv[argc++] = keys;
    }
    for (size_t i = 0; i < nextra; i++)
        argv[argc++] = (char *)extra[i];
    cr_assert_eq(config_parse(argc, argv, &cmd, &cfg, err, sizeof(err)), 0, "%s", err);
    cr_assert_not_null(r = reload_create(&cfg, T0, MS0));
}

/* The upstream's answer: the fixtures under kids, read as a JWKS (kept in
 * *text when text is not NULL). */
static struct keyset *upstream_set(const char *const *names, const char *const *kids, size_t n, char **text)
{
    char err[512], *doc = fixture_jwks(names, kids, n);
    struct keyset *ks = jwks_parse(doc, strlen(doc), NULL, NULL, err, sizeof(err));

    cr_assert_not_null(ks, "%s", err);
    if (text != NULL)
        *text = doc;
    else
        free(doc);
    return ks;
}

/* Until the upstream has answered nothing is published (503), not even
 * the key files: a set without its keys would be cached for max-age. */
Test(reload, nothing_published_before_the_upstream_answers)
{
    PUT("a.pub", "rsa2048.pub");
    start_upstream(1, NULL, 0);
    cr_assert(reload_current(r)->unavailable);
    cr_assert_eq(published(), 0);
    cr_assert_str_eq(reload_current(r)->retry_after, "60", "Retry-After: the refresh interval");
    cr_expect_null(reload_pass(r, T0 + 1, MS0 + 1000), "still nothing");
    reload_upstream(r, upstream_set((const char *const[]){"ec256.pub"}, (const char *const[]){"up-1"}, 1, NULL));
    cr_assert_not_null(reload_pass(r, T0 + 2, MS0 + 2000));
    cr_assert_not(reload_current(r)->unavailable);
    cr_assert_eq(published(), 2, "the union");
    cr_assert_str_eq(reload_current(r)->keyset->keys[1].kid, "up-1", "files first, then the upstream's");
}

/* Alone, the upstream's keys are published in its order under its kids:
 * for a kube-shaped JWKS, the very bytes it served. */
Test(reload, upstream_alone_is_published_byte_for_byte)
{
    static const char *const names[] = {"ec384.pub", "rsa2048.pub", "ec521.padded.pub"};
    char *text;

    start_upstream(0, NULL, 0);
    reload_upstream(r, upstream_set(names, (const char *const[]){NULL, "signer/2", NULL}, 3, &text));
    cr_assert_not_null(reload_pass(r, T0 + 1, MS0 + 1000));
    const struct snapshot *s = reload_current(r);
    cr_assert_eq(s->jwks.body.len, strlen(text));
    cr_assert(memcmp(s->jwks.body.bytes, text, strlen(text)) == 0, "%.*s\nvs\n%s", (int)s->jwks.body.len,
              s->jwks.body.bytes, text);
    free(text);
}

/* A key the upstream drops leaves at once (its answer is a whole
 * document), or stays for --key-retention; a failed read changes nothing
 * (the last good set stays: reload_upstream is only given good ones). */
Test(reload, upstream_dropped_key_retained)
{
    static const char *const both[] = {"rsa2048.pub", "ec256.pub"};

    start_upstream(0, (const char *const[]){"--key-retention", "1h", "--state-dir", state}, 4);
    reload_upstream(r, upstream_set(both, (const char *const[]){"old", "new"}, 2, NULL));
    reload_pass(r, T0 + 1, MS0 + 1000);
    cr_assert_eq(published(), 2);
    reload_upstream(r, upstream_set(both + 1, (const char *const[]){"new"}, 1, NULL));
    cr_assert_not_null(reload_pass(r, T0 + 2, MS0 + 2000), "no confirming re-read for an upstream");
    cr_assert_eq(published(), 2, "retained");
    cr_assert_str_eq(reload_current(r)->keyset->keys[1].kid, "old", "under its own kid");
    cr_assert_eq(wall_at(), T0 + 2 + 3600);
    reload_free(r);
    config_free(&cfg);
    start_upstream(0, (const char *const[]){"--key-retention", "1h", "--state-dir", state}, 4);
    reload_upstream(r, upstream_set(both + 1, (const char *const[]){"new"}, 1, NULL));
    reload_pass(r, T0 + 10, MS0 + 10000);
    cr_assert_eq(published(), 2, "after a restart too, from the state");
    cr_assert_str_eq(reload_current(r)->keyset->keys[1].kid, "old");
}

/* A kid of the upstream that a key file already gives another key: the
 * file's is published, once. */
Test(reload, upstream_kid_clash_keeps_the_files_key)
{
    struct keyset *file = fixture_keyset1("rsa2048.pub");

    PUT("a.pub", "rsa2048.pub");
    start_upstream(1, NULL, 0);
    reload_upstream(
        r, upstream_set((const char *const[]){"ec256.pub"}, (const char *const[]){file->keys[0].kid}, 1, NULL));
    keyset_free(file);
    reload_pass(r, T0 + 1, MS0 + 1000);
    cr_assert_eq(published(), 1);
    cr_assert_str_eq(reload_current(r)->keyset->keys[0].alg, "RS256", "the file's key");
}

/* --- relying-party limits ------------------------------------------------- */

/* Writes n fresh EC P-256 public keys into the key directory as one file. */
static void put_ec_keys(const char *name, size_t n)
{
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", keys, name);
    cr_assert_not_null(f = fopen(path, "w"), "%s", path);
    for (size_t i = 0; i < n; i++) {
        EVP_PKEY *k = EVP_EC_gen("P-256");
        cr_assert_not_null(k);
        cr_assert_eq(PEM_write_PUBKEY(f, k), 1);
        EVP_PKEY_free(k);
    }
    cr_assert_eq(fclose(f), 0);
}

static char stderr_path[PATH_MAX];

/* Sends what the log writes (on fd 2) to a file in the test's directory. */
static void capture_log(void)
{
    int fd;

    snprintf(stderr_path, sizeof(stderr_path), "%s/stderr.log", tmp);
    cr_assert_geq(fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600), 0);
    cr_assert_geq(dup2(fd, 2), 0);
    close(fd);
}

/* How many logged lines hold part. */
static size_t logged(const char *part)
{
    static char text[1 << 20];
    FILE *f = fopen(stderr_path, "r");
    size_t n, count = 0;

    cr_assert_not_null(f);
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    for (const char *at = text; (at = strstr(at, part)) != NULL; at += strlen(part))
        count++;
    return count;
}

#define AWS_LIMIT "relying-party limit: AWS IAM: "

/* serve logs what a relying party's documented limits refuse of the set it
 * publishes (here AWS's 100 keys of a type), at start and with every new
 * set, and not on passes that change nothing. */
Test(reload, logs_relying_party_limits_when_the_set_changes)
{
    log_init(LOG_INFO, 0);
    capture_log();
    put_ec_keys("a.pem", 101);
    start(NULL, 0);
    cr_expect_eq(published(), 101);
    cr_expect_eq(logged(AWS_LIMIT "0 RSA and 101 EC keys published; AWS uses at most 100"), 1);
    cr_expect_eq(logged("(https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_create_oidc.html)"), 1,
                 "the rule's source");
    cr_expect_null(reload_pass(r, T0 + 1, MS0 + 1000));
    cr_expect_eq(logged(AWS_LIMIT), 1, "an unchanged pass logs nothing");
    put_ec_keys("b.pem", 1);
    cr_expect_not_null(reload_pass(r, T0 + 2, MS0 + 2000));
    cr_expect_eq(logged(AWS_LIMIT "0 RSA and 102 EC keys"), 1);
    cr_expect_eq(logged(AWS_LIMIT), 2);
    drop("a.pem");
    cr_expect_null(reload_pass(r, T0 + 3, MS0 + 3000), "the removal waits for a confirming read");
    cr_expect_not_null(reload_pass(r, T0 + 5, MS0 + 3000 + RELOAD_REMOVAL_CONFIRM_MS));
    cr_expect_eq(published(), 1);
    cr_expect_eq(logged(AWS_LIMIT), 2);
    cr_expect_eq(logged("relying-party limits: the published set is within every documented limit again"), 1);
}

/* An issuer with a port is one AWS refuses: said at start. */
Test(reload, logs_an_issuer_aws_refuses)
{
    log_init(LOG_INFO, 0);
    capture_log();
    PUT("k.pem", "ec256.pub");
    serve_config(&cfg, "https://a.example:8443", keys, NULL, 0);
    cr_assert_not_null(r = reload_create(&cfg, T0, MS0));
    cr_expect_eq(logged(AWS_LIMIT "the issuer has a port (:8443)"), 1);
    cr_expect_eq(logged("relying-party limit: "), 1, "the set is within every limit");
}
