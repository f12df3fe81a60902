/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bucket_url.c: the object-storage forms of value (see bucket_url.h),
 * checked by hand for the reason checks.c gives: the rules are the
 * stores' naming rules, written out.
 */
#include "config/bucket_url.h"

#include <string.h>

#include "config/checks.h"

#define LOWER_ALNUM   "abcdefghijklmnopqrstuvwxyz0123456789"
#define PREFIX_CHARS  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-"
#define PREFIX_MAX    512
#define REGION_MAX    64
#define AZURE_WEBSITE "$web"

#define TARGET_FORM "must be s3://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX"
#define S3_BUCKET                                                                                                      \
    "has an invalid bucket name (3 to 63 of a-z, 0-9, '.' and '-', starting and ending with a letter or digit)"
#define AZ_ACCOUNT "has an invalid storage account name (3 to 24 of a-z and 0-9)"
#define AZ_CONTAINER                                                                                                   \
    "has an invalid container name (3 to 63 of a-z, 0-9 and '-', starting with a letter or digit, or $web)"
#define PREFIX_BAD                                                                                                     \
    "has an invalid PREFIX (segments of A-Z, a-z, 0-9, '.', '_', '~' and '-', none empty, \".\" or \"..\"; at most "   \
    "512 characters)"
#define ENDPOINT_BAD                                                                                                   \
    "must be an http or https URL with a host, an optional port and no path, like http://127.0.0.1:9000"

/* True when s[0..len) is n to m characters of chars that start and end with
 * a letter or digit. */
static int name_ok(const char *s, size_t len, size_t n, size_t m, const char *chars)
{
    if (len < n || len > m || !strchr(LOWER_ALNUM, s[0]) || !strchr(LOWER_ALNUM, s[len - 1]))
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!strchr(chars, s[i]))
            return 0;
    return 1;
}

/* The next path segment of s[0..len) at *at: its start and length. */
static size_t next_segment(const char *s, size_t len, size_t *at, const char **seg)
{
    size_t n = 0;

    *seg = s + *at;
    while (*at + n < len && s[*at + n] != '/')
        n++;
    *at += n + (*at + n < len);
    return n;
}

/* PREFIX without its trailing "/": segments of PREFIX_CHARS, none "." or "..". */
static int prefix_ok(const char *s, size_t len)
{
    size_t at = 0, n;
    const char *seg;

    if (len > PREFIX_MAX)
        return 0;
    while (at < len) {
        n = next_segment(s, len, &at, &seg);
        if (n == 0 || strspn(seg, PREFIX_CHARS) < n || (n == 1 && seg[0] == '.') ||
            (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return 0;
    }
    return 1;
}

const char *config_split_bucket_url(const char *v, struct config_bucket_url *out)
{
    const char *rest;
    size_t len, at = 0;

    memset(out, 0, sizeof *out);
    if (strncmp(v, "s3://", 5) == 0) {
        out->kind = CONFIG_BUCKET_S3;
        rest = v + 5;
    } else if (strncmp(v, "azblob://", 9) == 0) {
        out->kind = CONFIG_BUCKET_AZBLOB;
        rest = v + 9;
    } else {
        return TARGET_FORM;
    }
    len = strlen(rest);
    if (len > 0 && rest[len - 1] == '/')
        len--;
    out->bucket_len = next_segment(rest, len, &at, &out->bucket);
    if (out->kind == CONFIG_BUCKET_S3 && !name_ok(out->bucket, out->bucket_len, 3, 63, LOWER_ALNUM ".-"))
        return out->bucket_len ? S3_BUCKET : TARGET_FORM;
    if (out->kind == CONFIG_BUCKET_AZBLOB) {
        if (!name_ok(out->bucket, out->bucket_len, 3, 24, LOWER_ALNUM))
            return out->bucket_len ? AZ_ACCOUNT : TARGET_FORM;
        out->container_len = next_segment(rest, len, &at, &out->container);
        if (out->container_len == 0)
            return TARGET_FORM;
        if (!(out->container_len == strlen(AZURE_WEBSITE) && memcmp(out->container, AZURE_WEBSITE, 4) == 0) &&
            (!name_ok(out->container, out->container_len, 3, 63, LOWER_ALNUM "-") ||
             memmem(out->container, out->container_len, "--", 2) != NULL))
            return AZ_CONTAINER;
    }
    out->prefix = rest + at;
    out->prefix_len = at < len ? len - at : 0;
    return prefix_ok(out->prefix, out->prefix_len) ? NULL : PREFIX_BAD;
}

const char *config_check_bucket_url(const char *v, int allow_http)
{
    struct config_bucket_url parts;

    (void)allow_http;
    return config_split_bucket_url(v, &parts);
}

const char *config_check_endpoint(const char *v, int allow_http)
{
    const char *host = strstr(v, "://"), *path;

    (void)allow_http;
    if (config_check_url(v, 1) != NULL || host == NULL)
        return ENDPOINT_BAD;
    path = strchr(host + 3, '/');
    return path == NULL || strcmp(path, "/") == 0 ? NULL : ENDPOINT_BAD;
}

const char *config_check_region(const char *v, int allow_http)
{
    size_t len = strlen(v);

    (void)allow_http;
    if (len == 0 || len > REGION_MAX || strspn(v, LOWER_ALNUM "-") != len)
        return "must be 1 to 64 of a-z, 0-9 and '-', like eu-west-1 (GCS: auto)";
    return NULL;
}
