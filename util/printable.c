/* SPDX-License-Identifier: Apache-2.0 */
#include "util/printable.h"

#include <stdio.h>
#include <string.h>

const char *printable_copy(const char *s, char *out, size_t max)
{
    size_t i;

    for (i = 0; i < max && s[i] != '\0'; i++)
        out[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
    strcpy(out + i, s[i] != '\0' ? "..." : "");
    return out;
}

/* Writes byte c as printable_quote shows it into esc (5 bytes); returns
 * its length. */
static size_t printable_escape(unsigned char c, char esc[5])
{
    static const char named[] = {'\n', 'n', '\r', 'r', '\t', 't', '"', '"', '\\', '\\'};

    for (size_t i = 0; i < sizeof(named); i += 2) {
        if (c == (unsigned char)named[i]) {
            esc[0] = '\\';
            esc[1] = named[i + 1];
            return 2;
        }
    }
    if (c >= 0x20 && c < 0x7f) {
        esc[0] = (char)c;
        return 1;
    }
    snprintf(esc, 5, "\\x%02x", c);
    return 4;
}

const char *printable_quote(const char *s, char *out, size_t outlen)
{
    size_t o = 0, room = outlen - 5; /* what the closing quote, "..." and the NUL leave */
    char esc[5];

    out[o++] = '"';
    for (; *s != '\0'; s++) {
        size_t n = printable_escape((unsigned char)*s, esc);
        if (o + n > room)
            break;
        memcpy(out + o, esc, n);
        o += n;
    }
    out[o++] = '"';
    strcpy(out + o, *s != '\0' ? "..." : "");
    return out;
}
