/*
 * config.c: argv and the optional JSON config file -> one validated config.
 *
 * config_parse() works in stages, each in its own function:
 *
 *   parse_command()  picks "serve", "dev", "keys", "verify", "token" or
 *                    "export" from argv[1];
 *   scan_flags()     reads argv with getopt_long into a list of flags without
 *                    applying them, because --config must take effect first
 *                    wherever it appears;
 *   merge_sources()  feeds the config file and then those flags into one
 *                    "setting" per option: its raw string values plus where
 *                    they came from, so errors can name the flag or file key;
 *   put_defaults()   fills what nobody set, as if it had been a flag;
 *   validate()       checks that the command takes each flag given, checks
 *                    --output and every value, derives the dev issuer, the
 *                    jwks_uri and token's audience, and checks the required
 *                    options and the rules between options;
 *   convert()        moves the settings into struct config.
 */
#include "config/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>

#include "publish/paths.h"

#define STR(x)  #x
#define XSTR(x) STR(x)

#define DEFAULT_LISTEN       "127.0.0.1:8080"
#define DEFAULT_MAX_AGE      3600
#define DEFAULT_CONTENT_TYPE "application/jwk-set+json"
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
#define DEFAULT_LEEWAY       60
#define MIN_TOKEN_SIZE       256
#define MAX_TOKEN_SIZE       1048576
#define DEFAULT_TOKEN_SIZE   16384
#define MAX_REPEAT           100000000
#define DEFAULT_NAME         "default" /* token's namespace and service account */
#define DEFAULT_DURATION     3600
#define MAX_DURATION_DAYS    365
#define DNS_NAME_MAX         253
#define DEFAULT_ADMIN_LISTEN "127.0.0.1:9090"
#define ADMIN_NONE           "none" /* --admin-listen none: no admin listener */
#define UNIX_PREFIX          "unix:"
#define UNIX_PATH_MAX        107 /* sun_path holds 108 bytes with the terminating NUL */
#define PATH_PREFIX_MAX      256
#define MIN_HEADER_SIZE      1024
#define MAX_HEADER_SIZE      65536
#define DEFAULT_HEADER_SIZE  8192
#define DEFAULT_REQ_TIMEOUT  10
#define DEFAULT_WR_TIMEOUT   10
#define DEFAULT_IDLE_TIMEOUT 60
#define DEFAULT_GRACE        5
#define MAX_CONNECTIONS      1000000
#define DEFAULT_CONNECTIONS  10000
#define DEFAULT_REVIEW_CONNS 1000
#define DEFAULT_ADMIN_CONNS  64
#define MAX_H2_STREAMS       1000
#define DEFAULT_H2_STREAMS   100

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
#define RANGE_PROBLEM(lo, hi) "must be an integer between " XSTR(lo) " and " XSTR(hi)
#define DURATION_PROBLEM(lo, hi)                                                                                       \
    "must be a duration between " lo " and " hi " (like 90s, 15m, 24h, 7d or plain seconds)"
#define LIST_PROBLEM        "must be a string or an array of strings"
#define AUDIENCES_PROBLEM   "must be a comma-separated list of non-empty audiences"
#define DNS_NAME_PROBLEM    "must be a DNS-1123 name (lowercase letters, digits, '-' and '.')"
#define UNIX_PROBLEM        "must be unix:/absolute/path"
#define UNIX_TOO_LONG       "socket path longer than " XSTR(UNIX_PATH_MAX) " bytes"
#define PATH_PREFIX_PROBLEM "must be a path like /oidc (leading slash, no trailing slash)"
#define HOSTS_PROBLEM       "must be a comma-separated list of host names (optionally :port)"
#define LOG_LEVEL_PROBLEM   "must be one of error, warn, info, debug"
#define LOG_FORMAT_PROBLEM  "must be one of text, json"
#define ADMIN_NONE_COMBINED "--admin-listen none cannot be combined with addresses"
#define TLS_NEEDS_FILES     "--tls-listen needs --tls-cert-file and --tls-private-key-file"
#define TOKEN_REVIEW_NEEDS_LISTEN                                                                                      \
    "--enable-token-review needs --token-review-listen HOST:PORT (the TokenReview API is never served on the public "  \
    "listeners)"

/* A bit per command, for the commands that take a flag. */
#define CMD(c)      (1u << (c))
#define FOR_SERVING (CMD(CONFIG_CMD_SERVE) | CMD(CONFIG_CMD_DEV) | CMD(CONFIG_CMD_KEYS))
#define FOR_VERIFY  CMD(CONFIG_CMD_VERIFY)
#define FOR_TOKEN   CMD(CONFIG_CMD_TOKEN)
#define FOR_EXPORT  CMD(CONFIG_CMD_EXPORT)
#define FOR_EVERY   (FOR_SERVING | FOR_VERIFY | FOR_TOKEN | FOR_EXPORT)
/* The flags that decide the published bytes: export writes what serve
 * would serve with them, so it takes these and no listener flag. */
#define FOR_DOCUMENTS (FOR_SERVING | FOR_EXPORT)
/* The commands that open listeners: production serving options. */
#define FOR_SERVERS (CMD(CONFIG_CMD_SERVE) | CMD(CONFIG_CMD_DEV))
/* The commands that log to stderr and take --log-level and --log-format. */
#define FOR_LOGGING (FOR_SERVING | FOR_VERIFY | FOR_EXPORT)

/* Every flag. The first OPT_KEYS are also the keys of the config file; the
 * first OPT_SETTINGS keep their values as strings in a struct setting. */
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
    OPT_API_AUDIENCES,
    OPT_TOKEN_LEEWAY,
    OPT_MAX_TOKEN_SIZE,
    OPT_ACCEPT_LEGACY,
    OPT_ENABLE_TOKEN_REVIEW,
    OPT_TOKEN_REVIEW_LISTEN,
    OPT_TLS_LISTEN, /* production serving */
    OPT_TLS_CERT_FILE,
    OPT_TLS_KEY_FILE,
    OPT_ADMIN_LISTEN,
    OPT_PATH_PREFIX,
    OPT_ALLOWED_HOSTS,
    OPT_LOG_LEVEL,
    OPT_LOG_FORMAT,
    OPT_ACCESS_LOG,
    OPT_MAX_HEADER_SIZE,
    OPT_REQUEST_TIMEOUT,
    OPT_WRITE_TIMEOUT,
    OPT_IDLE_TIMEOUT,
    OPT_SHUTDOWN_GRACE,
    OPT_MAX_CONNECTIONS,
    OPT_REVIEW_MAX_CONNECTIONS,
    OPT_ADMIN_MAX_CONNECTIONS,
    OPT_HTTP2_MAX_STREAMS,
    OPT_HTTP2,
    OPT_KEYS,
    OPT_TOKEN_FILE = OPT_KEYS, /* verify */
    OPT_DISCOVERY_URL,
    OPT_CA_FILE,
    OPT_REPEAT,
    OPT_MINT_ISSUER, /* token */
    OPT_AUDIENCE,
    OPT_NAMESPACE,
    OPT_SERVICE_ACCOUNT,
    OPT_SERVICE_ACCOUNT_UID,
    OPT_POD_NAME,
    OPT_POD_UID,
    OPT_NODE_NAME,
    OPT_NODE_UID,
    OPT_DURATION,
    OPT_OUT, /* export */
    OPT_SETTINGS,
    OPT_NO_CORS = OPT_SETTINGS,
    OPT_NO_CACHE,
    OPT_OUTPUT,
    OPT_CONFIG,
    OPT_HELP,
    OPT_VERSION,
    OPT_COUNT
};

/* A long option whose getopt value is FLAG_VAL plus its enum opt. */
#define LONG_OPTION(id, name, has_arg) [id] = {name, has_arg, NULL, FLAG_VAL + (id)}

