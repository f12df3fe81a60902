#include "history.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "jsonw.h"

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

/* Appends a zeroed entry and returns it, or NULL on out of memory. */
static struct history_entry *history_push(struct history *h)
{
    if (h->count == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 8;
        struct history_entry *entries = realloc(h->entries, cap * sizeof(*entries));
        if (entries == NULL)
            return NULL;
        h->entries = entries;
        h->cap = cap;
    }
    memset(&h->entries[h->count], 0, sizeof(h->entries[0]));
    return &h->entries[h->count++];
}

/* base64 of the key's DER SubjectPublicKeyInfo: enough to publish the key
 * again after a restart, and public by nature. */
static char *history_encode_spki(EVP_PKEY *pub)
{
    unsigned char *der = NULL;
    int len = i2d_PUBKEY(pub, &der);
    char *b64 = len > 0 ? malloc((size_t)(len + 2) / 3 * 4 + 1) : NULL;

    if (b64 != NULL)
        EVP_EncodeBlock((unsigned char *)b64, der, len);
    OPENSSL_free(der);
    return b64;
}

/* The public key stored in spki, or NULL when it does not decode. */
static EVP_PKEY *history_decode_spki(const char *spki)
{
    size_t len = strlen(spki), pad = 0;
    unsigned char *der = malloc(len / 4 * 3 + 3);
    const unsigned char *p = der;
    EVP_PKEY *pub = NULL;
    int n;

    while (pad < len && pad < 2 && spki[len - 1 - pad] == '=')
        pad++;
    if (der != NULL && len % 4 == 0 && (n = EVP_DecodeBlock(der, (const unsigned char *)spki, (int)len)) > 0)
        pub = d2i_PUBKEY(NULL, &p, n - (int)pad);
    free(der);
    return pub;
}

