/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/reload.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diag/rp_rules.h"
#include "keys/history.h"
#include "keys/keyset.h"
#include "keys/removal.h"
#include "publish/publish.h"
#include "server/obs/metrics.h"
#include "server/reload/health.h"
#include "server/reload/signerdir.h"
#include "server/reload/signing.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/clock.h"

/* How much of a key's source a log line quotes. */
#define RELOAD_SOURCE_SHOWN 1024

struct reload {
    const struct config *cfg;
    struct snapshot *current;
    struct history *history;
    struct removal *removal;
    struct signing signing;
    struct keyset *upstream; /* the --upstream's last good set; NULL until it has answered */
    char *state_path;        /* with --state-dir; allocated, as a fleet has a reloader per issuer */
    time_t state_saved;      /* when the state was last saved, or 0 */
    unsigned long generation;
    unsigned long failures;
    int64_t removal_due; /* monotonic ms of the re-read that confirms held removals, or 0 */
    int over_limits;     /* the published set breaks a relying party's documented limit */
    time_t last_pass;    /* when the last pass read the key files */
    char *last_error;    /* why that pass failed, or NULL */
    /* The signing key directory, a key source of its own (signerdir.h):
     * NULL without --signing-key-dir. */
    struct signerdir *signer;
    struct signer_state *signer_changed; /* the state the last pass made, or NULL */
};

static void reload_log_event(void *ctx, enum history_event ev, const struct history_entry *e, time_t until)
{
    char when[CLOCK_RFC3339_SIZE], source[RELOAD_SOURCE_SHOWN];

    (void)ctx;
    switch (ev) {
    case HISTORY_ADDED:
        log_msg(LOG_INFO, "key kid=%s added from %s", e->kid, printable_quote(e->source, source, sizeof(source)));
        break;
    case HISTORY_RETAINED:
        log_msg(LOG_INFO, "key kid=%s left the inputs; retained (still published) until %s", e->kid,
                clock_rfc3339(until, when));
        break;
    case HISTORY_DROPPED:
        log_msg(LOG_INFO, "key kid=%s dropped from the published set", e->kid);
        break;
    }
}

/* --- relying-party limits (diag/rp_rules.h, docs/compatibility.md §6) --- */

/* Logs one rule a relying party would refuse the published set by; counts
 * them in *ctx. */
static void reload_log_limit(void *ctx, const struct rp_outcome *o)
{
    if (o->verdict != RP_REFUSED)
        return;
    (*(int *)ctx)++;
    log_msg(LOG_WARN, "relying-party limit: %s: %s; fix: %s (%s)", o->relying_party, o->what, o->fix, o->source);
}

/* Checks a newly published set against every relying party's documented
 * limits (more than 100 RSA keys for AWS, ...), the same rules `doctor`
 * applies, and logs what breaks one. It runs with each new snapshot, so at
 * start and after every change, not on passes that change nothing. The
 * issuer's form is left to --allow-insecure-issuer's own warning when that
 * is on (development). */
static void reload_check_limits(struct reload *r, const struct keyset *ks)
{
    struct rp_key *keys = calloc(ks->count + 1, sizeof(*keys));
    struct rp_facts facts = {.issuer = r->cfg->allow_insecure_issuer ? NULL : r->cfg->issuers.items[0],
                             .have_keys = keys != NULL,
                             .keys = keys,
                             .nkeys = ks->count,
                             .publicly_trusted = -1};
    int broken = 0;

    for (size_t i = 0; keys != NULL && i < ks->count; i++)
        keys[i] = (struct rp_key){ks->keys[i].curve ? "EC" : "RSA", ks->keys[i].alg, NULL};
    for (int t = 0; t < RP_TARGET_COUNT; t++)
        rp_check((enum rp_target)t, &facts, reload_log_limit, &broken);
    if (broken == 0 && r->over_limits)
        log_msg(LOG_INFO, "relying-party limits: the published set is within every documented limit again");
    r->over_limits = broken > 0;
    free(keys);
}