static const struct option long_options[OPT_COUNT + 1] = {
    LONG_OPTION(OPT_ISSUER, "service-account-issuer", required_argument),
    LONG_OPTION(OPT_JWKS_URI, "service-account-jwks-uri", required_argument),
    LONG_OPTION(OPT_KEY_FILE, "service-account-key-file", required_argument),
    LONG_OPTION(OPT_LISTEN, "listen", required_argument),
    LONG_OPTION(OPT_THREADS, "threads", required_argument),
    LONG_OPTION(OPT_MAX_AGE, "max-age", required_argument),
    LONG_OPTION(OPT_CONTENT_TYPE, "jwks-content-type", required_argument),
    LONG_OPTION(OPT_CORS, "cors", no_argument),
    LONG_OPTION(OPT_ALLOW_INSECURE, "allow-insecure-issuer", no_argument),
    LONG_OPTION(OPT_KEY_RELOAD_INTERVAL, "key-reload-interval", required_argument),
    LONG_OPTION(OPT_KEY_RETENTION, "key-retention", required_argument),
    LONG_OPTION(OPT_STATE_DIR, "state-dir", required_argument),
    LONG_OPTION(OPT_SIGNING_KEY_FILE, "signing-key-file", required_argument),
    LONG_OPTION(OPT_API_AUDIENCES, "api-audiences", required_argument),
    LONG_OPTION(OPT_TOKEN_LEEWAY, "token-leeway", required_argument),
    LONG_OPTION(OPT_MAX_TOKEN_SIZE, "max-token-size", required_argument),
    LONG_OPTION(OPT_ACCEPT_LEGACY, "accept-legacy-tokens", no_argument),
    LONG_OPTION(OPT_ENABLE_TOKEN_REVIEW, "enable-token-review", no_argument),
    LONG_OPTION(OPT_TOKEN_REVIEW_LISTEN, "token-review-listen", required_argument),
    LONG_OPTION(OPT_TLS_LISTEN, "tls-listen", required_argument),
    LONG_OPTION(OPT_TLS_CERT_FILE, "tls-cert-file", required_argument),
    LONG_OPTION(OPT_TLS_KEY_FILE, "tls-private-key-file", required_argument),
    LONG_OPTION(OPT_ADMIN_LISTEN, "admin-listen", required_argument),
    LONG_OPTION(OPT_PATH_PREFIX, "path-prefix", required_argument),
    LONG_OPTION(OPT_ALLOWED_HOSTS, "allowed-hosts", required_argument),
    LONG_OPTION(OPT_LOG_LEVEL, "log-level", required_argument),
    LONG_OPTION(OPT_LOG_FORMAT, "log-format", required_argument),
    LONG_OPTION(OPT_ACCESS_LOG, "access-log", required_argument),
    LONG_OPTION(OPT_MAX_HEADER_SIZE, "max-request-header-size", required_argument),
    LONG_OPTION(OPT_REQUEST_TIMEOUT, "request-timeout", required_argument),
    LONG_OPTION(OPT_WRITE_TIMEOUT, "write-timeout", required_argument),
    LONG_OPTION(OPT_IDLE_TIMEOUT, "http2-idle-timeout", required_argument),
    LONG_OPTION(OPT_SHUTDOWN_GRACE, "shutdown-grace", required_argument),
    LONG_OPTION(OPT_MAX_CONNECTIONS, "max-connections", required_argument),
    LONG_OPTION(OPT_REVIEW_MAX_CONNECTIONS, "token-review-max-connections", required_argument),
    LONG_OPTION(OPT_ADMIN_MAX_CONNECTIONS, "admin-max-connections", required_argument),
    LONG_OPTION(OPT_HTTP2_MAX_STREAMS, "http2-max-concurrent-streams", required_argument),
    LONG_OPTION(OPT_HTTP2, "http2", no_argument),
    LONG_OPTION(OPT_TOKEN_FILE, "token-file", required_argument),
    LONG_OPTION(OPT_DISCOVERY_URL, "discovery-url", required_argument),
    LONG_OPTION(OPT_CA_FILE, "ca-file", required_argument),
    LONG_OPTION(OPT_REPEAT, "repeat", required_argument),
    LONG_OPTION(OPT_MINT_ISSUER, "issuer", required_argument),
    LONG_OPTION(OPT_AUDIENCE, "audience", required_argument),
    LONG_OPTION(OPT_NAMESPACE, "namespace", required_argument),
    LONG_OPTION(OPT_SERVICE_ACCOUNT, "service-account", required_argument),
    LONG_OPTION(OPT_SERVICE_ACCOUNT_UID, "service-account-uid", required_argument),
    LONG_OPTION(OPT_POD_NAME, "pod-name", required_argument),
    LONG_OPTION(OPT_POD_UID, "pod-uid", required_argument),
    LONG_OPTION(OPT_NODE_NAME, "node-name", required_argument),
    LONG_OPTION(OPT_NODE_UID, "node-uid", required_argument),
    LONG_OPTION(OPT_DURATION, "duration", required_argument),
    LONG_OPTION(OPT_OUT, "out", required_argument),
    LONG_OPTION(OPT_NO_CORS, "no-cors", no_argument),
    LONG_OPTION(OPT_NO_CACHE, "no-cache", no_argument),
    LONG_OPTION(OPT_OUTPUT, "output", required_argument),
    LONG_OPTION(OPT_CONFIG, "config", required_argument),
    LONG_OPTION(OPT_HELP, "help", no_argument),
    LONG_OPTION(OPT_VERSION, "version", no_argument),
};

/* What an option holds. A config-file duration is a string ("15m") or an
 * integer (seconds). A KIND_LIST flag is repeatable. */
enum kind { KIND_LIST, KIND_STRING, KIND_UINT, KIND_BOOL, KIND_DURATION };

