/* SPDX-License-Identifier: Apache-2.0 */
#include "server/fdlimit.h"

#include <limits.h>
#include <sys/resource.h>

#include "util/log.h"

/* systemd starts services with a soft limit of 1024 and a hard one far
 * above: the soft limit is a default for programs that use select(2), the
 * hard one what the administrator allows. The server uses epoll, so it
 * takes the hard limit, as Go programs and nginx's worker_rlimit_nofile do;
 * without this the default --max-connections (10000) could never be
 * reached. Returns how many client connections fit under the limit once
 * reserve descriptors are set aside: at least 1, ULONG_MAX when there is
 * no limit. */
static unsigned long fdlimit_raise(unsigned long reserve)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return ULONG_MAX;
    if (rl.rlim_cur != rl.rlim_max) {
        struct rlimit raised = {.rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
            rl = raised;
        else
            log_msg(LOG_WARN, "cannot raise the open-file limit from %llu to %llu", (unsigned long long)rl.rlim_cur,
                    (unsigned long long)rl.rlim_max);
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > ULONG_MAX)
        return ULONG_MAX;
    return rl.rlim_cur > reserve ? (unsigned long)rl.rlim_cur - reserve : 1;
}

/* Descriptors kept from client connections for stdio, key, state, log and
 * TLS files, inotify and the reload thread's eventfd. */
#define FDLIMIT_MARGIN 64

/* The descriptors that are not client connections, counted high: each
 * worker (up to two per thread, and the admin one) has an epoll fd, a
 * message pipe and a socket per address at most. */
static unsigned long fdlimit_reserve(const struct config *cfg)
{
    unsigned long addresses =
        cfg->listen_count + cfg->tls_listen_count + cfg->token_review_listen_count + cfg->admin_listen_count;

    return FDLIMIT_MARGIN + ((unsigned long)cfg->threads * 2 + 1) * (3 + addresses);
}

/* Connections over a budget are closed at once instead of waiting in the
 * kernel's queue while accept fails and the loop spins. The admin listener
 * is served first, since its probes decide whether the process is
 * restarted, then TokenReview; the public listeners get what is left. */
void fdlimit_budgets(const struct config *cfg, unsigned long budget[METRICS_NLISTENERS])
{
    static const enum metrics_listener order[] = {METRICS_LISTENER_ADMIN, METRICS_LISTENER_TOKENREVIEW,
                                                  METRICS_LISTENER_PUBLIC};
    static const char *const what[METRICS_NLISTENERS] = {"the public listeners", "the TokenReview listener",
                                                         "the admin listener"};
    static const char *const flag[METRICS_NLISTENERS] = {"--max-connections", "--token-review-max-connections",
                                                         "--admin-max-connections"};
    const unsigned long want[METRICS_NLISTENERS] = {
        [METRICS_LISTENER_PUBLIC] = cfg->max_connections,
        [METRICS_LISTENER_TOKENREVIEW] = cfg->enable_token_review ? cfg->token_review_max_connections : 0,
        [METRICS_LISTENER_ADMIN] = cfg->admin_listen_count > 0 ? cfg->admin_max_connections : 0,
    };
    unsigned long left = fdlimit_raise(fdlimit_reserve(cfg));

    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        enum metrics_listener l = order[i];
        budget[l] = want[l] <= left ? want[l] : left > 0 ? left : 1;
        left -= budget[l] < left ? budget[l] : left;
        if (budget[l] < want[l])
            log_msg(LOG_WARN,
                    "the open-file limit leaves room for %lu connections of %s, fewer than %s %lu; more are "
                    "closed at once (raise LimitNOFILE= or ulimit -n)",
                    budget[l], what[l], flag[l], want[l]);
    }
}
