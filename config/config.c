/* SPDX-License-Identifier: Apache-2.0 */
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
 *                    flag (dev's own defaults, those that apply only with
 *                    another flag, and multiples of another's included);
 *   validate()       checks that the command takes each flag given, checks
 *                    every value (checks.c), derives the defaults that depend
 *                    on other flags (rules.c), checks the required options,
 *                    what each flag given needs and excludes (the rows'
 *                    needs and excludes), and the rules between options
 *                    that are more than that (rules.c);
 *   convert()        moves the settings into the rows' struct config fields.
 */
#include "config/config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/checks.h"
#include "config/fields.h"
#include "config/file.h"
#include "config/options.h"
#include "config/parser.h"
#include "util/printable.h"

#define FLAG_VAL 256 /* getopt values of long flags start past every short option character */

/* Writes a message of at most len bytes, cut short if it must be. */
void parser_say(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, len, fmt, ap);
    va_end(ap);
}

/* Quotes s[0..len) for an error message so that no value can break the
 * message's single line. */
struct quoted parser_quote(const char *s, size_t len)
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
void parser_say_value(char *out, size_t len, const char *origin, const struct config_option *o, const char *value,
                      const char *what)
{
    if (origin)
        config_file_key_error(out, len, origin, o->name, what);
    else
        parser_say(out, len, "--%s %s: %s", o->name, parser_quote(value, strlen(value)).s, what);
}

/* Reports a bad value of row o. */
int parser_fail_value(struct parser *p, const char *origin, const struct config_option *o, const char *value,
                      const char *problem)
{
    parser_say_value(p->err, p->errlen, origin, o, value, problem);
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

struct setting *parser_setting_of(struct parser *p, const struct config_option *o)
{
    return &p->settings[config_option_index(o)];
}

/* The setting of the row called name. */
struct setting *parser_named(struct parser *p, const char *name)
{
    return parser_setting_of(p, config_option(name));
}

/* Records one value of row o from origin (the config file's path, or NULL
 * for the command line). The first value from another origin drops the old
 * ones, so a repeated flag replaces the file's list; a single-valued row
 * keeps only its latest value. */
int parser_setting_put(struct parser *p, const struct config_option *o, const char *origin, const char *value)
{
    struct setting *s = parser_setting_of(p, o);

    if (s->origin != origin || !is_repeatable(o))
        config_strlist_free(&s->values);
    s->origin = origin;
    if (config_strlist_append(&s->values, value, strlen(value)) < 0)
        return fail(p, "out of memory");
    return 0;
}

/* The (only or latest) value of a single-valued setting, or NULL. */
const char *parser_setting_value(const struct setting *s)
{
    return s->values.count ? s->values.items[s->values.count - 1] : NULL;
}

/* True when the row called name has a value from a flag, the file or a
 * default. */
int parser_is_set(struct parser *p, const char *name)
{
    return parser_named(p, name)->values.count > 0;
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
    return fail(p, "unknown command %s%s%s%s (commands: %s%s)", parser_quote(name, strlen(name)).s,
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
        return fail(p, "unexpected argument %s", parser_quote(argv[3], strlen(argv[3])).s);
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

    return fail(p, "unknown flag %s%s (see --help)", parser_quote(name, len).s,
                suggest(p, name + dashes, len - dashes, 1).s);
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
        return fail(p, "unexpected argument %s", parser_quote(optarg, strlen(optarg)).s);
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
        return fail(p, "unexpected argument %s", parser_quote(argv[optind], strlen(argv[optind])).s);
    return rc;
}

/* Takes a value from the config file (file.c calls it). */
static int put_from_file(void *ctx, const struct config_option *o, const char *value)
{
    struct parser *p = ctx;

    return parser_setting_put(p, o, p->config_path, value);
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
        if (parser_setting_put(p, target(f->o), NULL, value) < 0)
            return -1;
    }
    return 0;
}

/* The default of row o for the command into out (len bytes), or NULL:
 * the row's own, dev's, one known at run time, or a multiple of another
 * row's value. A default with def_with applies only when the command takes
 * that flag and it has a value. */
static const char *default_of(struct parser *p, const struct config_option *o, char *out, size_t len)
{
    const struct config_option *with = o->def_with ? config_option(o->def_with) : NULL;

    if (with && (!(with->commands & CMD(p->cmd)) || parser_setting_of(p, with)->values.count == 0))
        return NULL;
    if (o->def_fn) {
        o->def_fn(o, out, len);
        return out;
    }
    if (o->def_of) {
        snprintf(out, len, "%lu", o->def_times * parser_seconds_of(p, o->def_of));
        return out;
    }
    return p->cmd == CONFIG_CMD_DEV && o->dev_def ? o->dev_def : o->def;
}

/* Fills the rows nobody set with their defaults, as if given as flags, so
 * that converting them needs no special case. A row whose default is
 * another's multiple comes after that row in the table. */
static int put_defaults(struct parser *p)
{
    char computed[32];

    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        const char *value = parser_setting_of(p, o)->values.count ? NULL : default_of(p, o, computed, sizeof computed);
        if (value && parser_setting_put(p, o, NULL, value) < 0)
            return -1;
    }
    p->allow_http = strcmp(parser_setting_value(parser_named(p, "allow-insecure-issuer")), "true") == 0;
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
int parser_has_none(const struct config_strlist *l)
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

    /* keys and export, and doctor over a fleet, take --issuer as the NAME
     * of an issuer of the fleet (fleet_each checks it against the
     * directory), not as a URL */
    const struct config_option *by_name = p->cmd == CONFIG_CMD_KEYS || p->cmd == CONFIG_CMD_EXPORT ||
                                                  (p->cmd == CONFIG_CMD_DOCTOR && parser_is_set(p, "issuers-dir"))
                                              ? config_option("issuer")
                                              : NULL;

    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        const struct setting *s = parser_setting_of(p, o);
        for (size_t j = 0; j < s->values.count && o != by_name; j++) {
            const char *why = config_option_check(o, s->values.items[j], p->allow_http, problem);
            if (why)
                return parser_fail_value(p, s->origin, o, s->values.items[j], why);
        }
        if ((o->flags & CONFIG_NONE_OK) && s->values.count > 1 && parser_has_none(&s->values))
            return fail(p, "--%s none cannot be combined with addresses", o->name);
    }
    return 0;
}

