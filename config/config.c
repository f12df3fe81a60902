/*
 * config.c: argv and the optional JSON config file -> one validated config.
 *
 * config_parse() works in stages, each in its own function:
 *
 *   parse_command()  picks "serve", "dev" or "keys" from argv[1];
 *   scan_flags()     reads argv with getopt_long into a list of flags without
 *                    applying them, because --config must take effect first
 *                    wherever it appears;
 *   merge_sources()  feeds the config file and then those flags into one
 *                    "setting" per option: its raw string values plus where
 *                    they came from, so errors can name the flag or file key;
 *   put_defaults()   fills what nobody set, as if it had been a flag;
 *   validate()       checks --output and every value, derives the dev issuer
 *                    and the jwks_uri, and checks the required options;
 *   convert()        moves the settings into struct config.
 */
#include "config/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>

#define STR(x)  #x
#define XSTR(x) STR(x)

#define DEFAULT_LISTEN       "127.0.0.1:8080"
#define DEFAULT_MAX_AGE      3600
#define DEFAULT_CONTENT_TYPE "application/jwk-set+json"
#define JWKS_PATH            "/openid/v1/jwks"
#define MAX_THREADS          256
#define MAX_MAX_AGE          31536000 /* one year */
#define MAX_PORT             65535
#define URL_MAX              2048
#define CONTENT_TYPE_MAX     100
#define HOSTNAME_MAX         253
#define CONFIG_FILE_MAX      (1024 * 1024)
#define FLAG_VAL             256 /* getopt values of long flags start past every short option character */
#define MINUTE               60UL
#define HOUR                 (60 * MINUTE)
#define DAY                  (24 * HOUR)
#define DURATION_MAX         (36500 * DAY) /* 100 years, which fits even a 32-bit unsigned long */
#define DEFAULT_RELOAD       60
#define MAX_RETENTION_DAYS   3650

#define ALNUM      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#define HEX_DIGITS "0123456789abcdefABCDEF"
/* RFC 3986: unreserved "-._~", gen-delims ":/?#[]@" and sub-delims "!$&'()*+,;="; '%' is checked apart. */
#define URL_CHARS ALNUM "-._~:/?#[]@!$&'()*+,;="
/* RFC 9110 token characters, which type and subtype of a media type are made of. */
#define TOKEN_CHARS ALNUM "!#$%&'*+-.^_`|~"
/* A listen host that is not a bracketed IPv6 address: a DNS name or IPv4. */
#define HOST_CHARS ALNUM "-._"

#define HTTP_NOT_ALLOWED "must be an https URL (--allow-insecure-issuer permits http for development only)"
#define LISTEN_FORM      "must be HOST:PORT, or [ADDRESS]:PORT for IPv6"
#define MEDIA_TYPE_PROBLEM                                                                                             \
    "must be a media type such as application/json (type/subtype, optionally ;parameters, "                            \
    "printable ASCII, at most " XSTR(CONTENT_TYPE_MAX) " characters)"
#define RANGE_PROBLEM(lo, hi) "must be an integer between " XSTR(lo) " and " XSTR(hi)
#define DURATION_PROBLEM(lo, hi)                                                                                       \
    "must be a duration between " lo " and " hi " (like 90s, 15m, 24h, 7d or plain seconds)"

/* Every flag. The first OPT_KEYS are also the keys of the config file. */
enum opt {
    OPT_ISSUER,
    OPT_JWKS_URI,
    OPT_KEY_FILE,
    OPT_LISTEN,
    OPT_THREADS,
    OPT_MAX_AGE,
    OPT_CONTENT_TYPE,
    OPT_CORS,
    OPT_ALLOW_INSECURE,
    OPT_KEY_RELOAD_INTERVAL,
    OPT_KEY_RETENTION,
    OPT_STATE_DIR,
    OPT_SIGNING_KEY_FILE,
    OPT_KEYS,
    OPT_NO_CORS = OPT_KEYS,
    OPT_OUTPUT,
    OPT_CONFIG,
    OPT_HELP,
    OPT_VERSION,
    OPT_COUNT
};

