/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules.c: what config_parse (config.c) does between flags beyond what the
 * rows say. The rows need and exclude other flags (options.h); here are
 * the defaults derived from other flags (dev's issuer, the jwks_uri,
 * token's audience, --upstream in-cluster), the rules that compare values
 * or depend on what a value is (a retention needs a state directory, a
 * staleness bound is at least the refresh interval, the signer's timing,
 * listeners that clash, store flags and their targets), and the warnings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/bucket_url.h"
#include "config/checks.h"
#include "config/fields.h"
#include "config/parser.h"

#define URL_MAX 2048

/* --upstream in-cluster: the service-account directory of every pod
 * (docs/compatibility.md §8). */
#define POD_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* dev's issuer: http:// on the first TCP --listen address (the row's
 * default when every --listen is a Unix socket). A port the kernel picks
 * is not known here, and the issuer must be. */
static int put_dev_issuer(struct parser *p)
{
    const struct setting *s = parser_named(p, "listen");
    const struct config_strlist *listens = &s->values;
    const char *tcp = config_option("listen")->def;
    char url[URL_MAX + 64], problem[CONFIG_PROBLEM_MAX];
    struct config_hostport hp;
    int v6;

    if (parser_has_none(listens))
        return fail(p, "dev serves its documents over plain http: --listen none would leave it nothing to serve");
    for (size_t i = 0; i < listens->count; i++) {
        if (!config_is_unix_listen(listens->items[i])) {
            tcp = listens->items[i];
            break;
        }
    }
    config_split_listen(tcp, &hp, problem);
    if (hp.port == 0)
        return parser_fail_value(p, s->origin, config_option("listen"), tcp,
                                 "dev's issuer is http:// on this address, so it needs a port other than 0 (or give "
                                 "--service-account-issuer)");
    v6 = memchr(hp.host, ':', hp.hostlen) != NULL;
    snprintf(url, sizeof url, "http://%s%.*s%s:%lu", v6 ? "[" : "", (int)hp.hostlen, hp.host, v6 ? "]" : "", hp.port);
    return parser_setting_put(p, config_option("service-account-issuer"), NULL, url);
}

/* --upstream in-cluster: the pod's API server, as client-go finds it
 * (docs/compatibility.md §8), with the pod's CA and token unless given. */