/* Adds a warning line to the config. */
int parser_warn(struct parser *p, const char *line)
{
    return config_strlist_append(&p->cfg.warnings, line, strlen(line)) < 0 ? fail(p, "out of memory") : 0;
}

int parser_is_on(struct parser *p, const char *name)
{
    return strcmp(parser_setting_value(parser_named(p, name)), "true") == 0;
}

int parser_given_row(struct parser *p, const struct config_option *o)
{
    if (!(o->commands & CMD(p->cmd)))
        return 0;
    if (parser_setting_of(p, o)->origin != NULL)
        return 1;
    for (size_t i = 0; i < p->flag_count; i++)
        if (target(p->flags[i].o) == o)
            return 1;
    return 0;
}

int parser_given(struct parser *p, const char *name)
{
    return parser_given_row(p, config_option(name));
}

unsigned long parser_seconds_of(struct parser *p, const char *name)
{
    const struct config_option *o = config_option(name);

    return config_option_number(o, parser_setting_value(parser_setting_of(p, o)));
}

/* Refuses to run a command without what it needs, in the rows' order. A
 * fleet's issuers are in its files (config_issuer_parse requires each
 * file's). */
static int check_required(struct parser *p)
{
    const struct config_option *issuer = config_option("service-account-issuer"), *pick = config_option("issuer");
    int fleet = parser_is_set(p, "issuers-dir");

    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        if ((o == issuer || o == pick) && fleet)
            continue;
        if ((o->required & CMD(p->cmd)) && parser_setting_of(p, o)->values.count == 0)
            return fail(p, "--%s is required%s", o->name, o->why_required);
    }
    return 0;
}

