/* SPDX-License-Identifier: Apache-2.0 */
#include "diag/doctor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag/doc_checks.h"
#include "diag/jwks_checks.h"
#include "diag/token_checks.h"
#include "keys/jwks_parse.h"
#include "jose/token.h"
#include "util/paths.h"
#include "util/http_client.h"
#include "util/printable.h"
#include "util/redact.h"

/* The longest URL doctor builds. */
#define DOCTOR_URL_MAX 4096

/* What one run has learnt so far. */
struct doctor {
    const struct doctor_options *o;
    struct diag_report *r;
    struct rp_facts facts;
    struct json_value *discovery;
    struct http_response jwks_res;
    struct diag_jwks jwks;
    int have_jwks;
    struct diag_token token;
};

/* GETs url as relying parties do: http_client's policy, against ca_file
 * or the system store. */
static enum http_client_error doctor_fetch(const struct doctor *d, const char *url, const char *ca_file,
                                           const char *accept, struct http_response *res, char *err, size_t errlen)
{
    const char *headers[] = {accept, NULL};
    const struct http_request req = {
        .url = url,
        .allow_http = d->o->allow_http,
        .ca_file = ca_file,
        .headers = headers,
        .max_body = JWKS_MAX_LEN,
        .timeout_ms = d->o->timeout_ms,
    };

    return http_client_fetch(&req, res, err, errlen);
}

/* What to change when a fetch fails, by how it failed. */
static const char *fetch_fix(enum http_client_error e, const char *ca_file)
{
    switch (e) {
    case HTTP_CLIENT_ERR_CONNECT:
        return "make the URL reachable from where relying parties fetch it: the server running, the name in public "
               "DNS, the port open to the internet";
    case HTTP_CLIENT_ERR_TLS:
        return "serve TLS 1.2 or later with a certificate for this name";
    case HTTP_CLIENT_ERR_TLS_VERIFY:
        return ca_file ? "give --ca-file the CA that issued the server's certificate, and serve the whole chain "
                         "(intermediates included)"
                       : "serve a certificate chain from a public CA for this name, intermediates included (or "
                         "--ca-file to check a private CA)";
    case HTTP_CLIENT_ERR_TIMEOUT:
        return "make the server answer within seconds: relying parties time out too";
    default:
        return "serve the document oidc-discovery renders, as it is, at this URL";
    }
}

/* Fetches url and adds the check id: PASS with status 200, else FAIL
 * with what to change. Returns 0 when there is a 200 response in res. */
static int fetch_document(struct doctor *d, const char *id, const char *url, const char *accept,
                          struct http_response *res, enum http_client_error *e)
{
    char err[1024], redacted[DOCTOR_URL_MAX + 4], shown[DOCTOR_URL_MAX + 16];
    const char *ca_file = d->o->ca_file;
    struct diag_check *c;

    *e = doctor_fetch(d, url, ca_file, accept, res, err, sizeof(err));
    if (*e != HTTP_CLIENT_OK) {
        c = diag_add(d->r, DIAG_FAIL, id, "%s", err);
        diag_fix(d->r, c, "%s", fetch_fix(*e, ca_file));
        return -1;
    }
    printable_quote(redact_url(url, redacted, DOCTOR_URL_MAX), shown, sizeof(shown));
    if (res->status != 200) {
        c = diag_add(d->r, DIAG_FAIL, id, "GET %s: HTTP %d%s", shown, res->status,
                     res->status >= 300 && res->status < 400 ? " (relying parties do not follow redirects)" : "");
        diag_fix(d->r, c, "serve the document at exactly this URL, to anyone, without a redirect");
        return -1;
    }
    diag_add(d->r, DIAG_PASS, id, "GET %s: 200, %zu bytes%s%s", shown, res->body_len,
             strncmp(url, "https://", 8) != 0 ? " over plain http"
             : ca_file                        ? ", TLS verified against --ca-file "
                                              : ", TLS verified against the system's trust store",
             strncmp(url, "https://", 8) == 0 && ca_file ? ca_file : "");
    return 0;
}

/* "tls.public": whether the chain verifies against the system store,
 * which AWS (no thumbprint needed) and GCP (required) care about. With
 * --ca-file that takes a second request without it. */
static void check_public_trust(struct doctor *d, const char *url, enum http_client_error first)
{
    struct http_response res = {0};
    enum http_client_error e = first;
    char err[1024];
    struct diag_check *c;

    if (strncmp(url, "https://", 8) != 0)
        return;
    if (d->o->ca_file != NULL)
        e = doctor_fetch(d, url, NULL, "Accept: application/json", &res, err, sizeof(err));
    http_response_free(&res);
    if (e != HTTP_CLIENT_OK && e != HTTP_CLIENT_ERR_TLS_VERIFY)
        return; /* unknown: the fetch failed otherwise */
    d->facts.publicly_trusted = e == HTTP_CLIENT_OK;
    if (d->facts.publicly_trusted) {
        diag_add(d->r, DIAG_PASS, "tls.public", "the certificate chain verifies against the system's trust store");
        return;
    }
    c = diag_add(d->r, DIAG_WARN, "tls.public",
                 "the certificate chain does not verify against the system's trust store: GCP refuses it, AWS "
                 "needs its thumbprint registered, Vault needs the CA (oidc_discovery_ca_pem)");
    diag_fix(d->r, c, "for relying parties on the internet, use a certificate from a public CA");
}

