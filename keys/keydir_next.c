/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/keydir_next.h"

#include <stdio.h>
#include <string.h>

/* Writes rotation.json; a failure ends the call (the caller must not act
 * on a state it could not write). 0, or -1 (out says so). */
static int keydir_next_save(const char *dir, const struct keydir *kd, enum rotation_action action,
                            struct keydir_next *out)
{
    if (keydir_save(dir, kd, out->err, sizeof(out->err)) == 0)
        return 0;
    out->failed = action;
    out->save_failed = 1;
    return -1;
}

/* Drops key i: out of rotation.json first, then its file. */
static int keydir_next_drop(const char *dir, struct keydir *kd, size_t i, struct keydir_step *step,
                            struct keydir_next *out)
{
    step->action = ROTATION_DROP;
    keydir_forget(kd, i, step->kid);
    if (keydir_next_save(dir, kd, ROTATION_DROP, out) != 0)
        return -1;
    if (keydir_remove_file(dir, step->kid, step->warning, sizeof(step->warning)) == 0)
        step->warning[0] = '\0';
    return 0;
}

/* Whether the private key of kid loads (and is kid's): a next key that
 * cannot sign is not promoted. */
static int keydir_next_can_sign(const char *dir, const char *kid)
{
    char err[1024];
    EVP_PKEY *priv = keydir_load_private(dir, kid, err, sizeof(err));

    EVP_PKEY_free(priv);
    return priv != NULL;
}

/* Promotes the next key, once its private key is known to load: a next
 * key that cannot sign never signed either, so it is discarded instead
 * (the next decision makes another). */
static int keydir_next_promote(const char *dir, struct keydir *kd, const struct rotation_policy *p, time_t now,
                               struct keydir_step *step, struct keydir_next *out)
{
    int x = rotation_find(kd->rot, kd->count, ROTATION_NEXT), s = rotation_find(kd->rot, kd->count, ROTATION_SIGNING);

    if (!keydir_next_can_sign(dir, kd->rot[x].kid)) {
        step->discarded = 1;
        return keydir_next_drop(dir, kd, (size_t)x, step, out);
    }
    step->action = ROTATION_PROMOTE;
    rotation_promote(kd->rot, kd->count, p, now);
    memcpy(step->kid, kd->rot[x].kid, sizeof(step->kid));
    step->published_s = kd->rot[x].published_ms / 1000;
    if (s >= 0) {
        memcpy(step->retired, kd->rot[s].kid, sizeof(step->retired));
        step->retired_until = rotation_until(&kd->rot[s], p, now);
    }
    return keydir_next_save(dir, kd, ROTATION_PROMOTE, out);
}

/* Makes a new next key: its file, then rotation.json; a key
 * rotation.json could not name is removed again (nobody will know it). */
static int keydir_next_generate(const char *dir, struct keydir *kd, const char *key_type, time_t now,
                                struct keydir_step *step, struct keydir_next *out)
{
    char err[1024];
    int i = keydir_generate(dir, kd, key_type, ROTATION_NEXT, 0, now, out->err, sizeof(out->err));

    step->action = ROTATION_GENERATE;
    if (i < 0) {
        out->failed = ROTATION_GENERATE;
        return -1;
    }
    memcpy(step->kid, kd->rot[i].kid, sizeof(step->kid));
    snprintf(step->type, sizeof(step->type), "%s", kd->pub[i].type);
    if (keydir_next_save(dir, kd, ROTATION_GENERATE, out) != 0) {
        keydir_remove_file(dir, step->kid, err, sizeof(err));
        return -1;
    }
    return 0;
}

int keydir_next(const char *dir, struct keydir *kd, const struct rotation_policy *p, const int *published,
                int64_t elapsed_ms, const char *key_type, time_t now, struct keydir_next *out)
{
    enum rotation_action action;
    size_t which = 0;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    out->failed = ROTATION_NONE;
    if (published != NULL)
        rotation_tick(kd->rot, kd->count, published, elapsed_ms, p, now);
    while (rc == 0 && out->nsteps < KEYDIR_NEXT_MAX_STEPS &&
           (action = rotation_decide(kd->rot, kd->count, p, &which)) != ROTATION_NONE) {
        struct keydir_step *step = &out->steps[out->nsteps++];
        if (action == ROTATION_DROP)
            rc = keydir_next_drop(dir, kd, which, step, out);
        else if (action == ROTATION_PROMOTE)
            rc = keydir_next_promote(dir, kd, p, now, step, out);
        else
            rc = keydir_next_generate(dir, kd, key_type, now, step, out);
    }
    if (rc == 0)
        out->due_in_ms = rotation_due_in(kd->rot, kd->count, p);
    return rc;
}
