/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet_each: the one-shot commands (keys, export) over a fleet
 * (--issuers-dir): each NAME.json file read into a one-issuer config, as
 * serve reads it, and handed to the command's one-issuer code, in name
 * order.
 */
#ifndef OIDC_FLEET_EACH_H
#define OIDC_FLEET_EACH_H

#include "config/config.h"

/* What runs for one issuer: its config (owned by the caller of fn, which
 * fn may change: it is freed afterwards), its name and its position
 * (0 for the first). Returns the command's exit code. */
typedef int (*fleet_each_fn)(struct config *issuer, const char *name, size_t index, void *arg);

/* Runs fn for each issuer of cfg's --issuers-dir in name order, or with
 * --issuer NAME (cfg->mint_issuer) for that one only; a NAME the
 * directory does not hold is an error listing the names it holds. A file
 * whose settings are refused is reported on stderr ("oidc-discovery
 * COMMAND: ...") and counts as exit code 2. Returns the largest exit
 * code, or 2 when the directory cannot be read or holds no issuer. */
int fleet_each(const struct config *cfg, const char *command, fleet_each_fn fn, void *arg);

/* fleet_each for a command that needs only each issuer's URL (doctor,
 * which checks the issuer from outside): the config fn gets holds only
 * the file's service-account-issuer list; the file's other keys are
 * checked to be per-issuer ones, not applied. */
int fleet_each_url(const struct config *cfg, const char *command, fleet_each_fn fn, void *arg);

#endif
