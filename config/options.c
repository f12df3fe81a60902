/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options.c: the table of flags (see options.h), one row per flag, and the
 * few functions that read a row: lookups, the check of a value by its
 * kind, and what a wrong value is told.
 *
 * The rows are in the order of the help: the published documents, key
 * rotation, serving, limits, token verification, then each command's own
 * flags and the general ones. The order also decides which missing
 * required flag is named first.
 */
#include "config/options.h"
#include "config/bucket_url.h"
#include "keys/keydir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FOR_KEYS    CONFIG_CMD_BIT(CONFIG_CMD_KEYS)
#define FOR_VERIFY  CONFIG_CMD_BIT(CONFIG_CMD_VERIFY)
#define FOR_TOKEN   CONFIG_CMD_BIT(CONFIG_CMD_TOKEN)
#define FOR_EXPORT  CONFIG_CMD_BIT(CONFIG_CMD_EXPORT)
#define FOR_SERVE   CONFIG_CMD_BIT(CONFIG_CMD_SERVE)
#define FOR_PUBLISH CONFIG_CMD_BIT(CONFIG_CMD_PUBLISH)
#define FOR_PUSHING (CONFIG_FOR_SERVING | FOR_PUBLISH)
#define FOR_DOCTOR  CONFIG_CMD_BIT(CONFIG_CMD_DOCTOR)
#define FOR_LOGGING (CONFIG_FOR_DOCUMENTS | FOR_VERIFY)

#define FIELD(member)        offsetof(struct config, member)
#define LISTENS(list, count) .field = FIELD(list), .count_field = FIELD(count)
#define SCALAR(member)       .field = FIELD(member), .count_field = CONFIG_NO_FIELD
#define NO_FIELD             .field = CONFIG_NO_FIELD, .count_field = CONFIG_NO_FIELD
#define MAX_CONNECTIONS      1000000
#define QUOTED(x)            #x
#define STRING(macro)        QUOTED(macro) /* a number's macro as the row's default */

/* A row's needs and excludes (options.h), each {"flag other-flag", why}. */
#define NEEDS(...)                                                                                                     \
    .needs = (const struct config_relation[])                                                                          \
    {                                                                                                                  \
        __VA_ARGS__,                                                                                                   \
        {                                                                                                              \
            NULL, NULL                                                                                                 \
        }                                                                                                              \
    }
#define EXCLUDES(...)                                                                                                  \
    .excludes = (const struct config_relation[])                                                                       \
    {                                                                                                                  \
        __VA_ARGS__,                                                                                                   \
        {                                                                                                              \
            NULL, NULL                                                                                                 \
        }                                                                                                              \
    }
#define NEEDS_UPSTREAM NEEDS({"upstream", NULL})
#define NEEDS_DIR      NEEDS({"signing-key-dir", " DIR (the keys this server signs with)"})
#define NEEDS_SOCKET   NEEDS({"external-signer-listen", " unix:PATH"})
#define NEEDS_ETCD     NEEDS({"etcd-servers", " URL[,URL...]"})
#define NEEDS_REVIEW                                                                                                   \
    {                                                                                                                  \
        "enable-token-review", NULL                                                                                    \
    }

/* The checks of checks.c that do not care about --allow-insecure-issuer,
 * in the shape of a row's check. */
#define IGNORING_HTTP(check)                                                                                           \
    static const char *check##_row(const char *value, int allow_http)                                                  \
    {                                                                                                                  \
        (void)allow_http;                                                                                              \
        return check(value);                                                                                           \
    }
IGNORING_HTTP(config_check_media_type)
IGNORING_HTTP(config_check_audiences)
IGNORING_HTTP(config_check_hosts)
IGNORING_HTTP(config_check_path_prefix)
IGNORING_HTTP(config_check_dns_name)
IGNORING_HTTP(config_check_unix_socket)
IGNORING_HTTP(config_check_owner)
IGNORING_HTTP(config_check_web_url)
IGNORING_HTTP(config_check_caller)
IGNORING_HTTP(config_check_etcd_servers)
IGNORING_HTTP(config_check_etcd_prefix)

/* One worker per online CPU, within the row's range. */
static void online_cpus(const struct config_option *o, char *out, size_t len)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned long cpus = n < (long)o->min ? o->min : (unsigned long)n > o->max ? o->max : (unsigned long)n;

    snprintf(out, len, "%lu", cpus);
}

static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};
static const char *const log_formats[] = {"text", "json", NULL};
static const char *const outputs[] = {"table", "text", "json", NULL};
static const char *const targets[] = {"aws", "gcp", "azure", "vault", NULL};
static const char *const socket_modes[] = {"0600", "0660", NULL};

