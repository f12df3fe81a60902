/*
 * config.c: argv and the optional JSON config file -> one validated,
 * immutable config. What each flag is (its kind, range, commands, default
 * and field) is in the table of options.c; this file runs the stages:
 *
 *   parse_command()  picks "serve", "dev", "keys", "verify", "token",
 *                    "export" or "publish" from argv[1];
 *   scan_flags()     reads argv with getopt_long into a list of flags without
 *                    applying them, because --config must take effect first
 *                    wherever it appears;
 *   merge_sources()  feeds the config file (file.c) and then those flags into
 *                    one "setting" per row: its raw string values plus where
 *                    they came from, so errors can name the flag or file key;
 *   put_defaults()   fills what nobody set from the rows, as if given as a
 *                    flag (dev's own defaults included);
 *   validate()       checks that the command takes each flag given, checks
 *                    every value (checks.c), derives dev's issuer, the
 *                    jwks_uri and token's audience, and checks the required
 *                    options and the rules between options;
 *   convert()        moves the settings into the rows' struct config fields.
 */
#include "config/config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/bucket_url.h"
#include "config/checks.h"
#include "config/fields.h"
#include "config/file.h"
#include "config/options.h"
#include "util/paths.h"
#include "util/printable.h"

#define FLAG_VAL 256 /* getopt values of long flags start past every short option character */
#define URL_MAX  2048
#define CMD(c)   CONFIG_CMD_BIT(c)

/* The values of one row gathered from the config file and the command
 * line, as strings, and where they came from. */
struct setting {
    struct config_strlist values;
    const char *origin; /* the config file's path, or NULL: command line or default */
};

/* A flag read from argv, applied after the config file. */
struct flag {
    const struct config_option *o;
    const char *value; /* NULL for a switch */
};

struct parser {
    enum config_command cmd;
    struct config cfg;
    struct setting *settings; /* one per row of config_options */
    struct flag *flags;
    size_t flag_count;
    const char *config_path;
    int named;      /* the command was named in argv[1] */
    int allow_http; /* --allow-insecure-issuer, once the sources are merged */
    char *err;
    size_t errlen;
};

/* A value in double quotes, ready for an error message. */
struct quoted {
    char s[CONFIG_ERR_MAX];
};

/* Writes a message of at most len bytes, cut short if it must be. */
__attribute__((format(printf, 3, 4))) static void say(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, len, fmt, ap);
    va_end(ap);
}

/* Writes the error message; returns -1 so callers can `return fail(...)`. */
#define fail(p, ...) (say((p)->err, (p)->errlen, __VA_ARGS__), -1)

/* Quotes s[0..len) for an error message so that no value can break the
 * message's single line. */
static struct quoted quote(const char *s, size_t len)
{
    struct quoted q;
    char *copy = strndup(s, len);

    printable_quote(copy ? copy : "", q.s, sizeof q.s);
    free(copy);
    return q;
}

/* Writes what is said of a value of row o, naming where it came from: the
 * flag and the value on the command line, or the file and the key in a
 * config file. */
static void say_value(char *out, size_t len, const char *origin, const struct config_option *o, const char *value,
                      const char *what)
{
    if (origin)
        config_file_key_error(out, len, origin, o->name, what);
    else
        say(out, len, "--%s %s: %s", o->name, quote(value, strlen(value)).s, what);
}

/* Reports a bad value of row o. */
static int fail_value(struct parser *p, const char *origin, const struct config_option *o, const char *value,
                      const char *problem)
{
    say_value(p->err, p->errlen, origin, o, value, problem);
    return -1;
}

/* Whether a row's values accumulate rather than replace each other. */
static int is_repeatable(const struct config_option *o)
{
    return o->kind == CONFIG_KIND_LIST || o->kind == CONFIG_KIND_COMMAS || o->kind == CONFIG_KIND_LISTEN;
}

/* The row whose setting a flag fills: --no-cors fills --cors's. */
static const struct config_option *target(const struct config_option *o)
{
    for (size_t i = 0; (o->flags & CONFIG_NEGATES) && i < config_option_count; i++)
        if (config_options[i].field == o->field && !(config_options[i].flags & CONFIG_NEGATES))
            return &config_options[i];
    return o;
}

static struct setting *setting_of(struct parser *p, const struct config_option *o)
{
    return &p->settings[config_option_index(o)];
}

/* The setting of the row called name. */
static struct setting *named(struct parser *p, const char *name)
{
    return setting_of(p, config_option(name));
}

/* Records one value of row o from origin (the config file's path, or NULL
 * for the command line). The first value from another origin drops the old
 * ones, so a repeated flag replaces the file's list; a single-valued row
 * keeps only its latest value. */
static int setting_put(struct parser *p, const struct config_option *o, const char *origin, const char *value)
{
    struct setting *s = setting_of(p, o);

    if (s->origin != origin || !is_repeatable(o))
        config_strlist_free(&s->values);
    s->origin = origin;
    if (config_strlist_append(&s->values, value, strlen(value)) < 0)
        return fail(p, "out of memory");
    return 0;
}

/* The (only or latest) value of a single-valued setting, or NULL. */
static const char *setting_value(const struct setting *s)
{
    return s->values.count ? s->values.items[s->values.count - 1] : NULL;
}

