/* SPDX-License-Identifier: Apache-2.0 */
/*
 * azsign.c: see azsign.h.
 */
#include "push/azsign.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/strbuf.h"

/* The standard headers of the string to sign, in its order; Content-Length
 * is the body's length, given apart. */
static const char *const push_azsign_standard[] = {
    "Content-Encoding",  "Content-Language", "Content-Length", "Content-MD5",         "Content-Type", "Date",
    "If-Modified-Since", "If-Match",         "If-None-Match",  "If-Unmodified-Since", "Range"};

#define PUSH_AZSIGN_NSTANDARD (sizeof(push_azsign_standard) / sizeof(push_azsign_standard[0]))

/* The value of header field f if its name is name, else NULL. */
static const char *push_azsign_value(const char *f, const char *name)
{
    size_t n = strlen(name);
    const char *v;

    if (strncasecmp(f, name, n) != 0 || f[n] != ':')
        return NULL;
    for (v = f + n + 1; *v == ' ' || *v == '\t'; v++)
        ;
    return v;
}

static int push_azsign_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The x-ms- fields, "name:value" with the name lowercased and the value
 * trimmed, sorted by name, each followed by "\n". */
static void push_azsign_ms_headers(struct strbuf *b, const char *const *headers)
{
    size_t n = 0, count = 0;

    for (size_t i = 0; headers && headers[i]; i++)
        count += strncasecmp(headers[i], "x-ms-", 5) == 0;
    char *lines[count ? count : 1];
    for (size_t i = 0; headers && headers[i]; i++) {
        const char *f = headers[i], *colon = strchr(f, ':'), *v, *end;
        if (strncasecmp(f, "x-ms-", 5) != 0 || colon == NULL)
            continue;
        for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
            ;
        for (end = v + strlen(v); end > v && (end[-1] == ' ' || end[-1] == '\t'); end--)
            ;
        if ((lines[n] = malloc((size_t)(colon - f) + (size_t)(end - v) + 2)) == NULL) {
            b->failed = 1;
            break;
        }
        for (size_t k = 0; k < (size_t)(colon - f); k++)
            lines[n][k] = (char)(f[k] >= 'A' && f[k] <= 'Z' ? f[k] - 'A' + 'a' : f[k]);
        lines[n][colon - f] = ':';
        memcpy(lines[n] + (colon - f) + 1, v, (size_t)(end - v));
        lines[n][(colon - f) + 1 + (end - v)] = '\0';
        n++;
    }
    qsort(lines, n, sizeof(lines[0]), push_azsign_cmp);
    for (size_t i = 0; i < n; i++) {
        strbuf_puts(b, lines[i]);
        strbuf_add(b, "\n", 1);
        free(lines[i]);
    }
}

char *push_azsign_string(const char *account, const char *method, const char *path, const char *const *headers,
                         size_t content_length)
{
    struct strbuf b = {0};
    char length[32] = "";
    size_t len;

    if (content_length > 0)
        snprintf(length, sizeof(length), "%zu", content_length);
    strbuf_puts(&b, method);
    strbuf_add(&b, "\n", 1);
    for (size_t s = 0; s < PUSH_AZSIGN_NSTANDARD; s++) {
        const char *v = s == 2 ? length : NULL;
        for (size_t i = 0; s != 2 && headers && headers[i] && v == NULL; i++)
            v = push_azsign_value(headers[i], push_azsign_standard[s]);
        strbuf_puts(&b, v ? v : "");
        strbuf_add(&b, "\n", 1);
    }
    push_azsign_ms_headers(&b, headers);
    strbuf_add(&b, "/", 1);
    strbuf_puts(&b, account);
    strbuf_puts(&b, path);
    return strbuf_finish(&b, &len);
}

int push_azsign_field(const char *account, const unsigned char *key, size_t keylen, const char *to_sign, char *out,
                      size_t outlen)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    char sig[2 * EVP_MAX_MD_SIZE];
    int n;

    if (HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)to_sign, strlen(to_sign), mac, &maclen) == NULL)
        return -1;
    EVP_EncodeBlock((unsigned char *)sig, mac, (int)maclen);
    n = snprintf(out, outlen, "Authorization: SharedKey %s:%s", account, sig);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int push_azsign_decode_key(const char *b64, unsigned char *out)
{
    size_t start = strspn(b64, " \t\r\n"), n = strlen(b64 + start), pad = 0;
    int len;

    while (n > 0 && strchr(" \t\r\n", b64[start + n - 1]))
        n--;
    if (n == 0 || n % 4 != 0 ||
        strspn(b64 + start, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") < n)
        return -1;
    while (pad < 2 && b64[start + n - 1 - pad] == '=')
        pad++;
    if ((len = EVP_DecodeBlock(out, (const unsigned char *)b64 + start, (int)n)) < 0)
        return -1;
    return len - (int)pad;
}
