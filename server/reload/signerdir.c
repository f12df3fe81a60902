/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/signerdir.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys/keydir_next.h"
#include "publish/publish.h"
#include "server/obs/metrics.h"
#include "server/reload/signer_etcd.h"
#include "util/log.h"
#include "util/clock.h"

/* A failed rotation step (a key that cannot be generated or saved) is
 * tried again this much later, not in a spin. */
#define SIGNERDIR_RETRY_MS 5000

/* A key of the directory as this process has published it. */
struct signerdir_seen {
    char kid[KEY_KID_LEN + 1];
    int64_t since_ms;  /* monotonic ms of the pass whose snapshot first held it; -1: not yet */
    int64_t credit_ms; /* publication before this process started, as the directory recorded it */
    EVP_PKEY *priv;    /* NULL until it loads */
};

struct signerdir {
    const struct config *cfg;
    const char *dir;
    struct rotation_policy policy;
    struct keydir *kd;
    int lockfd;        /* >= 0 while this process holds the lock and rotates */
    int64_t ticked_ms; /* the holder's last tick */
    int64_t saved_ms;  /* the holder's last save */
    int64_t rotate_due_ms, choose_due_ms;
    struct signerdir_seen *seen;
    size_t nseen;
    struct signer_state *current;
    char chosen[KEY_KID_LEN + 1]; /* the kid this process signed with last, "" for none */
    struct signer_etcd *etcd;     /* --etcd-servers: the directory is this node's copy of etcd's set */
    int etcd_rotating;            /* this process rotated at the last pass (etcd's lease, and the lock) */
};

/* ---- what this process has published ------------------------------------ */

static struct signerdir_seen *signerdir_seen_find(struct signerdir *sd, const char *kid)
{
    for (size_t i = 0; i < sd->nseen; i++)
        if (strcmp(sd->seen[i].kid, kid) == 0)
            return &sd->seen[i];
    return NULL;
}

/* Tracks the keys of the directory: new ones start unpublished, with
 * credit_ms of earlier publication; gone ones are forgotten. Loads the
 * private keys not loaded yet (a failure is logged and tried again next
 * pass: the key cannot sign meanwhile). */
static int signerdir_track(struct signerdir *sd, int64_t credit_from_dir)
{
    const struct keydir *kd = sd->kd;
    struct signerdir_seen *seen = calloc(kd->count ? kd->count : 1, sizeof(*seen));
    char err[1024];

    if (seen == NULL)
        return -1;
    for (size_t i = 0; i < kd->count; i++) {
        struct signerdir_seen *old = signerdir_seen_find(sd, kd->rot[i].kid), *s = &seen[i];
        if (old != NULL) {
            *s = *old;
            old->priv = NULL; /* moved */
        } else {
            memcpy(s->kid, kd->rot[i].kid, sizeof(s->kid));
            s->since_ms = -1;
            s->credit_ms = credit_from_dir >= 0 && kd->rot[i].published_ms > credit_from_dir
                               ? kd->rot[i].published_ms - credit_from_dir
                               : 0;
        }
        if (s->priv == NULL && (s->priv = keydir_load_private(sd->dir, s->kid, err, sizeof(err))) == NULL)
            log_once(LOG_ERROR, "%s: kid=%s cannot sign until its key file is restored", err, s->kid);
    }
    for (size_t i = 0; i < sd->nseen; i++)
        EVP_PKEY_free(sd->seen[i].priv);
    free(sd->seen);
    sd->seen = seen;
    sd->nseen = kd->count;
    return 0;
}

/* ---- rotating ----------------------------------------------------------- */

static void signerdir_release_lock(struct signerdir *sd)
{
    if (sd->lockfd >= 0)
        close(sd->lockfd);
    sd->lockfd = -1;
}

/* A holder that cannot write its decisions (err says why) must not act
 * on them alone: it gives up the lock and reads the directory again, as
 * any other process does. */
