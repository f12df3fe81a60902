/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json_parse: the strict JSON parser of jwt.h, written for token-sized
 * documents: one pass over the bytes, no callbacks, every value and string
 * carved from an arena.
 *
 * It reads the JSON that yajl 2.1 (as Debian ships it, strict defaults)
 * reads, and decodes it the same way, because the project parsed with yajl
 * before and a parser swap must not change what a token says:
 *   - whitespace is RFC 8259's four characters plus \v and \f;
 *   - a string byte at or above 0x80 must start a UTF-8 sequence with the
 *     right number of continuation bytes; the code point is not checked, so
 *     overlong forms, encoded surrogates and leads up to F7 pass;
 *   - \u escapes: a high surrogate joins the \u escape right after it,
 *     whatever that one is; one with no \u after it becomes '?'; any other
 *     code point, a lone low surrogate included, is written as UTF-8;
 *   - numbers are RFC 8259's grammar, handed over as text and converted
 *     with strtod (+-inf when out of range).
 * On top of that, as before: no duplicate member, at most JSON_MAX_DEPTH
 * nested containers, no U+0000 in a string, an object at the top level and
 * nothing but whitespace after it. (yajl let one thing through there: an
 * unterminated string at the very end, as in `{} "abc`; it is refused.)
 * fuzz_token checks, input by input, that this parser and yajl agree.
 */
#include "util/json.h"

#include "util/printable.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_INVALID "invalid JSON"
/* A duplicate member is named (quoted, cut at this many bytes), so that a
 * file's author can find it. */
#define JSON_NAME_SHOWN 64

/* The memory of one tree: its values and strings are carved from chunks
 * that are freed all at once, so that a parse costs a malloc or two rather
 * than one per value and string. The root is the first value of the first
 * chunk, which is how json_free finds the chunks. */
struct json_chunk {
    struct json_chunk *next;
    size_t size, used; /* bytes of data */
    max_align_t data[];
};

#define JSON_ALIGN _Alignof(struct json_value)

/* Bytes of data in a chunk, unless one allocation needs more: the whole
 * chunk stays within glibc's per-thread cache (blocks up to 1032 bytes),
 * where a malloc and a free cost a few dozen instructions; a larger block
 * costs hundreds (and makes malloc consolidate its fast bins). A token
 * payload takes two. */
#define JSON_CHUNK_DATA (1024 - sizeof(struct json_chunk))

/* State of one parse: the unread input, the chunks, and why it stopped. */
struct json_parser {
    const unsigned char *s, *end;
    struct json_chunk *first, *last;
    const char *error;
    char message[JSON_NAME_SHOWN + 64]; /* where a formatted error is written */
};

static struct json_chunk *json_chunk_new(size_t size)
{
    struct json_chunk *c = malloc(sizeof(*c) + size);

    if (c != NULL) {
        c->next = NULL;
        c->size = size;
        c->used = 0;
    }
    return c;
}

static void json_chunks_free(struct json_chunk *c)
{
    while (c != NULL) {
        struct json_chunk *next = c->next;
        free(c);
        c = next;
    }
}

/* Stops the parse with its first reason; returns -1 so that callers can
 * `return json_fail(...)`. */
static int json_fail(struct json_parser *p, const char *why)
{
    if (p->error == NULL)
        p->error = why;
    return -1;
}

/* Fails on the member name given twice in one object. */
static int json_fail_duplicate(struct json_parser *p, const char *name)
{
    char quoted[JSON_NAME_SHOWN + 8];

    if (p->error != NULL)
        return -1;
    snprintf(p->message, sizeof(p->message), "duplicate member %s in a JSON object",
             printable_quote(name, quoted, sizeof(quoted)));
    return json_fail(p, p->message);
}

/* size bytes from the parse's chunks, aligned for any value, or NULL (with
 * p->error); a full chunk is followed by a new one. */
