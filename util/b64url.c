/* SPDX-License-Identifier: Apache-2.0 */
#include "util/b64url.h"

#include <stdint.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t b64url_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0, i = 0;

    for (; i + 3 <= n; i += 3) {
        unsigned long v = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8 | in[i + 2];
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
        out[o++] = alphabet[v >> 6 & 63];
        out[o++] = alphabet[v & 63];
    }
    if (n - i == 1) {
        unsigned long v = (unsigned long)in[i] << 16;
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
    } else if (n - i == 2) {
        unsigned long v = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8;
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
        out[o++] = alphabet[v >> 6 & 63];
    }
    out[o] = '\0';
    return o;
}

/* The 6-bit value of each byte; XX (all bits set) for every byte outside
 * the alphabet, padding '=' included. A table, for speed: it decodes every
 * token segment. The unit tests check it against alphabet[] for all 256
 * bytes. */
#define XX 0xffffffffu
/* clang-format off */
static const uint32_t b64url_values[256] = {
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 0x00 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 0x10 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, 62, XX, XX, /* 0x20 */
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, XX, XX, XX, XX, XX, XX, /* 0x30 */
    XX,  0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, /* 0x40 */
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, XX, XX, XX, XX, 63, /* 0x50 */
    XX, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, /* 0x60 */
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, XX, XX, XX, XX, XX, /* 0x70 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 0x80 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 0x90 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 0xa0 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 0xb0 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 0xc0 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 0xd0 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 0xe0 */
    XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, /* 0xf0 */
};
/* clang-format on */
#undef XX

/* The 24 bits of up to four characters (missing ones count as zero bits).
 * A character outside the alphabet sets bits above the 24th: XX shifted by
 * at most 18 still has its top 14 bits. */
static inline uint32_t b64url_bits(const unsigned char *in, size_t k)
{
    uint32_t a = b64url_values[in[0]], b = b64url_values[in[1]];
    uint32_t c = k > 2 ? b64url_values[in[2]] : 0, d = k > 3 ? b64url_values[in[3]] : 0;

    return a << 18 | b << 12 | c << 6 | d;
}

int b64url_decode(const char *in, size_t n, unsigned char *out, size_t *outlen)
{
    const unsigned char *p = (const unsigned char *)in;
    size_t i = 0, o = 0, k;
    uint32_t v;

    if (n % 4 == 1)
        return -1;
    for (; i + 4 <= n; i += 4, o += 3) {
        if ((v = b64url_bits(p + i, 4)) >> 24)
            return -1;
        out[o] = (unsigned char)(v >> 16);
        out[o + 1] = (unsigned char)(v >> 8);
        out[o + 2] = (unsigned char)v;
    }
    if ((k = n - i) != 0) {
        /* A short last group of 2 or 3 characters leaves 4 or 2 bits over:
         * they must be zero, or two strings would decode to the same bytes. */
        if ((v = b64url_bits(p + i, k)) >> 24 || (v & (0xffffffu >> (8 * (k - 1)))) != 0)
            return -1;
        out[o++] = (unsigned char)(v >> 16);
        if (k == 3)
            out[o++] = (unsigned char)(v >> 8);
    }
    *outlen = o;
    return 0;
}