static const struct opt_spec {
    enum kind kind;
    unsigned long min, max; /* KIND_UINT and KIND_DURATION only; durations in seconds */
    const char *problem;    /* what a value of the wrong JSON type (or out of range) is told */
    unsigned commands;      /* CMD() bits of the commands that take the flag */
} opt_specs[OPT_COUNT] = {
    [OPT_ISSUER] = {.kind = KIND_LIST, .problem = LIST_PROBLEM, .commands = FOR_DOCUMENTS | FOR_VERIFY},
    [OPT_JWKS_URI] = {.kind = KIND_STRING, .problem = "must be a string", .commands = FOR_DOCUMENTS},
    [OPT_KEY_FILE] = {.kind = KIND_LIST, .problem = LIST_PROBLEM, .commands = FOR_DOCUMENTS | FOR_VERIFY},
    [OPT_LISTEN] = {.kind = KIND_LIST, .problem = LIST_PROBLEM, .commands = FOR_SERVING},
    [OPT_THREADS] = {.kind = KIND_UINT,
                     .min = 1,
                     .max = MAX_THREADS,
                     .problem = RANGE_PROBLEM(1, MAX_THREADS),
                     .commands = FOR_SERVING},
    [OPT_MAX_AGE] = {.kind = KIND_UINT,
                     .min = 0,
                     .max = MAX_MAX_AGE,
                     .problem = RANGE_PROBLEM(0, MAX_MAX_AGE),
                     .commands = FOR_DOCUMENTS},
    [OPT_CONTENT_TYPE] = {.kind = KIND_STRING, .problem = "must be a string", .commands = FOR_DOCUMENTS},
    [OPT_CORS] = {.kind = KIND_BOOL, .problem = "must be true or false", .commands = FOR_SERVING},
    [OPT_ALLOW_INSECURE] = {.kind = KIND_BOOL, .problem = "must be true or false", .commands = FOR_EVERY},
    [OPT_KEY_RELOAD_INTERVAL] =
        {.kind = KIND_DURATION, .min = 1, .max = DAY, .problem = DURATION_PROBLEM("1s", "1d"), .commands = FOR_SERVING},
    [OPT_KEY_RETENTION] = {.kind = KIND_DURATION,
                           .min = 0,
                           .max = MAX_RETENTION_DAYS * DAY,
                           .problem = DURATION_PROBLEM("0", XSTR(MAX_RETENTION_DAYS) "d"),
                           .commands = FOR_DOCUMENTS},
    [OPT_STATE_DIR] = {.kind = KIND_STRING, .problem = "must be a string", .commands = FOR_DOCUMENTS},
    [OPT_SIGNING_KEY_FILE] = {.kind = KIND_STRING, .problem = "must be a string", .commands = FOR_SERVING | FOR_TOKEN},
    [OPT_API_AUDIENCES] = {.kind = KIND_LIST, .problem = LIST_PROBLEM, .commands = FOR_SERVING | FOR_VERIFY},
    [OPT_TOKEN_LEEWAY] = {.kind = KIND_DURATION,
                          .min = 0,
                          .max = HOUR,
                          .problem = DURATION_PROBLEM("0", "1h"),
                          .commands = FOR_SERVING | FOR_VERIFY},
    [OPT_MAX_TOKEN_SIZE] = {.kind = KIND_UINT,
                            .min = MIN_TOKEN_SIZE,
                            .max = MAX_TOKEN_SIZE,
                            .problem = RANGE_PROBLEM(MIN_TOKEN_SIZE, MAX_TOKEN_SIZE),
                            .commands = FOR_SERVING | FOR_VERIFY},
    [OPT_ACCEPT_LEGACY] = {.kind = KIND_BOOL, .problem = "must be true or false", .commands = FOR_SERVING | FOR_VERIFY},
    [OPT_ENABLE_TOKEN_REVIEW] = {.kind = KIND_BOOL, .problem = "must be true or false", .commands = FOR_SERVING},
    [OPT_TOKEN_REVIEW_LISTEN] = {.kind = KIND_LIST, .problem = LIST_PROBLEM, .commands = FOR_SERVING},
    [OPT_TLS_LISTEN] = {.kind = KIND_LIST, .problem = LIST_PROBLEM, .commands = FOR_SERVERS},
    [OPT_TLS_CERT_FILE] = {.kind = KIND_STRING, .problem = "must be a string", .commands = FOR_SERVERS},
    [OPT_TLS_KEY_FILE] = {.kind = KIND_STRING, .problem = "must be a string", .commands = FOR_SERVERS},
    [OPT_ADMIN_LISTEN] = {.kind = KIND_LIST, .problem = LIST_PROBLEM, .commands = FOR_SERVERS},
    [OPT_PATH_PREFIX] = {.kind = KIND_STRING, .problem = "must be a string", .commands = FOR_SERVERS},
    [OPT_ALLOWED_HOSTS] = {.kind = KIND_LIST, .problem = LIST_PROBLEM, .commands = FOR_SERVERS},
    [OPT_LOG_LEVEL] = {.kind = KIND_STRING, .problem = LOG_LEVEL_PROBLEM, .commands = FOR_LOGGING},
    [OPT_LOG_FORMAT] = {.kind = KIND_STRING, .problem = LOG_FORMAT_PROBLEM, .commands = FOR_LOGGING},
    [OPT_ACCESS_LOG] = {.kind = KIND_STRING, .problem = "must be a string", .commands = FOR_SERVERS},
    [OPT_MAX_HEADER_SIZE] = {.kind = KIND_UINT,
                             .min = MIN_HEADER_SIZE,
                             .max = MAX_HEADER_SIZE,
                             .problem = RANGE_PROBLEM(MIN_HEADER_SIZE, MAX_HEADER_SIZE),
                             .commands = FOR_SERVERS},
    [OPT_REQUEST_TIMEOUT] = {.kind = KIND_DURATION,
                             .min = 1,
                             .max = 5 * MINUTE,
                             .problem = DURATION_PROBLEM("1s", "5m"),
                             .commands = FOR_SERVERS},
    [OPT_WRITE_TIMEOUT] = {.kind = KIND_DURATION,
                           .min = 1,
                           .max = 5 * MINUTE,
                           .problem = DURATION_PROBLEM("1s", "5m"),
                           .commands = FOR_SERVERS},
    [OPT_IDLE_TIMEOUT] = {.kind = KIND_DURATION,
                          .min = 1,
                          .max = HOUR,
                          .problem = DURATION_PROBLEM("1s", "1h"),
                          .commands = FOR_SERVERS},
    [OPT_SHUTDOWN_GRACE] = {.kind = KIND_DURATION,
                            .min = 0,
                            .max = 5 * MINUTE,
                            .problem = DURATION_PROBLEM("0", "5m"),
                            .commands = FOR_SERVERS},
    [OPT_MAX_CONNECTIONS] = {.kind = KIND_UINT,
                             .min = 1,
                             .max = MAX_CONNECTIONS,
                             .problem = RANGE_PROBLEM(1, MAX_CONNECTIONS),
                             .commands = FOR_SERVERS},
    [OPT_REVIEW_MAX_CONNECTIONS] = {.kind = KIND_UINT,
                                    .min = 1,
                                    .max = MAX_CONNECTIONS,
                                    .problem = RANGE_PROBLEM(1, MAX_CONNECTIONS),
                                    .commands = FOR_SERVERS},
    [OPT_ADMIN_MAX_CONNECTIONS] = {.kind = KIND_UINT,
                                   .min = 1,
                                   .max = MAX_CONNECTIONS,
                                   .problem = RANGE_PROBLEM(1, MAX_CONNECTIONS),
                                   .commands = FOR_SERVERS},
    [OPT_HTTP2_MAX_STREAMS] = {.kind = KIND_UINT,
                               .min = 1,
                               .max = MAX_H2_STREAMS,
                               .problem = RANGE_PROBLEM(1, MAX_H2_STREAMS),
                               .commands = FOR_SERVERS},
    [OPT_HTTP2] = {.kind = KIND_BOOL, .problem = "must be true or false", .commands = FOR_SERVERS},
    [OPT_TOKEN_FILE] = {.kind = KIND_STRING, .commands = FOR_VERIFY},
    [OPT_DISCOVERY_URL] = {.kind = KIND_STRING, .commands = FOR_VERIFY},
    [OPT_CA_FILE] = {.kind = KIND_STRING, .commands = FOR_VERIFY},
    [OPT_REPEAT] = {.kind = KIND_UINT,
                    .min = 1,
                    .max = MAX_REPEAT,
                    .problem = RANGE_PROBLEM(1, MAX_REPEAT),
                    .commands = FOR_VERIFY},
    [OPT_MINT_ISSUER] = {.kind = KIND_STRING, .commands = FOR_TOKEN},
    [OPT_AUDIENCE] = {.kind = KIND_LIST, .commands = FOR_TOKEN},
    [OPT_NAMESPACE] = {.kind = KIND_STRING, .commands = FOR_TOKEN},
    [OPT_SERVICE_ACCOUNT] = {.kind = KIND_STRING, .commands = FOR_TOKEN},
    [OPT_SERVICE_ACCOUNT_UID] = {.kind = KIND_STRING, .commands = FOR_TOKEN},
    [OPT_POD_NAME] = {.kind = KIND_STRING, .commands = FOR_TOKEN},
    [OPT_POD_UID] = {.kind = KIND_STRING, .commands = FOR_TOKEN},
    [OPT_NODE_NAME] = {.kind = KIND_STRING, .commands = FOR_TOKEN},
    [OPT_NODE_UID] = {.kind = KIND_STRING, .commands = FOR_TOKEN},
    [OPT_DURATION] = {.kind = KIND_DURATION,
                      .min = 1,
                      .max = MAX_DURATION_DAYS * DAY,
                      .problem = DURATION_PROBLEM("1s", XSTR(MAX_DURATION_DAYS) "d"),
                      .commands = FOR_TOKEN},
    [OPT_OUT] = {.kind = KIND_STRING, .commands = FOR_EXPORT},
    [OPT_NO_CORS] = {.kind = KIND_BOOL, .commands = FOR_SERVING},
    [OPT_NO_CACHE] = {.kind = KIND_BOOL, .commands = FOR_VERIFY},
    [OPT_OUTPUT] = {.kind = KIND_STRING, .commands = CMD(CONFIG_CMD_KEYS)},
    [OPT_CONFIG] = {.kind = KIND_STRING, .commands = FOR_EVERY},
    [OPT_HELP] = {.kind = KIND_BOOL, .commands = FOR_EVERY},
    [OPT_VERSION] = {.kind = KIND_BOOL, .commands = FOR_EVERY},
};

