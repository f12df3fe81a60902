/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checks.c: the value checks of config/ (see checks.h). Each form is
 * checked by hand rather than with a library: getaddrinfo or a URL parser
 * would accept what kube-apiserver refuses (user information, blanks,
 * percent signs without two hex digits) and could reach the network; the
 * rules here are RFC 3986's character sets and RFC 9110's token, written
 * out, and inet_pton for IPv6.
 */
#include "config/checks.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#define STR(x)  #x
#define XSTR(x) STR(x)

#define MAX_PORT         65535
#define URL_MAX          2048
#define CONTENT_TYPE_MAX 100
#define HOSTNAME_MAX     253
#define DNS_NAME_MAX     253
#define UNIX_PREFIX      "unix:"
#define UNIX_PATH_MAX    107 /* sun_path holds 108 bytes with the terminating NUL */
#define PATH_PREFIX_MAX  256

#define ALNUM      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#define HEX_DIGITS "0123456789abcdefABCDEF"
/* RFC 3986: unreserved "-._~", gen-delims ":/?#[]@" and sub-delims "!$&'()*+,;="; '%' is checked apart. */
#define URL_CHARS ALNUM "-._~:/?#[]@!$&'()*+,;="
/* RFC 9110 token characters, which type and subtype of a media type are made of. */
#define TOKEN_CHARS ALNUM "!#$%&'*+-.^_`|~"
/* A listen host that is not a bracketed IPv6 address: a DNS name or IPv4. */
#define HOST_CHARS ALNUM "-._"
/* RFC 3986 path characters of --path-prefix: unreserved, sub-delims, ':', '@' and '/'; '%' is checked apart. */
#define PATH_CHARS ALNUM "-._~!$&'()*+,;=:@/"
/* A label of a DNS-1123 name, as Kubernetes names namespaces and service accounts. */
#define DNS_LABEL_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-"

#define HTTP_NOT_ALLOWED "must be an https URL (--allow-insecure-issuer permits http for development only)"
#define LISTEN_FORM      "must be HOST:PORT, or [ADDRESS]:PORT for IPv6"
#define MEDIA_TYPE_PROBLEM                                                                                             \
    "must be a media type such as application/json (type/subtype, optionally ;parameters, "                            \
    "printable ASCII, at most " XSTR(CONTENT_TYPE_MAX) " characters)"
#define AUDIENCES_PROBLEM   "must be a comma-separated list of non-empty audiences"
#define DNS_NAME_PROBLEM    "must be a DNS-1123 name (lowercase letters, digits, '-' and '.')"
#define UNIX_PROBLEM        "must be unix:/absolute/path"
#define UNIX_TOO_LONG       "socket path longer than " XSTR(UNIX_PATH_MAX) " bytes"
#define PATH_PREFIX_PROBLEM "must be a path like /oidc (leading slash, no trailing slash)"
#define HOSTS_PROBLEM       "must be a comma-separated list of host names (optionally :port)"

/* Each digit is checked against max before it is added, so nothing wraps. */
int config_parse_decimal(const char *s, size_t len, unsigned long max, unsigned long *out)
{
    unsigned long v = 0, digit;

    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        digit = (unsigned long)(s[i] - '0');
        if (digit > max || v > (max - digit) / 10)
            return -1;
        v = v * 10 + digit;
    }
    *out = v;
    return 0;
}

/* The units of a duration, largest first; a missing suffix means seconds. */
static const struct {
    char suffix;
    unsigned long seconds;
} duration_units[] = {{'d', CONFIG_DAY}, {'h', CONFIG_HOUR}, {'m', CONFIG_MINUTE}, {'s', 1}, {'\0', 1}};

/* Seconds per unit of a duration suffix; 0 for anything else. */
static unsigned long duration_unit(const char *suffix)
{
    if (suffix[0] && suffix[1])
        return 0;
    for (size_t i = 0; i < sizeof duration_units / sizeof duration_units[0]; i++)
        if (duration_units[i].suffix == suffix[0])
            return duration_units[i].seconds;
    return 0;
}

