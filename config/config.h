/*
 * config: command-line flags and the JSON config file, merged into one
 * validated, immutable struct config.
 *
 * Precedence: built-in defaults < --config FILE < command-line flags. A
 * repeatable flag given on the command line replaces the file's list rather
 * than appending to it, so an operator can always override the file.
 *
 * Every error message names the flag (or config-file key) and the value and
 * says what is wrong, in one line, so that `oidc-discovery` can print it and
 * exit with status 2.
 */
#ifndef OIDC_CONFIG_H
#define OIDC_CONFIG_H

#include <stddef.h>

#define CONFIG_ERR_MAX 512

/* Where `dev` keeps its development key pair (git-ignored), and the key
 * file dev serves unless given others: main generates the pair there when
 * it is missing. */
#define CONFIG_DEV_KEYS_DIR "dev-keys"
#define CONFIG_DEV_KEY_FILE CONFIG_DEV_KEYS_DIR "/sa.pub"

/* One listen address. host is a numeric IPv4/IPv6 address or a name;
 * IPv6 is written "[::1]:8080" on the command line and stored without
 * brackets. */
struct config_listen {
    char *host; /* NULL for a Unix socket */
    unsigned short port;
    char *unix_path; /* "--listen unix:/run/x.sock" (only --listen accepts it), else NULL */
};

struct config_strlist {
    char **items;
    size_t count;
};

struct config {
    struct config_strlist issuers;   /* --service-account-issuer, >= 1 */
    char *jwks_uri;                  /* --service-account-jwks-uri, or derived */
    struct config_strlist key_files; /* --service-account-key-file, >= 1 */
    struct config_listen *listens;   /* --listen, >= 1 */
    size_t listen_count;
    unsigned long threads;     /* --threads, >= 1 (default: online CPUs) */
    unsigned long max_age;     /* --max-age seconds (default 3600) */
    char *jwks_content_type;   /* --jwks-content-type */
    int cors;                  /* --cors / --no-cors (default 1) */
    int allow_insecure_issuer; /* --allow-insecure-issuer */

    /* Key rotation. Durations are in seconds. */
    unsigned long key_reload_interval; /* --key-reload-interval (default 60) */
    unsigned long key_retention;       /* --key-retention (default 0 = off) */
    char *state_dir;                   /* --state-dir, NULL when unset */
    char *signing_key_file;            /* --signing-key-file, NULL when unset */

    char *output;     /* keys --output: "table" (the default) or "json" */
    char *export_dir; /* export --out DIR (required there, valid nowhere else) */

    /* Token verification (serve's TokenReview endpoint and `verify`). */
    struct config_strlist api_audiences;        /* --api-audiences (comma list); empty = the issuers */
    unsigned long token_leeway;                 /* --token-leeway seconds (default 60) */
    unsigned long max_token_size;               /* --max-token-size bytes (default 16384) */
    int accept_legacy_tokens;                   /* --accept-legacy-tokens */
    int enable_token_review;                    /* --enable-token-review */
    struct config_listen *token_review_listens; /* --token-review-listen, >= 1 when enabled */
    size_t token_review_listen_count;

    /* `verify` */
    char *token_file;     /* --token-file PATH or "-" (required) */
    char *discovery_url;  /* --discovery-url URL (instead of key files) */
    char *ca_file;        /* --ca-file PATH for --discovery-url */
    unsigned long repeat; /* --repeat N (default 1) */
    int no_cache;         /* --no-cache */

    /* `token` */
    char *mint_issuer;               /* --issuer (required) */
    struct config_strlist audiences; /* --audience, repeatable (default: the issuer) */
    char *mint_namespace;            /* --namespace (default "default") */
    char *service_account;           /* --service-account (default "default") */
    char *service_account_uid;       /* --service-account-uid (default: a fresh UUID is NOT generated here; required) */
    char *pod_name, *pod_uid;        /* optional, together */
    char *node_name, *node_uid;      /* optional, together */
    unsigned long duration;          /* --duration (default 3600) */

    /* Production serving (serve and dev). */
    struct config_listen *tls_listens; /* --tls-listen HOST:PORT, repeatable */
    size_t tls_listen_count;
    char *tls_cert_file;                 /* --tls-cert-file (PEM chain), required with --tls-listen */
    char *tls_key_file;                  /* --tls-private-key-file, required with --tls-listen */
    char *path_prefix;                   /* --path-prefix "/p" (no trailing slash), NULL when unset */
    struct config_strlist allowed_hosts; /* --allowed-hosts a,b (comma list); empty = any */
    struct config_listen *admin_listens; /* --admin-listen (default 127.0.0.1:9090) */
    size_t admin_listen_count;
    int no_admin;                  /* --admin-listen none */
    char *log_level;               /* --log-level error|warn|info|debug (default info) */
    char *log_format;              /* --log-format text|json (default text) */
    char *access_log;              /* --access-log PATH or "-" (stdout), NULL = off */
    unsigned long max_header_size; /* --max-request-header-size bytes (default 8192) */
    unsigned long request_timeout; /* --request-timeout seconds (default 10): HTTP/1.1 idle + whole request */
    unsigned long idle_timeout;    /* --http2-idle-timeout seconds (default 60) */
    unsigned long write_timeout;   /* --write-timeout seconds (default 10): a pending response stalls */
    unsigned long max_connections; /* --max-connections: the public listeners, per process (default 10000) */
    unsigned long token_review_max_connections; /* --token-review-max-connections (default 1000) */
    unsigned long admin_max_connections;        /* --admin-max-connections (default 64) */
    unsigned long http2_max_streams;            /* --http2-max-concurrent-streams (default 100) */
    int http2;                                  /* --http2: HTTP/2 on the public listeners (default off) */
    unsigned long shutdown_grace;               /* --shutdown-grace seconds (default 5) */
};

enum config_command {
    CONFIG_CMD_SERVE,   /* "serve" or no subcommand */
    CONFIG_CMD_DEV,     /* "dev": serve a generated development key pair */
    CONFIG_CMD_KEYS,    /* "keys": print the key set that would be published */
    CONFIG_CMD_VERIFY,  /* "verify": verify one token, print a TokenReview-style result */
    CONFIG_CMD_TOKEN,   /* "token": mint a kube-shaped token for tests and demos */
    CONFIG_CMD_EXPORT,  /* "export": write both documents into a directory, for static hosting */
    CONFIG_CMD_HELP,    /* --help was asked for: print config_usage() */
    CONFIG_CMD_VERSION, /* --version */
};

/* Parses argv (argv[0] is the program name; an optional subcommand may follow)
 * plus the --config file it names, validates everything and fills *out.
 * Returns 0 on success. On failure returns -1, leaves *out empty (nothing to
 * free) and writes a one-line message into err. For CONFIG_CMD_HELP and
 * CONFIG_CMD_VERSION *out holds defaults only and is not validated. */
int config_parse(int argc, char **argv, enum config_command *cmd, struct config *out, char *err, size_t errlen);

/* Usage text for the subcommand (every flag with its default). */
const char *config_usage(enum config_command cmd);

/* Frees everything config_parse allocated; safe on a zeroed struct. */
void config_free(struct config *cfg);

#endif