static void signerdir_give_up(struct signerdir *sd, const char *err)
{
    char rerr[1024];
    struct keydir *disk;

    log_msg(LOG_ERROR,
            "%s; giving up rotating the signing keys (another process may take over) and reading "
            "the directory as it is",
            err);
    signerdir_release_lock(sd);
    if (keydir_read(sd->dir, &disk, rerr, sizeof(rerr)) == 0) {
        keydir_free(sd->kd);
        sd->kd = disk;
    } else {
        keydir_free(disk);
    }
}

/* Saves rotation.json (the holder's ages, between rotation steps). 0, or
 * -1 (logged, and the lock given up). */
static int signerdir_save(struct signerdir *sd, int64_t now_ms)
{
    char err[1024];

    if (keydir_save(sd->dir, sd->kd, err, sizeof(err)) == 0) {
        sd->saved_ms = now_ms;
        return 0;
    }
    signerdir_give_up(sd, err);
    return -1;
}

/* Says what a rotation step did (keydir_next decided and wrote it). A
 * step that failed says only what happened before it failed. */
static void signerdir_log_step(const struct signerdir *sd, const struct keydir_step *step, int failed)
{
    char until[CLOCK_RFC3339_SIZE];

    if (step->discarded)
        log_msg(LOG_ERROR,
                "signing keys: next kid=%s has no usable key file; discarding it (it never signed) and "
                "making another",
                step->kid);
    if (failed)
        return;
    if (step->action == ROTATION_DROP) {
        if (step->warning[0] != '\0')
            log_msg(LOG_WARN, "%s", step->warning);
        log_msg(LOG_INFO,
                "signing keys: retired kid=%s dropped from the published set: every token it signed has "
                "expired (--max-token-lifetime, --token-leeway and --key-reload-interval have passed)",
                step->kid);
    } else if (step->action == ROTATION_PROMOTE && step->retired[0] == '\0') {
        log_msg(LOG_INFO, "signing keys: kid=%s promoted to signing", step->kid);
    } else if (step->action == ROTATION_PROMOTE) {
        clock_rfc3339(step->retired_until, until);
        log_msg(LOG_INFO,
                "signing keys: kid=%s promoted to signing (published for %llds); kid=%s retired, published "
                "until %s at the earliest",
                step->kid, (long long)step->published_s, step->retired, until);
    } else {
        log_msg(LOG_INFO,
                "signing keys: next kid=%s (%s) generated and published; it signs once it has been published "
                "for --publish-ahead plus --key-reload-interval (%lus) and the signing key has signed for "
                "--rotation-period (%lus)",
                step->kid, step->type, sd->cfg->publish_ahead + sd->cfg->key_reload_interval, sd->cfg->rotation_period);
    }
}

/* With etcd, what the rotator counts as published is what every live
 * signer publishes: a next key ages only while every one reports it (so
 * it signs only once all have published it for --publish-ahead), and a
 * retired key's wait starts again while any signs with it (it stays
 * published --max-token-lifetime after the last signature anywhere). */
static void signerdir_etcd_gate(struct signerdir *sd, int *in)
{
    struct keydir *kd = sd->kd;

    for (size_t i = 0; i < kd->count; i++) {
        struct rotation_key *r = &kd->rot[i];
        if (r->role == ROTATION_NEXT && in[i] && !signer_etcd_all_publish(sd->etcd, r->kid))
            in[i] = 0;
        else if (r->role == ROTATION_RETIRED && signer_etcd_any_signs(sd->etcd, r->kid))
            r->retired_ms = 0;
    }
}

/* Reports to etcd which of the directory's keys the snapshot snap
 * publishes and which one signs (chosen, or none). */
static void signerdir_etcd_report(struct signerdir *sd, const struct snapshot *snap, int chosen)
{
    const struct keydir *kd = sd->kd;
    char(*kids)[KEY_KID_LEN + 1] = calloc(kd->count ? kd->count : 1, sizeof(*kids));
    size_t n = 0;

    if (kids == NULL)
        return;
    for (size_t i = 0; i < kd->count; i++)
        if (keyset_find(snap->keyset, kd->rot[i].kid) != NULL)
            memcpy(kids[n++], kd->rot[i].kid, sizeof(kids[0]));
    signer_etcd_report(sd->etcd, (const char(*)[KEY_KID_LEN + 1]) kids, n, chosen >= 0 ? kd->rot[chosen].kid : "");
    free(kids);
}

