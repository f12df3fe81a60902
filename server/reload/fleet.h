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

/* The next pass runs every issuer's reloader (SIGHUP); otherwise a pass
 * runs those whose key files changed (by what stat says of them), whose
 * --key-reload-interval came, or whose inputs set a deadline now due. */
void fleet_force(struct fleet *f);

/* The earliest deadlines of every issuer's reloader (reload_deadlines). */
void fleet_deadlines(const struct fleet *f, int64_t *confirm_at, time_t *wall_at);

/* What the status page shows of the fleet: how many issuers are served,
 * and which files are refused and why. NULL when out of memory. */
struct status *fleet_status(const struct fleet *f);

/* The directories a pass reads, for the watch (watch_add_dirs): the
 * issuers directory and that of every key file of a served issuer, each
 * once. *dirs and its strings are allocated (free both). Returns how
 * many, or 0 with *dirs NULL when out of memory. */
size_t fleet_watch_dirs(const struct fleet *f, char ***dirs);

struct mirror_pool;

/* From now on, the issuers whose config has an upstream are mirrored by
 * pool (mirror_pool.h; the caller's, stopped after the last pass): their
 * reloaders get its sets at the next pass after each read, and their
 * status rows its failures. */
void fleet_mirror(struct fleet *f, struct mirror_pool *pool);

/* Every upstream is read again now (SIGHUP). */
void fleet_mirror_hurry(struct fleet *f);

/* At exit: every issuer's reload_save_at_exit. */
void fleet_save_at_exit(struct fleet *f, time_t now, int64_t now_ms);

void fleet_free(struct fleet *f);

#endif
