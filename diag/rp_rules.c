/* SPDX-License-Identifier: Apache-2.0 */
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

int rp_listed(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (strcmp(*list, s) == 0)
            return 1;
    return 0;
}

__attribute__((format(printf, 2, 3))) static int say(char out[RP_TEXT_MAX], const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, RP_TEXT_MAX, fmt, ap);
    va_end(ap);
    return 0;
}

/* Each judge below looks at the facts of one rule. It returns -1 when they
 * are unknown; else it writes what it found into found and returns 0 when
 * the rule is met, 1 when it is broken. The rule's row in the table says
 * why a broken one matters and what to change. */

/* AWS: https, no port, no query. */
static int aws_issuer_url(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    struct issuer_url u;
    char parts[128] = "";
    size_t n = 0;

    if (f->issuer == NULL)
        return -1;
    if (issuer_url_split(f->issuer, &u) != 0 || u.scheme.len != 5 || memcmp(u.scheme.s, "https", 5) != 0)
        n += (size_t)snprintf(parts + n, sizeof(parts) - n, ", is not https");
    if (u.has_port)
        n += (size_t)snprintf(parts + n, sizeof(parts) - n, ", has a port (:%.*s)", (int)u.port.len, u.port.s);
    if (u.has_query || u.has_fragment)
        n += (size_t)snprintf(parts + n, sizeof(parts) - n, ", has a query or fragment");
    if (n == 0)
        return say(found, "the issuer is https without port or query, as AWS requires");
    say(found, "the issuer%s", parts + 1);
    return 1;
}

/* AWS: at most 100 RSA and 100 EC keys; the rest are ignored, so tokens
 * signed by them fail. */
static int aws_key_count(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    size_t rsa = 0, ec = 0;

    if (!f->have_keys)
        return -1;
    for (size_t i = 0; i < f->nkeys; i++) {
        rsa += f->keys[i].kty && strcmp(f->keys[i].kty, "RSA") == 0;
        ec += f->keys[i].kty && strcmp(f->keys[i].kty, "EC") == 0;
    }
    if (rsa <= AWS_KEYS_PER_TYPE && ec <= AWS_KEYS_PER_TYPE)
        return say(found, "%zu RSA and %zu EC keys, within AWS's %d of each type", rsa, ec, AWS_KEYS_PER_TYPE);
    say(found, "%zu RSA and %zu EC keys published", rsa, ec);
    return 1;
}

/* The first published key (as "keys[N] is KTY ALG") or the token that
 * accepted() refuses: 1 with found written, 0 when there is none, -1 when
 * neither keys nor a token are known. */
static int first_unaccepted(const struct rp_facts *f, int (*accepted)(const char *kty, const char *alg),
                            char found[RP_TEXT_MAX])
{
    for (size_t i = 0; f->have_keys && i < f->nkeys; i++) {
        if (!accepted(f->keys[i].kty, f->keys[i].alg)) {
            say(found, "keys[%zu] is %.32s %.32s", i, f->keys[i].kty ? f->keys[i].kty : "(no kty)",
                f->keys[i].alg ? f->keys[i].alg : "(no alg)");
            return 1;
        }
    }
    if (f->token_alg != NULL && !accepted(NULL, f->token_alg)) {
        say(found, "the token is signed with %.32s", f->token_alg);
        return 1;
    }
    return f->have_keys || f->token_alg ? 0 : -1;
}

/* A rule on algorithms: first_unaccepted with accepted, met saying so. */
static int algorithms_rule(const struct rp_facts *f, int (*accepted)(const char *kty, const char *alg), const char *met,
                           char found[RP_TEXT_MAX])
{
    int rc = first_unaccepted(f, accepted, found);

    if (rc == 0)
        say(found, "%s", met);
    return rc;
}

/* A key without alg is judged by its type: AWS takes RSA and EC keys. */
static int aws_accepts(const char *kty, const char *alg)
{
    if (alg != NULL)
        return rp_listed(aws_algorithms, alg);
    return kty != NULL && (strcmp(kty, "RSA") == 0 || strcmp(kty, "EC") == 0);
}

/* AWS: RS256, RS384, RS512, ES256, ES384, ES512. */
static int aws_algs(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    return algorithms_rule(f, aws_accepts, "every algorithm is one AWS accepts (RS256/384/512, ES256/384/512)", found);
}

/* AWS STS: a web identity token of at most 20000 characters. */
static int aws_token_size(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    if (f->token_len == 0)
        return -1;
    if (f->token_len <= AWS_TOKEN_MAX)
        return say(found, "the token's %zu characters are within STS's %d", f->token_len, AWS_TOKEN_MAX);
    say(found, "the token is %zu characters", f->token_len);
    return 1;
}