/* The holder's share of a pass: keys/keydir_next decides and writes the
 * directory's next state in one call; this says what it did, gives up
 * the lock when rotation.json could not be written, and schedules the
 * next pass. */
static int signerdir_rotate(struct signerdir *sd, const struct keyset *published, time_t now, int64_t now_ms)
{
    struct keydir *kd = sd->kd;
    int *in = calloc(kd->count ? kd->count : 1, sizeof(*in)), failed;
    struct keydir_next next;
    size_t saved;

    for (size_t i = 0; in != NULL && published != NULL && i < kd->count; i++)
        in[i] = keyset_find(published, kd->rot[i].kid) != NULL;
    if (sd->etcd != NULL && in != NULL)
        signerdir_etcd_gate(sd, in);
    failed =
        keydir_next(sd->dir, kd, &sd->policy, in, now_ms - sd->ticked_ms, sd->cfg->signing_key_type, now, &next) != 0;
    free(in);
    sd->ticked_ms = now_ms;
    for (size_t i = 0; i < next.nsteps; i++)
        signerdir_log_step(sd, &next.steps[i], failed && i + 1 == next.nsteps);
    saved = next.nsteps - (failed ? 1 : 0);
    if (saved > 0)
        sd->saved_ms = now_ms;
    if (next.save_failed)
        signerdir_give_up(sd, next.err);
    else if (failed)
        log_msg(LOG_ERROR, "signing keys: cannot make the next key: %s", next.err);
    if (next.nsteps == 0 && now_ms - sd->saved_ms >= SIGNERDIR_SAVE_MS && signerdir_save(sd, now_ms) == 0)
        saved = 1;
    sd->rotate_due_ms = failed ? now_ms + SIGNERDIR_RETRY_MS : now_ms + next.due_in_ms;
    return saved > 0 && !next.save_failed;
}

/* A process without the lock takes it when it is free (the holder
 * stopped), reading the directory afresh: the time before counts for no
 * key. 1 when it holds the lock now, 0 when not, -1 (err). */
static int signerdir_try_lock(struct signerdir *sd, int64_t now_ms, char *err, size_t errlen)
{
    int got = keydir_lock(sd->dir, &sd->lockfd, err, errlen);

    if (got == 1) {
        sd->ticked_ms = sd->saved_ms = now_ms;
        log_msg(LOG_INFO, "signing keys: this process holds %s/%s and rotates the keys from now on", sd->dir,
                KEYDIR_LOCK_FILE);
    }
    return got;
}

/* Reads rotation.json into sd->kd; 0, or -1 (err). */
static int signerdir_reread(struct signerdir *sd, char *err, size_t errlen)
{
    struct keydir *disk = NULL;
    int rc = keydir_read(sd->dir, &disk, err, errlen);

    if (rc == 1)
        snprintf(err, errlen, "%s/%s is missing: restore it (or the whole directory) from a copy", sd->dir,
                 KEYDIR_STATE_FILE);
    if (rc != 0) {
        keydir_free(disk);
        return -1;
    }
    keydir_free(sd->kd);
    sd->kd = disk;
    return 0;
}

/* With etcd: writes the newest set the etcd thread read into the
 * directory, which the pass then reads. 1 when it did, 0 when there was
 * none, -1 (err). */
static int signerdir_follow_etcd(struct signerdir *sd, char *err, size_t errlen)
{
    struct keystore_set *set = signer_etcd_take(sd->etcd);
    int rc = 0;

    if (set == NULL)
        return 0;
    if (keystore_adopt(set, sd->dir, err, errlen) == 0) {
        signer_etcd_adopted(sd->etcd, set);
        rc = 1;
    } else {
        rc = -1;
    }
    keystore_set_free(set);
    free(set);
    return rc;
}

/* Whether this process rotates at this pass: it holds the directory's
 * lock and, with etcd, the rotator's lease. One that has just become the
 * rotator counts the keys' ages from now on, as one that has just taken
 * the lock does. */
