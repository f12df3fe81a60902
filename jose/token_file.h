/* SPDX-License-Identifier: Apache-2.0 */
/*
 * token_file: reads the token an operator points a command at
 * (--token-file: a path, or "-" for standard input), for verify and
 * doctor alike.
 */
#ifndef OIDC_TOKEN_FILE_H
#define OIDC_TOKEN_FILE_H

#include <stddef.h>

/* Reads the token in path ("-": standard input), at most limit + 1 bytes,
 * so that a larger one is still seen to be larger than limit, without the
 * trailing whitespace editors and `echo` add. A path is read with
 * util/file.h's file_read (regular files only, never blocking). Returns a
 * malloc'ed, NUL-terminated buffer of *len bytes (free() it), or NULL
 * with "--token-file PATH: why" in err. */
char *token_file_read(const char *path, size_t limit, size_t *len, char *err, size_t errlen);

#endif