/* The command names, for argv[1] and for messages. */
static const char *const command_names[] = {
    [CONFIG_CMD_SERVE] = "serve",   [CONFIG_CMD_DEV] = "dev",     [CONFIG_CMD_KEYS] = "keys",
    [CONFIG_CMD_VERIFY] = "verify", [CONFIG_CMD_TOKEN] = "token", [CONFIG_CMD_EXPORT] = "export",
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
    struct setting settings[OPT_SETTINGS];
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
    const struct opt_spec *k = &opt_specs[id];

    if (parse_decimal(v, strlen(v), k->max, out) < 0 || *out < k->min)
        return k->problem;
    return NULL;
}

/* Checks a duration option's value against its range; returns what is
 * wrong, or NULL with the seconds in *out. */
static const char *check_duration(enum opt id, const char *v, unsigned long *out)
{
    const struct opt_spec *k = &opt_specs[id];

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
    if (parse_decimal(colon + 1, strlen(colon + 1), MAX_PORT, &hp->port) < 0)
        return "must have a port between 0 (one the kernel chooses) and " XSTR(MAX_PORT);
    return NULL;
}

/* True when a listen value names a Unix socket ("unix:" and a path). */
static int is_unix_listen(const char *s)
{
    return strncmp(s, UNIX_PREFIX, strlen(UNIX_PREFIX)) == 0;
}

/* Checks one listen value of option id. Only --listen takes a Unix socket,
 * "unix:" and an absolute path that fits sun_path; the other listeners (and
 * --listen without "unix:") take HOST:PORT. */
static const char *check_listen(enum opt id, const char *v)
{
    const char *path = v + strlen(UNIX_PREFIX);
    struct hostport hp;

    if (!is_unix_listen(v))
        return split_listen(v, &hp);
    if (id != OPT_LISTEN)
        return LISTEN_FORM;
    if (path[0] != '/')
        return UNIX_PROBLEM;
    return strlen(path) > UNIX_PATH_MAX ? UNIX_TOO_LONG : NULL;
}

/* Checks a --path-prefix: a non-empty absolute path without a trailing
 * slash, of RFC 3986 path characters and percent-encoded bytes, with no
 * empty, "." or ".." segment. */
static const char *check_path_prefix(const char *v)
{
    size_t len = strlen(v), n;

    if (len < 2 || len > PATH_PREFIX_MAX || v[0] != '/' || v[len - 1] == '/')
        return PATH_PREFIX_PROBLEM;
    for (const char *s = v; *s; s++) {
        if (*s == '%') {
            if (!is_hex(s[1]) || !is_hex(s[2]))
                return PATH_PREFIX_PROBLEM;
            s += 2;
        } else if (!strchr(PATH_CHARS, *s)) {
            return PATH_PREFIX_PROBLEM;
        }
    }
    for (const char *seg = v + 1;; seg += n + 1) {
        n = strcspn(seg, "/");
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return PATH_PREFIX_PROBLEM;
        if (seg[n] == '\0')
            return NULL;
    }
}

/* Checks a value that must be one of the NULL-terminated choices, as
 * spelled there. */
static const char *check_choice(const char *v, const char *const *choices, const char *problem)
{
    for (; *choices; choices++)
        if (strcmp(v, *choices) == 0)
            return NULL;
    return problem;
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

/* An audience is any non-empty string: an empty one is a typo such as ",,"
 * that would never match a token. */
static int is_audience(const char *s, size_t len)
{
    (void)s;
    return len > 0;
}

/* An --allowed-hosts item, as a Host header carries it: a name or IPv4
 * address, or an [IPv6] address, then optionally ":" and a port. */
static int is_allowed_host(const char *s, size_t len)
{
    const char *end = s + len, *after;
    unsigned long port;

    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close || !is_ipv6(s + 1, (size_t)(close - s - 1)))
            return 0;
        after = close + 1;
    } else {
        const char *colon = memchr(s, ':', len);
        after = colon ? colon : end;
        /* s[after - s] is ':', ',' or the end, none of them a host character */
        if (after == s || after - s > HOSTNAME_MAX || strspn(s, HOST_CHARS) != (size_t)(after - s))
            return 0;
    }
    if (after == end)
        return 1;
    return *after == ':' && parse_decimal(after + 1, (size_t)(end - after - 1), MAX_PORT, &port) == 0 && port > 0;
}

/* Splits a comma-separated list, appending the items to out unless it is
 * NULL. Returns problem when an item fails is_item, "out of memory", or
 * NULL. */
static const char *split_commas(const char *v, struct config_strlist *out, int (*is_item)(const char *, size_t),
                                const char *problem)
{
    for (size_t n;; v += n + 1) {
        n = strcspn(v, ",");
        if (!is_item(v, n))
            return problem;
        if (out && strlist_append(out, v, n) < 0)
            return "out of memory";
        if (v[n] == '\0')
            return NULL;
    }
}

/* Checks a DNS-1123 subdomain, which is what Kubernetes accepts as the name
 * of a namespace or service account: at most 253 characters, dot-separated
 * labels of lowercase letters, digits and '-' that do not start or end with
 * '-'. */
static const char *check_dns_name(const char *v)
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

/* Says what is wrong with one value of option id, or NULL when it is fine. */
static const char *check_value(const struct parser *p, enum opt id, const char *v)
{
    static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};
    static const char *const log_formats[] = {"text", "json", NULL};
    unsigned long n;

    if (opt_specs[id].kind == KIND_UINT)
        return check_number(id, v, &n);
    if (opt_specs[id].kind == KIND_DURATION)
        return check_duration(id, v, &n);
    switch (id) {
    case OPT_ISSUER:
    case OPT_JWKS_URI:
    case OPT_DISCOVERY_URL:
    case OPT_MINT_ISSUER:
        return config_check_url(v, p->cfg.allow_insecure_issuer);
    case OPT_ADMIN_LISTEN:
        return strcmp(v, ADMIN_NONE) == 0 ? NULL : check_listen(id, v);
    case OPT_LISTEN:
    case OPT_TOKEN_REVIEW_LISTEN:
    case OPT_TLS_LISTEN:
        return check_listen(id, v);
    case OPT_CONTENT_TYPE:
        return check_media_type(v);
    case OPT_API_AUDIENCES:
        return split_commas(v, NULL, is_audience, AUDIENCES_PROBLEM);
    case OPT_ALLOWED_HOSTS:
        return split_commas(v, NULL, is_allowed_host, HOSTS_PROBLEM);
    case OPT_PATH_PREFIX:
        return check_path_prefix(v);
    case OPT_LOG_LEVEL:
        return check_choice(v, log_levels, LOG_LEVEL_PROBLEM);
    case OPT_LOG_FORMAT:
        return check_choice(v, log_formats, LOG_FORMAT_PROBLEM);
    case OPT_NAMESPACE:
    case OPT_SERVICE_ACCOUNT:
        return check_dns_name(v);
    default: /* paths, audiences, names and UIDs; booleans are never strings */
        return *v ? NULL : "must not be empty";
    }
}

/* Records one value of option id from origin (the config file's path, or
 * NULL for the command line). The first value from another origin drops the
 * old ones, so a repeated flag replaces the file's list; a single-valued
 * option keeps only its latest value. */
