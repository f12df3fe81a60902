/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet.c: the issuers of --issuers-dir, their reloaders and the routing
 * snapshot (see fleet.h).
 */
#include "server/reload/fleet.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <stdatomic.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/file.h"
#include "publish/routes.h"
#include "push/publisher.h"
#include "server/obs/metrics.h"
#include "server/reload/health.h"
#include "server/reload/mirror_pool.h"
#include "server/reload/reload.h"
#include "util/file.h"
#include "util/log.h"

#define FLEET_SUFFIX   ".json"
#define FLEET_NAME_MAX CONFIG_ISSUER_NAME_MAX

/* Each issuer that publishes to object storage has a publisher thread of
 * its own (push/publisher.h, reused as it is: its retries, backoff and
 * drift checks are per target and per snapshot). That is a thread per
 * publishing issuer, so their number is bounded: a file beyond it is
 * refused. Most fleets publish through one bucket behind the fleet's host
 * or serve directly, and a few dozen clusters publishing is far below
 * this. */
#define FLEET_PUBLISHERS_MAX 64

/* One file of the directory, served or not. */
struct fleet_issuer {
    char *name;
    char *path;
    char *log_prefix; /* "issuer NAME: ", before its reloader's log lines */
    char *seen;       /* the bytes last read, or NULL */
    size_t seen_len;
    /* What it serves: the config parsed from the file as it was when
     * last accepted, its reloader, its route and the snapshot the current
     * table holds. reload is NULL when it serves nothing. */
    struct config *cfg;
    struct reload *reload;
    char *key; /* its route (routes_key), with reload */
    struct snapshot *routed;
    char *problem;      /* why the file's bytes are refused now, or NULL */
    char *keys_problem; /* why its key files could not be read at the last pass, or NULL */
    /* When a pass must run its reloader: what the file and the key files
     * looked like (fleet_stat_sig) when last read, and the next periodic
     * pass (--key-reload-interval). */
    uint64_t file_sig, keys_sig;
    int64_t due_ms;
    /* A pass's candidate: the new config, not yet accepted. */
    struct config *next;
    char *next_key;
    struct reload *made; /* next's reloader (fleet_make), or NULL: its keys cannot be read */
    int removed;
    /* Its upstream's entry in the fleet's mirror pool (with reload, when
     * its config has an upstream), and whether a new set of it waits for
     * the next pass of its reloader. */
    struct mirror_entry *mirror;
    int upstream_due;
    struct push_publisher *publisher; /* with reload, when its config has publish-to */
};

struct fleet {
    const struct config *cfg;
    struct fleet_issuer **issuers; /* sorted by name */
    size_t count;
    struct snapshot *current;
    time_t last_pass;
    unsigned long refusals;   /* logged since start */
    int force;                /* the next pass runs every reloader (SIGHUP) */
    unsigned long generation; /* routing tables published since start */
    size_t publishers;        /* issuers with a publisher */
    struct mirror_pool *pool; /* reads the issuers' upstreams (fleet_mirror), or NULL */
};

/* FNV-1a over what stat says of path (0 stands for a directory: its
 * files may change without it): a file replaced, rewritten, touched or
 * gone changes it. */
static uint64_t fleet_stat_sig(const char *path, uint64_t h)
{
    struct stat st;
    long long v[7] = {0};

    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        v[0] = (long long)st.st_dev, v[1] = (long long)st.st_ino, v[2] = (long long)st.st_size;
        v[3] = (long long)st.st_mtim.tv_sec, v[4] = st.st_mtim.tv_nsec;
        v[5] = (long long)st.st_ctim.tv_sec, v[6] = st.st_ctim.tv_nsec;
    } else {
        v[0] = -errno;
    }
    for (size_t i = 0; i < sizeof(v); i++)
        h = (h ^ ((const unsigned char *)v)[i]) * 1099511628211ull;
    return h;
}

/* The signature of every key file of cfg, or 0 when one is a directory
 * (its reloader then runs on every pass). */
