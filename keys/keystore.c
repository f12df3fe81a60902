/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/keystore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys/key.h"
#include "keys/keyfile.h"
#include "util/file.h"
#include "util/json.h"
#include "util/jsonw.h"

/* The longest etcd key this store uses: the prefix (at most 256, config's
 * check) and "keys/" and a kid. */
#define KEYSTORE_NAME_MAX 512

/* P + suffix into name. */
static void keystore_name(const struct keystore *ks, const char *suffix, char name[KEYSTORE_NAME_MAX])
{
    snprintf(name, KEYSTORE_NAME_MAX, "%s%s", ks->prefix, suffix);
}

void keystore_init(struct keystore *ks, struct etcd *etcd, const char *prefix, const struct seal_key *key)
{
    char host[64] = "";

    memset(ks, 0, sizeof(*ks));
    ks->etcd = etcd;
    ks->prefix = prefix;
    ks->key = key;
    gethostname(host, sizeof(host) - 1);
    snprintf(ks->id, sizeof(ks->id), "%s pid %ld", host[0] ? host : "?", (long)getpid());
    snprintf(ks->node, sizeof(ks->node), "%.40s-%ld", host[0] ? host : "?", (long)getpid());
}

void keystore_set_free(struct keystore_set *set)
{
    for (size_t i = 0; i < set->nnodes; i++)
        free(set->nodes[i].published);
    free(set->nodes);
    for (size_t i = 0; set->pem != NULL && i < set->npem; i++)
        seal_free(set->pem[i], set->pem_len[i]);
    free(set->pem);
    free(set->pem_len);
    keydir_free(set->kd);
    memset(set, 0, sizeof(*set));
}

/* The value of P keys/KID in kvs, or NULL. */
static const struct etcd_kv *keystore_find(const struct etcd_kvs *kvs, const char *name)
{
    for (size_t i = 0; i < kvs->count; i++)
        if (strcmp(kvs->kv[i].key, name) == 0)
            return &kvs->kv[i];
    return NULL;
}

/* Opens kid's sealed key (the value of the etcd key name) and checks that
 * it is kid's. The PEM in *pem, or -1 with err naming the etcd key. */
static int keystore_open_key(const struct keystore *ks, const char *kid, const struct etcd_kv *kv, char **pem,
                             size_t *len, char *err, size_t errlen)
{
    char computed[KEY_KID_LEN + 1];
    EVP_PKEY *priv;

    if ((*pem = seal_open(ks->key, kid, kv->key, kv->value, kv->value_len, len, err, errlen)) == NULL)
        return -1;
    priv = keyfile_private_from_pem(*pem, *len);
    if (priv == NULL || key_kid(priv, computed) != 0 || strcmp(computed, kid) != 0) {
        snprintf(err, errlen, "etcd key %s opens, but does not hold kid=%s's private key: refused", kv->key, kid);
        EVP_PKEY_free(priv);
        seal_free(*pem, *len);
        *pem = NULL;
        return -1;
    }
    EVP_PKEY_free(priv);
    return 0;
}

/* Whether name is one of the store's own keys: P rotation, P rotator,
 * P keys/KID of a kid set names. */
static int keystore_own(const struct keystore *ks, const struct keydir *kd, const char *name)
{
    size_t plen = strlen(ks->prefix);
    const char *rest = name + plen;

    if (strcmp(rest, KEYSTORE_ROTATION) == 0 || strcmp(rest, KEYSTORE_ROTATOR) == 0 ||
        strncmp(rest, KEYSTORE_NODES, strlen(KEYSTORE_NODES)) == 0)
        return 1;
    return strncmp(rest, KEYSTORE_KEYS, strlen(KEYSTORE_KEYS)) == 0 && kd != NULL &&
           keydir_find(kd, rest + strlen(KEYSTORE_KEYS)) >= 0;
}

/* Reads one node's report (a value that is not one is left out: a
 * signer that cannot report counts as publishing nothing). */