/* snap replaces the current snapshot. */
static void reload_publish(struct reload *r, struct snapshot *snap)
{
    snapshot_release(r->current);
    r->current = snap;
    health_documents(!snap->unavailable);
    if (snap->unavailable) {
        log_msg(LOG_INFO, "waiting for the first good answer of --upstream %s: both documents answer 503 until then",
                r->cfg->upstream);
        return;
    }
    r->generation++;
    log_msg(LOG_INFO, "published key set generation %lu: %zu keys, jwks etag %s", r->generation, snap->keyset->count,
            snap->jwks.etag);
    for (size_t i = 0; i < snap->keyset->count; i++) {
        const struct key *k = &snap->keyset->keys[i];
        char source[RELOAD_SOURCE_SHOWN];
        printable_quote(k->source, source, sizeof(source));
        if (k->curve != NULL)
            log_msg(LOG_INFO, "key kid=%s alg=%s curve=%s source=%s", k->kid, k->alg, k->curve, source);
        else
            log_msg(LOG_INFO, "key kid=%s alg=%s bits=%d source=%s", k->kid, k->alg, k->bits, source);
    }
    reload_check_limits(r, snap->keyset);
}

/* Saves the retention state (when there is a --state-dir); a failure is
 * logged and counted, and the next pass tries again. */
static void reload_save_state(struct reload *r, time_t now)
{
    char err[1024];
    int saved;

    if (r->cfg->state_dir == NULL)
        return;
    saved = history_save(r->history, r->state_path, err, sizeof(err)) == 0;
    health_reload_result(METRICS_SOURCE_STATE, saved, now);
    if (saved) {
        r->state_saved = now;
        return;
    }
    atomic_fetch_add(&metrics_process.reload_failures[METRICS_SOURCE_STATE], 1);
    log_msg(LOG_ERROR, "cannot persist key retention state: %s", err);
}

/* Whether an --upstream has yet to answer: nothing can be published. */
static int reload_waiting(const struct reload *r)
{
    return r->cfg->upstream != NULL && r->upstream == NULL;
}

void reload_save_at_exit(struct reload *r, time_t now, int64_t now_ms)
{
    struct keyset *ks;
    char err[1024];

    if (r->signer != NULL)
        signerdir_save_at_exit(r->signer, r->current ? r->current->keyset : NULL, now, now_ms);
    if (r->cfg->state_dir == NULL || reload_waiting(r))
        return;
    if (publish_keyset(r->cfg, NULL, r->history, NULL, r->upstream, 0, now, reload_log_event, NULL, &ks, err,
                       sizeof(err)) >= 0)
        keyset_free(ks);
    reload_save_state(r, now);
}

/* The signing key directory's share of a pass before the key sources are
 * read: its keys, or NULL with err when it cannot be read. */
static const struct keydir *reload_signer_keys(struct reload *r, time_t now, int64_t now_ms, int *failed, char *err,
                                               size_t errlen)
{
    const struct keydir *kd = NULL;

    *failed = 0;
    if (r->signer != NULL &&
        (kd = signerdir_prepare(r->signer, r->current ? r->current->keyset : NULL, now, now_ms, err, errlen)) == NULL)
        *failed = 1;
    return kd;
}

void reload_upstream(struct reload *r, struct keyset *ks)
{
    keyset_free(r->upstream);
    r->upstream = ks;
}

/* Builds the next snapshot from the files, the signing key directory, the
 * --upstream's set and the retention state. Until the --upstream has
 * answered, the files are read (a bad one is still an error) but nothing
 * is published: the documents answer 503, since a set without the
 * upstream's keys would be cached by relying parties for max-age. Returns
 * NULL (reason logged and counted) when the inputs are unusable, so the
 * caller keeps what it publishes. */
static struct snapshot *reload_build(struct reload *r, time_t now, int64_t now_ms)
{
    const struct config *cfg = r->cfg;
    char err[1024];
    struct keyset *ks = NULL;
    int failed, changed;
    const struct keydir *signer = reload_signer_keys(r, now, now_ms, &failed, err, sizeof(err));
    int64_t due;

    if (failed)
        changed = -1;
    else if (!reload_waiting(r))
        changed = publish_keyset(cfg, signer, r->history, r->removal, r->upstream, now_ms, now, reload_log_event, NULL,
                                 &ks, err, sizeof(err));
    else
        changed = (ks = publish_read_files(cfg, r->removal, now_ms, err, sizeof(err))) == NULL ? -1 : 0;
    due = removal_due(r->removal);