static int setting_put(struct parser *p, enum opt id, const char *origin, const char *value, size_t len)
{
    struct setting *s = &p->settings[id];

    if (s->origin != origin || opt_specs[id].kind != KIND_LIST)
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

/* The config field a boolean option sets; --no-cors sets cors too. */
static int *bool_field(struct parser *p, enum opt id)
{
    switch (id) {
    case OPT_ALLOW_INSECURE:
        return &p->cfg.allow_insecure_issuer;
    case OPT_ACCEPT_LEGACY:
        return &p->cfg.accept_legacy_tokens;
    case OPT_ENABLE_TOKEN_REVIEW:
        return &p->cfg.enable_token_review;
    case OPT_NO_CACHE:
        return &p->cfg.no_cache;
    case OPT_HTTP2:
        return &p->cfg.http2;
    default:
        return &p->cfg.cors;
    }
}

/* Sets a boolean option; --no-cors is --cors set to false. */
static void set_bool(struct parser *p, enum opt id, int value)
{
    *bool_field(p, id) = id == OPT_NO_CORS ? !value : value;
}

/* Picks the subcommand from argv[1]; the flags start after it (*first = 1)
 * or right after the program name (*first = 0). */
static int parse_command(struct parser *p, int argc, char **argv, int *first)
{
    p->cmd = CONFIG_CMD_SERVE;
    *first = argc >= 2 && argv[1][0] != '-';
    if (!*first)
        return 0;
    for (size_t i = 0; i < sizeof command_names / sizeof command_names[0]; i++) {
        if (strcmp(argv[1], command_names[i]) == 0) {
            p->cmd = (enum config_command)i;
            return 0;
        }
    }
    return fail(p, "unknown command %s (commands: serve, dev, keys, verify, token, export)",
                quote(argv[1], strlen(argv[1])).s);
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
    int in_object;           /* inside the top-level object */
    int in_array;            /* inside the array value of a repeatable key */
    enum opt key;            /* the key whose value comes next */
    unsigned long long seen; /* bit per key already given, to refuse duplicates */
};

/* seen needs a bit for every config-file key. */
_Static_assert(OPT_KEYS <= sizeof(unsigned long long) * 8, "too many config-file keys for file_parse.seen");

/* Tells whether a JSON value may go to the current key: kinds is a bit per
 * key kind that takes it, array_ok whether it may be an array element. On
 * refusal writes the error and returns 0, which makes yajl stop. */
static int file_accepts(struct file_parse *fp, unsigned kinds, int array_ok)
{
    if (!fp->in_object) {
        fail(fp->p, "config file %s: must contain a JSON object", fp->path);
        return 0;
    }
    if ((fp->in_array && !array_ok) || !(kinds & (1u << opt_specs[fp->key].kind))) {
        fail_value(fp->p, fp->path, fp->key, NULL, opt_specs[fp->key].problem);
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
    if (fp->seen & 1ull << fp->key) {
        fail(fp->p, "config file %s: duplicate key \"%s\"", fp->path, long_options[fp->key].name);
        return 0;
    }
    fp->seen |= 1ull << fp->key;
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
    const struct {
        enum opt id;
        const char *value;
    } defaults[] = {
        {OPT_LISTEN, DEFAULT_LISTEN},
        {OPT_THREADS, threads},
        {OPT_MAX_AGE, XSTR(DEFAULT_MAX_AGE)},
        {OPT_CONTENT_TYPE, DEFAULT_CONTENT_TYPE},
        {OPT_KEY_RELOAD_INTERVAL, XSTR(DEFAULT_RELOAD)},
        {OPT_KEY_RETENTION, "0"},
        {OPT_TOKEN_LEEWAY, XSTR(DEFAULT_LEEWAY)},
        {OPT_MAX_TOKEN_SIZE, XSTR(DEFAULT_TOKEN_SIZE)},
        {OPT_REPEAT, "1"},
        {OPT_NAMESPACE, DEFAULT_NAME},
        {OPT_SERVICE_ACCOUNT, DEFAULT_NAME},
        {OPT_DURATION, XSTR(DEFAULT_DURATION)},
        {OPT_ADMIN_LISTEN, DEFAULT_ADMIN_LISTEN},
        {OPT_LOG_LEVEL, "info"},
        {OPT_LOG_FORMAT, "text"},
        {OPT_MAX_HEADER_SIZE, XSTR(DEFAULT_HEADER_SIZE)},
        {OPT_REQUEST_TIMEOUT, XSTR(DEFAULT_REQ_TIMEOUT)},
        {OPT_WRITE_TIMEOUT, XSTR(DEFAULT_WR_TIMEOUT)},
        {OPT_IDLE_TIMEOUT, XSTR(DEFAULT_IDLE_TIMEOUT)},
        {OPT_SHUTDOWN_GRACE, XSTR(DEFAULT_GRACE)},
        {OPT_MAX_CONNECTIONS, XSTR(DEFAULT_CONNECTIONS)},
        {OPT_REVIEW_MAX_CONNECTIONS, XSTR(DEFAULT_REVIEW_CONNS)},
        {OPT_ADMIN_MAX_CONNECTIONS, XSTR(DEFAULT_ADMIN_CONNS)},
        {OPT_HTTP2_MAX_STREAMS, XSTR(DEFAULT_H2_STREAMS)},
    };

    snprintf(threads, sizeof threads, "%ld", default_threads());
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (put_default(p, defaults[i].id, defaults[i].value) < 0)
            return -1;
    return 0;
}

/* True when the option has a value from a flag, the file or a default. */
static int is_set(const struct parser *p, enum opt id)
{
    return p->settings[id].values.count > 0;
}

/* The number (seconds for a duration) of a checked numeric option, or 0
 * when it has no value. */
static unsigned long number_value(const struct parser *p, enum opt id)
{
    const char *v = setting_value(p, id);
    unsigned long n = 0;

    if (v && opt_specs[id].kind == KIND_DURATION)
        check_duration(id, v, &n);
    else if (v)
        check_number(id, v, &n);
    return n;
}

/* Refuses a flag that the command does not take. A flag of one other
 * command names that command; a serving flag given to verify or token just
 * is not valid there, since several commands take it. */
static int check_command(struct parser *p, enum opt id)
{
    unsigned takes = opt_specs[id].commands, cmd = CMD(p->cmd);
    int single = (takes & (takes - 1)) == 0;

    if (takes & cmd)
        return 0;
    if (single && ((cmd & FOR_SERVING) || !(takes & FOR_SERVING)))
        return fail(p, "--%s is only valid for the %s command", long_options[id].name,
                    command_names[__builtin_ctz(takes)]);
    return fail(p, "--%s is not valid for the %s command", long_options[id].name, command_names[p->cmd]);
}

/* Checks the command-line flags against the command. The config file is
 * not checked: one file may serve several commands, each reading its keys. */
static int check_commands(struct parser *p)
{
    for (size_t i = 0; i < p->flag_count; i++)
        if (check_command(p, p->flags[i].id) < 0)
            return -1;
    return p->output ? check_command(p, OPT_OUTPUT) : 0;
}

/* True when the list holds "none", which --admin-listen takes alone. */
static int has_admin_none(const struct config_strlist *l)
{
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->items[i], ADMIN_NONE) == 0)
            return 1;
    return 0;
}

/* Checks every value given, naming the flag or file key of the first bad
 * one, and then that "--admin-listen none" comes alone. */
static int check_values(struct parser *p)
{
    const struct config_strlist *admin = &p->settings[OPT_ADMIN_LISTEN].values;

    for (enum opt id = 0; id < OPT_SETTINGS; id++) {
        const struct setting *s = &p->settings[id];
        for (size_t i = 0; i < s->values.count; i++) {
            const char *problem = check_value(p, id, s->values.items[i]);
            if (problem)
                return fail_value(p, s->origin, id, s->values.items[i], problem);
        }
    }
    if (admin->count > 1 && has_admin_none(admin))
        return fail(p, ADMIN_NONE_COMBINED);
    return 0;
}

/* Derives the defaults that depend on other options, from values already
 * checked: dev's issuer is http:// on the first TCP listen address
 * (DEFAULT_LISTEN when every --listen is a Unix socket), the
 * jwks_uri is the first issuer, less trailing slashes, plus PATHS_JWKS, and a
 * minted token's audience is its issuer. */
static int put_derived(struct parser *p)
{
    char url[URL_MAX + 64];
    const struct config_strlist *issuers = &p->settings[OPT_ISSUER].values;
    const struct config_strlist *listens = &p->settings[OPT_LISTEN].values;
    const char *mint_issuer = setting_value(p, OPT_MINT_ISSUER), *tcp = DEFAULT_LISTEN;
    struct hostport hp;

    if (p->cmd == CONFIG_CMD_DEV && issuers->count == 0) {
        for (size_t i = 0; i < listens->count; i++) {
            if (!is_unix_listen(listens->items[i])) {
                tcp = listens->items[i];
                break;
            }
        }
        split_listen(tcp, &hp);
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
        snprintf(url, sizeof url, "%.*s%s", (int)len, issuer, PATHS_JWKS);
        if (setting_put(p, OPT_JWKS_URI, NULL, url, strlen(url)) < 0)
            return -1;
    }
    if (mint_issuer && !is_set(p, OPT_AUDIENCE))
        return setting_put(p, OPT_AUDIENCE, NULL, mint_issuer, strlen(mint_issuer));
    return 0;
}