static uint64_t fleet_keys_sig(const struct config *cfg)
{
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < cfg->key_files.count && h != 0; i++)
        h = fleet_stat_sig(cfg->key_files.items[i], h);
    return h;
}

/* Whether a pass at now must run is's reloader: asked for, its key files
 * changed (or are a directory), its periodic pass or a deadline of its
 * inputs (a held removal, a retained key's expiry) is due. */
static int fleet_due(const struct fleet *f, const struct fleet_issuer *is, uint64_t keys_sig, time_t now,
                     int64_t now_ms)
{
    int64_t confirm_at;
    time_t wall_at;

    if (f->force || is->upstream_due || keys_sig == 0 || keys_sig != is->keys_sig || now_ms >= is->due_ms)
        return 1;
    reload_deadlines(is->reload, &confirm_at, &wall_at);
    return (confirm_at != 0 && confirm_at <= now_ms) || (wall_at != 0 && wall_at <= now);
}

/* Records that is's reloader ran at now_ms on key files of keys_sig. */
static void fleet_ran(struct fleet_issuer *is, uint64_t keys_sig, int64_t now_ms)
{
    is->keys_sig = keys_sig;
    is->upstream_due = 0;
    is->due_ms = now_ms + (int64_t)is->cfg->key_reload_interval * 1000;
}

void fleet_force(struct fleet *f)
{
    f->force = 1;
}

/* Frees a config of the heap. */
static void fleet_config_free(struct config *c)
{
    if (c != NULL)
        config_free(c);
    free(c);
}

static void fleet_issuer_free(struct fleet_issuer *is)
{
    if (is == NULL)
        return;
    push_publisher_stop(is->publisher);
    reload_free(is->reload);
    reload_free(is->made);
    fleet_config_free(is->cfg);
    fleet_config_free(is->next);
    free(is->seen);
    free(is->problem);
    free(is->keys_problem);
    free(is->name);
    free(is->path);
    free(is->log_prefix);
    free(is->key);
    free(is->next_key);
    free(is);
}

/* A new issuer for the file called file (name.json) of dir, or NULL when
 * out of memory. */
static struct fleet_issuer *fleet_issuer_new(const char *dir, const char *file, const char *name)
{
    struct fleet_issuer *is = calloc(1, sizeof(*is));

    if (is == NULL)
        return NULL;
    if (asprintf(&is->path, "%s/%s", dir, file) < 0)
        is->path = NULL;
    if (asprintf(&is->log_prefix, "issuer %s: ", name) < 0)
        is->log_prefix = NULL;
    if ((is->name = strdup(name)) == NULL || is->path == NULL || is->log_prefix == NULL) {
        fleet_issuer_free(is);
        return NULL;
    }
    return is;
}

/* Whether name (without .json) can name an issuer (config.h's rule, which
 * the commands reading a fleet share). */
static int fleet_name_ok(const char *name, size_t len)
{
    return config_issuer_name_ok(name, len);
}

static int fleet_by_name(const void *a, const void *b)
{
    return strcmp((*(struct fleet_issuer *const *)a)->name, (*(struct fleet_issuer *const *)b)->name);
}

/* The issuer called name in f (sorted), or NULL. */
static struct fleet_issuer *fleet_find(const struct fleet *f, const char *name)
{
    struct fleet_issuer key = {.name = (char *)name}, *k = &key, **hit;

    hit = f->count ? bsearch(&k, f->issuers, f->count, sizeof(*f->issuers), fleet_by_name) : NULL;
    return hit ? *hit : NULL;
}

/* Records why is's file is refused; logged when the reason is new. */
static void fleet_refuse(struct fleet *f, struct fleet_issuer *is, const char *why)
{
    if (is->problem == NULL || strcmp(is->problem, why) != 0) {
        f->refusals++;
        atomic_fetch_add(&metrics_process.fleet_refusals, 1);
        log_msg(LOG_ERROR, "issuer file %s refused%s: %s", is->path,
                is->reload ? " (its last good state keeps serving)" : "", why);
    }
    free(is->problem);
    is->problem = strdup(why);
    fleet_config_free(is->next);
    is->next = NULL;
}