static int signerdir_rotating(struct signerdir *sd, int64_t now_ms)
{
    int rotating = sd->lockfd >= 0 && (sd->etcd == NULL || signer_etcd_may_rotate(sd->etcd, now_ms));

    if (sd->etcd != NULL && rotating && !sd->etcd_rotating)
        sd->ticked_ms = sd->saved_ms = now_ms;
    sd->etcd_rotating = rotating;
    return rotating;
}

const struct keydir *signerdir_prepare(struct signerdir *sd, const struct keyset *published, time_t now, int64_t now_ms,
                                       char *err, size_t errlen)
{
    int held = sd->lockfd >= 0, adopted = 0;

    /* A key file or the directory opened to group or others since the
     * last pass fails this one before anything is read or rotated: the
     * last good state goes on serving and signing, and the reload error
     * names the file. */
    if (keydir_check_modes(sd->dir, err, errlen) != 0)
        return NULL;
    if (sd->etcd != NULL && (adopted = signerdir_follow_etcd(sd, err, errlen)) < 0)
        return NULL;
    /* Every process but the holder reads the directory; so does one that
     * has just become the holder, and one that has just taken etcd's set. */
    if (!held && (signerdir_try_lock(sd, now_ms, err, errlen) < 0 || signerdir_reread(sd, err, errlen) != 0))
        return NULL;
    if (held && adopted && signerdir_reread(sd, err, errlen) != 0)
        return NULL;
    if (signerdir_rotating(sd, now_ms) && signerdir_rotate(sd, published, now, now_ms) && sd->etcd != NULL)
        signer_etcd_push(sd->etcd, sd->kd);
    if (signerdir_track(sd, -1) != 0) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    atomic_store(&metrics_signer.lock_held, sd->etcd ? sd->etcd_rotating : sd->lockfd >= 0);
    return sd->kd;
}

/* ---- signing ------------------------------------------------------------ */

/* Says why no key may sign (for the caller of Sign and the log). */
static void signerdir_unavailable(const struct signerdir *sd, const int64_t *local_ms, char *why, size_t len)
{
    int s = rotation_find(sd->kd->rot, sd->kd->count, ROTATION_SIGNING);

    if (s < 0)
        snprintf(why, len, "%s holds no signing key", sd->dir);
    else if (sd->seen[s].priv == NULL)
        snprintf(why, len, "the key file of signing kid=%s cannot be read (see the log)", sd->kd->rot[s].kid);
    else
        snprintf(why, len,
                 "signing kid=%s has been published by this process for %llds of the %lus --publish-ahead "
                 "requires, and no retired key it published that long is left",
                 sd->kd->rot[s].kid, (long long)(local_ms[s] > 0 ? local_ms[s] / 1000 : 0), sd->cfg->publish_ahead);
}

/* Logs a change of the key this process signs with. */
static void signerdir_log_choice(struct signerdir *sd, int chosen, const int64_t *local_ms, const char *why)
{
    const struct keydir *kd = sd->kd;
    const char *kid = chosen >= 0 ? kd->rot[chosen].kid : "";
    int s = rotation_find(kd->rot, kd->count, ROTATION_SIGNING);

    if (strcmp(kid, sd->chosen) == 0)
        return;
    snprintf(sd->chosen, sizeof(sd->chosen), "%s", kid);
    if (chosen < 0)
        log_msg(LOG_ERROR, "signing keys: CANNOT SIGN: %s", why);
    else if (kd->rot[chosen].role == ROTATION_SIGNING)
        log_msg(LOG_INFO, "signing keys: signing with kid=%s", kid);
    else
        log_msg(LOG_WARN,
                "signing keys: signing with retired kid=%s: signing kid=%s has been published by this "
                "process for %llds, less than --publish-ahead (%lus); it takes over then",
                kid, kd->rot[s].kid, (long long)(local_ms[s] > 0 ? local_ms[s] / 1000 : 0), sd->cfg->publish_ahead);
}

/* The directory's keys as the signer state shows them. */
static struct signer_role *signerdir_roles(const struct signerdir *sd, time_t now)
{
    struct signer_role *roles = calloc(sd->kd->count ? sd->kd->count : 1, sizeof(*roles));

