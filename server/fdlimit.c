#include "server/fdlimit.h"

#include <limits.h>
#include <sys/resource.h>

#include "util/log.h"

/* systemd starts services with a soft limit of 1024 and a hard one far
 * above: the soft limit is a default for programs that use select(2), the
 * hard one what the administrator allows. The server uses epoll, so it
 * takes the hard limit, as Go programs and nginx's worker_rlimit_nofile do;
 * without this the default --max-connections (10000) could never be
 * reached. */
unsigned long fdlimit_raise(unsigned long reserve)
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