/* True when row o has a value for the command, its default included (a
 * switch: when it is on). */
static int has_value(struct parser *p, const struct config_option *o)
{
    const struct setting *s = parser_setting_of(p, o);

    if (o->kind == CONFIG_KIND_BOOL)
        return s->values.count > 0 && strcmp(parser_setting_value(s), "true") == 0;
    return s->values.count > 0;
}

/* True when row o was given to the command (a switch: given and on): what
 * a row's needs and excludes are about, so that a default asks nothing. */
static int in_force(struct parser *p, const struct config_option *o)
{
    return parser_given_row(p, o) && (o->kind != CONFIG_KIND_BOOL || has_value(p, o));
}

/* The row that relation r of row o names alone and that names o alone
 * back, with no reason on either side: the two go together. NULL when the
 * relation is not such a pair. */
static const struct config_option *partner(const struct config_option *o, const struct config_relation *r)
{
    const char *at = r->flags;
    const struct config_option *other = config_option_next(&at);

    if (r->why || other == NULL || config_option_next(&at) != NULL)
        return NULL;
    for (const struct config_relation *back = other->needs; back && back->flags; back++) {
        at = back->flags;
        if (!back->why && config_option_next(&at) == o && config_option_next(&at) == NULL)
            return other;
    }
    return NULL;
}

/* Refuses row o given without what one of its needs names: "--a needs
 * --b", or for a pair that needs each other "--a and --b go together"
 * (in the table's order). A need on a flag the command does not take is
 * no need there. */
static int check_needs(struct parser *p, const struct config_option *o)
{
    char names[CONFIG_ERR_MAX];

    for (const struct config_relation *r = o->needs; r && r->flags; r++) {
        const struct config_option *other, *pair = partner(o, r);
        int missing = 0;
        for (const char *at = r->flags; (other = config_option_next(&at)) != NULL;)
            if ((other->commands & CMD(p->cmd)) && !has_value(p, other))
                missing = 1;
        if (!missing)
            continue;
        if (pair) {
            int first = config_option_index(o) < config_option_index(pair);
            return fail(p, "--%s and --%s go together", first ? o->name : pair->name, first ? pair->name : o->name);
        }
        config_option_names(r->flags, names, sizeof names);
        return fail(p, "--%s needs %s%s", o->name, names, r->why ? r->why : "");
    }
    return 0;
}

/* Refuses row o given with a flag one of its excludes names. */
static int check_excludes(struct parser *p, const struct config_option *o)
{
    const struct config_option *other;

    for (const struct config_relation *r = o->excludes; r && r->flags; r++)
        for (const char *at = r->flags; (other = config_option_next(&at)) != NULL;)
            if ((other->commands & CMD(p->cmd)) && has_value(p, other))
                return fail(p, "--%s and --%s are mutually exclusive%s", o->name, other->name, r->why ? r->why : "");
    return 0;
}

/* Whether the needs of per-issuer row o are not this parse's to check: a
 * fleet's command line gives every issuer's defaults, whose needs each
 * file that sets the row meets (an --upstream-token-file default needs
 * an upstream only in the files that mirror). */
static int needs_elsewhere(struct parser *p, const struct config_option *o)
{
    if (!(o->flags & CONFIG_ISSUER) || p->fleet == 0)
        return 0;
    return p->fleet == 1 || parser_setting_of(p, o)->origin != p->config_path;
}

/* The rules the rows say: each flag given has what it needs and nothing
 * it excludes, in the rows' order, every need before any exclusion. */
static int check_relations(struct parser *p)
{
    for (size_t i = 0; i < config_option_count; i++)
        if (in_force(p, &config_options[i]) && !needs_elsewhere(p, &config_options[i]) &&
            check_needs(p, &config_options[i]) < 0)
            return -1;
    for (size_t i = 0; i < config_option_count; i++)
        if (in_force(p, &config_options[i]) && check_excludes(p, &config_options[i]) < 0)
            return -1;
    return 0;
}

