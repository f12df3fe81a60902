/*
 * rp_rules.c: the table of relying-party rules (see rp_rules.h). Each row
 * is one documented requirement, with the vendor's page it comes from in
 * the row and in a comment beside it; docs/compatibility.md §6 sums them
 * up and docs/doctor.md says how to meet each.
 */
#include "diag/rp_rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "diag/issuer.h"

/* The relying parties' own documentation of the rules below. */
#define AWS_CREATE_PROVIDER "https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateOpenIDConnectProvider.html"
#define AWS_OIDC_PROVIDER   "https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_create_oidc.html"
#define AWS_THUMBPRINT                                                                                                 \
    "https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_create_oidc_verify-thumbprint.html"
#define AWS_ASSUME_ROLE "https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithWebIdentity.html"
#define GCP_KUBERNETES  "https://cloud.google.com/iam/docs/workload-identity-federation-with-kubernetes"
#define GCP_OIDC        "https://cloud.google.com/iam/docs/workload-identity-federation-with-other-providers"
#define AZURE_FEDERATION                                                                                               \
    "https://learn.microsoft.com/en-us/entra/workload-id/workload-identity-federation-considerations"
#define VAULT_JWT "https://developer.hashicorp.com/vault/api-docs/auth/jwt"

/* AWS's documented limits. */
#define AWS_KEYS_PER_TYPE 100
#define AWS_TOKEN_MAX     20000

static const char *const target_names[RP_TARGET_COUNT] = {"aws", "gcp", "azure", "vault"};
static const char *const relying_parties[RP_TARGET_COUNT] = {"AWS IAM", "GCP workload identity federation",
                                                             "Microsoft Entra workload identity", "Vault JWT auth"};

/* The algorithms AWS IAM accepts, and the JWK members GCP does. */
static const char *const aws_algorithms[] = {"RS256", "RS384", "RS512", "ES256", "ES384", "ES512", NULL};
static const char *const gcp_members[] = {"kty", "alg", "use", "kid", "n", "e", "x", "y", "crv", NULL};

static int listed(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (strcmp(*list, s) == 0)
            return 1;
    return 0;
}

__attribute__((format(printf, 2, 3))) static void say(char out[RP_TEXT_MAX], const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, RP_TEXT_MAX, fmt, ap);
    va_end(ap);
}

/* AWS: https, no port, no query. */
static int aws_issuer_url(const struct rp_facts *f, struct rp_outcome *o)
{
    struct issuer_url u;
    char found[128] = "";
    size_t n = 0;

    if (f->issuer == NULL)
        return -1;
    if (issuer_url_split(f->issuer, &u) != 0 || u.scheme.len != 5 || memcmp(u.scheme.s, "https", 5) != 0)
        n += (size_t)snprintf(found + n, sizeof(found) - n, ", is not https");
    if (u.has_port)
        n += (size_t)snprintf(found + n, sizeof(found) - n, ", has a port (:%.*s)", (int)u.port.len, u.port.s);
    if (u.has_query || u.has_fragment)
        n += (size_t)snprintf(found + n, sizeof(found) - n, ", has a query or fragment");
    if (n == 0) {
        say(o->what, "the issuer is https without port or query, as AWS requires");
        return 0;
    }
    o->verdict = RP_REFUSED;
    say(o->what, "the issuer%s; AWS accepts only https URLs without port or query", found + 1);
    say(o->fix, "publish the documents on port 443 under an https URL without query (behind a load balancer or "
                "CDN if need be), and make it the API server's --service-account-issuer");
    return 0;
}

/* AWS: at most 100 RSA and 100 EC keys; the rest are ignored, so tokens
 * signed by them fail. */
