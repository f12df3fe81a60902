#include "reload.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "keys/history.h"
#include "keys/keyset.h"
#include "keys/printable.h"
#include "health.h"
#include "log.h"
#include "metrics.h"
#include "publish.h"
#include "tls.h"
#include "watch.h"

/* Writers produce bursts of events (create, write, rename); waiting this
 * long after the last one reads the files once, after the burst. */
#define RELOAD_DEBOUNCE_MS 25

/* Seconds after which the state is saved again even though no key came or
 * went, to keep the last-seen times of present keys fresh on disk: a key
 * that leaves while the server is down is retained from its stored
 * last_seen, so after a crash it may go this much (or one
 * --key-reload-interval, if longer) early. A clean exit saves them too. */
#define RELOAD_STATE_REFRESH 300

/* How much of a key's source a log line quotes. */
#define RELOAD_SOURCE_SHOWN 1024

enum signing_state { SIGNING_UNKNOWN, SIGNING_UNREADABLE, SIGNING_UNPUBLISHED, SIGNING_YOUNG, SIGNING_MATURE };

struct reload {
    const struct config *cfg;
    struct snapshot *current;
    struct history *history;
    char state_path[PATH_MAX];
    time_t state_saved; /* when the state was last saved, or 0 */
    unsigned long generation;
    unsigned long failures;
    SSL_CTX *tls;                 /* the certificate the TLS listeners serve, or NULL */
    unsigned char tls_digest[32]; /* of the files it was built from */
    struct watch *watch;
    int warned_no_inotify;
    int64_t debounce_at;   /* monotonic ms of a pending reload, or 0 */
    int64_t periodic_at;   /* monotonic ms of the next periodic re-check */
    int64_t attempted_at;  /* monotonic ms of the last reload */
    time_t signing_mature; /* wall-clock second the signing key matures, or 0 */
    char signing_kid[KEY_KID_LEN + 1];
    enum signing_state signing;
};

