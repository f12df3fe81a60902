/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keys/history: which keys are published as they come and go
 * (retention), and the state file that carries that across restarts.
 */
#include <criterion/criterion.h>

#include "test_support.h"

#include <errno.h>
#include <limits.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys/history.h"
#include "keys/jwks_parse.h"
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
    char kid[MAX_EVENTS][KEY_KID_MAX + 1];
    time_t until[MAX_EVENTS];
};

static void record(void *ctx, enum history_event ev, const struct history_entry *e, time_t until)
{
    struct events *r = ctx;
    cr_assert_lt(r->n, MAX_EVENTS);
    cr_assert_not_null(e);
    r->ev[r->n] = ev;
    memcpy(r->kid[r->n], e->kid, strlen(e->kid) + 1);
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

/* What history_load reported as dropped. */
struct warnings {
    size_t n;
    char msg[MAX_EVENTS][1024];
};

static void warned(void *ctx, const char *msg)
{
    struct warnings *w = ctx;
    cr_assert_lt(w->n, MAX_EVENTS);
    snprintf(w->msg[w->n++], sizeof w->msg[0], "%s", msg);
}

/* history_load at now that must succeed; warnings go to w (reset first). */
static struct history *load_at(const char *path, time_t now, struct warnings *w)
{
    char err[1024] = "";
    struct history *h = NULL;
    memset(w, 0, sizeof(*w));
    cr_assert_eq(history_load(path, now, warned, w, &h, err, sizeof err), 0, "history_load: %s", err);
    cr_assert_not_null(h);
    return h;
}

Test(state, save_load_round_trip)
{
    char path[PATH_MAX + 32], err[1024] = "", rsa[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    struct history *h = new_history(), *back = NULL;
    const char *all[] = {"rsa2048.pub", "ec256.pub", "ec384.pub"};
    struct keyset *ks = fixture_keyset(all, 3);
    struct events r;
    struct warnings w;

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

    back = load_at(path, 1240, &w);
    cr_expect_eq(w.n, 0, "%s", w.msg[0]);
    cr_assert_eq(back->count, h->count);
    for (size_t i = 0; i < h->count; i++) {
        const struct history_entry *a = &h->entries[i], *b = &back->entries[i];
        cr_expect_str_eq(b->kid, a->kid, "entry %zu", i);
        cr_expect_eq(b->first_seen, a->first_seen, "entry %zu", i);
        cr_expect_eq(b->last_seen, a->last_seen, "entry %zu", i);
        cr_expect_not(b->present, "entry %zu: presence is not taken from the file", i);
        cr_expect_str_eq(b->source, a->source, "entry %zu", i);
        cr_expect_str_eq(b->spki, a->spki, "entry %zu", i);
    }
    const struct history_entry *e = history_find(back, rsa);
    cr_assert_not_null(e);
    cr_expect_eq(e->last_seen, 1234);
    /* the retained key is published again from the stored spki */
    ks = load2("ec256.pub", "ec384.pub");
    apply(back, ks, 100, 1300, &r);
    cr_assert_eq(ks->count, 3);
    cr_expect_str_eq(ks->keys[2].kid, rsa);
    cr_expect_str_eq(ks->keys[2].alg, "RS256");
    cr_expect_eq(ks->keys[2].bits, 2048);
    cr_expect_eq(history_next_expiry(back, 100), 1334);
    keyset_free(ks);

    history_free(back);
    history_free(h);
}

Test(state, missing_file_or_directory_is_empty)
{
    char path[PATH_MAX + 64];
    struct history *h;
    struct warnings w;

    state_path(path, sizeof path, "keys.json");
    h = load_at(path, 1000, &w);
    cr_expect_eq(h->count, 0);
    history_free(h);
    state_path(path, sizeof path, "missing/keys.json");
    h = load_at(path, 1000, &w);
    cr_expect_eq(h->count, 0);
    history_free(h);
}

/* Loads text as a state file at now 1000; expects -1, no history, and a
 * message naming the file that contains want. */
static void expect_load_error(const char *text, const char *want)
{
    char path[PATH_MAX + 32], err[1024] = "";
    struct history *h = NULL;

    state_path(path, sizeof path, "bad.json");
    write_file(path, text);
    cr_expect_eq(history_load(path, 1000, NULL, NULL, &h, err, sizeof err), -1, "loaded: %.200s", text);
    cr_expect_null(h);
    cr_expect_not_null(strstr(err, path), "message does not name the state file: %s", err);
    cr_expect_not_null(strstr(err, want), "message %s does not contain %s", err, want);
    history_free(h);
}

/* A valid entry for fixture pub, as history_save writes it, with member
 * name set to value (raw JSON) when name is not NULL, or left out when
 * value is NULL. */
static void entry_for(const char *pub, char *buf, size_t len, const char *name, const char *value)
{
    char kid[KEY_KID_LEN + 1];
    struct history *h = new_history();
    struct keyset *ks = fixture_keyset1(pub);
    struct events r;

    kid_of(pub, kid);
    apply(h, ks, 0, 1000, &r);
    char members[6][4096];
    const char *names[6] = {"kid", "first_seen", "last_seen", "present", "source", "spki"};
    snprintf(members[0], sizeof members[0], "\"%s\"", kid);
    snprintf(members[1], sizeof members[1], "1000");
    snprintf(members[2], sizeof members[2], "1000");
    snprintf(members[3], sizeof members[3], "true");
    snprintf(members[4], sizeof members[4], "\"x.pub\"");
    snprintf(members[5], sizeof members[5], "\"%s\"", h->entries[0].spki);
    size_t n = (size_t)snprintf(buf, len, "{");
    int first = 1;
    for (size_t i = 0; i < 6; i++) {
        const char *v = name && strcmp(name, names[i]) == 0 ? value : members[i];
        if (v == NULL)
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s\"%s\":%s", first ? "" : ",", names[i], v);
        first = 0;
    }
    snprintf(buf + n, len - n, "}");
    keyset_free(ks);
    history_free(h);
}

static void ec256_entry(char *buf, size_t len, const char *name, const char *value)
{
    entry_for("ec256.pub", buf, len, name, value);
}

/* Loads {"version":1,"keys":[entries]} at now; returns the history. */
static struct history *load_text(const char *entries, time_t now, struct warnings *w)
{
    char path[PATH_MAX + 32], text[20000];

    snprintf(text, sizeof text, "{\"version\":1,\"keys\":[%s]}", entries);
    state_path(path, sizeof path, "keys.json");
    write_file(path, text);
    return load_at(path, now, w);
}

/* The one entry of entries is dropped at now with a warning naming the
 * file, its index and kid (quoted, when it has one) and containing want;
 * the load itself succeeds. */
static void expect_dropped_at(const char *entry, time_t now, const char *want)
{
    struct warnings w;
    struct history *h = load_text(entry, now, &w);
    cr_expect_eq(h->count, 0, "kept: %.300s", entry);
    cr_assert_eq(w.n, 1, "warnings: %zu for %.300s", w.n, entry);
    cr_expect_not_null(strstr(w.msg[0], "keys.json: keys[0] (kid "), "%s", w.msg[0]);
    cr_expect_not_null(strstr(w.msg[0], want), "warning %s does not contain %s", w.msg[0], want);
    history_free(h);
}

static void expect_dropped(const char *entry, const char *want)
{
    expect_dropped_at(entry, 1000, want);
}

Test(state, valid_hand_written_file_loads)
{
    char entry[8192], kid[KEY_KID_LEN + 1];
    struct warnings w;

    kid_of("ec256.pub", kid);
    ec256_entry(entry, sizeof entry, NULL, NULL);
    struct history *h = load_text(entry, 1000, &w);
    cr_assert_eq(h->count, 1);
    cr_expect_eq(w.n, 0, "%s", w.msg[0]);
    cr_expect_str_eq(h->entries[0].kid, kid);
    cr_expect_str_eq(h->entries[0].source, "x.pub");
    cr_expect_eq(h->entries[0].first_seen, 1000);
    cr_expect_eq(h->entries[0].last_seen, 1000);
    cr_expect_not(h->entries[0].present, "\"present\":true is not trusted");
    history_free(h);
}

Test(state, corrupt_json)
{
    expect_load_error("{\"version\":1,\"keys\":[", "state file");
    expect_load_error("not json at all", "state file");
    expect_load_error("", "state file");
    /* the strict parser: no member twice */
    expect_load_error("{\"version\":1,\"keys\":[],\"keys\":[]}", "duplicate");
}

/* yajl's tree parser recursed once per level and crashed on this; the
 * state file goes through the token parser, which stops at 32 levels. */
Test(state, deep_nesting_is_an_error_not_a_crash)
{
    size_t depth = 2000000;
    char *text = malloc(2 * depth + 64);
    cr_assert_not_null(text);
    size_t n = (size_t)sprintf(text, "{\"version\":1,\"keys\":");
    memset(text + n, '[', depth);
    memset(text + n + depth, ']', depth);
    strcpy(text + n + 2 * depth, "}");
    expect_load_error(text, "nested too deeply");
    free(text);
}

Test(state, wrong_version)
{
    expect_load_error("{\"version\":2,\"keys\":[]}", "version");
    expect_load_error("{\"version\":\"1\",\"keys\":[]}", "version");
    expect_load_error("{\"keys\":[]}", "version");
    expect_load_error("{\"version\":1}", "state file");
    expect_load_error("[]", "state file");
}

Test(state, kid_not_matching_spki_is_dropped)
{
    char entry[8192], other[KEY_KID_LEN + 2 + 1];
    kid_of("rsa2048.pub", other + 1);
    other[0] = '"';
    strcat(other, "\"");
    ec256_entry(entry, sizeof entry, "kid", other);
    expect_dropped(entry, "kid is not the one its spki gives");
}

Test(state, spki_not_a_key_is_dropped)
{
    expect_dropped("{\"kid\":\"abc\",\"first_seen\":1,\"last_seen\":1,\"present\":true,\"source\":\"x\","
                   "\"spki\":\"AAAA\"}",
                   "(kid \"abc\") dropped: spki is not a public key");
}

/* A key of a type that is never published (its kid is its own) would make
 * every reload fail when republished: it is dropped instead. */
Test(state, unpublishable_key_type_is_dropped)
{
    char entry[8192];
    entry_for("rsa1024.pub", entry, sizeof entry, NULL, NULL); /* loads: RSA of any size is published */
    struct warnings w;
    struct history *h = load_text(entry, 1000, &w);
    cr_expect_eq(h->count, 1);
    history_free(h);
    /* an Ed25519 key, with the kid its SPKI gives (made by hand: keyset
     * refuses to load one) */
    FILE *f = fopen(FIXTURES "/ed25519.pub", "r");
    cr_assert_not_null(f);
    EVP_PKEY *pub = PEM_read_PUBKEY(f, NULL, NULL, NULL);
    fclose(f);
    cr_assert_not_null(pub);
    unsigned char *der = NULL;
    int len = i2d_PUBKEY(pub, &der);
    char b64[256], kid[KEY_KID_LEN + 1];
    EVP_EncodeBlock((unsigned char *)b64, der, len);
    cr_assert_eq(key_kid(pub, kid), 0);
    snprintf(entry, sizeof entry,
             "{\"kid\":\"%s\",\"first_seen\":1000,\"last_seen\":1000,\"present\":true,\"source\":\"x\","
             "\"spki\":\"%s\"}",
             kid, b64);
    OPENSSL_free(der);
    EVP_PKEY_free(pub);
    expect_dropped(entry, "unsupported key type");
}

Test(state, missing_or_mistyped_members_are_dropped)
{
    const char *members[] = {"kid", "first_seen", "last_seen", "present", "source", "spki"};
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        char entry[8192];
        ec256_entry(entry, sizeof entry, members[i], NULL);
        expect_dropped(entry, "dropped");
        ec256_entry(entry, sizeof entry, members[i], "{}");
        expect_dropped(entry, "dropped");
    }
    expect_dropped("[]", "(kid missing) dropped: missing or mistyped member");
}

