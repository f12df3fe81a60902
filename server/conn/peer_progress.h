/* SPDX-License-Identifier: Apache-2.0 */
/*
 * peer_progress: how far the client of a connection has got with what the
 * server wrote to it, for --write-timeout, and whether it has sent anything
 * at all, for --handshake-timeout. h2o 2.2.5 keeps the bytes it has yet to
 * hand to the kernel, and what it has read, in private structures, so the
 * kernel is asked.
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

/* Whether the peer of the stream socket fd has sent anything, read or
 * not: over TCP the bytes the kernel has received from it
 * (tcpi_bytes_received), so a connection answered and idle since still
 * counts; on a Unix socket only bytes still waiting to be read (SIOCINQ),
 * since the kernel counts nothing else there. One system call. */
int peer_sent_any(int fd);

/* Whether bytes from the peer of fd wait in the kernel to be read. One
 * system call. */
int peer_unread(int fd);

#endif