/* True when the row called name has a value from a flag, the file or a
 * default. */
static int is_set(struct parser *p, const char *name)
{
    return named(p, name)->values.count > 0;
}

/* The command called name, or -1. */
static int command_named(const char *name)
{
    for (int i = 0; i < CONFIG_COMMAND_COUNT; i++)
        if (strcmp(name, config_commands[i].name) == 0)
            return i;
    return -1;
}

/* Refuses a command nobody knows, suggesting the one it most likely
 * meant, listing those there are. */
static int unknown_command(struct parser *p, const char *name, const char *more)
{
    const char *near = config_command_nearest(name, more);
    char names[128];
    size_t n = 0;

    for (int i = 0; i < CONFIG_COMMAND_COUNT; i++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s, ", config_commands[i].name);
    return fail(p, "unknown command %s%s%s%s (commands: %s%s)", quote(name, strlen(name)).s,
                near ? "; did you mean " : "", near ? near : "", near ? "?" : "", names, more);
}

/* Picks the subcommand from argv[1]; the flags start after it (*first = 1)
 * or right after the program name (*first = 0). */
static int parse_command(struct parser *p, int argc, char **argv, int *first)
{
    int c;

    p->cmd = CONFIG_CMD_SERVE;
    *first = argc >= 2 && argv[1][0] != '-';
    if (!*first)
        return 0;
    if (strcmp(argv[1], "help") == 0) {
        p->cmd = CONFIG_CMD_HELP;
        return 0;
    }
    if ((c = command_named(argv[1])) < 0)
        return unknown_command(p, argv[1], "help");
    p->cmd = (enum config_command)c;
    return 0;
}

/* "help", "help COMMAND" or "help all": which help to print ("help
 * --help" is the general help, which says how to use help). */
static int parse_help(struct parser *p, int argc, char **argv)
{
    int c;

    p->cfg.help_topic = CONFIG_CMD_HELP;
    if (argc > 3)
        return fail(p, "unexpected argument %s", quote(argv[3], strlen(argv[3])).s);
    if (argc < 3 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)
        return 0;
    if (strcmp(argv[2], "all") == 0)
        p->cfg.help_topic = CONFIG_HELP_ALL;
    else if ((c = command_named(argv[2])) >= 0)
        p->cfg.help_topic = (enum config_command)c;
    else
        return unknown_command(p, argv[2], "all");
    return 0;
}

/* A suggestion for a flag the command does not take ("; did you mean
 * --listen?"), from among the command's own flags, or "". A typo is
 * looked for only in a name that is no flag at all: a flag of another
 * command was not mistyped. */
struct suggestion {
    char s[96];
};

static struct suggestion suggest(const struct parser *p, const char *name, size_t len, int typos)
{
    const struct config_option *o = config_option_nearest(name, len, CMD(p->cmd), 0, typos);
    struct suggestion out = {""};

    if (o)
        snprintf(out.s, sizeof out.s, "; did you mean --%s?", o->name);
    return out;
}

/* Reports a flag nobody knows, by its name without any "=value". */
static int unknown_flag(struct parser *p, const char *name, size_t len)
{
    size_t dashes = len > 2 && name[1] == '-' ? 2 : 1;

    return fail(p, "unknown flag %s%s (see --help)", quote(name, len).s, suggest(p, name + dashes, len - dashes, 1).s);
}

/* Reports what getopt refused: an unknown flag, or a value for a flag that
 * takes none. token is the argument getopt was reading. */
static int bad_flag(struct parser *p, const char *token)
{
    const char short_name[3] = {'-', (char)optopt, '\0'};

    if (optopt >= FLAG_VAL)
        return fail(p, "--%s: does not take a value", config_options[optopt - FLAG_VAL].name);
    if (optopt)
        return unknown_flag(p, short_name, 2);
    return unknown_flag(p, token, strcspn(token, "="));
}

/* The row of a short option character (-h), or NULL. */
static const struct config_option *short_option(int c)
{
    for (size_t i = 0; i < config_option_count; i++)
        if (config_options[i].short_name == c)
            return &config_options[i];
    return NULL;
}

/* Acts on --help, --version and --config at once; keeps other flags for
 * merge_sources. --help after a command is that command's help; alone,
 * the overview. */
static void take_flag(struct parser *p, const struct config_option *o)
{
    if (o->kind != CONFIG_KIND_ACTION) {
        p->flags[p->flag_count++] = (struct flag){o, optarg};
    } else if (o == config_option("help")) {
        p->cfg.help_topic = p->named ? p->cmd : CONFIG_CMD_HELP;
        p->cmd = CONFIG_CMD_HELP;
    } else if (o == config_option("version")) {
        p->cmd = CONFIG_CMD_VERSION;
    } else {
        p->config_path = optarg;
    }
}

/* Handles one getopt result. Long flags must be spelled out: getopt would
 * take "--max" for "--max-age", and such a prefix could silently change
 * meaning when a flag is added. */
static int scan_one(struct parser *p, int c, const char *token)
{
    const struct config_option *o;

    switch (c) {
    case 1:
        return fail(p, "unexpected argument %s", quote(optarg, strlen(optarg)).s);
    case ':':
        return fail(p, "--%s: missing value", config_options[optopt - FLAG_VAL].name);
    case '?':
        return bad_flag(p, token);
    }
    if (c < FLAG_VAL) {
        o = short_option(c);
    } else {
        o = &config_options[c - FLAG_VAL];
        if (strcspn(token, "=") != 2 + strlen(o->name))
            return unknown_flag(p, token, strcspn(token, "="));
    }
    take_flag(p, o);
    return 0;
}

/* getopt_long's view of the rows: the long options and the short ones
 * ("-:" first: non-flags come back as 1, in order, so argv is never
 * permuted and argv[at] is the token being read; a missing value is ':'
 * rather than '?'). Returns the long options, or NULL. */
static struct option *getopt_table(char *shorts, size_t len)
{
    struct option *longs = calloc(config_option_count + 1, sizeof *longs);
    size_t n = (size_t)snprintf(shorts, len, "-:");

    for (size_t i = 0; longs && i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        longs[i] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, FLAG_VAL + (int)i};
        if (o->short_name && n + 2 < len)
            shorts[n++] = o->short_name, shorts[n] = '\0';
    }
    return longs;
}

