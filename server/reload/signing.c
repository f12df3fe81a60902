/* SPDX-License-Identifier: Apache-2.0 */
#include "server/reload/signing.h"

#include <stdatomic.h>
#include <string.h>

#include "publish/publish.h"
#include "server/obs/metrics.h"
#include "util/log.h"

void signing_init(struct signing *s, const char *file, unsigned long max_age)
{
    memset(s, 0, sizeof(*s));
    s->file = file;
    s->max_age = max_age;
}

/* Reads the signing key's kid; 0, or -1 with the reason logged once. */
static int signing_read_kid(struct signing *s, char kid[KEY_KID_MAX + 1])
{
    char err[1024];
    struct keyset *ks = keyset_load((char *const *)&s->file, 1, publish_log_warning, NULL, err, sizeof(err));

    if (ks == NULL) {
        if (s->state != SIGNING_UNREADABLE)
            log_msg(LOG_ERROR, "--signing-key-file: %s", err);
        s->state = SIGNING_UNREADABLE;
        return -1;
    }
    memcpy(kid, ks->keys[0].kid, strlen(ks->keys[0].kid) + 1);
    keyset_free(ks);
    return 0;
}

/* Logs the state the key (e, NULL when unpublished) has just reached.
 * first: this process's first look at it. A key first seen at that very
 * moment has no known past (a new --state-dir, or none): "published for
 * 0s" would read as a key put to work too soon, so it is said as it is. */
static void signing_log(const struct signing *s, const struct history_entry *e, time_t now, int first)
{
    if (s->state == SIGNING_UNPUBLISHED)
        log_msg(LOG_ERROR,
                "SIGNING KEY NOT PUBLISHED: kid=%s (%s) is not in the published set; no relying party can "
                "verify the tokens it signs",
                s->kid, s->file);
    else if (s->state == SIGNING_YOUNG && first && e->first_seen >= now)
        log_msg(LOG_WARN,
                "SIGNING KEY TOO NEW: kid=%s is published from now on (no earlier publication is known); relying "
                "parties that cached a JWKS without it may refuse its tokens for up to --max-age %lus",
                s->kid, s->max_age);
    else if (s->state == SIGNING_YOUNG)
        log_msg(LOG_WARN,
                "SIGNING KEY TOO NEW: kid=%s has been published for %llds, less than --max-age %lus; "
                "relying parties may hold a cached JWKS without it for another %llds",
                s->kid, (long long)(now - e->first_seen), s->max_age, (long long)(s->mature_at - now));
    else
        log_msg(LOG_INFO, "signing key kid=%s has been published for at least --max-age (%lus)", s->kid, s->max_age);
}

enum signing_state signing_check(struct signing *s, const struct keyset *published, const struct history *h, time_t now)
{
    char kid[KEY_KID_MAX + 1];
    const struct history_entry *e;
    enum signing_state state;

    s->mature_at = 0;
    if (s->file == NULL || signing_read_kid(s, kid) != 0)
        return s->state;
    e = keyset_find(published, kid) ? history_find(h, kid) : NULL;
    state = e == NULL ? SIGNING_UNPUBLISHED : now - e->first_seen < (time_t)s->max_age ? SIGNING_YOUNG : SIGNING_MATURE;
    if (state == SIGNING_YOUNG)
        s->mature_at = e->first_seen + (time_t)s->max_age;
    atomic_store(&metrics_process.signing_key_first_published, e ? (long long)e->first_seen : 0);
    if (state != s->state || strcmp(kid, s->kid) != 0) {
        int first = s->state == SIGNING_UNKNOWN;
        s->state = state;
        memcpy(s->kid, kid, sizeof(kid));
        signing_log(s, e, now, first);
    }
    return state;
}