static const struct option long_options[OPT_COUNT + 1] = {
    [OPT_ISSUER] = {"service-account-issuer", required_argument, NULL, FLAG_VAL + OPT_ISSUER},
    [OPT_JWKS_URI] = {"service-account-jwks-uri", required_argument, NULL, FLAG_VAL + OPT_JWKS_URI},
    [OPT_KEY_FILE] = {"service-account-key-file", required_argument, NULL, FLAG_VAL + OPT_KEY_FILE},
    [OPT_LISTEN] = {"listen", required_argument, NULL, FLAG_VAL + OPT_LISTEN},
    [OPT_THREADS] = {"threads", required_argument, NULL, FLAG_VAL + OPT_THREADS},
    [OPT_MAX_AGE] = {"max-age", required_argument, NULL, FLAG_VAL + OPT_MAX_AGE},
    [OPT_CONTENT_TYPE] = {"jwks-content-type", required_argument, NULL, FLAG_VAL + OPT_CONTENT_TYPE},
    [OPT_CORS] = {"cors", no_argument, NULL, FLAG_VAL + OPT_CORS},
    [OPT_ALLOW_INSECURE] = {"allow-insecure-issuer", no_argument, NULL, FLAG_VAL + OPT_ALLOW_INSECURE},
    [OPT_KEY_RELOAD_INTERVAL] = {"key-reload-interval", required_argument, NULL, FLAG_VAL + OPT_KEY_RELOAD_INTERVAL},
    [OPT_KEY_RETENTION] = {"key-retention", required_argument, NULL, FLAG_VAL + OPT_KEY_RETENTION},
    [OPT_STATE_DIR] = {"state-dir", required_argument, NULL, FLAG_VAL + OPT_STATE_DIR},
    [OPT_SIGNING_KEY_FILE] = {"signing-key-file", required_argument, NULL, FLAG_VAL + OPT_SIGNING_KEY_FILE},
    [OPT_NO_CORS] = {"no-cors", no_argument, NULL, FLAG_VAL + OPT_NO_CORS},
    [OPT_OUTPUT] = {"output", required_argument, NULL, FLAG_VAL + OPT_OUTPUT},
    [OPT_CONFIG] = {"config", required_argument, NULL, FLAG_VAL + OPT_CONFIG},
    [OPT_HELP] = {"help", no_argument, NULL, FLAG_VAL + OPT_HELP},
    [OPT_VERSION] = {"version", no_argument, NULL, FLAG_VAL + OPT_VERSION},
};

/* What a config-file key holds. A duration is a string ("15m") or an
 * integer (seconds). */
enum kind { KIND_LIST, KIND_STRING, KIND_UINT, KIND_BOOL, KIND_DURATION };

static const struct key_spec {
    enum kind kind;
    unsigned long min, max; /* KIND_UINT and KIND_DURATION only; durations in seconds */
    const char *problem;    /* what a value of the wrong JSON type (or out of range) is told */
} key_specs[OPT_KEYS] = {
    [OPT_ISSUER] = {.kind = KIND_LIST, .problem = "must be a string or an array of strings"},
    [OPT_JWKS_URI] = {.kind = KIND_STRING, .problem = "must be a string"},
    [OPT_KEY_FILE] = {.kind = KIND_LIST, .problem = "must be a string or an array of strings"},
    [OPT_LISTEN] = {.kind = KIND_LIST, .problem = "must be a string or an array of strings"},
    [OPT_THREADS] = {.kind = KIND_UINT, .min = 1, .max = MAX_THREADS, .problem = RANGE_PROBLEM(1, MAX_THREADS)},
    [OPT_MAX_AGE] = {.kind = KIND_UINT, .min = 0, .max = MAX_MAX_AGE, .problem = RANGE_PROBLEM(0, MAX_MAX_AGE)},
    [OPT_CONTENT_TYPE] = {.kind = KIND_STRING, .problem = "must be a string"},
    [OPT_CORS] = {.kind = KIND_BOOL, .problem = "must be true or false"},
    [OPT_ALLOW_INSECURE] = {.kind = KIND_BOOL, .problem = "must be true or false"},
    [OPT_KEY_RELOAD_INTERVAL] = {.kind = KIND_DURATION, .min = 1, .max = DAY, .problem = DURATION_PROBLEM("1s", "1d")},
    [OPT_KEY_RETENTION] = {.kind = KIND_DURATION,
                           .min = 0,
                           .max = MAX_RETENTION_DAYS * DAY,
                           .problem = DURATION_PROBLEM("0", XSTR(MAX_RETENTION_DAYS) "d")},
    [OPT_STATE_DIR] = {.kind = KIND_STRING, .problem = "must be a string"},
    [OPT_SIGNING_KEY_FILE] = {.kind = KIND_STRING, .problem = "must be a string"},
};

/* The values of one option gathered from the config file and the command
 * line, as strings, and where they came from. */
struct setting {
    struct config_strlist values;
    const char *origin; /* the config file's path, or NULL: command line or default */
};

/* A flag read from argv, applied after the config file. */
struct flag {
    enum opt id;
    const char *value; /* NULL for flags without a value */
};

struct parser {
    enum config_command cmd;
    struct config cfg;
    struct setting settings[OPT_KEYS];
    struct flag *flags;
    size_t flag_count;
    const char *config_path;
    const char *output; /* --output, NULL when not given */
    char *err;
    size_t errlen;
};

/* A value in double quotes, ready for an error message. */
struct quoted {
    char s[CONFIG_ERR_MAX];
};

/* The split parts of HOST:PORT, pointing into the string. */
struct hostport {
    const char *host;
    size_t hostlen;
    unsigned long port;
};