static void *json_alloc(struct json_parser *p, size_t size)
{
    struct json_chunk *c = p->last;
    void *mem;

    if (size > SIZE_MAX / 4) {
        json_fail(p, "out of memory");
        return NULL;
    }
    size = (size + JSON_ALIGN - 1) / JSON_ALIGN * JSON_ALIGN;
    if (c->size - c->used < size) {
        struct json_chunk *next = json_chunk_new(size > JSON_CHUNK_DATA ? size : JSON_CHUNK_DATA);
        if (next == NULL) {
            json_fail(p, "out of memory");
            return NULL;
        }
        c = p->last = c->next = next;
    }
    mem = (char *)c->data + c->used;
    c->used += size;
    return mem;
}

/* The next byte, or -1 at the end of the input. */
static int json_peek(const struct json_parser *p)
{
    return p->s < p->end ? *p->s : -1;
}

/* Skips yajl's whitespace: space, \t, \n, \v, \f and \r. */
static void json_skip_space(struct json_parser *p)
{
    while (p->s < p->end && (*p->s == ' ' || (*p->s >= '\t' && *p->s <= '\r')))
        p->s++;
}

/* Consumes byte c after optional whitespace, or fails. */
static int json_expect(struct json_parser *p, int c)
{
    json_skip_space(p);
    if (json_peek(p) != c)
        return json_fail(p, JSON_INVALID);
    p->s++;
    return 0;
}

/* 1 for the bytes a string cannot hold as they are: the quote that ends
 * it, the backslash of an escape, control characters (refused) and bytes
 * of multi-byte UTF-8 (checked). Everything else stands for itself, so a
 * string is mostly a scan of this table. */
/* clang-format off */
static const unsigned char json_string_special[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x00 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x10 */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x20: '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x30 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x40 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* 0x50: '\\' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x60 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x70 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x80 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};
/* clang-format on */

/* The value of a hex digit, or -1. */
static int json_hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
        return (c | 0x20) - 'a' + 10;
    return -1;
}