/* Reads is's file; when its bytes changed (or it was refused: a refusal
 * for a clash may not hold any more), parses them into is->next. */
static void fleet_read(struct fleet *f, struct fleet_issuer *is)
{
    char err[CONFIG_ERR_MAX + PATH_MAX], key[ROUTES_KEY_MAX];
    size_t len = 0;
    uint64_t sig = fleet_stat_sig(is->path, 14695981039346656037ull);
    char *text;

    if (sig == is->file_sig && is->problem == NULL)
        return; /* not touched since it was read */
    is->file_sig = sig;
    if ((text = file_read(is->path, CONFIG_FILE_MAX, &len, NULL, err, sizeof(err))) == NULL) {
        fleet_refuse(f, is, err);
        return;
    }
    if (is->seen != NULL && is->seen_len == len && memcmp(is->seen, text, len) == 0 && is->problem == NULL) {
        file_free(text, len);
        return;
    }
    free(is->seen);
    is->seen = malloc(len + 1);
    is->seen_len = is->seen ? len : 0;
    if (is->seen)
        memcpy(is->seen, text, len);
    file_free(text, len);
    if ((is->next = calloc(1, sizeof(*is->next))) == NULL) {
        fleet_refuse(f, is, "out of memory");
        return;
    }
    if (config_issuer_parse(f->cfg, is->path, is->name, is->next, err, sizeof(err)) != 0) {
        fleet_refuse(f, is, err);
        return;
    }
    if (routes_key(is->next->issuers.items[0], key) != 0)
        fleet_refuse(f, is, "the issuer URL has no host, or is too long");
    else if (free(is->next_key), (is->next_key = strdup(key)) == NULL)
        fleet_refuse(f, is, "out of memory");
}

/* The directory's issuer files, each in the old issuer of its name or a
 * new one; the old ones whose file went are marked removed. Returns the
 * new list (sorted), or NULL when the directory cannot be read. */
static struct fleet_issuer **fleet_scan(struct fleet *f, size_t *count)
{
    DIR *d = opendir(f->cfg->issuers_dir);
    struct fleet_issuer **list = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;

    if (d == NULL) {
        log_msg(LOG_ERROR, "--issuers-dir %s: %s", f->cfg->issuers_dir, strerror(errno));
        return NULL;
    }
    for (size_t i = 0; i < f->count; i++)
        f->issuers[i]->removed = 1;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), slen = strlen(FLEET_SUFFIX);
        struct fleet_issuer *is;
        char name[FLEET_NAME_MAX + 1];
        if (len <= slen || strcmp(e->d_name + len - slen, FLEET_SUFFIX) != 0 || !fleet_name_ok(e->d_name, len - slen))
            continue;
        if (n == cap) {
            struct fleet_issuer **grown = realloc(list, (cap ? cap * 2 : 64) * sizeof(*list));
            if (grown == NULL)
                break; /* out of memory: the files not listed are taken as gone, until the next pass */
            list = grown;
            cap = cap ? cap * 2 : 64;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(len - slen), e->d_name);
        if ((is = fleet_find(f, name)) == NULL)
            is = fleet_issuer_new(f->cfg->issuers_dir, e->d_name, name);
        if (is != NULL) {
            is->removed = 0;
            list[n++] = is;
        }
    }
    closedir(d);
    if (n > 1)
        qsort(list, n, sizeof(*list), fleet_by_name);
    *count = n;
    return list != NULL ? list : calloc(1, sizeof(*list));
}

/* One claim on a route key, for finding clashes. */
struct fleet_claim {
    const char *key;
    struct fleet_issuer *is;
    int served; /* 1: what is serves now; 0: its candidate */
};

static int fleet_by_key(const void *a, const void *b)
{
    const struct fleet_claim *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    return c != 0 ? c : y->served - x->served; /* the one serving first */
}

