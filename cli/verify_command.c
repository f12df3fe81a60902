#include "cli/verify_command.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/fetch.h"
#include "jose/jwks_parse.h"
#include "jose/jwt.h"
#include "keys/keyset.h"
#include "jose/token.h"
#include "jose/vcache.h"
#include "util/log.h"
#include "jose/tokenreview.h"
#include "publish/paths.h"

#define VERIFY_MAX_DOCUMENT (1024 * 1024)

/* What verification needs besides the token: the keys and the issuers. */
struct verify_input {
    struct keyset *keys;
    char *discovered_issuer; /* from --discovery-url, owned */
};

/* Reads the token from path ("-": stdin), at most limit + 1 bytes so an
 * oversized token is still reported as too large, without the trailing
 * newline editors and `echo` add. */
static char *verify_read_token(const char *path, size_t limit, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    char *buf = f ? malloc(limit + 2) : NULL;

    if (buf != NULL) {
        *len = fread(buf, 1, limit + 1, f);
        while (*len > 0 && isspace((unsigned char)buf[*len - 1]))
            (*len)--;
        buf[*len] = '\0';
    }
    if (f == NULL || buf == NULL)
        fprintf(stderr, "oidc-discovery verify: --token-file %s: %s\n", path, strerror(errno));
    if (f != NULL && f != stdin)
        fclose(f);
    return buf;
}

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

/* Fetches the discovery document, checks that it names the expected issuer
 * (relying parties compare byte for byte), then fetches and parses its
 * jwks_uri. Returns 0 or -1 with a message. */
static int verify_discover(const struct config *cfg, struct verify_input *in, char *err, size_t errlen)
{
    char doc_url[4096], issuer[4096], *doc = NULL, *jwks = NULL;
    const char *expected = cfg->issuers.count ? cfg->issuers.items[0] : issuer;
    size_t doc_len, jwks_len;
    struct json_value *root = NULL;
    const struct json_value *iss, *uri;
    int rc = -1;

    verify_discovery_urls(cfg->discovery_url, doc_url, sizeof(doc_url), issuer, sizeof(issuer));
    if (fetch_url(doc_url, cfg->ca_file, cfg->allow_insecure_issuer, VERIFY_MAX_DOCUMENT, &doc, &doc_len, err,
                  errlen) != 0)
        return -1;
    if ((root = json_parse((const unsigned char *)doc, doc_len, err, errlen)) == NULL)
        goto out;
    iss = json_get(root, "issuer");
    uri = json_get(root, "jwks_uri");
    if (iss == NULL || iss->type != JSON_STRING || uri == NULL || uri->type != JSON_STRING) {
        snprintf(err, errlen, "%.300s: no issuer or jwks_uri string", doc_url);
    } else if (strcmp(iss->str, expected) != 0) {
        snprintf(err, errlen, "%.300s: issuer \"%.300s\" is not the expected \"%.300s\"", doc_url, iss->str, expected);
    } else if (fetch_url(uri->str, cfg->ca_file, cfg->allow_insecure_issuer, VERIFY_MAX_DOCUMENT, &jwks, &jwks_len, err,
                         errlen) == 0 &&
               (in->keys = jwks_parse(jwks, jwks_len, verify_log_warning, NULL, err, errlen)) != NULL) {
        in->discovered_issuer = strdup(iss->str);
        rc = in->discovered_issuer ? 0 : -1;
    }
out:
    json_free(root);
    free(doc);
    free(jwks);
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

static void verify_policy(const struct config *cfg, const struct verify_input *in, struct token_policy *p)
{
    memset(p, 0, sizeof(*p));
    p->issuers = cfg->issuers.count ? cfg->issuers.items : &in->discovered_issuer;
    p->nissuers = cfg->issuers.count ? cfg->issuers.count : 1;
    p->audiences = p->api_audiences = cfg->api_audiences.count ? cfg->api_audiences.items : p->issuers;
    p->naudiences = p->napi_audiences = cfg->api_audiences.count ? cfg->api_audiences.count : p->nissuers;
    p->algs = TOKEN_ALG_ALL;
    p->leeway = cfg->token_leeway;
    p->max_size = cfg->max_token_size;
    p->accept_legacy = cfg->accept_legacy_tokens;
    p->now = time(NULL);
}

/* One verification, through the cache when there is one: the path a
 * TokenReview takes. Returns 1 when valid. */
static int verify_once(struct vcache *cache, const struct keyset *ks, const struct token_policy *p, const char *token,
                       size_t len, struct token_result *res)
{
    if (cache != NULL && vcache_get(cache, ks->id, token, len, p->audiences, p->naudiences, p->now) != NULL)
        return 1;
    token_result_clear(res);
    if (token_verify(ks, p, token, len, res) != 0)
        return 0;
    if (cache != NULL)
        vcache_put(cache, ks->id, token, len, p->audiences, p->naudiences, &res->user);
    return 1;
}

/* Runs the verification cfg->repeat times and reports the rate. */
static void verify_repeat(const struct config *cfg, const struct keyset *ks, const struct token_policy *p,
                          const char *token, size_t len, struct token_result *res)
{
    struct vcache *cache = cfg->no_cache ? NULL : vcache_create(16);
    struct timespec start, end;
    double secs;

    clock_gettime(CLOCK_MONOTONIC, &start);
    for (unsigned long i = 0; i < cfg->repeat; i++)
        verify_once(cache, ks, p, token, len, res);
    clock_gettime(CLOCK_MONOTONIC, &end);
    secs = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%lu verifications in %.3f s: %.0f verifications/s%s\n", cfg->repeat, secs,
           secs > 0 ? (double)cfg->repeat / secs : 0.0, cache ? " (cached)" : " (uncached)");
    vcache_free(cache);
}

int verify_command(const struct config *cfg)
{
    struct verify_input in;
    struct token_policy policy;
    struct token_result res = {0};
    struct tokenreview_request review = {0};
    size_t len = 0, out_len;
    char *token = verify_read_token(cfg->token_file, cfg->max_token_size, &len), *out;
    int rc = 2;

    if (token == NULL || verify_load(cfg, &in) != 0) {
        free(token);
        return 2;
    }
    verify_policy(cfg, &in, &policy);
    if (cfg->repeat > 1)
        verify_repeat(cfg, in.keys, &policy, token, len, &res);
    rc = verify_once(NULL, in.keys, &policy, token, len, &res) ? 0 : 1;
    review.token = token;
    out = tokenreview_render(&review, rc == 0 ? &res.user : NULL, res.message, &out_len);
    if (out != NULL)
        printf("%s\n", out);
    if (rc != 0)
        fprintf(stderr, "oidc-discovery verify: invalid token (%s): %s\n", token_error_name(res.error), res.message);
    free(out);
    token_result_clear(&res);
    keyset_free(in.keys);
    free(in.discovered_issuer);
    free(token);
    return rc;
}
