/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doctor_command: `oidc-discovery doctor --issuer URL`, which checks an
 * issuer the way relying parties do (diag/doctor.h) and prints one line
 * per check, or the report as JSON with --output json.
 */
#ifndef OIDC_DOCTOR_COMMAND_H
#define OIDC_DOCTOR_COMMAND_H

#include "config/config.h"

/* Returns the exit status: 0 when no check failed, 1 when one did (or the
 * report could not be written), 2 when --token-file or --ca-file cannot
 * be read. */
int doctor_command(const struct config *cfg);

#endif
