/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/verify_command.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keys/jwks_parse.h"
#include "jose/jwt.h"
#include "jose/token_file.h"
#include "keys/keyset.h"
#include "jose/review.h"
#include "jose/token.h"
#include "util/http_client.h"
#include "util/log.h"
#include "jose/tokenreview.h"
#include "util/paths.h"

#define VERIFY_MAX_DOCUMENT (1024 * 1024)

/* Verifications --repeat remembers: it repeats one token. */
#define VERIFY_CACHE_SIZE 16

/* What verification needs besides the token: the keys and the issuers. */
struct verify_input {
    struct keyset *keys;
    char *discovered_issuer; /* from --discovery-url, owned */
};

/* The discovery document's URL and the issuer it must name: the given URL
 * is the issuer itself, or already ends in /.well-known/openid-configuration. */
static void verify_discovery_urls(const char *given, char *doc_url, size_t doc_len, char *issuer, size_t iss_len)
{
    size_t n = strlen(given), suffix = strlen(PATHS_DISCOVERY);

    if (n >= suffix && strcmp(given + n - suffix, PATHS_DISCOVERY) == 0) {
        snprintf(doc_url, doc_len, "%s", given);
        snprintf(issuer, iss_len, "%.*s", (int)(n - suffix), given);
        return;
    }
    snprintf(issuer, iss_len, "%s", given);
    while (n > 0 && given[n - 1] == '/')
        n--;
    snprintf(doc_url, doc_len, "%.*s%s", (int)n, given, PATHS_DISCOVERY);
}

static void verify_log_warning(void *ctx, const char *msg)
{
    (void)ctx;
    log_msg(LOG_WARN, "%s", msg);
}

/* GETs a discovery document or JWKS the way a relying party does: https
 * unless --allow-insecure-issuer, --ca-file or the system store, status
 * 200 only (a redirect is an error, as for AWS STS). Returns 0 with the
 * response (the caller frees it), or -1 with a message naming the URL. */
static int verify_fetch(const struct config *cfg, const char *url, struct http_response *res, char *err, size_t errlen)
{
    static const char *const headers[] = {"Accept: application/json", NULL};
    const struct http_request req = {
        .url = url,
        .allow_http = cfg->allow_insecure_issuer,
        .ca_file = cfg->ca_file,
        .headers = headers,
        .max_body = VERIFY_MAX_DOCUMENT,
    };

    if (http_client_fetch(&req, res, err, errlen) != HTTP_CLIENT_OK)
        return -1;
    if (res->status != 200)
        return http_client_status_error(&req, res, err, errlen);
    return 0;
}

/* Fetches the discovery document, checks that it names the expected issuer
 * (relying parties compare byte for byte), then fetches and parses its
 * jwks_uri. Returns 0 or -1 with a message. */
static int verify_discover(const struct config *cfg, struct verify_input *in, char *err, size_t errlen)
{
    char doc_url[4096], issuer[4096], why[256];
    const char *expected = cfg->issuers.count ? cfg->issuers.items[0] : issuer;
    struct http_response doc = {0}, jwks = {0};
    struct json_value *root = NULL;
    const struct json_value *iss, *uri;
    int rc = -1;

    verify_discovery_urls(cfg->discovery_url, doc_url, sizeof(doc_url), issuer, sizeof(issuer));
    if (verify_fetch(cfg, doc_url, &doc, err, errlen) != 0)
        goto out;
    if ((root = json_parse((const unsigned char *)doc.body, doc.body_len, why, sizeof(why))) == NULL) {
        snprintf(err, errlen, "%.300s: %s", doc_url, why);
        goto out;
    }
    iss = json_get(root, "issuer");
    uri = json_get(root, "jwks_uri");
    if (iss == NULL || iss->type != JSON_STRING || uri == NULL || uri->type != JSON_STRING) {
        snprintf(err, errlen, "%.300s: no issuer or jwks_uri string", doc_url);
    } else if (strcmp(iss->str, expected) != 0) {
        snprintf(err, errlen, "%.300s: issuer \"%.300s\" is not the expected \"%.300s\"", doc_url, iss->str, expected);
    } else if (verify_fetch(cfg, uri->str, &jwks, err, errlen) == 0 &&
               (in->keys = jwks_parse(jwks.body, jwks.body_len, verify_log_warning, NULL, err, errlen)) != NULL) {
        in->discovered_issuer = strdup(iss->str);
        rc = in->discovered_issuer ? 0 : -1;
    }
out:
    json_free(root);
    http_response_free(&doc);
    http_response_free(&jwks);
    return rc;
}

