/* SPDX-License-Identifier: Apache-2.0 */
#include "server/conn/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/unix_listen.h"

/* Matches the kernel's default somaxconn; enough for bursts of CDN misses. */
#define LISTENER_BACKLOG 4096

/* TCP_NOTSENT_LOWAT of every connection: the kernel takes more of a
 * response only while less than this much of what it holds is unsent. A
 * client that does not read then leaves at most this plus one segment
 * queued in the kernel, and h2o, which answers pipelined requests one at a
 * time, stops at the response it is writing, instead of the kernel taking
 * responses until its send buffer reaches tcp_wmem's maximum (4 MiB: dozens
 * of answers of a large JWKS). Documents fit in one
 * segment, so honest clients see no difference. */
#define LISTENER_NOTSENT_LOWAT 16384

/* A socket bound to ai. With share, it is a listener that other threads'
 * sockets may join (SO_REUSEPORT); without, it only proves the address free.
 * Accepted connections inherit its TCP options. */
static int listener_bind(const struct addrinfo *ai, int share)
{
    int on = 1, lowat = LISTENER_NOTSENT_LOWAT;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);

    if (fd < 0)
        return -1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
        (share && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0) ||
        (ai->ai_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) != 0) ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat)) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || (share && listen(fd, LISTENER_BACKLOG) != 0)) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* SO_REUSEPORT would let this process silently share a port with another
 * one of the same user — each getting half the connections. So the first
 * socket of an address is preceded by a plain bind, which fails while
 * anyone else listens there. Port 0 needs no such proof: for it the kernel
 * picks a port that no socket is bound to, SO_REUSEPORT or not. */
static int listener_bind_first(const struct addrinfo *ai, int exclusive)
{
    int probe;

    if (exclusive) {
        if ((probe = listener_bind(ai, 0)) < 0)
            return -1;
        close(probe);
    }
    return listener_bind(ai, 1);
}

/* What to do about errno, the reason an address could not be opened. */
static const char *listener_advice(int err)
{
    return err == EADDRINUSE ? "; another process listens there: stop it or choose another address" : "";
}

/* A Unix socket for a local reverse proxy, which any local user may
 * connect to (mode 0666), made by unix_listen_open: its directory checked,
 * a stale socket file replaced, any other file at the path refused. */
static int listener_open_unix(const char *flag, const char *path, char *err, size_t errlen)
{
    const struct unix_listen l = {
        .flag = flag, .mode = 0666, .uid = (uid_t)-1, .gid = (gid_t)-1, .backlog = LISTENER_BACKLOG};
    ino_t ino;

    return unix_listen_open(path, &l, &ino, err, errlen);
}

/* "127.0.0.1:8080", "[::1]:443" or "unix:/path", for messages. */
static void listener_name(const struct config_listen *l, unsigned short port, char *buf, size_t len)
{
    if (l->unix_path != NULL)
        snprintf(buf, len, "unix:%s", l->unix_path);
    else if (strchr(l->host, ':') != NULL)
        snprintf(buf, len, "[%s]:%u", l->host, port);
    else
        snprintf(buf, len, "%s:%u", l->host, port);
}

/* The port fd is bound to; 0 when it cannot tell. */
static unsigned short listener_bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port) : 0;
}

/* A TCP listening socket on a's host and port. first marks an address's
 * first socket: on a given port it fails when another process already
 * listens there; on port 0 the kernel chooses a port nobody holds, and
 * the bound port is read back. The other threads' sockets then join that
 * port. Returns the fd, or -1 with a message naming a's flag in err. */
static int listener_open_tcp(struct listener_addr *a, int first, char *err, size_t errlen)
{
    const struct config_listen *l = a->l;
    unsigned short *port = &a->port;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *res = NULL;
    char service[8], name[300];
    int fd = -1, gai;

    listener_name(l, *port, name, sizeof(name));
    snprintf(service, sizeof(service), "%u", *port);
    if ((gai = getaddrinfo(l->host, service, &hints, &res)) != 0) {
        snprintf(err, errlen, "%s %s: cannot resolve: %s", a->flag, name, gai_strerror(gai));
        return -1;
    }
    /* The first address that binds wins: "localhost" must not fail because
     * one of its families is unavailable. */
    for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
        fd = listener_bind_first(ai, first && *port != 0);
    if (fd < 0) {
        int saved = errno;
        snprintf(err, errlen, "%s %s: cannot listen: %s%s", a->flag, name, strerror(saved), listener_advice(saved));
    } else if (*port == 0 && (*port = listener_bound_port(fd)) == 0) {
        snprintf(err, errlen, "%s %s: cannot tell the port the kernel chose: %s", a->flag, name, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* Thread t's socket on a; first_fd is thread 0's. */
static int listener_open_one(struct listener_addr *a, unsigned t, int first_fd, char *err, size_t errlen)
{
    int fd;

    if (a->l->unix_path == NULL)
        return listener_open_tcp(a, t == 0, err, errlen);
    if (t == 0)
        return listener_open_unix(a->flag, a->l->unix_path, err, errlen);
    if ((fd = fcntl(first_fd, F_DUPFD_CLOEXEC, 0)) < 0)
        snprintf(err, errlen, "%s unix:%s: cannot share the socket: %s", a->flag, a->l->unix_path, strerror(errno));
    return fd;
}

struct listener_fd *listener_open_all(struct listener_addr *addrs, size_t n, unsigned threads, char *err, size_t errlen)
{
    size_t count = (size_t)threads * n;
    struct listener_fd *fds = calloc(count ? count : 1, sizeof(*fds));

    if (fds == NULL) {
        snprintf(err, errlen, "cannot open the listening sockets: %s", strerror(ENOMEM));
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        addrs[i].port = addrs[i].l->port;
    for (size_t i = 0; i < count; i++) {
        struct listener_addr *a = &addrs[i % n];
        fds[i] = (struct listener_fd){.fd = listener_open_one(a, (unsigned)(i / n), fds[i % n].fd, err, errlen),
                                      .tls = a->tls};
        if (fds[i].fd < 0) {
            listener_close_all(fds, i);
            return NULL;
        }
    }
    return fds;
}

void listener_close_all(struct listener_fd *fds, size_t count)
{
    for (size_t i = 0; fds != NULL && i < count; i++)
        close(fds[i].fd);
    free(fds);
}

void listener_url(const struct listener_addr *a, char *buf, size_t len)
{
    char name[300];

    listener_name(a->l, a->port, name, sizeof(name));
    snprintf(buf, len, "%s%s", a->l->unix_path != NULL ? "" : a->tls ? "https://" : "http://", name);
}
