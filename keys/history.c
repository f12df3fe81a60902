/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/history.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys/keyfile.h"
#include "util/jsonw.h"
#include "util/json.h"
#include "util/file.h"
#include "util/printable.h"

/* A state file holds a few hundred keys at most; refuse anything absurd. */
#define HISTORY_MAX_FILE_SIZE (4 * 1024 * 1024)
#define HISTORY_VERSION       1

const struct history_entry *history_find(const struct history *h, const char *kid)
{
    for (size_t i = 0; i < h->count; i++)
        if (strcmp(h->entries[i].kid, kid) == 0)
            return &h->entries[i];
    return NULL;
}

static void history_entry_clear(struct history_entry *e)
{
    free(e->kid);
    free(e->spki);
    free(e->source);
}

void history_free(struct history *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->count; i++)
        history_entry_clear(&h->entries[i]);
    free(h->entries);
    free(h);
}

/* Appends a zeroed entry and returns it, or NULL on out of memory. An
 * entry is over a kilobyte and a fleet keeps a history per issuer: the
 * array grows from two entries (a key and its successor), not eight. */
static struct history_entry *history_push(struct history *h)
{
    if (h->count == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 2;
        struct history_entry *entries = realloc(h->entries, cap * sizeof(*entries));
        if (entries == NULL)
            return NULL;
        h->entries = entries;
        h->cap = cap;
    }
    memset(&h->entries[h->count], 0, sizeof(h->entries[0]));
    return &h->entries[h->count++];
}

/* Makes e the entry of k, first seen at now. */
static int history_init_entry(struct history_entry *e, const struct key *k, time_t now)
{
    e->kid = strdup(k->kid);
    e->kid_given = k->kid_given;
    e->first_seen = e->last_seen = now;
    e->present = 1;
    e->spki = key_spki_encode(k->pub);
    e->source = strdup(k->source);
    if (e->kid == NULL || e->spki == NULL || e->source == NULL) {
        history_entry_clear(e);
        return -1;
    }
    return 0;
}

static int history_add_entry(struct history *h, const struct key *k, time_t now)
{
    struct history_entry *e = history_push(h);

    if (e != NULL && history_init_entry(e, k, now) == 0)
        return 0;
    h->count -= e != NULL;
    return -1;
}

/* Whether e is about the key k, not only its kid: a kid given by a JWKS,
 * unlike a derived one, does not pin the key. */
static int history_same_key(const struct history_entry *e, const struct key *k)
{
    char *spki;
    int same;

    if (!e->kid_given && !k->kid_given)
        return 1;
    if ((spki = key_spki_encode(k->pub)) == NULL)
        return -1;
    same = strcmp(spki, e->spki) == 0;
    free(spki);
    return same;
}

/* The kid of e now names k, another key: the entry becomes k's. Reported
 * as the old key dropped and the new one added. */
static int history_rebind(struct history_entry *e, const struct key *k, time_t now, history_event_cb cb, void *cb_ctx)
{
    cb(cb_ctx, HISTORY_DROPPED, e, 0);
    history_entry_clear(e);
    memset(e, 0, sizeof(*e));
    if (history_init_entry(e, k, now) != 0)
        return -1;
    cb(cb_ctx, HISTORY_ADDED, e, 0);
    return 0;
}

/* Marks every key of inputs present at now; new keys get an entry. */
static int history_observe(struct history *h, const struct keyset *inputs, time_t now, history_event_cb cb,
                           void *cb_ctx, int *changed)
{
    for (size_t i = 0; i < inputs->count; i++) {
        const struct key *k = &inputs->keys[i];
        struct history_entry *e = (struct history_entry *)history_find(h, k->kid);
        if (e == NULL) {
            if (history_add_entry(h, k, now) != 0)
                return -1;
            cb(cb_ctx, HISTORY_ADDED, &h->entries[h->count - 1], 0);
            *changed = 1;
            continue;
        }
        int same = history_same_key(e, k);
        if (same < 0 || (!same && history_rebind(e, k, now, cb, cb_ctx) != 0))
            return -1;
        *changed |= !same;
        char *source = strdup(k->source);
        if (source == NULL)
            return -1;
        free(e->source);
        e->source = source;
        e->present = 1;
        e->last_seen = now;
    }
    return 0;
}

