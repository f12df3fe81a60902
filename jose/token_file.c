/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/token_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

/* A token file larger than this is refused unread; a smaller one over the
 * caller's limit is read, so that the caller reports it too large. */
#define TOKEN_FILE_MAX (16 * 1024 * 1024)

/* Standard input, at most limit + 1 bytes. */
static char *token_file_read_stdin(size_t limit, size_t *len, char *err, size_t errlen)
{
    char *buf = malloc(limit + 2);

    if (buf == NULL)
        snprintf(err, errlen, "--token-file -: %s", strerror(errno));
    else
        *len = fread(buf, 1, limit + 1, stdin);
    return buf;
}

/* A named file, with file_read: regular files only, never blocking, cut
 * to limit + 1 bytes. */
static char *token_file_read_path(const char *path, size_t limit, size_t *len, char *err, size_t errlen)
{
    char why[1024],
        *buf = file_read(path, limit + 1 > TOKEN_FILE_MAX ? limit + 1 : TOKEN_FILE_MAX, len, NULL, why, sizeof(why));

    if (buf == NULL)
        snprintf(err, errlen, "--token-file %s", why);
    else if (*len > limit + 1)
        *len = limit + 1;
    return buf;
}

char *token_file_read(const char *path, size_t limit, size_t *len, char *err, size_t errlen)
{
    char *buf = strcmp(path, "-") == 0 ? token_file_read_stdin(limit, len, err, errlen)
                                       : token_file_read_path(path, limit, len, err, errlen);

    if (buf != NULL) {
        while (*len > 0 && isspace((unsigned char)buf[*len - 1]))
            (*len)--;
        buf[*len] = '\0';
    }
    return buf;
}
