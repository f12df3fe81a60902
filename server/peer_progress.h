/*
 * peer_progress: how far the client of a connection has got with what the
 * server wrote to it, for --write-timeout. h2o 2.2.5 keeps the bytes it has
 * yet to hand to the kernel in a private structure, so the kernel is asked
 * how many the client has taken.
 */
#ifndef OIDC_PEER_PROGRESS_H
#define OIDC_PEER_PROGRESS_H

#include <stdint.h>

/* A number that changes whenever the peer of the stream socket fd takes
 * data: over TCP the bytes it has acknowledged (tcpi_bytes_acked, which
 * stops when its receive window is full); on a Unix socket the bytes still
 * queued for it (SIOCOUTQ), since the kernel counts nothing else there.
 * One system call; 0 when the socket cannot tell. */
uint64_t peer_progress(int fd);

#endif