/* Reads the flags into p->flags without applying them, since --config must
 * take effect before them wherever it appears. Stops at the first problem or
 * at --help/--version, which need nothing else to be valid. */
static int scan_flags(struct parser *p, int argc, char **argv)
{
    char shorts[16];
    struct option *longs = getopt_table(shorts, sizeof shorts);
    int c, at, rc = 0;

    p->flags = calloc(argc > 0 ? (size_t)argc : 1, sizeof *p->flags);
    if (!p->flags || !longs) {
        free(longs);
        return fail(p, "out of memory");
    }
    optind = 0; /* glibc starts over (at argv[1]), so config_parse can run again */
    opterr = 0;
    for (at = 1; rc == 0 && (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1; at = optind) {
        rc = scan_one(p, c, argv[at]);
        if (p->cmd == CONFIG_CMD_HELP || p->cmd == CONFIG_CMD_VERSION)
            break;
    }
    free(longs);
    if (rc == 0 && c != -1)
        return 0;                 /* --help or --version */
    if (rc == 0 && optind < argc) /* what follows "--" */
        return fail(p, "unexpected argument %s", quote(argv[optind], strlen(argv[optind])).s);
    return rc;
}

/* Takes a value from the config file (file.c calls it). */
static int put_from_file(void *ctx, const struct config_option *o, const char *value)
{
    struct parser *p = ctx;

    return setting_put(p, o, p->config_path, value);
}

/* Applies the config file first and the flags after it, so that the
 * command line wins wherever --config appeared. A switch is "true"; a
 * negating one (--no-cors) is "false" for the switch it negates. */
static int merge_sources(struct parser *p)
{
    if (p->config_path && config_file_read(p->config_path, put_from_file, p, p->err, p->errlen) < 0)
        return -1;
    for (size_t i = 0; i < p->flag_count; i++) {
        const struct flag *f = &p->flags[i];
        const char *value = f->value ? f->value : (f->o->flags & CONFIG_NEGATES) ? "false" : "true";
        if (setting_put(p, target(f->o), NULL, value) < 0)
            return -1;
    }
    return 0;
}

/* Fills the rows nobody set with their defaults, as if given as flags, so
 * that converting them needs no special case. */
static int put_defaults(struct parser *p)
{
    char computed[32];

    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        const char *value = p->cmd == CONFIG_CMD_DEV && o->dev_def ? o->dev_def : o->def;
        if (o->def_fn) {
            o->def_fn(o, computed, sizeof computed);
            value = computed;
        }
        if (value && setting_of(p, o)->values.count == 0 && setting_put(p, o, NULL, value) < 0)
            return -1;
    }
    p->allow_http = strcmp(setting_value(named(p, "allow-insecure-issuer")), "true") == 0;
    return 0;
}

/* Refuses a flag that the command does not take. A flag of one other
 * command, or of two with a one-shot command among them (verify and
 * doctor), names them; a serving flag given to verify or token just is
 * not valid there, since several commands take it. */
static int check_command(struct parser *p, const struct config_option *o)
{
    unsigned takes = o->commands, cmd = CMD(p->cmd);
    int n = __builtin_popcount(takes), first = __builtin_ctz(takes);
    int named = n == 1 || (n == 2 && (takes & ~CONFIG_FOR_SERVING));

    if (takes & cmd)
        return 0;
    if (named && ((cmd & CONFIG_FOR_SERVING) || !(takes & CONFIG_FOR_SERVING)))
        return fail(p, "--%s is only valid for the %s%s%s command%s%s", o->name, config_commands[first].name,
                    n == 2 ? " and " : "", n == 2 ? config_commands[31 - __builtin_clz(takes)].name : "",
                    n == 2 ? "s" : "", suggest(p, o->name, strlen(o->name), 0).s);
    return fail(p, "--%s is not valid for the %s command%s", o->name, config_commands[p->cmd].name,
                suggest(p, o->name, strlen(o->name), 0).s);
}