/* The times must be whole seconds in a sane range: anything else (such as
 * INT64_MAX, which overflowed last_seen + retention) is dropped. */
Test(state, times_out_of_range_are_dropped)
{
    const char *bad[] = {"0", "-5", "1000.5", "1e300", "9223372036854775807", "253402300800", "\"1000\"", "null"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char entry[8192];
        ec256_entry(entry, sizeof entry, "last_seen", bad[i]);
        expect_dropped(entry, "dropped");
        ec256_entry(entry, sizeof entry, "first_seen", bad[i]);
        expect_dropped(entry, "dropped");
    }
}

Test(state, first_seen_after_last_seen_is_dropped)
{
    char entry[8192];
    ec256_entry(entry, sizeof entry, "first_seen", "1001");
    expect_dropped(entry, "first_seen is after last_seen");
}

/* A last_seen in the year 3000 kept a key published for ever. Up to
 * HISTORY_CLOCK_SKEW ahead it counts as now; further, the entry goes. */
Test(state, last_seen_in_the_future)
{
    char entry[8192], when[32];
    struct warnings w;

    ec256_entry(entry, sizeof entry, "last_seen", "32503680000"); /* 3000-01-01 */
    expect_dropped(entry, "is in the future (now 1000)");
    snprintf(when, sizeof when, "%d", 1000 + HISTORY_CLOCK_SKEW + 1);
    ec256_entry(entry, sizeof entry, "last_seen", when);
    expect_dropped(entry, "is in the future");

    snprintf(when, sizeof when, "%d", 1000 + HISTORY_CLOCK_SKEW);
    ec256_entry(entry, sizeof entry, "last_seen", when);
    struct history *h = load_text(entry, 1000, &w);
    cr_assert_eq(h->count, 1);
    cr_expect_eq(w.n, 0);
    cr_expect_eq(h->entries[0].last_seen, 1000, "taken as now");
    cr_expect_eq(h->entries[0].first_seen, 1000);
    history_free(h);
}

