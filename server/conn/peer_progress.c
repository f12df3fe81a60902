/* SPDX-License-Identifier: Apache-2.0 */
/* <linux/tcp.h> rather than <netinet/tcp.h>: glibc's struct tcp_info stops
 * before tcpi_bytes_acked (Linux 4.1), and the two headers cannot be
 * included together, hence a file of its own. */
#include "server/conn/peer_progress.h"

#include <stddef.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <linux/tcp.h>

uint64_t peer_progress(int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof(info);
    int queued;

    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
        len >= offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(info.tcpi_bytes_acked))
        return info.tcpi_bytes_acked;
    if (ioctl(fd, SIOCOUTQ, &queued) == 0 && queued >= 0)
        return (uint64_t)queued;
    return 0;
}

int peer_unread(int fd)
{
    int waiting;

    return ioctl(fd, SIOCINQ, &waiting) == 0 && waiting > 0;
}

int peer_sent_any(int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof(info);

    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
        len >= offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received))
        return info.tcpi_bytes_received > 0;
    return peer_unread(fd);
}
