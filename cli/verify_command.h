/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verify_command: `oidc-discovery verify`, a relying party on the command
 * line. Verifies one token against key files, or — like AWS STS or Vault
 * would — against the keys found through an issuer's discovery document,
 * and prints a TokenReview-style result. `--repeat N` is the benchmark hook.
 */
#ifndef OIDC_VERIFY_COMMAND_H
#define OIDC_VERIFY_COMMAND_H

#include "config/config.h"

/* Returns the exit status: 0 valid, 1 invalid (reason on stderr), 2 when
 * the token, the keys or the discovery document cannot be had. */
int verify_command(const struct config *cfg);

#endif