static int aws_key_count(const struct rp_facts *f, struct rp_outcome *o)
{
    size_t rsa = 0, ec = 0;

    if (!f->have_keys)
        return -1;
    for (size_t i = 0; i < f->nkeys; i++) {
        rsa += f->keys[i].kty && strcmp(f->keys[i].kty, "RSA") == 0;
        ec += f->keys[i].kty && strcmp(f->keys[i].kty, "EC") == 0;
    }
    if (rsa <= AWS_KEYS_PER_TYPE && ec <= AWS_KEYS_PER_TYPE) {
        say(o->what, "%zu RSA and %zu EC keys, within AWS's %d of each type", rsa, ec, AWS_KEYS_PER_TYPE);
        return 0;
    }
    o->verdict = RP_REFUSED;
    say(o->what,
        "%zu RSA and %zu EC keys published; AWS uses at most %d of each type and ignores the rest, so "
        "tokens signed by an ignored key are refused",
        rsa, ec, AWS_KEYS_PER_TYPE);
    say(o->fix,
        "publish at most %d keys of each type: remove retired keys from the key files (with "
        "--key-retention, retain them for less long)",
        AWS_KEYS_PER_TYPE);
    return 0;
}

/* The first published key (as "keys[N] ...") or the token that is not
 * accepted(), or 0 when none is; -1 when neither is known. */
static int first_unaccepted(const struct rp_facts *f, int (*accepted)(const char *kty, const char *alg), char *out,
                            size_t len)
{
    for (size_t i = 0; f->have_keys && i < f->nkeys; i++) {
        if (!accepted(f->keys[i].kty, f->keys[i].alg)) {
            snprintf(out, len, "keys[%zu] is %s %s", i, f->keys[i].kty ? f->keys[i].kty : "(no kty)",
                     f->keys[i].alg ? f->keys[i].alg : "(no alg)");
            return 1;
        }
    }
    if (f->token_alg != NULL && !accepted(NULL, f->token_alg)) {
        snprintf(out, len, "the token is signed with %s", f->token_alg);
        return 1;
    }
    return f->have_keys || f->token_alg ? 0 : -1;
}

/* A key without alg is judged by its type: AWS takes RSA and EC keys. */
static int aws_accepts(const char *kty, const char *alg)
{
    if (alg != NULL)
        return listed(aws_algorithms, alg);
    return kty != NULL && (strcmp(kty, "RSA") == 0 || strcmp(kty, "EC") == 0);
}

/* AWS: RS256, RS384, RS512, ES256, ES384, ES512. */
static int aws_algs(const struct rp_facts *f, struct rp_outcome *o)
{
    char found[160];
    int rc = first_unaccepted(f, aws_accepts, found, sizeof(found));

    if (rc < 0)
        return -1;
    if (rc == 0) {
        say(o->what, "every algorithm is one AWS accepts (RS256/384/512, ES256/384/512)");
        return 0;
    }
    o->verdict = RP_REFUSED;
    say(o->what, "%s; AWS accepts RS256, RS384, RS512, ES256, ES384 and ES512 only", found);
    say(o->fix, "sign with RSA or ECDSA (P-256, P-384, P-521) keys and publish only those");
    return 0;
}

/* AWS STS: a web identity token of at most 20000 characters. */
static int aws_token_size(const struct rp_facts *f, struct rp_outcome *o)
{
    if (f->token_len == 0)
        return -1;
    if (f->token_len <= AWS_TOKEN_MAX) {
        say(o->what, "the token's %zu characters are within STS's %d", f->token_len, AWS_TOKEN_MAX);
        return 0;
    }
    o->verdict = RP_REFUSED;
    say(o->what, "the token is %zu characters; STS takes at most %d", f->token_len, AWS_TOKEN_MAX);
    say(o->fix, "issue smaller tokens (fewer audiences or claims)");
    return 0;
}

/* AWS: thumbprints (at most 5) are needed only when the chain is not
 * publicly trusted. */
static int aws_thumbprint(const struct rp_facts *f, struct rp_outcome *o)
{
    if (f->publicly_trusted < 0)
        return -1;
    if (f->publicly_trusted) {
        say(o->what, "the certificate chain is publicly trusted: AWS needs no thumbprint");
        return 0;
    }
    o->verdict = RP_UNTESTED;
    say(o->what, "the certificate chain is not publicly trusted: AWS then trusts it only by the thumbprints "
                 "registered with the provider (at most 5)");
    say(o->fix, "use a certificate from a public CA, or register the SHA-1 thumbprint of the top intermediate CA's "
                "certificate with the IAM OIDC provider");
    return 0;
}