/* Whether the chain is publicly trusted: AWS then needs no thumbprint,
 * and GCP requires it. */
static int public_trust(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    if (f->publicly_trusted < 0)
        return -1;
    if (f->publicly_trusted)
        return say(found, "the certificate chain is publicly trusted");
    say(found, "the certificate chain is not publicly trusted");
    return 1;
}

/* GCP: the issuer is https. */
static int https_issuer(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    if (f->issuer == NULL)
        return -1;
    if (strncmp(f->issuer, "https://", 8) == 0)
        return say(found, "the issuer is https");
    say(found, "the issuer is not https");
    return 1;
}

/* GCP: JWKs with kty, alg, use, kid, n, e, x, y and crv only. */
static int gcp_jwk_members(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    if (!f->have_keys)
        return -1;
    for (size_t i = 0; i < f->nkeys; i++) {
        if (f->keys[i].foreign_member != NULL) {
            say(found, "keys[%zu] has the member \"%.64s\"", i, f->keys[i].foreign_member);
            return 1;
        }
    }
    return say(found, "every JWK has only members GCP accepts");
}

/* RS256 or ES256; a key without alg by its type (an EC key may be P-256). */
static int gcp_accepts(const char *kty, const char *alg)
{
    if (alg != NULL)
        return strcmp(alg, "RS256") == 0 || strcmp(alg, "ES256") == 0;
    return kty != NULL && (strcmp(kty, "RSA") == 0 || strcmp(kty, "EC") == 0);
}

/* GCP: tokens signed with RS256 or ES256. */
static int gcp_algs(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    return algorithms_rule(f, gcp_accepts, "every algorithm is one GCP accepts (RS256, ES256)", found);
}

/* RS256, or an RSA key without alg. */
static int azure_accepts(const char *kty, const char *alg)
{
    return alg != NULL ? strcmp(alg, "RS256") == 0 : kty != NULL && strcmp(kty, "RSA") == 0;
}

/* Entra: only tokens signed with RS256 are supported (others "may work"). */
static int azure_algorithm(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    return algorithms_rule(f, azure_accepts, "RS256 throughout, the one algorithm Entra supports", found);
}

/* An issuer seen (what_seen) that a relying party compares byte for byte
 * with the one it was given (as setting): -1 when either is unknown. */
static int exact_issuer(const struct rp_facts *f, const char *seen, const char *what_seen, const char *setting,
                        char found[RP_TEXT_MAX])
{
    char diff[128];

    if (f->issuer == NULL || seen == NULL)
        return -1;
    if (!issuer_difference(f->issuer, seen, diff, sizeof(diff)))
        return say(found, "%s is --issuer byte for byte: set %s to \"%.200s\"", what_seen, setting, seen);
    say(found, "%s \"%.120s\" differs from \"%.120s\" by %s", what_seen, seen, f->issuer, diff);
    return 1;
}

/* Entra: the federated credential's issuer is the token's iss. */
static int azure_issuer(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    const char *setting = "the federated credential's issuer";

    if (f->token_iss != NULL)
        return exact_issuer(f, f->token_iss, "the token's iss", setting, found);
    return exact_issuer(f, f->discovered_issuer, "the published issuer", setting, found);
}

/* Vault: oidc_discovery_url is the discovery document's issuer. */
static int vault_discovery_url(const struct rp_facts *f, char found[RP_TEXT_MAX])
{
    return exact_issuer(f, f->discovered_issuer, "the published issuer", "oidc_discovery_url (and bound_issuer)",
                        found);
}

/* Each rule: the relying party, a stable id, the vendor's page it comes
 * from (quoted in the comment beside it), its judge, and when broken, how
 * the relying party takes it, why, and what to change. */