int config_parse_duration(const char *s, unsigned long *out)
{
    size_t digits = strspn(s, "0123456789");
    unsigned long unit = duration_unit(s + digits), n;

    if (unit == 0 || config_parse_decimal(s, digits, CONFIG_DURATION_MAX / unit, &n) < 0)
        return -1;
    *out = n * unit;
    return 0;
}

void config_format_duration(unsigned long seconds, char *out, size_t len)
{
    size_t i = 0;

    while (seconds % duration_units[i].seconds != 0)
        i++;
    if (seconds == 0)
        snprintf(out, len, "0");
    else
        snprintf(out, len, "%lu%c", seconds / duration_units[i].seconds, duration_units[i].suffix);
}

/* True when s[0..len) is a textual IPv6 address (without brackets). */
static int is_ipv6(const char *s, size_t len)
{
    char buf[INET6_ADDRSTRLEN];
    struct in6_addr addr;

    if (len >= sizeof buf)
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return inet_pton(AF_INET6, buf, &addr) == 1;
}

/* True when c is an ASCII hex digit (and not the terminating NUL). */
static int is_hex(char c)
{
    return c && strchr(HEX_DIGITS, c);
}

/* True when every character of s is one of chars, or a '%' that starts a
 * percent-encoded byte. */
static int chars_ok(const char *s, const char *chars)
{
    for (; *s; s++) {
        if (*s == '%') {
            if (!is_hex(s[1]) || !is_hex(s[2]))
                return 0;
            s += 2;
        } else if (!strchr(chars, *s)) {
            return 0;
        }
    }
    return 1;
}

/* Checks the authority a[0..len) of a URL already known to hold only URL
 * characters and no query or fragment: a host (a name, IPv4 or [IPv6]) and
 * an optional port, no user information. */
static const char *check_authority(const char *a, size_t len)
{
    const char *end = a + len, *host_end, *after;
    unsigned long port;

    if (memchr(a, '@', len))
        return "must not contain user information";
    if (len && a[0] == '[') {
        host_end = memchr(a, ']', len);
        if (!host_end)
            return "has an invalid host";
        if (host_end == a + 1)
            return "has no host";
        if (!is_ipv6(a + 1, (size_t)(host_end - a - 1)))
            return "has an invalid host";
        after = host_end + 1;
        if (after != end && *after != ':')
            return "has an invalid host";
    } else {
        host_end = memchr(a, ':', len);
        after = host_end ? host_end : end;
        if (after == a)
            return "has no host";
        if (memchr(a, '[', (size_t)(after - a)) || memchr(a, ']', (size_t)(after - a)))
            return "has an invalid host";
    }
    if (after == end)
        return NULL;
    if (config_parse_decimal(after + 1, (size_t)(end - after - 1), MAX_PORT, &port) < 0 || port == 0)
        return "has an invalid port";
    return NULL;
}

const char *config_check_url(const char *url, int allow_http)
{
    const char *rest;

    if (strlen(url) > URL_MAX)
        return "is longer than " XSTR(URL_MAX) " characters";
    if (strncmp(url, "https://", 8) == 0)
        rest = url + 8;
    else if (strncmp(url, "http://", 7) != 0)
        return "must be an https URL";
    else if (!allow_http)
        return HTTP_NOT_ALLOWED;
    else
        rest = url + 7;
    if (!chars_ok(rest, URL_CHARS))
        return "contains a character not allowed in a URL";
    if (strchr(rest, '?'))
        return "must not have a query";
    if (strchr(rest, '#'))
        return "must not have a fragment";
    return check_authority(rest, strcspn(rest, "/"));
}

const char *config_check_upstream(const char *v, int allow_http)
{
    const char *why;

    (void)allow_http;
    if (strcmp(v, "in-cluster") == 0)
        return NULL;
    why = config_check_url(v, 0);
    return why != NULL && strcmp(why, HTTP_NOT_ALLOWED) == 0
               ? "must be https (a bearer token is sent there), or in-cluster for this pod's API server"
               : why;
}