/* GCP: the issuer is https. */
static int gcp_issuer_https(const struct rp_facts *f, struct rp_outcome *o)
{
    if (f->issuer == NULL)
        return -1;
    if (strncmp(f->issuer, "https://", 8) == 0) {
        say(o->what, "issuer is https, as GCP requires");
        return 0;
    }
    o->verdict = RP_REFUSED;
    say(o->what, "issuer is not https; GCP requires https");
    say(o->fix, "publish the documents under an https URL and make it the API server's --service-account-issuer");
    return 0;
}

/* GCP: a publicly trusted certificate chain. */
static int gcp_public_trust(const struct rp_facts *f, struct rp_outcome *o)
{
    if (f->publicly_trusted < 0)
        return -1;
    if (f->publicly_trusted) {
        say(o->what, "the certificate chain is publicly trusted, as GCP requires");
        return 0;
    }
    o->verdict = RP_REFUSED;
    say(o->what, "the certificate chain is not publicly trusted; GCP fetches only from publicly trusted servers");
    say(o->fix, "use a certificate from a public CA, or give GCP the JWKS itself when creating the provider");
    return 0;
}

/* GCP: JWKs with kty, alg, use, kid, n, e, x, y and crv only. */
static int gcp_jwk_members(const struct rp_facts *f, struct rp_outcome *o)
{
    if (!f->have_keys)
        return -1;
    for (size_t i = 0; i < f->nkeys; i++) {
        if (f->keys[i].foreign_member != NULL) {
            o->verdict = RP_REFUSED;
            say(o->what,
                "keys[%zu] has the member \"%.64s\"; GCP accepts JWKs with kty, alg, use, kid, n, e, x, y "
                "and crv only",
                i, f->keys[i].foreign_member);
            say(o->fix, "publish JWKs without other members (oidc-discovery serve publishes only those)");
            return 0;
        }
    }
    say(o->what, "every JWK has only members GCP accepts");
    return 0;
}

/* RS256, or an RSA key without alg. */
static int azure_accepts(const char *kty, const char *alg)
{
    return alg != NULL ? strcmp(alg, "RS256") == 0 : kty != NULL && strcmp(kty, "RSA") == 0;
}

/* Entra: only tokens signed with RS256 are supported (others "may work"). */
static int azure_algorithm(const struct rp_facts *f, struct rp_outcome *o)
{
    char found[160];
    int rc = first_unaccepted(f, azure_accepts, found, sizeof(found));

    if (rc < 0)
        return -1;
    if (rc == 0) {
        say(o->what, "RS256 throughout, the one algorithm Entra supports");
        return 0;
    }
    o->verdict = RP_UNTESTED;
    say(o->what, "%s; Entra supports tokens signed with RS256 only (others may work but are not tested)", found);
    say(o->fix, "sign with an RSA key (RS256)");
    return 0;
}

/* The issuer a relying party compares byte for byte with what it was
 * given: the token's iss (Entra) or the discovery document's issuer
 * (Vault). Returns -1 when either is unknown. */
static int exact_issuer(const struct rp_facts *f, const char *seen, const char *what_seen, const char *registered,
                        struct rp_outcome *o)
{
    char diff[128];

    if (f->issuer == NULL || seen == NULL)
        return -1;
    if (!issuer_difference(f->issuer, seen, diff, sizeof(diff))) {
        say(o->what, "%s \"%.200s\" is exactly the issuer to register as %s", what_seen, seen, registered);
        return 0;
    }
    o->verdict = RP_REFUSED;
    say(o->what, "%s \"%.120s\" differs from \"%.120s\" by %s, and %s is compared byte for byte", what_seen, seen,
        f->issuer, diff, registered);
    say(o->fix, "make %s, the API server's --service-account-issuer and the published issuer one string", registered);
    return 0;
}

