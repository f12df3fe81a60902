/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/keys_command.h"

#include "cli/fleet_each.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keys/history.h"
#include "keys/keydir.h"
#include "keys/keystore.h"
#include "util/jsonw.h"
#include "keys/keyset.h"
#include "util/printable.h"
#include "util/paths.h"
#include "publish/publish.h"
#include "push/sync.h"
#include "push/target.h"
#include "util/clock.h"

/* How much of a key's source the table quotes. */
#define KEYS_SOURCE_SHOWN 1024

/* What is printed for one key of the set. */
struct keys_row {
    const struct key *key;
    char size[16];                           /* "2048" or "P-256" */
    char first_seen[CLOCK_RFC3339_SIZE];     /* RFC 3339, or "new" for a key serve has not published yet */
    char retained_until[CLOCK_RFC3339_SIZE]; /* RFC 3339, or "" while the key is in the inputs */
    struct keydir_role role; /* a --signing-key-dir key's role (keydir_role_of); name NULL for other keys */
    const char *store;       /* with --etcd-servers, a directory key's source: "etcd" or "local copy"; else NULL */
};

static void keys_fill_row(struct keys_row *row, const struct key *k, const struct history_entry *e, int known_before,
                          unsigned long retention)
{
    row->key = k;
    if (k->curve != NULL)
        snprintf(row->size, sizeof(row->size), "%s", k->curve);
    else
        snprintf(row->size, sizeof(row->size), "%d", k->bits);
    if (known_before)
        clock_rfc3339(e->first_seen, row->first_seen);
    else
        snprintf(row->first_seen, sizeof(row->first_seen), "new");
    row->retained_until[0] = '\0';
    if (!e->present)
        clock_rfc3339(history_until(e, retention), row->retained_until);
}

/* The table, one key a line; the source is quoted, as a state file or a
 * file name could hold a newline or a terminal escape. */
static void keys_print_table(const struct keys_row *rows, size_t n)
{
    char source[KEYS_SOURCE_SHOWN];

    printf("%-43s  %-5s  %-5s  %-34s  %-20s  %-20s  %s\n", "KID", "ALG", "SIZE", "ROLE", "FIRST SEEN", "RETAINED UNTIL",
           "SOURCE");
    for (size_t i = 0; i < n; i++)
        printf("%-43s  %-5s  %-5s  %-34s  %-20s  %-20s  %s\n", rows[i].key->kid, rows[i].key->alg, rows[i].size,
               rows[i].role.name ? rows[i].role.text : "-", rows[i].first_seen,
               rows[i].retained_until[0] ? rows[i].retained_until : "-",
               printable_quote(rows[i].key->source, source, sizeof(source)));
}

static void keys_json_str_or_null(struct jsonw *w, const char *name, const char *value)
{
    jsonw_raw(w, ",", 1);
    jsonw_key(w, name);
    jsonw_str_or_null(w, value);
}

/* What one --publish-to target holds of each document (keys reads it,
 * writes nothing). */
struct keys_published {
    const char *url;
    struct push_inspection seen[PUSH_NOBJECTS];
};

/* Reads every --publish-to target; NULL when there are none or out of
 * memory. A target that cannot be opened or read says so in its rows. */
static struct keys_published *keys_read_published(const struct config *cfg, const struct snapshot *snap)
{
    struct keys_published *p = cfg->publish_to.count ? calloc(cfg->publish_to.count, sizeof(*p)) : NULL;
    struct push_docs docs;

    push_docs_init(&docs, snap, clock_wall_ms());
    for (size_t i = 0; p != NULL && i < cfg->publish_to.count; i++) {
        struct push_target t;
        p[i].url = cfg->publish_to.items[i];
        if (push_target_open(cfg, p[i].url, NULL, &t, p[i].seen[0].err, sizeof(p[i].seen[0].err)) != 0) {
            for (size_t k = 0; k < PUSH_NOBJECTS; k++) {
                p[i].seen[k].seen = PUSH_SEEN_ERROR;
                memcpy(p[i].seen[k].err, p[i].seen[0].err, sizeof(p[i].seen[k].err));
            }
            continue;
        }
        push_inspect(t.ops, t.store, &docs, p[i].seen);
        push_target_close(&t);
    }
    return p;
}

