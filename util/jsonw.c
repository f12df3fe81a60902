/* SPDX-License-Identifier: Apache-2.0 */
#include "util/jsonw.h"

#include <stdlib.h>
#include <string.h>

void jsonw_raw(struct jsonw *w, const char *s, size_t n)
{
    strbuf_add(&w->sb, s, n);
}

void jsonw_lit(struct jsonw *w, const char *s)
{
    jsonw_raw(w, s, strlen(s));
}

/* The escape Go's encoding/json (1.22 and later) writes for the ASCII byte
 * c, or NULL when c is copied as is: \b \f \n \r \t, and \u00XX for the other
 * control characters and for the HTML-sensitive '<', '>' and '&'. */
static const char *jsonw_escape_ascii(unsigned char c, char tmp[7])
{
    static const char hex[] = "0123456789abcdef";

    switch (c) {
    case '"':
        return "\\\"";
    case '\\':
        return "\\\\";
    case '\b':
        return "\\b";
    case '\f':
        return "\\f";
    case '\n':
        return "\\n";
    case '\r':
        return "\\r";
    case '\t':
        return "\\t";
    case '<':
    case '>':
    case '&':
        break;
    default:
        if (c >= 0x20)
            return NULL;
    }
    memcpy(tmp, "\\u00", 4);
    tmp[4] = hex[c >> 4];
    tmp[5] = hex[c & 15];
    tmp[6] = '\0';
    return tmp;
}

/* Length of the valid UTF-8 sequence at s (avail bytes left) and its code
 * point, or 0 when the bytes are not valid UTF-8 (overlong, surrogate, out
 * of range or truncated), as Go's utf8.DecodeRuneInString judges them. */
static size_t jsonw_utf8(const unsigned char *s, size_t avail, unsigned long *cp)
{
    static const unsigned long min[] = {0, 0, 0x80, 0x800, 0x10000};
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;

    if (len == 0 || s[0] >= 0xf8 || len > avail)
        return 0;
    *cp = s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        *cp = *cp << 6 | (s[i] & 0x3f);
    }
    if (*cp < min[len] || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
        return 0;
    return len;
}

/* The escape for the byte sequence at s and how many bytes it covers; NULL
 * when those bytes are copied as they are. Go replaces invalid UTF-8 with
 * U+FFFD and escapes U+2028 and U+2029, which break JavaScript. */
static const char *jsonw_escape(const unsigned char *s, size_t avail, size_t *width, char tmp[7])
{
    unsigned long cp = 0;

    *width = 1;
    if (s[0] < 0x80)
        return jsonw_escape_ascii(s[0], tmp);
    if ((*width = jsonw_utf8(s, avail, &cp)) == 0) {
        *width = 1;
        return "\\ufffd";
    }
    if (cp == 0x2028)
        return "\\u2028";
    if (cp == 0x2029)
        return "\\u2029";
    return NULL;
}

void jsonw_str(struct jsonw *w, const char *s)
{
    jsonw_strn(w, s, strlen(s));
}

void jsonw_str_or_null(struct jsonw *w, const char *s)
{
    if (s != NULL)
        jsonw_str(w, s);
    else
        jsonw_lit(w, "null");
}

void jsonw_strn(struct jsonw *w, const char *s, size_t n)
{
    const char *run = s, *end = s + n;
    size_t width;
    char tmp[7];

    jsonw_raw(w, "\"", 1);
    while (s < end) {
        const char *esc = jsonw_escape((const unsigned char *)s, (size_t)(end - s), &width, tmp);
        if (esc != NULL) {
            jsonw_raw(w, run, (size_t)(s - run));
            jsonw_lit(w, esc);
            run = s + width;
        }
        s += width;
    }
    jsonw_raw(w, run, (size_t)(s - run));
    jsonw_raw(w, "\"", 1);
}

void jsonw_key(struct jsonw *w, const char *name)
{
    jsonw_str(w, name);
    jsonw_raw(w, ":", 1);
}

int jsonw_finish(struct jsonw *w, char **out, size_t *len)
{
    return (*out = strbuf_finish(&w->sb, len)) != NULL ? 0 : -1;
}
