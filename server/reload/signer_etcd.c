/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/signer_etcd.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "publish/publish.h"
#include "server/obs/metrics.h"
#include "util/clock.h"
#include "util/log.h"

struct signer_etcd {
    const struct config *cfg;
    const char *servers[ETCD_SERVERS_MAX];
    struct etcd_config ecfg;
    struct etcd *etcd;
    struct seal_key key;
    struct keystore ks;
    int empty_at_join; /* etcd held no set at the join: this signer uploads its own */

    pthread_t thread;
    int started;
    atomic_int stop;
    atomic_int interrupt; /* cancels the call in flight: the stop, or a report to write */
    atomic_int watching;  /* the thread waits in a watch (a report may interrupt it) */
    void (*wake)(void *);
    void *wake_ctx;

    /* The thread's and the reload thread's meeting point. */
    pthread_mutex_t mu;
    struct keystore_set *pending; /* read, not yet adopted */
    char paused[512];             /* why nothing rotates, "" when it may */
    char (*etcd_kids)[KEY_KID_LEN + 1];
    size_t netcd_kids;
    struct keystore_node *nodes; /* the live signers' reports, as of the last read */
    size_t nnodes;
    char (*report)[KEY_KID_LEN + 1]; /* this signer's report: the directory's kids it publishes */
    size_t nreport;
    char report_signing[KEY_KID_LEN + 1];
    atomic_int report_dirty; /* to be written */

    atomic_int_fast64_t seen_rev; /* the newest rotation_rev handed over or written */
    atomic_int holder;            /* this signer holds the rotator's lease */
    atomic_int_fast64_t holder_until_ms;
    atomic_int_fast64_t last_read_ms;
    atomic_int reachable;

    /* The base of the next write, under write_mu: the reload thread's
     * (adoptions, the rotator's writes), and the thread's when it uploads
     * into an emptied prefix. */
    pthread_mutex_t write_mu;
    struct keydir *known; /* etcd's set as of base_rev: which keys it holds */
    int64_t base_rev;
};

/* ---- shared state ---------------------------------------------------------- */

static void signer_etcd_set_paused(struct signer_etcd *se, const char *why)
{
    int changed;

    pthread_mutex_lock(&se->mu);
    changed = strcmp(se->paused, why) != 0;
    snprintf(se->paused, sizeof(se->paused), "%s", why);
    pthread_mutex_unlock(&se->mu);
    if (changed && why[0] != '\0')
        log_msg(LOG_WARN, "signing keys: rotation paused, signing goes on with this node's copy: %s", why);
    else if (changed)
        log_msg(LOG_INFO, "signing keys: etcd answers again; rotation resumes");
}

void signer_etcd_paused(struct signer_etcd *se, char *why, size_t len)
{
    pthread_mutex_lock(&se->mu);
    snprintf(why, len, "%s", se->paused);
    pthread_mutex_unlock(&se->mu);
}

/* Remembers which kids etcd's last read set holds (for signer_etcd_source). */
static void signer_etcd_note_kids(struct signer_etcd *se, const struct keydir *kd)
{
    char(*kids)[KEY_KID_LEN + 1] = calloc(kd->count ? kd->count : 1, sizeof(*kids));

    if (kids == NULL)
        return;
    for (size_t i = 0; i < kd->count; i++)
        memcpy(kids[i], kd->rot[i].kid, sizeof(kids[i]));
    pthread_mutex_lock(&se->mu);
    free(se->etcd_kids);
    se->etcd_kids = kids;
    se->netcd_kids = kd->count;
    pthread_mutex_unlock(&se->mu);
}

const char *signer_etcd_source(struct signer_etcd *se, const char *kid)
{
    const char *source = "local copy";

    pthread_mutex_lock(&se->mu);
    for (size_t i = 0; i < se->netcd_kids; i++)
        if (strcmp(se->etcd_kids[i], kid) == 0)
            source = "etcd";
    pthread_mutex_unlock(&se->mu);
    return source;
}

/* ---- the join ----------------------------------------------------------- */

