/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet: the issuers of --issuers-dir -> the routing snapshot the workers
 * serve (publish/routes.h).
 *
 * Each NAME.json file of the directory is one issuer: its config
 * (config_issuer_parse: the file's keys over the command line's) and its
 * own reloader (reload.h: key files, removal guard, retention state under
 * --state-dir/NAME), so an issuer is served exactly as a one-issuer server
 * with the same settings serves it. A pass re-reads the directory: a file
 * whose bytes did not change is not parsed again, a new or changed one is
 * parsed and, when valid and its keys readable, replaces that issuer; a
 * removed file removes it. A file that is invalid, or whose keys cannot be
 * read, is reported (log, status) with its name and leaves that issuer's
 * last good state serving (a new file: nothing); a file that claims the
 * issuer URL (routes_key: host and path) of an issuer another file serves
 * is refused naming both files, and when two files no one serves yet
 * claim one URL, both are. Every issuer's reloader then runs its pass; a
 * new routing table is built only when an issuer came, went or published
 * a new snapshot, sharing every other issuer's snapshot (same bodies, same
 * ETags).
 *
 * Like reload.h, it knows nothing of threads or HTTP: the server runs the
 * passes on its reload thread.
 */
#ifndef OIDC_FLEET_H
#define OIDC_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config/config.h"
#include "publish/snapshot.h"
#include "server/obs/status.h"

struct fleet;

/* Reads cfg's --issuers-dir and builds the first routing snapshot at now
 * (wall clock) and now_ms (monotonic). Invalid files are refused (logged)
 * and the others served; an empty directory serves nothing (every
 * document 404) until a file comes. NULL, logged, when the directory
 * cannot be read or out of memory: the server does not start then. */
struct fleet *fleet_create(const struct config *cfg, time_t now, int64_t now_ms);

/* The routing snapshot published now; f keeps its reference. */
struct snapshot *fleet_current(const struct fleet *f);

/* One pass at now and now_ms (see above). Returns the new routing
 * snapshot when an issuer came, went or changed (f keeps its reference;
 * the caller hands it on), else NULL. */
struct snapshot *fleet_pass(struct fleet *f, time_t now, int64_t now_ms);

/* The earliest deadlines of every issuer's reloader (reload_deadlines). */
void fleet_deadlines(const struct fleet *f, int64_t *confirm_at, time_t *wall_at);

/* What the status page shows of the fleet: how many issuers are served,
 * and which files are refused and why. NULL when out of memory. */
struct status *fleet_status(const struct fleet *f);

/* The paths a pass reads, for the watch: the directory and every served
 * issuer's key files. *paths is allocated (free it), its strings are f's,
 * valid until the next pass. Returns how many, or 0 with *paths NULL
 * when out of memory. */
size_t fleet_watch_paths(const struct fleet *f, char ***paths);

/* At exit: every issuer's reload_save_at_exit. */
void fleet_save_at_exit(struct fleet *f, time_t now, int64_t now_ms);

void fleet_free(struct fleet *f);

#endif
