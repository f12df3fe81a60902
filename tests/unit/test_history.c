/*
 * Unit tests for keys/history: which keys are published as they come and go
 * (retention), and the state file that carries that across restarts.
 */
#include <criterion/criterion.h>

#include "test_support.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys/history.h"
#include "keys/keyset.h"

#define FIXTURE_MAX_FILES 8
#define MAX_EVENTS        16

/* Each test gets its own temporary directory for state files. */
static char tmpdir[PATH_MAX];

static void tmp_setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/oidc-history-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void tmp_teardown(void)
{
    const char *names[] = {"keys.json", "keys.json.tmp", "bad.json"};
    char path[PATH_MAX + 32];

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    rmdir(tmpdir);
    leak_check();
}

TestSuite(apply, .fini = leak_check);
TestSuite(expiry, .fini = leak_check);
TestSuite(state, .init = tmp_setup, .fini = tmp_teardown);

/* ------------------------------------------------------------------------ */
/* helpers                                                                    */

static struct keyset *load2(const char *a, const char *b)
{
    const char *names[] = {a, b};
    return fixture_keyset(names, 2);
}

/* The kid of a fixture (copied, so that no keyset outlives the call). */
static void kid_of(const char *name, char kid[KEY_KID_LEN + 1])
{
    struct keyset *ks = fixture_keyset1(name);
    memcpy(kid, ks->keys[0].kid, KEY_KID_LEN + 1);
    keyset_free(ks);
}

static struct history *new_history(void)
{
    struct history *h = calloc(1, sizeof(*h));
    cr_assert_not_null(h);
    return h;
}

/* What the callback of history_apply reported. */
struct events {
    size_t n;
    enum history_event ev[MAX_EVENTS];
    char kid[MAX_EVENTS][KEY_KID_LEN + 1];
    time_t until[MAX_EVENTS];
};

static void record(void *ctx, enum history_event ev, const struct history_entry *e, time_t until)
{
    struct events *r = ctx;
    cr_assert_lt(r->n, MAX_EVENTS);
    cr_assert_not_null(e);
    r->ev[r->n] = ev;
    memcpy(r->kid[r->n], e->kid, KEY_KID_LEN + 1);
    r->until[r->n] = until;
    r->n++;
}

/* history_apply that must not fail; events are appended to r (reset first). */
static int apply(struct history *h, struct keyset *ks, unsigned long retention, time_t now, struct events *r)
{
    char err[1024] = "";
    memset(r, 0, sizeof(*r));
    int rc = history_apply(h, ks, retention, now, record, r, err, sizeof err);
    cr_assert_geq(rc, 0, "history_apply failed: %s", err);
    return rc;
}

static void expect_event(const struct events *r, size_t i, enum history_event ev, const char *kid, time_t until)
{
    cr_assert_gt(r->n, i, "event %zu missing (%zu events)", i, r->n);
    cr_expect_eq(r->ev[i], ev, "event %zu: type %d, want %d", i, (int)r->ev[i], (int)ev);
    cr_expect_str_eq(r->kid[i], kid, "event %zu", i);
    if (ev == HISTORY_RETAINED)
        cr_expect_eq((long long)r->until[i], (long long)until, "event %zu: until", i);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "fopen %s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    cr_assert_eq(fclose(f), 0);
}

static void state_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* ------------------------------------------------------------------------ */
/* history_apply                                                              */