/* One row per flag, laid out by hand as a table. */
/* clang-format off */
const struct config_option config_options[] = {
    /* Published documents */
    {.name = "service-account-issuer", .arg = "URL", .kind = CONFIG_KIND_LIST, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .check = config_check_url, .commands = CONFIG_FOR_DOCUMENTS | FOR_VERIFY,
     .required = FOR_SERVE | FOR_EXPORT | FOR_PUBLISH, .why_required = " (at least one)",
     .dev_text = "http:// and the first --listen address", SCALAR(issuers), .group = CONFIG_GROUP_DOCUMENTS,
     .help = "Issuer, https: the iss of the tokens; repeatable, the first is published"},
    {.name = "service-account-jwks-uri", .arg = "URL", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .check = config_check_url, .commands = CONFIG_FOR_DOCUMENTS, .def_text = "ISSUER/openid/v1/jwks",
     SCALAR(jwks_uri), .group = CONFIG_GROUP_DOCUMENTS,
     .help = "jwks_uri to publish, https"},
    {.name = "service-account-key-file", .arg = "PATH", .kind = CONFIG_KIND_LIST, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .commands = CONFIG_FOR_DOCUMENTS | FOR_VERIFY,
     .def_text = "none; required without --signing-key-dir (serve: or --upstream; verify: without --discovery-url)",
     .help_for =
         (const struct config_help_variant[]){
             {FOR_SERVE, NULL, "none; required without --signing-key-dir or --upstream"},
             {FOR_KEYS | FOR_EXPORT | FOR_PUBLISH, NULL, "none; required without --signing-key-dir"},
             {FOR_VERIFY, NULL, "none; required without --discovery-url"},
             {0, NULL, NULL}},
     .dev_def = CONFIG_DEV_KEY_FILE,
     SCALAR(key_files),
     .group = CONFIG_GROUP_DOCUMENTS,
     .help = "PEM file of public or private keys, a JWKS file (its kids are kept), or a directory of them (never a "
             "PKI directory or a CA); repeatable"},

    {.name = "issuers-dir", .arg = "DIR", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = FOR_SERVE | FOR_KEYS | FOR_EXPORT | FOR_DOCTOR, .def_note = ": one issuer, --service-account-issuer",
     SCALAR(issuers_dir),
     .group = CONFIG_GROUP_DOCUMENTS, .also = "fleet issuers",
     .help = "Serve a fleet: one issuer per NAME.json file in DIR, keyed by the per-issuer flags "
             "(service-account-issuer, service-account-key-file, service-account-jwks-uri, max-age, "
             "jwks-content-type, key-retention, api-audiences, upstream and its settings, publish-to; those given "
             "here are every issuer's defaults, --publish-to with the issuer URL's path or NAME appended), "
             "answered by the issuer whose URL's host and path prefix the request's; files are followed live "
             "(docs/fleet.md)",
     .help_for = (const struct config_help_variant[]){{FOR_KEYS, "List the keys of every issuer of a fleet, one "
                                                                 "NAME.json file per issuer in DIR, under its name "
                                                                 "(docs/fleet.md)",
                                                       NULL},
                                                      {FOR_DOCTOR, "Check every issuer of a fleet, one NAME.json "
                                                                   "file per issuer in DIR, one line each; the exit "
                                                                   "code is the worst (docs/fleet.md)",
                                                       NULL},
                                                      {FOR_EXPORT, "Export every issuer of a fleet, one NAME.json "
                                                                   "file per issuer in DIR, into --out/NAME "
                                                                   "(docs/fleet.md)",
                                                       NULL},
                                                      {0, NULL, NULL}},
     EXCLUDES({"service-account-issuer", ": each file of --issuers-dir names its issuer"},
              {"signing-key-dir signing-key-file path-prefix token-review-check-bound-objects",
               ": not per issuer yet (docs/fleet.md)"})},

    /* Mirroring an API server: a key source of its own (serve only) */
    {.name = "upstream", .arg = "URL|in-cluster", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .check = config_check_upstream, .commands = FOR_SERVE, SCALAR(upstream), .group = CONFIG_GROUP_DOCUMENTS,
     .also = "apiserver api-server kube-apiserver mirror",
     .help = "Publish the keys of this API server, read from its https base URL (in-cluster: the pod's own), never "
             "from the jwks_uri it advertises; with --service-account-key-file, the union"},
    {.name = "upstream-ca-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .commands = FOR_SERVE, .def_text = "the system's; in-cluster: the pod's ca.crt", SCALAR(upstream_ca_file),
     .group = CONFIG_GROUP_DOCUMENTS,
     .help = "CA certificates that --upstream's certificate must chain to",
     NEEDS_UPSTREAM},
    {.name = "upstream-token-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .commands = FOR_SERVE, .def_text = "none; in-cluster: the pod's token", SCALAR(upstream_token_file),
     .group = CONFIG_GROUP_DOCUMENTS,
     .help = "Bearer token for --upstream, read again before every request (projected tokens rotate)",
     NEEDS_UPSTREAM},
    {.name = "upstream-refresh-interval", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .min = 1, .max = CONFIG_DAY, .commands = FOR_SERVE, .def = "60s", .def_with = "upstream",
     SCALAR(upstream_refresh_interval), .group = CONFIG_GROUP_DOCUMENTS,
     .help = "How often to read --upstream, never less often than its Cache-Control max-age asks; failures are "
             "retried sooner, backing off",
     NEEDS_UPSTREAM},
    {.name = "upstream-timeout", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER, .min = 1,
     .max = 5 * CONFIG_MINUTE, .commands = FOR_SERVE, .def = "10s", .def_with = "upstream",
     SCALAR(upstream_timeout), .group = CONFIG_GROUP_DOCUMENTS,
     .help = "Time limit of each request to --upstream, connecting included",
     NEEDS_UPSTREAM},
    {.name = "upstream-max-staleness", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .min = 1, .max = 365 * CONFIG_DAY, .commands = FOR_SERVE, .def_of = "upstream-refresh-interval", .def_times = 10,
     .def_with = "upstream", SCALAR(upstream_max_staleness), .group = CONFIG_GROUP_DOCUMENTS,
     .help = "/readyz answers 503 once the last good answer of --upstream is older than this (the documents "
             "keep being served)",
     NEEDS_UPSTREAM},
    {.name = "max-age", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .max = 365 * CONFIG_DAY, .commands = CONFIG_FOR_DOCUMENTS, .def = "1h", SCALAR(max_age),
     .group = CONFIG_GROUP_DOCUMENTS,
     .help = "Cache-Control max-age of both documents"},
    {.name = "jwks-content-type", .arg = "TYPE", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .check = config_check_media_type_row, .commands = CONFIG_FOR_DOCUMENTS, .def = "application/jwk-set+json",
     SCALAR(jwks_content_type), .group = CONFIG_GROUP_DOCUMENTS,
     .help = "Content-Type of the JWKS"},
    {.name = "cors", .kind = CONFIG_KIND_BOOL, .flags = CONFIG_FILE_KEY, .commands = CONFIG_FOR_SERVING, .def = "true",
     SCALAR(cors), .group = CONFIG_GROUP_DOCUMENTS,
     .help = "Let pages on other origins read the documents (CORS): Access-Control-Allow-Origin: *, the headers "
             "JavaScript may read, and OPTIONS preflights answered 204"},
    {.name = "no-cors", .kind = CONFIG_KIND_BOOL, .flags = CONFIG_NEGATES, .commands = CONFIG_FOR_SERVING,
     SCALAR(cors), .group = CONFIG_GROUP_DOCUMENTS,
     .help = "No CORS headers; OPTIONS answers 405"},
    {.name = "allow-insecure-issuer", .kind = CONFIG_KIND_BOOL, .flags = CONFIG_FILE_KEY, .commands = CONFIG_FOR_EVERY,
     .def = "false", .dev_def = "true", SCALAR(allow_insecure_issuer), .group = CONFIG_GROUP_DOCUMENTS,
     .help = "Allow http issuer and jwks URLs, for development"},

    /* Key rotation */
    {.name = "key-reload-interval", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY,
     .min = 1, .max = CONFIG_DAY, .commands = CONFIG_FOR_SERVING, .def = "60s", SCALAR(key_reload_interval),
     .group = CONFIG_GROUP_ROTATION,
     .help = "How often to re-read the key files"},
    {.name = "key-retention", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .max = 3650 * CONFIG_DAY, .commands = CONFIG_FOR_DOCUMENTS, .def = "0", .def_note = ": off; needs --state-dir",
     SCALAR(key_retention), .group = CONFIG_GROUP_ROTATION,
     .help = "Keep publishing a key this long after its file drops it"},
    {.name = "state-dir", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_DOCUMENTS, SCALAR(state_dir), .group = CONFIG_GROUP_ROTATION,
     .help = "Directory that remembers when each key was first seen and until when it is retained, across restarts; "
             "owned by this user or root, not writable by group or others"},
    {.name = "signing-key-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVING | FOR_TOKEN, .required = FOR_TOKEN,
     .why_required = " (the private key that signs the token)", SCALAR(signing_key_file),
     .group = CONFIG_GROUP_ROTATION,
     .help = "PEM file of the key that signs tokens: the API server's current one, whose publication serve "
             "watches; for token, the private key to sign with",
     EXCLUDES({"signing-key-dir", ": --signing-key-file watches a key the API server signs with itself, with "
                                 "--signing-key-dir this server signs (to start signing with that key, give it as "
                                 "--signing-key-import)"})},

    /* The external signer (KEP-740) and its keys */
    {.name = "signing-key-dir", .arg = "DIR", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_DOCUMENTS, .def_note = ": no signer", SCALAR(signing_key_dir),
     .group = CONFIG_GROUP_SIGNER,
     .help = "Directory of the keys this server signs with, generates and rotates (created 0700); their public keys "
             "are published with the others"},
    {.name = "signing-key-type", .arg = "TYPE", .kind = CONFIG_KIND_CHOICE, .flags = CONFIG_FILE_KEY,
     .choices = keydir_types, .commands = CONFIG_FOR_SERVING, .def = "rsa-2048", SCALAR(signing_key_type),
     .group = CONFIG_GROUP_SIGNER,
     .help = "Type of the keys generated (RSA keys sign RS256, ec-p256 ES256)",
     NEEDS_DIR},
    {.name = "signing-key-import", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVING, .def_note = "; ignored once the directory holds keys",
     SCALAR(signing_key_import), .group = CONFIG_GROUP_SIGNER,
     .help = "Private key (the API server's sa.key) that an empty --signing-key-dir starts signing with at once",
     NEEDS_DIR},
    {.name = "rotation-period", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = 3650 * CONFIG_DAY, .commands = CONFIG_FOR_SERVING, .def = "30d", SCALAR(rotation_period),
     .group = CONFIG_GROUP_SIGNER,
     .help = "How long a key signs before the next one takes over",
     NEEDS_DIR},
    {.name = "publish-ahead", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = 365 * CONFIG_DAY, .commands = CONFIG_FOR_SERVING, .def = "24h", SCALAR(publish_ahead),
     .group = CONFIG_GROUP_SIGNER,
     .help = "How long a new key is published before it signs: at least --max-age, better a minute more",
     NEEDS_DIR},
    {.name = "max-token-lifetime", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY,
     .min = 1, .max = 3650 * CONFIG_DAY, .commands = CONFIG_FOR_SERVING, .def = "48h",
     .def_note = "; at least 10m", SCALAR(max_token_lifetime), .group = CONFIG_GROUP_SIGNER,
     .help = "Longest token lifetime kube-apiserver may ask for (Metadata), and how long a retired key stays "
             "published after its last signature",
     NEEDS_DIR},
    {.name = "allow-short-token-lifetime", .kind = CONFIG_KIND_BOOL, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVING, .def = "false", SCALAR(allow_short_token_lifetime),
     .group = CONFIG_GROUP_SIGNER,
     .help = "Accept --max-token-lifetime below 10m, which kube-apiserver refuses: for tests and demos",
     NEEDS_DIR},
    /* The signers of an HA control plane: keys, roles, schedule and the rotation lock in the cluster's etcd */
    {.name = "etcd-servers", .arg = "URL[,URL...]", .kind = CONFIG_KIND_COMMAS, .flags = CONFIG_FILE_KEY,
     .check = config_check_etcd_servers_row, .commands = FOR_SERVE | FOR_KEYS, .def_note = ": the key set is this node's alone",
     SCALAR(etcd_servers), .group = CONFIG_GROUP_SIGNER, .also = "etcd",
     .help = "etcd members (as kube-apiserver's --etcd-servers) that hold the signing keys, sealed, their roles and "
             "schedule, and choose the one signer that rotates; --signing-key-dir is this node's copy",
     NEEDS({"signing-key-dir", " DIR (this node's copy of the keys, to start and sign while etcd is down)"},
           {"signing-key-encryption-key-file", " FILE (the private keys are sealed before they reach etcd)"})},
    {.name = "etcd-cafile", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = FOR_SERVE | FOR_KEYS, .def_text = "the system's", SCALAR(etcd_cafile), .group = CONFIG_GROUP_SIGNER,
     .help = "CA certificates that etcd's server certificates must chain to (kubeadm: /etc/kubernetes/pki/etcd/ca.crt)",
     NEEDS_ETCD},
    {.name = "etcd-certfile", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = FOR_SERVE | FOR_KEYS, SCALAR(etcd_certfile), .group = CONFIG_GROUP_SIGNER,
     .help = "Client certificate for etcd (kubeadm: /etc/kubernetes/pki/apiserver-etcd-client.crt)",
     NEEDS({"etcd-servers", " URL[,URL...]"}, {"etcd-keyfile", " PATH"})},
    {.name = "etcd-keyfile", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = FOR_SERVE | FOR_KEYS, SCALAR(etcd_keyfile), .group = CONFIG_GROUP_SIGNER,
     .help = "Private key of --etcd-certfile",
     NEEDS({"etcd-servers", " URL[,URL...]"}, {"etcd-certfile", " PATH"})},
    {.name = "etcd-prefix", .arg = "PREFIX", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .check = config_check_etcd_prefix_row, .commands = FOR_SERVE | FOR_KEYS, .def = "/oidc-discovery/", SCALAR(etcd_prefix),
     .group = CONFIG_GROUP_SIGNER,
     .help = "Every etcd key this server reads or writes starts with this (give each cluster's signers their own)",
     NEEDS_ETCD},
    {.name = "etcd-lease-ttl", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY, .min = 2,
     .max = 300, .commands = FOR_SERVE | FOR_KEYS, .def = "15s", SCALAR(etcd_lease_ttl), .group = CONFIG_GROUP_SIGNER,
     .help = "Lease of the signer that rotates: another takes over this long (and a second) after it stops",
     NEEDS_ETCD},
    {.name = "signing-key-encryption-key-file", .arg = "FILE", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = FOR_SERVE | FOR_KEYS, SCALAR(signing_key_encryption_key_file), .group = CONFIG_GROUP_SIGNER,
     .help = "Key that seals the private keys in etcd (AES-256-GCM): 64 hex characters, `openssl rand -hex 32`, "
             "mode 0600, the same file on every control-plane node",
     NEEDS_ETCD},
    {.name = "external-signer-listen", .arg = "unix:PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .check = config_check_unix_socket_row, .commands = CONFIG_FOR_SERVERS,      SCALAR(external_signer_listen), .group = CONFIG_GROUP_SIGNER,
     .help = "Serve kube-apiserver's external signer (gRPC ExternalJWTSigner) on this Unix socket: the path its "
             "--service-account-signing-endpoint names",
     NEEDS_DIR},
    {.name = "external-signer-socket-mode", .arg = "MODE", .kind = CONFIG_KIND_CHOICE, .flags = CONFIG_FILE_KEY,
     .choices = socket_modes, .commands = CONFIG_FOR_SERVERS, .def = "0600", SCALAR(external_signer_socket_mode),
     .group = CONFIG_GROUP_SIGNER,
     .help = "Mode of the socket (0600: its owner only; 0660: and its group)",
     NEEDS_SOCKET},
    {.name = "external-signer-socket-owner", .arg = "USER:GROUP", .kind = CONFIG_KIND_STRING,
     .flags = CONFIG_FILE_KEY, .check = config_check_owner_row, .commands = CONFIG_FOR_SERVERS,
     .def_text = "this process's user and group", SCALAR(external_signer_socket_owner),
     .group = CONFIG_GROUP_SIGNER,
     .help = "Owner of the socket, USER, USER:GROUP or :GROUP (names or ids; another user needs root)",
     NEEDS_SOCKET},
    {.name = "external-signer-threads", .arg = "N", .kind = CONFIG_KIND_UINT, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = 64, .commands = CONFIG_FOR_SERVERS, .def_fn = online_cpus, .def_text = "the number of online CPUs",
     SCALAR(external_signer_threads), .group = CONFIG_GROUP_SIGNER,
     .help = "Threads that serve the external signer's connections (each connection on one of them), apart "
             "from the HTTP threads",
     NEEDS_SOCKET},
    {.name = "external-signer-idle-timeout", .arg = "DURATION", .kind = CONFIG_KIND_DURATION,
     .flags = CONFIG_FILE_KEY, .min = 1, .max = CONFIG_DAY, .commands = CONFIG_FOR_SERVERS, .def = "5m",
     SCALAR(signer_idle_timeout), .group = CONFIG_GROUP_SIGNER,
     .help = "Say GOAWAY to and close a signer connection that has sent nothing and taken nothing for this long "
             "(gRPC clients reconnect on their next call)",
     NEEDS_SOCKET},
    {.name = "external-signer-max-buffered-bytes", .arg = "BYTES", .kind = CONFIG_KIND_UINT, .flags = CONFIG_FILE_KEY,
     .min = 65536, .max = 1073741824, .commands = CONFIG_FOR_SERVERS, .def = "16777216",
     SCALAR(signer_max_buffered), .group = CONFIG_GROUP_SIGNER,
     .help = "Request bytes the signer holds for unfinished calls, over all connections; a call that would pass "
             "it is answered RESOURCE_EXHAUSTED",
     NEEDS_SOCKET},

    /* Listeners and serving */
    {.name = "listen", .arg = "HOST:PORT|none", .kind = CONFIG_KIND_LISTEN,
     .flags = CONFIG_FILE_KEY | CONFIG_UNIX_OK | CONFIG_NONE_OK, .commands = CONFIG_FOR_SERVING,
     .def = "127.0.0.1:8080", .def_note = "; none: no plain-http listener (serve over --tls-listen only)",
     LISTENS(listens, listen_count),
     .group = CONFIG_GROUP_SERVING, .also = "port bind bind-address address addr",
     .help = "Listen address (IPv6: [ADDR]:PORT; port 0: a free port, logged); repeatable; --listen unix:/path "
             "serves plain HTTP on a Unix socket instead"},
    {.name = "threads", .arg = "N", .kind = CONFIG_KIND_UINT, .flags = CONFIG_FILE_KEY, .min = 1, .max = 256,
     .commands = CONFIG_FOR_SERVING, .def_fn = online_cpus, .def_text = "the number of online CPUs", SCALAR(threads),
     .group = CONFIG_GROUP_SERVING,
     .help = "Worker threads"},
    {.name = "tls-listen", .arg = "HOST:PORT", .kind = CONFIG_KIND_LISTEN, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVERS,      LISTENS(tls_listens, tls_listen_count), .group = CONFIG_GROUP_SERVING,
     .help = "HTTPS listen address; repeatable",
     NEEDS({"tls-cert-file tls-private-key-file", NULL})},
    {.name = "tls-cert-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVERS, SCALAR(tls_cert_file), .group = CONFIG_GROUP_SERVING,
     .help = "PEM certificate chain for --tls-listen",
     NEEDS({"tls-listen", NULL})},
    {.name = "tls-private-key-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVERS, SCALAR(tls_key_file), .group = CONFIG_GROUP_SERVING,
     .help = "PEM private key of that certificate",
     NEEDS({"tls-listen", NULL})},
    {.name = "admin-listen", .arg = "HOST:PORT|none", .kind = CONFIG_KIND_LISTEN,
     .flags = CONFIG_FILE_KEY | CONFIG_NONE_OK, .commands = CONFIG_FOR_SERVERS, .def = "127.0.0.1:9090",
     .def_note = "; none: no admin listener", LISTENS(admin_listens, admin_listen_count),
     .group = CONFIG_GROUP_SERVING,
     .help = "Listen address of /livez, /readyz and /metrics, never a public one; repeatable"},
    {.name = "path-prefix", .arg = "/PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .check = config_check_path_prefix_row, .commands = CONFIG_FOR_SERVERS,
     .def_note = ": omit the flag to serve at /", SCALAR(path_prefix), .group = CONFIG_GROUP_SERVING,
     .help = "Serve every endpoint under this path, like /oidc: leading slash, no trailing slash"},
    {.name = "allowed-hosts", .arg = "LIST", .kind = CONFIG_KIND_COMMAS, .flags = CONFIG_FILE_KEY | CONFIG_LOWER,
     .check = config_check_hosts_row, .commands = CONFIG_FOR_SERVERS, .def_text = "any host", SCALAR(allowed_hosts),
     .group = CONFIG_GROUP_SERVING,
     .help = "Host header values to answer, comma-separated host or host:port; repeatable, the lists are joined"},
    {.name = "access-log", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVERS, .def_note = ": off", SCALAR(access_log), .group = CONFIG_GROUP_SERVING,
     .help = "Write an access log to PATH, - for standard output"},
    {.name = "http2", .kind = CONFIG_KIND_BOOL, .flags = CONFIG_FILE_KEY, .commands = CONFIG_FOR_SERVERS,
     .def = "false", .def_note = ": HTTP/1.1 only", SCALAR(http2), .group = CONFIG_GROUP_SERVING,
     .help = "Also speak HTTP/2: h2c on --listen, ALPN h2 on --tls-listen. h2o 2.2.5 lets one HTTP/2 client exhaust "
             "memory (docs/http2.md): for trusted clients only"},

    /* Limits and timeouts */
    {.name = "max-request-header-size", .arg = "BYTES", .kind = CONFIG_KIND_UINT, .flags = CONFIG_FILE_KEY,
     .min = 1024, .max = 65536, .commands = CONFIG_FOR_SERVERS, .def = "8192", SCALAR(max_header_size),
     .group = CONFIG_GROUP_LIMITS,
     .help = "Largest request header block"},
    {.name = "request-timeout", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = 5 * CONFIG_MINUTE, .commands = CONFIG_FOR_SERVERS, .def = "10s", SCALAR(request_timeout),
     .group = CONFIG_GROUP_LIMITS,
     .help = "Time to read a whole request and HTTP/1.1 keep-alive idle time"},
    {.name = "handshake-timeout", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = 5 * CONFIG_MINUTE, .commands = CONFIG_FOR_SERVERS, .def = "5s", SCALAR(handshake_timeout),
     .group = CONFIG_GROUP_LIMITS,
     .help = "Close a new connection whose client has sent nothing (over TLS: not finished its handshake) for this "
             "long; such a connection is also the first closed to make room when its listener is full"},
    {.name = "write-timeout", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = 5 * CONFIG_MINUTE, .commands = CONFIG_FOR_SERVERS, .def = "10s", SCALAR(write_timeout),
     .group = CONFIG_GROUP_LIMITS,
     .help = "Close a connection whose client has taken nothing of a pending response for this long"},
    {.name = "http2-idle-timeout", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = CONFIG_HOUR, .commands = CONFIG_FOR_SERVERS, .def = "60s", SCALAR(idle_timeout),
     .group = CONFIG_GROUP_LIMITS,
     .help = "Close an idle HTTP/2 connection after this"},
    {.name = "http2-max-concurrent-streams", .arg = "N", .kind = CONFIG_KIND_UINT, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = 1000, .commands = CONFIG_FOR_SERVERS, .def = "100", SCALAR(http2_max_streams),
     .group = CONFIG_GROUP_LIMITS,
     .help = "Streams processed at once per HTTP/2 connection"},
    {.name = "shutdown-grace", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY,
     .max = 5 * CONFIG_MINUTE, .commands = CONFIG_FOR_SERVERS, .def = "5s", .dev_def = "0s",
     SCALAR(shutdown_grace), .group = CONFIG_GROUP_LIMITS,
     .help = "Time to keep serving on SIGTERM or SIGINT, with /readyz 503, so load balancers drain; a second "
             "signal ends it"},
    {.name = "max-connections", .arg = "N", .kind = CONFIG_KIND_UINT, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = MAX_CONNECTIONS, .commands = CONFIG_FOR_SERVERS, .def = "10000", SCALAR(max_connections),
     .group = CONFIG_GROUP_LIMITS,
     .help = "Open connections of the public listeners (--listen, --tls-listen) per process, %r; more are closed at "
             "once"},
    {.name = "admin-max-connections", .arg = "N", .kind = CONFIG_KIND_UINT, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = MAX_CONNECTIONS, .commands = CONFIG_FOR_SERVERS, .def = "64", SCALAR(admin_max_connections),
     .group = CONFIG_GROUP_LIMITS,
     .help = "Open connections of the admin listener, %r; more are closed at once"},
    {.name = "connection-share-per-address", .arg = "PERCENT", .kind = CONFIG_KIND_UINT, .flags = CONFIG_FILE_KEY,
     .min = 1, .max = 100, .commands = CONFIG_FOR_SERVERS, .def = "25", SCALAR(connection_share),
     .group = CONFIG_GROUP_LIMITS,
     .help = "Share of each listener's connection budget that one client address (IPv6: one /64) may hold, %r; "
             "more from it are closed at once"},

    /* Token verification */
    {.name = "api-audiences", .arg = "LIST", .kind = CONFIG_KIND_COMMAS, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .check = config_check_audiences_row, .commands = CONFIG_FOR_SERVING | FOR_VERIFY, .def_text = "the issuers",
     SCALAR(api_audiences), .group = CONFIG_GROUP_REVIEW,
     .help = "Audiences a token must have one of, comma-separated; repeatable, the lists are joined in order"},
    {.name = "token-leeway", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY,
     .max = CONFIG_HOUR, .commands = CONFIG_FOR_SERVING | FOR_VERIFY, .def = STRING(CONFIG_TOKEN_LEEWAY) "s", SCALAR(token_leeway),
     .group = CONFIG_GROUP_REVIEW,
     .help = "Clock skew allowed for exp, nbf and iat"},
    {.name = "max-token-size", .arg = "BYTES", .kind = CONFIG_KIND_UINT, .flags = CONFIG_FILE_KEY, .min = 256,
     .max = 1048576, .commands = CONFIG_FOR_SERVING | FOR_VERIFY, .def = STRING(CONFIG_MAX_TOKEN_SIZE), SCALAR(max_token_size),
     .group = CONFIG_GROUP_REVIEW,
     .help = "Longest token accepted"},
    {.name = "accept-legacy-tokens", .kind = CONFIG_KIND_BOOL, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVING | FOR_VERIFY, .def = "false", SCALAR(accept_legacy_tokens),
     .group = CONFIG_GROUP_REVIEW,
     .help = "Accept legacy Secret-based tokens, which never expire and cannot be revoked here; without aud, good for "
             "the API audiences"},
    {.name = "enable-token-review", .kind = CONFIG_KIND_BOOL, .flags = CONFIG_FILE_KEY, .commands = CONFIG_FOR_SERVING,
     .def = "false", SCALAR(enable_token_review),
     .group = CONFIG_GROUP_REVIEW,
     .help = "Serve the TokenReview API",
     NEEDS({"token-review-listen", " HOST:PORT (the TokenReview API is never served on the public listeners)"})},
    {.name = "token-review-listen", .arg = "HOST:PORT", .kind = CONFIG_KIND_LISTEN, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVING,      LISTENS(token_review_listens, token_review_listen_count), .group = CONFIG_GROUP_REVIEW,
     .help = "Listen address of the TokenReview API, never a --listen address; repeatable",
     NEEDS(NEEDS_REVIEW)},
    {.name = "token-review-max-connections", .arg = "N", .kind = CONFIG_KIND_UINT, .flags = CONFIG_FILE_KEY, .min = 1,
     .max = MAX_CONNECTIONS, .commands = CONFIG_FOR_SERVERS, .def = "1000", SCALAR(token_review_max_connections),
     .group = CONFIG_GROUP_REVIEW,
     .help = "Open connections of the TokenReview listener per process, %r; more are closed at once"},
    /* TokenReview listener: TLS and its callers */
    {.name = "token-review-tls-cert-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVERS,      SCALAR(token_review_tls_cert_file), .group = CONFIG_GROUP_REVIEW,
     .help = "PEM certificate chain of the TokenReview listener, reloaded when it changes",
     NEEDS(NEEDS_REVIEW, {"token-review-tls-private-key-file", NULL})},
    {.name = "token-review-tls-private-key-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVERS, SCALAR(token_review_tls_key_file), .group = CONFIG_GROUP_REVIEW,
     .help = "PEM private key of that certificate",
     NEEDS(NEEDS_REVIEW, {"token-review-tls-cert-file", NULL})},
    {.name = "token-review-client-ca-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVERS, .def_note = ": no client certificates", SCALAR(token_review_client_ca_file),
     .group = CONFIG_GROUP_REVIEW,
     .help = "PEM CA certificates that issue the client certificates callers may authenticate with (mutual TLS)",
     NEEDS(NEEDS_REVIEW, {"token-review-tls-cert-file", ": client certificates come with TLS"})},
    {.name = "token-review-insecure-http", .kind = CONFIG_KIND_BOOL, .flags = CONFIG_FILE_KEY,
     .commands = CONFIG_FOR_SERVERS, .def = "false", SCALAR(token_review_insecure_http), .group = CONFIG_GROUP_REVIEW,
     .help = "Serve the TokenReview API over plain HTTP instead of TLS: bearer tokens cross the network in clear, "
             "for development only",
     NEEDS(NEEDS_REVIEW),
     EXCLUDES({"token-review-tls-cert-file", ": the TokenReview listener speaks either TLS or plain HTTP"})},
    {.name = "token-review-allowed-callers", .arg = "NAME", .kind = CONFIG_KIND_LIST, .flags = CONFIG_FILE_KEY,
     .check = config_check_caller_row, .commands = CONFIG_FOR_SERVERS, .def_text = "nobody",
     SCALAR(token_review_allowed_callers), .group = CONFIG_GROUP_REVIEW,
     .help = "Who may call the TokenReview API: a bearer token's service account "
             "(system:serviceaccount:NAMESPACE:NAME) or a client certificate's subject in RFC 4514 form "
             "(CN=vault,O=example, as openssl x509 -nameopt RFC2253 prints it); repeatable",
     NEEDS(NEEDS_REVIEW)},
    {.name = "token-review-caller-audiences", .arg = "LIST", .kind = CONFIG_KIND_COMMAS, .flags = CONFIG_FILE_KEY,
     .check = config_check_audiences_row, .commands = CONFIG_FOR_SERVERS, .def_text = "the API audiences",
     SCALAR(token_review_caller_audiences), .group = CONFIG_GROUP_REVIEW,
     .help = "Audiences a caller's bearer token must have one of, comma-separated; repeatable",
     NEEDS(NEEDS_REVIEW)},
    {.name = "token-review-check-bound-objects", .kind = CONFIG_KIND_BOOL, .flags = CONFIG_FILE_KEY,
     .commands = FOR_SERVE, .def = "false", SCALAR(token_review_check_bound_objects), .group = CONFIG_GROUP_REVIEW,
     .help = "Refuse, as kube-apiserver does, a token whose service account, pod, secret or node is gone or has "
             "another uid, looked up through --upstream (cached per object); refused while the API server cannot "
             "be reached",
     NEEDS(NEEDS_REVIEW, {"upstream", " URL (the API server the objects are looked up in)"})},
    {.name = "token-review-bound-object-cache-ttl", .arg = "DURATION", .kind = CONFIG_KIND_DURATION,
     .flags = CONFIG_FILE_KEY, .min = 1, .max = 10 * CONFIG_MINUTE, .commands = FOR_SERVE, .def = "10s",
     SCALAR(token_review_bound_object_cache_ttl),
     .group = CONFIG_GROUP_REVIEW,
     .help = "How long an object looked up for --token-review-check-bound-objects is taken as found (or missing) "
             "without asking again: a deletion is seen within this",
     NEEDS({"token-review-check-bound-objects", NULL})},

    /* verify */
    {.name = "token-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .commands = FOR_VERIFY | FOR_DOCTOR,
     .required = FOR_VERIFY,
     .why_required = " (a path, or - for standard input)", SCALAR(token_file), .group = CONFIG_GROUP_VERIFY,
     .help = "File holding the token, - for standard input"},
    {.name = "discovery-url", .arg = "URL", .kind = CONFIG_KIND_STRING, .check = config_check_url,
     .commands = FOR_VERIFY, SCALAR(discovery_url), .group = CONFIG_GROUP_VERIFY,
     .help = "Issuer URL whose discovery document gives the JWKS and, by default, the issuer; https; instead of "
             "--service-account-key-file",
     EXCLUDES({"service-account-key-file", NULL})},
    {.name = "ca-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .commands = FOR_VERIFY | FOR_DOCTOR,
     .def_text = "the system's", SCALAR(ca_file), .group = CONFIG_GROUP_VERIFY,
     .help = "CA certificates to verify the issuer's TLS chain with (verify: for --discovery-url)",
     .help_for = (const struct config_help_variant[]){{FOR_VERIFY, "CA certificates to verify --discovery-url's TLS "
                                                                   "chain with", NULL},
                                                      {FOR_DOCTOR, "CA certificates to verify the issuer's TLS "
                                                                   "chain with", NULL},
                                                      {0, NULL, NULL}},
     NEEDS({"discovery-url", NULL})},
    {.name = "repeat", .arg = "N", .kind = CONFIG_KIND_UINT, .min = 1, .max = 100000000, .commands = FOR_VERIFY,
     .def = "1", SCALAR(repeat), .group = CONFIG_GROUP_VERIFY,
     .help = "Verify N times, %r, to measure speed"},
    {.name = "no-cache", .kind = CONFIG_KIND_BOOL, .commands = FOR_VERIFY, .def = "false", SCALAR(no_cache),
     .group = CONFIG_GROUP_VERIFY,
     .help = "Do not cache verifications across repeats"},

    /* token */
    {.name = "issuer", .arg = "URL", .kind = CONFIG_KIND_STRING, .check = config_check_web_url_row,
     .commands = FOR_TOKEN | FOR_DOCTOR | FOR_KEYS | FOR_EXPORT, .required = FOR_TOKEN | FOR_DOCTOR,
     .why_required = "", SCALAR(mint_issuer), .group = CONFIG_GROUP_TOKEN, .also = "service-account-issuer",
     .help = "Issuer: token's iss claim (https), or the issuer doctor checks; for keys and export, the NAME of the "
             "one issuer of --issuers-dir (NAME.json) to list or export",
     .help_for = (const struct config_help_variant[]){{FOR_TOKEN, "Token's iss claim (https)", NULL},
                                                      {FOR_DOCTOR, "Issuer to check; with --issuers-dir, the NAME "
                                                                   "of the one issuer to check",
                                                       NULL},
                                                      {FOR_KEYS, "NAME of the one issuer of --issuers-dir "
                                                                 "(NAME.json) to list; a URL is not a name",
                                                       "every issuer"},
                                                      {FOR_EXPORT, "NAME of the one issuer of --issuers-dir "
                                                                   "(NAME.json) to export, into --out itself",
                                                       "every issuer, into --out/NAME"},
                                                      {0, NULL, NULL}}},
    {.name = "audience", .arg = "AUD", .kind = CONFIG_KIND_LIST, .commands = FOR_TOKEN | FOR_DOCTOR,
     .def_text = "token: the issuer; doctor: none", SCALAR(audiences), .group = CONFIG_GROUP_TOKEN,
     .help = "Token's aud claim; for doctor, an audience the --token-file token must hold; repeatable",
     .help_for = (const struct config_help_variant[]){{FOR_TOKEN, "Token's aud claim; repeatable", "the issuer"},
                                                      {FOR_DOCTOR, "An audience the --token-file token must hold; "
                                                                   "repeatable", "none"},
                                                      {0, NULL, NULL}}},
    {.name = "namespace", .arg = "NS", .kind = CONFIG_KIND_STRING, .check = config_check_dns_name_row,
     .commands = FOR_TOKEN, .def = "default", SCALAR(mint_namespace), .group = CONFIG_GROUP_TOKEN,
     .help = "Namespace, a DNS-1123 name"},
    {.name = "service-account", .arg = "NAME", .kind = CONFIG_KIND_STRING, .check = config_check_dns_name_row,
     .commands = FOR_TOKEN, .def = "default", SCALAR(service_account), .group = CONFIG_GROUP_TOKEN,
     .help = "Service account, a DNS-1123 name"},
    {.name = "service-account-uid", .arg = "UID", .kind = CONFIG_KIND_STRING, .commands = FOR_TOKEN,
     .required = FOR_TOKEN, .why_required = "", SCALAR(service_account_uid), .group = CONFIG_GROUP_TOKEN,
     .help = "Service account UID"},
    {.name = "pod-name", .arg = "NAME", .kind = CONFIG_KIND_STRING, .commands = FOR_TOKEN, SCALAR(pod_name),
     .group = CONFIG_GROUP_TOKEN,
     .help = "Bind the token to this pod",
     NEEDS({"pod-uid", NULL})},
    {.name = "pod-uid", .arg = "UID", .kind = CONFIG_KIND_STRING, .commands = FOR_TOKEN, SCALAR(pod_uid),
     .group = CONFIG_GROUP_TOKEN,
     .help = "UID of that pod",
     NEEDS({"pod-name", NULL})},
    {.name = "node-name", .arg = "NAME", .kind = CONFIG_KIND_STRING, .commands = FOR_TOKEN, SCALAR(node_name),
     .group = CONFIG_GROUP_TOKEN,
     .help = "Bind the token to this node",
     NEEDS({"node-uid", NULL})},
    {.name = "node-uid", .arg = "UID", .kind = CONFIG_KIND_STRING, .commands = FOR_TOKEN, SCALAR(node_uid),
     .group = CONFIG_GROUP_TOKEN,
     .help = "UID of that node",
     NEEDS({"node-name", NULL})},
    {.name = "duration", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .min = 1, .max = 365 * CONFIG_DAY,
     .commands = FOR_TOKEN, .def = "1h", SCALAR(duration), .group = CONFIG_GROUP_TOKEN,
     .help = "Lifetime"},

    /* export */
    {.name = "out", .arg = "DIR", .kind = CONFIG_KIND_STRING, .commands = FOR_EXPORT, .required = FOR_EXPORT,
     .why_required = " (the directory to write the documents into)", SCALAR(export_dir), .group = CONFIG_GROUP_EXPORT,
     .help = "Directory to write .well-known/openid-configuration and openid/v1/jwks into, created when missing"},

    /* Publishing to object storage (push/) */
    {.name = "publish-to", .arg = "URL", .kind = CONFIG_KIND_LIST, .flags = CONFIG_FILE_KEY | CONFIG_ISSUER,
     .check = config_check_bucket_url, .commands = CONFIG_FOR_SERVING, SCALAR(publish_to),
     .group = CONFIG_GROUP_PUBLISH,
     .help = "Also push both documents to s3://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX whenever they "
             "change, and repair them there; keys shows what the bucket holds; repeatable"},
    {.name = "to", .arg = "URL", .kind = CONFIG_KIND_LIST, .check = config_check_bucket_url, .commands = FOR_PUBLISH,
     .required = FOR_PUBLISH, .why_required = " (s3://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX)",
     SCALAR(push_to), .group = CONFIG_GROUP_PUBLISH, .also = "publish-to",
     .help = "Push both documents to s3://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX; repeatable"},
    {.name = "s3-region", .arg = "REGION", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .check = config_check_region, .commands = FOR_PUSHING, .def = "us-east-1", SCALAR(s3_region),
     .group = CONFIG_GROUP_PUBLISH,
     .help = "Region the S3 requests are signed for (GCS: auto); credentials come from AWS_ACCESS_KEY_ID, "
             "AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN"},
    {.name = "s3-endpoint", .arg = "URL", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .check = config_check_endpoint, .commands = FOR_PUSHING,
     .def_text = "AWS, https://BUCKET.s3.REGION.amazonaws.com", SCALAR(s3_endpoint), .group = CONFIG_GROUP_PUBLISH,
     .help = "S3-compatible store (GCS: https://storage.googleapis.com), addressed path-style as URL/BUCKET/KEY"},
    {.name = "azblob-endpoint", .arg = "URL", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .check = config_check_endpoint, .commands = FOR_PUSHING, .def_text = "https://ACCOUNT.blob.core.windows.net",
     SCALAR(azblob_endpoint), .group = CONFIG_GROUP_PUBLISH,
     .help = "Azure Blob endpoint addressed as URL/ACCOUNT/CONTAINER/KEY, such as Azurite's"},
    {.name = "azblob-sas-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = FOR_PUSHING, SCALAR(azblob_sas_file), .group = CONFIG_GROUP_PUBLISH,
     .help = "File holding an Azure SAS token (the query string), read at every push",
     EXCLUDES({"azblob-key-file", " (a SAS token or the account key)"})},
    {.name = "azblob-key-file", .arg = "PATH", .kind = CONFIG_KIND_STRING, .flags = CONFIG_FILE_KEY,
     .commands = FOR_PUSHING, .def_text = "$AZURE_STORAGE_KEY", SCALAR(azblob_key_file),
     .group = CONFIG_GROUP_PUBLISH,
     .help = "File holding the Azure storage account key (base64) for SharedKey, read at every push"},
    {.name = "publish-check-interval", .arg = "DURATION", .kind = CONFIG_KIND_DURATION, .flags = CONFIG_FILE_KEY,
     .min = 1, .max = CONFIG_DAY, .commands = CONFIG_FOR_SERVERS, .def = "5m", SCALAR(publish_check_interval),
     .group = CONFIG_GROUP_PUBLISH,
     .help = "How often the pushed objects are read back and repaired when they differ"},

    /* keys */
    {.name = "output", .arg = "table|text|json", .kind = CONFIG_KIND_CHOICE, .choices = outputs,
     .commands = FOR_KEYS | FOR_DOCTOR, .def = "table", SCALAR(output), .group = CONFIG_GROUP_KEYS,
     .help = "What to print: a table for people (text is the same), or JSON for programs"},

    /* doctor */
    {.name = "target", .arg = "RP", .kind = CONFIG_KIND_LIST, .choices = targets, .commands = FOR_DOCTOR,
     SCALAR(targets), .group = CONFIG_GROUP_DOCTOR, .also = "relying-party rp",
     .help = "Also check the documented rules of this relying party (docs/doctor.md); repeatable"},

    /* General */
    {.name = "config", .arg = "FILE", .kind = CONFIG_KIND_ACTION, .commands = CONFIG_FOR_EVERY, NO_FIELD,
     .group = CONFIG_GROUP_GENERAL,
     .help = "JSON object keyed by the flag names; flags override it"},
    {.name = "log-level", .arg = "LEVEL", .kind = CONFIG_KIND_CHOICE, .flags = CONFIG_FILE_KEY, .choices = log_levels,
     .commands = FOR_LOGGING, .def = "info", SCALAR(log_level), .group = CONFIG_GROUP_GENERAL,
     .help = "Least severe message logged"},
    {.name = "log-format", .arg = "FORMAT", .kind = CONFIG_KIND_CHOICE, .flags = CONFIG_FILE_KEY,
     .choices = log_formats, .commands = FOR_LOGGING, .def = "text", SCALAR(log_format), .group = CONFIG_GROUP_GENERAL,
     .help = "Format of the log lines on standard error"},
    {.name = "help", .short_name = 'h', .kind = CONFIG_KIND_ACTION, .commands = CONFIG_FOR_EVERY, NO_FIELD,
     .group = CONFIG_GROUP_GENERAL,
     .help = "Print this help and exit"},
    {.name = "version", .kind = CONFIG_KIND_ACTION, .commands = CONFIG_FOR_EVERY, NO_FIELD,
     .group = CONFIG_GROUP_GENERAL,
     .help = "Print the version and exit"},
};
/* clang-format on */

