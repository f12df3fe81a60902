/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keys/jwks_parse.h"
#include "util/http_client.h"
#include "util/json.h"
#include "util/printable.h"

/* kube-apiserver's paths of the two documents (docs/compatibility.md §1),
 * appended to the base URL. */
#define UPSTREAM_DISCOVERY_PATH "/.well-known/openid-configuration"
#define UPSTREAM_JWKS_PATH      "/openid/v1/jwks"

/* An ETag longer than this, or not printable, is not sent back. */
#define UPSTREAM_ETAG_MAX 256

/* How much of an issuer a message quotes (printable_quote). */
#define UPSTREAM_ISSUER_SHOWN 600

static const char *const upstream_names[UPSTREAM_NRESULTS] = {
    "ok",      "not_modified", "request", "connect",   "tls",
    "timeout", "unauthorized", "status",  "malformed", "issuer_mismatch",
};

const char *upstream_result_name(enum upstream_result r)
{
    return (size_t)r < UPSTREAM_NRESULTS ? upstream_names[r] : "unknown";
}

void upstream_init(struct upstream *u, const char *base_url, const char *ca_file, const char *token_file,
                   const char *issuer, long timeout_ms)
{
    memset(u, 0, sizeof(*u));
    u->base_url = base_url;
    u->ca_file = ca_file;
    u->token_file = token_file;
    u->issuer = issuer;
    u->timeout_ms = timeout_ms;
}

/* The max-age of a Cache-Control value (directives compared without
 * case, s-maxage and others ignored), or -1 when there is none. */
static long upstream_max_age(const char *cache_control)
{
    const char *p = cache_control;

    while (p != NULL && *p != '\0') {
        p += strspn(p, " \t,");
        if (strncasecmp(p, "max-age", 7) == 0 && p[7 + strspn(p + 7, " \t")] == '=') {
            const char *v = p + 7 + strspn(p + 7, " \t") + 1;
            char *end;
            long n;
            v += strspn(v, " \t\"");
            n = strtol(v, &end, 10);
            if (end != v && n >= 0)
                return n;
        }
        p = strchr(p, ',');
    }
    return -1;
}

/* Takes the smaller max-age of res into out. */
static void upstream_note_max_age(const struct http_response *res, struct upstream_read *out)
{
    long age = upstream_max_age(http_response_header(res, "Cache-Control"));

    if (age >= 0 && (out->max_age < 0 || age < out->max_age))
        out->max_age = age;
}

static enum upstream_result upstream_transport_result(enum http_client_error e)
{
    switch (e) {
    case HTTP_CLIENT_ERR_REQUEST:
        return UPSTREAM_ERR_REQUEST;
    case HTTP_CLIENT_ERR_CONNECT:
        return UPSTREAM_ERR_CONNECT;
    case HTTP_CLIENT_ERR_TLS:
    case HTTP_CLIENT_ERR_TLS_VERIFY:
        return UPSTREAM_ERR_TLS;
    case HTTP_CLIENT_ERR_TIMEOUT:
        return UPSTREAM_ERR_TIMEOUT;
    default:
        return UPSTREAM_ERR_MALFORMED; /* over a cap, cut short, content-coded */
    }
}

/* One GET of the base URL plus path, conditional on last's ETag. Returns
 * UPSTREAM_OK with *modified 1 for a 200 (the body is res's) or 0 for a
 * 304 (last's body stands), or the error with out->message. */
static enum upstream_result upstream_get(const struct upstream *u, const char *path, const char *accept, size_t max,
                                         const struct upstream_doc *last, struct http_response *res, int *modified,
                                         struct upstream_read *out)
{
    char url[4096], condition[UPSTREAM_ETAG_MAX + 32];
    const char *headers[] = {accept, last->etag ? condition : NULL, NULL};
    size_t n = strlen(u->base_url);
    const struct http_request req = {
        .url = url,
        .ca_file = u->ca_file,
        .headers = headers,
        .bearer_file = u->token_file,
        .max_body = max,
        .timeout_ms = u->timeout_ms,
        .connect_timeout_ms = u->timeout_ms,
    };
    enum http_client_error e;

    while (n > 0 && u->base_url[n - 1] == '/')
        n--;
    snprintf(url, sizeof(url), "%.*s%s", (int)n, u->base_url, path);
    snprintf(condition, sizeof(condition), "If-None-Match: %s", last->etag ? last->etag : "");
    if ((e = http_client_fetch(&req, res, out->message, sizeof(out->message))) != HTTP_CLIENT_OK)
        return upstream_transport_result(e);
    upstream_note_max_age(res, out);
    *modified = res->status == 200;
    if (res->status == 200 || (res->status == 304 && last->body != NULL))
        return UPSTREAM_OK;
    http_client_status_error(&req, res, out->message, sizeof(out->message));
    return res->status == 401 || res->status == 403 ? UPSTREAM_ERR_UNAUTHORIZED : UPSTREAM_ERR_STATUS;
}

/* The issuer of a discovery document: a JSON object with a string member
 * "issuer" (copied into a new string, *issuer). 0, or -1 with the reason
 * in err. */
static int upstream_discovery_issuer(const char *body, size_t len, char **issuer, char *err, size_t errlen)
{
    char why[256];
    struct json_value *root = json_parse((const unsigned char *)body, len, why, sizeof(why));
    const struct json_value *iss = json_get(root, "issuer");

    *issuer = NULL;
    if (root == NULL)
        snprintf(err, errlen, "not a discovery document: %s", why);
    else if (iss == NULL || iss->type != JSON_STRING)
        snprintf(err, errlen, "not a discovery document: no \"issuer\" string");
    else if ((*issuer = strdup(iss->str)) == NULL)
        snprintf(err, errlen, "out of memory");
    json_free(root);
    return *issuer != NULL ? 0 : -1;
}

