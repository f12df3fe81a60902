/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publish: the one-shot push of both documents to object storage
 * (`oidc-discovery publish --to URL ...`), for CI jobs and cron: what
 * serve --publish-to does continuously, done once per target, with a few
 * retries, and a line per object saying what happened.
 */
#ifndef OIDC_PUBLISH_COMMAND_H
#define OIDC_PUBLISH_COMMAND_H

#include "config/config.h"

/* Returns the exit status: 0 when every target holds the documents, 1
 * when one could not be brought there (or holds a newer key set), 2 when
 * the keys or a target's credentials cannot be read. */
int publish_command(const struct config *cfg);

#endif
