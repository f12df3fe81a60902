#include "printable.h"

#include <string.h>

const char *printable_copy(const char *s, char *out, size_t max)
{
    size_t i;

    for (i = 0; i < max && s[i] != '\0'; i++)
        out[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
    strcpy(out + i, s[i] != '\0' ? "..." : "");
    return out;
}