/* Checks that the discovery document names the expected issuer. */
static enum upstream_result upstream_check_issuer(const struct upstream *u, const char *body, size_t len,
                                                  struct upstream_read *out)
{
    char why[300], got[UPSTREAM_ISSUER_SHOWN], want[UPSTREAM_ISSUER_SHOWN], *issuer;

    if (upstream_discovery_issuer(body, len, &issuer, why, sizeof(why)) != 0) {
        snprintf(out->message, sizeof(out->message), "%s" UPSTREAM_DISCOVERY_PATH ": %s", u->base_url, why);
        return UPSTREAM_ERR_MALFORMED;
    }
    if (strcmp(issuer, u->issuer) == 0) {
        free(issuer);
        return UPSTREAM_OK;
    }
    snprintf(out->message, sizeof(out->message),
             "%s" UPSTREAM_DISCOVERY_PATH ": its issuer %s is not --service-account-issuer %s (compared byte for "
             "byte); nothing from this upstream is published while they differ",
             u->base_url, printable_quote(issuer, got, sizeof(got)), printable_quote(u->issuer, want, sizeof(want)));
    out->issuer = issuer;
    return UPSTREAM_ERR_ISSUER;
}

/* Names every key of ks after the upstream: "upstream URL (keys[N])". */
static int upstream_name_keys(const struct upstream *u, struct keyset *ks)
{
    for (size_t i = 0; i < ks->count; i++) {
        struct key *k = &ks->keys[i];
        size_t len = strlen(u->base_url) + strlen(k->source) + 32;
        char *source = malloc(len);
        if (source == NULL)
            return -1;
        snprintf(source, len, "upstream %s (%s)", u->base_url, k->source);
        free(k->source);
        k->source = source;
    }
    return 0;
}

/* Reads a JWKS that answered 200: a new set unless it is the bytes of the
 * last good one. */
static enum upstream_result upstream_read_jwks(const struct upstream *u, const struct http_response *res,
                                               struct upstream_read *out)
{
    char why[512];

    if (u->jwks.body != NULL && res->body_len == u->jwks.len && memcmp(res->body, u->jwks.body, res->body_len) == 0)
        return UPSTREAM_OK;
    if ((out->keys = jwks_parse(res->body, res->body_len, u->warn, u->warn_ctx, why, sizeof(why))) == NULL) {
        snprintf(out->message, sizeof(out->message), "%s" UPSTREAM_JWKS_PATH ": %s", u->base_url, why);
        return UPSTREAM_ERR_MALFORMED;
    }
    if (upstream_name_keys(u, out->keys) != 0) {
        snprintf(out->message, sizeof(out->message), "out of memory");
        return UPSTREAM_ERR_MALFORMED;
    }
    return UPSTREAM_OK;
}

/* An ETag worth sending back: printable ASCII, not too long. */
static char *upstream_etag(const struct http_response *res)
{
    const char *etag = http_response_header(res, "ETag");
    size_t n = etag ? strlen(etag) : 0;

    if (n == 0 || n > UPSTREAM_ETAG_MAX)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (etag[i] < 0x21 || etag[i] > 0x7e)
            return NULL;
    return strdup(etag);
}

/* A 200 answer becomes doc, the last good one (its body taken from res). */
static void upstream_keep(struct upstream_doc *doc, struct http_response *res, int modified)
{
    if (!modified)
        return;
    free(doc->body);
    free(doc->etag);
    doc->body = res->body;
    doc->len = res->body_len;
    doc->etag = upstream_etag(res);
    res->body = NULL;
    res->body_len = 0;
}

void upstream_fetch(struct upstream *u, struct upstream_read *out)
{
    struct http_response disc = {0}, jwks = {0};
    int disc_new = 0, jwks_new = 0;
    enum upstream_result r;

    memset(out, 0, sizeof(*out));
    out->max_age = -1;
    r = upstream_get(u, UPSTREAM_DISCOVERY_PATH, "Accept: application/json", UPSTREAM_DISCOVERY_MAX, &u->discovery,
                     &disc, &disc_new, out);
    if (r == UPSTREAM_OK)
        r = disc_new ? upstream_check_issuer(u, disc.body, disc.body_len, out)
                     : upstream_check_issuer(u, u->discovery.body, u->discovery.len, out);
    if (r == UPSTREAM_OK)
        r = upstream_get(u, UPSTREAM_JWKS_PATH, "Accept: application/jwk-set+json, application/json", JWKS_MAX_LEN,
                         &u->jwks, &jwks, &jwks_new, out);
    if (r == UPSTREAM_OK && jwks_new)
        r = upstream_read_jwks(u, &jwks, out);
    if (r == UPSTREAM_OK) {
        upstream_keep(&u->discovery, &disc, disc_new);
        upstream_keep(&u->jwks, &jwks, jwks_new);
        r = disc_new || jwks_new ? UPSTREAM_OK : UPSTREAM_NOT_MODIFIED;
    } else {
        keyset_free(out->keys);
        out->keys = NULL;
    }
    out->result = r;
    http_response_free(&disc);
    http_response_free(&jwks);
}

void upstream_read_clear(struct upstream_read *r)
{
    keyset_free(r->keys);
    free(r->issuer);
    memset(r, 0, sizeof(*r));
}

static void upstream_doc_clear(struct upstream_doc *d)
{
    free(d->body);
    free(d->etag);
    memset(d, 0, sizeof(*d));
}

void upstream_clear(struct upstream *u)
{
    upstream_doc_clear(&u->discovery);
    upstream_doc_clear(&u->jwks);
}
