/* SPDX-License-Identifier: Apache-2.0 */
#include "diag/issuer.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A part from s to end. */
static struct issuer_part part(const char *s, const char *end)
{
    return (struct issuer_part){s, (size_t)(end - s)};
}

/* The first of the characters in set within [s, end), or end. */
static const char *find_any(const char *s, const char *end, const char *set)
{
    while (s < end && !strchr(set, *s))
        s++;
    return s;
}

/* Splits host[:port] (IPv6 in brackets) into u. Returns 0, or -1 when
 * there is no host. */
static int split_hostport(const char *s, const char *end, struct issuer_url *u)
{
    const char *host_end = end, *colon;

    if (s < end && *s == '[') {
        const char *close = memchr(s, ']', (size_t)(end - s));
        host_end = close ? close + 1 : end;
    }
    colon = memchr(host_end == end ? s : host_end, ':', (size_t)(end - (host_end == end ? s : host_end)));
    if (colon != NULL) {
        host_end = colon;
        u->has_port = 1;
        u->port = part(colon + 1, end);
    }
    u->host = part(s, host_end);
    return u->host.len > 0 ? 0 : -1;
}

int issuer_url_split(const char *url, struct issuer_url *u)
{
    const char *sep = strstr(url, "://"), *end = url + strlen(url), *auth, *auth_end, *at, *q;

    memset(u, 0, sizeof(*u));
    if (sep == NULL || sep == url)
        return -1;
    u->scheme = part(url, sep);
    auth = sep + 3;
    auth_end = find_any(auth, end, "/?#");
    at = memrchr(auth, '@', (size_t)(auth_end - auth));
    if (at != NULL) {
        u->has_userinfo = 1;
        u->userinfo = part(auth, at);
        auth = at + 1;
    }
    if (split_hostport(auth, auth_end, u) != 0)
        return -1;
    q = find_any(auth_end, end, "?#");
    u->path = part(auth_end, q);
    if (q < end && *q == '?') {
        const char *hash = find_any(q, end, "#");
        u->has_query = 1;
        u->query = part(q + 1, hash);
        q = hash;
    }
    if (q < end) {
        u->has_fragment = 1;
        u->fragment = part(q + 1, end);
    }
    return 0;
}

/* (A part that is absent has s NULL and len 0.) */
static int same(struct issuer_part a, struct issuer_part b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.s, b.s, a.len) == 0);
}

static int same_ignoring_case(struct issuer_part a, struct issuer_part b)
{
    return a.len == b.len && (a.len == 0 || strncasecmp(a.s, b.s, a.len) == 0);
}

/* a without its trailing slashes. */
static struct issuer_part without_slashes(struct issuer_part a)
{
    while (a.len > 0 && a.s[a.len - 1] == '/')
        a.len--;
    return a;
}

/* The ways two URLs can differ, in the order they are named. */
enum difference {
    DIFF_SCHEME,
    DIFF_USERINFO,
    DIFF_HOST,
    DIFF_PORT,
    DIFF_PATH,
    DIFF_SLASH,
    DIFF_CASE,
    DIFF_QUERY,
    DIFF_FRAGMENT,
    DIFF_COUNT
};

static const char *const difference_names[DIFF_COUNT] = {
    "scheme", "user information", "host", "port", "path", "a trailing slash", "case", "query", "fragment",
};

/* Marks how part a differs from b: not at all, in case only, or as
 * other. */
static void compare_part(struct issuer_part a, struct issuer_part b, int other, int found[DIFF_COUNT])
{
    if (same(a, b))
        return;
    found[same_ignoring_case(a, b) ? DIFF_CASE : other] = 1;
}

/* Paths that differ only by trailing slashes differ by "a trailing
 * slash" (and maybe case); others by their path. */
static void compare_path(struct issuer_part a, struct issuer_part b, int found[DIFF_COUNT])
{
    struct issuer_part x = without_slashes(a), y = without_slashes(b);

    if (same(a, b))
        return;
    if (!same_ignoring_case(x, y)) {
        found[DIFF_PATH] = 1;
        return;
    }
    if (a.len - x.len != b.len - y.len)
        found[DIFF_SLASH] = 1;
    if (!same(x, y))
        found[DIFF_CASE] = 1;
}

/* Marks every difference between two URLs that split. */
static void compare_urls(const struct issuer_url *w, const struct issuer_url *g, int found[DIFF_COUNT])
{
    compare_part(w->scheme, g->scheme, DIFF_SCHEME, found);
    if (w->has_userinfo != g->has_userinfo)
        found[DIFF_USERINFO] = 1;
    else
        compare_part(w->userinfo, g->userinfo, DIFF_USERINFO, found);
    compare_part(w->host, g->host, DIFF_HOST, found);
    if (w->has_port != g->has_port || !same(w->port, g->port))
        found[DIFF_PORT] = 1;
    compare_path(w->path, g->path, found);
    if (w->has_query != g->has_query)
        found[DIFF_QUERY] = 1;
    else
        compare_part(w->query, g->query, DIFF_QUERY, found);
    if (w->has_fragment != g->has_fragment)
        found[DIFF_FRAGMENT] = 1;
    else
        compare_part(w->fragment, g->fragment, DIFF_FRAGMENT, found);
}

/* Writes the names of the differences found, "a, b and c". */
static void write_names(const int found[DIFF_COUNT], char *out, size_t len)
{
    size_t n = 0, left = 0;

    for (int i = 0; i < DIFF_COUNT; i++)
        left += (size_t)found[i];
    out[0] = '\0';
    for (int i = 0; i < DIFF_COUNT && n < len; i++) {
        if (!found[i])
            continue;
        left--;
        n += (size_t)snprintf(out + n, len - n, "%s%s", difference_names[i], left > 1 ? ", " : left > 0 ? " and " : "");
    }
}

int issuer_difference(const char *want, const char *got, char *out, size_t len)
{
    struct issuer_url w, g;
    int found[DIFF_COUNT] = {0};

    if (strcmp(want, got) == 0) {
        if (len > 0)
            out[0] = '\0';
        return 0;
    }
    if (issuer_url_split(want, &w) != 0 || issuer_url_split(got, &g) != 0) {
        snprintf(out, len, "the whole URL");
        return 1;
    }
    compare_urls(&w, &g, found);
    write_names(found, out, len);
    return 1;
}
