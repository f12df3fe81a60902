/* SPDX-License-Identifier: Apache-2.0 */
/*
 * token_command: `oidc-discovery token`, which mints a token shaped like
 * kube-apiserver's bound service-account tokens, for tests, demos and
 * benchmarks. It needs the private key, so it is for test clusters only.
 */
#ifndef OIDC_TOKEN_COMMAND_H
#define OIDC_TOKEN_COMMAND_H

#include "config/config.h"

/* Prints the token on stdout. Returns 0, or 2 (message on stderr). */
int token_command(const struct config *cfg);

#endif
