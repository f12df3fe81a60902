/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for push/: the decisions of publishing to object storage with
 * made-up objects and clocks (plan.c), one push through an in-memory store
 * that records every request and can fail, refuse or change objects on
 * cue (sync.c), the status a push leaves (status.c), and Azure's SharedKey
 * string to sign and signature (azsign.c; the signature checked against
 * one Python's hmac module computed, and Azurite checks it end to end).
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "push/azsign.h"
/* Built in, as h2o's unit tests do, for push_newer, which is its own:
 * the library's copy is then not linked. */
#include "push/plan.c"
#include "push/status.h"
#include "push/sync.h"

/* ---- plan: one object ---- */

#define JWKS_A "{\"keys\":[{\"kid\":\"a\"}]}"
#define JWKS_B "{\"keys\":[{\"kid\":\"a\"},{\"kid\":\"b\"}]}"
#define CT     "application/jwk-set+json"
#define CC     "public, max-age=3600"

/* A local document at generation gen. */
static struct push_local local_doc(const char *body, const char *gen, char sha[PUSH_SHA_HEX])
{
    push_sha256_hex(body, strlen(body), sha);
    return (struct push_local){body, strlen(body), CT, CC, gen, sha};
}

/* A remote object as we would have written it at generation gen. */
static struct push_remote ours(const char *body, const char *gen, char sha[PUSH_SHA_HEX])
{
    push_sha256_hex(body, strlen(body), sha);
    return (struct push_remote){1, body, strlen(body), CT, CC, gen, sha};
}

Test(plan, decide)
{
    char ls[PUSH_SHA_HEX], rs[PUSH_SHA_HEX];
    struct push_local l = local_doc(JWKS_B, "200", ls);
    struct push_remote none = {0}, r;
    const char *why;

    cr_assert_eq(push_decide(&none, &l, &why), PUSH_CREATE);
    cr_assert_str_eq(why, "missing");
    r = ours(JWKS_B, "100", rs);
    cr_assert_eq(push_decide(&r, &l, &why), PUSH_SAME, "same bytes and headers, whatever the generation");
    cr_assert_null(why);
    r.cache_control = "public, max-age=60";
    cr_assert_eq(push_decide(&r, &l, &why), PUSH_REPLACE);
    cr_assert_str_eq(why, "stored with another Content-Type or Cache-Control");
    r.cache_control = NULL;
    cr_assert_eq(push_decide(&r, &l, &why), PUSH_REPLACE, "a header the store lost");
    r = ours(JWKS_A, "100", rs);
    cr_assert_eq(push_decide(&r, &l, &why), PUSH_REPLACE);
    cr_assert_str_eq(why, "older");
    r = ours(JWKS_A, "300", rs);
    cr_assert_eq(push_decide(&r, &l, &why), PUSH_YIELD);
    cr_assert_str_eq(why, "a newer key set");
    /* edited by hand, metadata kept: its generation is not believed */
    r.body = "{\"keys\":[]}";
    r.len = strlen(r.body);
    cr_assert_eq(push_decide(&r, &l, &why), PUSH_REPLACE);
    cr_assert_str_eq(why, "changed outside oidc-discovery");
    /* uploaded by hand: no metadata */
    r = (struct push_remote){1, JWKS_A, strlen(JWKS_A), CT, CC, NULL, NULL};
    cr_assert_eq(push_decide(&r, &l, &why), PUSH_REPLACE);
    cr_assert_str_eq(why, "changed outside oidc-discovery");
}

/* Newer is the later generation; within one second the larger SHA-256,
 * the same answer from both sides, so two replicas never both win. */
Test(plan, newer_is_a_total_order)
{
    char s1[PUSH_SHA_HEX], s2[PUSH_SHA_HEX], t1[PUSH_SHA_HEX], t2[PUSH_SHA_HEX];
    struct push_local la = local_doc(JWKS_A, "100", s1), lb = local_doc(JWKS_B, "100", s2);
    struct push_remote ra = ours(JWKS_A, "100", t1), rb = ours(JWKS_B, "100", t2);
    struct push_remote garbled = ours(JWKS_A, "99999999999999999999", t1);

    cr_assert_neq(push_newer(&ra, &lb), push_newer(&rb, &la), "exactly one of a tie wins");
    cr_assert_eq(push_newer(&ra, &lb), strcmp(s1, s2) > 0);
    ra.generation = "101";
    cr_assert(push_newer(&ra, &lb));
    cr_assert(!push_newer(&rb, &(struct push_local){JWKS_A, strlen(JWKS_A), CT, CC, "101", s1}));
    cr_assert(!push_newer(&garbled, &lb), "a generation of 20 digits is not one");
    ra.generation = "1x";
    cr_assert(!push_newer(&ra, &lb));
    ra.generation = "";
    cr_assert(!push_newer(&ra, &lb));
}

Test(plan, generation_and_sha)
{
    char gen[PUSH_GEN_MAX], sha[PUSH_SHA_HEX];

    push_generation(1767225600123, gen);
    cr_assert_str_eq(gen, "1767225600123");
    push_sha256_hex("abc", 3, sha);
    cr_assert_str_eq(sha, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* ---- plan: backoff and schedule, made-up clocks ---- */

Test(plan, backoff_doubles_with_jitter_up_to_a_cap)
{
    cr_assert_eq(push_backoff_ms(1, 0.0), 1000);
    cr_assert_eq(push_backoff_ms(1, 0.999999), 501);
    cr_assert_eq(push_backoff_ms(2, 0.0), 2000);
    cr_assert_eq(push_backoff_ms(3, 0.5), 4000 - 1000);
    cr_assert_eq(push_backoff_ms(9, 0.0), 256000);
    cr_assert_eq(push_backoff_ms(10, 0.0), PUSH_BACKOFF_MAX_MS);
    cr_assert_eq(push_backoff_ms(1000, 0.0), PUSH_BACKOFF_MAX_MS, "no overflow");
    cr_assert_eq(push_backoff_ms(1000, 0.999999), PUSH_BACKOFF_MAX_MS / 2 + 1);
    for (unsigned f = 1; f < 40; f++)
        for (double r = 0; r < 1; r += 0.125) {
            int64_t d = push_backoff_ms(f, r);
            cr_assert(d > 0 && d <= PUSH_BACKOFF_MAX_MS, "failures %u rnd %g: %lld", f, r, (long long)d);
            cr_assert_geq(d, push_backoff_ms(f, 0.999999), "more jitter, less wait");
        }
}

Test(plan, schedule)
{
    struct push_schedule s;
    const int64_t interval = 300000;

    push_schedule_init(&s, 1000);
    cr_assert(push_schedule_due(&s, 1000));
    cr_assert(!s.settled);
    push_schedule_done(&s, PUSH_FAILED, 2000, interval, 0.0);
    cr_assert_eq(s.due_ms, 3000, "first retry after 1 s");
    cr_assert(!push_schedule_due(&s, 2999));
    push_schedule_done(&s, PUSH_FAILED, 3000, interval, 0.0);
    cr_assert_eq(s.due_ms, 5000);
    push_schedule_done(&s, PUSH_OK, 5000, interval, 0.0);
    cr_assert_eq(s.due_ms, 5000 + interval, "then the drift check");
    cr_assert(s.settled);
    cr_assert_eq(s.failures, 0);
    push_schedule_done(&s, PUSH_FAILED, 400000, interval, 0.0);
    cr_assert(s.settled, "a failed check stays a check: what it writes next is a repair");
    push_schedule_snapshot(&s, 401000);
    cr_assert(push_schedule_due(&s, 401000), "a new snapshot goes out at once, backoff or not");
    cr_assert(!s.settled);
    cr_assert_eq(s.failures, 0);
    push_schedule_done(&s, PUSH_YIELDED, 402000, interval, 0.0);
    cr_assert(s.settled);
    cr_assert_eq(s.due_ms, 402000 + interval);
    /* the retry never waits longer than the check interval */
    for (int i = 0; i < 20; i++)
        push_schedule_done(&s, PUSH_FAILED, 500000, 1000, 0.0);
    cr_assert_eq(s.due_ms, 501000);
}

/* ---- sync: one push through an in-memory store ---- */

#define MAX_OBJECTS 4
#define MAX_LOG     64

struct fake_object {
    char key[64];
    char *body;
    char content_type[64], cache_control[64], generation[PUSH_GEN_MAX], sha256[PUSH_SHA_HEX];
    unsigned version; /* the ETag */
};

struct fake_store {
    struct fake_object objects[MAX_OBJECTS];
    char log[MAX_LOG][96]; /* "GET key", "PUT key if-match=\"3\"", "PUT key if-none-match" */
    size_t nlog;
    unsigned versions;
    int fail_put_of_jwks;              /* a PUT of the JWKS answers an error */
    int conflicts;                     /* the next n PUTs answer 412 */
    int mangle;                        /* the store keeps other bytes than it was given */
    int edit_between;                  /* another writer changes the object between our GET and PUT, n times */
    const struct push_local *intruder; /* what that writer writes */
};

static struct fake_object *fake_find(struct fake_store *s, const char *key)
{
    for (size_t i = 0; i < MAX_OBJECTS; i++)
        if (strcmp(s->objects[i].key, key) == 0)
            return &s->objects[i];
    return NULL;
}

static void fake_store_put(struct fake_store *s, const char *key, const struct push_local *d)
{
    struct fake_object *o = fake_find(s, key);

    for (size_t i = 0; o == NULL && i < MAX_OBJECTS; i++)
        if (s->objects[i].key[0] == '\0')
            o = &s->objects[i];
    cr_assert_not_null(o);
    free(o->body);
    snprintf(o->key, sizeof(o->key), "%s", key);
    o->body = strndup(d->body, d->len);
    snprintf(o->content_type, sizeof(o->content_type), "%s", d->content_type);
    snprintf(o->cache_control, sizeof(o->cache_control), "%s", d->cache_control);
    snprintf(o->generation, sizeof(o->generation), "%s", d->generation ? d->generation : "");
    snprintf(o->sha256, sizeof(o->sha256), "%s", d->sha256 ? d->sha256 : "");
    o->version = ++s->versions;
}

static void fake_log(struct fake_store *s, const char *fmt, const char *key, const char *cond)
{
    cr_assert_lt(s->nlog, MAX_LOG);
    snprintf(s->log[s->nlog++], sizeof(s->log[0]), fmt, key, cond);
}

static enum push_io fake_get(void *store, const char *key, struct push_object *out, char *err, size_t errlen)
{
    struct fake_store *s = store;
    struct fake_object *o = fake_find(s, key);

    (void)err, (void)errlen;
    fake_log(s, "GET %s%s", key, "");
    memset(out, 0, sizeof(*out));
    if (o == NULL)
        return PUSH_IO_OK;
    out->exists = 1;
    out->body = strdup(o->body);
    out->len = strlen(o->body);
    snprintf(out->etag, sizeof(out->etag), "\"%u\"", o->version);
    snprintf(out->content_type, sizeof(out->content_type), "%s", o->content_type);
    snprintf(out->cache_control, sizeof(out->cache_control), "%s", o->cache_control);
    snprintf(out->generation, sizeof(out->generation), "%s", o->generation);
    snprintf(out->sha256, sizeof(out->sha256), "%s", o->sha256);
    return PUSH_IO_OK;
}

static enum push_io fake_put(void *store, const struct push_put *put, char *err, size_t errlen)
{
    struct fake_store *s = store;
    struct fake_object *o;
    char etag[32];

    fake_log(s, "PUT %s %s", put->key, put->if_match ? put->if_match : "if-none-match");
    if (s->fail_put_of_jwks && strcmp(put->key, "openid/v1/jwks") == 0) {
        snprintf(err, errlen, "PUT %s: HTTP 500", put->key);
        return PUSH_IO_ERROR;
    }
    if (s->edit_between > 0) {
        s->edit_between--;
        fake_store_put(s, put->key, s->intruder);
    }
    if (s->conflicts > 0) {
        s->conflicts--;
        return PUSH_IO_CONFLICT;
    }
    o = fake_find(s, put->key);
    snprintf(etag, sizeof(etag), "\"%u\"", o ? o->version : 0);
    if ((put->if_match == NULL && o != NULL) || (put->if_match != NULL && (o == NULL || strcmp(etag, put->if_match))))
        return PUSH_IO_CONFLICT;
    if (s->mangle) {
        struct push_local mangled = *put->doc;
        mangled.len--;
        fake_store_put(s, put->key, &mangled);
    } else {
        fake_store_put(s, put->key, put->doc);
    }
    return PUSH_IO_OK;
}

static const struct push_store_ops fake_ops = {fake_get, fake_put};

static void fake_free(struct fake_store *s)
{
    for (size_t i = 0; i < MAX_OBJECTS; i++)
        free(s->objects[i].body);
}

/* The documents of a key set loaded at gen. */
static void docs_of(struct push_docs *d, const char *jwks, const char *discovery, const char *gen)
{
    memset(d, 0, sizeof(*d));
    d->keys[0] = "openid/v1/jwks";
    d->keys[1] = ".well-known/openid-configuration";
    snprintf(d->generation, sizeof(d->generation), "%s", gen);
    push_sha256_hex(jwks, strlen(jwks), d->sha256[0]);
    push_sha256_hex(discovery, strlen(discovery), d->sha256[1]);
    d->docs[0] = (struct push_local){jwks, strlen(jwks), CT, CC, d->generation, d->sha256[0]};
    d->docs[1] = (struct push_local){discovery, strlen(discovery), "application/json", CC, d->generation, d->sha256[1]};
}

#define DISC "{\"issuer\":\"https://x\"}"

/* Pushes key set A (generation 100) to s. */
static void push_set_a(struct fake_store *s, struct push_docs *d, struct push_report *rep)
{
    docs_of(d, JWKS_A, DISC, "100");
    push_sync(&fake_ops, s, d, rep);
}

static void log_is(const struct fake_store *s, size_t n, const char *const *want)
{
    for (size_t i = 0; i < n && i < s->nlog; i++)
        cr_assert_str_eq(s->log[i], want[i], "request %zu", i);
    cr_assert_eq(s->nlog, n, "%zu requests, wanted %zu", s->nlog, n);
}

Test(sync, empty_store_jwks_first_created_only_if_absent_and_read_back)
{
    struct fake_store s = {0};
    struct push_docs d;
    struct push_report rep;
    static const char *const want[] = {
        "GET openid/v1/jwks",
        "PUT openid/v1/jwks if-none-match",
        "GET openid/v1/jwks",
        "GET .well-known/openid-configuration",
        "PUT .well-known/openid-configuration if-none-match",
        "GET .well-known/openid-configuration",
    };

    push_set_a(&s, &d, &rep);
    cr_assert_eq(rep.outcome, PUSH_OK, "%s", rep.err);
    cr_assert_eq(rep.written, 2);
    cr_assert_eq(rep.actions[0], PUSH_ACT_WRITTEN);
    cr_assert_str_eq(rep.why[0], "missing");
    log_is(&s, 6, want);
    cr_assert_str_eq(fake_find(&s, "openid/v1/jwks")->generation, "100");
    cr_assert_str_eq(fake_find(&s, "openid/v1/jwks")->sha256, d.sha256[0]);
    cr_assert_str_eq(fake_find(&s, ".well-known/openid-configuration")->content_type, "application/json");

    /* the drift check: nothing changed, nothing written */
    s.nlog = 0;
    push_sync(&fake_ops, &s, &d, &rep);
    cr_assert_eq(rep.outcome, PUSH_OK);
    cr_assert_eq(rep.written, 0);
    cr_assert_eq(rep.actions[0], PUSH_ACT_UNCHANGED);
    cr_assert_eq(rep.actions[1], PUSH_ACT_UNCHANGED);
    log_is(&s, 2, (const char *const[]){"GET openid/v1/jwks", "GET .well-known/openid-configuration"});
    fake_free(&s);
}

/* A new key reaches the JWKS before the discovery document changes: when
 * the JWKS cannot be written, the discovery document is not even read. */
Test(sync, discovery_waits_for_the_jwks)
{
    struct fake_store s = {.fail_put_of_jwks = 1};
    struct push_docs d;
    struct push_report rep;

    push_set_a(&s, &d, &rep);
    cr_assert_eq(rep.outcome, PUSH_FAILED);
    cr_assert_str_eq(rep.err, "PUT openid/v1/jwks: HTTP 500");
    cr_assert_eq(rep.actions[1], PUSH_ACT_NONE);
    log_is(&s, 2, (const char *const[]){"GET openid/v1/jwks", "PUT openid/v1/jwks if-none-match"});
    cr_assert_null(fake_find(&s, ".well-known/openid-configuration"));
    fake_free(&s);
}

/* A hand-edited object is overwritten only if it is still what was read. */
Test(sync, hand_edit_replaced_under_if_match)
{
    struct fake_store s = {0};
    struct push_docs d;
    struct push_report rep;
    const struct push_local edit = {"{\"keys\":[]}", 11, "text/plain", "", NULL, NULL};

    push_set_a(&s, &d, &rep);
    fake_store_put(&s, "openid/v1/jwks", &edit);
    s.nlog = 0;
    push_sync(&fake_ops, &s, &d, &rep);
    cr_assert_eq(rep.outcome, PUSH_OK);
    cr_assert_eq(rep.written, 1);
    cr_assert_str_eq(rep.why[0], "changed outside oidc-discovery");
    cr_assert_str_eq(s.log[1], "PUT openid/v1/jwks \"3\"", "If-Match on the ETag read");
    cr_assert_str_eq(fake_find(&s, "openid/v1/jwks")->body, JWKS_A);
    fake_free(&s);
}

/* A write that meets another writer's is read and decided on again. */
Test(sync, conflicts_are_read_again)
{
    struct fake_store s = {.conflicts = 2};
    struct push_docs d;
    struct push_report rep;

    push_set_a(&s, &d, &rep);
    cr_assert_eq(rep.outcome, PUSH_OK, "%s", rep.err);
    cr_assert_str_eq(s.log[2], "GET openid/v1/jwks", "read again after the 412");
    cr_assert_str_eq(s.log[5], "PUT openid/v1/jwks if-none-match", "the third try");
    cr_assert_str_eq(s.log[6], "GET openid/v1/jwks", "the read-back");
    fake_free(&s);
    memset(&s, 0, sizeof(s));
    s.conflicts = 100;
    push_sync(&fake_ops, &s, &d, &rep);
    cr_assert_eq(rep.outcome, PUSH_FAILED);
    cr_assert_str_eq(rep.err, "openid/v1/jwks: changed by another writer between each read and write (3 tries)");
    cr_assert_eq(s.nlog, 2 * PUSH_CONFLICT_TRIES);
    fake_free(&s);
}

/* Another replica writes a newer key set between our read and our write:
 * our conditional write fails, the second read sees the newer set, and we
 * leave it. */
Test(sync, a_newer_write_in_between_wins)
{
    struct push_docs older, newer;
    struct fake_store s = {.edit_between = 1};
    struct push_report rep;

    docs_of(&older, JWKS_A, DISC, "100");
    docs_of(&newer, JWKS_B, DISC, "200");
    s.intruder = &newer.docs[0];
    push_sync(&fake_ops, &s, &older, &rep);
    cr_assert_eq(rep.outcome, PUSH_YIELDED);
    cr_assert_str_eq(rep.remote_generation, "200");
    cr_assert_eq(rep.actions[1], PUSH_ACT_NONE, "the discovery document is left alone too");
    cr_assert_str_eq(fake_find(&s, "openid/v1/jwks")->body, JWKS_B);
    fake_free(&s);
}

/* Two replicas with different key sets pushing to one store, in any order
 * and again and again, settle on the newer set and stay there. */
Test(sync, two_replicas_settle_on_the_newer_set)
{
    struct push_docs a, b;
    struct push_report ra, rb;

    docs_of(&a, JWKS_A, DISC, "100");
    docs_of(&b, JWKS_B, "{\"issuer\":\"https://x\",\"v\":2}", "101");
    for (int order = 0; order < 2; order++) {
        struct fake_store s = {0};
        for (int round = 0; round < 3; round++) {
            if (order == 0) {
                push_sync(&fake_ops, &s, &a, &ra);
                push_sync(&fake_ops, &s, &b, &rb);
            } else {
                push_sync(&fake_ops, &s, &b, &rb);
                push_sync(&fake_ops, &s, &a, &ra);
            }
            cr_assert_str_eq(fake_find(&s, "openid/v1/jwks")->body, JWKS_B, "order %d round %d", order, round);
            cr_assert_str_eq(fake_find(&s, ".well-known/openid-configuration")->generation, "101");
            cr_assert_eq(rb.outcome, PUSH_OK);
            if (round > 0 || order == 1)
                cr_assert_eq(ra.outcome, PUSH_YIELDED, "order %d round %d", order, round);
        }
        fake_free(&s);
    }
}

/* What was written is read back and compared: a store that keeps other
 * bytes is a failure, not a success. */
Test(sync, read_back_compares_bytes)
{
    struct fake_store s = {.mangle = 1};
    struct push_docs d;
    struct push_report rep;

    push_set_a(&s, &d, &rep);
    cr_assert_eq(rep.outcome, PUSH_FAILED);
    cr_assert_str_eq(rep.err, "openid/v1/jwks: read back after writing, its bytes differ (another writer, or a store "
                              "that changes objects?)");
    fake_free(&s);
}

Test(sync, inspect_reads_only)
{
    struct fake_store s = {0};
    struct push_docs d, newer;
    struct push_report rep;
    struct push_inspection in[PUSH_NOBJECTS];

    docs_of(&d, JWKS_A, DISC, "100");
    push_inspect(&fake_ops, &s, &d, in);
    cr_assert_eq(in[0].seen, PUSH_SEEN_MISSING);
    cr_assert_eq(s.nlog, 2);
    push_sync(&fake_ops, &s, &d, &rep);
    push_inspect(&fake_ops, &s, &d, in);
    cr_assert_eq(in[0].seen, PUSH_SEEN_CURRENT);
    cr_assert_str_eq(in[0].generation, "100");
    docs_of(&newer, JWKS_B, DISC, "50");
    push_inspect(&fake_ops, &s, &newer, in);
    cr_assert_eq(in[0].seen, PUSH_SEEN_NEWER, "the store's 100 is newer than 50");
    cr_assert_eq(in[1].seen, PUSH_SEEN_CURRENT);
    docs_of(&newer, JWKS_B, DISC, "150");
    push_inspect(&fake_ops, &s, &newer, in);
    cr_assert_eq(in[0].seen, PUSH_SEEN_DIFFERS);
    cr_assert_str_eq(in[0].why, "older");
    cr_assert_str_eq(push_seen_name(in[0].seen), "differs");
    fake_free(&s);
}

/* ---- status ---- */

Test(status, apply_counts_results_and_repairs)
{
    struct push_status st = {0};
    struct push_report rep = {.outcome = PUSH_OK, .written = 2};

    cr_assert_eq(push_status_apply(&st, &rep, 0, 1000), 0, "the first push repairs nothing");
    cr_assert_eq(st.results[PUSH_RESULT_WRITTEN], 1);
    cr_assert_eq(st.last_current, 1000);
    rep.written = 0;
    push_status_apply(&st, &rep, 1, 1100);
    cr_assert_eq(st.results[PUSH_RESULT_UNCHANGED], 1);
    rep = (struct push_report){.outcome = PUSH_FAILED};
    snprintf(rep.err, sizeof(rep.err), "GET x: HTTP 403 Forbidden");
    push_status_apply(&st, &rep, 1, 1200);
    cr_assert_eq(st.last_current, 1100, "a failure is not current");
    cr_assert_eq(st.last_attempt, 1200);
    cr_assert_str_eq(st.last_error, "GET x: HTTP 403 Forbidden");
    cr_assert_eq(st.last_result, PUSH_RESULT_FAILED);
    rep = (struct push_report){.outcome = PUSH_OK, .written = 1};
    cr_assert_eq(push_status_apply(&st, &rep, 1, 1300), 1, "a write after the push is a repair");
    cr_assert_eq(st.drift_repairs, 1);
    cr_assert_str_eq(st.last_error, "");
    rep = (struct push_report){.outcome = PUSH_YIELDED};
    snprintf(rep.remote_generation, sizeof(rep.remote_generation), "999");
    push_status_apply(&st, &rep, 0, 1400);
    cr_assert_eq(st.last_current, 1400, "a newer set there is current enough");
    cr_assert_str_eq(st.remote_generation, "999");
    cr_assert_eq(st.results[PUSH_RESULT_YIELDED], 1);
    cr_assert_str_eq(push_result_name(PUSH_RESULT_YIELDED), "yielded");
}

Test(status, registry)
{
    const char *urls[] = {"s3://a/p", "azblob://acct1/c1/p"};
    struct push_status st = {0}, got;

    cr_assert_eq(push_status_count(), 0);
    cr_assert_eq(push_status_init(urls, 2), 0);
    cr_assert_eq(push_status_count(), 2);
    cr_assert_eq(push_status_get(1, &got), 0);
    cr_assert_str_eq(got.target, "azblob://acct1/c1/p");
    snprintf(st.target, sizeof(st.target), "s3://a/p");
    st.drift_repairs = 7;
    push_status_put(0, &st);
    cr_assert_eq(push_status_get(0, &got), 0);
    cr_assert_eq(got.drift_repairs, 7);
    cr_assert_eq(push_status_get(2, &got), -1);
    push_status_reset();
    cr_assert_eq(push_status_count(), 0);
}

/* ---- azsign ---- */

/* Azurite's well-known development account key. */
#define AZURITE_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

Test(azsign, string_to_sign)
{
    const char *const headers[] = {"x-ms-version: 2021-08-06",
                                   "X-Ms-Date: Thu, 01 Jan 2026 00:00:00 GMT",
                                   "x-ms-blob-type: BlockBlob",
                                   "x-ms-meta-oidc_generation:  1767225600 ",
                                   "x-ms-blob-content-type: application/json",
                                   "x-ms-blob-cache-control: public, max-age=3600",
                                   "If-Match: \"0x8D\"",
                                   NULL};
    char *s = push_azsign_string("devstoreaccount1", "PUT", "/devstoreaccount1/oidc/c1/openid/v1/jwks", headers, 11);

    cr_assert_not_null(s);
    cr_assert_str_eq(s, "PUT\n\n\n11\n\n\n\n\n\"0x8D\"\n\n\n\n"
                        "x-ms-blob-cache-control:public, max-age=3600\n"
                        "x-ms-blob-content-type:application/json\n"
                        "x-ms-blob-type:BlockBlob\n"
                        "x-ms-date:Thu, 01 Jan 2026 00:00:00 GMT\n"
                        "x-ms-meta-oidc_generation:1767225600\n"
                        "x-ms-version:2021-08-06\n"
                        "/devstoreaccount1/devstoreaccount1/oidc/c1/openid/v1/jwks");
    free(s);
    s = push_azsign_string("acct1", "GET", "/oidc/x", (const char *const[]){"If-None-Match: *", NULL}, 0);
    cr_assert_str_eq(s, "GET\n\n\n\n\n\n\n\n\n*\n\n\n/acct1/oidc/x", "no length for an empty body");
    free(s);
}

Test(azsign, signature_matches_an_independent_hmac)
{
    unsigned char key[sizeof(AZURITE_KEY)];
    char field[256];
    const char *to_sign = "PUT\n\n\n11\n\n\n\n\n\"0x8D\"\n\n\n\n"
                          "x-ms-blob-cache-control:public, max-age=3600\n"
                          "x-ms-blob-content-type:application/json\n"
                          "x-ms-blob-type:BlockBlob\n"
                          "x-ms-date:Thu, 01 Jan 2026 00:00:00 GMT\n"
                          "x-ms-meta-oidc_generation:1767225600\n"
                          "x-ms-version:2021-08-06\n"
                          "/devstoreaccount1/devstoreaccount1/oidc/c1/openid/v1/jwks";
    int n = push_azsign_decode_key(" " AZURITE_KEY "\n", key);

    cr_assert_eq(n, 64);
    cr_assert_eq(push_azsign_field("devstoreaccount1", key, (size_t)n, to_sign, field, sizeof(field)), 0);
    /* python3 -c 'import base64,hmac,hashlib; print(base64.b64encode(hmac.new(base64.b64decode(KEY),
     * STRING.encode(), hashlib.sha256).digest()).decode())' */
    cr_assert_str_eq(field, "Authorization: SharedKey devstoreaccount1:S7Eyxt0JzDpyI4z5kMfEvCOPTet1aKiq7/ugCB7uoik=");
    cr_assert_eq(push_azsign_decode_key("not base64!", key), -1);
    cr_assert_eq(push_azsign_decode_key("", key), -1);
    cr_assert_eq(push_azsign_decode_key("YWJj", key), 3);
    cr_assert_eq(push_azsign_decode_key("YWI=", key), 2);
    cr_assert_eq(push_azsign_field("devstoreaccount1", key, 2, to_sign, field, 20), -1, "too small for the field");
}
