#include "jose/token_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *token_file_read(const char *path, size_t limit, size_t *len, char *err, size_t errlen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    char *buf = f ? malloc(limit + 2) : NULL;

    if (buf != NULL) {
        *len = fread(buf, 1, limit + 1, f);
        while (*len > 0 && isspace((unsigned char)buf[*len - 1]))
            (*len)--;
        buf[*len] = '\0';
    }
    if (f == NULL || buf == NULL)
        snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno));
    if (f != NULL && f != stdin)
        fclose(f);
    return buf;
}