const size_t config_option_count = sizeof config_options / sizeof config_options[0];

#define SERVING_GROUPS                                                                                                 \
    {                                                                                                                  \
        CONFIG_GROUP_DOCUMENTS, CONFIG_GROUP_ROTATION, CONFIG_GROUP_SIGNER, CONFIG_GROUP_SERVING, CONFIG_GROUP_LIMITS, \
            CONFIG_GROUP_REVIEW, CONFIG_GROUP_PUBLISH, CONFIG_GROUP_GENERAL, CONFIG_GROUP_COUNT                        \
    }

const struct config_command_info config_commands[CONFIG_COMMAND_COUNT] = {
    [CONFIG_CMD_SERVE] = {"serve", "Serve the discovery document and JWKS (the default command)", NULL, SERVING_GROUPS},
    [CONFIG_CMD_DEV] = {"dev", "Serve a development key pair, generated into dev-keys/ when missing, over plain http",
                        NULL, SERVING_GROUPS},
    [CONFIG_CMD_KEYS] = {"keys",
                         "Print the key set that would be published (kid, alg, size, source, first seen, retained "
                         "until); needs no issuer, and takes serve's flags so that serve's command line can be "
                         "checked",
                         NULL,
                         {CONFIG_GROUP_KEYS, CONFIG_GROUP_DOCUMENTS, CONFIG_GROUP_TOKEN, CONFIG_GROUP_ROTATION,
                          CONFIG_GROUP_SIGNER, CONFIG_GROUP_GENERAL, CONFIG_GROUP_SERVING, CONFIG_GROUP_REVIEW,
                          CONFIG_GROUP_PUBLISH, CONFIG_GROUP_COUNT}},
    [CONFIG_CMD_VERIFY] = {"verify",
                           "Verify one token and print a TokenReview-style result",
                           "--service-account-issuer is required unless --discovery-url is given. verify checks "
                           "the token's signature and claims only, not whether the service account, pod, secret or "
                           "node it is bound to still exists: a token of a deleted pod verifies until it expires "
                           "(serve's TokenReview with --token-review-check-bound-objects refuses it).",
                           {CONFIG_GROUP_VERIFY, CONFIG_GROUP_REVIEW, CONFIG_GROUP_DOCUMENTS, CONFIG_GROUP_GENERAL,
                            CONFIG_GROUP_COUNT}},
    [CONFIG_CMD_TOKEN] = {"token",
                          "Mint a Kubernetes-shaped service-account token, for tests and demos",
                          NULL,
                          {CONFIG_GROUP_TOKEN, CONFIG_GROUP_ROTATION, CONFIG_GROUP_DOCUMENTS, CONFIG_GROUP_GENERAL,
                           CONFIG_GROUP_COUNT}},
    [CONFIG_CMD_EXPORT] = {"export",
                           "Write the documents serve would serve into --out DIR, for a bucket, and print the "
                           "headers to upload each with",
                           NULL,
                           {CONFIG_GROUP_EXPORT, CONFIG_GROUP_DOCUMENTS, CONFIG_GROUP_TOKEN, CONFIG_GROUP_ROTATION,
                            CONFIG_GROUP_SIGNER, CONFIG_GROUP_GENERAL, CONFIG_GROUP_COUNT}},
    [CONFIG_CMD_PUBLISH] = {"publish",
                            "Push the documents serve would serve to object storage once (S3, GCS, Azure Blob), with "
                            "serve's headers, checked by reading them back",
                            NULL,
                            {CONFIG_GROUP_PUBLISH, CONFIG_GROUP_DOCUMENTS, CONFIG_GROUP_ROTATION, CONFIG_GROUP_SIGNER,
                             CONFIG_GROUP_GENERAL, CONFIG_GROUP_COUNT}},
    [CONFIG_CMD_DOCTOR] = {"doctor",
                           "Check an issuer as relying parties do: discovery, JWKS, TLS, a token, and with --target "
                           "the rules of AWS, GCP, Azure or Vault; prints PASS, WARN or FAIL per check",
                           "Exit status: 0 without FAIL, 1 with a FAIL, 2 for usage errors.",
                           {CONFIG_GROUP_TOKEN, CONFIG_GROUP_DOCTOR, CONFIG_GROUP_VERIFY, CONFIG_GROUP_KEYS,
                            CONFIG_GROUP_DOCUMENTS, CONFIG_GROUP_GENERAL, CONFIG_GROUP_COUNT}},
};

