/* SPDX-License-Identifier: Apache-2.0 */
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

/* The defaults of --max-token-size (bytes) and --token-leeway (seconds),
 * which their rows give, and which jose/ and doctor also verify with when
 * no flag is theirs: defined once, here, for both. */
#define CONFIG_MAX_TOKEN_SIZE 16384
#define CONFIG_TOKEN_LEEWAY   60

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

enum config_command {
    CONFIG_CMD_SERVE,   /* "serve" or no subcommand */
    CONFIG_CMD_DEV,     /* "dev": serve a generated development key pair */
    CONFIG_CMD_KEYS,    /* "keys": print the key set that would be published */
    CONFIG_CMD_VERIFY,  /* "verify": verify one token, print a TokenReview-style result */
    CONFIG_CMD_TOKEN,   /* "token": mint a kube-shaped token for tests and demos */
    CONFIG_CMD_EXPORT,  /* "export": write both documents into a directory, for static hosting */
    CONFIG_CMD_PUBLISH, /* "publish": push both documents to object storage once */
    CONFIG_CMD_DOCTOR,  /* "doctor": check an issuer the way relying parties do */
    CONFIG_CMD_HELP,    /* --help, -h or "help": print config_usage(cfg.help_topic) */
    CONFIG_CMD_VERSION, /* --version */
    CONFIG_HELP_ALL,    /* no command: the help topic of "help all", every flag once */
};

/* The flags' values. Which flag fills which field, with its default and
 * range, is in the option table (config/options.c); durations are in
 * seconds. A field of a flag the command does not take holds its default. */
struct config_sources; /* config.c's: the settings an --issuers-dir file starts from */

struct config {
    struct config_strlist issuers;   /* --service-account-issuer; the first is published */
    char *jwks_uri;                  /* --service-account-jwks-uri, or derived from the first issuer */
    struct config_strlist key_files; /* --service-account-key-file */
    struct config_listen *listens;   /* --listen */
    size_t listen_count;
    unsigned long threads;     /* --threads */
    unsigned long max_age;     /* --max-age */
    char *jwks_content_type;   /* --jwks-content-type */
    int cors;                  /* --cors / --no-cors */
    int allow_insecure_issuer; /* --allow-insecure-issuer */

    /* A fleet (serve --issuers-dir): one JSON file per issuer, each read
     * by config_issuer_parse into a config of its own. */
    char *issuers_dir;              /* --issuers-dir, or NULL: the issuer of --service-account-issuer */
    struct config_sources *sources; /* with --issuers-dir: what each issuer file overrides */

    /* Mirroring an API server (serve --upstream): a key source of its own. */
    char *upstream;                          /* --upstream: its base URL ("in-cluster" resolved), or NULL */
    int upstream_in_cluster;                 /* --upstream in-cluster */
    char *upstream_ca_file;                  /* --upstream-ca-file, or NULL: the system's */
    char *upstream_token_file;               /* --upstream-token-file, or NULL: no token */
    unsigned long upstream_refresh_interval; /* --upstream-refresh-interval (0 without --upstream) */
    unsigned long upstream_timeout;          /* --upstream-timeout (0 without --upstream) */
    unsigned long upstream_max_staleness;    /* --upstream-max-staleness (0 without --upstream) */

    /* Key rotation. */
    unsigned long key_reload_interval; /* --key-reload-interval */
    unsigned long key_retention;       /* --key-retention; 0: off */
    char *state_dir;                   /* --state-dir, or NULL */
    char *signing_key_file;            /* --signing-key-file, or NULL */

    /* The external signer (KEP-740): this server signs for kube-apiserver
     * with keys it generates and rotates in --signing-key-dir. */
    char *signing_key_dir;                 /* --signing-key-dir, or NULL: no signer */
    char *signing_key_type;                /* --signing-key-type: rsa-2048, rsa-3072 or ec-p256 */
    char *signing_key_import;              /* --signing-key-import: the first signing key of an empty directory */
    unsigned long rotation_period;         /* --rotation-period */
    unsigned long publish_ahead;           /* --publish-ahead */
    unsigned long max_token_lifetime;      /* --max-token-lifetime */
    int allow_short_token_lifetime;        /* --allow-short-token-lifetime */
    char *external_signer_listen;          /* --external-signer-listen: "unix:/path", or NULL */
    char *external_signer_socket_mode;     /* --external-signer-socket-mode: "0600" or "0660" */
    char *external_signer_socket_owner;    /* --external-signer-socket-owner: [USER][:GROUP], or NULL */
    unsigned long external_signer_threads; /* --external-signer-threads */
    unsigned long signer_idle_timeout;     /* --external-signer-idle-timeout, seconds */
    unsigned long signer_max_buffered;     /* --external-signer-max-buffered-bytes: all connections */