Test(state, second_entry_with_the_same_kid_is_dropped)
{
    char entry[8192], two[17000];
    struct warnings w;

    ec256_entry(entry, sizeof entry, NULL, NULL);
    snprintf(two, sizeof two, "%s,%s", entry, entry);
    struct history *h = load_text(two, 1000, &w);
    cr_expect_eq(h->count, 1);
    cr_assert_eq(w.n, 1);
    cr_expect_not_null(strstr(w.msg[0], "keys[1]"), "%s", w.msg[0]);
    cr_expect_not_null(strstr(w.msg[0], "an earlier entry has the same kid"), "%s", w.msg[0]);
    history_free(h);
}

/* The kid in a warning is quoted: a newline or an escape in it cannot
 * forge a log line. */
Test(state, warnings_quote_the_kid)
{
    expect_dropped("{\"kid\":\"x\\n2026-01-01T00:00:00.000Z error \\u001b[31mfake\",\"first_seen\":1,"
                   "\"last_seen\":1,\"present\":true,\"source\":\"x\",\"spki\":\"AAAA\"}",
                   "(kid \"x\\n2026-01-01T00:00:00.000Z error \\x1b[31mfake\")");
}

/* A restart at now with the state at path and only ec256.pub in the
 * inputs, retention 100: returns the set to publish (the history in *back,
 * the events in r). */