const char *const config_group_titles[CONFIG_GROUP_COUNT] = {
    [CONFIG_GROUP_DOCUMENTS] = "Keys and published documents",
    [CONFIG_GROUP_ROTATION] = "Key rotation and the signing key",
    [CONFIG_GROUP_SIGNER] = "Signing for kube-apiserver (external signer, KEP-740)",
    [CONFIG_GROUP_SERVING] = "Listeners",
    [CONFIG_GROUP_LIMITS] = "Limits and timeouts",
    [CONFIG_GROUP_REVIEW] = "Token verification",
    [CONFIG_GROUP_VERIFY] = "The token to verify",
    [CONFIG_GROUP_TOKEN] = "Issuer and claims",
    [CONFIG_GROUP_EXPORT] = "Where to export",
    [CONFIG_GROUP_PUBLISH] = "Publishing to object storage",
    [CONFIG_GROUP_KEYS] = "What to print",
    [CONFIG_GROUP_DOCTOR] = "What to check",
    [CONFIG_GROUP_GENERAL] = "General",
};

const struct config_option *config_option_named(const char *name, size_t len)
{
    for (size_t i = 0; i < config_option_count; i++)
        if (strlen(config_options[i].name) == len && memcmp(config_options[i].name, name, len) == 0)
            return &config_options[i];
    return NULL;
}