/* Everything a command needs beyond the defaults. */
static int validate(struct parser *p)
{
    if (check_commands(p) < 0 || check_values(p) < 0 || config_put_derived(p) < 0 || check_required(p) < 0 ||
        check_relations(p) < 0 || config_check_rules(p) < 0)
        return -1;
    return config_warnings(p);
}

/* Moves the settings into p->cfg. */
static int convert(struct parser *p)
{
    p->cfg.no_admin = parser_has_none(&parser_named(p, "admin-listen")->values);
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        if (config_field_of(o) && config_field_store(&p->cfg, o, &p->settings[i].values) < 0)
            return fail(p, "out of memory");
    }
    return 0;
}

/* What an --issuers-dir file starts from: the command, the settings of
 * the command line and the --config file before any default, and the rows
 * the command line gave (for the rules about flags given). */
struct config_sources {
    enum config_command cmd;
    struct setting *settings; /* one per row; origins point at config_path */
    const struct config_option **given;
    size_t given_count;
    char *config_path;
};

void config_sources_free(struct config_sources *src)
{
    for (size_t i = 0; src && src->settings && i < config_option_count; i++)
        config_strlist_free(&src->settings[i].values);
    if (src) {
        free(src->settings);
        free(src->given);
        free(src->config_path);
    }
    free(src);
}

/* Copies the values of one setting into to (empty), with origin. */
static int setting_copy(struct setting *to, const struct setting *from, const char *origin)
{
    to->origin = from->origin ? origin : NULL;
    for (size_t j = 0; j < from->values.count; j++)
        if (config_strlist_append(&to->values, from->values.items[j], strlen(from->values.items[j])) < 0)
            return -1;
    return 0;
}

/* With --issuers-dir, keeps what each issuer file starts from (the merged
 * sources, before the defaults, which depend on the file's values). */