/* Sets output_json from --output, which only `keys` prints with (as
 * check_commands has made sure). */
static int check_output(struct parser *p)
{
    if (!p->output)
        return 0;
    if (strcmp(p->output, "json") != 0 && strcmp(p->output, "table") != 0)
        return fail(p, "--output %s: must be table or json", quote(p->output, strlen(p->output)).s);
    p->cfg.output_json = strcmp(p->output, "json") == 0;
    return 0;
}

/* The options a command cannot do without, in the order they are asked
 * for. Only `keys`, which publishes nothing, may lack an issuer; dev
 * generates its own keys; verify's keys and issuer are check_verify's;
 * export must be told where to write. */
static const struct requirement {
    unsigned commands;
    enum opt id;
    const char *message;
} requirements[] = {
    {CMD(CONFIG_CMD_SERVE) | CMD(CONFIG_CMD_DEV) | FOR_EXPORT, OPT_ISSUER,
     "--service-account-issuer is required (at least one)"},
    {CMD(CONFIG_CMD_SERVE) | CMD(CONFIG_CMD_KEYS) | FOR_EXPORT, OPT_KEY_FILE,
     "--service-account-key-file is required (at least one)"},
    {FOR_EXPORT, OPT_OUT, "--out is required (the directory to write the documents into)"},
    {FOR_VERIFY, OPT_TOKEN_FILE, "--token-file is required (a path, or - for standard input)"},
    {FOR_TOKEN, OPT_SIGNING_KEY_FILE, "--signing-key-file is required (the private key that signs the token)"},
    {FOR_TOKEN, OPT_MINT_ISSUER, "--issuer is required"},
    {FOR_TOKEN, OPT_SERVICE_ACCOUNT_UID, "--service-account-uid is required"},
};

/* Refuses to run a command without what it needs. */
static int check_required(struct parser *p)
{
    for (size_t i = 0; i < sizeof requirements / sizeof requirements[0]; i++) {
        const struct requirement *r = &requirements[i];
        if ((r->commands & CMD(p->cmd)) && !is_set(p, r->id))
            return fail(p, "%s", r->message);
    }
    return 0;
}

/* True when two valid listen values name the same host (ignoring case, as
 * DNS does) and port, or the same Unix socket. "--admin-listen none" is no
 * address and matches nothing, nor does port 0 (each gets its own port). */
static int same_listen(const char *a, const char *b)
{
    struct hostport x, y;

    if (is_unix_listen(a) || is_unix_listen(b))
        return strcmp(a, b) == 0;
    if (split_listen(a, &x) || split_listen(b, &y))
        return 0;
    return x.port == y.port && x.port != 0 && x.hostlen == y.hostlen && strncasecmp(x.host, y.host, x.hostlen) == 0;
}

/* Keeps the TokenReview API, which tells whoever asks whose token is valid,
 * off the public listeners: it needs listeners of its own, and those mean
 * nothing without it. */
static int check_token_review(struct parser *p)
{
    size_t listens = p->settings[OPT_TOKEN_REVIEW_LISTEN].values.count;

    if (p->cfg.enable_token_review && listens == 0)
        return fail(p, TOKEN_REVIEW_NEEDS_LISTEN);
    if (!p->cfg.enable_token_review && listens)
        return fail(p, "--token-review-listen needs --enable-token-review");
    return 0;
}

/* TLS listeners need a certificate and its key, and those mean nothing
 * without them. */
static int check_tls(struct parser *p)
{
    static const enum opt files[] = {OPT_TLS_CERT_FILE, OPT_TLS_KEY_FILE};
    int listens = is_set(p, OPT_TLS_LISTEN);

    if (listens && !(is_set(p, OPT_TLS_CERT_FILE) && is_set(p, OPT_TLS_KEY_FILE)))
        return fail(p, TLS_NEEDS_FILES);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!listens && is_set(p, files[i]))
            return fail(p, "--%s needs --tls-listen", long_options[files[i]].name);
    return 0;
}

/* Every kind of listener, in the order a clash is reported: a value of a
 * later kind is said to clash with the earlier kind. */
static const enum opt listener_kinds[] = {OPT_LISTEN, OPT_TLS_LISTEN, OPT_TOKEN_REVIEW_LISTEN, OPT_ADMIN_LISTEN};

/* Refuses an address that two kinds of listener share (the TokenReview and
 * admin APIs must stay off the public listeners, and two sockets cannot bind
 * one address anyway). Kinds the command does not take are left alone. */
static int check_listener_clashes(struct parser *p)
{
    const size_t nkinds = sizeof listener_kinds / sizeof listener_kinds[0];
    char problem[64];

    for (size_t b = 1; b < nkinds; b++) {
        const struct setting *later = &p->settings[listener_kinds[b]];
        if (!(opt_specs[listener_kinds[b]].commands & CMD(p->cmd)))
            continue;
        for (size_t i = 0; i < later->values.count; i++) {
            for (size_t a = 0; a < b; a++) {
                const struct config_strlist *earlier = &p->settings[listener_kinds[a]].values;
                if (!(opt_specs[listener_kinds[a]].commands & CMD(p->cmd)))
                    continue;
                for (size_t j = 0; j < earlier->count; j++) {
                    if (!same_listen(later->values.items[i], earlier->items[j]))
                        continue;
                    snprintf(problem, sizeof problem, "must differ from every --%s address",
                             long_options[listener_kinds[a]].name);
                    return fail_value(p, later->origin, listener_kinds[b], later->values.items[i], problem);
                }
            }
        }
    }
    return 0;
}

/* The rules between serving options: a retention that a restart would
 * silently forget is refused, and so are a misplaced TokenReview API, TLS
 * listeners without a certificate and listeners that share an address.
 * keys takes serve's config file but opens no listener: the production
 * serving rules are serve's and dev's only. */
static int check_serving(struct parser *p)
{
    if (number_value(p, OPT_KEY_RETENTION) > 0 && !is_set(p, OPT_STATE_DIR))
        return fail(p, "--key-retention needs --state-dir, so that retained keys survive a restart");
    if (check_token_review(p) < 0)
        return -1;
    if ((CMD(p->cmd) & FOR_SERVERS) && check_tls(p) < 0)
        return -1;
    return check_listener_clashes(p);
}

/* verify takes its keys from files or from a discovery document, exactly
 * one of them; the document also names the issuer, which files cannot. */
static int check_verify(struct parser *p)
{
    int files = is_set(p, OPT_KEY_FILE), discovery = is_set(p, OPT_DISCOVERY_URL);

    if (!files && !discovery)
        return fail(p, "verify needs --service-account-key-file or --discovery-url");
    if (files && discovery)
        return fail(p, "--discovery-url and --service-account-key-file are mutually exclusive");
    if (is_set(p, OPT_CA_FILE) && !discovery)
        return fail(p, "--ca-file needs --discovery-url");
    if (!discovery && !is_set(p, OPT_ISSUER))
        return fail(p, "--service-account-issuer is required (at least one) unless --discovery-url is given");
    return 0;
}

/* A minted token is bound to a pod or a node by both its name and its UID,
 * as the API server binds them, or not at all. */
static int check_token(struct parser *p)
{
    static const enum opt pairs[][2] = {{OPT_POD_NAME, OPT_POD_UID}, {OPT_NODE_NAME, OPT_NODE_UID}};

    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (is_set(p, pairs[i][0]) != is_set(p, pairs[i][1]))
            return fail(p, "--%s and --%s go together", long_options[pairs[i][0]].name, long_options[pairs[i][1]].name);
    return 0;
}

/* The rules between options, which differ by command. export takes the
 * serving rules too: it opens no listener, so only the retention rule can
 * apply to it. */