/* The client's configuration from the flags. */
static int signer_etcd_configure(struct signer_etcd *se, char *err, size_t errlen)
{
    const struct config *cfg = se->cfg;

    if (cfg->etcd_servers.count > ETCD_SERVERS_MAX) {
        snprintf(err, errlen, "--etcd-servers: more than %d URLs", ETCD_SERVERS_MAX);
        return -1;
    }
    for (size_t i = 0; i < cfg->etcd_servers.count; i++)
        se->servers[i] = cfg->etcd_servers.items[i];
    se->ecfg = (struct etcd_config){.servers = se->servers,
                                    .nservers = cfg->etcd_servers.count,
                                    .ca_file = cfg->etcd_cafile,
                                    .cert_file = cfg->etcd_certfile,
                                    .key_file = cfg->etcd_keyfile,
                                    .cancel = &se->interrupt};
    if ((se->etcd = etcd_new(&se->ecfg)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    keystore_init(&se->ks, se->etcd, cfg->etcd_prefix, &se->key);
    return 0;
}

/* Writes etcd's set into the directory, saying so when it replaces what
 * the directory held (a node that joins a cluster of signers). */
static int signer_etcd_adopt(struct signer_etcd *se, const struct keystore_set *set, int at_start, char *err,
                             size_t errlen)
{
    const char *dir = se->cfg->signing_key_dir;
    struct keydir *local = NULL;
    char why[256];
    int differs = 0;

    if (keydir_read(dir, &local, why, sizeof(why)) == 0) {
        differs = local->count != set->kd->count;
        for (size_t i = 0; !differs && i < local->count; i++)
            differs = strcmp(local->rot[i].kid, set->kd->rot[i].kid) != 0 || local->rot[i].role != set->kd->rot[i].role;
    } else {
        differs = set->kd->count > 0;
    }
    if (keystore_adopt(set, dir, err, errlen) != 0) {
        keydir_free(local);
        return -1;
    }
    if (at_start && local != NULL && local->count > 0 && differs)
        log_msg(LOG_WARN,
                "signing keys: %s's keys differ from etcd's (%s, revision %lld): taking etcd's set (%zu keys); "
                "the keys only this directory held are no longer published",
                dir, se->cfg->etcd_prefix, (long long)set->rotation_rev, set->kd->count);
    else if (differs)
        log_msg(LOG_INFO, "signing keys: took etcd's key set (%zu keys, revision %lld) into %s", set->kd->count,
                (long long)set->rotation_rev, dir);
    keydir_free(local);
    signer_etcd_note_kids(se, set->kd);
    return 0;
}

/* signer_etcd_adopted, write_mu held. */
static void signer_etcd_adopted_locked(struct signer_etcd *se, const struct keystore_set *set)
{
    keydir_free(se->known);
    se->known = NULL;
    if (set->kd != NULL) {
        char *text = NULL, err[256];
        size_t len = 0;
        if (keydir_render_text(set->kd, &text, &len) == 0)
            keydir_parse_text("etcd", text, len, &se->known, err, sizeof(err));
        free(text);
    }
    se->base_rev = set->rotation_rev;
}

void signer_etcd_adopted(struct signer_etcd *se, const struct keystore_set *set)
{
    pthread_mutex_lock(&se->write_mu);
    signer_etcd_adopted_locked(se, set);
    pthread_mutex_unlock(&se->write_mu);
}

int signer_etcd_joined(const struct signer_etcd *se)
{
    return atomic_load(&se->reachable);
}

struct signer_etcd *signer_etcd_join(const struct config *cfg, char *err, size_t errlen)
{
    struct signer_etcd *se = calloc(1, sizeof(*se));
    struct keystore_set set = {0};
    char why[1024];
    int fd;
    enum etcd_rc rc;

    if (se == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    se->cfg = cfg;
    pthread_mutex_init(&se->mu, NULL);
    pthread_mutex_init(&se->write_mu, NULL);
    if (seal_key_read("signing-key-encryption-key-file", cfg->signing_key_encryption_key_file, &se->key, err, errlen) !=
            0 ||
        signer_etcd_configure(se, err, errlen) != 0)
        goto fail;
    if ((fd = keydir_open(cfg->signing_key_dir, 1, err, errlen)) < 0)
        goto fail;
    close(fd);
    rc = keystore_read(&se->ks, &set, publish_log_warning, NULL, why, sizeof(why));
    if (rc == ETCD_BAD_ANSWER) {
        snprintf(err, errlen, "etcd (--etcd-servers): %s", why);
        goto fail;
    }
    if (rc != ETCD_OK) {
        /* Down, or the certificates refused: this node starts from its
         * copy, and says why nothing will rotate. */
        signer_etcd_set_paused(se, why);
        atomic_store(&se->reachable, 0);
        return se;
    }
    atomic_store(&se->reachable, 1);
    atomic_store(&se->last_read_ms, clock_wall_ms());
    if (set.kd == NULL) {
        se->empty_at_join = 1;
    } else {
        if (signer_etcd_adopt(se, &set, 1, err, errlen) != 0)
            goto fail;
        signer_etcd_adopted(se, &set);
        atomic_store(&se->seen_rev, set.rotation_rev);
    }
    keystore_set_free(&set);
    return se;

fail:
    keystore_set_free(&set);
    signer_etcd_free(se);
    return NULL;
}

/* Uploads the directory as the first set of the prefix: 1 written, 0
 * another signer was first (its set is adopted), -1 (err). */
static int signer_etcd_upload(struct signer_etcd *se, char *err, size_t errlen)
{
    const char *dir = se->cfg->signing_key_dir;
    struct keystore_set set = {0};
    struct keydir *local = NULL;
    int written = 0, rc = -1;
    int64_t rev = 0;

    pthread_mutex_lock(&se->write_mu);
    if (keydir_read(dir, &local, err, errlen) != 0)
        goto out;
    if (keystore_write(&se->ks, dir, local, NULL, 0, &written, &rev, err, errlen) != ETCD_OK)
        goto out;
    if (written) {
        log_msg(LOG_INFO,
                "signing keys: etcd held no key set under %s: uploaded %s's %zu keys (sealed); the other signers "
                "take them from there",
                se->cfg->etcd_prefix, dir, local->count);
        /* the base of the next write: what was just written */
        struct keystore_set mine = {.kd = local, .rotation_rev = rev};
        signer_etcd_adopted_locked(se, &mine);
        signer_etcd_note_kids(se, local);
        atomic_store(&se->seen_rev, rev);
        rc = 1;
        goto out;
    }
    if (keystore_read(&se->ks, &set, publish_log_warning, NULL, err, errlen) != ETCD_OK || set.kd == NULL)
        goto out;
    if (signer_etcd_adopt(se, &set, 1, err, errlen) == 0) {
        signer_etcd_adopted_locked(se, &set);
        atomic_store(&se->seen_rev, set.rotation_rev);
        rc = 0;
    }
out:
    pthread_mutex_unlock(&se->write_mu);
    keystore_set_free(&set);
    keydir_free(local);
    return rc;
}

/* ---- the thread ------------------------------------------------------------ */

/* Sleeps ms, or less when asked to stop. */
static void signer_etcd_nap(struct signer_etcd *se, long ms)
{
    for (long slept = 0; slept < ms && !atomic_load(&se->stop); slept += 50)
        usleep(50 * 1000);
}

/* etcd_watch's callback: any change ends the watch, to be read at once. */
static int signer_etcd_on_events(void *ctx, const struct etcd_event *ev, size_t n, int64_t revision)
{
    struct signer_etcd *se = ctx;

    (void)ev, (void)revision;
    return n > 0 || atomic_load(&se->stop);
}

/* Keeps this signer's lease (its report, and P rotator when it rotates)
 * and campaigns for the rotator's place when nobody holds it, as of the
 * set just read. */
static void signer_etcd_lease(struct signer_etcd *se, const struct keystore_set *set, int64_t *renewed_ms)
{
    int64_t ttl_ms = (int64_t)se->cfg->etcd_lease_ttl * 1000, t0 = clock_now_ms();
    char err[1024];
    int got = 0;

    if (se->ks.lease != 0 && t0 - *renewed_ms >= ttl_ms / 3) {
        if (keystore_keepalive(&se->ks, &got, err, sizeof(err)) != ETCD_OK) {
            log_once(LOG_WARN, "signing keys: cannot renew this signer's etcd lease: %s", err);
            return; /* the rotator's place runs out at holder_until_ms */
        }
        if (!got) {
            atomic_store(&se->report_dirty, 1);
            if (atomic_exchange(&se->holder, 0))
                log_msg(LOG_WARN, "signing keys: the rotator's lease expired; another signer may rotate now");
        } else {
            *renewed_ms = t0;
            atomic_store(&se->holder_until_ms, t0 + ttl_ms - 1000);
            /* etcd kept the lease through an outage (a new leader renews
             * every lease): P rotator under it is still this signer's */
            if (strcmp(set->rotator, se->ks.id) == 0 && !atomic_exchange(&se->holder, 1))
                log_msg(LOG_INFO, "signing keys: this signer still holds %s%s and rotates the keys again",
                        se->cfg->etcd_prefix, KEYSTORE_ROTATOR);
        }
    }
    if (se->ks.lease == 0) {
        if (keystore_lease(&se->ks, (int64_t)se->cfg->etcd_lease_ttl, err, sizeof(err)) != ETCD_OK) {
            log_once(LOG_WARN, "signing keys: cannot take an etcd lease: %s", err);
            return;
        }
        *renewed_ms = t0;
        atomic_store(&se->report_dirty, 1);
    }
    if (atomic_load(&se->holder) || set->rotator[0] != '\0' || set->kd == NULL)
        return;
    if (keystore_campaign(&se->ks, (int64_t)se->cfg->etcd_lease_ttl, &got, err, sizeof(err)) != ETCD_OK) {
        log_once(LOG_WARN, "signing keys: cannot campaign for the rotator's lease: %s", err);
        return;
    }
    if (!got)
        return;
    atomic_store(&se->holder_until_ms, *renewed_ms + ttl_ms - 1000);
    atomic_store(&se->holder, 1);
    log_msg(LOG_INFO, "signing keys: this signer (%s) holds %s%s and rotates the keys from now on", se->ks.id,
            se->cfg->etcd_prefix, KEYSTORE_ROTATOR);
}

/* Writes this signer's report when it changed (or its lease is new). */
static void signer_etcd_write_report(struct signer_etcd *se)
{
    char(*kids)[KEY_KID_LEN + 1] = NULL, signing[KEY_KID_LEN + 1], err[1024];
    size_t n;

    if (se->ks.lease == 0 || !atomic_exchange(&se->report_dirty, 0))
        return;
    pthread_mutex_lock(&se->mu);
    n = se->nreport;
    if (n > 0 && (kids = malloc(n * sizeof(*kids))) != NULL)
        memcpy(kids, se->report, n * sizeof(*kids));
    memcpy(signing, se->report_signing, sizeof(signing));
    pthread_mutex_unlock(&se->mu);
    if (keystore_report(&se->ks, (const char(*)[KEY_KID_LEN + 1]) kids, kids ? n : 0, signing, err, sizeof(err)) !=
        ETCD_OK) {
        atomic_store(&se->report_dirty, 1);
        log_once(LOG_WARN, "signing keys: cannot report to etcd what this signer publishes: %s", err);
    }
    free(kids);
}

/* Keeps the live signers' reports of the set just read. */
static void signer_etcd_note_nodes(struct signer_etcd *se, struct keystore_set *set)
{
    pthread_mutex_lock(&se->mu);
    for (size_t i = 0; i < se->nnodes; i++)
        free(se->nodes[i].published);
    free(se->nodes);
    se->nodes = set->nodes;
    se->nnodes = set->nnodes;
    set->nodes = NULL;
    set->nnodes = 0;
    pthread_mutex_unlock(&se->mu);
}

void signer_etcd_report(struct signer_etcd *se, const char (*kids)[KEY_KID_LEN + 1], size_t n, const char *signing)
{
    char(*copy)[KEY_KID_LEN + 1] = calloc(n ? n : 1, sizeof(*copy));
    int changed;

    if (copy == NULL)
        return;
    memcpy(copy, kids, n * sizeof(*copy));
    pthread_mutex_lock(&se->mu);
    changed = n != se->nreport || memcmp(copy, se->report, n * sizeof(*copy)) != 0 ||
              strcmp(signing, se->report_signing) != 0;
    if (changed) {
        free(se->report);
        se->report = copy;
        se->nreport = n;
        snprintf(se->report_signing, sizeof(se->report_signing), "%s", signing);
        copy = NULL;
    }
    pthread_mutex_unlock(&se->mu);
    free(copy);
    if (changed) {
        atomic_store(&se->report_dirty, 1);
        if (atomic_load(&se->watching))
            atomic_store(&se->interrupt, 1); /* ends the watch: written at once */
    }
}

/* Whether node publishes kid. */
static int signer_etcd_node_has(const struct keystore_node *node, const char *kid)
{
    for (size_t i = 0; i < node->npublished; i++)
        if (strcmp(node->published[i], kid) == 0)
            return 1;
    return 0;
}

int signer_etcd_all_publish(struct signer_etcd *se, const char *kid)
{
    int all = 0;

    pthread_mutex_lock(&se->mu);
    for (size_t i = 0; i < se->nnodes; i++) {
        if (!signer_etcd_node_has(&se->nodes[i], kid)) {
            all = 0;
            break;
        }
        all |= strcmp(se->nodes[i].id, se->ks.node) == 0 ? 1 : 0;
    }
    pthread_mutex_unlock(&se->mu);
    return all; /* every live signer, this one among them */
}

int signer_etcd_any_signs(struct signer_etcd *se, const char *kid)
{
    int any = 0;

    pthread_mutex_lock(&se->mu);
    for (size_t i = 0; i < se->nnodes && !any; i++)
        any = strcmp(se->nodes[i].signing, kid) == 0;
    pthread_mutex_unlock(&se->mu);
    return any;
}

/* Hands a new set to the reload thread. Takes set. */
static void signer_etcd_hand_over(struct signer_etcd *se, struct keystore_set *set)
{
    struct keystore_set *copy = malloc(sizeof(*copy));

    if (copy == NULL) {
        keystore_set_free(set);
        return;
    }
    *copy = *set;
    memset(set, 0, sizeof(*set));
    atomic_store(&se->seen_rev, copy->rotation_rev);
    pthread_mutex_lock(&se->mu);
    if (se->pending != NULL) {
        keystore_set_free(se->pending);
        free(se->pending);
    }
    se->pending = copy;
    pthread_mutex_unlock(&se->mu);
    if (se->wake != NULL)
        se->wake(se->wake_ctx);
}

/* One read of the prefix and what follows from it. The revision read, -1
 * when etcd did not answer, -2 when the read was interrupted. */
static int64_t signer_etcd_read(struct signer_etcd *se, int64_t *renewed_ms)
{
    struct keystore_set set = {0};
    char err[1024];
    enum etcd_rc rc = keystore_read(&se->ks, &set, publish_log_warning, NULL, err, sizeof(err));
    int64_t rev;

    if (rc == ETCD_CANCELLED)
        return -2; /* a report to write came in: again, at once */
    if (rc != ETCD_OK) {
        atomic_store(&se->reachable, 0);
        atomic_store(&metrics_signer.store_reachable, 0);
        signer_etcd_set_paused(se, err);
        if (atomic_load(&se->holder) && clock_now_ms() >= atomic_load(&se->holder_until_ms)) {
            atomic_store(&se->holder, 0);
            log_msg(LOG_WARN, "signing keys: the rotator's lease may have expired while etcd did not answer; "
                              "this signer stops rotating");
        }
        return -1;
    }
    atomic_store(&se->reachable, 1);
    atomic_store(&metrics_signer.store_reachable, 1);
    atomic_store(&se->last_read_ms, clock_wall_ms());
    atomic_store(&metrics_signer.store_last_read, clock_wall_ms() / 1000);
    signer_etcd_set_paused(se, "");
    rev = set.revision;
    if (set.kd == NULL && signer_etcd_upload(se, err, sizeof(err)) < 0)
        log_once(LOG_ERROR, "signing keys: etcd holds no key set, and this signer cannot upload its own: %s", err);
    signer_etcd_lease(se, &set, renewed_ms);
    signer_etcd_write_report(se);
    signer_etcd_note_nodes(se, &set);
    if (set.kd != NULL) {
        signer_etcd_note_kids(se, set.kd);
        if (set.rotation_rev != atomic_load(&se->seen_rev)) {
            signer_etcd_hand_over(se, &set);
            return rev;
        }
    }
    keystore_set_free(&set);
    return rev;
}

static void *signer_etcd_main(void *arg)
{
    struct signer_etcd *se = arg;
    long backoff = SIGNER_ETCD_BACKOFF_MS, watch_ms = (long)se->cfg->etcd_lease_ttl * 1000 / 3;
    int64_t renewed_ms = 0;
    char err[1024];

    while (!atomic_load(&se->stop)) {
        int64_t rev;
        enum etcd_rc rc;

        atomic_store(&se->interrupt, atomic_load(&se->stop));
        if ((rev = signer_etcd_read(se, &renewed_ms)) == -2)
            continue;
        if (rev < 0) {
            signer_etcd_nap(se, backoff);
            backoff = backoff * 2 > SIGNER_ETCD_BACKOFF_MAX_MS ? SIGNER_ETCD_BACKOFF_MAX_MS : backoff * 2;
            continue;
        }
        backoff = SIGNER_ETCD_BACKOFF_MS;
        /* A change ends the watch early (it is read at once), and so does
         * a report to write; a quiet watch ends at a third of the lease,
         * for the lease's renewal and a read that tells a member without
         * quorum. */
        atomic_store(&se->watching, 1);
        rc = atomic_load(&se->report_dirty) ? ETCD_CANCELLED
                                            : etcd_watch(se->etcd, se->cfg->etcd_prefix, rev + 1, watch_ms,
                                                         signer_etcd_on_events, se, err, sizeof(err));
        atomic_store(&se->watching, 0);
        if (rc != ETCD_OK && rc != ETCD_CANCELLED && rc != ETCD_COMPACTED) {
            log_once(LOG_WARN, "signing keys: etcd watch: %s; reading again", err);
            signer_etcd_nap(se, backoff);
        }
    }
    return NULL;
}

int signer_etcd_start(struct signer_etcd *se, void (*wake)(void *), void *wake_ctx, char *err, size_t errlen)
{
    se->wake = wake;
    se->wake_ctx = wake_ctx;
    if (se->empty_at_join && signer_etcd_upload(se, err, errlen) < 0)
        log_msg(LOG_ERROR, "signing keys: cannot upload %s to etcd: %s; trying again from the etcd thread",
                se->cfg->signing_key_dir, err);
    atomic_store(&metrics_signer.store_enabled, 1);
    atomic_store(&metrics_signer.store_reachable, atomic_load(&se->reachable));
    atomic_store(&metrics_signer.store_last_read, atomic_load(&se->last_read_ms) / 1000);
    if (pthread_create(&se->thread, NULL, signer_etcd_main, se) != 0) {
        snprintf(err, errlen, "cannot start the etcd thread");
        return -1;
    }
    se->started = 1;
    return 0;
}

struct keystore_set *signer_etcd_take(struct signer_etcd *se)
{
    struct keystore_set *set;

    pthread_mutex_lock(&se->mu);
    set = se->pending;
    se->pending = NULL;
    pthread_mutex_unlock(&se->mu);
    return set;
}

int signer_etcd_pending(struct signer_etcd *se)
{
    int pending;

    pthread_mutex_lock(&se->mu);
    pending = se->pending != NULL;
    pthread_mutex_unlock(&se->mu);
    return pending;
}

int signer_etcd_may_rotate(struct signer_etcd *se, int64_t now_ms)
{
    return atomic_load(&se->holder) && atomic_load(&se->reachable) && now_ms < atomic_load(&se->holder_until_ms);
}

int signer_etcd_push(struct signer_etcd *se, const struct keydir *kd)
{
    char err[1024];
    int written = 0, rc = -1;
    int64_t rev = 0;
    enum etcd_rc erc;

    pthread_mutex_lock(&se->write_mu);
    erc = keystore_write(&se->ks, se->cfg->signing_key_dir, kd, se->known, se->base_rev, &written, &rev, err,
                         sizeof(err));
    if (erc != ETCD_OK) {
        log_msg(LOG_ERROR, "signing keys: cannot write the rotation to etcd: %s; this signer stops rotating", err);
        atomic_store(&se->holder, 0);
    } else if (!written) {
        log_msg(LOG_WARN, "signing keys: another signer wrote %s%s first; this one stops rotating and follows it",
                se->cfg->etcd_prefix, KEYSTORE_ROTATION);
        atomic_store(&se->holder, 0);
        atomic_store(&se->seen_rev, -1); /* read and hand over whatever is there */
    } else {
        struct keystore_set mine = {.kd = (struct keydir *)kd, .rotation_rev = rev};
        signer_etcd_adopted_locked(se, &mine);
        signer_etcd_note_kids(se, kd);
        atomic_store(&se->seen_rev, rev);
        rc = 0;
    }
    pthread_mutex_unlock(&se->write_mu);
    return rc;
}

void signer_etcd_free(struct signer_etcd *se)
{
    if (se == NULL)
        return;
    atomic_store(&se->stop, 1);
    atomic_store(&se->interrupt, 1);
    if (se->started)
        pthread_join(se->thread, NULL);
    if (se->etcd != NULL && se->ks.lease != 0) {
        /* the interrupt cancels requests: a last one without it */
        se->ecfg.cancel = NULL;
        keystore_resign(&se->ks);
    }
    if (se->pending != NULL) {
        keystore_set_free(se->pending);
        free(se->pending);
    }
    keydir_free(se->known);
    free(se->etcd_kids);
    free(se->report);
    for (size_t i = 0; i < se->nnodes; i++)
        free(se->nodes[i].published);
    free(se->nodes);
    etcd_free(se->etcd);
    seal_key_wipe(&se->key);
    pthread_mutex_destroy(&se->mu);
    pthread_mutex_destroy(&se->write_mu);
    free(se);
}