static struct keyset *restart_with_ec256(const char *path, time_t now, struct history **back, struct events *r)
{
    struct warnings w;
    struct keyset *ks = fixture_keyset1("ec256.pub");

    *back = load_at(path, now, &w);
    cr_expect_eq(w.n, 0, "%s", w.msg[0]);
    apply(*back, ks, 100, now, r);
    return ks;
}

/* A key recorded present but gone after a restart counts as gone since its
 * stored last_seen (serve refreshes it on disk and saves it at exit), never
 * since the restart: the file cannot extend a key's life. */
Test(state, present_key_gone_after_load_left_at_its_last_seen)
{
    char path[PATH_MAX + 32], err[1024] = "", rsa[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    struct history *h = new_history(), *back;
    struct keyset *ks = load2("rsa2048.pub", "ec256.pub");
    struct events r;

    apply(h, ks, 100, 1000, &r);
    keyset_free(ks);
    state_path(path, sizeof path, "keys.json");
    cr_assert_eq(history_save(h, path, err, sizeof err), 0, "history_save: %s", err);
    history_free(h);

    /* a restart inside the retention: retained until last_seen + 100 */
    ks = restart_with_ec256(path, 1050, &back, &r);
    cr_assert_eq(r.n, 1);
    expect_event(&r, 0, HISTORY_RETAINED, rsa, 1100);
    cr_assert_eq(ks->count, 2);
    cr_expect_str_eq(ks->keys[1].kid, rsa);
    cr_expect_eq(history_next_expiry(back, 100), 1100);
    keyset_free(ks);
    history_free(back);

    /* long after: dropped, however present the file says it was */
    ks = restart_with_ec256(path, 5000, &back, &r);
    cr_assert_eq(r.n, 1);
    expect_event(&r, 0, HISTORY_DROPPED, rsa, 0);
    cr_expect_eq(ks->count, 1);
    keyset_free(ks);
    history_free(back);
}

/* serve saves the state when history_apply returns 1. A retained key that
 * comes back into the inputs is present again; if that is not saved, the
 * file still says "last seen at its old last_seen", and after a restart in
 * which the key is gone again it is dropped at once instead of being
 * retained from the moment it was last seen. */
Test(state, key_back_from_retention_survives_restart)
{
    char path[PATH_MAX + 32], err[1024] = "", rsa[KEY_KID_LEN + 1];
    kid_of("rsa2048.pub", rsa);
    struct history *h = new_history(), *back = NULL;
    struct keyset *ks;
    struct events r;
    const time_t times[] = {1000, 1010, 1090};
    const int with_rsa[] = {1, 0, 1};

    state_path(path, sizeof path, "keys.json");
    for (size_t i = 0; i < 3; i++) {
        ks = with_rsa[i] ? load2("ec256.pub", "rsa2048.pub") : fixture_keyset1("ec256.pub");
        if (apply(h, ks, 100, times[i], &r) == 1)
            cr_assert_eq(history_save(h, path, err, sizeof err), 0, "history_save: %s", err);
        keyset_free(ks);
    }
    history_free(h);

    /* restart at 1150 without rsa: last seen at 1090, so retained to 1190 */
    ks = restart_with_ec256(path, 1150, &back, &r);
    cr_expect_eq(r.n, 1);
    if (r.n == 1)
        expect_event(&r, 0, HISTORY_RETAINED, rsa, 1190);
    cr_expect_eq(ks->count, 2, "rsa was seen at 1090 and must be retained");
    keyset_free(ks);
    history_free(back);
}

/* last_seen + retention cannot overflow, whatever the retention. */
Test(state, until_saturates)
{
    struct history_entry e = {.last_seen = 1000};
    cr_expect_eq(history_until(&e, 100), 1100);
    cr_expect_eq(history_until(&e, ULONG_MAX), 1000 + HISTORY_TIME_MAX);
}

/* A link planted where the temporary file goes is not written through:
 * the state goes to a new file and the link's target stays as it was. */
Test(state, save_never_writes_through_a_planted_link)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 64], victim[PATH_MAX + 32], err[1024] = "", buf[64] = "";
    struct history *h = new_history();
    struct keyset *ks = fixture_keyset1("ec256.pub");
    struct events r;
    struct warnings w;

    apply(h, ks, 100, 1000, &r);
    keyset_free(ks);
    state_path(path, sizeof path, "keys.json");
    state_path(victim, sizeof victim, "bad.json");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    write_file(victim, "precious");
    cr_assert_eq(symlink(victim, tmp), 0, "symlink: %s", strerror(errno));
    cr_assert_eq(history_save(h, path, err, sizeof err), 0, "history_save: %s", err);
    FILE *f = fopen(victim, "r");
    cr_assert_not_null(f);
    cr_expect_eq(fread(buf, 1, sizeof buf - 1, f), 8);
    fclose(f);
    cr_expect_str_eq(buf, "precious");
    cr_expect_eq(access(tmp, F_OK), -1);
    struct history *back = load_at(path, 1000, &w);
    cr_expect_eq(back->count, 1);
    history_free(back);
    history_free(h);
}