static int save_sources(struct parser *p)
{
    struct config_sources *src;
    int rc = 0;

    if (!(config_option("issuers-dir")->commands & CMD(p->cmd)) || !parser_is_set(p, "issuers-dir"))
        return 0;
    if (!(src = calloc(1, sizeof *src)) || !(src->settings = calloc(config_option_count, sizeof *src->settings)) ||
        !(src->given = calloc(p->flag_count + 1, sizeof *src->given)) ||
        (p->config_path && !(src->config_path = strdup(p->config_path)))) {
        config_sources_free(src);
        return fail(p, "out of memory");
    }
    src->cmd = p->cmd;
    for (size_t i = 0; rc == 0 && i < config_option_count; i++)
        rc = setting_copy(&src->settings[i], &p->settings[i], src->config_path);
    for (size_t i = 0; i < p->flag_count; i++)
        src->given[src->given_count++] = target(p->flags[i].o);
    p->cfg.sources = src;
    return rc < 0 ? fail(p, "out of memory") : 0;
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
    if (rc == 0 && checked)
        rc = save_sources(&p);
    p.fleet = p.cfg.sources != NULL;
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

/* Takes a value from an issuer file (file.c calls it). */
static int put_from_issuer(void *ctx, const struct config_option *o, const char *value)
{
    struct parser *p = ctx;

    return parser_setting_put(p, o, p->config_path, value);
}

/* Starts p from the fleet's sources, without --issuers-dir itself nor the
 * --issuer NAME that picked one of its files: an issuer's config is a
 * one-issuer server's. */
static int start_from(struct parser *p, const struct config_sources *src)
{
    const struct config_option *dir = config_option("issuers-dir"), *pick = config_option("issuer");

    p->cmd = src->cmd;
    if (!(p->settings = calloc(config_option_count, sizeof *p->settings)) ||
        !(p->flags = calloc(src->given_count + 1, sizeof *p->flags)))
        return fail(p, "out of memory");
    for (size_t i = 0; i < config_option_count; i++)
        if (&config_options[i] != dir && &config_options[i] != pick &&
            setting_copy(&p->settings[i], &src->settings[i], src->config_path) < 0)
            return fail(p, "out of memory");
    for (size_t i = 0; i < src->given_count; i++)
        if (src->given[i] != dir && src->given[i] != pick)
            p->flags[p->flag_count++] = (struct flag){src->given[i], NULL};
    return 0;
}

/* An issuer's state directory: NAME inside the fleet's --state-dir. */
static int issuer_state_dir(struct parser *p, const char *name)
{
    char *dir = p->cfg.state_dir, *sub = NULL;

    if (dir == NULL)
        return 0;
    if (asprintf(&sub, "%s/%s", dir, name) < 0)
        return fail(p, "out of memory");
    free(dir);
    p->cfg.state_dir = sub;
    return 0;
}

/* The per-issuer place of a --publish-to the command line gave every
 * issuer: URL/SUFFIX, where SUFFIX is the issuer URL's path (a bucket then
 * holds the fleet as its URLs lay it out, and one host in front of it
 * serves every issuer), or the file's NAME for an issuer without a path.
 * A file's own publish-to is taken as it is. */
static int issuer_publish_to(struct parser *p, const char *name)
{
    struct setting *to = parser_named(p, "publish-to"), *iss = parser_named(p, "service-account-issuer");
    const char *url = iss->values.count ? iss->values.items[0] : "", *host = strstr(url, "://");
    const char *path = host ? strchr(host + 3, '/') : NULL;
    struct config_strlist out = {0};
    size_t plen;

    if (to->values.count == 0 || to->origin == p->config_path)
        return 0;
    while (path && *path == '/')
        path++;
    plen = path ? strlen(path) : 0;
    while (plen > 0 && path[plen - 1] == '/')
        plen--;
    if (plen == 0)
        path = name, plen = strlen(name);
    for (size_t i = 0; i < to->values.count; i++) {
        const char *base = to->values.items[i];
        size_t blen = strlen(base);
        char *joined;
        while (blen > 0 && base[blen - 1] == '/')
            blen--;
        if (asprintf(&joined, "%.*s/%.*s", (int)blen, base, (int)plen, path) < 0)
            joined = NULL;
        if (joined == NULL || config_strlist_append(&out, joined, strlen(joined)) < 0) {
            free(joined);
            config_strlist_free(&out);
            return fail(p, "out of memory");
        }
        free(joined);
    }
    config_strlist_free(&to->values);
    to->values = out;
    return 0;
}

/* Makes a message of a rule between settings (which names flags) name
 * the issuer file too, since the operator has many; returns -1. */
static int name_the_file(const char *path, char *err, size_t errlen)
{
    char *why;

    if (strstr(err, path) != NULL || (why = strdup(err)) == NULL)
        return -1;
    parser_say(err, errlen, "issuer file %s: %s", path, why);
    free(why);
    return -1;
}

int config_issuer_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > CONFIG_ISSUER_NAME_MAX || name[0] == '.')
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.'))
            return 0;
    }
    return 1;
}

int config_issuer_parse(const struct config *fleet, const char *path, const char *name, struct config *out, char *err,
                        size_t errlen)
{
    struct parser p = {.err = err, .errlen = errlen, .config_path = path};
    int rc = fleet->sources ? start_from(&p, fleet->sources) : fail(&p, "no --issuers-dir");

    p.fleet = 2;
    memset(out, 0, sizeof *out);
    if (rc == 0)
        rc = config_file_read_issuer(path, put_from_issuer, &p, err, errlen);
    if (rc == 0 && parser_named(&p, "service-account-issuer")->origin != path)
        rc = config_file_key_error(err, errlen, path, "service-account-issuer", "is required (the issuer's URL)");
    if (rc == 0)
        rc = issuer_publish_to(&p, name);
    if (rc == 0)
        rc = put_defaults(&p);
    if (rc == 0)
        rc = validate(&p);
    if (rc == 0)
        rc = convert(&p);
    if (rc == 0)
        rc = issuer_state_dir(&p, name);
    if (rc == 0) {
        *out = p.cfg;
        memset(&p.cfg, 0, sizeof p.cfg);
    }
    parser_free(&p);
    return rc < 0 ? name_the_file(path, err, errlen) : rc;
}