/* Refuses every candidate whose issuer URL another file serves, naming
 * both, and every candidate whose URL another candidate claims when no one
 * serves it (all of them, naming two). */
static void fleet_refuse_clashes(struct fleet *f, struct fleet_issuer **list, size_t n)
{
    struct fleet_claim *claims = calloc(2 * n + 1, sizeof(*claims));
    char why[2 * PATH_MAX + 128];
    size_t m = 0;

    if (claims == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        if (list[i]->reload != NULL && list[i]->next == NULL)
            claims[m++] = (struct fleet_claim){list[i]->key, list[i], 1};
        if (list[i]->next != NULL)
            claims[m++] = (struct fleet_claim){list[i]->next_key, list[i], 0};
    }
    qsort(claims, m, sizeof(*claims), fleet_by_key);
    for (size_t i = 0, j; i < m; i = j) {
        for (j = i + 1; j < m && strcmp(claims[j].key, claims[i].key) == 0;)
            j++;
        for (size_t k = i; j - i > 1 && k < j; k++) {
            const struct fleet_claim *other = &claims[k == i ? i + 1 : i];
            if (claims[k].served)
                continue;
            snprintf(why, sizeof(why), "its issuer URL %s is that of issuer file %s, %s",
                     claims[k].is->next->issuers.items[0], other->is->path,
                     other->served ? "which serves it" : "which claims it too");
            fleet_refuse(f, claims[k].is, why);
        }
    }
    free(claims);
}

/* Candidates make their reloaders (whose first pass reads their keys) on
 * this thread and, when there are many (a start, a volume of many files
 * swapped), on helper threads too, one per CPU: each reads only its own
 * issuer's files, and reading thousands of keys is OpenSSL's decoding and
 * encoding, which parallelises. */
struct fleet_make {
    struct fleet_issuer **cands;
    size_t n;
    atomic_size_t next;
    time_t now;
    int64_t now_ms;
};

static void *fleet_make_some(void *arg)
{
    struct fleet_make *m = arg;
    size_t i;

    while ((i = atomic_fetch_add(&m->next, 1)) < m->n) {
        log_thread_prefix(m->cands[i]->log_prefix);
        m->cands[i]->made = reload_create(m->cands[i]->next, m->now, m->now_ms);
    }
    log_thread_prefix(NULL);
    return NULL;
}

#define FLEET_PARALLEL_MIN 64 /* candidates worth a helper thread */
#define FLEET_HELPERS_MAX  7

static void fleet_make(struct fleet_issuer **list, size_t n, time_t now, int64_t now_ms)
{
    struct fleet_make m = {.cands = calloc(n + 1, sizeof(*list)), .now = now, .now_ms = now_ms};
    pthread_t helpers[FLEET_HELPERS_MAX];
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1; /* those it may run on */
    size_t nhelpers = 0, want;

    for (size_t i = 0; m.cands != NULL && i < n; i++)
        if (list[i]->next != NULL)
            m.cands[m.n++] = list[i];
    if (m.cands == NULL) { /* out of memory: one at a time */
        for (size_t i = 0; i < n; i++) {
            log_thread_prefix(list[i]->log_prefix);
            list[i]->made = list[i]->next != NULL ? reload_create(list[i]->next, now, now_ms) : NULL;
        }
        log_thread_prefix(NULL);
        return;
    }
    atomic_init(&m.next, 0);
    want = m.n >= FLEET_PARALLEL_MIN && cpus > 1 ? (size_t)cpus - 1 : 0;
    for (; nhelpers < want && nhelpers < FLEET_HELPERS_MAX; nhelpers++)
        if (pthread_create(&helpers[nhelpers], NULL, fleet_make_some, &m) != 0)
            break; /* fewer helpers: this thread does the rest */
    fleet_make_some(&m);
    for (size_t i = 0; i < nhelpers; i++)
        pthread_join(helpers[i], NULL);
    free(m.cands);
}