static void keystore_parse_node(struct keystore_set *out, const char *id, const struct etcd_kv *kv)
{
    char why[128];
    struct json_value *root = json_parse(kv->value, kv->value_len, why, sizeof(why));
    const struct json_value *pub = json_get(root, "published"), *v;
    const char *signing = json_get_str(root, "signing");
    struct keystore_node *n, *nodes;

    if (root == NULL || pub == NULL || pub->type != JSON_ARRAY ||
        (nodes = realloc(out->nodes, (out->nnodes + 1) * sizeof(*nodes))) == NULL) {
        json_free(root);
        return;
    }
    out->nodes = nodes;
    n = &nodes[out->nnodes++];
    memset(n, 0, sizeof(*n));
    snprintf(n->id, sizeof(n->id), "%s", id);
    snprintf(n->signing, sizeof(n->signing), "%s", signing != NULL && strlen(signing) <= KEY_KID_LEN ? signing : "");
    n->published = calloc(KEYSTORE_REPORT_MAX, sizeof(*n->published));
    for (v = pub->child; n->published != NULL && v != NULL && n->npublished < KEYSTORE_REPORT_MAX; v = v->next)
        if (v->type == JSON_STRING && strlen(v->str) <= KEY_KID_LEN)
            memcpy(n->published[n->npublished++], v->str, strlen(v->str) + 1);
    json_free(root);
}

const struct keystore_node *keystore_node_find(const struct keystore_set *set, const char *id)
{
    for (size_t i = 0; i < set->nnodes; i++)
        if (strcmp(set->nodes[i].id, id) == 0)
            return &set->nodes[i];
    return NULL;
}

/* Reads the key set of kvs into out. ETCD_OK, or ETCD_BAD_ANSWER with err. */
static enum etcd_rc keystore_parse(struct keystore *ks, const struct etcd_kvs *kvs, struct keystore_set *out,
                                   keyset_warn_cb warn, void *warn_ctx, char *err, size_t errlen)
{
    char name[KEYSTORE_NAME_MAX], msg[KEYSTORE_NAME_MAX + 200];
    const struct etcd_kv *rot, *holder;
    struct keydir *kd;

    keystore_name(ks, KEYSTORE_NODES, name);
    for (size_t i = 0; i < kvs->count; i++)
        if (strncmp(kvs->kv[i].key, name, strlen(name)) == 0)
            keystore_parse_node(out, kvs->kv[i].key + strlen(name), &kvs->kv[i]);
    keystore_name(ks, KEYSTORE_ROTATOR, name);
    if ((holder = keystore_find(kvs, name)) != NULL)
        snprintf(out->rotator, sizeof(out->rotator), "%.*s", (int)(holder->value_len < 127 ? holder->value_len : 127),
                 (const char *)holder->value);
    keystore_name(ks, KEYSTORE_ROTATION, name);
    if ((rot = keystore_find(kvs, name)) == NULL)
        return ETCD_OK;
    if (keydir_parse_text(name, (const char *)rot->value, rot->value_len, &kd, err, errlen) != 0)
        return ETCD_BAD_ANSWER;
    out->kd = kd;
    out->rotation_rev = rot->mod_rev;
    out->pem = calloc(kd->count ? kd->count : 1, sizeof(*out->pem));
    out->pem_len = calloc(kd->count ? kd->count : 1, sizeof(*out->pem_len));
    if (out->pem == NULL || out->pem_len == NULL) {
        snprintf(err, errlen, "out of memory");
        return ETCD_BAD_ANSWER;
    }
    out->npem = kd->count;
    for (size_t i = 0; i < kd->count; i++) {
        const struct etcd_kv *kv;
        char suffix[64];
        snprintf(suffix, sizeof(suffix), KEYSTORE_KEYS "%s", kd->rot[i].kid);
        keystore_name(ks, suffix, name);
        if ((kv = keystore_find(kvs, name)) == NULL) {
            snprintf(err, errlen, "etcd key %s is missing, though %s%s names kid=%s: refused", name, ks->prefix,
                     KEYSTORE_ROTATION, kd->rot[i].kid);
            return ETCD_BAD_ANSWER;
        }
        if (keystore_open_key(ks, kd->rot[i].kid, kv, &out->pem[i], &out->pem_len[i], err, errlen) != 0)
            return ETCD_BAD_ANSWER;
    }
    for (size_t i = 0; warn != NULL && i < kvs->count; i++)
        if (!keystore_own(ks, kd, kvs->kv[i].key)) {
            snprintf(msg, sizeof(msg), "etcd key %s is none of the signer's: neither published nor used",
                     kvs->kv[i].key);
            warn(warn_ctx, msg);
        }
    return ETCD_OK;
}