    /* The signers of an HA control plane share their keys through etcd. */
    struct config_strlist etcd_servers;    /* --etcd-servers, split at commas; empty: no etcd */
    char *etcd_cafile;                     /* --etcd-cafile, or NULL: the system's CAs */
    char *etcd_certfile;                   /* --etcd-certfile, or NULL */
    char *etcd_keyfile;                    /* --etcd-keyfile, or NULL */
    char *etcd_prefix;                     /* --etcd-prefix: starts and ends with '/' */
    unsigned long etcd_lease_ttl;          /* --etcd-lease-ttl, seconds */
    char *signing_key_encryption_key_file; /* --signing-key-encryption-key-file, or NULL */

    char *output;     /* keys and doctor --output: "table" (or "text", the same) or "json" */
    char *export_dir; /* export --out */

    /* Token verification (serve's TokenReview endpoint and `verify`). */
    struct config_strlist api_audiences;        /* --api-audiences, split at commas; empty: the issuers */
    unsigned long token_leeway;                 /* --token-leeway */
    unsigned long max_token_size;               /* --max-token-size, bytes */
    int accept_legacy_tokens;                   /* --accept-legacy-tokens */
    int enable_token_review;                    /* --enable-token-review */
    struct config_listen *token_review_listens; /* --token-review-listen, when enabled */
    size_t token_review_listen_count;

    /* The TokenReview listener's TLS and callers (serve and dev). */
    char *token_review_tls_cert_file;                    /* --token-review-tls-cert-file, or NULL */
    char *token_review_tls_key_file;                     /* --token-review-tls-private-key-file, or NULL */
    char *token_review_client_ca_file;                   /* --token-review-client-ca-file, or NULL */
    int token_review_insecure_http;                      /* --token-review-insecure-http */
    struct config_strlist token_review_allowed_callers;  /* --token-review-allowed-callers */
    struct config_strlist token_review_caller_audiences; /* --token-review-caller-audiences; empty: the API ones */
    int token_review_check_bound_objects;                /* --token-review-check-bound-objects */
    unsigned long token_review_bound_object_cache_ttl;   /* its cache's TTL, seconds */

    /* `verify` */
    char *token_file;     /* --token-file: a path, or "-" */
    char *discovery_url;  /* --discovery-url, instead of key files */
    char *ca_file;        /* --ca-file, for --discovery-url */
    unsigned long repeat; /* --repeat */
    int no_cache;         /* --no-cache */

    /* `token` */
    char *mint_issuer;               /* --issuer (also doctor's issuer to check) */
    struct config_strlist audiences; /* --audience, or the issuer (doctor: what aud must hold, or none) */
    char *mint_namespace;            /* --namespace */
    char *service_account;           /* --service-account */
    char *service_account_uid;       /* --service-account-uid */
    char *pod_name, *pod_uid;        /* --pod-name, --pod-uid: both or neither */
    char *node_name, *node_uid;      /* --node-name, --node-uid: both or neither */
    unsigned long duration;          /* --duration */

    /* `doctor` (and --issuer, --audience, --token-file, --ca-file, --output above) */
    struct config_strlist targets; /* --target: aws, gcp, azure or vault, each any number of times */

