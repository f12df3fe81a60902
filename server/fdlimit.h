/*
 * fdlimit: the open-file limit, and how many client connections it leaves
 * room for. Every connection is a descriptor; a process at its limit cannot
 * accept, and the pending connection keeps the listener readable, so the
 * event loop would spin while clients wait.
 */
#ifndef OIDC_FDLIMIT_H
#define OIDC_FDLIMIT_H

/* Raises the soft RLIMIT_NOFILE to the hard one and returns how many
 * client connections fit under it once reserve descriptors are set aside
 * (listeners, event loops, key and log files): at least 1, ULONG_MAX when
 * there is no limit. */
unsigned long fdlimit_raise(unsigned long reserve);

#endif