enum etcd_rc keystore_read(struct keystore *ks, struct keystore_set *out, keyset_warn_cb warn, void *warn_ctx,
                           char *err, size_t errlen)
{
    struct etcd_kvs kvs;
    enum etcd_rc rc;

    memset(out, 0, sizeof(*out));
    if ((rc = etcd_range(ks->etcd, ks->prefix, 1, &kvs, err, errlen)) != ETCD_OK)
        return rc;
    out->revision = kvs.revision;
    rc = keystore_parse(ks, &kvs, out, warn, warn_ctx, err, errlen);
    etcd_kvs_free(&kvs);
    if (rc != ETCD_OK)
        keystore_set_free(out);
    return rc;
}

/* The operations of a write: each key of kd that known lacks, sealed;
 * each key of known that kd lacks, deleted; the document. ops, names and
 * sealed have room for kd->count + known->count + 1. Returns how many. */
static size_t keystore_ops(struct keystore *ks, const char *dir, const struct keydir *kd, const struct keydir *known,
                           struct etcd_op *ops, char (*names)[KEYSTORE_NAME_MAX], unsigned char **sealed,
                           const char *doc, size_t doclen, char *err, size_t errlen)
{
    size_t n = 0, plen, slen;
    char suffix[64], *pem;

    for (size_t i = 0; i < kd->count; i++) {
        if (known != NULL && keydir_find(known, kd->rot[i].kid) >= 0)
            continue;
        snprintf(suffix, sizeof(suffix), KEYSTORE_KEYS "%s", kd->rot[i].kid);
        keystore_name(ks, suffix, names[n]);
        if ((pem = keydir_key_pem(dir, kd->rot[i].kid, &plen, err, errlen)) == NULL)
            return (size_t)-1;
        sealed[n] = seal_value(ks->key, kd->rot[i].kid, names[n], pem, plen, &slen, err, errlen);
        file_free(pem, plen);
        if (sealed[n] == NULL)
            return (size_t)-1;
        ops[n] = (struct etcd_op){.type = ETCD_PUT, .key = names[n], .value = sealed[n], .value_len = slen};
        n++;
    }
    for (size_t i = 0; known != NULL && i < known->count; i++) {
        if (keydir_find(kd, known->rot[i].kid) >= 0)
            continue;
        snprintf(suffix, sizeof(suffix), KEYSTORE_KEYS "%s", known->rot[i].kid);
        keystore_name(ks, suffix, names[n]);
        ops[n] = (struct etcd_op){.type = ETCD_DELETE, .key = names[n]};
        n++;
    }
    keystore_name(ks, KEYSTORE_ROTATION, names[n]);
    ops[n] = (struct etcd_op){.type = ETCD_PUT, .key = names[n], .value = doc, .value_len = doclen};
    return n + 1;
}

enum etcd_rc keystore_write(struct keystore *ks, const char *dir, const struct keydir *kd, const struct keydir *known,
                            int64_t expect_rev, int *written, int64_t *new_rev, char *err, size_t errlen)
{
    size_t room = kd->count + (known ? known->count : 0) + 1, n = 0;
    struct etcd_op *ops = calloc(room, sizeof(*ops));
    char(*names)[KEYSTORE_NAME_MAX] = calloc(room, sizeof(*names));
    unsigned char **sealed = calloc(room, sizeof(*sealed));
    char rotation[KEYSTORE_NAME_MAX], *doc = NULL;
    size_t doclen = 0;
    enum etcd_rc rc = ETCD_REFUSED;
    struct etcd_cmp cmp;

    *written = 0;
    keystore_name(ks, KEYSTORE_ROTATION, rotation);
    cmp = (struct etcd_cmp){.key = rotation, .target = expect_rev ? ETCD_MOD : ETCD_CREATE, .revision = expect_rev};
    if (ops == NULL || names == NULL || sealed == NULL || keydir_render_text(kd, &doc, &doclen) != 0)
        snprintf(err, errlen, "out of memory");
    else if ((n = keystore_ops(ks, dir, kd, known, ops, names, sealed, doc, doclen, err, errlen)) != (size_t)-1)
        rc = etcd_txn(ks->etcd, &cmp, 1, ops, n, written, new_rev, err, errlen);
    for (size_t i = 0; sealed != NULL && i < room; i++)
        free(sealed[i]);
    free(sealed);
    free(names);
    free(ops);
    free(doc);
    return rc;
}