/* The discovery document: fetched, its headers, its members. Returns the
 * jwks_uri to fetch (in d->discovery), or NULL. */
static const char *check_discovery(struct doctor *d)
{
    char url[DOCTOR_URL_MAX], why[128];
    size_t n = strlen(d->o->issuer);
    struct http_response res = {0};
    enum http_client_error e;
    const char *uri = NULL;
    struct diag_check *c;

    while (n > 0 && d->o->issuer[n - 1] == '/')
        n--;
    snprintf(url, sizeof(url), "%.*s%s", (int)n, d->o->issuer, PATHS_DISCOVERY);
    if (fetch_document(d, "discovery.fetch", url, "Accept: application/json", &res, &e) == 0) {
        check_public_trust(d, url, e);
        diag_doc_content_type(d->r, "discovery.content_type", http_response_header(&res, "Content-Type"), 0);
        diag_doc_cache_control(d->r, "discovery.cache_control", http_response_header(&res, "Cache-Control"));
        d->discovery = json_parse((const unsigned char *)res.body, res.body_len, why, sizeof(why));
        if (d->discovery == NULL) {
            c = diag_add(d->r, DIAG_FAIL, "discovery.json", "the document is not a JSON object: %s", why);
            diag_fix(d->r, c, "serve the discovery document oidc-discovery renders");
        } else {
            uri = diag_doc_discovery(d->r, d->o->issuer, d->discovery, d->o->allow_http);
            d->facts.discovered_issuer = json_get_str(d->discovery, "issuer");
        }
    } else if (e == HTTP_CLIENT_OK || e == HTTP_CLIENT_ERR_TLS_VERIFY) {
        check_public_trust(d, url, e);
    }
    http_response_free(&res);
    return uri;
}

/* The JWKS: fetched from jwks_uri, its headers, its keys. */
static void check_jwks(struct doctor *d, const char *uri)
{
    enum http_client_error e;

    if (fetch_document(d, "jwks.fetch", uri, "Accept: application/jwk-set+json, application/json", &d->jwks_res, &e) !=
        0)
        return;
    diag_doc_content_type(d->r, "jwks.content_type", http_response_header(&d->jwks_res, "Content-Type"), 1);
    diag_doc_cache_control(d->r, "jwks.cache_control", http_response_header(&d->jwks_res, "Cache-Control"));
    if (diag_jwks_check(d->r, d->jwks_res.body, d->jwks_res.body_len, &d->jwks) != 0)
        return;
    d->have_jwks = 1;
    d->facts.have_keys = 1;
    d->facts.keys = d->jwks.keys;
    d->facts.nkeys = d->jwks.count;
    diag_doc_algorithms(d->r, d->discovery, d->jwks.algs, d->jwks.count);
}

/* The token, against the JWKS when there is one. */
static void check_token(struct doctor *d)
{
    const struct diag_token_input in = {
        .issuer = d->o->issuer,
        .audiences = d->o->audiences,
        .naudiences = d->o->naudiences,
        .jwks = d->have_jwks ? &d->jwks : NULL,
        .jwks_body = d->jwks_res.body,
        .jwks_len = d->jwks_res.body_len,
        .now = d->o->now,
        .leeway = TOKEN_DEFAULT_LEEWAY,
    };

    if (diag_token_check(d->r, d->o->token, d->o->token_len, &in, &d->token) != 0)
        return;
    d->facts.token_iss = d->token.iss;
    d->facts.token_alg = d->token.alg;
    d->facts.token_len = d->o->token_len;
}

/* Turns a relying-party rule's outcome into a check. */
static void add_outcome(void *ctx, const struct rp_outcome *o)
{
    struct doctor *d = ctx;
    static const enum diag_status statuses[] = {
        [RP_MET] = DIAG_PASS, [RP_UNTESTED] = DIAG_WARN, [RP_REFUSED] = DIAG_FAIL};
    struct diag_check *c = diag_add(d->r, statuses[o->verdict], o->rule, "%s: %s", o->relying_party, o->what);

    if (c == NULL)
        return;
    c->source = o->source;
    if (o->verdict != RP_MET)
        diag_fix(d->r, c, "%s", o->fix);
}

void doctor_run(const struct doctor_options *o, struct diag_report *r)
{
    struct doctor d = {.o = o, .r = r, .facts = {.issuer = o->issuer, .publicly_trusted = -1}};
    const char *uri = NULL;

    if (diag_doc_issuer_url(r, o->issuer, o->allow_http) && (uri = check_discovery(&d)) != NULL)
        check_jwks(&d, uri);
    if (o->token != NULL)
        check_token(&d);
    for (enum rp_target t = 0; t < RP_TARGET_COUNT; t++)
        if (o->targets & (1u << t))
            rp_check(t, &d.facts, add_outcome, &d);
    diag_token_clear(&d.token);
    diag_jwks_clear(&d.jwks);
    http_response_free(&d.jwks_res);
    json_free(d.discovery);
}