static const struct rp_rule {
    enum rp_target target;
    const char *id;
    const char *source;
    int (*judge)(const struct rp_facts *f, char found[RP_TEXT_MAX]);
    enum rp_verdict broken;
    const char *why, *fix;
} rp_rules[] = {
    /* AWS_CREATE_PROVIDER: "must begin with https://", "query parameters are not" allowed, "should not contain a
     * port number" */
    {RP_AWS, "aws.issuer_url", AWS_CREATE_PROVIDER, aws_issuer_url, RP_REFUSED,
     "AWS accepts only https URLs without port or query",
     "publish the documents on port 443 under an https URL without query (behind a load balancer or CDN if need "
     "be), and make it the API server's --service-account-issuer"},
    /* AWS_OIDC_PROVIDER: up to 100 RSA keys and 100 EC keys in the JWKS */
    {RP_AWS, "aws.key_count", AWS_OIDC_PROVIDER, aws_key_count, RP_REFUSED,
     "AWS uses at most 100 of each type and ignores the rest, so tokens signed by an ignored key are refused",
     "publish at most 100 keys of each type: remove retired keys from the key files (with --key-retention, retain "
     "them for less long)"},
    /* AWS_OIDC_PROVIDER: RS256, RS384, RS512, ES256, ES384 and ES512 */
    {RP_AWS, "aws.algorithms", AWS_OIDC_PROVIDER, aws_algs, RP_REFUSED,
     "AWS accepts RS256, RS384, RS512, ES256, ES384 and ES512 only",
     "sign with RSA or ECDSA (P-256, P-384, P-521) keys and publish only those"},
    /* AWS_ASSUME_ROLE: WebIdentityToken, length 4 to 20000 */
    {RP_AWS, "aws.token_size", AWS_ASSUME_ROLE, aws_token_size, RP_REFUSED, "STS takes at most 20000",
     "issue smaller tokens (fewer audiences or claims)"},
    /* AWS_THUMBPRINT: thumbprints (at most 5, AWS_CREATE_PROVIDER) only for chains that are not publicly trusted */
    {RP_AWS, "aws.thumbprint", AWS_THUMBPRINT, public_trust, RP_UNTESTED,
     "AWS then trusts it only by the thumbprints registered with the provider (at most 5)",
     "use a certificate from a public CA, or register the SHA-1 thumbprint of the top intermediate CA's "
     "certificate with the IAM OIDC provider"},
    /* GCP_KUBERNETES: the issuer URL is https, its certificate publicly trusted */
    {RP_GCP, "gcp.issuer_https", GCP_KUBERNETES, https_issuer, RP_REFUSED, "GCP requires https",
     "publish the documents under an https URL and make it the API server's --service-account-issuer"},
    {RP_GCP, "gcp.public_trust", GCP_KUBERNETES, public_trust, RP_REFUSED,
     "GCP fetches only from servers with a publicly trusted certificate",
     "use a certificate from a public CA, or give GCP the JWKS itself when creating the provider"},
    /* GCP_OIDC: JWK members kty, alg, use, kid, n, e, x, y, crv */
    {RP_GCP, "gcp.jwk_members", GCP_OIDC, gcp_jwk_members, RP_REFUSED,
     "GCP accepts JWKs with kty, alg, use, kid, n, e, x, y and crv only",
     "publish JWKs without other members (oidc-discovery serve publishes only those)"},
    /* GCP_OIDC: tokens signed with RS256 or ES256 */
    {RP_GCP, "gcp.algorithms", GCP_OIDC, gcp_algs, RP_REFUSED,
     "GCP's STS accepts tokens signed with RS256 or ES256 only",
     "sign with an RSA key (RS256) or a P-256 key (ES256), and publish only such keys"},
    /* AZURE_FEDERATION: only RS256-signed tokens are supported; issuer and subject must match exactly */
    {RP_AZURE, "azure.algorithm", AZURE_FEDERATION, azure_algorithm, RP_UNTESTED,
     "Entra supports tokens signed with RS256 only (others may work but are not tested)",
     "sign with an RSA key (RS256)"},
    {RP_AZURE, "azure.issuer", AZURE_FEDERATION, azure_issuer, RP_REFUSED,
     "Entra compares the federated credential's issuer with the token's iss byte for byte",
     "make the federated credential's issuer, the API server's --service-account-issuer and the published issuer "
     "one string"},
    /* VAULT_JWT: oidc_discovery_url is the issuer; go-oidc refuses a document whose issuer differs */
    {RP_VAULT, "vault.discovery_url", VAULT_JWT, vault_discovery_url, RP_REFUSED,
     "Vault refuses a discovery document whose issuer is not oidc_discovery_url byte for byte",
     "make oidc_discovery_url (and bound_issuer), the API server's --service-account-issuer and the published "
     "issuer one string"},
};

void rp_check(enum rp_target target, const struct rp_facts *facts, rp_outcome_fn *fn, void *ctx)
{
    for (size_t i = 0; i < sizeof(rp_rules) / sizeof(rp_rules[0]); i++) {
        const struct rp_rule *r = &rp_rules[i];
        struct rp_outcome o = {.target = target, .rule = r->id, .source = r->source, .verdict = RP_MET};
        char found[RP_TEXT_MAX];
        int broken;
        if (r->target != target || (broken = r->judge(facts, found)) < 0)
            continue;
        o.relying_party = relying_parties[target];
        say(o.what, "%s", found);
        if (broken) {
            o.verdict = r->broken;
            say(o.what, "%.200s; %s", found, r->why);
            say(o.fix, "%s", r->fix);
        }
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
    return rp_listed(gcp_members, name);
}