static int verify_load(const struct config *cfg, struct verify_input *in)
{
    char err[1024];

    memset(in, 0, sizeof(*in));
    if (cfg->discovery_url != NULL ? verify_discover(cfg, in, err, sizeof(err)) == 0
                                   : (in->keys = keyset_load(cfg->key_files.items, cfg->key_files.count,
                                                             verify_log_warning, NULL, err, sizeof(err))) != NULL)
        return 0;
    fprintf(stderr, "oidc-discovery verify: %s\n", err);
    return -1;
}

/* Runs the review cfg->repeat times, through its cache unless --no-cache,
 * and reports the rate. */
static void verify_repeat(const struct config *cfg, struct review *rv, const struct verifier *v, const char *token,
                          size_t len)
{
    struct timespec start, end;
    struct review_result res;
    time_t now = time(NULL);
    double secs;

    clock_gettime(CLOCK_MONOTONIC, &start);
    for (unsigned long i = 0; i < cfg->repeat; i++) {
        review_token(rv, v, token, len, NULL, 0, now, &res);
        review_result_clear(&res);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    secs = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%lu verifications in %.3f s: %.0f verifications/s%s\n", cfg->repeat, secs,
           secs > 0 ? (double)cfg->repeat / secs : 0.0, rv->cache ? " (cached)" : " (uncached)");
}

/* The TokenReview JSON of the result on stdout, and the reason on stderr
 * when the token is invalid. */
static void verify_report(const char *token, const struct review_result *res)
{
    struct tokenreview_request review = {.token = (char *)token};
    size_t len;
    char *out = tokenreview_render(&review, res->user, res->token.message, &len);

    if (out != NULL)
        printf("%s\n", out);
    if (res->user == NULL)
        fprintf(stderr, "oidc-discovery verify: invalid token (%s): %s\n", token_error_name(res->token.error),
                res->token.message);
    free(out);
}

int verify_command(const struct config *cfg)
{
    struct verify_input in;
    struct verifier *v = NULL;
    struct review rv = {0};
    struct review_result res;
    size_t len = 0;
    char err[1024], *token = token_file_read(cfg->token_file, cfg->max_token_size, &len, err, sizeof(err));
    int rc = 2;

    if (token == NULL)
        fprintf(stderr, "oidc-discovery verify: %s\n", err);
    if (token == NULL || verify_load(cfg, &in) != 0) {
        free(token);
        return 2;
    }
    if ((v = verifier_new(in.keys)) == NULL ||
        review_init(&rv, cfg, &in.discovered_issuer, cfg->repeat > 1 && !cfg->no_cache ? VERIFY_CACHE_SIZE : 0) != 0) {
        fprintf(stderr, "oidc-discovery verify: out of memory\n");
        goto out;
    }
    if (cfg->repeat > 1)
        verify_repeat(cfg, &rv, v, token, len);
    rc = review_token(&rv, v, token, len, NULL, 0, time(NULL), &res) == 0 ? 0 : 1;
    verify_report(token, &res);
    review_result_clear(&res);
out:
    review_clear(&rv);
    verifier_free(v);
    keyset_free(in.keys);
    free(in.discovered_issuer);
    free(token);
    return rc;
}
