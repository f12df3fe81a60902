#include "server/reload/reload.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "keys/history.h"
#include "keys/keyfile.h"
#include "keys/keyset.h"
#include "util/printable.h"
#include "keys/removal.h"
#include "server/reload/health.h"
#include "util/log.h"
#include "server/obs/metrics.h"
#include "publish/publish.h"
#include "server/tls.h"
#include "server/reload/watch.h"
#include "util/clock.h"

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

/* A key that disappears from a file still in place leaves the published
 * set only when a read at least this much later finds the same shrunken
 * set (keys/removal.h): a file rewritten in place by a writer that pauses
 * for less than this between its writes is never published half-written.
 * Forty debounces: long against any writer's pause between two writes of
 * one small file, short against max-age. */
#define RELOAD_REMOVAL_CONFIRM_MS 1000

/* The loop reports itself alive (health.h) at least this often. */
#define RELOAD_HEARTBEAT_MS 1000

enum signing_state { SIGNING_UNKNOWN, SIGNING_UNREADABLE, SIGNING_UNPUBLISHED, SIGNING_YOUNG, SIGNING_MATURE };

struct reload {
    const struct config *cfg;
    struct snapshot *current;
    struct history *history;
    struct removal *removal;
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
    int64_t removal_due;   /* monotonic ms of the re-read that confirms held removals, or 0 */
    time_t signing_mature; /* wall-clock second the signing key matures, or 0 */
    char signing_kid[KEY_KID_LEN + 1];
    enum signing_state signing;
    /* The thread (reload_start) and what other threads use to talk to it. */
    struct worker *const *workers;
    size_t nworkers;
    pthread_t thread;
    int started;
    int abandoned;              /* reload_stop gave up waiting: the thread may still use all this */
    int wake_fd;                /* eventfd: reload_request and reload_stop wake the loop */
    atomic_int hup;             /* a re-read was requested */
    atomic_int stop;            /* the loop must end */
    pthread_mutex_t publish_mu; /* held around handing workers anything, and around setting stop */
};

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

/* Hands snap, or ctx, to every worker, unless reload_stop has begun: the
 * workers may be gone then. */
static void reload_to_workers(struct reload *r, struct snapshot *snap, SSL_CTX *ctx)
{
    pthread_mutex_lock(&r->publish_mu);
    for (size_t i = 0; !atomic_load(&r->stop) && i < r->nworkers; i++) {
        if (snap != NULL)
            worker_publish(r->workers[i], snap);
        if (ctx != NULL)
            worker_publish_tls(r->workers[i], ctx);
    }
    pthread_mutex_unlock(&r->publish_mu);
}