/* Serves is's candidate with the reloader fleet_make made for it. When
 * its keys could not be read, the file is refused (the reason is logged by
 * the reloader) and what is served stays. */
static int fleet_accept(struct fleet *f, struct fleet_issuer *is)
{
    struct reload *r = is->made;
    struct push_publisher *pub = NULL;
    char err[1280];

    is->made = NULL;
    if (r == NULL) {
        fleet_refuse(f, is, "no key set to publish (the reason is logged above)");
        return -1;
    }
    if (is->next->publish_to.count > 0 && is->publisher == NULL && f->publishers >= FLEET_PUBLISHERS_MAX) {
        snprintf(err, sizeof(err), "publish-to: %d issuers publish already, the most one server runs",
                 FLEET_PUBLISHERS_MAX);
        reload_free(r);
        fleet_refuse(f, is, err);
        return -1;
    }
    if (is->next->publish_to.count > 0 &&
        (pub = push_publisher_start(is->next, reload_current(r), err, sizeof(err))) == NULL) {
        reload_free(r);
        fleet_refuse(f, is, err);
        return -1;
    }
    f->publishers += (pub != NULL) - (is->publisher != NULL);
    push_publisher_stop(is->publisher); /* its config may have named other targets */
    is->publisher = pub;
    log_msg(LOG_INFO, "issuer %s %s: %s from %s", is->name, is->reload ? "changed" : "added",
            is->next->issuers.items[0], is->path);
    reload_free(is->reload);
    fleet_config_free(is->cfg);
    is->reload = r;
    is->cfg = is->next;
    is->next = NULL;
    free(is->key);
    is->key = is->next_key;
    is->next_key = NULL;
    free(is->problem);
    is->problem = NULL;
    return 0;
}

/* Records what is's reloader said of its key files at its last pass:
 * logged with the issuer's name when it changes. A failure keeps the
 * issuer's last good set serving and is that issuer's alone: it is shown
 * on its row (status page, /readyz?verbose, a count in /metrics), never in
 * the process's readiness. */
static void fleet_keys_result(struct fleet_issuer *is)
{
    const char *err = reload_error(is->reload);

    if (err != NULL && (is->keys_problem == NULL || strcmp(is->keys_problem, err) != 0))
        log_msg(LOG_ERROR, "issuer %s (%s): its keys cannot be read, its last good set keeps serving: %s", is->name,
                is->path, err);
    else if (err == NULL && is->keys_problem != NULL)
        log_msg(LOG_INFO, "issuer %s (%s): its keys are read again", is->name, is->path);
    free(is->keys_problem);
    is->keys_problem = err != NULL ? strdup(err) : NULL;
}

/* With a mirror pool: a changed file's new reloader starts from the last
 * good set of its upstream when the upstream settings did not change (no
 * 503 until the next read), and a served issuer gets the set its upstream
 * read since the last pass (its reloader then runs). */
static void fleet_upstream_handover(struct fleet *f, struct fleet_issuer *is, time_t now, int64_t now_ms)
{
    struct keyset *ks;

    if (f->pool == NULL || is->mirror == NULL)
        return;
    if (is->made != NULL && is->next != NULL && is->next->upstream != NULL &&
        (ks = mirror_pool_last(f->pool, is->mirror, is->next)) != NULL) {
        reload_upstream(is->made, ks);
        log_thread_prefix(is->log_prefix);
        reload_pass(is->made, now, now_ms);
        log_thread_prefix(NULL);
    }
    if (is->reload != NULL && (ks = mirror_pool_take(f->pool, is->mirror)) != NULL) {
        reload_upstream(is->reload, ks);
        is->upstream_due = 1;
    }
}

/* Mirrors the upstream of is's config as it serves now, or stops
 * mirroring it when the config has none. */
static void fleet_mirror_sync(struct fleet *f, struct fleet_issuer *is)
{
    if (f->pool == NULL)
        return;
    if (is->cfg->upstream != NULL) {
        is->mirror = mirror_pool_set(f->pool, is->mirror, is->log_prefix, is->cfg);
        return;
    }
    mirror_pool_remove(f->pool, is->mirror);
    is->mirror = NULL;
}