Test(apply, new_keys_are_added_and_present)
{
    char rsa[KEY_KID_LEN + 1], ec[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    kid_of("ec256.pub", ec);
    struct history *h = new_history();
    struct keyset *ks = load2("rsa2048.pub", "ec256.pub");
    struct events r;

    cr_expect_eq(apply(h, ks, 0, 1000, &r), 1);
    cr_assert_eq(r.n, 2);
    expect_event(&r, 0, HISTORY_ADDED, rsa, 0);
    expect_event(&r, 1, HISTORY_ADDED, ec, 0);
    /* the input set is published as it is */
    cr_assert_eq(ks->count, 2);
    cr_expect_str_eq(ks->keys[0].kid, rsa);
    cr_expect_str_eq(ks->keys[1].kid, ec);
    cr_assert_eq(h->count, 2);
    for (size_t i = 0; i < 2; i++) {
        const struct history_entry *e = history_find(h, i ? ec : rsa);
        cr_assert_not_null(e);
        cr_expect(e->present);
        cr_expect_eq(e->first_seen, 1000);
        cr_expect_eq(e->last_seen, 1000);
        cr_expect_str_eq(e->source, ks->keys[i].source);
        cr_expect_not_null(e->spki);
    }
    cr_expect_null(history_find(h, "no-such-kid"));
    cr_expect_eq(history_next_expiry(h, 0), 0);
    cr_expect_eq(history_next_expiry(h, 100), 0);
    keyset_free(ks);
    history_free(h);
}

Test(apply, only_time_passing_returns_0)
{
    struct history *h = new_history();
    struct keyset *ks = load2("rsa2048.pub", "ec256.pub");
    struct events r;

    cr_expect_eq(apply(h, ks, 100, 1000, &r), 1);
    keyset_free(ks);
    ks = load2("rsa2048.pub", "ec256.pub");
    cr_expect_eq(apply(h, ks, 100, 1010, &r), 0);
    cr_expect_eq(r.n, 0, "no event expected, got %zu", r.n);
    cr_assert_eq(ks->count, 2);
    for (size_t i = 0; i < h->count; i++) {
        cr_expect_eq(h->entries[i].first_seen, 1000);
        cr_expect_eq(h->entries[i].last_seen, 1010);
        cr_expect(h->entries[i].present);
    }
    keyset_free(ks);
    history_free(h);
}

Test(apply, leaving_without_retention_is_dropped)
{
    char rsa[KEY_KID_LEN + 1], ec[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    kid_of("ec256.pub", ec);
    struct history *h = new_history();
    struct keyset *ks = load2("rsa2048.pub", "ec256.pub");
    struct events r;

    apply(h, ks, 0, 1000, &r);
    keyset_free(ks);
    ks = fixture_keyset1("ec256.pub");
    cr_expect_eq(apply(h, ks, 0, 1010, &r), 1);
    cr_assert_eq(r.n, 1);
    expect_event(&r, 0, HISTORY_DROPPED, rsa, 0);
    cr_assert_eq(ks->count, 1);
    cr_expect_str_eq(ks->keys[0].kid, ec);
    cr_expect_null(keyset_find(ks, rsa));
    cr_expect_null(history_find(h, rsa));
    cr_expect_eq(h->count, 1);
    cr_expect_eq(history_next_expiry(h, 0), 0);
    keyset_free(ks);
    history_free(h);
}

Test(apply, leaving_with_retention_is_retained_then_dropped)
{
    char rsa[KEY_KID_LEN + 1], ec[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    kid_of("ec256.pub", ec);
    struct history *h = new_history();
    struct keyset *ks = load2("rsa2048.pub", "ec256.pub");
    struct events r;

    apply(h, ks, 100, 1000, &r);
    keyset_free(ks);

    /* rsa leaves at 1010: retained until 1110, after the input keys */
    ks = fixture_keyset1("ec256.pub");
    cr_expect_eq(apply(h, ks, 100, 1010, &r), 1);
    cr_assert_eq(r.n, 1);
    expect_event(&r, 0, HISTORY_RETAINED, rsa, 1110);
    cr_assert_eq(ks->count, 2);
    cr_expect_str_eq(ks->keys[0].kid, ec);
    cr_expect_str_eq(ks->keys[1].kid, rsa);
    cr_expect_eq(strncmp(ks->keys[1].source, "retained", 8), 0, "source: %s", ks->keys[1].source);
    cr_expect_str_eq(ks->keys[1].alg, "RS256");
    const struct history_entry *e = history_find(h, rsa);
    cr_assert_not_null(e);
    cr_expect_not(e->present);
    cr_expect_eq(e->first_seen, 1000);
    cr_expect_eq(e->last_seen, 1010);
    cr_expect_eq(history_next_expiry(h, 100), 1110);
    keyset_free(ks);

    /* still retained, nothing to report or save */
    ks = fixture_keyset1("ec256.pub");
    cr_expect_eq(apply(h, ks, 100, 1109, &r), 0);
    cr_expect_eq(r.n, 0);
    cr_assert_eq(ks->count, 2);
    cr_expect_str_eq(ks->keys[1].kid, rsa);
    cr_expect_eq(history_find(h, rsa)->last_seen, 1010, "an absent key's last_seen must not move");
    cr_expect_eq(history_next_expiry(h, 100), 1110);
    keyset_free(ks);

    /* at last_seen + retention it is dropped */
    ks = fixture_keyset1("ec256.pub");
    cr_expect_eq(apply(h, ks, 100, 1110, &r), 1);
    cr_assert_eq(r.n, 1);
    expect_event(&r, 0, HISTORY_DROPPED, rsa, 0);
    cr_assert_eq(ks->count, 1);
    cr_expect_str_eq(ks->keys[0].kid, ec);
    cr_expect_null(history_find(h, rsa));
    cr_expect_eq(history_next_expiry(h, 100), 0);
    keyset_free(ks);
    history_free(h);
}

Test(apply, retained_keys_keep_history_order_after_inputs)
{
    char rsa[KEY_KID_LEN + 1], e256[KEY_KID_LEN + 1], e384[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    kid_of("ec256.pub", e256);
    kid_of("ec384.pub", e384);
    struct history *h = new_history();
    const char *all[] = {"rsa2048.pub", "ec256.pub", "ec384.pub"};
    struct keyset *ks = fixture_keyset(all, 3);
    struct events r;

    apply(h, ks, 60, 1000, &r);
    keyset_free(ks);
    ks = fixture_keyset1("ec384.pub");
    cr_expect_eq(apply(h, ks, 60, 1005, &r), 1);
    cr_assert_eq(r.n, 2);
    expect_event(&r, 0, HISTORY_RETAINED, rsa, 1065);
    expect_event(&r, 1, HISTORY_RETAINED, e256, 1065);
    cr_assert_eq(ks->count, 3);
    cr_expect_str_eq(ks->keys[0].kid, e384);
    cr_expect_str_eq(ks->keys[1].kid, rsa);
    cr_expect_str_eq(ks->keys[2].kid, e256);
    keyset_free(ks);
    history_free(h);
}

Test(apply, retained_key_coming_back_is_present_again)
{
    char rsa[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    struct history *h = new_history();
    struct keyset *ks = load2("rsa2048.pub", "ec256.pub");
    struct events r;

    apply(h, ks, 100, 1000, &r);
    keyset_free(ks);
    ks = fixture_keyset1("ec256.pub");
    apply(h, ks, 100, 1010, &r);
    keyset_free(ks);
    ks = load2("ec256.pub", "rsa2048.pub");
    apply(h, ks, 100, 1020, &r);
    cr_expect_eq(r.n, 0, "no event expected for a key that comes back, got %zu", r.n);
    cr_assert_eq(ks->count, 2);
    cr_expect_str_eq(ks->keys[1].kid, rsa);
    cr_expect_neq(strncmp(ks->keys[1].source, "retained", 8), 0, "source: %s", ks->keys[1].source);
    const struct history_entry *e = history_find(h, rsa);
    cr_assert_not_null(e);
    cr_expect(e->present);
    cr_expect_eq(e->first_seen, 1000);
    cr_expect_eq(e->last_seen, 1020);
    cr_expect_eq(history_next_expiry(h, 100), 0);
    keyset_free(ks);
    history_free(h);
}

/* ------------------------------------------------------------------------ */
/* history_next_expiry                                                        */

Test(expiry, earliest_retained_key)
{
    struct history *h = new_history();
    const char *all[] = {"rsa2048.pub", "ec256.pub", "ec384.pub"};
    struct keyset *ks = fixture_keyset(all, 3);
    struct events r;

    apply(h, ks, 50, 1000, &r);
    cr_expect_eq(history_next_expiry(h, 50), 0, "nothing retained yet");
    keyset_free(ks);
    ks = load2("ec256.pub", "ec384.pub"); /* rsa leaves at 1010 */
    apply(h, ks, 50, 1010, &r);
    cr_expect_eq(history_next_expiry(h, 50), 1060);
    keyset_free(ks);
    ks = fixture_keyset1("ec384.pub"); /* ec256 leaves at 1020 */
    apply(h, ks, 50, 1020, &r);
    cr_expect_eq(history_next_expiry(h, 50), 1060);
    cr_expect_eq(history_next_expiry(h, 70), 1080, "computed from last_seen and the retention given");
    keyset_free(ks);
    ks = fixture_keyset1("ec384.pub"); /* rsa expires */
    apply(h, ks, 50, 1060, &r);
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.ev[0], HISTORY_DROPPED);
    cr_expect_eq(history_next_expiry(h, 50), 1070);
    keyset_free(ks);
    ks = fixture_keyset1("ec384.pub"); /* ec256 expires */
    apply(h, ks, 50, 1075, &r);
    cr_expect_eq(history_next_expiry(h, 50), 0);
    cr_expect_eq(ks->count, 1);
    keyset_free(ks);
    history_free(h);
}

Test(expiry, empty_history)
{
    struct history *h = new_history();
    cr_expect_eq(history_next_expiry(h, 0), 0);
    cr_expect_eq(history_next_expiry(h, 3600), 0);
    history_free(h);
}

/* ------------------------------------------------------------------------ */
/* history_save / history_load                                                */

Test(state, save_load_round_trip)
{
    char path[PATH_MAX + 32], err[1024] = "", rsa[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    struct history *h = new_history(), *back = NULL;
    const char *all[] = {"rsa2048.pub", "ec256.pub", "ec384.pub"};
    struct keyset *ks = fixture_keyset(all, 3);
    struct events r;

    apply(h, ks, 100, 1000, &r);
    keyset_free(ks);
    ks = load2("ec256.pub", "ec384.pub");
    apply(h, ks, 100, 1234, &r); /* rsa retained, last seen 1234 */
    keyset_free(ks);

    state_path(path, sizeof path, "keys.json");
    cr_assert_eq(history_save(h, path, err, sizeof err), 0, "history_save: %s", err);
    cr_expect_neq(access(path, R_OK), -1, "state file not written");
    char tmp[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_expect_eq(access(tmp, F_OK), -1, "temporary file left behind");

    cr_assert_eq(history_load(path, &back, err, sizeof err), 0, "history_load: %s", err);
    cr_assert_not_null(back);
    cr_assert_eq(back->count, h->count);
    for (size_t i = 0; i < h->count; i++) {
        const struct history_entry *a = &h->entries[i], *b = &back->entries[i];
        cr_expect_str_eq(b->kid, a->kid, "entry %zu", i);
        cr_expect_eq(b->first_seen, a->first_seen, "entry %zu", i);
        cr_expect_eq(b->last_seen, a->last_seen, "entry %zu", i);
        cr_expect_eq(b->present, a->present, "entry %zu", i);
        cr_expect_str_eq(b->source, a->source, "entry %zu", i);
        cr_expect_str_eq(b->spki, a->spki, "entry %zu", i);
    }
    const struct history_entry *e = history_find(back, rsa);
    cr_assert_not_null(e);
    cr_expect_not(e->present);
    cr_expect_eq(e->last_seen, 1234);
    cr_expect_eq(history_next_expiry(back, 100), 1334);

    /* the retained key is published again from the stored spki */
    ks = load2("ec256.pub", "ec384.pub");
    cr_expect_eq(apply(back, ks, 100, 1300, &r), 0);
    cr_assert_eq(ks->count, 3);
    cr_expect_str_eq(ks->keys[2].kid, rsa);
    cr_expect_str_eq(ks->keys[2].alg, "RS256");
    cr_expect_eq(ks->keys[2].bits, 2048);
    keyset_free(ks);

    history_free(back);
    history_free(h);
}

Test(state, missing_file_is_empty)
{
    char path[PATH_MAX + 32], err[1024] = "";
    struct history *h = NULL;

    state_path(path, sizeof path, "keys.json");
    cr_assert_eq(history_load(path, &h, err, sizeof err), 0, "history_load: %s", err);
    cr_assert_not_null(h);
    cr_expect_eq(h->count, 0);
    history_free(h);
}

/* Loads text as a state file; expects -1, no history, and a message naming
 * the file that contains want. */
static void expect_load_error(const char *text, const char *want)
{
    char path[PATH_MAX + 32], err[1024] = "";
    struct history *h = NULL;

    state_path(path, sizeof path, "bad.json");
    write_file(path, text);
    cr_expect_eq(history_load(path, &h, err, sizeof err), -1, "loaded: %s", text);
    cr_expect_null(h);
    cr_expect_not_null(strstr(err, path), "message does not name the state file: %s", err);
    cr_expect_not_null(strstr(err, want), "message %s does not contain %s", err, want);
    history_free(h);
}

/* A valid entry for ec256.pub, as history_save writes it. */
static void ec256_entry(char *buf, size_t len, const char *kid_override, const char *omit)
{
    char kid[KEY_KID_LEN + 1];
    struct history *h = new_history();
    struct keyset *ks = fixture_keyset1("ec256.pub");
    struct events r;

    kid_of("ec256.pub", kid);
    apply(h, ks, 0, 1000, &r);
    char members[6][4096];
    const char *names[6] = {"kid", "first_seen", "last_seen", "present", "source", "spki"};
    snprintf(members[0], sizeof members[0], "\"kid\":\"%s\"", kid_override ? kid_override : kid);
    snprintf(members[1], sizeof members[1], "\"first_seen\":1000");
    snprintf(members[2], sizeof members[2], "\"last_seen\":1000");
    snprintf(members[3], sizeof members[3], "\"present\":true");
    snprintf(members[4], sizeof members[4], "\"source\":\"x.pub\"");
    snprintf(members[5], sizeof members[5], "\"spki\":\"%s\"", h->entries[0].spki);
    size_t n = (size_t)snprintf(buf, len, "{");
    int first = 1;
    for (size_t i = 0; i < 6; i++) {
        if (omit && strcmp(omit, names[i]) == 0)
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s%s", first ? "" : ",", members[i]);
        first = 0;
    }
    snprintf(buf + n, len - n, "}");
    keyset_free(ks);
    history_free(h);
}

Test(state, valid_hand_written_file_loads)
{
    char entry[8192], text[9000], path[PATH_MAX + 32], err[1024] = "", kid[KEY_KID_LEN + 1];
    struct history *h = NULL;

    kid_of("ec256.pub", kid);
    ec256_entry(entry, sizeof entry, NULL, NULL);
    snprintf(text, sizeof text, "{\"version\":1,\"keys\":[%s]}", entry);
    state_path(path, sizeof path, "keys.json");
    write_file(path, text);
    cr_assert_eq(history_load(path, &h, err, sizeof err), 0, "history_load: %s", err);
    cr_assert_eq(h->count, 1);
    cr_expect_str_eq(h->entries[0].kid, kid);
    cr_expect_str_eq(h->entries[0].source, "x.pub");
    cr_expect_eq(h->entries[0].first_seen, 1000);
    cr_expect(h->entries[0].present);
    history_free(h);
}

Test(state, corrupt_json)
{
    expect_load_error("{\"version\":1,\"keys\":[", "state file");
    expect_load_error("not json at all", "state file");
    expect_load_error("", "state file");
}

Test(state, wrong_version)
{
    expect_load_error("{\"version\":2,\"keys\":[]}", "version");
    expect_load_error("{\"version\":\"1\",\"keys\":[]}", "version");
    expect_load_error("{\"keys\":[]}", "version");
    expect_load_error("{\"version\":1}", "state file");
    expect_load_error("[]", "state file");
}

Test(state, kid_not_matching_spki)
{
    char entry[8192], text[9000], other[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", other);
    ec256_entry(entry, sizeof entry, other, NULL);
    snprintf(text, sizeof text, "{\"version\":1,\"keys\":[%s]}", entry);
    expect_load_error(text, "kid does not match spki");
}

Test(state, spki_not_a_key)
{
    expect_load_error("{\"version\":1,\"keys\":[{\"kid\":\"abc\",\"first_seen\":1,\"last_seen\":1,\"present\":true,"
                      "\"source\":\"x\",\"spki\":\"AAAA\"}]}",
                      "keys[0]");
}

Test(state, missing_members)
{
    const char *members[] = {"kid", "first_seen", "last_seen", "present", "source", "spki"};
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        char entry[8192], text[9000];
        ec256_entry(entry, sizeof entry, NULL, members[i]);
        snprintf(text, sizeof text, "{\"version\":1,\"keys\":[%s]}", entry);
        expect_load_error(text, "keys[0]");
    }
}

Test(state, present_key_gone_after_load_leaves_now)
{
    char path[PATH_MAX + 32], err[1024] = "", rsa[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    struct history *h = new_history(), *back = NULL;
    struct keyset *ks = load2("rsa2048.pub", "ec256.pub");
    struct events r;

    apply(h, ks, 100, 1000, &r);
    keyset_free(ks);
    state_path(path, sizeof path, "keys.json");
    cr_assert_eq(history_save(h, path, err, sizeof err), 0, "history_save: %s", err);
    history_free(h);

    /* a restart long after: rsa was present when last saved, so it left
     * "now" (not at its stale last_seen, which would drop it at once) */
    cr_assert_eq(history_load(path, &back, err, sizeof err), 0, "history_load: %s", err);
    ks = fixture_keyset1("ec256.pub");
    cr_expect_eq(apply(back, ks, 100, 5000, &r), 1);
    cr_assert_eq(r.n, 1);
    expect_event(&r, 0, HISTORY_RETAINED, rsa, 5100);
    cr_assert_eq(ks->count, 2);
    cr_expect_str_eq(ks->keys[1].kid, rsa);
    cr_expect_eq(history_next_expiry(back, 100), 5100);
    keyset_free(ks);
    history_free(back);
}

/* serve saves the state only when history_apply returns 1. A retained key
 * that comes back into the inputs is present again; if that is not saved,
 * the file still says "absent since its old last_seen", and after a restart
 * in which the key is gone again it is dropped at once instead of being
 * retained from the moment it left. */
Test(state, key_back_from_retention_survives_restart)
{
    char path[PATH_MAX + 32], err[1024] = "", rsa[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    struct history *h = new_history(), *back = NULL;
    struct keyset *ks;
    struct events r;
    const time_t times[] = {1000, 1010, 1020};
    const int with_rsa[] = {1, 0, 1};

    state_path(path, sizeof path, "keys.json");
    for (size_t i = 0; i < 3; i++) {
        ks = with_rsa[i] ? load2("ec256.pub", "rsa2048.pub") : fixture_keyset1("ec256.pub");
        if (apply(h, ks, 100, times[i], &r) == 1)
            cr_assert_eq(history_save(h, path, err, sizeof err), 0, "history_save: %s", err);
        keyset_free(ks);
    }
    history_free(h);

    /* restart at 2000 without rsa: it was present until the restart */
    cr_assert_eq(history_load(path, &back, err, sizeof err), 0, "history_load: %s", err);
    ks = fixture_keyset1("ec256.pub");
    apply(back, ks, 100, 2000, &r);
    cr_expect_eq(r.n, 1);
    if (r.n == 1)
        expect_event(&r, 0, HISTORY_RETAINED, rsa, 2100);
    cr_expect_eq(ks->count, 2, "rsa was present just before the restart and must be retained");
    keyset_free(ks);
    history_free(back);
}