static void reload_publish(struct reload *r, struct snapshot *snap)
{
    reload_to_workers(r, snap, NULL);
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
    struct keyset *ks = keyset_load(&r->cfg->signing_key_file, 1, publish_log_warning, NULL, err, sizeof(err));

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
 * before it appeared cannot verify its tokens yet (docs/compatibility.md §7). */
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
    if (publish_keyset(r->cfg, r->history, NULL, now, reload_log_event, NULL, &ks, err, sizeof(err)) >= 0)
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
    int changed = publish_keyset(cfg, r->history, r->removal, now, reload_log_event, NULL, &ks, err, sizeof(err));
    int64_t due = removal_due(r->removal);

    if (due != 0 && due != r->removal_due)
        log_msg(LOG_INFO,
                "%zu key(s) no longer in the key files stay published until a re-read in %dms finds the same "
                "keys (a file may have been read mid-write)",
                removal_held(r->removal), RELOAD_REMOVAL_CONFIRM_MS);
    r->removal_due = due;
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

/* Counts and logs a TLS reload that failed. Returns 0 when a context is
 * still served, -1 when there is none. */
static int reload_tls_failed(struct reload *r, const char *err, time_t now)
{
    health_reload_result(METRICS_SOURCE_TLS, 0, now);
    atomic_fetch_add(&metrics_process.reload_failures[METRICS_SOURCE_TLS], 1);
    log_msg(LOG_ERROR, "TLS certificate %s: %s", r->tls ? "reload failed, keeping the current one" : "unusable", err);
    return r->tls ? 0 : -1;
}

/* Rebuilds the TLS context when the certificate or key files changed and
 * hands it to the workers; a broken pair keeps the current one. Returns 0,
 * or -1 (logged) when there is no usable context. */
static int reload_tls_context(struct reload *r, time_t now)
{
    const struct config *cfg = r->cfg;
    struct tls_files files;
    char err[1024];
    time_t not_after = 0;
    SSL_CTX *ctx = NULL;

    if (cfg->tls_listen_count == 0)
        return 0;
    if (tls_files_read(cfg->tls_cert_file, cfg->tls_key_file, &files, err, sizeof(err)) != 0)
        return reload_tls_failed(r, err, now);
    if (files.key_warning[0] != '\0')
        log_once(LOG_WARN, "%s", files.key_warning);
    if (r->tls != NULL && memcmp(files.digest, r->tls_digest, sizeof(files.digest)) == 0) {
        tls_files_free(&files);
        health_reload_result(METRICS_SOURCE_TLS, 1, now);
        return 0;
    }
    if ((ctx = tls_context_new(&files, cfg->http2, &not_after, err, sizeof(err))) != NULL)
        memcpy(r->tls_digest, files.digest, sizeof(files.digest));
    tls_files_free(&files);
    if (ctx == NULL)
        return reload_tls_failed(r, err, now);
    health_reload_result(METRICS_SOURCE_TLS, 1, now);
    reload_to_workers(r, NULL, ctx);
    SSL_CTX_free(r->tls);
    r->tls = ctx;
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
static void reload_once(struct reload *r)
{
    time_t now = time(NULL);
    struct snapshot *next;

    reload_rewatch(r);
    if ((next = reload_build(r, now)) != NULL) {
        if (r->current != NULL && snapshot_same_bytes(next, r->current))
            snapshot_release(next);
        else
            reload_publish(r, next);
    }
    reload_tls_context(r, now);
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
    r->wake_fd = -1;
    pthread_mutex_init(&r->publish_mu, NULL);
    if ((r->watch = watch_create()) == NULL || (r->removal = removal_new(RELOAD_REMOVAL_CONFIRM_MS)) == NULL ||
        (r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        log_msg(LOG_ERROR, "cannot set up the key reloader: %s", strerror(errno ? errno : ENOMEM));
        reload_free(r);
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
    health_init(cfg->key_reload_interval, clock_now_ms());
    reload_once(r);
    if (r->current == NULL || (cfg->tls_listen_count > 0 && r->tls == NULL)) {
        reload_free(r);
        return NULL;
    }
    r->periodic_at = clock_now_ms() + (int64_t)cfg->key_reload_interval * 1000;
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
 * periodic re-check, the re-read that confirms a key's removal, a retained
 * key's expiry or the signing key maturing. */
static int reload_poll_timeout(const struct reload *r)
{
    int64_t now = clock_now_ms(), next = r->periodic_at;
    time_t wall = time(NULL);
    time_t expiry = history_next_expiry(r->history, r->cfg->key_retention);

    if (r->debounce_at != 0 && r->debounce_at < next)
        next = r->debounce_at;
    if (r->removal_due != 0 && r->removal_due < next)
        next = r->removal_due;
    if (expiry != 0 && reload_wall_deadline(r, expiry, now, wall) < next)
        next = reload_wall_deadline(r, expiry, now, wall);
    if (r->signing_mature != 0 && reload_wall_deadline(r, r->signing_mature, now, wall) < next)
        next = reload_wall_deadline(r, r->signing_mature, now, wall);
    return next <= now ? 0 : next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

/* Takes what woke the loop: a re-read asked for (SIGHUP) reloads now, a
 * change to a watched file after the debounce. */
static void reload_take_wakeups(struct reload *r, int watch_ready)
{
    uint64_t n;

    if (read(r->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN) {
        /* Nothing to drain. */
    }
    if (atomic_exchange(&r->hup, 0)) {
        log_msg(LOG_INFO, "SIGHUP: reloading keys");
        r->debounce_at = clock_now_ms();
    }
    if (watch_ready && watch_read(r->watch))
        r->debounce_at = clock_now_ms() + RELOAD_DEBOUNCE_MS;
}

/* The reload thread: waits for a change, a request, a deadline or the
 * stop, and reports itself alive on every pass (so that a pass stuck in
 * a read shows on /livez). */
static void *reload_main(void *arg)
{
    struct reload *r = arg;

    while (!atomic_load(&r->stop)) {
        struct pollfd fds[2] = {{.fd = r->wake_fd, .events = POLLIN}, {.fd = watch_fd(r->watch), .events = POLLIN}};
        int timeout = reload_poll_timeout(r);
        int64_t now;

        health_reload_alive(clock_now_ms(), 1);
        if (poll(fds, 2, timeout < RELOAD_HEARTBEAT_MS ? timeout : RELOAD_HEARTBEAT_MS) < 0 && errno != EINTR) {
            log_msg(LOG_ERROR, "the key reload loop ends: poll: %s", strerror(errno));
            break; /* /livez turns 503: a restart is the way out */
        }
        reload_take_wakeups(r, (fds[1].revents & POLLIN) != 0);
        now = clock_now_ms();
        if (atomic_load(&r->stop))
            break;
        if ((r->debounce_at != 0 && now >= r->debounce_at) || now >= r->periodic_at || reload_poll_timeout(r) == 0) {
            r->debounce_at = 0;
            r->attempted_at = now;
            r->periodic_at = now + (int64_t)r->cfg->key_reload_interval * 1000;
            reload_once(r);
        }
    }
    if (atomic_load(&r->stop))
        reload_save_at_exit(r);
    return NULL;
}

int reload_start(struct reload *r, struct worker *const *workers, size_t nworkers)
{
    int err;

    r->workers = workers;
    r->nworkers = nworkers;
    health_reload_alive(clock_now_ms(), 1);
    if ((err = pthread_create(&r->thread, NULL, reload_main, r)) == 0)
        r->started = 1;
    return err;
}

/* Wakes the loop; eventfd writes never block (the counter only adds). */
static void reload_wake(struct reload *r)
{
    uint64_t one = 1;

    if (write(r->wake_fd, &one, sizeof(one)) < 0) {
        /* The counter is full: the loop is awake already. */
    }
}

void reload_request(struct reload *r)
{
    atomic_store(&r->hup, 1);
    reload_wake(r);
}

int reload_stop(struct reload *r, unsigned timeout_ms)
{
    struct timespec deadline;

    if (!r->started)
        return 0;
    pthread_mutex_lock(&r->publish_mu);
    atomic_store(&r->stop, 1);
    pthread_mutex_unlock(&r->publish_mu);
    reload_wake(r);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    if (pthread_timedjoin_np(r->thread, NULL, &deadline) != 0) {
        r->abandoned = 1;
        log_msg(LOG_ERROR, "the key reload thread did not stop within %ums (stuck reading a file); exiting without it",
                timeout_ms);
        return -1;
    }
    r->started = 0;
    health_reload_alive(clock_now_ms(), 0);
    return 0;
}

int reload_free(struct reload *r)
{
    if (r == NULL)
        return 0;
    if (r->abandoned)
        return -1;
    watch_free(r->watch);
    removal_free(r->removal);
    if (r->wake_fd >= 0)
        close(r->wake_fd);
    pthread_mutex_destroy(&r->publish_mu);
    SSL_CTX_free(r->tls);
    snapshot_release(r->current);
    history_free(r->history);
    free(r);
    return 0;
}