void fleet_mirror(struct fleet *f, struct mirror_pool *pool)
{
    f->pool = pool;
    for (size_t i = 0; i < f->count; i++)
        if (f->issuers[i]->reload != NULL)
            fleet_mirror_sync(f, f->issuers[i]);
}

void fleet_mirror_hurry(struct fleet *f)
{
    if (f->pool != NULL)
        mirror_pool_hurry(f->pool);
}

/* A routing snapshot of every served issuer's current snapshot. */
static struct snapshot *fleet_build(struct fleet *f, time_t now)
{
    struct routes_entry *entries = calloc(f->count + 1, sizeof(*entries));
    struct snapshot *snap;
    size_t n = 0;

    if (entries == NULL)
        return NULL;
    for (size_t i = 0; i < f->count; i++) {
        struct fleet_issuer *is = f->issuers[i];
        if (is->reload != NULL)
            entries[n++] = (struct routes_entry){is->cfg->issuers.items[0], reload_current(is->reload),
                                                 is->cfg->api_audiences.items, is->cfg->api_audiences.count};
    }
    snap = routes_build(entries, n, now);
    free(entries);
    return snap;
}

struct snapshot *fleet_pass(struct fleet *f, time_t now, int64_t now_ms)
{
    size_t n = 0;
    struct fleet_issuer **list = fleet_scan(f, &n);
    struct snapshot *snap;
    int changed = f->current == NULL;

    f->last_pass = now;
    if (list == NULL)
        return NULL; /* logged; everything stays */
    for (size_t i = 0; i < f->count; i++) {
        if (!f->issuers[i]->removed)
            continue;
        log_msg(LOG_INFO, "issuer %s removed: %s is gone", f->issuers[i]->name, f->issuers[i]->path);
        changed |= f->issuers[i]->reload != NULL;
        if (f->pool != NULL)
            mirror_pool_remove(f->pool, f->issuers[i]->mirror);
        f->publishers -= f->issuers[i]->publisher != NULL;
        fleet_issuer_free(f->issuers[i]);
    }
    free(f->issuers);
    f->issuers = list;
    f->count = n;
    for (size_t i = 0; i < n; i++)
        fleet_read(f, list[i]);
    fleet_refuse_clashes(f, list, n);
    fleet_make(list, n, now, now_ms);
    for (size_t i = 0; i < n; i++) {
        struct fleet_issuer *is = list[i];
        uint64_t keys_sig = is->next ? fleet_keys_sig(is->next) : is->reload ? fleet_keys_sig(is->cfg) : 0;
        fleet_upstream_handover(f, is, now, now_ms);
        if (is->next != NULL && fleet_accept(f, is) == 0) {
            fleet_mirror_sync(f, is);
            fleet_ran(is, keys_sig, now_ms);
            fleet_keys_result(is);
        } else if (is->reload != NULL && fleet_due(f, is, keys_sig, now, now_ms)) {
            log_thread_prefix(is->log_prefix);
            reload_pass(is->reload, now, now_ms);
            log_thread_prefix(NULL);
            fleet_ran(is, keys_sig, now_ms);
            fleet_keys_result(is);
        }
        changed |= is->reload != NULL && reload_current(is->reload) != is->routed;
    }
    f->force = 0;
    /* the reloaders report to the process's health; an issuer's keys and
     * upstream are its own (fleet_keys_result, fleet_status) */
    health_reload_result(METRICS_SOURCE_KEYS, 1, now);
    health_documents(1);
    if (!changed || (snap = fleet_build(f, now)) == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (list[i]->publisher != NULL && reload_current(list[i]->reload) != list[i]->routed)
            push_publisher_offer(list[i]->publisher, reload_current(list[i]->reload));
        list[i]->routed = list[i]->reload ? reload_current(list[i]->reload) : NULL;
    }
    snapshot_release(f->current);
    f->current = snap;
    f->generation++;
    log_msg(LOG_INFO, "serving %zu issuer(s) of %s", routes_count(snap->routes), f->cfg->issuers_dir);
    return snap;
}

