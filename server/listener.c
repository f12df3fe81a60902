#include "listener.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Matches the kernel's default somaxconn; enough for bursts of CDN misses. */
#define LISTENER_BACKLOG 4096

static int listener_bind(const struct addrinfo *ai)
{
    int on = 1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);

    if (fd < 0)
        return -1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0 ||
        (ai->ai_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) != 0) ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        listen(fd, LISTENER_BACKLOG) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int listener_open(const struct config_listen *l, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *res = NULL;
    char port[8], url[300];
    int fd = -1, gai;

    listener_url(l, url, sizeof(url));
    snprintf(port, sizeof(port), "%u", l->port);
    if ((gai = getaddrinfo(l->host, port, &hints, &res)) != 0) {
        snprintf(err, errlen, "--listen %s: cannot resolve: %s", url + 7, gai_strerror(gai));
        return -1;
    }
    /* The first address that binds wins: "localhost" must not fail because
     * one of its families is unavailable. */
    for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
        fd = listener_bind(ai);
    if (fd < 0)
        snprintf(err, errlen, "--listen %s: cannot listen: %s", url + 7, strerror(errno));
    freeaddrinfo(res);
    return fd;
}

void listener_url(const struct config_listen *l, char *buf, size_t len)
{
    if (strchr(l->host, ':') != NULL)
        snprintf(buf, len, "http://[%s]:%u", l->host, l->port);
    else
        snprintf(buf, len, "http://%s:%u", l->host, l->port);
}