/* The state file itself must be a regular file: a link is refused, and a
 * FIFO (whose open would block) too, at once. */
Test(state, state_file_must_be_a_regular_file)
{
    char path[PATH_MAX + 32], victim[PATH_MAX + 32], err[1024] = "";
    struct history *h = NULL;
    struct warnings w;

    state_path(path, sizeof path, "keys.json");
    state_path(victim, sizeof victim, "bad.json");
    write_file(victim, "{\"version\":1,\"keys\":[]}");
    cr_assert_eq(symlink(victim, path), 0);
    cr_expect_eq(history_load(path, 1000, warned, &w, &h, err, sizeof err), -1);
    cr_expect_not_null(strstr(err, "symbolic link"), "%s", err);
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_expect_eq(history_load(path, 1000, warned, &w, &h, err, sizeof err), -1);
    cr_expect_not_null(strstr(err, "not a regular file"), "%s", err);
    cr_expect_null(h);
}

/* Only this user (or root) may be able to write the state directory. */
Test(state, directory_writable_by_others_is_refused)
{
    char path[PATH_MAX + 32], err[1024] = "";
    struct history *h = new_history(), *back = NULL;

    state_path(path, sizeof path, "keys.json");
    for (int i = 0; i < 2; i++) {
        mode_t mode = i ? 0770 : 0707;
        cr_assert_eq(chmod(tmpdir, mode), 0);
        cr_expect_eq(history_load(path, 1000, NULL, NULL, &back, err, sizeof err), -1, "mode %o", mode);
        cr_expect_not_null(strstr(err, "writable by group or others"), "%s", err);
        cr_expect_not_null(strstr(err, "chmod go-w"), "%s", err);
        cr_expect_eq(history_save(h, path, err, sizeof err), -1, "mode %o", mode);
        cr_expect_not_null(strstr(err, "writable by group or others"), "%s", err);
    }
    cr_assert_eq(chmod(tmpdir, 0755), 0);
    cr_expect_eq(history_save(h, path, err, sizeof err), 0, "%s", err);
    if (geteuid() == 0) { /* owned by another user: only root can make one */
        cr_assert_eq(chown(tmpdir, 12345, 12345), 0);
        cr_expect_eq(history_load(path, 1000, NULL, NULL, &back, err, sizeof err), -1);
        cr_expect_not_null(strstr(err, "owned by uid 12345"), "%s", err);
        cr_assert_eq(chown(tmpdir, 0, 0), 0);
    }
    cr_expect_null(back);
    history_free(h);
}