/* The state column: "current", "differs: why", "error: message". */
static void keys_seen_text(const struct push_inspection *s, char *out, size_t len)
{
    char shown[800];

    if (s->seen == PUSH_SEEN_ERROR)
        snprintf(out, len, "error: %s", printable_copy(s->err, shown, sizeof(shown) - 4));
    else if (s->seen == PUSH_SEEN_DIFFERS)
        snprintf(out, len, "differs: %s", s->why);
    else
        snprintf(out, len, "%s", push_seen_name(s->seen));
}

/* The generation metadata (Unix milliseconds) as a time, RFC 3339, or "-". */
static void keys_generation_time(const char *gen, char *out, size_t len)
{
    char *end, when[CLOCK_RFC3339_SIZE];
    long long t = gen[0] ? strtoll(gen, &end, 10) : 0;

    if (gen[0] && *end == '\0' && t > 0)
        snprintf(out, len, "%s", clock_rfc3339((time_t)(t / 1000), when));
    else
        snprintf(out, len, "-");
}

/* The table of what each target holds, after the keys. */
static void keys_print_published_table(const struct keys_published *p, size_t n)
{
    char state[900], gen[32];

    printf("\n%-40s  %-33s  %-20s  %-29s  %s\n", "PUBLISHED TO", "OBJECT", "GENERATION", "LAST MODIFIED", "STATE");
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < PUSH_NOBJECTS; k++) {
            const struct push_inspection *s = &p[i].seen[k];
            keys_seen_text(s, state, sizeof(state));
            keys_generation_time(s->generation, gen, sizeof(gen));
            printf("%-40s  %-33s  %-20s  %-29s  %s\n", p[i].url, k == 0 ? PATHS_JWKS + 1 : PATHS_DISCOVERY + 1, gen,
                   s->last_modified[0] ? s->last_modified : "-", state);
        }
}

/* The same as JSON members of the keys object: ,"published":[...]. */
static void keys_json_published(struct jsonw *w, const struct keys_published *p, size_t n)
{
    char gen[32];

    jsonw_lit(w, ",\"published\":[");
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < PUSH_NOBJECTS; k++) {
            const struct push_inspection *s = &p[i].seen[k];
            jsonw_lit(w, i + k ? ",{\"target\":" : "{\"target\":");
            jsonw_str(w, p[i].url);
            keys_json_str_or_null(w, "object", k == 0 ? PATHS_JWKS + 1 : PATHS_DISCOVERY + 1);
            keys_json_str_or_null(w, "state", push_seen_name(s->seen));
            keys_json_str_or_null(w, "why", s->seen == PUSH_SEEN_DIFFERS ? s->why : NULL);
            keys_generation_time(s->generation, gen, sizeof(gen));
            keys_json_str_or_null(w, "generation", strcmp(gen, "-") ? gen : NULL);
            keys_json_str_or_null(w, "last_modified", s->last_modified[0] ? s->last_modified : NULL);
            keys_json_str_or_null(w, "error", s->seen == PUSH_SEEN_ERROR ? s->err : NULL);
            jsonw_lit(w, "}");
        }
    jsonw_lit(w, "]");
}

/* A number member: in JSON, sizes are numbers (bits: the RSA modulus's,
 * or the EC field's), as a program reading them wants them. */
static void keys_json_int(struct jsonw *w, const char *name, int value)
{
    char digits[16];

    jsonw_raw(w, ",", 1);
    jsonw_key(w, name);
    jsonw_raw(w, digits, (size_t)snprintf(digits, sizeof(digits), "%d", value));
}

/* The keys as one JSON line; with issuer (a fleet's name of it), that
 * line starts with "issuer": the name. */