    for (size_t i = 0; roles != NULL && i < sd->kd->count; i++) {
        const struct rotation_key *r = &sd->kd->rot[i];
        memcpy(roles[i].kid, r->kid, sizeof(roles[i].kid));
        roles[i].role = r->role;
        roles[i].created = r->created;
        roles[i].published_at = r->published_at;
        roles[i].activated_at = r->activated_at;
        roles[i].retired_at = r->retired_at;
        roles[i].until = rotation_until(r, &sd->policy, now);
    }
    return roles;
}

/* With etcd, a rotation that cannot happen (etcd down, a set that does
 * not open) never stops the signing; but a signing key that has signed
 * for more than twice --rotation-period (by the wall clock: the copy's
 * ages stand still while nobody rotates) says so loudly, once per key. */
static void signerdir_warn_overdue(const struct signerdir *sd, time_t now)
{
    const struct keydir *kd = sd->kd;
    int s = rotation_find(kd->rot, kd->count, ROTATION_SIGNING);
    char why[512];

    if (sd->etcd == NULL || s < 0 || kd->rot[s].activated_at <= 0 ||
        now - kd->rot[s].activated_at <= 2 * (time_t)sd->cfg->rotation_period)
        return;
    signer_etcd_paused(sd->etcd, why, sizeof(why));
    log_once(LOG_ERROR,
             "signing keys: ROTATION OVERDUE: signing kid=%s has signed for %lld s, more than --rotation-period "
             "(%lus) past its rotation; signing goes on. %s%s",
             kd->rot[s].kid, (long long)(now - kd->rot[s].activated_at), sd->cfg->rotation_period,
             why[0] ? "Rotation is paused: " : "Is any signer rotating (oidc_signer_lock_held)?", why);
}

/* The schedule, for /metrics. */
static void signerdir_update_metrics(const struct signerdir *sd, int chosen, time_t now)
{
    const struct keydir *kd = sd->kd;
    int s = rotation_find(kd->rot, kd->count, ROTATION_SIGNING);
    uint64_t roles[3] = {0};

    for (size_t i = 0; i < kd->count; i++)
        roles[kd->rot[i].role]++;
    for (int r = 0; r < 3; r++)
        atomic_store(&metrics_signer.keys[r], roles[r]);
    atomic_store(&metrics_signer.next_rotation,
                 (long long)now + (rotation_promote_in(kd->rot, kd->count, &sd->policy) + 999) / 1000);
    atomic_store(&metrics_signer.signing_key_age, s >= 0 ? kd->rot[s].signing_ms / 1000 : 0);
    atomic_store(&metrics_signer.signing_fallback, chosen >= 0 && chosen != s);
}

/* Whether the trust of a trusted key (imported, or the first key of an
 * empty directory: it signs without waiting --publish-ahead) holds in the
 * snapshot this process publishes: no relying party can hold a key set
 * without it. So when another source publishes it too (a key file, which
 * comes first and so gives the entry its path, or the --upstream's set,
 * whose copy the directory's replaces), or when nothing but the
 * directory's keys is published. An imported key that the --upstream's
 * set lacks has never been published: it waits like any other. */
static int signerdir_vouched(const struct signerdir *sd, const struct snapshot *snap, const struct keyset *upstream,
                             const char *kid)
{
    const struct key *k = keyset_find(snap->keyset, kid);

    if ((k != NULL && k->path != NULL) || (upstream != NULL && keyset_find(upstream, kid) != NULL))
        return 1;
    for (size_t i = 0; i < snap->keyset->count; i++)
        if (keydir_find(sd->kd, snap->keyset->keys[i].kid) < 0)
            return 0;
    return 1;
}