    /* Production serving (serve and dev). */
    struct config_listen *tls_listens; /* --tls-listen */
    size_t tls_listen_count;
    char *tls_cert_file;                 /* --tls-cert-file (PEM chain), with --tls-listen */
    char *tls_key_file;                  /* --tls-private-key-file, with --tls-listen */
    char *path_prefix;                   /* --path-prefix ("/p", no trailing slash), or NULL */
    struct config_strlist allowed_hosts; /* --allowed-hosts, split at commas, lowercased; empty: any */
    struct config_listen *admin_listens; /* --admin-listen */
    size_t admin_listen_count;
    int no_admin;                               /* --admin-listen none */
    char *log_level;                            /* --log-level: error, warn, info or debug */
    char *log_format;                           /* --log-format: text or json */
    char *access_log;                           /* --access-log: a path, "-" (stdout), or NULL: off */
    unsigned long max_header_size;              /* --max-request-header-size, bytes */
    unsigned long request_timeout;              /* --request-timeout: HTTP/1.1 idle and whole request */
    unsigned long handshake_timeout;            /* --handshake-timeout: a first byte, a TLS handshake */
    unsigned long idle_timeout;                 /* --http2-idle-timeout */
    unsigned long write_timeout;                /* --write-timeout: a pending response stalls */
    unsigned long max_connections;              /* --max-connections: the public listeners, per process */
    unsigned long token_review_max_connections; /* --token-review-max-connections */
    unsigned long admin_max_connections;        /* --admin-max-connections */
    unsigned long connection_share;             /* --connection-share-per-address: percent of each budget */
    unsigned long http2_max_streams;            /* --http2-max-concurrent-streams */
    int http2;                                  /* --http2: HTTP/2 on the public listeners */
    unsigned long shutdown_grace;               /* --shutdown-grace */

    /* Publishing to object storage (push/): serve, dev and keys take
     * --publish-to, publish takes --to. */
    struct config_strlist publish_to;     /* --publish-to: s3://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX */
    struct config_strlist push_to;        /* publish --to: the same forms */
    char *s3_region;                      /* --s3-region */
    char *s3_endpoint;                    /* --s3-endpoint, or NULL: AWS, virtual-hosted */
    char *azblob_endpoint;                /* --azblob-endpoint, or NULL: ACCOUNT.blob.core.windows.net */
    char *azblob_sas_file;                /* --azblob-sas-file, or NULL */
    char *azblob_key_file;                /* --azblob-key-file, or NULL */
    unsigned long publish_check_interval; /* --publish-check-interval */

    /* CONFIG_CMD_HELP: what to print: a command's help (serve .. export),
     * the overview (CONFIG_CMD_HELP) or every flag (CONFIG_HELP_ALL). */
    enum config_command help_topic;

    /* Values accepted that often surprise (an issuer ending in "/"): one
     * line each, naming the flag or key, for the caller to log. */
    struct config_strlist warnings;
};

/* Parses argv (argv[0] is the program name; an optional subcommand may follow)
 * plus the --config file it names, validates everything and fills *out.
 * Returns 0 on success. On failure returns -1, leaves *out empty (nothing to
 * free) and writes a one-line message into err. For CONFIG_CMD_HELP and
 * CONFIG_CMD_VERSION *out holds defaults only and is not validated. */
int config_parse(int argc, char **argv, enum config_command *cmd, struct config *out, char *err, size_t errlen);

/* The config of one issuer of a fleet: the file at path (NAME.json in
 * fleet's --issuers-dir) holds that issuer's keys, which override fleet's
 * command line and --config file, the defaults of every issuer; a key of
 * the file that is not a per-issuer one is an error naming the file and
 * the key, and so is a file without "service-account-issuer". With
 * --state-dir, the issuer's state is kept in its subdirectory NAME. The
 * result is validated as config_parse's is. Returns 0, or -1 with *out
 * empty and a one-line message in err. */
int config_issuer_parse(const struct config *fleet, const char *path, const char *name, struct config *out, char *err,
                        size_t errlen);

/* Whether name (a file's name without ".json", len bytes) can name an
 * issuer of a fleet: it becomes a directory under --state-dir (and
 * export's --out) and a word of the log and the status page: letters,
 * digits, '-', '_' and '.', not first, at most CONFIG_ISSUER_NAME_MAX. */
#define CONFIG_ISSUER_NAME_MAX 200
int config_issuer_name_ok(const char *name, size_t len);

/* The help text of topic (see help_topic), written from the option table;
 * the caller frees it. NULL when out of memory. */
char *config_usage(enum config_command topic);

/* Frees everything config_parse allocated; safe on a zeroed struct. */
void config_free(struct config *cfg);

#endif