static int history_add_entry(struct history *h, const struct key *k, time_t now)
{
    struct history_entry *e = history_push(h);

    if (e == NULL)
        return -1;
    memcpy(e->kid, k->kid, sizeof(e->kid));
    e->first_seen = e->last_seen = now;
    e->present = 1;
    e->spki = history_encode_spki(k->pub);
    e->source = strdup(k->source);
    if (e->spki == NULL || e->source == NULL) {
        history_entry_clear(e);
        h->count--;
        return -1;
    }
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
    EVP_PKEY *pub = history_decode_spki(e->spki);

    if (pub == NULL) {
        snprintf(err, errlen, "retained key %s: stored public key does not decode", e->kid);
        return -1;
    }
    snprintf(source, sizeof(source), "retained, last seen in %s", e->source);
    if (keyset_add(ks, pub, source, &dup, why, sizeof(why)) < 0) {
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
        if (!e->present && i < old_count && was_present[i])
            e->last_seen = now; /* it was there until this very check */
        if (e->present && i < old_count && !was_present[i])
            changed = 1; /* back from retention: the state must say present again */
        time_t until = e->last_seen + (time_t)retention;
        if (e->present || (retention > 0 && until > now)) {
            if (!e->present && rc == 0)
                rc = history_republish(e, inputs, err, errlen);
            if (!e->present && i < old_count && was_present[i]) {
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
    free(was_present);
    return rc < 0 ? rc : changed;
}

time_t history_next_expiry(const struct history *h, unsigned long retention)
{
    time_t next = 0;

    for (size_t i = 0; i < h->count; i++) {
        time_t until = h->entries[i].last_seen + (time_t)retention;
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

/* Writes all of buf to a new file beside path, flushes it to disk and
 * renames it over path, so a crash leaves either the old or the new state,
 * never a torn one. */
static int history_write_atomic(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
    char tmp[4096], dir[4096];
    int fd, rc = -1;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
        snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
        return -1;
    }
    if (write(fd, buf, len) == (ssize_t)len && fsync(fd) == 0 && close(fd) == 0) {
        fd = -1;
        if (rename(tmp, path) == 0)
            rc = 0;
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(tmp);
        return -1;
    }
    /* Make the rename itself durable. */
    snprintf(dir, sizeof(dir), "%s", path);
    if ((fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        fsync(fd);
        close(fd);
    }
    return 0;
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

/* Reads one stored entry, checking that the kid is the one its public key
 * gives: a state file is trusted only as far as it is consistent. */
static const char *history_parse_entry(yajl_val v, struct history_entry *e)
{
    const char *kid_path[] = {"kid", NULL}, *spki_path[] = {"spki", NULL}, *src_path[] = {"source", NULL};
    const char *first_path[] = {"first_seen", NULL}, *last_path[] = {"last_seen", NULL};
    const char *present_path[] = {"present", NULL};
    yajl_val kid = yajl_tree_get(v, kid_path, yajl_t_string), spki = yajl_tree_get(v, spki_path, yajl_t_string);
    yajl_val src = yajl_tree_get(v, src_path, yajl_t_string), present = yajl_tree_get(v, present_path, yajl_t_any);
    yajl_val first = yajl_tree_get(v, first_path, yajl_t_number), last = yajl_tree_get(v, last_path, yajl_t_number);
    char computed[KEY_KID_LEN + 1];
    EVP_PKEY *pub;

    if (!kid || !spki || !src || !first || !last || !YAJL_IS_INTEGER(first) || !YAJL_IS_INTEGER(last) ||
        !(YAJL_IS_TRUE(present) || YAJL_IS_FALSE(present)))
        return "missing or mistyped member (kid, spki, source, first_seen, last_seen, present)";
    if ((pub = history_decode_spki(spki->u.string)) == NULL)
        return "spki is not a public key";
    if (key_kid(pub, computed) != 0 || strcmp(computed, kid->u.string) != 0) {
        EVP_PKEY_free(pub);
        return "kid does not match spki";
    }
    EVP_PKEY_free(pub);
    memcpy(e->kid, computed, sizeof(e->kid));
    e->first_seen = (time_t)YAJL_GET_INTEGER(first);
    e->last_seen = (time_t)YAJL_GET_INTEGER(last);
    e->present = YAJL_IS_TRUE(present);
    e->spki = strdup(spki->u.string);
    e->source = strdup(src->u.string);
    return e->spki && e->source ? NULL : "out of memory";
}

static int history_parse(const char *path, const char *text, struct history *h, char *err, size_t errlen)
{
    const char *keys_path[] = {"keys", NULL}, *version_path[] = {"version", NULL};
    char yerr[256];
    yajl_val root = yajl_tree_parse(text, yerr, sizeof(yerr)), keys, version;
    int rc = -1;

    if (root == NULL) {
        snprintf(err, errlen, "state file %s: invalid JSON: %s", path, strtok(yerr, "\n"));
        return -1;
    }
    version = yajl_tree_get(root, version_path, yajl_t_number);
    keys = yajl_tree_get(root, keys_path, yajl_t_array);
    if (!version || !YAJL_IS_INTEGER(version) || YAJL_GET_INTEGER(version) != HISTORY_VERSION || !keys) {
        snprintf(err, errlen, "state file %s: not a version %d state file", path, HISTORY_VERSION);
        goto out;
    }
    for (size_t i = 0; i < YAJL_GET_ARRAY(keys)->len; i++) {
        struct history_entry *e = history_push(h);
        const char *why = e ? history_parse_entry(YAJL_GET_ARRAY(keys)->values[i], e) : "out of memory";
        if (why != NULL) {
            snprintf(err, errlen, "state file %s: keys[%zu]: %s", path, i, why);
            goto out;
        }
    }
    rc = 0;
out:
    yajl_tree_free(root);
    return rc;
}

int history_load(const char *path, struct history **out, char *err, size_t errlen)
{
    struct history *h = calloc(1, sizeof(*h));
    char *text = NULL;
    struct stat st;
    int fd = -1, rc = -1;

    *out = NULL;
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 && errno == ENOENT) {
        rc = 0;
    } else if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "state file %s: cannot read: %s", path, strerror(errno));
    } else if (st.st_size > HISTORY_MAX_FILE_SIZE || (text = calloc(1, (size_t)st.st_size + 1)) == NULL) {
        snprintf(err, errlen, "state file %s: too large", path);
    } else if (read(fd, text, (size_t)st.st_size) != st.st_size) {
        snprintf(err, errlen, "state file %s: cannot read: %s", path, strerror(errno));
    } else {
        rc = history_parse(path, text, h, err, errlen);
    }
    if (fd >= 0)
        close(fd);
    free(text);
    if (rc != 0) {
        history_free(h);
        h = NULL;
    }
    *out = h;
    return rc;
}