const struct config_option *config_option(const char *name)
{
    const struct config_option *o = config_option_named(name, strlen(name));

    if (!o)
        abort();
    return o;
}

/* Names longer than this are not compared letter by letter. */
#define NEAR_NAME_MAX 64

/* The Levenshtein distance of a[0..alen) and b (at most NEAR_NAME_MAX
 * bytes each), with one row of the table at a time. */
static size_t edit_distance(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b), row[NEAR_NAME_MAX + 1];

    for (size_t j = 0; j <= blen; j++)
        row[j] = j;
    for (size_t i = 1; i <= alen; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= blen; j++) {
            size_t above = row[j], best = diagonal + (a[i - 1] != b[j - 1]);
            best = above + 1 < best ? above + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            diagonal = above;
            row[j] = best;
        }
    }
    return row[blen];
}

/* Whether row o lists name[0..len) among the names people try for it. */
static int tried_for(const struct config_option *o, const char *name, size_t len)
{
    for (const char *w = o->also; w && *w; w += strspn(w, " ")) {
        size_t n = strcspn(w, " ");
        if (n == len && memcmp(w, name, len) == 0)
            return 1;
        w += n;
    }
    return 0;
}

/* How far name[0..len) is from row o's name, lower is nearer: 0 when the
 * row lists it, 1 when it is the row's last words (key-file of
 * service-account-key-file), 2 when it is the row's first words, else 3
 * plus the edit distance. */