/* ------------------------------------------------------------------------ */
/* kids given by a JWKS (an --upstream API server, a JWKS key file)          */

/* The fixtures under kids (NULL: derived), as jwks_parse reads them. */
static struct keyset *jwks_keyset(const char *const *names, const char *const *kids, size_t n)
{
    char err[512], *text = fixture_jwks(names, kids, n);
    struct keyset *ks = jwks_parse(text, strlen(text), NULL, NULL, err, sizeof err);

    cr_assert_not_null(ks, "jwks_parse: %s", err);
    free(text);
    return ks;
}

#define EXTERNAL "external-signer:ec256/2024-01 (a kid of its own)"

/* A retained key keeps the kid it was published under through a save and
 * a load, and comes back under it, marked as given. */
Test(state, given_kid_survives_a_restart)
{
    static const char *const names[] = {"ec256.pub", "rsa2048.pub"};
    char path[PATH_MAX + 32], err[1024] = "", text[20000];
    struct history *h = new_history(), *back;
    struct keyset *ks = jwks_keyset(names, (const char *const[]){EXTERNAL, NULL}, 2);
    struct events r;
    struct warnings w;
    FILE *f;

    apply(h, ks, 100, 1000, &r);
    keyset_free(ks);
    ks = jwks_keyset(names + 1, (const char *const[]){NULL}, 1);
    apply(h, ks, 100, 1010, &r);
    cr_assert_eq(ks->count, 2, "the upstream dropped it: retained");
    cr_assert_str_eq(ks->keys[1].kid, EXTERNAL);
    keyset_free(ks);
    state_path(path, sizeof path, "keys.json");
    cr_assert_eq(history_save(h, path, err, sizeof err), 0, "%s", err);
    cr_assert_not_null(f = fopen(path, "r"));
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    cr_assert_not_null(strstr(text, "{\"kid\":\"" EXTERNAL "\",\"kid_given\":true,"), "%s", text);
    cr_assert_null(strstr(strstr(text, "kid_given") + 1, "kid_given"), "only the given kid is marked: %s", text);
    back = load_at(path, 1020, &w);
    cr_assert_eq(w.n, 0, "%s", w.msg[0]);
    cr_assert_eq(back->count, 2);
    const struct history_entry *e = history_find(back, EXTERNAL);
    cr_assert(e != NULL && e->kid_given);
    cr_assert(!history_find(back, back->entries[1].kid)->kid_given, "a derived kid is not marked");
    ks = jwks_keyset(names + 1, (const char *const[]){NULL}, 1);
    apply(back, ks, 100, 1030, &r);
    cr_assert_eq(ks->count, 2);
    cr_assert_str_eq(ks->keys[1].kid, EXTERNAL, "republished under its own kid");
    cr_assert(ks->keys[1].kid_given && strstr(ks->keys[1].jwk, "\"kid\":\"" EXTERNAL "\"") != NULL);
    keyset_free(ks);
    history_free(back);
    history_free(h);
}