struct signer_state *signerdir_state(struct signerdir *sd, const struct snapshot *snap, const struct keyset *upstream,
                                     time_t now, int64_t now_ms)
{
    const struct keydir *kd = sd->kd;
    int64_t *local = calloc(kd->count ? kd->count : 1, sizeof(*local)), due = -1;
    int *vouched = calloc(kd->count ? kd->count : 1, sizeof(*vouched));
    struct signer_state *st = NULL;
    char why[512] = "", err[256];
    int chosen;

    for (size_t i = 0; local != NULL && vouched != NULL && i < kd->count; i++) {
        struct signerdir_seen *seen = &sd->seen[i];
        int in = keyset_find(snap->keyset, seen->kid) != NULL;
        if (in && seen->since_ms < 0)
            seen->since_ms = now_ms;
        local[i] = in && seen->priv != NULL ? seen->credit_ms + now_ms - seen->since_ms : -1;
        vouched[i] = kd->rot[i].trusted && signerdir_vouched(sd, snap, upstream, seen->kid);
    }
    if (vouched == NULL) {
        free(local);
        local = NULL;
    }
    chosen = local ? rotation_choose(kd->rot, kd->count, local, vouched, sd->policy.ahead_ms, &due) : -1;
    sd->choose_due_ms = due >= 0 ? now_ms + due : 0;
    if (chosen < 0 && local != NULL)
        signerdir_unavailable(sd, local, why, sizeof(why));
    if (sd->etcd != NULL)
        signerdir_etcd_report(sd, snap, chosen);
    struct signer_role *roles = signerdir_roles(sd, now);
    const struct signer_params p = {
        .published = snap->keyset,
        .keys_changed = snap->loaded_at,
        .priv = chosen >= 0 ? sd->seen[chosen].priv : NULL,
        .kid = chosen >= 0 ? kd->rot[chosen].kid : "",
        .unavailable = local ? why : "out of memory",
        .next_change = now + (rotation_due_in(kd->rot, kd->count, &sd->policy) + 999) / 1000,
        .max_token_expiration = (int64_t)sd->cfg->max_token_lifetime,
        .roles = roles,
        .nroles = roles ? kd->count : 0,
    };

    if (local != NULL && roles != NULL && (st = signer_state_new(&p, err, sizeof(err))) == NULL)
        log_msg(LOG_ERROR, "signing keys: %s", err);
    if (st != NULL) {
        signerdir_log_choice(sd, chosen, local, why);
        signerdir_update_metrics(sd, chosen, now);
        signerdir_warn_overdue(sd, now);
    }
    free(local);
    free(vouched);
    free(roles);
    if (st != NULL && sd->current != NULL && signer_state_same(st, sd->current)) {
        signer_state_release(st);
        return NULL;
    }
    if (st != NULL) {
        signer_state_release(sd->current);
        sd->current = st;
    }
    return st;
}

struct signer_state *signerdir_current(const struct signerdir *sd)
{
    return sd->current;
}

void signerdir_role(const struct signerdir *sd, const char *kid, time_t now, struct keydir_role *out)
{
    size_t n;

    keydir_role_of(sd->kd, kid, &sd->policy, now, out);
    if (sd->etcd != NULL && out->name != NULL && (n = strlen(out->text)) + 16 < sizeof(out->text))
        snprintf(out->text + n, sizeof(out->text) - n, " (%s)", signer_etcd_source(sd->etcd, kid));
}

void signerdir_paused(const struct signerdir *sd, char *why, size_t len)
{
    if (sd->etcd != NULL)
        signer_etcd_paused(sd->etcd, why, len);
    else if (len > 0)
        why[0] = '\0';
}

int signerdir_start_etcd(struct signerdir *sd, void (*wake)(void *), void *wake_ctx, char *err, size_t errlen)
{
    return sd->etcd != NULL ? signer_etcd_start(sd->etcd, wake, wake_ctx, err, errlen) : 0;
}

