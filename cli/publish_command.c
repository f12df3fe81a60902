/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/publish_command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "publish/publish.h"
#include "push/plan.h"
#include "push/sync.h"
#include "push/target.h"
#include "util/clock.h"

/* Tries per target before giving up, with push_backoff_ms between them. */
#define PUBLISH_TRIES 3

static const char *publish_action_name(enum push_action a)
{
    static const char *const names[] = {"not reached", "unchanged", "written", "left (a newer key set is there)",
                                        "failed"};

    return (size_t)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

/* Sleeps for ms milliseconds. */
static void publish_sleep(int64_t ms)
{
    struct timespec left = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};

    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}

/* Pushes docs to one target, retrying a failure; prints a line per object
 * and returns 0 or 1 as publish_command. */
static int publish_one(const struct push_target *t, const struct push_docs *docs, unsigned *seed)
{
    struct push_report rep;

    for (unsigned attempt = 1;; attempt++) {
        push_sync(t->ops, t->store, docs, &rep);
        if (rep.outcome != PUSH_FAILED || attempt == PUBLISH_TRIES)
            break;
        fprintf(stderr, "oidc-discovery publish: %s: %s; trying again\n", t->url, rep.err);
        publish_sleep(push_backoff_ms(attempt, (double)rand_r(seed) / ((double)RAND_MAX + 1)));
    }
    for (size_t i = 0; i < PUSH_NOBJECTS; i++)
        printf("%s %s: %s%s%s%s\n", t->url, docs->keys[i], publish_action_name(rep.actions[i]),
               rep.actions[i] == PUSH_ACT_WRITTEN ? " (" : "", rep.actions[i] == PUSH_ACT_WRITTEN ? rep.why[i] : "",
               rep.actions[i] == PUSH_ACT_WRITTEN ? ")" : "");
    if (rep.outcome == PUSH_FAILED)
        fprintf(stderr, "oidc-discovery publish: %s: %s\n", t->url, rep.err);
    else if (rep.outcome == PUSH_YIELDED)
        fprintf(stderr,
                "oidc-discovery publish: %s holds a newer key set (generation %s) than these keys (generation %s); "
                "left as it is\n",
                t->url, rep.remote_generation, docs->generation);
    return rep.outcome == PUSH_OK ? 0 : 1;
}

int publish_command(const struct config *cfg)
{
    char err[1024] = "";
    struct snapshot *snap = NULL;
    struct push_docs docs;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    int rc = publish_build_now(cfg, &snap, err, sizeof(err));

    if (rc != 0) {
        fprintf(stderr, "oidc-discovery publish: %s\n", err);
        return rc;
    }
    push_docs_init(&docs, snap, clock_wall_ms());
    for (size_t i = 0; i < cfg->push_to.count; i++) {
        struct push_target t;
        if (push_target_open(cfg, cfg->push_to.items[i], NULL, &t, err, sizeof(err)) != 0) {
            fprintf(stderr, "oidc-discovery publish: --to %s\n", err);
            rc = 2;
            continue;
        }
        if (publish_one(&t, &docs, &seed) != 0 && rc == 0)
            rc = 1;
        push_target_close(&t);
    }
    snapshot_release(snap);
    return rc;
}
