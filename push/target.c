/* SPDX-License-Identifier: Apache-2.0 */
/*
 * target.c: see target.h.
 */
#include "push/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/bucket_url.h"
#include "util/redact.h"
#include "push/azblob.h"
#include "push/s3.h"

int push_target_open(const struct config *cfg, const char *url, const atomic_int *cancel, struct push_target *t,
                     char *err, size_t errlen)
{
    struct config_bucket_url u;
    const char *bad = config_split_bucket_url(url, &u);
    char why[512] = "out of memory", shown[PUSH_TARGET_SHOWN_MAX + 4];
    int rc = -1;

    memset(t, 0, sizeof(*t));
    redact_url(url, shown, PUSH_TARGET_SHOWN_MAX);
    if (bad != NULL)
        snprintf(why, sizeof(why), "%s", bad);
    else if ((t->url = strdup(shown)) == NULL)
        ;
    else if (u.kind == CONFIG_BUCKET_S3)
        rc = push_s3_open(cfg, &u, cancel, &t->ops, &t->store, why, sizeof(why));
    else
        rc = push_azblob_open(cfg, &u, cancel, &t->ops, &t->store, why, sizeof(why));
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", shown, why);
        push_target_close(t);
        return -1;
    }
    t->close = u.kind == CONFIG_BUCKET_S3 ? push_s3_close : push_azblob_close;
    return 0;
}

void push_target_close(struct push_target *t)
{
    if (t->close != NULL)
        t->close(t->store);
    free(t->url);
    memset(t, 0, sizeof(*t));
}