/* Publishes a retained key again: appended after the inputs' keys. */
static int history_republish(const struct history_entry *e, struct keyset *ks, char *err, size_t errlen)
{
    char source[4200], why[256];
    const struct key *dup;
    EVP_PKEY *pub = key_spki_decode(e->spki);

    if (pub == NULL) {
        snprintf(err, errlen, "retained key %s: stored public key does not decode", e->kid);
        return -1;
    }
    snprintf(source, sizeof(source), "retained, last seen in %s", e->source);
    if (keyset_add(ks, pub, source, e->kid, &dup, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "retained key %s: %s", e->kid, why);
        return -1;
    }
    return 0;
}

static void history_noop(void *ctx, enum history_event ev, const struct history_entry *e, time_t until)
{
    (void)ctx, (void)ev, (void)e, (void)until;
}

int history_apply(struct history *h, struct keyset *inputs, unsigned long retention, time_t now, history_event_cb cb,
                  void *cb_ctx, char *err, size_t errlen)
{
    unsigned char *was_present = calloc(h->count + 1, 1);
    size_t kept = 0, old_count = h->count;
    int rc = 0, changed = 0;

    cb = cb ? cb : history_noop;
    if (was_present == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < old_count; i++) {
        was_present[i] = (unsigned char)h->entries[i].present;
        h->entries[i].present = 0;
    }
    if (history_observe(h, inputs, now, cb, cb_ctx, &changed) != 0) {
        snprintf(err, errlen, "out of memory");
        free(was_present);
        return -1;
    }
    for (size_t i = 0; i < h->count; i++) {
        struct history_entry *e = &h->entries[i];
        /* Gone since the last check, or, at the first check after a load,
         * not in the inputs: reported as retained. Only a key this process
         * saw at its last check was there until now. */
        int left = !e->present && i < old_count && (was_present[i] || !h->applied);
        if (!e->present && i < old_count && was_present[i])
            e->last_seen = now;
        if (e->present && i < old_count && !was_present[i])
            changed = 1; /* back from retention: the state must say present again */
        time_t until = history_until(e, retention);
        if (e->present || (retention > 0 && until > now)) {
            if (!e->present && rc == 0)
                rc = history_republish(e, inputs, err, errlen);
            if (left) {
                cb(cb_ctx, HISTORY_RETAINED, e, until);
                changed = 1;
            }
            h->entries[kept++] = *e;
            continue;
        }
        cb(cb_ctx, HISTORY_DROPPED, e, 0);
        history_entry_clear(e);
        changed = 1;
    }
    h->count = kept;
    h->applied = 1;
    free(was_present);
    return rc < 0 ? rc : changed;
}

time_t history_until(const struct history_entry *e, unsigned long retention)
{
    return e->last_seen + (retention < (unsigned long)HISTORY_TIME_MAX ? (time_t)retention : HISTORY_TIME_MAX);
}

time_t history_next_expiry(const struct history *h, unsigned long retention)
{
    time_t next = 0;

    for (size_t i = 0; i < h->count; i++) {
        time_t until = history_until(&h->entries[i], retention);
        if (!h->entries[i].present && (next == 0 || until < next))
            next = until;
    }
    return next;
}

static void history_render(const struct history *h, struct jsonw *w)
{
    char num[32];

    snprintf(num, sizeof(num), "%d", HISTORY_VERSION);
    jsonw_lit(w, "{\"version\":");
    jsonw_lit(w, num);
    jsonw_lit(w, ",\"keys\":[");
    for (size_t i = 0; i < h->count; i++) {
        const struct history_entry *e = &h->entries[i];
        jsonw_lit(w, i ? ",\n{\"kid\":" : "\n{\"kid\":");
        jsonw_str(w, e->kid);
        if (e->kid_given)
            jsonw_lit(w, ",\"kid_given\":true");
        snprintf(num, sizeof(num), "%lld", (long long)e->first_seen);
        jsonw_lit(w, ",\"first_seen\":");
        jsonw_lit(w, num);
        snprintf(num, sizeof(num), "%lld", (long long)e->last_seen);
        jsonw_lit(w, ",\"last_seen\":");
        jsonw_lit(w, num);
        jsonw_lit(w, e->present ? ",\"present\":true,\"source\":" : ",\"present\":false,\"source\":");
        jsonw_str(w, e->source);
        jsonw_lit(w, ",\"spki\":");
        jsonw_str(w, e->spki);
        jsonw_lit(w, "}");
    }
    jsonw_lit(w, "\n]}\n");
}