const char *config_check_web_url(const char *url)
{
    const char *rest = strncmp(url, "https://", 8) == 0 ? url + 8 : strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;

    if (strlen(url) > URL_MAX)
        return "is longer than " XSTR(URL_MAX) " characters";
    if (rest == NULL)
        return "must be an https URL";
    if (!chars_ok(rest, URL_CHARS))
        return "contains a character not allowed in a URL";
    return check_authority(rest, strcspn(rest, "/?#"));
}

/* An --etcd-servers item: http(s)://host:port, as kube-apiserver's,
 * with no path (the client adds the API's). Non-zero when s[0..len) is
 * not one. */
static int bad_etcd_server(void *ctx, const char *s, size_t len)
{
    char url[URL_MAX + 1];
    const char *rest;
    size_t n;

    (void)ctx;
    if (len == 0 || len > URL_MAX)
        return 1;
    memcpy(url, s, len);
    url[len] = '\0';
    rest = strncmp(url, "https://", 8) == 0 ? url + 8 : strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;
    if (rest == NULL || !chars_ok(rest, URL_CHARS))
        return 1;
    n = strcspn(rest, "/?#");
    if (rest[n] != '\0' && strcmp(rest + n, "/") != 0)
        return 1;
    return check_authority(rest, n) != NULL;
}

const char *config_check_etcd_servers(const char *v)
{
    return config_each_item(v, bad_etcd_server, NULL)
               ? "must be etcd client URLs, comma-separated, each https://HOST:PORT (or http://) without a path"
               : NULL;
}

const char *config_check_etcd_prefix(const char *v)
{
    size_t n = strlen(v);

    if (n < 2 || v[0] != '/' || v[n - 1] != '/' || n > 256)
        return "must start and end with '/' (like /oidc-discovery/), so that no other prefix overlaps it";
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return "must be printable ASCII without spaces";
    return NULL;
}

int config_is_unix_listen(const char *s)
{
    return strncmp(s, UNIX_PREFIX, strlen(UNIX_PREFIX)) == 0;
}

/* "has no host", with what was likely meant when the port is good: Go's
 * ":8080" (every address) is 0.0.0.0:8080 here, "[]:8080" is [::]:8080. */
static const char *no_host(const char *s, const char *port_text, int port_ok, char problem[CONFIG_PROBLEM_MAX])
{
    if (!port_ok)
        return "has no host";
    if (s[0] == '[')
        snprintf(problem, CONFIG_PROBLEM_MAX, "has no host; did you mean [::]:%s (every IPv6 address)?", port_text);
    else
        snprintf(problem, CONFIG_PROBLEM_MAX,
                 "has no host; did you mean 0.0.0.0:%s (every IPv4 address) or 127.0.0.1:%s (this host only)?",
                 port_text, port_text);
    return problem;
}

const char *config_split_listen(const char *s, struct config_hostport *hp, char problem[CONFIG_PROBLEM_MAX])
{
    const char *colon;
    int port_ok;

    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return LISTEN_FORM;
        hp->host = s + 1;
        colon = close + 1;
        hp->hostlen = (size_t)(close - hp->host);
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return LISTEN_FORM;
        hp->host = s;
        hp->hostlen = (size_t)(colon - s);
    }
    port_ok = config_parse_decimal(colon + 1, strlen(colon + 1), MAX_PORT, &hp->port) == 0;
    if (hp->hostlen == 0)
        return no_host(s, colon + 1, port_ok, problem);
    if (s[0] == '[' ? !is_ipv6(hp->host, hp->hostlen)
                    : hp->hostlen > HOSTNAME_MAX || strspn(hp->host, HOST_CHARS) < hp->hostlen)
        return "has an invalid host";
    return port_ok ? NULL : "must have a port between 0 and " XSTR(MAX_PORT);
}

const char *config_check_listen(const char *v, int unix_ok, char problem[CONFIG_PROBLEM_MAX])
{
    const char *path = v + strlen(UNIX_PREFIX);
    struct config_hostport hp;

    if (!config_is_unix_listen(v))
        return config_split_listen(v, &hp, problem);
    if (!unix_ok)
        return LISTEN_FORM;
    if (path[0] != '/')
        return UNIX_PROBLEM;
    return strlen(path) > UNIX_PATH_MAX ? UNIX_TOO_LONG : NULL;
}