struct fleet *fleet_create(const struct config *cfg, time_t now, int64_t now_ms)
{
    struct fleet *f = calloc(1, sizeof(*f));

    if (f == NULL) {
        log_msg(LOG_ERROR, "out of memory");
        return NULL;
    }
    f->cfg = cfg;
    if (cfg->state_dir != NULL && mkdir(cfg->state_dir, 0700) != 0 && errno != EEXIST)
        log_msg(LOG_ERROR, "--state-dir %s: cannot create: %s", cfg->state_dir, strerror(errno));
    fleet_pass(f, now, now_ms);
    if (f->current == NULL) {
        fleet_free(f);
        return NULL;
    }
    return f;
}

struct snapshot *fleet_current(const struct fleet *f)
{
    return f->current;
}

void fleet_deadlines(const struct fleet *f, int64_t *confirm_at, time_t *wall_at)
{
    *confirm_at = 0;
    *wall_at = 0;
    for (size_t i = 0; i < f->count; i++) {
        int64_t c;
        time_t w;
        if (f->issuers[i]->reload == NULL)
            continue;
        reload_deadlines(f->issuers[i]->reload, &c, &w);
        if (c != 0 && (*confirm_at == 0 || c < *confirm_at))
            *confirm_at = c;
        if (w != 0 && (*wall_at == 0 || w < *wall_at))
            *wall_at = w;
    }
}

/* The key gauges of /metrics for the whole fleet, after its reloaders
 * each wrote their own: the keys every issuer publishes (and of those, the
 * ones retention keeps), and the routing tables published since start as
 * the generation. */
static void fleet_gauges(const struct fleet *f)
{
    size_t keys = 0, retained = 0;

    for (size_t i = 0; i < f->count; i++) {
        if (f->issuers[i]->reload == NULL)
            continue;
        keys += reload_current(f->issuers[i]->reload)->keyset->count;
        retained += reload_retained(f->issuers[i]->reload);
    }
    atomic_store(&metrics_process.keys_published, keys);
    atomic_store(&metrics_process.keyset_generation, f->generation);
    atomic_store(&metrics_process.keys_retained, retained);
}

/* Why is's upstream makes it unready (mirror_ready: never answered,
 * another issuer, stale) or its last read failed, as its status row says:
 * 1, or 0 when all is well. The fleet's upstream gauges follow: the
 * oldest last good answer of every mirrored issuer (0 while one has never
 * answered), and how many name another issuer. */
static int fleet_upstream_problem(const struct fleet *f, const struct fleet_issuer *is, char *out, size_t len,
                                  long long *oldest, size_t *mismatches)
{
    char why[512];
    struct mirror_status st;

    if (!mirror_pool_problem(f->pool, is->mirror, why, sizeof(why), &st)) {
        *oldest = *oldest < 0 || (long long)st.last_success < *oldest ? (long long)st.last_success : *oldest;
        return 0;
    }
    *oldest = *oldest < 0 || (long long)st.last_success < *oldest ? (long long)st.last_success : *oldest;
    *mismatches += st.issuer_mismatch != 0;
    snprintf(out, len, "its upstream %s: %s",
             st.has_data ? "fails (its last good set keeps serving)" : "has not answered", why);
    return 1;
}

struct status *fleet_status(const struct fleet *f)
{
    char what[PATH_MAX + 64];
    size_t served = 0, refused = 0;
    struct status *st;

