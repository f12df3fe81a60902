/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keys_command: `oidc-discovery keys`, which prints the key set `serve`
 * would publish with the same flags — the keys in the files plus the keys
 * still retained in --state-dir — so an operator can check a rotation
 * before doing it. It only reads: the state file is never written.
 */
#ifndef OIDC_KEYS_COMMAND_H
#define OIDC_KEYS_COMMAND_H

#include "config/config.h"

/* Prints the set as a table, or as JSON with --output json. Returns the exit
 * status: 0, or 2 when the keys or the state file cannot be read. */
int keys_command(const struct config *cfg);

#endif