static int check_rules(struct parser *p)
{
    if (CMD(p->cmd) & FOR_DOCUMENTS)
        return check_serving(p);
    return p->cmd == CONFIG_CMD_VERIFY ? check_verify(p) : check_token(p);
}

/* Everything a command needs beyond the defaults. */
static int validate(struct parser *p)
{
    if (check_commands(p) < 0 || check_output(p) < 0 || check_values(p) < 0 || put_derived(p) < 0 ||
        check_required(p) < 0 || check_rules(p) < 0)
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

/* Converts the valid listen values of option id into an array of *count
 * addresses (NULL when there are none): a Unix socket keeps its path, with
 * no host and port 0; "--admin-listen none" is left out. */
static int convert_listens(struct parser *p, enum opt id, struct config_listen **out, size_t *count)
{
    const struct config_strlist *l = &p->settings[id].values;
    struct hostport hp;

    if (l->count == 0 || (id == OPT_ADMIN_LISTEN && has_admin_none(l)))
        return 0;
    *out = calloc(l->count, sizeof **out);
    if (!*out)
        return fail(p, "out of memory");
    for (size_t i = 0; i < l->count; i++) {
        struct config_listen *cl = &(*out)[i];
        if (is_unix_listen(l->items[i])) {
            cl->unix_path = strdup(l->items[i] + strlen(UNIX_PREFIX));
        } else {
            split_listen(l->items[i], &hp);
            cl->host = strndup(hp.host, hp.hostlen);
            cl->port = (unsigned short)hp.port;
        }
        (*count)++;
        if (!cl->host && !cl->unix_path)
            return fail(p, "out of memory");
    }
    return 0;
}

/* Lowercases ASCII letters in place, whatever the locale. */
static void ascii_lower(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

/* Joins the comma-separated values of option id, in order, into one list;
 * hosts are lowercased, since a Host header is compared without regard to
 * case. */
static int convert_comma_list(struct parser *p, enum opt id, struct config_strlist *out)
{
    const struct config_strlist *l = &p->settings[id].values;
    int hosts = id == OPT_ALLOWED_HOSTS;

    for (size_t i = 0; i < l->count; i++)
        if (split_commas(l->items[i], out, hosts ? is_allowed_host : is_audience, "bad"))
            return fail(p, "out of memory");
    for (size_t i = 0; hosts && i < out->count; i++)
        ascii_lower(out->items[i]);
    return 0;
}

/* Where an option's value lands in struct config. */
struct field {
    enum opt id;
    size_t offset;
};

#define FIELD(id, member)                                                                                              \
    {                                                                                                                  \
        id, offsetof(struct config, member)                                                                            \
    }
#define AT(cfg, f, type) ((type *)((char *)(cfg) + (f).offset))

static const struct field number_fields[] = {
    FIELD(OPT_MAX_AGE, max_age),
    FIELD(OPT_KEY_RELOAD_INTERVAL, key_reload_interval),
    FIELD(OPT_KEY_RETENTION, key_retention),
    FIELD(OPT_TOKEN_LEEWAY, token_leeway),
    FIELD(OPT_MAX_TOKEN_SIZE, max_token_size),
    FIELD(OPT_REPEAT, repeat),
    FIELD(OPT_DURATION, duration),
    FIELD(OPT_MAX_HEADER_SIZE, max_header_size),
    FIELD(OPT_REQUEST_TIMEOUT, request_timeout),
    FIELD(OPT_WRITE_TIMEOUT, write_timeout),
    FIELD(OPT_IDLE_TIMEOUT, idle_timeout),
    FIELD(OPT_SHUTDOWN_GRACE, shutdown_grace),
    FIELD(OPT_MAX_CONNECTIONS, max_connections),
    FIELD(OPT_REVIEW_MAX_CONNECTIONS, token_review_max_connections),
    FIELD(OPT_ADMIN_MAX_CONNECTIONS, admin_max_connections),
    FIELD(OPT_HTTP2_MAX_STREAMS, http2_max_streams),
};

static const struct field string_fields[] = {
    FIELD(OPT_JWKS_URI, jwks_uri),
    FIELD(OPT_CONTENT_TYPE, jwks_content_type),
    FIELD(OPT_STATE_DIR, state_dir),
    FIELD(OPT_SIGNING_KEY_FILE, signing_key_file),
    FIELD(OPT_TOKEN_FILE, token_file),
    FIELD(OPT_DISCOVERY_URL, discovery_url),
    FIELD(OPT_CA_FILE, ca_file),
    FIELD(OPT_MINT_ISSUER, mint_issuer),
    FIELD(OPT_NAMESPACE, mint_namespace),
    FIELD(OPT_SERVICE_ACCOUNT, service_account),
    FIELD(OPT_SERVICE_ACCOUNT_UID, service_account_uid),
    FIELD(OPT_POD_NAME, pod_name),
    FIELD(OPT_POD_UID, pod_uid),
    FIELD(OPT_NODE_NAME, node_name),
    FIELD(OPT_NODE_UID, node_uid),
    FIELD(OPT_TLS_CERT_FILE, tls_cert_file),
    FIELD(OPT_TLS_KEY_FILE, tls_key_file),
    FIELD(OPT_PATH_PREFIX, path_prefix),
    FIELD(OPT_LOG_LEVEL, log_level),
    FIELD(OPT_LOG_FORMAT, log_format),
    FIELD(OPT_ACCESS_LOG, access_log),
    FIELD(OPT_OUT, export_dir),
};

static const struct field list_fields[] = {
    FIELD(OPT_ISSUER, issuers),
    FIELD(OPT_KEY_FILE, key_files),
    FIELD(OPT_AUDIENCE, audiences),
};

/* Moves the settings, valid and complete by now, into p->cfg. */
static int convert(struct parser *p)
{
    p->cfg.threads = (unsigned)number_value(p, OPT_THREADS);
    for (size_t i = 0; i < sizeof number_fields / sizeof number_fields[0]; i++)
        *AT(&p->cfg, number_fields[i], unsigned long) = number_value(p, number_fields[i].id);
    for (size_t i = 0; i < sizeof string_fields / sizeof string_fields[0]; i++)
        *AT(&p->cfg, string_fields[i], char *) = take_value(&p->settings[string_fields[i].id]);
    for (size_t i = 0; i < sizeof list_fields / sizeof list_fields[0]; i++)
        *AT(&p->cfg, list_fields[i], struct config_strlist) = take_list(&p->settings[list_fields[i].id]);
    p->cfg.no_admin = has_admin_none(&p->settings[OPT_ADMIN_LISTEN].values);
    if (convert_comma_list(p, OPT_API_AUDIENCES, &p->cfg.api_audiences) < 0 ||
        convert_comma_list(p, OPT_ALLOWED_HOSTS, &p->cfg.allowed_hosts) < 0 ||
        convert_listens(p, OPT_LISTEN, &p->cfg.listens, &p->cfg.listen_count) < 0 ||
        convert_listens(p, OPT_TLS_LISTEN, &p->cfg.tls_listens, &p->cfg.tls_listen_count) < 0 ||
        convert_listens(p, OPT_ADMIN_LISTEN, &p->cfg.admin_listens, &p->cfg.admin_listen_count) < 0)
        return -1;
    return convert_listens(p, OPT_TOKEN_REVIEW_LISTEN, &p->cfg.token_review_listens, &p->cfg.token_review_listen_count);
}

/* Frees what the parser still owns, including a config not handed out. */
static void parser_free(struct parser *p)
{
    for (enum opt id = 0; id < OPT_SETTINGS; id++)
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
    (void)cmd; /* one text covers every command: most flags are shared, and each section says whose it is */
    return "Usage: oidc-discovery [serve|dev|keys|verify|token|export] [flags]\n"
           "\n"
           "Commands:\n"
           "  serve                           Serve the discovery document and JWKS (the default)\n"
           "  dev                             Serve a generated development key pair on http://127.0.0.1:8080\n"
           "  keys                            Print the key set that would be published (kid, alg, size, source,\n"
           "                                  first seen, retained until); needs no issuer\n"
           "  verify                          Verify one token and print a TokenReview-style result\n"
           "  token                           Mint a Kubernetes-shaped service-account token, for tests and demos\n"
           "  export                          Write the documents serve would serve into --out DIR, for a bucket,\n"
           "                                  and print the headers to upload each with\n"
           "\n"
           "Flags:\n"
           "  --service-account-issuer URL    Issuer to publish, https; repeatable, the first is published (required)\n"
           "  --service-account-jwks-uri URL  jwks_uri to publish, https (default ISSUER/openid/v1/jwks)\n"
           "  --service-account-key-file PATH PEM file of public or private keys, or a directory of them (never\n"
           "                                  a PKI directory or a CA); repeatable (required; dev: none)\n"
           "  --listen HOST:PORT              Listen address (IPv6: [ADDR]:PORT); repeatable (default "
           "127.0.0.1:8080);\n"
           "                                  --listen unix:/path serves plain HTTP on a Unix socket instead\n"
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
           "                                  it is retained, across restarts; owned by this user or root, not\n"
           "                                  writable by group or others (default none)\n"
           "  --signing-key-file PATH         PEM file of the key the API server signs with now (default none)\n"
           "\n"
           "Token verification (serve's TokenReview API, and verify):\n"
           "  --api-audiences LIST            Audiences a token must have one of, comma-separated; repeatable, the\n"
           "                                  lists are joined in order (default: the issuers)\n"
           "  --token-leeway DURATION         Clock skew allowed for exp, nbf and iat, 0 to 1h (default 60s)\n"
           "  --max-token-size BYTES          Longest token accepted, 256 to 1048576 (default 16384)\n"
           "  --accept-legacy-tokens          Accept legacy Secret-based tokens, which never expire and cannot be\n"
           "                                  revoked here; without aud, good for the API audiences (default off)\n"
           "  --enable-token-review           Serve the TokenReview API (default off; needs --token-review-listen)\n"
           "  --token-review-listen HOST:PORT Listen address of the TokenReview API, never a --listen address;\n"
           "                                  repeatable (default none; only with --enable-token-review)\n"
           "  --token-review-max-connections N\n"
           "                                  Open connections of the TokenReview listener per process, 1 to\n"
           "                                  1000000; more are closed at once (default 1000)\n"
           "\n"
           "Production serving (serve and dev; --log-level and --log-format also verify, keys and export):\n"
           "  --tls-listen HOST:PORT          HTTPS listen address; repeatable (default none; needs --tls-cert-file\n"
           "                                  and --tls-private-key-file)\n"
           "  --tls-cert-file PATH            PEM certificate chain for --tls-listen (default none)\n"
           "  --tls-private-key-file PATH     PEM private key of that certificate (default none)\n"
           "  --admin-listen HOST:PORT|none   Listen address of /livez, /readyz and /metrics, never a public one;\n"
           "                                  repeatable (default 127.0.0.1:9090; none: no admin listener)\n"
           "  --admin-max-connections N       Open connections of the admin listener, 1 to 1000000; more are\n"
           "                                  closed at once (default 64)\n"
           "  --path-prefix /PATH             Serve every endpoint under this path, like /oidc: leading slash, no\n"
           "                                  trailing slash (default none: omit the flag to serve at /)\n"
           "  --allowed-hosts LIST            Host header values to answer, comma-separated host or host:port;\n"
           "                                  repeatable, the lists are joined (default: any host)\n"
           "  --log-level LEVEL               Least severe message logged: error, warn, info or debug (default info)\n"
           "  --log-format FORMAT             Log lines on standard error as text or json (default text)\n"
           "  --access-log PATH               Write an access log to PATH, - for standard output (default none: off)\n"
           "  --max-request-header-size BYTES Largest request header block, 1024 to 65536 (default 8192)\n"
           "  --request-timeout DURATION      Time to read a whole request and HTTP/1.1 keep-alive idle time,\n"
           "                                  1s to 5m (default 10s)\n"
           "  --write-timeout DURATION        Close a connection whose client has taken nothing of a pending\n"
           "                                  response for this long, 1s to 5m (default 10s)\n"
           "  --shutdown-grace DURATION       Time to finish requests on SIGTERM, 0 to 5m (default 5s)\n"
           "  --max-connections N             Open connections of the public listeners (--listen, --tls-listen)\n"
           "                                  per process, 1 to 1000000; more are closed at once (default 10000)\n"
           "  --http2                         Also speak HTTP/2: h2c on --listen, ALPN h2 on --tls-listen. h2o 2.2.5\n"
           "                                  lets one HTTP/2 client exhaust memory (docs/http2.md): for trusted\n"
           "                                  clients only (default off: HTTP/1.1 only)\n"
           "  --http2-idle-timeout DURATION   Close an idle HTTP/2 connection after this, 1s to 1h (default 60s)\n"
           "  --http2-max-concurrent-streams N\n"
           "                                  Streams processed at once per HTTP/2 connection, 1 to 1000 (default "
           "100)\n"
           "\n"
           "verify (also takes --service-account-key-file, --service-account-issuer, which is required without\n"
           "--discovery-url, the token verification flags, --allow-insecure-issuer, --log-level, --log-format and\n"
           "--config; its own flags are not config-file keys):\n"
           "  --token-file PATH               File holding the token, - for standard input (required)\n"
           "  --discovery-url URL             Issuer URL whose discovery document gives the JWKS and, by default,\n"
           "                                  the issuer; https; instead of --service-account-key-file\n"
           "  --ca-file PATH                  CA certificates for --discovery-url (default: the system's)\n"
           "  --repeat N                      Verify N times, 1 to 100000000, to measure speed (default 1)\n"
           "  --no-cache                      Do not cache verifications across repeats (default: cache)\n"
           "\n"
           "token (also takes --signing-key-file, required here, --allow-insecure-issuer and --config; its own\n"
           "flags are not config-file keys):\n"
           "  --issuer URL                    iss claim, https (required)\n"
           "  --audience AUD                  aud claim; repeatable (default: the issuer)\n"
           "  --namespace NS                  Namespace, a DNS-1123 name (default default)\n"
           "  --service-account NAME          Service account, a DNS-1123 name (default default)\n"
           "  --service-account-uid UID       Service account UID (required)\n"
           "  --pod-name NAME                 Bind the token to this pod; with --pod-uid (default none)\n"
           "  --pod-uid UID                   UID of that pod; with --pod-name (default none)\n"
           "  --node-name NAME                Bind the token to this node; with --node-uid (default none)\n"
           "  --node-uid UID                  UID of that node; with --node-name (default none)\n"
           "  --duration DURATION             Lifetime, 1s to 365d (default 1h)\n"
           "\n"
           "export (also takes serve's --service-account-* flags, --max-age, --jwks-content-type,\n"
           "--allow-insecure-issuer, --key-retention, --state-dir (read, never written), --log-level, --log-format\n"
           "and --config; its own flag is not a config-file key):\n"
           "  --out DIR                       Directory to write .well-known/openid-configuration and\n"
           "                                  openid/v1/jwks into, created when missing (required)\n"
           "\n"
           "Other commands:\n"
           "  -h, --help                      Print this help and exit\n"
           "  --version                       Print the version and exit\n";
}

/* Frees count listen addresses and their array. */
static void free_listens(struct config_listen *listens, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        free(listens[i].host);
        free(listens[i].unix_path);
    }
    free(listens);
}

void config_free(struct config *cfg)
{
    for (size_t i = 0; i < sizeof string_fields / sizeof string_fields[0]; i++)
        free(*AT(cfg, string_fields[i], char *));
    for (size_t i = 0; i < sizeof list_fields / sizeof list_fields[0]; i++)
        strlist_free(AT(cfg, list_fields[i], struct config_strlist));
    strlist_free(&cfg->api_audiences);
    strlist_free(&cfg->allowed_hosts);
    free_listens(cfg->listens, cfg->listen_count);
    free_listens(cfg->tls_listens, cfg->tls_listen_count);
    free_listens(cfg->admin_listens, cfg->admin_listen_count);
    free_listens(cfg->token_review_listens, cfg->token_review_listen_count);
    memset(cfg, 0, sizeof *cfg);
}