/* Writes the error message; returns -1 so callers can `return fail(...)`. */
__attribute__((format(printf, 2, 3))) static int fail(struct parser *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Quotes a value for an error message, escaping '"', '\' and non-printable
 * bytes so that no value can break the message's single line. Long values
 * are cut short. */
static struct quoted quote(const char *s, size_t len)
{
    struct quoted q;
    size_t o = 0;

    q.s[o++] = '"';
    for (size_t i = 0; i < len && o + 6 < sizeof q.s; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            o += snprintf(q.s + o, sizeof q.s - o, "\\%c", c);
        else if (c < 0x20 || c > 0x7e)
            o += snprintf(q.s + o, sizeof q.s - o, "\\x%02x", c);
        else
            q.s[o++] = (char)c;
    }
    q.s[o++] = '"';
    q.s[o] = '\0';
    return q;
}

/* Reports a bad value of an option, naming where it came from: the flag and
 * the value on the command line, or the file and the key in a config file. */
static int fail_value(struct parser *p, const char *origin, enum opt id, const char *value, const char *problem)
{
    if (origin)
        return fail(p, "config file %s: key \"%s\": %s", origin, long_options[id].name, problem);
    return fail(p, "--%s %s: %s", long_options[id].name, quote(value, strlen(value)).s, problem);
}

/* Appends a copy of s[0..len) to the list. Returns 0, or -1 out of memory. */
static int strlist_append(struct config_strlist *l, const char *s, size_t len)
{
    char **items = realloc(l->items, (l->count + 1) * sizeof *items);

    if (!items)
        return -1;
    l->items = items;
    items[l->count] = strndup(s, len);
    if (!items[l->count])
        return -1;
    l->count++;
    return 0;
}

/* Frees the strings and the array and leaves the list empty. */
static void strlist_free(struct config_strlist *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

/* Reads a decimal integer of at most max from s[0..len): digits only, so no
 * sign, blank, hex prefix or trailing garbage gets through as with strtoul.
 * Each digit is checked against max before it is added, so nothing wraps. */
static int parse_decimal(const char *s, size_t len, unsigned long max, unsigned long *out)
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

/* Seconds per unit of a duration suffix; a missing suffix means seconds.
 * Returns 0 for anything else. */
static unsigned long duration_unit(const char *suffix)
{
    static const struct {
        char suffix;
        unsigned long seconds;
    } units[] = {{'\0', 1}, {'s', 1}, {'m', MINUTE}, {'h', HOUR}, {'d', DAY}};

    if (suffix[0] && suffix[1])
        return 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (units[i].suffix == suffix[0])
            return units[i].seconds;
    return 0;
}

int config_parse_duration(const char *s, unsigned long *out)
{
    size_t digits = strspn(s, "0123456789");
    unsigned long unit = duration_unit(s + digits), n;

    if (unit == 0 || parse_decimal(s, digits, DURATION_MAX / unit, &n) < 0)
        return -1;
    *out = n * unit;
    return 0;
}

/* Checks an integer option's value against its range; returns what is
 * wrong, or NULL with the number in *out. */
static const char *check_number(enum opt id, const char *v, unsigned long *out)
{
    const struct key_spec *k = &key_specs[id];

    if (parse_decimal(v, strlen(v), k->max, out) < 0 || *out < k->min)
        return k->problem;
    return NULL;
}

/* Checks a duration option's value against its range; returns what is
 * wrong, or NULL with the seconds in *out. */
static const char *check_duration(enum opt id, const char *v, unsigned long *out)
{
    const struct key_spec *k = &key_specs[id];

    if (config_parse_duration(v, out) < 0 || *out < k->min || *out > k->max)
        return k->problem;
    return NULL;
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

/* True when every character of s is allowed in a URL and every '%' starts a
 * percent-encoded byte. */
static int url_chars_ok(const char *s)
{
    for (; *s; s++) {
        if (*s == '%') {
            if (!is_hex(s[1]) || !is_hex(s[2]))
                return 0;
            s += 2;
        } else if (!strchr(URL_CHARS, *s)) {
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
    if (parse_decimal(after + 1, (size_t)(end - after - 1), MAX_PORT, &port) < 0 || port == 0)
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
    if (!url_chars_ok(rest))
        return "contains a character not allowed in a URL";
    if (strchr(rest, '?'))
        return "must not have a query";
    if (strchr(rest, '#'))
        return "must not have a fragment";
    return check_authority(rest, strcspn(rest, "/"));
}

/* Splits a --listen value HOST:PORT (IPv6 as [ADDRESS]:PORT) into *hp.
 * Returns what is wrong with it, or NULL. */
static const char *split_listen(const char *s, struct hostport *hp)
{
    const char *colon;

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
    if (hp->hostlen == 0)
        return "has no host";
    if (s[0] == '[' ? !is_ipv6(hp->host, hp->hostlen)
                    : hp->hostlen > HOSTNAME_MAX || strspn(hp->host, HOST_CHARS) < hp->hostlen)
        return "has an invalid host";
    if (parse_decimal(colon + 1, strlen(colon + 1), MAX_PORT, &hp->port) < 0 || hp->port == 0)
        return "must have a port between 1 and " XSTR(MAX_PORT);
    return NULL;
}

/* Checks a Content-Type we will send verbatim: type/subtype, then nothing
 * or ";" parameters, in printable ASCII, short enough for a header. */
static const char *check_media_type(const char *v)
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

/* Says what is wrong with one value of option id, or NULL when it is fine. */
static const char *check_value(const struct parser *p, enum opt id, const char *v)
{
    struct hostport hp;
    unsigned long n;

    switch (id) {
    case OPT_ISSUER:
    case OPT_JWKS_URI:
        return config_check_url(v, p->cfg.allow_insecure_issuer);
    case OPT_KEY_FILE:
    case OPT_STATE_DIR:
    case OPT_SIGNING_KEY_FILE:
        return *v ? NULL : "must not be empty";
    case OPT_LISTEN:
        return split_listen(v, &hp);
    case OPT_THREADS:
    case OPT_MAX_AGE:
        return check_number(id, v, &n);
    case OPT_KEY_RELOAD_INTERVAL:
    case OPT_KEY_RETENTION:
        return check_duration(id, v, &n);
    case OPT_CONTENT_TYPE:
        return check_media_type(v);
    default: /* booleans are set directly, never as strings */
        return NULL;
    }
}

/* Records one value of option id from origin (the config file's path, or
 * NULL for the command line). The first value from another origin drops the
 * old ones, so a repeated flag replaces the file's list; a single-valued
 * option keeps only its latest value. */
static int setting_put(struct parser *p, enum opt id, const char *origin, const char *value, size_t len)
{
    struct setting *s = &p->settings[id];

    if (s->origin != origin || key_specs[id].kind != KIND_LIST)
        strlist_free(&s->values);
    s->origin = origin;
    if (strlist_append(&s->values, value, len) < 0)
        return fail(p, "out of memory");
    return 0;
}

/* The (only or latest) value of a single-valued option, or NULL. */
static const char *setting_value(const struct parser *p, enum opt id)
{
    const struct config_strlist *l = &p->settings[id].values;

    return l->count ? l->items[l->count - 1] : NULL;
}

/* Sets a boolean option; --no-cors is --cors set to false. */
static void set_bool(struct parser *p, enum opt id, int value)
{
    if (id == OPT_ALLOW_INSECURE)
        p->cfg.allow_insecure_issuer = value;
    else
        p->cfg.cors = id == OPT_CORS ? value : !value;
}

/* Picks the subcommand from argv[1]; the flags start after it (*first = 1)
 * or right after the program name (*first = 0). */
static int parse_command(struct parser *p, int argc, char **argv, int *first)
{
    static const struct {
        const char *name;
        enum config_command cmd;
    } commands[] = {{"serve", CONFIG_CMD_SERVE}, {"dev", CONFIG_CMD_DEV}, {"keys", CONFIG_CMD_KEYS}};

    p->cmd = CONFIG_CMD_SERVE;
    *first = argc >= 2 && argv[1][0] != '-';
    if (!*first)
        return 0;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            p->cmd = commands[i].cmd;
            return 0;
        }
    }
    return fail(p, "unknown command %s (commands: serve, dev, keys)", quote(argv[1], strlen(argv[1])).s);
}

/* Reports a flag nobody knows, by its name without any "=value". */
static int unknown_flag(struct parser *p, const char *name, size_t len)
{
    return fail(p, "unknown flag %s (see --help)", quote(name, len).s);
}

/* Reports what getopt refused: an unknown flag, or a value for a flag that
 * takes none. token is the argument getopt was reading. */
static int bad_flag(struct parser *p, const char *token)
{
    const char short_name[3] = {'-', (char)optopt, '\0'};

    if (optopt >= FLAG_VAL)
        return fail(p, "--%s: does not take a value", long_options[optopt - FLAG_VAL].name);
    if (optopt)
        return unknown_flag(p, short_name, 2);
    return unknown_flag(p, token, strcspn(token, "="));
}

/* Handles one getopt result. Long flags must be spelled out: getopt would
 * take "--max" for "--max-age", and such a prefix could silently change
 * meaning when a flag is added. */
static int scan_one(struct parser *p, int c, const char *token)
{
    enum opt id = (enum opt)(c - FLAG_VAL);

    switch (c) {
    case 1:
        return fail(p, "unexpected argument %s", quote(optarg, strlen(optarg)).s);
    case ':':
        return fail(p, "--%s: missing value", long_options[optopt - FLAG_VAL].name);
    case '?':
        return bad_flag(p, token);
    case 'h':
        p->cmd = CONFIG_CMD_HELP;
        return 0;
    }
    if (strcspn(token, "=") != 2 + strlen(long_options[id].name))
        return unknown_flag(p, token, strcspn(token, "="));
    if (id == OPT_HELP)
        p->cmd = CONFIG_CMD_HELP;
    else if (id == OPT_VERSION)
        p->cmd = CONFIG_CMD_VERSION;
    else if (id == OPT_CONFIG)
        p->config_path = optarg;
    else if (id == OPT_OUTPUT)
        p->output = optarg;
    else
        p->flags[p->flag_count++] = (struct flag){id, optarg};
    return 0;
}

/* Reads the flags into p->flags without applying them, since --config must
 * take effect before them wherever it appears. Stops at the first problem or
 * at --help/--version, which need nothing else to be valid. */
static int scan_flags(struct parser *p, int argc, char **argv)
{
    int c, at;

    p->flags = calloc(argc > 0 ? (size_t)argc : 1, sizeof *p->flags);
    if (!p->flags)
        return fail(p, "out of memory");
    optind = 0; /* glibc starts over (at argv[1]), so config_parse can run again */
    opterr = 0;
    /* "-": non-flags come back as 1, in order, so argv is never permuted and
     * argv[at] is the token being read; ":": a missing value is ':' not '?'. */
    for (at = 1; (c = getopt_long(argc, argv, "-:h", long_options, NULL)) != -1; at = optind) {
        if (scan_one(p, c, argv[at]) < 0)
            return -1;
        if (p->cmd == CONFIG_CMD_HELP || p->cmd == CONFIG_CMD_VERSION)
            return 0;
    }
    if (optind < argc) /* what follows "--" */
        return fail(p, "unexpected argument %s", quote(argv[optind], strlen(argv[optind])).s);
    return 0;
}

/* State of the yajl callbacks while reading a config file. */
struct file_parse {
    struct parser *p;
    const char *path;
    int in_object; /* inside the top-level object */
    int in_array;  /* inside the array value of a repeatable key */
    enum opt key;  /* the key whose value comes next */
    unsigned seen; /* bit per key already given, to refuse duplicates */
};

/* Tells whether a JSON value may go to the current key: kinds is a bit per
 * key kind that takes it, array_ok whether it may be an array element. On
 * refusal writes the error and returns 0, which makes yajl stop. */
static int file_accepts(struct file_parse *fp, unsigned kinds, int array_ok)
{
    if (!fp->in_object) {
        fail(fp->p, "config file %s: must contain a JSON object", fp->path);
        return 0;
    }
    if ((fp->in_array && !array_ok) || !(kinds & (1u << key_specs[fp->key].kind))) {
        fail_value(fp->p, fp->path, fp->key, NULL, key_specs[fp->key].problem);
        return 0;
    }
    return 1;
}

/* No key takes null. */
static int on_null(void *ctx)
{
    return file_accepts(ctx, 0, 0);
}

static int on_boolean(void *ctx, int value)
{
    struct file_parse *fp = ctx;

    if (!file_accepts(fp, 1u << KIND_BOOL, 0))
        return 0;
    set_bool(fp->p, fp->key, value);
    return 1;
}

/* Numbers arrive as their JSON text, so that "-1", "1.5" and "1e3" fail the
 * same decimal check as the flags do; a duration's number is its seconds. */
static int on_number(void *ctx, const char *s, size_t len)
{
    struct file_parse *fp = ctx;

    return file_accepts(fp, 1u << KIND_UINT | 1u << KIND_DURATION, 0) &&
           setting_put(fp->p, fp->key, fp->path, s, len) == 0;
}

/* A string is a single value (a duration's "15m" too), or an element of a
 * repeatable key's array. "\u0000" is refused rather than silently cutting
 * the value short. */
static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    struct file_parse *fp = ctx;

    if (!file_accepts(fp, 1u << KIND_LIST | 1u << KIND_STRING | 1u << KIND_DURATION, 1))
        return 0;
    if (memchr(s, '\0', len)) {
        fail_value(fp->p, fp->path, fp->key, NULL, "must not contain a NUL character");
        return 0;
    }
    return setting_put(fp->p, fp->key, fp->path, (const char *)s, len) == 0;
}

/* Only the top-level object: the file is flat, so nesting is bounded. */
static int on_start_map(void *ctx)
{
    struct file_parse *fp = ctx;

    if (fp->in_object)
        return file_accepts(fp, 0, 0);
    fp->in_object = 1;
    return 1;
}

static int on_map_key(void *ctx, const unsigned char *key, size_t len)
{
    struct file_parse *fp = ctx;

    for (fp->key = 0; fp->key < OPT_KEYS; fp->key++)
        if (strlen(long_options[fp->key].name) == len && memcmp(long_options[fp->key].name, key, len) == 0)
            break;
    if (fp->key == OPT_KEYS) {
        fail(fp->p, "config file %s: unknown key %s", fp->path, quote((const char *)key, len).s);
        return 0;
    }
    if (fp->seen & 1u << fp->key) {
        fail(fp->p, "config file %s: duplicate key \"%s\"", fp->path, long_options[fp->key].name);
        return 0;
    }
    fp->seen |= 1u << fp->key;
    return 1;
}

static int on_end_map(void *ctx)
{
    ((struct file_parse *)ctx)->in_object = 0;
    return 1;
}

/* An array is a repeatable key's list of strings; arrays do not nest. */
static int on_start_array(void *ctx)
{
    struct file_parse *fp = ctx;

    if (!file_accepts(fp, 1u << KIND_LIST, 0))
        return 0;
    fp->in_array = 1;
    return 1;
}

static int on_end_array(void *ctx)
{
    ((struct file_parse *)ctx)->in_array = 0;
    return 1;
}

static const yajl_callbacks file_callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_map_key,
    .yajl_end_map = on_end_map,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end_array,
};

/* Turns a failed yajl status into our message; a callback that stopped the
 * parse has written its own already. */
static int json_error(struct parser *p, yajl_handle h, const char *path, yajl_status st)
{
    unsigned char *msg;

    if (st == yajl_status_client_canceled)
        return -1;
    msg = yajl_get_error(h, 0, NULL, 0);
    fail(p, "config file %s: invalid JSON: %.*s", path, (int)strcspn((const char *)msg, "\n"), (const char *)msg);
    yajl_free_error(h, msg);
    return -1;
}

/* Streams the config file through yajl into the settings. Files over
 * CONFIG_FILE_MAX are refused so that a wrong path (a device, a huge log)
 * cannot keep us reading. */
static int load_config_file(struct parser *p, const char *path)
{
    struct file_parse fp = {.p = p, .path = path};
    unsigned char buf[16384];
    yajl_status st = yajl_status_ok;
    yajl_handle h = NULL;
    size_t n, total = 0;
    int rc = 0;
    FILE *f = fopen(path, "r");

    if (!f)
        rc = fail(p, "--config %s: cannot read: %s", quote(path, strlen(path)).s, strerror(errno));
    else if (!(h = yajl_alloc(&file_callbacks, NULL, &fp)))
        rc = fail(p, "out of memory");
    while (rc == 0 && st == yajl_status_ok && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        total += n;
        if (total > CONFIG_FILE_MAX)
            rc = fail(p, "config file %s: larger than 1 MiB", path);
        else
            st = yajl_parse(h, buf, n);
    }
    if (rc == 0 && ferror(f))
        rc = fail(p, "--config %s: cannot read: %s", quote(path, strlen(path)).s, strerror(errno));
    if (rc == 0 && st == yajl_status_ok)
        st = yajl_complete_parse(h);
    if (rc == 0 && st != yajl_status_ok)
        rc = json_error(p, h, path, st);
    if (h)
        yajl_free(h);
    if (f)
        fclose(f);
    return rc;
}

/* Applies the config file first and the flags after it, so that the
 * command line wins wherever --config appeared. */
static int merge_sources(struct parser *p)
{
    if (p->config_path && load_config_file(p, p->config_path) < 0)
        return -1;
    for (size_t i = 0; i < p->flag_count; i++) {
        const struct flag *f = &p->flags[i];
        if (!f->value)
            set_bool(p, f->id, 1);
        else if (setting_put(p, f->id, NULL, f->value, strlen(f->value)) < 0)
            return -1;
    }
    if (p->cmd == CONFIG_CMD_DEV)
        p->cfg.allow_insecure_issuer = 1;
    return 0;
}

/* One worker per online CPU, within the --threads range. */
static long default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

/* Gives option id its default unless something set it. */
static int put_default(struct parser *p, enum opt id, const char *value)
{
    return p->settings[id].values.count ? 0 : setting_put(p, id, NULL, value, strlen(value));
}

/* Fills the options nobody set with their defaults, as if given as flags,
 * so that converting them needs no special case. */
static int put_defaults(struct parser *p)
{
    char threads[24];

    snprintf(threads, sizeof threads, "%ld", default_threads());
    if (put_default(p, OPT_LISTEN, DEFAULT_LISTEN) < 0 || put_default(p, OPT_THREADS, threads) < 0 ||
        put_default(p, OPT_MAX_AGE, XSTR(DEFAULT_MAX_AGE)) < 0 ||
        put_default(p, OPT_CONTENT_TYPE, DEFAULT_CONTENT_TYPE) < 0 ||
        put_default(p, OPT_KEY_RELOAD_INTERVAL, XSTR(DEFAULT_RELOAD)) < 0 || put_default(p, OPT_KEY_RETENTION, "0") < 0)
        return -1;
    return 0;
}

/* Checks every value given, naming the flag or file key of the first bad
 * one. */
static int check_values(struct parser *p)
{
    for (enum opt id = 0; id < OPT_KEYS; id++) {
        const struct setting *s = &p->settings[id];
        for (size_t i = 0; i < s->values.count; i++) {
            const char *problem = check_value(p, id, s->values.items[i]);
            if (problem)
                return fail_value(p, s->origin, id, s->values.items[i], problem);
        }
    }
    return 0;
}

/* Derives the defaults that depend on other options, from values already
 * checked: dev's issuer is http:// on the first listen address, and the
 * jwks_uri is the first issuer, less trailing slashes, plus JWKS_PATH. */
static int put_derived(struct parser *p)
{
    char url[URL_MAX + 64];
    const struct config_strlist *issuers = &p->settings[OPT_ISSUER].values;
    struct hostport hp;

    if (p->cmd == CONFIG_CMD_DEV && issuers->count == 0) {
        split_listen(p->settings[OPT_LISTEN].values.items[0], &hp);
        int v6 = memchr(hp.host, ':', hp.hostlen) != NULL;
        snprintf(url, sizeof url, "http://%s%.*s%s:%lu", v6 ? "[" : "", (int)hp.hostlen, hp.host, v6 ? "]" : "",
                 hp.port);
        if (setting_put(p, OPT_ISSUER, NULL, url, strlen(url)) < 0)
            return -1;
    }
    if (issuers->count && !setting_value(p, OPT_JWKS_URI)) {
        const char *issuer = issuers->items[0];
        size_t len = strlen(issuer);
        while (len && issuer[len - 1] == '/')
            len--;
        snprintf(url, sizeof url, "%.*s%s", (int)len, issuer, JWKS_PATH);
        if (setting_put(p, OPT_JWKS_URI, NULL, url, strlen(url)) < 0)
            return -1;
    }
    return 0;
}

/* Sets output_json from --output, which only `keys` prints with. */
static int check_output(struct parser *p)
{
    if (!p->output)
        return 0;
    if (p->cmd != CONFIG_CMD_KEYS)
        return fail(p, "--output is only valid for the keys command");
    if (strcmp(p->output, "json") != 0 && strcmp(p->output, "table") != 0)
        return fail(p, "--output %s: must be table or json", quote(p->output, strlen(p->output)).s);
    p->cfg.output_json = strcmp(p->output, "json") == 0;
    return 0;
}

/* Refuses to serve without an issuer (only `keys`, which publishes nothing,
 * may lack one), or without keys outside dev (which generates its own); and
 * refuses a retention that a restart would silently forget. */
static int check_required(struct parser *p)
{
    unsigned long retention;

    if (p->cmd != CONFIG_CMD_KEYS && p->settings[OPT_ISSUER].values.count == 0)
        return fail(p, "--service-account-issuer is required (at least one)");
    if (p->cmd != CONFIG_CMD_DEV && p->settings[OPT_KEY_FILE].values.count == 0)
        return fail(p, "--service-account-key-file is required (at least one)");
    check_duration(OPT_KEY_RETENTION, setting_value(p, OPT_KEY_RETENTION), &retention);
    if (retention > 0 && !setting_value(p, OPT_STATE_DIR))
        return fail(p, "--key-retention needs --state-dir, so that retained keys survive a restart");
    return 0;
}

/* Everything a command that serves or lists keys needs beyond the
 * defaults. */
static int validate(struct parser *p)
{
    if (check_output(p) < 0 || check_values(p) < 0 || put_derived(p) < 0 || check_required(p) < 0)
        return -1;
    return 0;
}

/* Hands a list over to the config, leaving the setting empty. */
static struct config_strlist take_list(struct setting *s)
{
    struct config_strlist l = s->values;

    memset(&s->values, 0, sizeof s->values);
    return l;
}

/* Hands the latest value over to the config, or NULL when there is none. */
static char *take_value(struct setting *s)
{
    return s->values.count ? s->values.items[--s->values.count] : NULL;
}

/* Converts the valid --listen values into cfg.listens. */
static int convert_listens(struct parser *p)
{
    const struct config_strlist *l = &p->settings[OPT_LISTEN].values;
    struct hostport hp;

    p->cfg.listens = calloc(l->count, sizeof *p->cfg.listens);
    if (!p->cfg.listens)
        return fail(p, "out of memory");
    for (size_t i = 0; i < l->count; i++) {
        struct config_listen *cl = &p->cfg.listens[i];
        split_listen(l->items[i], &hp);
        cl->host = strndup(hp.host, hp.hostlen);
        if (!cl->host)
            return fail(p, "out of memory");
        cl->port = (unsigned short)hp.port;
        p->cfg.listen_count++;
    }
    return 0;
}

/* Moves the settings, valid and complete by now, into p->cfg. */
static int convert(struct parser *p)
{
    unsigned long threads;

    check_number(OPT_THREADS, setting_value(p, OPT_THREADS), &threads);
    check_number(OPT_MAX_AGE, setting_value(p, OPT_MAX_AGE), &p->cfg.max_age);
    check_duration(OPT_KEY_RELOAD_INTERVAL, setting_value(p, OPT_KEY_RELOAD_INTERVAL), &p->cfg.key_reload_interval);
    check_duration(OPT_KEY_RETENTION, setting_value(p, OPT_KEY_RETENTION), &p->cfg.key_retention);
    p->cfg.threads = (unsigned)threads;
    p->cfg.issuers = take_list(&p->settings[OPT_ISSUER]);
    p->cfg.key_files = take_list(&p->settings[OPT_KEY_FILE]);
    p->cfg.jwks_uri = take_value(&p->settings[OPT_JWKS_URI]);
    p->cfg.jwks_content_type = take_value(&p->settings[OPT_CONTENT_TYPE]);
    p->cfg.state_dir = take_value(&p->settings[OPT_STATE_DIR]);
    p->cfg.signing_key_file = take_value(&p->settings[OPT_SIGNING_KEY_FILE]);
    return convert_listens(p);
}

/* Frees what the parser still owns, including a config not handed out. */
static void parser_free(struct parser *p)
{
    for (enum opt id = 0; id < OPT_KEYS; id++)
        strlist_free(&p->settings[id].values);
    free(p->flags);
    config_free(&p->cfg);
}

int config_parse(int argc, char **argv, enum config_command *cmd, struct config *out, char *err, size_t errlen)
{
    struct parser p = {.cfg.cors = 1, .err = err, .errlen = errlen};
    int first, checked, rc;

    memset(out, 0, sizeof *out);
    rc = parse_command(&p, argc, argv, &first);
    if (rc == 0)
        rc = scan_flags(&p, argc - first, argv + first);
    checked = p.cmd != CONFIG_CMD_HELP && p.cmd != CONFIG_CMD_VERSION;
    if (rc == 0 && checked)
        rc = merge_sources(&p);
    if (rc == 0)
        rc = put_defaults(&p);
    if (rc == 0 && checked)
        rc = validate(&p);
    if (rc == 0)
        rc = convert(&p);
    if (rc == 0) {
        *cmd = p.cmd;
        *out = p.cfg;
        memset(&p.cfg, 0, sizeof p.cfg);
    }
    parser_free(&p);
    return rc;
}

const char *config_usage(enum config_command cmd)
{
    (void)cmd; /* one text covers every command: they share their flags, and --output says it is for keys */
    return "Usage: oidc-discovery [serve|dev|keys] [flags]\n"
           "\n"
           "Commands:\n"
           "  serve                           Serve the discovery document and JWKS (the default)\n"
           "  dev                             Serve a generated development key pair on http://127.0.0.1:8080\n"
           "  keys                            Print the key set that would be published (kid, alg, size, source,\n"
           "                                  first seen, retained until); needs no issuer\n"
           "\n"
           "Flags:\n"
           "  --service-account-issuer URL    Issuer to publish, https; repeatable, the first is published (required)\n"
           "  --service-account-jwks-uri URL  jwks_uri to publish, https (default ISSUER/openid/v1/jwks)\n"
           "  --service-account-key-file PATH PEM file of public or private keys; repeatable (required; dev: none)\n"
           "  --listen HOST:PORT              Listen address (IPv6: [ADDR]:PORT); repeatable (default 127.0.0.1:8080)\n"
           "  --threads N                     Worker threads, 1 to 256 (default: the number of online CPUs)\n"
           "  --max-age SECONDS               Cache-Control max-age of both documents (default 3600)\n"
           "  --jwks-content-type TYPE        Content-Type of the JWKS (default application/jwk-set+json)\n"
           "  --cors, --no-cors               Send Access-Control-Allow-Origin: * (default on)\n"
           "  --allow-insecure-issuer         Allow http issuer and jwks URLs, for development (default off; dev: on)\n"
           "  --output table|json             What the keys command prints: a table or JSON (default table)\n"
           "  --config FILE                   JSON object keyed by the flag names; flags override it (default none)\n"
           "\n"
           "Key rotation (DURATION: 90s, 15m, 24h, 7d or plain seconds):\n"
           "  --key-reload-interval DURATION  How often to re-read the key files, 1s to 1d (default 60s)\n"
           "  --key-retention DURATION        Keep publishing a key this long after its file drops it, 0 to 3650d\n"
           "                                  (default 0: off; needs --state-dir)\n"
           "  --state-dir PATH                Directory that remembers when each key was first seen and until when\n"
           "                                  it is retained, across restarts (default none)\n"
           "  --signing-key-file PATH         PEM file of the key the API server signs with now (default none)\n"
           "\n"
           "Other commands:\n"
           "  -h, --help                      Print this help and exit\n"
           "  --version                       Print the version and exit\n";
}

void config_free(struct config *cfg)
{
    strlist_free(&cfg->issuers);
    strlist_free(&cfg->key_files);
    free(cfg->jwks_uri);
    free(cfg->jwks_content_type);
    free(cfg->state_dir);
    free(cfg->signing_key_file);
    for (size_t i = 0; i < cfg->listen_count; i++)
        free(cfg->listens[i].host);
    free(cfg->listens);
    memset(cfg, 0, sizeof *cfg);
}