/* The state file cannot bind a kid to a key unless the entry was written
 * from a JWKS: without "kid_given" only the derived kid stands; with it,
 * only a kid a JWKS could have given. */
Test(state, given_kid_needs_its_mark)
{
    char entry[8192], marked[8300];
    struct warnings w;
    struct history *h;

    ec256_entry(entry, sizeof entry, "kid", "\"" EXTERNAL "\"");
    expect_dropped(entry, "kid is not the one its spki gives");
    snprintf(marked, sizeof marked, "%.*s,\"kid_given\":true}", (int)strlen(entry) - 1, entry);
    h = load_text(marked, 1000, &w);
    cr_assert_eq(h->count, 1, "%s", w.msg[0]);
    cr_assert(h->entries[0].kid_given);
    cr_assert_str_eq(h->entries[0].kid, EXTERNAL);
    history_free(h);
    snprintf(marked, sizeof marked, "%.*s,\"kid_given\":\"yes\"}", (int)strlen(entry) - 1, entry);
    expect_dropped(marked, "kid_given is not true or false");
    ec256_entry(entry, sizeof entry, "kid", "\"tab\\there\"");
    snprintf(marked, sizeof marked, "%.*s,\"kid_given\":true}", (int)strlen(entry) - 1, entry);
    expect_dropped(marked, "kid_given, but kid is not");
}

/* A JWKS kid now naming another key: the entry becomes the new key's (one
 * kid cannot be published for two keys), reported as the old key dropped
 * and the new one added; the old key is not retained under that kid. */
Test(apply, given_kid_rebound_to_another_key)
{
    static const char *const kid[] = {"k1"};
    struct history *h = new_history();
    struct keyset *ks = jwks_keyset((const char *const[]){"ec256.pub"}, kid, 1);
    struct keyset *rsa = fixture_keyset1("rsa2048.pub");
    struct events r;

    apply(h, ks, 100, 1000, &r);
    keyset_free(ks);
    ks = jwks_keyset((const char *const[]){"rsa2048.pub"}, kid, 1);
    cr_assert_eq(apply(h, ks, 100, 1010, &r), 1, "the state needs saving");
    cr_assert_eq(r.n, 2);
    expect_event(&r, 0, HISTORY_DROPPED, "k1", 0);
    expect_event(&r, 1, HISTORY_ADDED, "k1", 0);
    cr_assert_eq(ks->count, 1, "the old key is not published under k1 too");
    cr_assert_eq(h->count, 1);
    cr_assert_eq(h->entries[0].first_seen, 1010, "a new key: first seen now");
    cr_assert_eq(EVP_PKEY_eq(ks->keys[0].pub, rsa->keys[0].pub), 1);
    keyset_free(ks);
    keyset_free(rsa);
    history_free(h);
}
