/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checks: the value checks of config/, one function per form of value: a
 * decimal integer, a duration, a URL, a listen address, a path prefix, a
 * media type, a DNS name, a comma-separated list. They know nothing of
 * flags: each returns NULL for a good value or a static string saying what
 * is wrong ("has no host"), which the caller puts after the flag or key.
 */
#ifndef OIDC_CONFIG_CHECKS_H
#define OIDC_CONFIG_CHECKS_H

#include <stddef.h>

#define CONFIG_MINUTE 60UL
#define CONFIG_HOUR   (60 * CONFIG_MINUTE)
#define CONFIG_DAY    (24 * CONFIG_HOUR)
/* The longest duration anything takes: 100 years, which fits even a
 * 32-bit unsigned long. */
#define CONFIG_DURATION_MAX (36500 * CONFIG_DAY)

/* Room for a problem a check writes rather than returns (it names a
 * value, like the suggested listen address of check_listen). */
#define CONFIG_PROBLEM_MAX 192

/* Reads the decimal integer s[0..len), at most max: digits only, so no
 * sign, blank, hex prefix or trailing garbage gets through as with
 * strtoul. Returns 0 with the number in *out, or -1. */
int config_parse_decimal(const char *s, size_t len, unsigned long max, unsigned long *out);

/* Parses a duration: "90s", "15m", "24h", "7d" or plain seconds ("300"),
 * at most CONFIG_DURATION_MAX. Returns 0 and the seconds in *out, or -1
 * (*out untouched). */
int config_parse_duration(const char *s, unsigned long *out);

/* Writes seconds the way help and messages show a duration: in the largest
 * unit that divides it ("1d", "5m", "90s"), "0" for zero. */
void config_format_duration(unsigned long seconds, char *out, size_t len);

/* Validates an issuer or jwks URL: https (or http when allow_http), a host,
 * no query, no fragment, no characters outside RFC 3986. */
const char *config_check_url(const char *url, int allow_http);

/* --upstream: "in-cluster", or an https URL (whatever allow_http says:
 * a bearer token goes there) without query or fragment, to which the
 * paths of the two documents are appended. */
const char *config_check_upstream(const char *v, int allow_http);

/* An http or https URL with a host, in RFC 3986 characters: what doctor
 * can be pointed at (a query, a fragment or http are its findings, not
 * errors of the command line). */
const char *config_check_web_url(const char *url);

/* The parts of HOST:PORT, pointing into the value. */
struct config_hostport {
    const char *host;
    size_t hostlen;
    unsigned long port;
};

/* True when a listen value names a Unix socket ("unix:" and a path). */
int config_is_unix_listen(const char *s);

/* Splits a listen value HOST:PORT (IPv6 as [ADDRESS]:PORT; port 0 asks the
 * kernel for a free port) into *hp. On a problem that a changed value
 * would fix, problem[] says which (":8080" has no host: "0.0.0.0:8080");
 * the return value points to problem then, or to a static string. */
const char *config_split_listen(const char *s, struct config_hostport *hp, char problem[CONFIG_PROBLEM_MAX]);

/* Checks a listen value: HOST:PORT, or with unix_ok "unix:" and an
 * absolute path that fits sun_path. Written as config_split_listen. */
const char *config_check_listen(const char *v, int unix_ok, char problem[CONFIG_PROBLEM_MAX]);

/* A Unix socket listen value, "unix:" and an absolute path that fits
 * sun_path: what kube-apiserver can dial as its signing endpoint. */
const char *config_check_unix_socket(const char *v);

/* A socket owner: USER, USER:GROUP or :GROUP, by name or number. */
const char *config_check_owner(const char *v);

/* A --path-prefix: a non-empty absolute path without a trailing slash. */
const char *config_check_path_prefix(const char *v);

/* A Content-Type we will send verbatim. */
const char *config_check_media_type(const char *v);

/* A namespace or service account name, as Kubernetes takes them. */
const char *config_check_dns_name(const char *v);

/* A TokenReview caller (--token-review-allowed-callers): a service
 * account's username, system:serviceaccount:NAMESPACE:NAME, or a
 * certificate subject in RFC 4514 form (any value with '='). */
const char *config_check_caller(const char *v);

/* A comma-separated list of audiences: none empty. */
const char *config_check_audiences(const char *v);

/* --etcd-servers: comma-separated http(s)://HOST:PORT, no path. */
const char *config_check_etcd_servers(const char *v);

/* --etcd-prefix: starts and ends with '/', printable ASCII. */
const char *config_check_etcd_prefix(const char *v);

/* A comma-separated list of Host header values: host or host:port. */
const char *config_check_hosts(const char *v);

/* Calls item(ctx, s, len) for each item of the comma-separated list v, in
 * order, until one returns non-zero, which is then returned; else 0. */
int config_each_item(const char *v, int (*item)(void *ctx, const char *s, size_t len), void *ctx);

#endif