/* Entra: the federated credential's issuer must match the token's iss. */
static int azure_issuer(const struct rp_facts *f, struct rp_outcome *o)
{
    const char *seen = f->token_iss ? f->token_iss : f->discovered_issuer;

    return exact_issuer(f, seen, f->token_iss ? "the token's iss" : "the published issuer",
                        "the federated credential's issuer", o);
}

/* Vault: the discovery document's issuer must be oidc_discovery_url. */
static int vault_discovery_url(const struct rp_facts *f, struct rp_outcome *o)
{
    return exact_issuer(f, f->discovered_issuer, "the published issuer", "oidc_discovery_url (and bound_issuer)", o);
}

/* Each rule: the relying party, a stable id, the vendor page it comes
 * from (also in the comment beside it), and its check. */
static const struct rp_rule {
    enum rp_target target;
    const char *id;
    const char *source;
    int (*apply)(const struct rp_facts *f, struct rp_outcome *o); /* -1: facts unknown */
} rp_rules[] = {
    /* AWS_CREATE_PROVIDER: "must begin with https://", "query parameters are not" allowed, "should not contain a
     * port number" */
    {RP_AWS, "aws.issuer_url", AWS_CREATE_PROVIDER, aws_issuer_url},
    /* AWS_OIDC_PROVIDER: up to 100 RSA keys and 100 EC keys in the JWKS */
    {RP_AWS, "aws.key_count", AWS_OIDC_PROVIDER, aws_key_count},
    /* AWS_OIDC_PROVIDER: RS256, RS384, RS512, ES256, ES384 and ES512 */
    {RP_AWS, "aws.algorithms", AWS_OIDC_PROVIDER, aws_algs},
    /* AWS_ASSUME_ROLE: WebIdentityToken, length 4 to 20000 */
    {RP_AWS, "aws.token_size", AWS_ASSUME_ROLE, aws_token_size},
    /* AWS_THUMBPRINT: thumbprints (at most 5, AWS_CREATE_PROVIDER) only for chains that are not publicly trusted */
    {RP_AWS, "aws.thumbprint", AWS_THUMBPRINT, aws_thumbprint},
    /* GCP_KUBERNETES: the issuer URL is https, its certificate publicly trusted */
    {RP_GCP, "gcp.issuer_https", GCP_KUBERNETES, gcp_issuer_https},
    {RP_GCP, "gcp.public_trust", GCP_KUBERNETES, gcp_public_trust},
    /* GCP_OIDC: JWK members kty, alg, use, kid, n, e, x, y, crv */
    {RP_GCP, "gcp.jwk_members", GCP_OIDC, gcp_jwk_members},
    /* AZURE_FEDERATION: only RS256-signed tokens are supported; issuer and subject must match exactly */
    {RP_AZURE, "azure.algorithm", AZURE_FEDERATION, azure_algorithm},
    {RP_AZURE, "azure.issuer", AZURE_FEDERATION, azure_issuer},
    /* VAULT_JWT: oidc_discovery_url is the issuer; go-oidc refuses a document whose issuer differs */
    {RP_VAULT, "vault.discovery_url", VAULT_JWT, vault_discovery_url},
};

void rp_check(enum rp_target target, const struct rp_facts *facts, rp_outcome_fn *fn, void *ctx)
{
    for (size_t i = 0; i < sizeof(rp_rules) / sizeof(rp_rules[0]); i++) {
        const struct rp_rule *r = &rp_rules[i];
        struct rp_outcome o = {.target = target, .rule = r->id, .source = r->source, .verdict = RP_MET};
        if (r->target != target)
            continue;
        o.relying_party = relying_parties[target];
        if (r->apply(facts, &o) == 0)
            fn(ctx, &o);
    }
}

const char *rp_target_name(enum rp_target t)
{
    return target_names[t];
}

int rp_target_parse(const char *name, enum rp_target *out)
{
    for (int t = 0; t < RP_TARGET_COUNT; t++) {
        if (strcmp(name, target_names[t]) == 0) {
            *out = (enum rp_target)t;
            return 0;
        }
    }
    return -1;
}

int rp_gcp_member_ok(const char *name)
{
    return listed(gcp_members, name);
}