int keystore_adopt(const struct keystore_set *set, const char *dir, char *err, size_t errlen)
{
    const struct keydir *kd = set->kd;

    for (size_t i = 0; i < kd->count; i++) {
        size_t len = 0;
        char *have = keydir_key_pem(dir, kd->rot[i].kid, &len, err, errlen);
        int same = have != NULL && len == set->pem_len[i] && memcmp(have, set->pem[i], len) == 0;
        file_free(have, len);
        if (!same && keydir_install_key(dir, kd->rot[i].kid, set->pem[i], set->pem_len[i], err, errlen) != 0)
            return -1;
    }
    return keydir_save(dir, kd, err, errlen);
}

enum etcd_rc keystore_lease(struct keystore *ks, int64_t ttl_s, char *err, size_t errlen)
{
    return ks->lease != 0 ? ETCD_OK : etcd_lease_grant(ks->etcd, ttl_s, &ks->lease, err, errlen);
}

enum etcd_rc keystore_report(struct keystore *ks, const char (*published)[KEY_KID_LEN + 1], size_t n,
                             const char *signing, char *err, size_t errlen)
{
    char name[KEYSTORE_NAME_MAX], suffix[128], *text = NULL;
    struct jsonw w = {0};
    struct etcd_op op = {.type = ETCD_PUT, .key = name, .lease = ks->lease};
    size_t len = 0;
    int done = 0;
    int64_t rev = 0;
    enum etcd_rc rc;

    jsonw_lit(&w, "{\"published\":[");
    for (size_t i = 0; i < n; i++) {
        jsonw_raw(&w, ",", i ? 1 : 0);
        jsonw_str(&w, published[i]);
    }
    jsonw_lit(&w, "],\"signing\":");
    jsonw_str(&w, signing);
    jsonw_lit(&w, "}");
    if (jsonw_finish(&w, &text, &len) != 0) {
        snprintf(err, errlen, "out of memory");
        return ETCD_REFUSED;
    }
    snprintf(suffix, sizeof(suffix), KEYSTORE_NODES "%s", ks->node);
    keystore_name(ks, suffix, name);
    op.value = text;
    op.value_len = len;
    rc = etcd_txn(ks->etcd, NULL, 0, &op, 1, &done, &rev, err, errlen);
    free(text);
    return rc;
}

enum etcd_rc keystore_campaign(struct keystore *ks, int64_t ttl_s, int *won, char *err, size_t errlen)
{
    char name[KEYSTORE_NAME_MAX];
    struct etcd_cmp cmp = {.key = name, .target = ETCD_CREATE, .revision = 0};
    struct etcd_op op = {.type = ETCD_PUT, .key = name, .value = ks->id, .value_len = strlen(ks->id)};
    int64_t rev = 0;
    enum etcd_rc rc;

    *won = 0;
    keystore_name(ks, KEYSTORE_ROTATOR, name);
    if ((rc = keystore_lease(ks, ttl_s, err, errlen)) != ETCD_OK)
        return rc;
    op.lease = ks->lease;
    if ((rc = etcd_txn(ks->etcd, &cmp, 1, &op, 1, won, &rev, err, errlen)) != ETCD_OK)
        return rc;
    return ETCD_OK;
}

enum etcd_rc keystore_keepalive(struct keystore *ks, int *held, char *err, size_t errlen)
{
    int64_t ttl = 0;
    enum etcd_rc rc;

    *held = 0;
    if (ks->lease == 0)
        return ETCD_OK;
    if ((rc = etcd_lease_keepalive(ks->etcd, ks->lease, &ttl, err, errlen)) != ETCD_OK)
        return rc;
    *held = ttl > 0;
    if (!*held)
        ks->lease = 0;
    return ETCD_OK;
}

void keystore_resign(struct keystore *ks)
{
    char err[256];

    if (ks->lease != 0)
        etcd_lease_revoke(ks->etcd, ks->lease, err, sizeof(err));
    ks->lease = 0;
}