/* The 16 bits of the four hex digits at s, or -1 when one is not a digit. */
static long json_hex4(const unsigned char *s)
{
    long v = 0;

    for (int i = 0; i < 4; i++) {
        int d = json_hex_digit(s[i]);
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/* Bytes of the escape at s (a backslash, before end): 2, 6 for \uXXXX, or
 * 0 when it is not one of JSON's. */
static size_t json_escape_len(const unsigned char *s, const unsigned char *end)
{
    if (end - s < 2)
        return 0;
    if (s[1] == 'u')
        return end - s >= 6 && json_hex4(s + 2) >= 0 ? 6 : 0;
    return memchr("\"\\/bfnrt", s[1], 8) != NULL ? 2 : 0;
}

/* Bytes of the UTF-8 sequence at s (before end) as yajl checks it: the
 * lead byte's length, all continuation bytes present. 0 when invalid, and
 * for a control character (below 0xc0 only those get here). */
static size_t json_utf8_len(const unsigned char *s, const unsigned char *end)
{
    size_t n = s[0] >= 0xf8 ? 0 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;

    if ((size_t)(end - s) < n)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* Checks the string whose opening quote is behind p->s and leaves p->s on
 * its closing quote. Sets *escaped when it holds an escape. */
static int json_scan_string(struct json_parser *p, int *escaped)
{
    const unsigned char *s = p->s, *end = p->end;
    size_t n;

    for (;;) {
        while (s < end && !json_string_special[*s])
            s++;
        if (s == end)
            break;
        if (*s == '"') {
            p->s = s;
            return 0;
        }
        if (*s == '\\') {
            *escaped = 1;
            n = json_escape_len(s, end);
        } else {
            n = json_utf8_len(s, end);
        }
        if (n == 0)
            break;
        s += n;
    }
    return json_fail(p, JSON_INVALID);
}

/* Writes code point cp (below 0x110000) as UTF-8; returns the bytes. */
static size_t json_utf8_put(char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* The byte a two-character escape stands for. */
static char json_unescape_char(unsigned char c)
{
    switch (c) {
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    default:
        return (char)c; /* '"', '\\', '/' */
    }
}

/* Decodes the len checked bytes of a string with escapes into out (never
 * longer: every escape is at least as long as what it writes), as yajl
 * decodes (see the top of the file), NUL-terminated. U+0000 is refused: C
 * strings cannot hold it, so a name or value with one would compare equal
 * to its prefix. */
static int json_unescape(struct json_parser *p, const unsigned char *raw, size_t len, char *out)
{
    size_t i = 0, o = 0;

    while (i < len) {
        unsigned long cp;

        if (raw[i] != '\\') {
            out[o++] = (char)raw[i++];
            continue;
        }
        if (raw[i + 1] != 'u') {
            out[o++] = json_unescape_char(raw[i + 1]);
            i += 2;
            continue;
        }
        cp = (unsigned long)json_hex4(raw + i + 2);
        i += 6;
        if ((cp & 0xfc00) == 0xd800) {
            if (i == len || raw[i] != '\\' || raw[i + 1] != 'u') {
                out[o++] = '?';
                continue;
            }
            cp = 0x10000 + ((cp & 0x3ff) << 10) + ((unsigned long)json_hex4(raw + i + 2) & 0x3ff);
            i += 6;
        }
        if (cp == 0)
            return json_fail(p, "JSON string holds U+0000");
        o += json_utf8_put(out + o, cp);
    }
    out[o] = '\0';
    return 0;
}

/* Reads the string whose opening quote is behind p->s into a new
 * NUL-terminated copy; NULL (with p->error) when it is not valid. */
static char *json_string(struct json_parser *p)
{
    const unsigned char *raw = p->s;
    int escaped = 0;
    size_t len;
    char *out;

    if (json_scan_string(p, &escaped) != 0)
        return NULL;
    len = (size_t)(p->s - raw);
    p->s++; /* the closing quote */
    if ((out = json_alloc(p, len + 1)) == NULL)
        return NULL;
    if (escaped)
        return json_unescape(p, raw, len, out) == 0 ? out : NULL;
    memcpy(out, raw, len);
    out[len] = '\0';
    return out;
}

/* Skips the digits at s; returns where they end. */
static const unsigned char *json_digits(const unsigned char *s, const unsigned char *end)
{
    while (s < end && *s >= '0' && *s <= '9')
        s++;
    return s;
}

/* Reads a plain integer of at most 15 digits (every NumericDate) into
 * *num: it is exact in a double (below 2^53), so this is what strtod would
 * return, at a fraction of its cost. 0, and nothing read, for any other
 * number. */
static int json_small_integer(const unsigned char *s, size_t len, double *num)
{
    size_t i = len > 0 && s[0] == '-';
    int64_t n = 0;

    if (len == i || len - i > 15)
        return 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        n = n * 10 + (s[i] - '0');
    }
    *num = s[0] == '-' ? -(double)n : (double)n;
    return 1;
}

/* Reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. Its text
 * goes to strtod, which yields +-inf for what a double cannot hold (the
 * claim readers refuse that) and never overflows on the way; v keeps the
 * text, unless the number is a small integer that num holds exactly. */
static int json_number(struct json_parser *p, struct json_value *v)
{
    const unsigned char *start = p->s, *s = p->s, *end = p->end, *digits;
    size_t len;
    char *text;

    if (s < end && *s == '-')
        s++;
    if (s < end && *s == '0')
        s++;
    else if (s < end && *s >= '1' && *s <= '9')
        s = json_digits(s, end);
    else
        return json_fail(p, JSON_INVALID);
    if (s < end && *s == '.') {
        digits = ++s;
        if ((s = json_digits(s, end)) == digits)
            return json_fail(p, JSON_INVALID);
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        if (++s < end && (*s == '+' || *s == '-'))
            s++;
        digits = s;
        if ((s = json_digits(s, end)) == digits)
            return json_fail(p, JSON_INVALID);
    }
    p->s = s;
    len = (size_t)(s - start);
    if (json_small_integer(start, len, &v->num))
        return 0;
    /* strtod needs the text NUL-terminated. */
    if ((text = json_alloc(p, len + 1)) == NULL)
        return -1;
    memcpy(text, start, len);
    text[len] = '\0';
    v->num = strtod(text, NULL);
    v->str = text;
    return 0;
}

/* Consumes the literal word (true, false, null). */
static int json_literal(struct json_parser *p, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(p->end - p->s) < n || memcmp(p->s, word, n) != 0)
        return json_fail(p, JSON_INVALID);
    p->s += n;
    return 0;
}

/* A new value at the end of container parent's children, called name when
 * parent is an object. */
static struct json_value *json_append(struct json_parser *p, struct json_value *parent, char *name)
{
    struct json_value *v = json_alloc(p, sizeof(*v));

    if (v == NULL)
        return NULL;
    memset(v, 0, sizeof(*v));
    v->name = name;
    if (parent->last)
        parent->last->next = v;
    else
        parent->child = v;
    parent->last = v;
    return v;
}

static int json_value_at(struct json_parser *p, struct json_value *v, int depth);

/* Objects up to this many members are checked for a duplicate name as
 * each member is read, against the ones before it; a larger one is checked
 * once, when it ends, by sorting its names. A check per member costs a
 * scan of the others, which a document of many small members would turn
 * into minutes of work (60,000 members: 13 s); tokens and reviews hold a
 * dozen or so. */
#define JSON_LINEAR_MEMBERS 32

static int json_name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fails when two of the n members of object v have the same name. */
static int json_check_names(struct json_parser *p, const struct json_value *v, size_t n)
{
    const char **names = malloc(n * sizeof(*names));
    size_t i = 0;
    int rc = 0;

    if (names == NULL)
        return json_fail(p, "out of memory");
    for (const struct json_value *m = v->child; m != NULL; m = m->next)
        names[i++] = m->name;
    qsort(names, n, sizeof(*names), json_name_cmp);
    for (i = 1; i < n && rc == 0; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            rc = json_fail_duplicate(p, names[i]);
    free(names);
    return rc;
}

/* Reads the members of the object v after its '{' (at p->s: whitespace,
 * then '}' or the first name). depth counts the containers v is in. */
static int json_object(struct json_parser *p, struct json_value *v, int depth)
{
    size_t n = 0;

    json_skip_space(p);
    if (json_peek(p) == '}') {
        p->s++;
        return 0;
    }
    for (;;) {
        struct json_value *member;
        char *name;

        if (json_peek(p) != '"')
            return json_fail(p, JSON_INVALID);
        p->s++;
        if ((name = json_string(p)) == NULL)
            return -1;
        /* Two parsers that keep the first or the last of a name given
         * twice would see different tokens. */
        if (n < JSON_LINEAR_MEMBERS && json_get(v, name) != NULL)
            return json_fail_duplicate(p, name);
        if (json_expect(p, ':') != 0 || (member = json_append(p, v, name)) == NULL)
            return -1;
        n++;
        json_skip_space(p);
        if (json_value_at(p, member, depth + 1) != 0)
            return -1;
        json_skip_space(p);
        if (json_peek(p) == '}') {
            p->s++;
            return n > JSON_LINEAR_MEMBERS ? json_check_names(p, v, n) : 0;
        }
        if (json_expect(p, ',') != 0)
            return -1;
        json_skip_space(p);
    }
}

/* Reads the elements of the array v after its '['; as json_object. */
static int json_array(struct json_parser *p, struct json_value *v, int depth)
{
    json_skip_space(p);
    if (json_peek(p) == ']') {
        p->s++;
        return 0;
    }
    for (;;) {
        struct json_value *element = json_append(p, v, NULL);

        if (element == NULL || json_value_at(p, element, depth + 1) != 0)
            return -1;
        json_skip_space(p);
        if (json_peek(p) == ']') {
            p->s++;
            return 0;
        }
        if (json_expect(p, ',') != 0)
            return -1;
        json_skip_space(p);
    }
}

/* Reads the value at p->s (no whitespace before it) into v, which depth
 * containers hold: a container there would be one level too many when
 * depth is JSON_MAX_DEPTH. */
static int json_value_at(struct json_parser *p, struct json_value *v, int depth)
{
    int c = json_peek(p);

    if ((c == '{' || c == '[') && depth == JSON_MAX_DEPTH)
        return json_fail(p, "JSON nested too deeply");
    switch (c) {
    case '{':
        p->s++;
        v->type = JSON_OBJECT;
        return json_object(p, v, depth);
    case '[':
        p->s++;
        v->type = JSON_ARRAY;
        return json_array(p, v, depth);
    case '"':
        p->s++;
        v->type = JSON_STRING;
        return (v->str = json_string(p)) != NULL ? 0 : -1;
    case 't':
    case 'f':
        v->type = JSON_BOOL;
        v->boolean = c == 't';
        return json_literal(p, c == 't' ? "true" : "false");
    case 'n':
        v->type = JSON_NULL;
        return json_literal(p, "null");
    default:
        v->type = JSON_NUMBER;
        return json_number(p, v);
    }
}

struct json_value *json_parse_at(const unsigned char *json, size_t len, size_t *stop, char *err, size_t errlen)
{
    struct json_parser p = {.s = json, .end = len ? json + len : json};
    struct json_value *root = NULL;

    /* The root takes the first slot of the first chunk (see struct
     * json_chunk). */
    if ((p.first = p.last = json_chunk_new(JSON_CHUNK_DATA)) == NULL) {
        json_fail(&p, "out of memory");
    } else if ((root = json_alloc(&p, sizeof(*root))) != NULL) {
        memset(root, 0, sizeof(*root));
        json_skip_space(&p);
        if (json_peek(&p) != '{')
            json_fail(&p, "the top level is not a JSON object");
        else if (json_value_at(&p, root, 0) == 0)
            json_skip_space(&p);
        if (p.s != p.end)
            json_fail(&p, JSON_INVALID); /* trailing bytes */
    }
    if (p.error == NULL)
        return root;
    snprintf(err, errlen, "%s", p.error);
    if (stop != NULL)
        *stop = (size_t)(p.s - json);
    json_chunks_free(p.first);
    return NULL;
}

struct json_value *json_parse(const unsigned char *json, size_t len, char *err, size_t errlen)
{
    return json_parse_at(json, len, NULL, err, errlen);
}

void json_free(struct json_value *root)
{
    if (root != NULL)
        json_chunks_free((struct json_chunk *)((char *)root - offsetof(struct json_chunk, data)));
}

const struct json_value *json_get(const struct json_value *obj, const char *name)
{
    if (obj == NULL || obj->type != JSON_OBJECT)
        return NULL;
    /* The first byte alone tells most members apart without a call. */
    for (const struct json_value *v = obj->child; v != NULL; v = v->next)
        if (v->name[0] == name[0] && strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

int json_whole(const struct json_value *v, int64_t min, int64_t max, int64_t *out)
{
    if (v == NULL || v->type != JSON_NUMBER || !(v->num >= (double)min && v->num <= (double)max) ||
        v->num != (double)(int64_t)v->num)
        return -1;
    *out = (int64_t)v->num;
    return 0;
}

const char *json_get_str(const struct json_value *obj, const char *name)
{
    const struct json_value *v = json_get(obj, name);

    return v != NULL && v->type == JSON_STRING ? v->str : NULL;
}
