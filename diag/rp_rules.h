/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rp_rules: what each relying party documents about the issuers it trusts
 * (docs/compatibility.md §6), as rules that can be checked against what is
 * known of an issuer: its URL, the keys it publishes, a token it signed,
 * whether its certificate chain is publicly trusted.
 *
 * Two callers: `doctor`, which checks an issuer from outside for the one
 * relying party it is told to (--target), and `serve`, which checks its
 * own published set for all of them at start and after every change and
 * logs what a relying party would refuse. One table, so both say the same.
 *
 * Each rule names the relying party's own documentation (its source), so
 * that a finding can be checked against what the vendor says today.
 */
#ifndef OIDC_RP_RULES_H
#define OIDC_RP_RULES_H

#include <stddef.h>

enum rp_target { RP_AWS, RP_GCP, RP_AZURE, RP_VAULT, RP_TARGET_COUNT };

/* One published key as the rules see it. */
struct rp_key {
    const char *kty;            /* "RSA", "EC", another, or NULL when missing */
    const char *alg;            /* or NULL when the JWK has none */
    const char *foreign_member; /* a member GCP does not accept, or NULL */
};

/* What is known of an issuer; a rule whose facts are unknown is skipped. */
struct rp_facts {
    const char *issuer;            /* the issuer URL, or NULL */
    const char *discovered_issuer; /* the discovery document's issuer, or NULL */
    int have_keys;                 /* whether the published keys are known: */
    const struct rp_key *keys;     /* these, in published order */
    size_t nkeys;
    const char *token_iss; /* a token's iss, or NULL */
    const char *token_alg; /* a token's alg, or NULL */
    size_t token_len;      /* a token's length, 0: no token */
    int publicly_trusted;  /* the chain verifies against the system store: 1, 0, or -1 unknown */
};

/* How a fact stands against a rule. */
enum rp_verdict {
    RP_MET,
    RP_UNTESTED, /* outside what the relying party documents or tests: may work */
    RP_REFUSED,  /* the relying party refuses it (or ignores it, which fails the same tokens) */
};

#define RP_TEXT_MAX 384

/* One rule applied. */
struct rp_outcome {
    enum rp_target target;
    const char *rule;          /* stable id: "aws.key_count" */
    const char *relying_party; /* "AWS IAM" */
    const char *source;        /* the relying party's documentation of the rule */
    enum rp_verdict verdict;
    char what[RP_TEXT_MAX]; /* what was found, or what is met */
    char fix[RP_TEXT_MAX];  /* what to change; empty when met */
};

typedef void rp_outcome_fn(void *ctx, const struct rp_outcome *o);

/* Applies every rule of target whose facts are known, in the table's order,
 * calling fn with each outcome. */
void rp_check(enum rp_target target, const struct rp_facts *facts, rp_outcome_fn *fn, void *ctx);

/* "aws", "gcp", "azure", "vault". */
const char *rp_target_name(enum rp_target t);

/* The target called name; 0, or -1 when none is. */
int rp_target_parse(const char *name, enum rp_target *out);

/* Whether s is one of the NULL-terminated list of names (algorithms, JWK
 * members), for the rules here and the JWKS checks beside them. */
int rp_listed(const char *const *list, const char *s);

/* Whether the JWK member name is one GCP accepts (kty, alg, use, kid, n,
 * e, x, y, crv). */
int rp_gcp_member_ok(const char *name);

#endif