const char *config_check_unix_socket(const char *v)
{
    char problem[CONFIG_PROBLEM_MAX];

    if (!config_is_unix_listen(v))
        return "must be unix:/PATH: kube-apiserver's --service-account-signing-endpoint is a Unix socket";
    return config_check_listen(v, 1, problem);
}

/* "[USER][:GROUP]": names or numbers, at least one of them. */
const char *config_check_owner(const char *v)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:";
    const char *colon = strchr(v, ':');

    if (strspn(v, chars) != strlen(v) || strcmp(v, ":") == 0 || v[0] == '\0' || (colon && strchr(colon + 1, ':')))
        return "must be USER, USER:GROUP or :GROUP (names or numeric ids)";
    return NULL;
}

/* No empty, "." or ".." segment either: a prefix names one place. */
const char *config_check_path_prefix(const char *v)
{
    size_t len = strlen(v), n;

    if (len < 2 || len > PATH_PREFIX_MAX || v[0] != '/' || v[len - 1] == '/' || !chars_ok(v, PATH_CHARS))
        return PATH_PREFIX_PROBLEM;
    for (const char *seg = v + 1;; seg += n + 1) {
        n = strcspn(seg, "/");
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return PATH_PREFIX_PROBLEM;
        if (seg[n] == '\0')
            return NULL;
    }
}

/* type/subtype, then nothing or ";" parameters, in printable ASCII, short
 * enough for a header. */
const char *config_check_media_type(const char *v)
{
    size_t len = strlen(v), type = strspn(v, TOKEN_CHARS), subtype;
    const char *rest;

    for (size_t i = 0; i < len; i++)
        if (v[i] < 0x20 || v[i] > 0x7e)
            return MEDIA_TYPE_PROBLEM;
    if (len > CONTENT_TYPE_MAX || type == 0 || v[type] != '/')
        return MEDIA_TYPE_PROBLEM;
    subtype = strspn(v + type + 1, TOKEN_CHARS);
    rest = v + type + 1 + subtype;
    if (subtype == 0)
        return MEDIA_TYPE_PROBLEM;
    if (*rest == '\0')
        return NULL;
    rest += strspn(rest, " ");
    return *rest == ';' ? NULL : MEDIA_TYPE_PROBLEM;
}

/* A DNS-1123 subdomain, which is what Kubernetes accepts as the name of a
 * namespace or service account: at most 253 characters, dot-separated
 * labels of lowercase letters, digits and '-' that do not start or end
 * with '-'. */
const char *config_check_dns_name(const char *v)
{
    if (strlen(v) > DNS_NAME_MAX)
        return DNS_NAME_PROBLEM;
    for (size_t n;; v += n + 1) {
        n = strspn(v, DNS_LABEL_CHARS);
        if (n == 0 || v[0] == '-' || v[n - 1] == '-')
            return DNS_NAME_PROBLEM;
        if (v[n] == '\0')
            return NULL;
        if (v[n] != '.')
            return DNS_NAME_PROBLEM;
    }
}

#define CALLER_PROBLEM                                                                                                 \
    "must be a service account's username, system:serviceaccount:NAMESPACE:NAME, or a client certificate's subject "   \
    "in RFC 4514 form, such as CN=vault,O=example"
#define SA_USERNAME_PREFIX "system:serviceaccount:"
#define DN_KEYWORD_FIRST   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
#define DN_KEYWORD_CHARS   DN_KEYWORD_FIRST "0123456789-"

/* The length of an RFC 4514 attribute type at v: a keyword (CN, O,
 * emailAddress) or a dotted OID (2.5.4.3); 0 when there is none. */