int64_t signerdir_due(const struct signerdir *sd)
{
    if (sd->etcd != NULL && signer_etcd_pending(sd->etcd))
        return 1; /* a set from etcd waits: now */
    int64_t a = sd->etcd_rotating || (sd->etcd == NULL && sd->lockfd >= 0) ? sd->rotate_due_ms : 0,
            b = sd->choose_due_ms;

    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

/* ---- start and exit ----------------------------------------------------- */

/* The first key of an empty directory, made by the process holding its
 * lock (see signerdir_create). */
static int signerdir_first_key(struct signerdir *sd, int others_published, time_t now, int64_t now_ms, char *err,
                               size_t errlen)
{
    const struct config *cfg = sd->cfg;
    int i;

    if (cfg->signing_key_import != NULL)
        i = keydir_import(sd->dir, sd->kd, cfg->signing_key_import, now, err, errlen);
    else if (others_published) {
        snprintf(err, errlen,
                 "%s holds no keys, and other keys are published (--service-account-key-file, or retained in "
                 "--state-dir): a key made now could sign only after --publish-ahead, so tokens could not be "
                 "issued until then. Give the API server's current signing key (sa.key) as --signing-key-import "
                 "to start signing with it",
                 sd->dir);
        return -1;
    } else
        i = keydir_generate(sd->dir, sd->kd, cfg->signing_key_type, ROTATION_SIGNING, 1, now, err, errlen);
    if (i < 0)
        return -1;
    if (keydir_save(sd->dir, sd->kd, err, errlen) != 0)
        return -1;
    sd->saved_ms = now_ms;
    log_msg(LOG_INFO, "signing keys: %s kid=%s (%s) is the first signing key of %s",
            cfg->signing_key_import ? "imported" : "generated", sd->kd->rot[i].kid, sd->kd->pub[i].type, sd->dir);
    return 0;
}

/* Waits for the process holding the lock of an empty directory to make the
 * first key, or for the lock to come free (then makes it itself). */
static int signerdir_wait_first(struct signerdir *sd, int others_published, time_t now, int64_t now_ms, char *err,
                                size_t errlen)
{
    for (int waited = 0; waited < SIGNERDIR_START_WAIT_MS; waited += 100) {
        int got = signerdir_try_lock(sd, now_ms, err, errlen), rc;
        if (got < 0)
            return -1;
        keydir_free(sd->kd);
        sd->kd = NULL;
        if ((rc = keydir_read(sd->dir, &sd->kd, err, errlen)) < 0)
            return -1;
        if (rc == 0)
            return 0;
        if (got == 1)
            return signerdir_first_key(sd, others_published, now, now_ms, err, errlen);
        usleep(100 * 1000);
    }
    snprintf(err, errlen,
             "%s holds no keys yet and another process holds its lock (%s) without making the first key; is it "
             "stuck?",
             sd->dir, KEYDIR_LOCK_FILE);
    return -1;
}

/* The start of the local record: keys already in the directory count as
 * published by this process for as long as the directory says, less what
 * this process may have served without them before it stopped (it
 * re-reads the directory at least every --key-reload-interval). */
static int signerdir_start_tracking(struct signerdir *sd, char *err, size_t errlen)
{
    int s = rotation_find(sd->kd->rot, sd->kd->count, ROTATION_SIGNING);
    struct signerdir_seen *seen;

    if (signerdir_track(sd, (int64_t)sd->cfg->key_reload_interval * 1000) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    seen = s >= 0 ? signerdir_seen_find(sd, sd->kd->rot[s].kid) : NULL;
    if (seen != NULL && seen->priv == NULL)
        return keydir_load_private(sd->dir, seen->kid, err, errlen) != NULL ? 0 : -1; /* the reason, into err */
    return 0;
}

/* The directory holds private keys and files of its own: it must be
 * neither a key-file directory (its keys would be read as key files) nor
 * the state directory. 0, or -1 (err). */
static int signerdir_check_apart(const struct config *cfg, char *err, size_t errlen)
{
    char mine[PATH_MAX], other[PATH_MAX];

    if (realpath(cfg->signing_key_dir, mine) == NULL)
        return 0;
    for (size_t i = 0; i <= cfg->key_files.count; i++) {
        const char *path = i < cfg->key_files.count ? cfg->key_files.items[i] : cfg->state_dir;
        if (path != NULL && realpath(path, other) != NULL && strcmp(mine, other) == 0) {
            snprintf(err, errlen, "%s is also %s; give the signing keys a directory of their own", cfg->signing_key_dir,
                     i < cfg->key_files.count ? "a --service-account-key-file" : "the --state-dir");
            return -1;
        }
    }
    return 0;
}

struct signerdir *signerdir_create(const struct config *cfg, int others_published, time_t now, int64_t now_ms,
                                   char *err, size_t errlen)
{
    struct signerdir *sd = calloc(1, sizeof(*sd));
    char why[512];
    int fd, rc = -1;

    if (sd == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    sd->cfg = cfg;
    sd->dir = cfg->signing_key_dir;
    sd->policy = publish_rotation_policy(cfg);
    sd->lockfd = -1;
    sd->ticked_ms = sd->saved_ms = now_ms;
    if (cfg->etcd_servers.count > 0 && (sd->etcd = signer_etcd_join(cfg, err, errlen)) == NULL) {
        signerdir_free(sd);
        return NULL;
    }
    if ((fd = keydir_open(sd->dir, 1, err, errlen)) >= 0 && signerdir_check_apart(cfg, err, errlen) == 0 &&
        keydir_check_modes(sd->dir, err, errlen) == 0) {
        rc = keydir_lock(sd->dir, &sd->lockfd, err, errlen) < 0 ? -1 : keydir_read(sd->dir, &sd->kd, err, errlen);
    }
    if (fd >= 0)
        close(fd);
    if (rc == 1 && sd->etcd != NULL && !signer_etcd_joined(sd->etcd)) {
        signer_etcd_paused(sd->etcd, why, sizeof(why));
        snprintf(err, errlen,
                 "%s holds no keys, and etcd could not be read (%s): a key made now would be this node's alone, "
                 "and the other signers' tokens would not verify here. Start it once etcd answers",
                 sd->dir, why);
        rc = -1;
    }
    if (rc == 1 && sd->lockfd >= 0)
        rc = signerdir_first_key(sd, others_published, now, now_ms, err, errlen);
    else if (rc == 1)
        rc = signerdir_wait_first(sd, others_published, now, now_ms, err, errlen);
    else if (rc == 0 && cfg->signing_key_import != NULL)
        log_msg(LOG_INFO, "--signing-key-import %s ignored: %s holds keys already", cfg->signing_key_import, sd->dir);
    if (rc != 0 || signerdir_start_tracking(sd, err, errlen) != 0) {
        signerdir_free(sd);
        return NULL;
    }
    keydir_report_foreign(sd->dir, sd->kd, publish_log_warning, NULL);
    atomic_store(&metrics_signer.enabled, 1);
    atomic_store(&metrics_signer.lock_held, sd->lockfd >= 0);
    if (sd->lockfd < 0)
        log_msg(LOG_INFO,
                "signing keys: another process holds %s/%s and rotates the keys; this one publishes and "
                "signs with what %s says",
                sd->dir, KEYDIR_LOCK_FILE, KEYDIR_STATE_FILE);
    if (sd->etcd != NULL)
        atomic_store(&metrics_signer.lock_held, 0);
    return sd;
}

void signerdir_save_at_exit(struct signerdir *sd, const struct keyset *published, time_t now, int64_t now_ms)
{
    struct keydir *kd = sd->kd;
    int *in;

    if (sd->lockfd < 0 || (sd->etcd != NULL && !signer_etcd_may_rotate(sd->etcd, now_ms)) ||
        (in = calloc(kd->count ? kd->count : 1, sizeof(*in))) == NULL)
        return;
    for (size_t i = 0; published != NULL && i < kd->count; i++)
        in[i] = keyset_find(published, kd->rot[i].kid) != NULL;
    rotation_tick(kd->rot, kd->count, in, now_ms - sd->ticked_ms, &sd->policy, now);
    sd->ticked_ms = now_ms;
    free(in);
    if (signerdir_save(sd, now_ms) == 0 && sd->etcd != NULL)
        signer_etcd_push(sd->etcd, sd->kd);
}

void signerdir_free(struct signerdir *sd)
{
    if (sd == NULL)
        return;
    signer_etcd_free(sd->etcd);
    signerdir_release_lock(sd);
    for (size_t i = 0; i < sd->nseen; i++)
        EVP_PKEY_free(sd->seen[i].priv);
    free(sd->seen);
    keydir_free(sd->kd);
    signer_state_release(sd->current);
    free(sd);
}
