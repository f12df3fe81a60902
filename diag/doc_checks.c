/* SPDX-License-Identifier: Apache-2.0 */
#include "diag/doc_checks.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/checks.h"
#include "diag/issuer.h"
#include "util/printable.h"
#include "util/redact.h"

/* A max-age longer than this makes every rotation wait as long: a new key
 * must be published max-age before it signs (docs/compatibility.md §7). */
#define DOC_MAX_AGE_MAX (24 * 3600UL)

/* How much of a document's string a message quotes. */
#define DOC_SHOWN 200

/* The members OpenID Connect Discovery 1.0 (section 3) requires of a
 * provider that issues ID tokens, besides issuer and jwks_uri. */
static const char *const doc_required_arrays[] = {"response_types_supported", "subject_types_supported",
                                                  "id_token_signing_alg_values_supported"};

int diag_doc_issuer_url(struct diag_report *r, const char *issuer, int allow_http)
{
    char shown[DOC_SHOWN + 8];
    struct issuer_url u;
    struct diag_check *c;
    int split = issuer_url_split(issuer, &u) == 0, https = strncmp(issuer, "https://", 8) == 0;
    int http = strncmp(issuer, "http://", 7) == 0;

    printable_quote(issuer, shown, sizeof(shown));
    if (!split || (!https && !http) || u.has_userinfo || u.has_query || u.has_fragment) {
        c = diag_add(r, DIAG_FAIL, "issuer.url", "%s is not an https URL without user information, query or fragment",
                     shown);
        diag_fix(r, c, "use the API server's --service-account-issuer, an https URL such as https://oidc.example.com");
        return 0;
    }
    if (http) {
        c = diag_add(r, allow_http ? DIAG_WARN : DIAG_FAIL, "issuer.url", "%s is http; relying parties require https%s",
                     shown, allow_http ? " (checked anyway: --allow-insecure-issuer)" : "");
        diag_fix(r, c,
                 "publish the documents over https and make that URL the API server's "
                 "--service-account-issuer (--allow-insecure-issuer checks an http issuer, for development)");
        return allow_http;
    }
    diag_add(r, DIAG_PASS, "issuer.url", "%s is an https URL%s", shown,
             u.path.len > 0 && u.path.s[u.path.len - 1] == '/'
                 ? " ending with \"/\": the tokens' iss and every registration must end with it too"
                 : "");
    return 1;
}

/* Whether the media type of a Content-Type value (before any parameter,
 * case-insensitively) is type. */
static int media_type_is(const char *value, const char *type)
{
    size_t n = strcspn(value, ";");

    while (n > 0 && isspace((unsigned char)value[n - 1]))
        n--;
    return n == strlen(type) && strncasecmp(value, type, n) == 0;
}

void diag_doc_content_type(struct diag_report *r, const char *id, const char *value, int jwks)
{
    char shown[DOC_SHOWN + 8];
    struct diag_check *c;

    if (value != NULL &&
        (media_type_is(value, "application/json") || (jwks && media_type_is(value, "application/jwk-set+json")))) {
        diag_add(r, DIAG_PASS, id, "Content-Type %s", printable_quote(value, shown, sizeof(shown)));
        return;
    }
    c = diag_add(r, DIAG_WARN, id, "Content-Type %s; %s",
                 value ? printable_quote(value, shown, sizeof(shown)) : "missing",
                 jwks ? "some clients refuse it (oauth4webapi, under openid-client 6, takes only application/json "
                        "and application/jwk-set+json; node jose's createRemoteJWKSet does not look)"
                      : "clients expect application/json");
    diag_fix(r, c, "serve it as %s (oidc-discovery serve does; export prints the type to upload it with)",
             jwks ? "application/jwk-set+json or application/json" : "application/json");
}

/* The value of the max-age directive in a Cache-Control value, or -1. */
static long max_age_of(const char *value)
{
    for (const char *p = value; (p = strcasestr(p, "max-age")) != NULL; p += 7) {
        int starts = p == value || p[-1] == ',' || isspace((unsigned char)p[-1]);
        const char *v = p + 7 + strspn(p + 7, " ");
        unsigned long n;
        if (!starts || *v != '=')
            continue;
        v += 1 + strspn(v + 1, " \"");
        if (config_parse_decimal(v, strspn(v, "0123456789"), 1UL << 31, &n) == 0)
            return (long)n;
    }
    return -1;
}

void diag_doc_cache_control(struct diag_report *r, const char *id, const char *value)
{
    char shown[DOC_SHOWN + 8];
    long max_age = value ? max_age_of(value) : -1;
    struct diag_check *c;

    if (value != NULL && max_age >= 0 && (unsigned long)max_age <= DOC_MAX_AGE_MAX && !strcasestr(value, "no-store")) {
        diag_add(r, DIAG_PASS, id, "Cache-Control %s", printable_quote(value, shown, sizeof(shown)));
        return;
    }
    if (value == NULL || max_age < 0 || strcasestr(value, "no-store"))
        c = diag_add(r, DIAG_WARN, id,
                     "Cache-Control %s: relying parties and caches each pick how long to keep it, "
                     "so nobody can say how long a new key must be published before it signs",
                     value ? printable_quote(value, shown, sizeof(shown)) : "missing");
    else
        c = diag_add(r, DIAG_WARN, id,
                     "Cache-Control %s: every new key must be published that long before it "
                     "signs",
                     printable_quote(value, shown, sizeof(shown)));
    diag_fix(r, c, "serve it with Cache-Control: public, max-age=3600 (oidc-discovery's default, --max-age)");
}