static size_t dn_type(const char *v)
{
    size_t n = 0;

    if (strchr(DN_KEYWORD_FIRST, v[0]) != NULL && v[0] != '\0')
        return strspn(v, DN_KEYWORD_CHARS);
    while (v[n] >= '0' && v[n] <= '9') {
        n += strspn(v + n, "0123456789");
        if (v[n] != '.' || v[n + 1] < '0' || v[n + 1] > '9')
            break;
        n++;
    }
    return n;
}

/* True when v is a distinguished name as OpenSSL prints it in RFC 4514
 * (RFC 2253) form: TYPE=VALUE attributes separated by ',' (or '+' within
 * one RDN), values in printable ASCII with the special characters escaped
 * by a backslash (OpenSSL escapes everything else, non-ASCII included, as
 * \XX). Only the form is checked: it is compared as a string. */
static int is_dn(const char *v)
{
    for (;;) {
        size_t n = dn_type(v);
        if (n == 0 || v[n] != '=')
            return 0;
        for (v += n + 1; *v != '\0' && *v != ',' && *v != '+'; v++) {
            if (*v < 0x20 || *v > 0x7e || (*v == '\\' && (v[1] < 0x20 || v[1] > 0x7e)))
                return 0;
            v += *v == '\\';
        }
        if (*v == '\0')
            return 1;
        v++;
    }
}

/* The NAMESPACE:NAME part of a service account's username, each a DNS
 * name. */
static int is_sa_name(const char *v)
{
    const char *colon = strchr(v, ':');
    char ns[DNS_NAME_MAX + 1];

    if (colon == NULL || (size_t)(colon - v) > DNS_NAME_MAX)
        return 0;
    memcpy(ns, v, (size_t)(colon - v));
    ns[colon - v] = '\0';
    return config_check_dns_name(ns) == NULL && config_check_dns_name(colon + 1) == NULL;
}

const char *config_check_caller(const char *v)
{
    if (strchr(v, '=') != NULL)
        return is_dn(v) ? NULL : CALLER_PROBLEM;
    if (strncmp(v, SA_USERNAME_PREFIX, strlen(SA_USERNAME_PREFIX)) != 0)
        return CALLER_PROBLEM;
    return is_sa_name(v + strlen(SA_USERNAME_PREFIX)) ? NULL : CALLER_PROBLEM;
}

int config_each_item(const char *v, int (*item)(void *ctx, const char *s, size_t len), void *ctx)
{
    for (size_t n;; v += n + 1) {
        int rc;
        n = strcspn(v, ",");
        if ((rc = item(ctx, v, n)) != 0)
            return rc;
        if (v[n] == '\0')
            return 0;
    }
}

/* An audience is any non-empty string: an empty one is a typo such as ",,"
 * that would never match a token. Non-zero when s[0..len) is not one. */
static int bad_audience(void *ctx, const char *s, size_t len)
{
    (void)ctx;
    (void)s;
    return len == 0;
}

const char *config_check_audiences(const char *v)
{
    return config_each_item(v, bad_audience, NULL) ? AUDIENCES_PROBLEM : NULL;
}

/* An --allowed-hosts item, as a Host header carries it: a name or IPv4
 * address, or an [IPv6] address, then optionally ":" and a port. Non-zero
 * when s[0..len) is not one. */
static int bad_host(void *ctx, const char *s, size_t len)
{
    const char *end = s + len, *after;
    unsigned long port;

    (void)ctx;
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close || !is_ipv6(s + 1, (size_t)(close - s - 1)))
            return 1;
        after = close + 1;
    } else {
        const char *colon = memchr(s, ':', len);
        after = colon ? colon : end;
        /* s[after - s] is ':', ',' or the end, none of them a host character */
        if (after == s || after - s > HOSTNAME_MAX || strspn(s, HOST_CHARS) != (size_t)(after - s))
            return 1;
    }
    if (after == end)
        return 0;
    return *after != ':' || config_parse_decimal(after + 1, (size_t)(end - after - 1), MAX_PORT, &port) < 0 ||
           port == 0;
}

const char *config_check_hosts(const char *v)
{
    return config_each_item(v, bad_host, NULL) ? HOSTS_PROBLEM : NULL;
}