/* Checks the command-line flags against the command. The config file is
 * not checked: one file may serve several commands, each reading its keys. */
static int check_commands(struct parser *p)
{
    for (size_t i = 0; i < p->flag_count; i++)
        if (check_command(p, p->flags[i].o) < 0)
            return -1;
    return 0;
}

/* True when the list holds "none", which a CONFIG_NONE_OK row takes alone. */
static int has_none(const struct config_strlist *l)
{
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->items[i], "none") == 0)
            return 1;
    return 0;
}

/* Checks every value given, naming the flag or file key of the first bad
 * one, and then that "none" comes alone. */
static int check_values(struct parser *p)
{
    char problem[CONFIG_PROBLEM_MAX];

    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        const struct setting *s = setting_of(p, o);
        for (size_t j = 0; j < s->values.count; j++) {
            const char *why = config_option_check(o, s->values.items[j], p->allow_http, problem);
            if (why)
                return fail_value(p, s->origin, o, s->values.items[j], why);
        }
        if ((o->flags & CONFIG_NONE_OK) && s->values.count > 1 && has_none(&s->values))
            return fail(p, "--%s none cannot be combined with addresses", o->name);
    }
    return 0;
}

/* dev's issuer: http:// on the first TCP --listen address (the row's
 * default when every --listen is a Unix socket). A port the kernel picks
 * is not known here, and the issuer must be. */
static int put_dev_issuer(struct parser *p)
{
    const struct setting *s = named(p, "listen");
    const struct config_strlist *listens = &s->values;
    const char *tcp = config_option("listen")->def;
    char url[URL_MAX + 64], problem[CONFIG_PROBLEM_MAX];
    struct config_hostport hp;
    int v6;

    if (has_none(listens))
        return fail(p, "dev serves its documents over plain http: --listen none would leave it nothing to serve");
    for (size_t i = 0; i < listens->count; i++) {
        if (!config_is_unix_listen(listens->items[i])) {
            tcp = listens->items[i];
            break;
        }
    }
    config_split_listen(tcp, &hp, problem);
    if (hp.port == 0)
        return fail_value(p, s->origin, config_option("listen"), tcp,
                          "dev's issuer is http:// on this address, so it needs a port other than 0 (or give "
                          "--service-account-issuer)");
    v6 = memchr(hp.host, ':', hp.hostlen) != NULL;
    snprintf(url, sizeof url, "http://%s%.*s%s:%lu", v6 ? "[" : "", (int)hp.hostlen, hp.host, v6 ? "]" : "", hp.port);
    return setting_put(p, config_option("service-account-issuer"), NULL, url);
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
                    quote(host, strlen(host)).s, quote(port, strlen(port)).s);
    p->cfg.upstream_in_cluster = 1;
    if (setting_put(p, o, NULL, url) < 0 ||
        (!is_set(p, "upstream-ca-file") &&
         setting_put(p, config_option("upstream-ca-file"), NULL, CONFIG_POD_SA_DIR "/ca.crt") < 0))
        return -1;
    if (!is_set(p, "upstream-token-file"))
        return setting_put(p, config_option("upstream-token-file"), NULL, CONFIG_POD_SA_DIR "/token");
    return 0;
}

/* The --upstream flags' defaults, which apply only with --upstream: the
 * refresh interval, the timeout, and a staleness of ten intervals. */
static int put_upstream(struct parser *p)
{
    const struct config_option *refresh = config_option("upstream-refresh-interval");
    const char *up = setting_value(named(p, "upstream"));
    char stale[32];

    if (up == NULL || !(config_option("upstream")->commands & CMD(p->cmd)))
        return 0;
    if (strcmp(up, "in-cluster") == 0 && put_in_cluster(p) < 0)
        return -1;
    if ((!is_set(p, refresh->name) && setting_put(p, refresh, NULL, CONFIG_UPSTREAM_REFRESH) < 0) ||
        (!is_set(p, "upstream-timeout") &&
         setting_put(p, config_option("upstream-timeout"), NULL, CONFIG_UPSTREAM_TIMEOUT) < 0))
        return -1;
    snprintf(stale, sizeof stale, "%lu",
             CONFIG_UPSTREAM_STALE_REFRESH * config_option_number(refresh, setting_value(setting_of(p, refresh))));
    if (!is_set(p, "upstream-max-staleness"))
        return setting_put(p, config_option("upstream-max-staleness"), NULL, stale);
    return 0;
}

/* Derives the defaults that depend on other options, from values already
 * checked: dev's issuer, the jwks_uri (the first issuer, less trailing
 * slashes, plus PATHS_JWKS), a minted token's audience (its issuer), and
 * the --upstream defaults. */
static int put_derived(struct parser *p)
{
    const struct config_strlist *issuers = &named(p, "service-account-issuer")->values;
    const char *mint_issuer = setting_value(named(p, "issuer"));
    char url[URL_MAX + 64];

    if (p->cmd == CONFIG_CMD_DEV && issuers->count == 0 && put_dev_issuer(p) < 0)
        return -1;
    if (issuers->count && !is_set(p, "service-account-jwks-uri")) {
        const char *issuer = issuers->items[0];
        size_t len = strlen(issuer);
        while (len && issuer[len - 1] == '/')
            len--;
        snprintf(url, sizeof url, "%.*s%s", (int)len, issuer, PATHS_JWKS);
        if (setting_put(p, config_option("service-account-jwks-uri"), NULL, url) < 0)
            return -1;
    }
    if (p->cmd == CONFIG_CMD_TOKEN && mint_issuer && !is_set(p, "audience") &&
        setting_put(p, config_option("audience"), NULL, mint_issuer) < 0)
        return -1;
    return put_upstream(p);
}

