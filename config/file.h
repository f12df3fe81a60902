/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file: the config file, a JSON object keyed by the long flag names of the
 * rows marked CONFIG_FILE_KEY. It is read whole, without blocking, from a
 * regular file of at most CONFIG_FILE_MAX bytes, with the project's strict
 * JSON reader (no duplicate member, bounded nesting, nothing after the
 * object). Its values are handed over as the text a flag would carry, so
 * that they pass the same checks afterwards.
 */
#ifndef OIDC_CONFIG_FILE_H
#define OIDC_CONFIG_FILE_H

#include <stddef.h>

#include "config/options.h"

#define CONFIG_FILE_MAX (1024 * 1024)

/* Takes one value of key o, as text: a string as it is, a number as it was
 * written (so that 1.5 or 1e3 fails a check for an integer), true or false
 * as "true" or "false". Returns 0, or -1 when out of memory. */
typedef int config_file_put_fn(void *ctx, const struct config_option *o, const char *value);

/* Reads the config file at path, calling put for each value of each key in
 * the file's order; the values of a list key arrive one by one. Returns 0,
 * or -1 with a one-line message in err that names the file and, where it
 * can, the key. */
int config_file_read(const char *path, config_file_put_fn *put, void *ctx, char *err, size_t errlen);

/* The same for a file of --issuers-dir: its keys are the rows marked
 * CONFIG_ISSUER, and another row's key is refused as one that is not
 * per issuer. */
int config_file_read_issuer(const char *path, config_file_put_fn *put, void *ctx, char *err, size_t errlen);

/* Writes "config file PATH: key "NAME": PROBLEM" into err; returns -1. */
int config_file_key_error(char *err, size_t errlen, const char *path, const char *name, const char *problem);

#endif