static int put_in_cluster(struct parser *p)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT"), *why;
    const struct config_option *o = config_option("upstream");
    char url[URL_MAX + 64];
    unsigned long n;

    if (host == NULL || *host == '\0' || port == NULL || *port == '\0')
        return fail(p, "--upstream in-cluster needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, which "
                       "Kubernetes sets in every pod; outside a pod give the API server's URL (--upstream "
                       "https://HOST:PORT)");
    snprintf(url, sizeof url, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    if (host[strspn(host, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:")] != '\0' ||
        config_parse_decimal(port, strlen(port), 65535, &n) < 0 || n == 0 || (why = config_check_url(url, 0)) != NULL)
        return fail(p,
                    "--upstream in-cluster: KUBERNETES_SERVICE_HOST %s and KUBERNETES_SERVICE_PORT %s do not make "
                    "an https URL; give the API server's URL (--upstream https://HOST:PORT)",
                    parser_quote(host, strlen(host)).s, parser_quote(port, strlen(port)).s);
    p->cfg.upstream_in_cluster = 1;
    if (parser_setting_put(p, o, NULL, url) < 0 ||
        (!parser_is_set(p, "upstream-ca-file") &&
         parser_setting_put(p, config_option("upstream-ca-file"), NULL, POD_SA_DIR "/ca.crt") < 0))
        return -1;
    if (!parser_is_set(p, "upstream-token-file"))
        return parser_setting_put(p, config_option("upstream-token-file"), NULL, POD_SA_DIR "/token");
    return 0;
}

/* Derives the defaults that depend on other options, from values already
 * checked: dev's issuer, the jwks_uri (the first issuer, less trailing
 * slashes, plus the JWKS path, which the row's default names after ISSUER:
 * util/paths.h's, as a unit test checks), a minted token's audience
 * (its issuer), and --upstream in-cluster's URL, CA and token. The other
 * --upstream defaults are the rows' (def_with). */
int config_put_derived(struct parser *p)
{
    const struct config_strlist *issuers = &parser_named(p, "service-account-issuer")->values;
    const char *mint_issuer = parser_setting_value(parser_named(p, "issuer"));
    const char *jwks_path = config_option("service-account-jwks-uri")->def_text + strlen("ISSUER");
    const char *up = parser_setting_value(parser_named(p, "upstream"));
    char url[URL_MAX + 64];

    if (p->cmd == CONFIG_CMD_DEV && issuers->count == 0 && put_dev_issuer(p) < 0)
        return -1;
    if (issuers->count && !parser_is_set(p, "service-account-jwks-uri")) {
        const char *issuer = issuers->items[0];
        size_t len = strlen(issuer);
        while (len && issuer[len - 1] == '/')
            len--;
        snprintf(url, sizeof url, "%.*s%s", (int)len, issuer, jwks_path);
        if (parser_setting_put(p, config_option("service-account-jwks-uri"), NULL, url) < 0)
            return -1;
    }
    if (p->cmd == CONFIG_CMD_TOKEN && mint_issuer && !parser_is_set(p, "audience") &&
        parser_setting_put(p, config_option("audience"), NULL, mint_issuer) < 0)
        return -1;
    if (up && strcmp(up, "in-cluster") == 0 && (config_option("upstream")->commands & CMD(p->cmd)))
        return put_in_cluster(p);
    return 0;
}

/* True when two valid listen values name the same host (ignoring case, as
 * DNS does) and port, or the same Unix socket. "--admin-listen none" is no
 * address and matches nothing, and port 0 matches nothing either: the
 * kernel gives each such socket a port of its own. */
static int same_listen(const char *a, const char *b)
{
    char problem[CONFIG_PROBLEM_MAX];
    struct config_hostport x, y;

    if (config_is_unix_listen(a) || config_is_unix_listen(b))
        return strcmp(a, b) == 0;
    if (config_split_listen(a, &x, problem) || config_split_listen(b, &y, problem))
        return 0;
    return x.port != 0 && x.port == y.port && x.hostlen == y.hostlen && strncasecmp(x.host, y.host, x.hostlen) == 0;
}

/* A certificate subject among the allowed callers can only match with
 * client certificates, which need a client CA. */
static int check_caller_subjects(struct parser *p)
{
    const struct config_option *o = config_option("token-review-allowed-callers");
    const struct setting *s = parser_setting_of(p, o);

    for (size_t i = 0; !parser_is_set(p, "token-review-client-ca-file") && i < s->values.count; i++)
        if (strchr(s->values.items[i], '=') != NULL)
            return parser_fail_value(p, s->origin, o, s->values.items[i],
                                     "is a client certificate's subject, which needs --token-review-client-ca-file");
    return 0;
}

/* The TokenReview API answers with the validity of any token it is given
 * and reads bearer tokens, so a server holds it to kube-apiserver's line:
 * TLS with a certificate of its own (plain HTTP only when asked for by
 * name), and callers that authenticate and are named. The rows say what
 * the TokenReview flags need and exclude; here is what the API needs:
 * one of two ways to listen, and callers. keys takes the same config file
 * but opens no listener, so these are the servers' rules only. */
static int check_token_review_callers(struct parser *p)
{
    if (!parser_is_on(p, "enable-token-review"))
        return 0;
    if (!parser_is_set(p, "token-review-tls-cert-file") && !parser_is_on(p, "token-review-insecure-http"))
        return fail(p, "--enable-token-review needs --token-review-tls-cert-file and "
                       "--token-review-tls-private-key-file: callers send bearer tokens (plain HTTP, for "
                       "development only: --token-review-insecure-http)");
    if (!parser_is_set(p, "token-review-allowed-callers"))
        return fail(p, "--enable-token-review needs --token-review-allowed-callers NAME: nobody may call the "
                       "TokenReview API otherwise (a service account, system:serviceaccount:vault:vault-auth, or "
                       "with --token-review-client-ca-file a certificate subject, CN=vault,O=example)");
    return check_caller_subjects(p);
}

/* A server without its plain-http listener serves over TLS (the rows say
 * what the TLS flags need of each other). */
static int check_tls(struct parser *p)
{
    if (parser_has_none(&parser_named(p, "listen")->values) && !parser_is_set(p, "tls-listen"))
        return fail(p, "--listen none needs --tls-listen: the documents must be served somewhere");
    return 0;
}

/* Every kind of listener, in the order a clash is reported: a value of a
 * later kind is said to clash with the earlier kind. */
static const char *const listener_kinds[] = {"listen", "tls-listen", "token-review-listen", "admin-listen"};

/* Refuses an address that two kinds of listener share (the TokenReview and
 * admin APIs must stay off the public listeners, and two sockets cannot bind
 * one address anyway). Kinds the command does not take are left alone. */
static int check_listener_clashes(struct parser *p)
{
    const size_t nkinds = sizeof listener_kinds / sizeof listener_kinds[0];
    char problem[64];

    for (size_t b = 1; b < nkinds; b++) {
        const struct config_option *later = config_option(listener_kinds[b]);
        const struct setting *s = parser_setting_of(p, later);
        for (size_t a = 0; (later->commands & CMD(p->cmd)) && a < b; a++) {
            const struct config_option *earlier = config_option(listener_kinds[a]);
            const struct config_strlist *e = &parser_setting_of(p, earlier)->values;
            for (size_t i = 0; (earlier->commands & CMD(p->cmd)) && i < s->values.count; i++) {
                for (size_t j = 0; j < e->count; j++) {
                    if (!same_listen(s->values.items[i], e->items[j]))
                        continue;
                    snprintf(problem, sizeof problem, "must differ from every --%s address", earlier->name);
                    return parser_fail_value(p, s->origin, later, s->values.items[i], problem);
                }
            }
        }
    }
    return 0;
}

/* A staleness bound shorter than the refresh interval would turn /readyz
 * 503 between two reads (the rows say the --upstream flags need
 * --upstream). */
static int check_upstream(struct parser *p)
{
    if (p->cmd != CONFIG_CMD_SERVE || !parser_is_set(p, "upstream"))
        return 0;
    if (parser_seconds_of(p, "upstream-max-staleness") < parser_seconds_of(p, "upstream-refresh-interval"))
        return fail(p, "--upstream-max-staleness must be at least --upstream-refresh-interval: /readyz would "
                       "otherwise fail between two reads");
    return 0;
}

/* The rules between serving options: a retention that a restart would
 * silently forget is refused, and so are a misplaced TokenReview API, a
 * server with nothing to serve on and listeners that share an address.
 * keys takes serve's config file but opens no listener: the production
 * serving rules are serve's and dev's only. */
static int check_serving(struct parser *p)
{
    if (parser_seconds_of(p, "key-retention") > 0 && !parser_is_set(p, "state-dir"))
        return fail(p, "--key-retention needs --state-dir, so that retained keys survive a restart");
    if (check_upstream(p) < 0)
        return -1;
    if ((CMD(p->cmd) & CONFIG_FOR_SERVERS) && check_tls(p) < 0)
        return -1;
    if (check_listener_clashes(p) < 0)
        return -1;
    return (CMD(p->cmd) & CONFIG_FOR_SERVERS) ? check_token_review_callers(p) : 0;
}

/* The timing of the signer's rotation (docs/compatibility.md §7): a key
 * signs only once relying parties can have fetched it, which takes
 * --max-age (go-oidc keeps a key set until max-age minus 30 s; node jose
 * waits a 30 s cooldown after a miss; a cache in front adds its own
 * max-age); a key signs for a rotation period at least as long as it
 * waits; kube-apiserver refuses a lifetime under 10 minutes. */
static int check_signer_timing(struct parser *p)
{
    unsigned long ahead = parser_seconds_of(p, "publish-ahead"), max_age = parser_seconds_of(p, "max-age");
    unsigned long lifetime = parser_seconds_of(p, "max-token-lifetime");
    char a[32], m[32], line[CONFIG_ERR_MAX];

    config_format_duration(ahead, a, sizeof a);
    config_format_duration(max_age, m, sizeof m);
    if (ahead < max_age)
        return fail(p,
                    "--publish-ahead %s is shorter than --max-age %s: relying parties keep a fetched JWKS that "
                    "long (go-oidc until max-age minus 30 s, a cache in front for its own max-age), so a new key "
                    "would sign tokens they cannot verify yet; raise --publish-ahead to --max-age plus a minute "
                    "or more, or lower --max-age",
                    a, m);
    if (parser_seconds_of(p, "rotation-period") < ahead)
        return fail(p,
                    "--rotation-period is shorter than --publish-ahead %s: a key signs only after it has been "
                    "published that long; make the period at least as long",
                    a);
    if (lifetime < 10 * CONFIG_MINUTE && !parser_is_on(p, "allow-short-token-lifetime"))
        return fail(p, "--max-token-lifetime must be at least 10m: kube-apiserver refuses a signer whose Metadata "
                       "says less than 600 seconds (--allow-short-token-lifetime accepts it, for tests)");
    if (ahead < max_age + CONFIG_MINUTE) {
        snprintf(line, sizeof line,
                 "--publish-ahead %s is less than a minute longer than --max-age %s: node jose waits a 30 s "
                 "cooldown after an unknown kid and a cache in front of this server adds its own max-age; a "
                 "minute or more of margin is safer",
                 a, m);
        if (parser_warn(p, line) < 0)
            return -1;
    }
    return 0;
}

/* serve, keys, export and publish need keys to publish: key files, a
 * signing key directory, or (serve) an --upstream's; dev has its own key
 * file. */
static int check_signer(struct parser *p)
{
    int serve = p->cmd == CONFIG_CMD_SERVE;

    if (parser_is_set(p, "issuers-dir"))
        return 0; /* each issuer file's keys are checked with it (config_issuer_parse) */
    if (p->cmd != CONFIG_CMD_DEV && !parser_is_set(p, "service-account-key-file") &&
        !parser_is_set(p, "signing-key-dir") && !(serve && parser_is_set(p, "upstream")))
        return fail(p, "--service-account-key-file is required (at least one) unless %s is given",
                    serve ? "--upstream or --signing-key-dir" : "--signing-key-dir");
    if (parser_is_set(p, "signing-key-dir") && (config_option("publish-ahead")->commands & CMD(p->cmd)))
        return check_signer_timing(p);
    return 0;
}

/* verify takes its keys from files or from a discovery document (the rows
 * say not both); the document also names the issuer, which files cannot. */
static int check_verify(struct parser *p)
{
    int files = parser_is_set(p, "service-account-key-file"), discovery = parser_is_set(p, "discovery-url");

    if (!files && !discovery)
        return fail(p, "verify needs --service-account-key-file or --discovery-url");
    if (!discovery && !parser_is_set(p, "service-account-issuer"))
        return fail(p, "--service-account-issuer is required (at least one) unless --discovery-url is given");
    return 0;
}

/* A minted token's issuer is one relying parties can take: https (unless
 * --allow-insecure-issuer), no query or fragment. The row takes any web
 * URL, since doctor reports such an issuer rather than refusing it. */
static int check_token(struct parser *p)
{
    const struct setting *issuer = parser_named(p, "issuer");
    const char *why = config_check_url(parser_setting_value(issuer), p->allow_http);

    if (why)
        return parser_fail_value(p, issuer->origin, config_option("issuer"), parser_setting_value(issuer), why);
    return 0;
}

/* How many of the targets of --publish-to (or publish --to) are of kind. */
static size_t count_targets(struct parser *p, enum config_bucket_kind kind)
{
    const struct setting *s = parser_named(p, p->cmd == CONFIG_CMD_PUBLISH ? "to" : "publish-to");
    struct config_bucket_url parts;
    size_t n = 0;

    for (size_t i = 0; i < s->values.count; i++)
        n += config_split_bucket_url(s->values.items[i], &parts) == NULL && parts.kind == kind;
    return n;
}

/* The store flags mean something only with a target of their store (an
 * Azure target is authorised one way: the rows exclude the other). */
static int check_publishing(struct parser *p)
{
    static const char *const s3_flags[] = {"s3-endpoint"};
    static const char *const azure_flags[] = {"azblob-endpoint", "azblob-sas-file", "azblob-key-file"};
    const char *targets = p->cmd == CONFIG_CMD_PUBLISH ? "--to" : "--publish-to";

    for (size_t i = 0; i < sizeof s3_flags / sizeof s3_flags[0]; i++)
        if (parser_is_set(p, s3_flags[i]) && count_targets(p, CONFIG_BUCKET_S3) == 0)
            return fail(p, "--%s needs an s3:// target (%s s3://BUCKET/PREFIX)", s3_flags[i], targets);
    for (size_t i = 0; i < sizeof azure_flags / sizeof azure_flags[0]; i++)
        if (parser_is_set(p, azure_flags[i]) && count_targets(p, CONFIG_BUCKET_AZBLOB) == 0)
            return fail(p, "--%s needs an azblob:// target (%s azblob://ACCOUNT/CONTAINER/PREFIX)", azure_flags[i],
                        targets);
    return 0;
}

/* The rules between options, which differ by command. export and publish
 * take the serving rules too: they open no listener, so only the retention
 * rule can apply to them. doctor's flags are independent of each other. */
int config_check_rules(struct parser *p)
{
    if ((p->cmd == CONFIG_CMD_KEYS || p->cmd == CONFIG_CMD_EXPORT) && parser_is_set(p, "issuer") &&
        !parser_is_set(p, "issuers-dir"))
        return fail(p, "--issuer NAME picks one issuer of --issuers-dir, which is not given");
    if ((CMD(p->cmd) & (CONFIG_FOR_SERVING | CONFIG_CMD_BIT(CONFIG_CMD_PUBLISH))) && check_publishing(p) < 0)
        return -1;
    if (CMD(p->cmd) & CONFIG_FOR_DOCUMENTS)
        return check_signer(p) < 0 ? -1 : check_serving(p);
    if (p->cmd == CONFIG_CMD_VERIFY)
        return check_verify(p);
    return p->cmd == CONFIG_CMD_TOKEN ? check_token(p) : 0;
}

/* An issuer ending in "/" is accepted, as kube-apiserver accepts it, but
 * relying parties compare it byte for byte: the tokens' iss and what each
 * relying party was told must end in "/" too, which is easy to miss. */
static int warn_trailing_slash(struct parser *p, const struct config_option *o)
{
    const struct setting *s = parser_setting_of(p, o);
    char line[CONFIG_ERR_MAX];

    for (size_t i = 0; (o->commands & CMD(p->cmd)) && i < s->values.count; i++) {
        const char *v = s->values.items[i];
        if (v[0] == '\0' || v[strlen(v) - 1] != '/')
            continue;
        parser_say_value(
            line, sizeof line, s->origin, o, v,
            "ends with \"/\"; relying parties compare the issuer byte for byte, so the iss of the tokens and "
            "the issuer registered with each relying party must end with \"/\" too");
        if (parser_warn(p, line) < 0)
            return -1;
    }
    return 0;
}

/* A store reached over plain http sees the documents and the requests'
 * signatures unencrypted: for a local store (an emulator, a test) only. */
static int warn_http_endpoint(struct parser *p, const char *name)
{
    const struct config_option *o = config_option(name);
    const struct setting *s = parser_setting_of(p, o);
    const char *v = parser_setting_value(s);
    char line[CONFIG_ERR_MAX];

    if (!(o->commands & CMD(p->cmd)) || v == NULL || strncmp(v, "http://", 7) != 0)
        return 0;
    parser_say_value(line, sizeof line, s->origin, o, v,
                     "plain http: the documents and the signed requests travel unencrypted; for a local store only");
    return parser_warn(p, line);
}

/* The warnings of a valid config. doctor's --issuer gets no trailing-slash
 * warning: its report compares the issuers itself. */
int config_warnings(struct parser *p)
{
    if (warn_trailing_slash(p, config_option("service-account-issuer")) < 0 ||
        (p->cmd == CONFIG_CMD_TOKEN && warn_trailing_slash(p, config_option("issuer")) < 0))
        return -1;
    if (warn_http_endpoint(p, "s3-endpoint") < 0 || warn_http_endpoint(p, "azblob-endpoint") < 0)
        return -1;
    return 0;
}