static int keys_print_json(const char *issuer, const struct keys_row *rows, size_t n, const struct keys_published *pub,
                           size_t npub)
{
    struct jsonw w = {0};
    char *out;
    size_t len;

    if (issuer != NULL) {
        jsonw_lit(&w, "{\"issuer\":");
        jsonw_str(&w, issuer);
        jsonw_lit(&w, ",\"keys\":[");
    } else {
        jsonw_lit(&w, "{\"keys\":[");
    }
    for (size_t i = 0; i < n; i++) {
        const struct key *k = rows[i].key;
        jsonw_lit(&w, i ? ",{\"kid\":" : "{\"kid\":");
        jsonw_str(&w, k->kid);
        keys_json_str_or_null(&w, "alg", k->alg);
        keys_json_int(&w, "size", k->bits);
        keys_json_str_or_null(&w, "curve", k->curve);
        keys_json_str_or_null(&w, "source", k->source);
        keys_json_str_or_null(&w, "first_seen", strcmp(rows[i].first_seen, "new") ? rows[i].first_seen : NULL);
        keys_json_str_or_null(&w, "retained_until", rows[i].retained_until[0] ? rows[i].retained_until : NULL);
        keys_json_str_or_null(&w, "role", rows[i].role.name);
        keys_json_str_or_null(&w, "role_until", rows[i].role.until[0] ? rows[i].role.until : NULL);
        if (rows[i].store != NULL)
            keys_json_str_or_null(&w, "key_store", rows[i].store);
        jsonw_lit(&w, "}");
    }
    jsonw_lit(&w, "]");
    if (pub != NULL)
        keys_json_published(&w, pub, npub);
    jsonw_lit(&w, "}\n");
    if (jsonw_finish(&w, &out, &len) != 0)
        return -1;
    fwrite(out, 1, len, stdout);
    free(out);
    return 0;
}

/* Copies the kids the history holds before this run: a key that is not
 * among them is one serve has not published yet. */
static char *keys_kids_before(const struct history *h)
{
    char *kids = calloc(h->count + 1, KEY_KID_MAX + 1);

    for (size_t i = 0; kids != NULL && i < h->count; i++)
        memcpy(kids + i * (KEY_KID_MAX + 1), h->entries[i].kid, strlen(h->entries[i].kid) + 1);
    return kids;
}

/* Whether kid is among the n kids keys_kids_before copied. */
static int keys_was_known(const char *kids, size_t n, const char *kid)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kids + i * (KEY_KID_MAX + 1), kid) == 0)
            return 1;
    return 0;
}

/* With --etcd-servers: etcd's key set (each sealed key opened, as a
 * signer would), or NULL with a warning on stderr naming why (the keys'
 * source then reads "local copy"). */
static struct keydir *keys_etcd_set(const struct config *cfg)
{
    const char *servers[ETCD_SERVERS_MAX];
    struct etcd_config ec = {.servers = servers,
                             .nservers = cfg->etcd_servers.count,
                             .ca_file = cfg->etcd_cafile,
                             .cert_file = cfg->etcd_certfile,
                             .key_file = cfg->etcd_keyfile};
    struct keystore_set set = {0};
    struct seal_key key;
    struct keystore ks;
    struct etcd *e = NULL;
    struct keydir *kd = NULL;
    char err[1024] = "out of memory";

    for (size_t i = 0; i < cfg->etcd_servers.count && i < ETCD_SERVERS_MAX; i++)
        servers[i] = cfg->etcd_servers.items[i];
    if (ec.nservers > ETCD_SERVERS_MAX)
        ec.nservers = ETCD_SERVERS_MAX;
    if (seal_key_read("signing-key-encryption-key-file", cfg->signing_key_encryption_key_file, &key, err,
                      sizeof(err)) == 0 &&
        (e = etcd_new(&ec)) != NULL) {
        keystore_init(&ks, e, cfg->etcd_prefix, &key);
        if (keystore_read(&ks, &set, NULL, NULL, err, sizeof(err)) != ETCD_OK)
            ; /* err says why */
        else if (set.kd == NULL)
            snprintf(err, sizeof(err), "etcd holds no key set under %s yet", cfg->etcd_prefix);
        else {
            kd = set.kd;
            set.kd = NULL;
        }
        keystore_set_free(&set);
        seal_key_wipe(&key);
    }
    if (kd == NULL)
        fprintf(stderr, "oidc-discovery keys: warning: %s\n", err);
    etcd_free(e);
    return kd;
}