static int64_t reload_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reload_log_event(void *ctx, enum history_event ev, const struct history_entry *e, time_t until)
{
    char when[32], source[RELOAD_SOURCE_SHOWN];
    struct tm tm;

    (void)ctx;
    switch (ev) {
    case HISTORY_ADDED:
        log_msg(LOG_INFO, "key kid=%s added from %s", e->kid, printable_quote(e->source, source, sizeof(source)));
        break;
    case HISTORY_RETAINED:
        gmtime_r(&until, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        log_msg(LOG_INFO, "key kid=%s left the inputs; retained (still published) until %s", e->kid, when);
        break;
    case HISTORY_DROPPED:
        log_msg(LOG_INFO, "key kid=%s dropped from the published set", e->kid);
        break;
    }
}

/* Re-creates every watch before the files are read, so a path that
 * appeared, vanished or now points elsewhere is watched correctly. */
static void reload_rewatch(struct reload *r)
{
    char *paths[r->cfg->key_files.count + 3];
    size_t n = r->cfg->key_files.count;

    memcpy(paths, r->cfg->key_files.items, n * sizeof(paths[0]));
    if (r->cfg->signing_key_file != NULL)
        paths[n++] = r->cfg->signing_key_file;
    if (r->cfg->tls_listen_count > 0) {
        paths[n++] = r->cfg->tls_cert_file;
        paths[n++] = r->cfg->tls_key_file;
    }
    watch_reset(r->watch, paths, n);
    if (watch_fd(r->watch) < 0 && !r->warned_no_inotify) {
        log_msg(LOG_WARN, "inotify unavailable (%s); keys are re-read every %lus and on SIGHUP", strerror(errno),
                r->cfg->key_reload_interval);
        r->warned_no_inotify = 1;
    }
}

static void reload_publish(struct reload *r, struct snapshot *snap, struct worker *const *workers, size_t n)
{
    for (size_t i = 0; i < n; i++)
        worker_publish(workers[i], snap);
    snapshot_release(r->current);
    r->current = snap;
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
}

/* Reads the signing key's kid; 0, or -1 with the reason logged once. */
static int reload_signing_kid(struct reload *r, char kid[KEY_KID_LEN + 1])
{
    char err[1024];
    struct keyset *ks = keyset_load(&r->cfg->signing_key_file, 1, NULL, NULL, err, sizeof(err));

    if (ks == NULL) {
        if (r->signing != SIGNING_UNREADABLE)
            log_msg(LOG_ERROR, "--signing-key-file: %s", err);
        r->signing = SIGNING_UNREADABLE;
        return -1;
    }
    memcpy(kid, ks->keys[0].kid, KEY_KID_LEN + 1);
    keyset_free(ks);
    return 0;
}

/* Warns, once per change, while the key the API server signs with has been
 * published for less than max-age: relying parties that cached the JWKS
 * before it appeared cannot verify its tokens yet (REFERENCE.md section 5). */
static void reload_check_signing_key(struct reload *r, time_t now)
{
    char kid[KEY_KID_LEN + 1];
    const struct history_entry *e;
    enum signing_state state;

    r->signing_mature = 0;
    if (r->cfg->signing_key_file == NULL || r->current == NULL || reload_signing_kid(r, kid) != 0)
        return;
    e = keyset_find(r->current->keyset, kid) ? history_find(r->history, kid) : NULL;
    state = e == NULL                                       ? SIGNING_UNPUBLISHED
            : now - e->first_seen < (time_t)r->cfg->max_age ? SIGNING_YOUNG
                                                            : SIGNING_MATURE;
    if (state == SIGNING_YOUNG)
        r->signing_mature = e->first_seen + (time_t)r->cfg->max_age;
    atomic_store(&metrics_process.signing_key_first_published, e ? (long long)e->first_seen : 0);
    if (state == r->signing && strcmp(kid, r->signing_kid) == 0)
        return;
    r->signing = state;
    memcpy(r->signing_kid, kid, sizeof(kid));
    if (state == SIGNING_UNPUBLISHED)
        log_msg(LOG_ERROR,
                "SIGNING KEY NOT PUBLISHED: kid=%s (%s) is not in the published set; no relying party can "
                "verify the tokens it signs",
                kid, r->cfg->signing_key_file);
    else if (state == SIGNING_YOUNG)
        log_msg(LOG_WARN,
                "SIGNING KEY TOO NEW: kid=%s has been published for %llds, less than --max-age %lus; "
                "relying parties may hold a cached JWKS without it for another %llds",
                kid, (long long)(now - e->first_seen), r->cfg->max_age, (long long)(r->signing_mature - now));
    else
        log_msg(LOG_INFO, "signing key kid=%s has been published for at least --max-age (%lus)", kid, r->cfg->max_age);
}

/* Saves the retention state (when there is a --state-dir); a failure is
 * logged and counted, and the next reload tries again. */
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

/* At exit: one last look at the key files, so that the state records the
 * keys in them as seen until now, then a save. Nothing is published. */
static void reload_save_at_exit(struct reload *r)
{
    time_t now = time(NULL);
    struct keyset *ks;
    char err[1024];

    if (r->cfg->state_dir == NULL)
        return;
    if (publish_keyset(r->cfg, r->history, now, reload_log_event, NULL, &ks, err, sizeof(err)) >= 0)
        keyset_free(ks);
    reload_save_state(r, now);
}

/* Builds the next snapshot from the files and the retention state. Returns
 * NULL (reason logged and counted) when the inputs are unusable, so the
 * caller keeps what it publishes. */
static struct snapshot *reload_build(struct reload *r, time_t now)
{
    const struct config *cfg = r->cfg;
    char err[1024];
    struct keyset *ks;
    int changed = publish_keyset(cfg, r->history, now, reload_log_event, NULL, &ks, err, sizeof(err));

    health_reload_result(METRICS_SOURCE_KEYS, changed >= 0, now);
    if (changed < 0) {
        r->failures++;
        atomic_fetch_add(&metrics_process.reload_failures[METRICS_SOURCE_KEYS], 1);
        log_msg(LOG_ERROR, "key reload failed (%lu so far)%s: %s", r->failures,
                r->current ? ", keeping the published set" : "", err);
        return NULL;
    }
    atomic_store(&metrics_process.last_reload_success, (long long)now);
    if (changed || now - r->state_saved >= RELOAD_STATE_REFRESH)
        reload_save_state(r, now);
    return publish_snapshot(cfg, ks, now);
}

/* Rebuilds the TLS context when the certificate or key files changed and
 * hands it to the workers; a broken pair keeps the current one. Returns 0,
 * or -1 (logged) when there is no usable context. */
static int reload_tls_context(struct reload *r, struct worker *const *workers, size_t n, time_t now)
{
    const struct config *cfg = r->cfg;
    unsigned char digest[32];
    char err[1024];
    time_t not_after = 0;
    SSL_CTX *ctx = NULL;

    if (cfg->tls_listen_count == 0)
        return 0;
    if (tls_files_digest(cfg->tls_cert_file, cfg->tls_key_file, digest) == 0 && r->tls != NULL &&
        memcmp(digest, r->tls_digest, sizeof(digest)) == 0) {
        health_reload_result(METRICS_SOURCE_TLS, 1, now);
        return 0;
    }
    if ((ctx = tls_context_new(cfg->tls_cert_file, cfg->tls_key_file, cfg->http2, &not_after, err, sizeof(err))) ==
        NULL) {
        health_reload_result(METRICS_SOURCE_TLS, 0, now);
        atomic_fetch_add(&metrics_process.reload_failures[METRICS_SOURCE_TLS], 1);
        log_msg(LOG_ERROR, "TLS certificate %s: %s", r->tls ? "reload failed, keeping the current one" : "unusable",
                err);
        return r->tls ? 0 : -1;
    }
    health_reload_result(METRICS_SOURCE_TLS, 1, now);
    for (size_t i = 0; i < n; i++)
        worker_publish_tls(workers[i], ctx);
    SSL_CTX_free(r->tls);
    r->tls = ctx;
    memcpy(r->tls_digest, digest, sizeof(digest));
    atomic_store(&metrics_process.tls_cert_not_after, (long long)not_after);
    log_msg(LOG_INFO, "TLS certificate loaded from %s (expires %lld)", cfg->tls_cert_file, (long long)not_after);
    return 0;
}

/* Publishes the gauges of the current set for /metrics. */
static void reload_update_gauges(struct reload *r)
{
    size_t retained = 0;

    for (size_t i = 0; i < r->history->count; i++)
        retained += !r->history->entries[i].present;
    atomic_store(&metrics_process.keyset_generation, r->generation);
    atomic_store(&metrics_process.keys_published, r->current ? r->current->keyset->count : 0);
    atomic_store(&metrics_process.keys_retained, retained);
}

/* One reload: publish the new set when its bytes differ from the current. */
static void reload_once(struct reload *r, struct worker *const *workers, size_t n)
{
    time_t now = time(NULL);
    struct snapshot *next;

    reload_rewatch(r);
    if ((next = reload_build(r, now)) != NULL) {
        if (r->current != NULL && snapshot_same_bytes(next, r->current))
            snapshot_release(next);
        else
            reload_publish(r, next, workers, n);
    }
    reload_tls_context(r, workers, n, now);
    reload_check_signing_key(r, now);
    reload_update_gauges(r);
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

struct reload *reload_create(const struct config *cfg)
{
    struct reload *r = calloc(1, sizeof(*r));
    char err[1024];

    if (r == NULL)
        return NULL;
    r->cfg = cfg;
    if ((r->watch = watch_create()) == NULL) {
        free(r);
        return NULL;
    }
    if (cfg->state_dir != NULL) {
        publish_state_path(cfg, r->state_path, sizeof(r->state_path));
        if (mkdir(cfg->state_dir, 0700) != 0 && errno != EEXIST)
            log_msg(LOG_ERROR, "--state-dir %s: cannot create: %s", cfg->state_dir, strerror(errno));
        if (!reload_state_dir_ok(cfg)) {
            reload_free(r);
            return NULL;
        }
    }
    if ((r->history = publish_history_load(cfg, time(NULL), err, sizeof(err))) == NULL) {
        log_msg(LOG_ERROR, "%s", err);
        reload_free(r);
        return NULL;
    }
    health_init(cfg->key_reload_interval);
    reload_once(r, NULL, 0);
    if (r->current == NULL || (cfg->tls_listen_count > 0 && r->tls == NULL)) {
        reload_free(r);
        return NULL;
    }
    r->periodic_at = reload_now_ms() + (int64_t)cfg->key_reload_interval * 1000;
    return r;
}

struct snapshot *reload_current(const struct reload *r)
{
    return r->current;
}

SSL_CTX *reload_tls(const struct reload *r)
{
    return r->tls;
}

/* The monotonic ms at which a wall-clock deadline falls, never sooner than
 * a second after the last reload: when the files are broken at a retained
 * key's expiry, the retry must not spin. */
static int64_t reload_wall_deadline(const struct reload *r, time_t at, int64_t now, time_t wall)
{
    int64_t ms = now + (int64_t)(at - wall) * 1000;
    return ms < r->attempted_at + 1000 ? r->attempted_at + 1000 : ms;
}

/* Milliseconds until the earliest thing to do: a debounced reload, the
 * periodic re-check, a retained key's expiry or the signing key maturing. */
static int reload_poll_timeout(const struct reload *r)
{
    int64_t now = reload_now_ms(), next = r->periodic_at;
    time_t wall = time(NULL);
    time_t expiry = history_next_expiry(r->history, r->cfg->key_retention);

    if (r->debounce_at != 0 && r->debounce_at < next)
        next = r->debounce_at;
    if (expiry != 0 && reload_wall_deadline(r, expiry, now, wall) < next)
        next = reload_wall_deadline(r, expiry, now, wall);
    if (r->signing_mature != 0 && reload_wall_deadline(r, r->signing_mature, now, wall) < next)
        next = reload_wall_deadline(r, r->signing_mature, now, wall);
    return next <= now ? 0 : next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

int reload_run(struct reload *r, struct worker *const *workers, size_t nworkers, const sigset_t *signals)
{
    int sfd = signalfd(-1, signals, SFD_NONBLOCK | SFD_CLOEXEC);

    for (;;) {
        struct pollfd fds[2] = {{.fd = sfd, .events = POLLIN}, {.fd = watch_fd(r->watch), .events = POLLIN}};
        struct signalfd_siginfo si;
        int64_t now;

        if (poll(fds, 2, reload_poll_timeout(r)) < 0 && errno != EINTR)
            break;
        while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
            if (si.ssi_signo != SIGHUP) {
                close(sfd);
                reload_save_at_exit(r);
                return (int)si.ssi_signo;
            }
            log_msg(LOG_INFO, "SIGHUP: reloading keys");
            r->debounce_at = reload_now_ms();
        }
        if ((fds[1].revents & POLLIN) && watch_read(r->watch))
            r->debounce_at = reload_now_ms() + RELOAD_DEBOUNCE_MS;
        now = reload_now_ms();
        if ((r->debounce_at != 0 && now >= r->debounce_at) || now >= r->periodic_at || reload_poll_timeout(r) == 0) {
            r->debounce_at = 0;
            r->attempted_at = now;
            r->periodic_at = now + (int64_t)r->cfg->key_reload_interval * 1000;
            reload_once(r, workers, nworkers);
        }
    }
    close(sfd);
    return SIGTERM;
}

void reload_free(struct reload *r)
{
    if (r == NULL)
        return;
    watch_free(r->watch);
    SSL_CTX_free(r->tls);
    snapshot_release(r->current);
    history_free(r->history);
    free(r);
}