/* "discovery.issuer": the document's issuer, byte for byte. */
static void check_issuer(struct diag_report *r, const char *issuer, const char *got)
{
    char diff[128], a[DOC_SHOWN + 8], b[DOC_SHOWN + 8];
    struct diag_check *c;

    if (!issuer_difference(issuer, got, diff, sizeof(diff))) {
        diag_add(r, DIAG_PASS, "discovery.issuer", "issuer %s is --issuer byte for byte",
                 printable_quote(got, a, sizeof(a)));
        return;
    }
    c = diag_add(r, DIAG_FAIL, "discovery.issuer",
                 "issuer %s differs from --issuer %s by %s; relying parties compare them byte for byte",
                 printable_quote(got, a, sizeof(a)), printable_quote(issuer, b, sizeof(b)), diff);
    diag_fix(r, c,
             "make the API server's --service-account-issuer, the published issuer (oidc-discovery's "
             "--service-account-issuer) and the URL registered with each relying party one string");
}

/* "discovery.members": the required arrays. A missing one is a WARN:
 * the relying parties of Kubernetes tokens read issuer and jwks_uri only,
 * but stricter OpenID Connect clients refuse the document. */
static void check_members(struct diag_report *r, const struct json_value *doc)
{
    char missing[256] = "";
    size_t n = 0;
    struct diag_check *c;

    for (size_t i = 0; i < sizeof(doc_required_arrays) / sizeof(doc_required_arrays[0]); i++) {
        const struct json_value *v = json_get(doc, doc_required_arrays[i]);
        if (v == NULL || v->type != JSON_ARRAY)
            n += (size_t)snprintf(missing + n, sizeof(missing) - n, "%s%s", n ? ", " : "", doc_required_arrays[i]);
    }
    if (n == 0) {
        diag_add(r, DIAG_PASS, "discovery.members", "issuer, jwks_uri and the required arrays are present");
        return;
    }
    c = diag_add(r, DIAG_WARN, "discovery.members", "no %s array; OpenID Connect Discovery requires it", missing);
    diag_fix(r, c, "publish the discovery document oidc-discovery renders, which has every required member");
}

/* "discovery.jwks_uri": https (or allowed http) and a host. Returns
 * whether to fetch it. */
static int check_jwks_uri(struct diag_report *r, const char *uri, int allow_http)
{
    char redacted[DOC_SHOWN + 4], shown[DOC_SHOWN + 16];
    struct issuer_url u;
    struct diag_check *c;

    printable_quote(redact_url(uri, redacted, DOC_SHOWN), shown, sizeof(shown));
    if (issuer_url_split(uri, &u) == 0 && strncmp(uri, "https://", 8) == 0) {
        diag_add(r, DIAG_PASS, "discovery.jwks_uri", "jwks_uri %s is https", shown);
        return 1;
    }
    if (issuer_url_split(uri, &u) == 0 && strncmp(uri, "http://", 7) == 0 && allow_http) {
        c = diag_add(r, DIAG_WARN, "discovery.jwks_uri",
                     "jwks_uri %s is http, allowed by --allow-insecure-issuer; relying parties require https", shown);
        diag_fix(r, c, "publish the JWKS over https (--service-account-jwks-uri)");
        return 1;
    }
    c = diag_add(r, DIAG_FAIL, "discovery.jwks_uri",
                 "jwks_uri %s is not an https URL; relying parties fetch only https", shown);
    diag_fix(r, c, "publish the JWKS over https and name it in jwks_uri (--service-account-jwks-uri)");
    return 0;
}

const char *diag_doc_discovery(struct diag_report *r, const char *issuer, const struct json_value *doc, int allow_http)
{
    const struct json_value *iss = json_get(doc, "issuer"), *uri = json_get(doc, "jwks_uri");
    struct diag_check *c;

    if (iss == NULL || iss->type != JSON_STRING) {
        c = diag_add(r, DIAG_FAIL, "discovery.issuer", "the document has no issuer string");
        diag_fix(r, c, "publish the discovery document oidc-discovery renders for --issuer");
    } else {
        check_issuer(r, issuer, iss->str);
    }
    check_members(r, doc);
    if (uri == NULL || uri->type != JSON_STRING) {
        c = diag_add(r, DIAG_FAIL, "discovery.jwks_uri", "the document has no jwks_uri string");
        diag_fix(r, c, "publish the discovery document oidc-discovery renders, which names the JWKS");
        return NULL;
    }
    return check_jwks_uri(r, uri->str, allow_http) ? uri->str : NULL;
}

/* Whether the JSON array holds the string s. */
static int array_has(const struct json_value *array, const char *s)
{
    for (const struct json_value *v = array ? array->child : NULL; v != NULL; v = v->next)
        if (v->type == JSON_STRING && strcmp(v->str, s) == 0)
            return 1;
    return 0;
}

void diag_doc_algorithms(struct diag_report *r, const struct json_value *doc, const char *const *algs, size_t n)
{
    const struct json_value *listed = json_get(doc, "id_token_signing_alg_values_supported");
    char shown[DOC_SHOWN + 8];
    struct diag_check *c;

    for (size_t i = 0; listed != NULL && listed->type == JSON_ARRAY && i < n; i++) {
        if (algs[i] == NULL || array_has(listed, algs[i]))
            continue;
        c = diag_add(r, DIAG_WARN, "discovery.algorithms",
                     "keys[%zu]'s %s is not in id_token_signing_alg_values_supported; clients that read the list "
                     "(go-oidc) refuse tokens signed with it",
                     i, printable_quote(algs[i], shown, sizeof(shown)));
        diag_fix(r, c, "list the algorithm of every published key (oidc-discovery does)");
        return;
    }
    if (listed == NULL || listed->type != JSON_ARRAY)
        return; /* discovery.members said so */
    diag_add(r, DIAG_PASS, "discovery.algorithms", "id_token_signing_alg_values_supported lists every key's algorithm");
}