/* Refuses to run a command without what it needs, in the rows' order. */
static int check_required(struct parser *p)
{
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        if ((o->required & CMD(p->cmd)) && setting_of(p, o)->values.count == 0)
            return fail(p, "--%s is required%s", o->name, o->why_required);
    }
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

/* True when the switch called name is on (a switch always has a value:
 * its default). */
static int is_on(struct parser *p, const char *name)
{
    return strcmp(setting_value(named(p, name)), "true") == 0;
}

/* Keeps the TokenReview API, which tells whoever asks whose token is valid,
 * off the public listeners: it needs listeners of its own, and those mean
 * nothing without it. */
static int check_token_review(struct parser *p)
{
    int enabled = is_on(p, "enable-token-review");
    int listens = is_set(p, "token-review-listen");

    if (enabled && !listens)
        return fail(p, "--enable-token-review needs --token-review-listen HOST:PORT (the TokenReview API is never "
                       "served on the public listeners)");
    if (!enabled && listens)
        return fail(p, "--token-review-listen needs --enable-token-review");
    return 0;
}

/* The TokenReview flags of a server that mean nothing without the API. */
static const char *const token_review_server_flags[] = {
    "token-review-tls-cert-file",   "token-review-tls-private-key-file", "token-review-client-ca-file",
    "token-review-allowed-callers", "token-review-caller-audiences",
};

/* A certificate subject among the allowed callers can only match with
 * client certificates, which need a client CA. */
static int check_caller_subjects(struct parser *p)
{
    const struct config_option *o = config_option("token-review-allowed-callers");
    const struct setting *s = setting_of(p, o);

    for (size_t i = 0; !is_set(p, "token-review-client-ca-file") && i < s->values.count; i++)
        if (strchr(s->values.items[i], '=') != NULL)
            return fail_value(p, s->origin, o, s->values.items[i],
                              "is a client certificate's subject, which needs --token-review-client-ca-file");
    return 0;
}

/* The TokenReview API answers with the validity of any token it is given
 * and reads bearer tokens, so a server holds it to kube-apiserver's line:
 * TLS with a certificate of its own (plain HTTP only when asked for by
 * name), and callers that authenticate and are named. keys takes the
 * same config file but opens no listener, so these are the servers'
 * rules only. */
static int check_token_review_callers(struct parser *p)
{
    int cert = is_set(p, "token-review-tls-cert-file"), insecure = is_on(p, "token-review-insecure-http");

    if (!is_on(p, "enable-token-review")) {
        for (size_t i = 0; i < sizeof token_review_server_flags / sizeof token_review_server_flags[0]; i++)
            if (is_set(p, token_review_server_flags[i]))
                return fail(p, "--%s needs --enable-token-review", token_review_server_flags[i]);
        return insecure ? fail(p, "--token-review-insecure-http needs --enable-token-review") : 0;
    }
    if (cert != is_set(p, "token-review-tls-private-key-file"))
        return fail(p, "--token-review-tls-cert-file and --token-review-tls-private-key-file go together");
    if (cert && insecure)
        return fail(p, "--token-review-insecure-http and --token-review-tls-cert-file are mutually exclusive: "
                       "the TokenReview listener speaks either TLS or plain HTTP");
    if (!cert && !insecure)
        return fail(p, "--enable-token-review needs --token-review-tls-cert-file and "
                       "--token-review-tls-private-key-file: callers send bearer tokens (plain HTTP, for "
                       "development only: --token-review-insecure-http)");
    if (!cert && is_set(p, "token-review-client-ca-file"))
        return fail(p, "--token-review-client-ca-file needs --token-review-tls-cert-file: client certificates "
                       "come with TLS");
    if (!is_set(p, "token-review-allowed-callers"))
        return fail(p, "--enable-token-review needs --token-review-allowed-callers NAME: nobody may call the "
                       "TokenReview API otherwise (a service account, system:serviceaccount:vault:vault-auth, or "
                       "with --token-review-client-ca-file a certificate subject, CN=vault,O=example)");
    return check_caller_subjects(p);
}

/* TLS listeners need a certificate and its key, and those mean nothing
 * without them; a server without its plain-http listener serves over TLS. */
