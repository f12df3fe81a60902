#include "server/listener.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Matches the kernel's default somaxconn; enough for bursts of CDN misses. */
#define LISTENER_BACKLOG 4096

/* TCP_NOTSENT_LOWAT of every connection: the kernel takes more of a
 * response only while less than this much of what it holds is unsent. A
 * client that does not read then leaves at most this plus one segment
 * queued in the kernel, and h2o, which answers pipelined requests one at a
 * time, stops at the response it is writing, instead of the kernel taking
 * responses until its send buffer reaches tcp_wmem's maximum (4 MiB, some
 * 35 answers of a 60 KiB JWKS measured on loopback). Documents fit in one
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
 * anyone else listens there. */
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

/* A socket file nobody accepts on is left over from an earlier run. */
static int listener_unix_stale(const struct sockaddr_un *sun)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), stale;

    if (fd < 0)
        return 0;
    stale = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) != 0 && errno == ECONNREFUSED;
    close(fd);
    return stale;
}

/* A Unix socket for a local reverse proxy. A stale socket file left by an
 * earlier run is replaced; any other file at the path is an error. */
static int listener_open_unix(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    struct stat st;
    int fd = -1;

    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && listener_unix_stale(&sun))
        unlink(path);
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
        bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 || chmod(path, 0666) != 0 ||
        listen(fd, LISTENER_BACKLOG) != 0) {
        snprintf(err, errlen, "unix:%s: cannot listen: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int listener_open(const struct config_listen *l, int first, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *res = NULL;
    char port[8], url[300];
    int fd = -1, gai;

    if (l->unix_path != NULL)
        return listener_open_unix(l->unix_path, err, errlen);
    listener_url(l, NULL, url, sizeof(url));
    snprintf(port, sizeof(port), "%u", l->port);
    if ((gai = getaddrinfo(l->host, port, &hints, &res)) != 0) {
        snprintf(err, errlen, "%s: cannot resolve: %s", url, gai_strerror(gai));
        return -1;
    }
    /* The first address that binds wins: "localhost" must not fail because
     * one of its families is unavailable. */
    for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
        fd = listener_bind_first(ai, first);
    if (fd < 0)
        snprintf(err, errlen, "%s: cannot listen: %s", url, strerror(errno));
    freeaddrinfo(res);
    return fd;
}

void listener_url(const struct config_listen *l, const char *scheme, char *buf, size_t len)
{
    const char *sep = scheme ? "://" : "";

    scheme = scheme ? scheme : "";
    if (l->unix_path != NULL)
        snprintf(buf, len, "unix:%s", l->unix_path);
    else if (strchr(l->host, ':') != NULL)
        snprintf(buf, len, "%s%s[%s]:%u", scheme, sep, l->host, l->port);
    else
        snprintf(buf, len, "%s%s%s:%u", scheme, sep, l->host, l->port);
}