static size_t distance(const struct config_option *o, const char *name, size_t len)
{
    size_t n = strlen(o->name);

    if (tried_for(o, name, len))
        return 0;
    if (n > len && o->name[n - len - 1] == '-' && memcmp(o->name + n - len, name, len) == 0)
        return 1;
    if (n > len && o->name[len] == '-' && memcmp(o->name, name, len) == 0)
        return 2;
    return 3 + edit_distance(name, len, o->name);
}

const struct config_option *config_option_nearest(const char *name, size_t len, unsigned commands, int file_keys,
                                                  int typos)
{
    const struct config_option *best = NULL;
    size_t best_distance = (size_t)-1, ties = 0;

    if (len == 0 || len > NEAR_NAME_MAX)
        return NULL;
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        size_t d;
        if (!(o->commands & commands) || (file_keys && !(o->flags & CONFIG_FILE_KEY)))
            continue;
        d = distance(o, name, len);
        ties = d == best_distance ? ties + 1 : d < best_distance ? 0 : ties;
        if (d < best_distance) {
            best = o;
            best_distance = d;
        }
    }
    /* last words may fit several rows (the first in the table is meant);
     * first words must fit one; typos are up to three edits, at most one
     * in three letters */
    if (best_distance == 2 && ties > 0)
        return NULL;
    if (best_distance >= 3 && (!typos || best_distance > 6 || (best_distance - 3) * 3 > len))
        return NULL;
    return best;
}