static int check_tls(struct parser *p)
{
    static const char *const files[] = {"tls-cert-file", "tls-private-key-file"};
    int listens = is_set(p, "tls-listen");

    if (has_none(&named(p, "listen")->values) && !listens)
        return fail(p, "--listen none needs --tls-listen: the documents must be served somewhere");
    if (listens && !(is_set(p, files[0]) && is_set(p, files[1])))
        return fail(p, "--tls-listen needs --tls-cert-file and --tls-private-key-file");
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!listens && is_set(p, files[i]))
            return fail(p, "--%s needs --tls-listen", files[i]);
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
        const struct setting *s = setting_of(p, later);
        for (size_t a = 0; (later->commands & CMD(p->cmd)) && a < b; a++) {
            const struct config_option *earlier = config_option(listener_kinds[a]);
            const struct config_strlist *e = &setting_of(p, earlier)->values;
            for (size_t i = 0; (earlier->commands & CMD(p->cmd)) && i < s->values.count; i++) {
                for (size_t j = 0; j < e->count; j++) {
                    if (!same_listen(s->values.items[i], e->items[j]))
                        continue;
                    snprintf(problem, sizeof problem, "must differ from every --%s address", earlier->name);
                    return fail_value(p, s->origin, later, s->values.items[i], problem);
                }
            }
        }
    }
    return 0;
}

/* The --upstream flags mean nothing without --upstream, and a staleness bound shorter
 * than the refresh interval would turn /readyz 503 between two reads. */
static int check_upstream(struct parser *p)
{
    static const char *const flags[] = {"upstream-ca-file", "upstream-token-file", "upstream-refresh-interval",
                                        "upstream-timeout", "upstream-max-staleness"};
    const struct config_option *refresh = config_option("upstream-refresh-interval");
    const struct config_option *stale = config_option("upstream-max-staleness");
    int upstream = is_set(p, "upstream");

    if (p->cmd != CONFIG_CMD_SERVE)
        return 0;
    for (size_t i = 0; !upstream && i < sizeof flags / sizeof flags[0]; i++)
        if (is_set(p, flags[i]))
            return fail(p, "--%s needs --upstream", flags[i]);
    if (upstream && config_option_number(stale, setting_value(setting_of(p, stale))) <
                        config_option_number(refresh, setting_value(setting_of(p, refresh))))
        return fail(p, "--upstream-max-staleness must be at least --upstream-refresh-interval: /readyz would "
                       "otherwise fail between two reads");
    return 0;
}

/* The rules between serving options: a retention that a restart would
 * silently forget is refused, and so are a misplaced TokenReview API, TLS
 * listeners without a certificate and listeners that share an address.
 * keys takes serve's config file but opens no listener: the production
 * serving rules are serve's and dev's only. */
static int check_serving(struct parser *p)
{
    const struct config_option *retention = config_option("key-retention");

    if (config_option_number(retention, setting_value(setting_of(p, retention))) > 0 && !is_set(p, "state-dir"))
        return fail(p, "--key-retention needs --state-dir, so that retained keys survive a restart");
    if (check_token_review(p) < 0 || check_upstream(p) < 0)
        return -1;
    if ((CMD(p->cmd) & CONFIG_FOR_SERVERS) && check_tls(p) < 0)
        return -1;
    if (check_listener_clashes(p) < 0)
        return -1;
    return (CMD(p->cmd) & CONFIG_FOR_SERVERS) ? check_token_review_callers(p) : 0;
}

/* True when the row called name was given on the command line or in the
 * config file, not just defaulted. */
static int given(struct parser *p, const char *name)
{
    const struct config_option *o = config_option(name);

    if (!(o->commands & CMD(p->cmd)))
        return 0;
    if (setting_of(p, o)->origin != NULL)
        return 1;
    for (size_t i = 0; i < p->flag_count; i++)
        if (target(p->flags[i].o) == o)
            return 1;
    return 0;
}

/* The number of a duration row's value, in seconds. */
static unsigned long seconds_of(struct parser *p, const char *name)
{
    const struct config_option *o = config_option(name);

    return config_option_number(o, setting_value(setting_of(p, o)));
}

/* The flags of the external signer mean nothing without its key
 * directory, and its socket's without the socket. */
static int check_signer_needs(struct parser *p)
{
    static const char *const needs_dir[] = {"external-signer-listen",    "signing-key-import", "signing-key-type",
                                            "rotation-period",           "publish-ahead",      "max-token-lifetime",
                                            "allow-short-token-lifetime"};
    static const char *const needs_socket[] = {"external-signer-socket-mode", "external-signer-socket-owner",
                                               "external-signer-threads", "external-signer-idle-timeout",
                                               "external-signer-max-buffered-bytes"};
    int dir = is_set(p, "signing-key-dir");

    for (size_t i = 0; i < sizeof needs_dir / sizeof needs_dir[0]; i++)
        if (!dir && given(p, needs_dir[i]))
            return fail(p, "--%s needs --signing-key-dir DIR (the keys this server signs with)", needs_dir[i]);
    for (size_t i = 0; i < sizeof needs_socket / sizeof needs_socket[0]; i++)
        if (!is_set(p, "external-signer-listen") && given(p, needs_socket[i]))
            return fail(p, "--%s needs --external-signer-listen unix:PATH", needs_socket[i]);
    if (dir && is_set(p, "signing-key-file") && (config_option("signing-key-file")->commands & CMD(p->cmd)))
        return fail(p, "--signing-key-file watches a key the API server signs with itself; with --signing-key-dir "
                       "this server signs: drop --signing-key-file (to start signing with that key, give it as "
                       "--signing-key-import)");
    return 0;
}