/* Splits path into its directory (into dir, dirlen bytes) and returns its
 * last component (in path). */
static const char *history_split(const char *path, char *dir, size_t dirlen)
{
    const char *slash = strrchr(path, '/');

    snprintf(dir, dirlen, "%s", path);
    dirname(dir);
    return slash ? slash + 1 : path;
}

/* Opens dir as file_open_own_dir checks it (following a symlink:
 * systemd's StateDirectory with DynamicUser is one). */
static int history_open_dir(const char *dir, char *err, size_t errlen)
{
    return file_open_own_dir(dir, "state directory", "make this server publish keys", err, errlen);
}

/* Writes buf over the state file through file_write_atomic_at, in the
 * directory as history_open_dir checked it. */
static int history_write_atomic(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
    char dir[4096];
    const char *name = history_split(path, dir, sizeof(dir));
    int dirfd = history_open_dir(dir, err, errlen), rc;

    if (dirfd < 0) {
        if (errno == ENOENT)
            snprintf(err, errlen, "state directory %s: %s", dir, strerror(ENOENT));
        return -1;
    }
    if ((rc = file_write_atomic_at(dirfd, name, buf, len, 0600)) != 0)
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    close(dirfd);
    return rc;
}

int history_save(const struct history *h, const char *path, char *err, size_t errlen)
{
    struct jsonw w = {0};
    char *buf;
    size_t len;
    int rc;

    history_render(h, &w);
    if (jsonw_finish(&w, &buf, &len) != 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    rc = history_write_atomic(path, buf, len, err, errlen);
    free(buf);
    return rc;
}

/* Where history_load sends the entries it drops. */
struct history_loader {
    const char *path;
    time_t now;
    keyset_warn_cb warn;
    void *warn_ctx;
};

/* Reports that entry i (its kid as stored, or NULL) is dropped, and why. */
static void history_drop(const struct history_loader *l, size_t i, const char *kid, const char *why)
{
    char quoted[64], msg[4600];

    if (l->warn == NULL)
        return;
    snprintf(msg, sizeof(msg), "state file %s: keys[%zu] (kid %s) dropped: %s", l->path, i,
             kid ? printable_quote(kid, quoted, sizeof(quoted)) : "missing", why);
    l->warn(l->warn_ctx, msg);
}

/* A stored time: whole seconds in [1, HISTORY_TIME_MAX]; 0 for anything
 * else. */
static time_t history_time(const struct json_value *v)
{
    int64_t t;

    return json_whole(v, 1, HISTORY_TIME_MAX, &t) == 0 ? (time_t)t : 0;
}

/* Why the stored public key cannot stand behind kid, or NULL when it can:
 * it decodes, is of a published type and gives that very kid, or the kid
 * was given with it by a JWKS (kid_given) and is one a JWKS may give. */
static const char *history_check_key(const char *spki, const char *kid, int kid_given, char *why, size_t whylen)
{
    char computed[KEY_KID_LEN + 1];
    EVP_PKEY *pub = key_spki_decode(spki);
    const char *problem = NULL;

    if (pub == NULL)
        problem = "spki is not a public key";
    else if (key_check_type(pub, why, whylen) != 0)
        problem = why;
    else if (kid_given && !key_kid_ok(kid))
        problem = "kid_given, but kid is not 1 to 1024 printable characters without quote or backslash";
    else if (!kid_given && (key_kid(pub, computed) != 0 || strcmp(computed, kid) != 0))
        problem = "kid is not the one its spki gives (and kid_given is not set)";
    EVP_PKEY_free(pub);
    return problem;
}

/* Whether entry v says its kid came from a JWKS. */
static int history_kid_given(const struct json_value *v)
{
    const struct json_value *given = json_get(v, "kid_given");

    return given != NULL && given->type == JSON_BOOL && given->boolean;
}

/* Why entry v cannot be kept (see history_load), or NULL when it can. */
static const char *history_entry_problem(const struct history_loader *l, const struct json_value *v,
                                         const struct history *h, char *why, size_t whylen)
{
    const char *kid = json_get_str(v, "kid"), *spki = json_get_str(v, "spki");
    const struct json_value *present = json_get(v, "present"), *given = json_get(v, "kid_given");
    time_t first = history_time(json_get(v, "first_seen")), last = history_time(json_get(v, "last_seen"));

    if (kid == NULL || spki == NULL || json_get_str(v, "source") == NULL || present == NULL ||
        present->type != JSON_BOOL)
        return "missing or mistyped member (kid, spki, source, present)";
    if (given != NULL && given->type != JSON_BOOL)
        return "kid_given is not true or false";
    if (first == 0 || last == 0) {
        snprintf(why, whylen, "first_seen and last_seen must be whole seconds from 1 to %lld",
                 (long long)HISTORY_TIME_MAX);
        return why;
    }
    if (first > last)
        return "first_seen is after last_seen";
    if (last > l->now + HISTORY_CLOCK_SKEW) {
        snprintf(why, whylen, "last_seen %lld is in the future (now %lld)", (long long)last, (long long)l->now);
        return why;
    }
    if (history_find(h, kid) != NULL)
        return "an earlier entry has the same kid";
    return history_check_key(spki, kid, history_kid_given(v), why, whylen);
}

/* Reads entry i into e: 1 when kept, 0 when dropped (and reported), -1 when
 * out of memory. The stored times are taken no later than now. */
static int history_parse_entry(const struct history_loader *l, size_t i, const struct json_value *v,
                               struct history_entry *e, const struct history *h)
{
    char why[256];
    const char *problem = history_entry_problem(l, v, h, why, sizeof(why));

    if (problem != NULL) {
        history_drop(l, i, json_get_str(v, "kid"), problem);
        return 0;
    }
    e->kid = strdup(json_get_str(v, "kid"));
    e->kid_given = history_kid_given(v);
    e->last_seen = history_time(json_get(v, "last_seen"));
    e->first_seen = history_time(json_get(v, "first_seen"));
    if (e->last_seen > l->now)
        e->last_seen = l->now;
    if (e->first_seen > e->last_seen)
        e->first_seen = e->last_seen;
    e->present = 0;
    e->spki = strdup(json_get_str(v, "spki"));
    e->source = strdup(json_get_str(v, "source"));
    return e->kid && e->spki && e->source ? 1 : -1;
}

/* Reads the entries of a parsed state file into h. */
static int history_parse(const struct history_loader *l, const struct json_value *root, struct history *h, char *err,
                         size_t errlen)
{
    const struct json_value *version = json_get(root, "version"), *keys = json_get(root, "keys"), *v;
    size_t i = 0;

    if (version == NULL || version->type != JSON_NUMBER || version->num != HISTORY_VERSION || keys == NULL ||
        keys->type != JSON_ARRAY) {
        snprintf(err, errlen, "state file %s: not a version %d state file", l->path, HISTORY_VERSION);
        return -1;
    }
    for (v = keys->child; v != NULL; v = v->next, i++) {
        struct history_entry e = {0}, *slot = NULL;
        int kept = history_parse_entry(l, i, v, &e, h);
        if (kept > 0 && (slot = history_push(h)) != NULL)
            *slot = e;
        if (kept < 0 || (kept > 0 && slot == NULL)) {
            history_entry_clear(&e);
            snprintf(err, errlen, "state file %s: out of memory", l->path);
            return -1;
        }
    }
    return 0;
}

int history_load(const char *path, time_t now, keyset_warn_cb warn, void *warn_ctx, struct history **out, char *err,
                 size_t errlen)
{
    const struct history_loader l = {.path = path, .now = now, .warn = warn, .warn_ctx = warn_ctx};
    struct history *h = calloc(1, sizeof(*h));
    struct json_value *root = NULL;
    char dir[4096], why[128], *text = NULL;
    const char *name = history_split(path, dir, sizeof(dir));
    int dirfd = -1, rc = -1;
    size_t len;

    *out = NULL;
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if ((dirfd = history_open_dir(dir, err, errlen)) < 0) {
        rc = errno == ENOENT ? 0 : -1;
    } else if ((rc = file_read_at(dirfd, name, path, "state file", HISTORY_MAX_FILE_SIZE, &text, &len, err, errlen)) ==
               0) {
        /* The strict parser of tokens: bounded depth, no duplicate member. */
        if ((root = json_parse((const unsigned char *)text, len, why, sizeof(why))) == NULL) {
            snprintf(err, errlen, "state file %s: %s", path, why);
            rc = -1;
        } else {
            rc = history_parse(&l, root, h, err, errlen);
        }
    }
    rc = rc > 0 ? 0 : rc;
    if (dirfd >= 0)
        close(dirfd);
    json_free(root);
    free(text);
    if (rc != 0) {
        history_free(h);
        h = NULL;
    }
    *out = h;
    return rc;
}