    for (size_t i = 0; i < f->count; i++) {
        served += f->issuers[i]->reload != NULL;
        refused += f->issuers[i]->problem != NULL || f->issuers[i]->keys_problem != NULL;
    }
    fleet_gauges(f);
    atomic_store(&metrics_process.fleet_enabled, 1);
    atomic_store(&metrics_process.fleet_issuers, served);
    atomic_store(&metrics_process.fleet_files_refused, refused);
    snprintf(what, sizeof(what), "a fleet: %zu issuers of %s served, %zu files refused", served, f->cfg->issuers_dir,
             refused);
    if ((st = status_new(what, "-")) == NULL)
        return NULL;
    st->fleet = 1;
    st->published_at = f->current->loaded_at;
    st->reload_at = f->last_pass;
    st->reload_failures = f->refusals;
    for (size_t i = 0; i < f->count && st->reload_error == NULL; i++)
        if (f->issuers[i]->problem != NULL &&
            asprintf(&st->reload_error, "issuer file %s: %s", f->issuers[i]->path, f->issuers[i]->problem) < 0) {
            st->reload_error = NULL;
            st->failed = 1;
        }
    long long oldest = -1; /* the oldest last good answer of a mirrored issuer; -1: none mirrors */
    size_t mismatches = 0;

    for (size_t i = 0; i < f->count; i++) {
        const struct fleet_issuer *is = f->issuers[i];
        const struct snapshot *snap = is->reload ? reload_current(is->reload) : NULL;
        char keys[CONFIG_ERR_MAX + 64], upstream[1024 + 600];
        struct status_issuer row = {.name = is->name, .file = is->path, .problem = is->problem};
        if (row.problem == NULL && is->keys_problem != NULL) {
            snprintf(keys, sizeof(keys), "its keys cannot be read: %s", is->keys_problem);
            row.problem = keys;
        }
        if (f->pool != NULL && is->mirror != NULL &&
            fleet_upstream_problem(f, is, upstream, sizeof(upstream), &oldest, &mismatches) && row.problem == NULL)
            row.problem = upstream;
        if (snap != NULL) {
            row.issuer = is->cfg->issuers.items[0];
            row.jwks_etag = snap->jwks.etag;
            row.nkeys = snap->keyset->count;
            row.published_at = snap->loaded_at;
        }
        status_add_issuer(st, &row);
    }
    if (oldest >= 0) {
        atomic_store(&metrics_process.upstream_last_success, oldest);
        atomic_store(&metrics_process.upstream_issuer_mismatch, (int)mismatches);
    }
    return st;
}

/* The directory of path (its dirname), allocated; NULL out of memory. */
static char *fleet_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL)
        return strdup(".");
    return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

static int fleet_by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t fleet_watch_dirs(const struct fleet *f, char ***dirs)
{
    size_t n = 1, m = 0;

    for (size_t i = 0; i < f->count; i++)
        n += f->issuers[i]->cfg ? f->issuers[i]->cfg->key_files.count : 0;
    if ((*dirs = calloc(n, sizeof(**dirs))) == NULL || ((*dirs)[m++] = strdup(f->cfg->issuers_dir)) == NULL) {
        free(*dirs);
        *dirs = NULL;
        return 0;
    }
    for (size_t i = 0; i < f->count; i++)
        for (size_t k = 0; f->issuers[i]->cfg && k < f->issuers[i]->cfg->key_files.count; k++)
            if (((*dirs)[m] = fleet_dir_of(f->issuers[i]->cfg->key_files.items[k])) != NULL)
                m++;
    qsort(*dirs, m, sizeof(**dirs), fleet_by_string);
    n = m;
    m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && strcmp((*dirs)[m - 1], (*dirs)[i]) == 0)
            free((*dirs)[i]);
        else
            (*dirs)[m++] = (*dirs)[i];
    }
    return m;
}

void fleet_save_at_exit(struct fleet *f, time_t now, int64_t now_ms)
{
    for (size_t i = 0; i < f->count; i++)
        if (f->issuers[i]->reload != NULL) {
            log_thread_prefix(f->issuers[i]->log_prefix);
            reload_save_at_exit(f->issuers[i]->reload, now, now_ms);
            log_thread_prefix(NULL);
        }
}

void fleet_free(struct fleet *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->count; i++)
        fleet_issuer_free(f->issuers[i]);
    free(f->issuers);
    snapshot_release(f->current);
    free(f);
}