/* The timing of the signer's rotation (docs/compatibility.md §7): a key
 * signs only once relying parties can have fetched it, which takes
 * --max-age (go-oidc keeps a key set until max-age minus 30 s; node jose
 * waits a 30 s cooldown after a miss; a cache in front adds its own
 * max-age); a key signs for a rotation period at least as long as it
 * waits; kube-apiserver refuses a lifetime under 10 minutes. */
static int check_signer_timing(struct parser *p)
{
    unsigned long ahead = seconds_of(p, "publish-ahead"), max_age = seconds_of(p, "max-age");
    unsigned long lifetime = seconds_of(p, "max-token-lifetime");
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
    if (seconds_of(p, "rotation-period") < ahead)
        return fail(p,
                    "--rotation-period is shorter than --publish-ahead %s: a key signs only after it has been "
                    "published that long; make the period at least as long",
                    a);
    if (lifetime < 10 * CONFIG_MINUTE && strcmp(setting_value(named(p, "allow-short-token-lifetime")), "true") != 0)
        return fail(p, "--max-token-lifetime must be at least 10m: kube-apiserver refuses a signer whose Metadata "
                       "says less than 600 seconds (--allow-short-token-lifetime accepts it, for tests)");
    if (ahead < max_age + CONFIG_MINUTE) {
        snprintf(line, sizeof line,
                 "--publish-ahead %s is less than a minute longer than --max-age %s: node jose waits a 30 s "
                 "cooldown after an unknown kid and a cache in front of this server adds its own max-age; a "
                 "minute or more of margin is safer",
                 a, m);
        if (config_strlist_append(&p->cfg.warnings, line, strlen(line)) < 0)
            return fail(p, "out of memory");
    }
    return 0;
}

/* serve, keys, export and publish need keys to publish: key files, a
 * signing key directory, or (serve) an --upstream's; dev has its own key
 * file. */
static int check_signer(struct parser *p)
{
    int serve = p->cmd == CONFIG_CMD_SERVE;

    if (p->cmd != CONFIG_CMD_DEV && !is_set(p, "service-account-key-file") && !is_set(p, "signing-key-dir") &&
        !(serve && is_set(p, "upstream")))
        return fail(p, "--service-account-key-file is required (at least one) unless %s is given",
                    serve ? "--upstream or --signing-key-dir" : "--signing-key-dir");
    if (check_signer_needs(p) < 0)
        return -1;
    if (is_set(p, "signing-key-dir") && (config_option("publish-ahead")->commands & CMD(p->cmd)))
        return check_signer_timing(p);
    return 0;
}

/* verify takes its keys from files or from a discovery document, exactly
 * one of them; the document also names the issuer, which files cannot. */
static int check_verify(struct parser *p)
{
    int files = is_set(p, "service-account-key-file"), discovery = is_set(p, "discovery-url");

    if (!files && !discovery)
        return fail(p, "verify needs --service-account-key-file or --discovery-url");
    if (files && discovery)
        return fail(p, "--discovery-url and --service-account-key-file are mutually exclusive");
    if (is_set(p, "ca-file") && !discovery)
        return fail(p, "--ca-file needs --discovery-url");
    if (!discovery && !is_set(p, "service-account-issuer"))
        return fail(p, "--service-account-issuer is required (at least one) unless --discovery-url is given");
    return 0;
}

/* A minted token's issuer is one relying parties can take: https (unless
 * --allow-insecure-issuer), no query or fragment. The row takes any web
 * URL, since doctor reports such an issuer rather than refusing it. And
 * a minted token is bound to a pod or a node by both its name and its UID,
 * as the API server binds them, or not at all. */
static int check_token(struct parser *p)
{
    static const char *const pairs[][2] = {{"pod-name", "pod-uid"}, {"node-name", "node-uid"}};
    const struct setting *issuer = named(p, "issuer");
    const char *why = config_check_url(setting_value(issuer), p->allow_http);

    if (why)
        return fail_value(p, issuer->origin, config_option("issuer"), setting_value(issuer), why);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (is_set(p, pairs[i][0]) != is_set(p, pairs[i][1]))
            return fail(p, "--%s and --%s go together", pairs[i][0], pairs[i][1]);
    return 0;
}

/* How many of the targets of --publish-to (or publish --to) are of kind. */
static size_t count_targets(struct parser *p, enum config_bucket_kind kind)
{
    const struct setting *s = named(p, p->cmd == CONFIG_CMD_PUBLISH ? "to" : "publish-to");
    struct config_bucket_url parts;
    size_t n = 0;

    for (size_t i = 0; i < s->values.count; i++)
        n += config_split_bucket_url(s->values.items[i], &parts) == NULL && parts.kind == kind;
    return n;
}

/* The store flags mean something only with a target of their store, and
 * an Azure target is authorised one way: a SAS token or the account key. */