/* Adds a directory key's source to its row and its role's text: "etcd"
 * when etcd's set holds it, "local copy" when only the directory does. */
static void keys_add_source(struct keys_row *row, const struct keydir *etcd_set, const char *kid)
{
    size_t n = strlen(row->role.text);

    if (row->role.name == NULL)
        return;
    row->store = etcd_set != NULL && keydir_find(etcd_set, kid) >= 0 ? "etcd" : "local copy";
    if (n + 16 < sizeof(row->role.text))
        snprintf(row->role.text + n, sizeof(row->role.text) - n, " (%s)", row->store);
}

/* The keys of one issuer: of the command line's, or (issuer set) of the
 * fleet's issuer of that name, whose table a heading names. */
static int keys_of(const struct config *cfg, const char *issuer, size_t index)
{
    char err[1024] = "";
    time_t now = time(NULL);
    struct history *h = publish_history_load(cfg, now, err, sizeof(err));
    size_t nbefore = h ? h->count : 0;
    char *before = h ? keys_kids_before(h) : NULL;
    struct rotation_policy policy = publish_rotation_policy(cfg);
    struct keydir *signer = NULL, *etcd_set = NULL;
    struct snapshot *snap = NULL;
    const struct keyset *ks;
    struct keys_row *rows = NULL;
    struct keys_published *pub = NULL;
    int json = strcmp(cfg->output, "json") == 0, rc = 2;

    if (before == NULL || publish_build(cfg, h, now, &snap, err, sizeof(err)) != 0 ||
        publish_read_signer(cfg, &signer, err, sizeof(err)) != 0 ||
        (rows = calloc(snap->keyset->count, sizeof(*rows))) == NULL) {
        fprintf(stderr, "oidc-discovery keys: %s\n", err[0] ? err : "out of memory");
        goto out;
    }
    ks = snap->keyset;
    if (cfg->etcd_servers.count > 0 && signer != NULL)
        etcd_set = keys_etcd_set(cfg);
    for (size_t i = 0; i < ks->count; i++) {
        keys_fill_row(&rows[i], &ks->keys[i], history_find(h, ks->keys[i].kid),
                      keys_was_known(before, nbefore, ks->keys[i].kid), cfg->key_retention);
        keydir_role_of(signer, ks->keys[i].kid, &policy, now, &rows[i].role);
        if (cfg->etcd_servers.count > 0)
            keys_add_source(&rows[i], etcd_set, ks->keys[i].kid);
    }
    if (cfg->publish_to.count > 0 && (pub = keys_read_published(cfg, snap)) == NULL) {
        fprintf(stderr, "oidc-discovery keys: out of memory\n");
        goto out;
    }
    if (!json && issuer != NULL)
        printf("%sissuer %s: %s\n", index > 0 ? "\n" : "", issuer, cfg->issuers.items[0]);
    if (!json)
        keys_print_table(rows, ks->count);
    if (!json && pub != NULL)
        keys_print_published_table(pub, cfg->publish_to.count);
    rc = json && keys_print_json(issuer, rows, ks->count, pub, cfg->publish_to.count) != 0 ? 2 : 0;
out:
    keydir_free(signer);
    keydir_free(etcd_set);
    free(pub);
    free(rows);
    free(before);
    snapshot_release(snap);
    history_free(h);
    return rc;
}

/* fleet_each's step: one issuer of the fleet. */
static int keys_of_issuer(struct config *cfg, const char *name, size_t index, void *arg)
{
    (void)arg;
    return keys_of(cfg, name, index);
}

int keys_command(const struct config *cfg)
{
    if (cfg->issuers_dir != NULL)
        return fleet_each(cfg, "keys", keys_of_issuer, NULL);
    return keys_of(cfg, NULL, 0);
}