    if (due != 0 && due != r->removal_due)
        log_msg(LOG_INFO,
                "%zu key(s) no longer in the key files stay published until a re-read in %dms finds the same "
                "keys (a file may have been read mid-write)",
                removal_held(r->removal), RELOAD_REMOVAL_CONFIRM_MS);
    r->removal_due = due;
    r->last_pass = now;
    free(r->last_error);
    r->last_error = changed < 0 ? strdup(err) : NULL;
    health_reload_result(METRICS_SOURCE_KEYS, changed >= 0, now);
    if (changed < 0 && r->current == NULL) {
        /* The first pass: nothing was ever published, so this is no reload
         * but a start that cannot go on. */
        log_msg(LOG_ERROR, "cannot start: no key set to publish: %s", err);
        return NULL;
    }
    if (changed < 0) {
        r->failures++;
        atomic_fetch_add(&metrics_process.reload_failures[METRICS_SOURCE_KEYS], 1);
        log_msg(LOG_ERROR, "key reload failed (%lu so far), keeping the published set: %s", r->failures, err);
        return NULL;
    }
    atomic_store(&metrics_process.last_reload_success, (long long)now);
    if (reload_waiting(r)) {
        keyset_free(ks);
        return publish_unavailable(cfg, now);
    }
    if (changed || now - r->state_saved >= RELOAD_STATE_REFRESH)
        reload_save_state(r, now);
    return publish_snapshot(cfg, ks, now);
}

size_t reload_retained(const struct reload *r)
{
    size_t retained = 0;

    for (size_t i = 0; i < r->history->count; i++)
        retained += !r->history->entries[i].present;
    return retained;
}

/* Publishes the gauges of the current set for /metrics. */
static void reload_update_gauges(struct reload *r)
{
    size_t retained = reload_retained(r);

    atomic_store(&metrics_process.keyset_generation, r->generation);
    atomic_store(&metrics_process.keys_published, r->current ? r->current->keyset->count : 0);
    atomic_store(&metrics_process.keys_retained, retained);
}

struct snapshot *reload_pass(struct reload *r, time_t now, int64_t now_ms)
{
    struct snapshot *next = reload_build(r, now, now_ms), *published = NULL;

    if (next != NULL && r->current != NULL && snapshot_same_bytes(next, r->current)) {
        snapshot_release(next);
    } else if (next != NULL) {
        reload_publish(r, next);
        published = next;
    }
    if (r->current != NULL && !r->current->unavailable)
        signing_check(&r->signing, r->current->keyset, r->history, now);
    r->signer_changed =
        r->signer && r->current ? signerdir_state(r->signer, r->current, r->upstream, now, now_ms) : NULL;
    reload_update_gauges(r);
    return published;
}

struct signer_state *reload_signer_changed(const struct reload *r)
{
    return r->signer_changed;
}

struct signer_state *reload_signer_current(const struct reload *r)
{
    return r->signer ? signerdir_current(r->signer) : NULL;
}

void reload_deadlines(const struct reload *r, int64_t *confirm_at, time_t *wall_at)
{
    time_t expiry = history_next_expiry(r->history, r->cfg->key_retention);
    time_t mature = r->signing.mature_at;

    int64_t signer = r->signer ? signerdir_due(r->signer) : 0;

    *confirm_at = signer != 0 && (r->removal_due == 0 || signer < r->removal_due) ? signer : r->removal_due;
    *wall_at = expiry != 0 && (mature == 0 || expiry < mature) ? expiry : mature;
}

/* The state file must not land among the keys: it would be read as one. */
static int reload_state_dir_ok(const struct config *cfg)
{
    char state[PATH_MAX], keys[PATH_MAX];

    if (cfg->state_dir == NULL || realpath(cfg->state_dir, state) == NULL)
        return 1;
    for (size_t i = 0; i < cfg->key_files.count; i++) {
        if (realpath(cfg->key_files.items[i], keys) != NULL && strcmp(state, keys) == 0) {
            log_msg(LOG_ERROR, "--state-dir %s is also a --service-account-key-file directory; use another one",
                    cfg->state_dir);
            return 0;
        }
    }
    return 1;
}

/* Creates a missing --state-dir and checks it; 0, or -1 (logged). */
static int reload_prepare_state_dir(struct reload *r)
{
    const struct config *cfg = r->cfg;
    char path[PATH_MAX];

    if (cfg->state_dir == NULL)
        return 0;
    publish_state_path(cfg, path, sizeof(path));
    if ((r->state_path = strdup(path)) == NULL) {
        log_msg(LOG_ERROR, "--state-dir %s: %s", cfg->state_dir, strerror(ENOMEM));
        return -1;
    }
    if (mkdir(cfg->state_dir, 0700) != 0 && errno != EEXIST)
        log_msg(LOG_ERROR, "--state-dir %s: cannot create: %s", cfg->state_dir, strerror(errno));
    return reload_state_dir_ok(cfg) ? 0 : -1;
}