static int check_publishing(struct parser *p)
{
    static const char *const s3_flags[] = {"s3-endpoint"};
    static const char *const azure_flags[] = {"azblob-endpoint", "azblob-sas-file", "azblob-key-file"};
    const char *targets = p->cmd == CONFIG_CMD_PUBLISH ? "--to" : "--publish-to";

    for (size_t i = 0; i < sizeof s3_flags / sizeof s3_flags[0]; i++)
        if (is_set(p, s3_flags[i]) && count_targets(p, CONFIG_BUCKET_S3) == 0)
            return fail(p, "--%s needs an s3:// target (%s s3://BUCKET/PREFIX)", s3_flags[i], targets);
    for (size_t i = 0; i < sizeof azure_flags / sizeof azure_flags[0]; i++)
        if (is_set(p, azure_flags[i]) && count_targets(p, CONFIG_BUCKET_AZBLOB) == 0)
            return fail(p, "--%s needs an azblob:// target (%s azblob://ACCOUNT/CONTAINER/PREFIX)", azure_flags[i],
                        targets);
    if (is_set(p, "azblob-sas-file") && is_set(p, "azblob-key-file"))
        return fail(p, "--azblob-sas-file and --azblob-key-file are mutually exclusive (a SAS token or the account "
                       "key)");
    return 0;
}

/* The rules between options, which differ by command. export and publish
 * take the serving rules too: they open no listener, so only the retention
 * rule can apply to them. doctor's flags are independent of each other. */
static int check_rules(struct parser *p)
{
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
    const struct setting *s = setting_of(p, o);
    char line[CONFIG_ERR_MAX];

    for (size_t i = 0; (o->commands & CMD(p->cmd)) && i < s->values.count; i++) {
        const char *v = s->values.items[i];
        if (v[0] == '\0' || v[strlen(v) - 1] != '/')
            continue;
        say_value(line, sizeof line, s->origin, o, v,
                  "ends with \"/\"; relying parties compare the issuer byte for byte, so the iss of the tokens and "
                  "the issuer registered with each relying party must end with \"/\" too");
        if (config_strlist_append(&p->cfg.warnings, line, strlen(line)) < 0)
            return fail(p, "out of memory");
    }
    return 0;
}

/* A store reached over plain http sees the documents and the requests'
 * signatures unencrypted: for a local store (an emulator, a test) only. */
static int warn_http_endpoint(struct parser *p, const char *name)
{
    const struct config_option *o = config_option(name);
    const struct setting *s = setting_of(p, o);
    const char *v = setting_value(s);
    char line[CONFIG_ERR_MAX];

    if (!(o->commands & CMD(p->cmd)) || v == NULL || strncmp(v, "http://", 7) != 0)
        return 0;
    say_value(line, sizeof line, s->origin, o, v,
              "plain http: the documents and the signed requests travel unencrypted; for a local store only");
    return config_strlist_append(&p->cfg.warnings, line, strlen(line)) < 0 ? fail(p, "out of memory") : 0;
}

/* Everything a command needs beyond the defaults. doctor's --issuer gets
 * no trailing-slash warning: its report compares the issuers itself. */
static int validate(struct parser *p)
{
    if (check_commands(p) < 0 || check_values(p) < 0 || put_derived(p) < 0 || check_required(p) < 0 ||
        check_rules(p) < 0)
        return -1;
    if (warn_trailing_slash(p, config_option("service-account-issuer")) < 0 ||
        (p->cmd == CONFIG_CMD_TOKEN && warn_trailing_slash(p, config_option("issuer")) < 0))
        return -1;
    if (warn_http_endpoint(p, "s3-endpoint") < 0 || warn_http_endpoint(p, "azblob-endpoint") < 0)
        return -1;
    return 0;
}

/* Moves the settings into p->cfg. */
static int convert(struct parser *p)
{
    p->cfg.no_admin = has_none(&named(p, "admin-listen")->values);
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        if (config_field_of(o) && config_field_store(&p->cfg, o, &p->settings[i].values) < 0)
            return fail(p, "out of memory");
    }
    return 0;
}

/* Frees what the parser still owns, including a config not handed out. */
static void parser_free(struct parser *p)
{
    for (size_t i = 0; p->settings && i < config_option_count; i++)
        config_strlist_free(&p->settings[i].values);
    free(p->settings);
    free(p->flags);
    config_free(&p->cfg);
}

int config_parse(int argc, char **argv, enum config_command *cmd, struct config *out, char *err, size_t errlen)
{
    struct parser p = {.err = err, .errlen = errlen};
    int first = 0, checked, rc = 0;

    memset(out, 0, sizeof *out);
    if (!(p.settings = calloc(config_option_count, sizeof *p.settings)))
        rc = fail(&p, "out of memory");
    if (rc == 0)
        rc = parse_command(&p, argc, argv, &first);
    p.named = first;
    if (rc == 0 && p.cmd == CONFIG_CMD_HELP)
        rc = parse_help(&p, argc, argv);
    else if (rc == 0)
        rc = scan_flags(&p, argc - first, argv + first);
    checked = p.cmd != CONFIG_CMD_HELP && p.cmd != CONFIG_CMD_VERSION;
    if (rc == 0 && checked)
        rc = merge_sources(&p);
    if (rc == 0)
        rc = put_defaults(&p);
    if (rc == 0 && checked)
        rc = validate(&p);
    if (rc == 0)
        rc = convert(&p);
    if (rc == 0) {
        *cmd = p.cmd;
        *out = p.cfg;
        memset(&p.cfg, 0, sizeof p.cfg);
    }
    parser_free(&p);
    return rc;
}
