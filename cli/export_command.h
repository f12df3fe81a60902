/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export_command: `oidc-discovery export --out DIR`, for issuers hosted as
 * static objects (S3, GCS, Azure Blob) instead of by a running server. It
 * builds the key set and documents exactly as `serve` would with the same
 * flags, writes DIR/.well-known/openid-configuration and DIR/openid/v1/jwks,
 * and prints the Content-Type and Cache-Control each object must be
 * uploaded with, since an object store serves whatever it was given.
 * Retention state in --state-dir is read, never written.
 */
#ifndef OIDC_EXPORT_COMMAND_H
#define OIDC_EXPORT_COMMAND_H

#include "config/config.h"

/* Returns the exit status: 0, 2 when the keys or the state file cannot be
 * read, 1 when a file or directory cannot be written (its path is named). */
int export_command(const struct config *cfg);

#endif