struct reload *reload_create(const struct config *cfg, time_t now, int64_t now_ms)
{
    struct reload *r = calloc(1, sizeof(*r));
    char err[1024];

    if (r == NULL || (r->removal = removal_new(RELOAD_REMOVAL_CONFIRM_MS)) == NULL) {
        log_msg(LOG_ERROR, "cannot set up the key reloader: %s", strerror(ENOMEM));
        reload_free(r);
        return NULL;
    }
    r->cfg = cfg;
    signing_init(&r->signing, cfg->signing_key_file, cfg->max_age);
    if (reload_prepare_state_dir(r) != 0) {
        reload_free(r);
        return NULL;
    }
    if ((r->history = publish_history_load(cfg, now, err, sizeof(err))) == NULL) {
        log_msg(LOG_ERROR, "%s", err);
        reload_free(r);
        return NULL;
    }
    if (cfg->signing_key_dir != NULL &&
        (r->signer = signerdir_create(cfg, cfg->key_files.count > 0 || r->history->count > 0, now, now_ms, err,
                                      sizeof(err))) == NULL) {
        log_msg(LOG_ERROR, "--signing-key-dir: %s", err);
        reload_free(r);
        return NULL;
    }
    reload_pass(r, now, now_ms);
    if (r->current == NULL) {
        reload_free(r);
        return NULL;
    }
    return r;
}

/* A key's role on the status page: a --signing-key-dir key's as `keys`
 * shows it (its text in dir), else the --signing-key-file key's. */
static const char *reload_role(const struct reload *r, const struct key *k, struct keydir_role *dir)
{
    if (r->signer != NULL) {
        signerdir_role(r->signer, k->kid, r->last_pass, dir);
        if (dir->name != NULL)
            return dir->text;
    }
    if (strcmp(k->kid, r->signing.kid) != 0)
        return NULL;
    if (r->signing.state == SIGNING_MATURE)
        return "signing";
    return r->signing.state == SIGNING_YOUNG ? "signing (published for less than --max-age)" : NULL;
}

struct status *reload_status(const struct reload *r)
{
    const struct config *cfg = r->cfg;
    const struct keyset *ks = r->current->keyset;
    struct status *st = status_new(cfg->issuers.items[0], cfg->jwks_uri);

    if (st == NULL)
        return NULL;
    st->generation = r->generation;
    st->published_at = r->current->loaded_at;
    st->reload_at = r->last_pass;
    st->reload_failures = r->failures;
    st->unavailable = r->current->unavailable;
    if (r->last_error != NULL && (st->reload_error = strdup(r->last_error)) == NULL)
        st->failed = 1;
    if (r->signer != NULL && cfg->etcd_servers.count > 0) {
        char paused[512];
        st->key_store = 1;
        signerdir_paused(r->signer, paused, sizeof(paused));
        if (paused[0] != '\0' && (st->rotation_paused = strdup(paused)) == NULL)
            st->failed = 1;
    }
    for (size_t i = 0; i < ks->count; i++) {
        const struct key *k = &ks->keys[i];
        const struct history_entry *e = history_find(r->history, k->kid);
        struct keydir_role dir;
        struct status_key row = {.kid = k->kid,
                                 .alg = k->alg,
                                 .source = k->source,
                                 .bits = k->bits,
                                 .curve = k->curve,
                                 .role = reload_role(r, k, &dir)};
        if (e != NULL) {
            row.first_seen = e->first_seen;
            row.retained_until = e->present ? 0 : history_until(e, cfg->key_retention);
        }
        status_add_key(st, &row);
    }
    return st;
}

int reload_signer_start(struct reload *r, void (*wake)(void *), void *wake_ctx)
{
    char err[1024];

    if (r->signer == NULL || signerdir_start_etcd(r->signer, wake, wake_ctx, err, sizeof(err)) == 0)
        return 0;
    log_msg(LOG_ERROR, "--etcd-servers: %s", err);
    return -1;
}

const char *reload_error(const struct reload *r)
{
    return r->last_error;
}

struct snapshot *reload_current(const struct reload *r)
{
    return r->current;
}

void reload_free(struct reload *r)
{
    if (r == NULL)
        return;
    removal_free(r->removal);
    signerdir_free(r->signer);
    keyset_free(r->upstream);
    snapshot_release(r->current);
    history_free(r->history);
    free(r->state_path);
    free(r->last_error);
    free(r);
}