const char *config_command_nearest(const char *name, const char *extra)
{
    size_t len = strlen(name), d, best_distance = 3;
    const char *best = NULL;
    int ties = 0;

    if (len == 0 || len > NEAR_NAME_MAX)
        return NULL;
    for (int i = 0; i <= CONFIG_COMMAND_COUNT; i++) {
        const char *c = i < CONFIG_COMMAND_COUNT ? config_commands[i].name : extra;
        d = edit_distance(name, len, c);
        ties = d == best_distance ? ties + 1 : d < best_distance ? 0 : ties;
        if (d < best_distance) {
            best = c;
            best_distance = d;
        }
    }
    return best != NULL && ties == 0 && best_distance * 3 <= len ? best : NULL;
}

const struct config_option *config_option_next(const char **at)
{
    const char *w = *at + strspn(*at, " ");
    size_t n = strcspn(w, " ");

    *at = w + n;
    return n ? config_option_named(w, n) : NULL;
}

void config_option_names(const char *names, char *out, size_t len)
{
    const struct config_option *r;
    size_t count = 0, i = 0, n = 0;

    for (const char *at = names; config_option_next(&at);)
        count++;
    out[0] = '\0';
    for (const char *at = names; (r = config_option_next(&at)) != NULL && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s--%s", i == 0 ? "" : i + 1 == count ? " and " : ", ", r->name);
}

size_t config_option_index(const struct config_option *o)
{
    return (size_t)(o - config_options);
}

/* "must be one of a, b, c": what is wrong with a value not among row o's
 * choices. */
static void choices_problem(const struct config_option *o, char out[CONFIG_PROBLEM_MAX])
{
    size_t n = (size_t)snprintf(out, CONFIG_PROBLEM_MAX, "must be one of");

    for (const char *const *c = o->choices; *c && n < CONFIG_PROBLEM_MAX; c++)
        n += (size_t)snprintf(out + n, CONFIG_PROBLEM_MAX - n, "%s %s", c == o->choices ? "" : ",", *c);
}

void config_option_problem(const struct config_option *o, char out[CONFIG_PROBLEM_MAX])
{
    char lo[32], hi[32];

    switch (o->kind) {
    case CONFIG_KIND_UINT:
        snprintf(out, CONFIG_PROBLEM_MAX, "must be an integer between %lu and %lu", o->min, o->max);
        return;
    case CONFIG_KIND_DURATION:
        config_format_duration(o->min, lo, sizeof lo);
        config_format_duration(o->max, hi, sizeof hi);
        snprintf(out, CONFIG_PROBLEM_MAX,
                 "must be a duration between %s and %s (like 90s, 15m, 24h, 7d or plain seconds)", lo, hi);
        return;
    case CONFIG_KIND_CHOICE:
        choices_problem(o, out);
        return;
    case CONFIG_KIND_BOOL:
        snprintf(out, CONFIG_PROBLEM_MAX, "must be true or false");
        return;
    case CONFIG_KIND_LIST:
    case CONFIG_KIND_COMMAS:
    case CONFIG_KIND_LISTEN:
        snprintf(out, CONFIG_PROBLEM_MAX, "must be a string or an array of strings");
        return;
    default:
        snprintf(out, CONFIG_PROBLEM_MAX, "must be a string");
        return;
    }
}

/* Whether value is one of the NULL-terminated choices, as spelled there. */
static int is_choice(const char *const *choices, const char *value)
{
    for (; *choices; choices++)
        if (strcmp(value, *choices) == 0)
            return 1;
    return 0;
}

/* Reads a number of a UINT or DURATION row within its range. */
static int read_number(const struct config_option *o, const char *value, unsigned long *out)
{
    if (o->kind == CONFIG_KIND_DURATION) {
        if (config_parse_duration(value, out) < 0)
            return -1;
    } else if (config_parse_decimal(value, strlen(value), o->max, out) < 0) {
        return -1;
    }
    return *out < o->min || *out > o->max ? -1 : 0;
}

const char *config_option_check(const struct config_option *o, const char *value, int allow_http,
                                char problem[CONFIG_PROBLEM_MAX])
{
    static const char *const bools[] = {"true", "false", NULL};
    unsigned long n;
    int bad;

    switch (o->kind) {
    case CONFIG_KIND_UINT:
    case CONFIG_KIND_DURATION:
        bad = read_number(o, value, &n) < 0;
        break;
    case CONFIG_KIND_CHOICE:
        bad = !is_choice(o->choices, value);
        break;
    case CONFIG_KIND_BOOL:
        bad = !is_choice(bools, value);
        break;
    case CONFIG_KIND_LISTEN:
        if ((o->flags & CONFIG_NONE_OK) && strcmp(value, "none") == 0)
            return NULL;
        return config_check_listen(value, (o->flags & CONFIG_UNIX_OK) != 0, problem);
    default:
        if (o->choices != NULL) { /* a repeatable choice */
            if (is_choice(o->choices, value))
                return NULL;
            choices_problem(o, problem);
            return problem;
        }
        if (o->check)
            return o->check(value, allow_http);
        return *value ? NULL : "must not be empty";
    }
    if (!bad)
        return NULL;
    config_option_problem(o, problem);
    return problem;
}

unsigned long config_option_number(const struct config_option *o, const char *value)
{
    unsigned long n = 0;

    read_number(o, value, &n);
    return n;
}
