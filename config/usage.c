/* SPDX-License-Identifier: Apache-2.0 */
/*
 * usage.c: the help text, written from the option table so that a range
 * ("1 to 256") or a default ("default 3600") is never typed twice.
 *
 * A command's help lists the flags it takes, by group, its own group
 * first; the overview lists the commands and then serve's flags (serve is
 * the default command); `help all` lists every flag once, each group
 * titled with the commands that take it (the man page is made of it).
 * Lines are wrapped at 80 columns, descriptions starting at column 34.
 */
#include "config/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/options.h"

#define WIDTH  80
#define COLUMN 34
#define ALL    (-1) /* "for every command": help all */

#define DURATION_NOTE "DURATION: 90s, 15m, 24h, 7d or plain seconds."

/* Writes text wrapped at WIDTH, going on from column used, each further
 * line indented by indent; a word longer than a line stands alone. */
static void put_wrapped(FILE *f, const char *text, size_t used, size_t indent)
{
    int fresh = 1; /* nothing written yet on this line */

    for (const char *w = text + strspn(text, " "); *w;) {
        size_t n = strcspn(w, " ");
        if (!fresh && used + 1 + n > WIDTH) {
            fprintf(f, "\n%*s", (int)indent, "");
            used = indent;
        } else if (!fresh) {
            fputc(' ', f);
            used++;
        }
        fprintf(f, "%.*s", (int)n, w);
        used += n;
        fresh = 0;
        w += n + strspn(w + n, " ");
    }
    fputc('\n', f);
}

/* Writes the left column (indented name) and pads to COLUMN, or ends the
 * line when the name reaches it. Returns the column the text goes on at. */
static size_t put_left(FILE *f, const char *left)
{
    size_t n = strlen(left);

    if (n + 1 > COLUMN) {
        fprintf(f, "%s\n%*s", left, COLUMN, "");
        return COLUMN;
    }
    fprintf(f, "%s%*s", left, (int)(COLUMN - n), "");
    return COLUMN;
}

/* The switch that negates row o (--no-cors for --cors), or NULL. */
static const struct config_option *negation_of(const struct config_option *o)
{
    for (size_t i = 0; o->kind == CONFIG_KIND_BOOL && i < config_option_count; i++)
        if ((config_options[i].flags & CONFIG_NEGATES) && config_options[i].field == o->field)
            return &config_options[i];
    return NULL;
}

/* A value as help shows it: a switch's default is on or off. */
static const char *shown(const struct config_option *o, const char *value)
{
    if (o->kind == CONFIG_KIND_BOOL)
        return strcmp(value, "true") == 0 ? "on" : "off";
    return value;
}

/* Writes the names of the commands whose bits are set: "serve, dev and
 * keys". */
static void put_commands(FILE *f, unsigned bits)
{
    int left = __builtin_popcount(bits);

    for (int c = 0; c < CONFIG_COMMAND_COUNT; c++) {
        if (!(bits & CONFIG_CMD_BIT(c)))
            continue;
        fprintf(f, "%s%s", config_commands[c].name, --left > 1 ? ", " : left == 1 ? " and " : "");
    }
}

/* The words of row o for command cmd that replace its own (ALL: none). */
static const struct config_help_variant *variant_of(const struct config_option *o, int cmd)
{
    for (const struct config_help_variant *v = o->help_for; cmd != ALL && v && v->commands; v++)
        if (v->commands & CONFIG_CMD_BIT(cmd))
            return v;
    return NULL;
}

/* The names of flags (a relation's, space-separated) that a command of
 * commands takes, written into buf: a command's help names no flag it
 * does not take. flags itself when every one is taken or buf is short. */
static const char *relation_taken(const char *flags, unsigned commands, char *buf, size_t size)
{
    const char *at = flags;
    const struct config_option *other;
    size_t n = 0;

    while ((other = config_option_next(&at)) != NULL) {
        size_t len = strlen(other->name);
        if (!(other->commands & commands))
            continue;
        if (n + len + 2 > size)
            return flags;
        n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? " " : "", other->name);
    }
    return n > 0 ? buf : flags;
}

/* Writes ". Needs --a and --b" for each relation (needs or excludes) of
 * row o that holds for command cmd: one that names a flag cmd takes (ALL:
 * a flag every command of the row takes; a flag of one of them only is
 * said in that command's help). The rows say what goes with a flag, so
 * help does not repeat it by hand. */
static void put_relations(FILE *f, const struct config_option *o, const struct config_relation *r, const char *verb,
                          int cmd)
{
    unsigned commands = cmd == ALL ? o->commands : CONFIG_CMD_BIT(cmd);
    char names[256], taken_names[256];

    for (; r && r->flags; r++) {
        const struct config_option *other;
        unsigned taken = 0;
        for (const char *at = r->flags; (other = config_option_next(&at)) != NULL;)
            taken |= other->commands;
        if ((commands & taken) != commands)
            continue;
        config_option_names(relation_taken(r->flags, commands, taken_names, sizeof taken_names), names, sizeof names);
        fprintf(f, ". %s %s", verb, names);
    }
}

/* Writes what help says of row o's default for command cmd (ALL: for
 * every command, dev's own default after the general one). */
static void put_default(FILE *f, const struct config_option *o, int cmd)
{
    int dev = cmd == CONFIG_CMD_DEV && (o->dev_def || o->dev_text);
    const struct config_help_variant *v = variant_of(o, cmd);
    const char *def_text = v && v->def_text ? v->def_text : o->def_text;

    if (cmd == ALL ? o->required != 0 : (o->required & CONFIG_CMD_BIT(cmd)) != 0) {
        fprintf(f, "required");
        if (cmd == ALL) {
            fprintf(f, " by ");
            put_commands(f, o->required);
        }
    } else if (dev && o->dev_def) {
        fprintf(f, "default %s", shown(o, o->dev_def));
    } else if (dev) {
        fprintf(f, "default: %s", o->dev_text);
    } else if (def_text) {
        fprintf(f, "default: %s", def_text);
    } else if (o->def_of) {
        fprintf(f, "default: %lu times --%s", o->def_times, o->def_of);
    } else {
        fprintf(f, "default %s", o->def ? shown(o, o->def) : "none");
    }
    fprintf(f, "%s", o->def_note ? o->def_note : "");
    if (cmd == ALL && (o->dev_def || o->dev_text))
        fprintf(f, "; dev: %s", o->dev_def ? shown(o, o->dev_def) : o->dev_text);
}

/* Writes the range of a numeric row: "1 to 256", "1s to 1d". */
static void put_range(FILE *f, const struct config_option *o)
{
    char lo[32], hi[32];

    if (o->kind == CONFIG_KIND_DURATION) {
        config_format_duration(o->min, lo, sizeof lo);
        config_format_duration(o->max, hi, sizeof hi);
        fprintf(f, "%s to %s", lo, hi);
    } else {
        fprintf(f, "%lu to %lu", o->min, o->max);
    }
}

/* Writes row o's description for command cmd: its help with the range
 * where "%r" stands (else after it) and the choices, then the default,
 * what it needs and excludes; for help all, then the commands that take
 * it. */
static void put_description(FILE *f, const struct config_option *o, int cmd)
{
    const struct config_help_variant *v = variant_of(o, cmd);
    const char *help = v && v->help ? v->help : o->help, *mark = strstr(help, "%r");
    int numeric = o->kind == CONFIG_KIND_UINT || o->kind == CONFIG_KIND_DURATION;

    fprintf(f, "%.*s", (int)(mark ? mark - help : (long)strlen(help)), help);
    if (numeric) {
        fprintf(f, "%s", mark ? "" : ", ");
        put_range(f, o);
    }
    fprintf(f, "%s", mark ? mark + 2 : "");
    for (const char *const *c = o->choices; c && *c; c++)
        fprintf(f, "%s%s", c == o->choices ? ": " : c[1] ? ", " : " or ", *c);
    if (o->kind != CONFIG_KIND_ACTION || o->arg) {
        fprintf(f, " (");
        put_default(f, o, cmd);
        fprintf(f, ")");
    }
    put_relations(f, o, o->needs, "Needs", cmd);
    put_relations(f, o, o->excludes, "Not with", cmd);
    if (cmd == ALL) {
        fprintf(f, ". Commands: ");
        put_commands(f, o->commands);
    }
}

/* Writes one row: "  -h, --help", "  --cors, --no-cors", "  --listen
 * HOST:PORT", then its description. */
static void put_row(FILE *f, const struct config_option *o, int cmd)
{
    const struct config_option *no = negation_of(o);
    char left[128], *text = NULL;
    size_t len = 0;
    int n = snprintf(left, sizeof left, "  ");
    FILE *desc;

    if (o->short_name)
        n += snprintf(left + n, sizeof left - (size_t)n, "-%c, ", o->short_name);
    n += snprintf(left + n, sizeof left - (size_t)n, "--%s", o->name);
    if (no)
        n += snprintf(left + n, sizeof left - (size_t)n, ", --%s", no->name);
    if (o->arg)
        snprintf(left + n, sizeof left - (size_t)n, " %s", o->arg);
    if (!(desc = open_memstream(&text, &len)))
        return;
    put_description(desc, o, cmd);
    fclose(desc);
    put_wrapped(f, text, put_left(f, left), COLUMN);
    free(text);
}

/* Whether command cmd (ALL: any) takes row o, which help then lists:
 * negating switches are listed with the switch they negate. */
static int listed(const struct config_option *o, int cmd)
{
    if (o->flags & CONFIG_NEGATES)
        return 0;
    return cmd == ALL || (o->commands & CONFIG_CMD_BIT(cmd));
}

/* Writes group g's title and rows for command cmd; nothing when cmd takes
 * none of them. Returns whether a DURATION flag was among them. */
static int put_group(FILE *f, enum config_group g, int cmd)
{
    int any = 0, keys = 0, durations = 0;

    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        if (o->group == g && listed(o, cmd)) {
            any = 1;
            keys |= (o->flags & CONFIG_FILE_KEY) || o->kind == CONFIG_KIND_ACTION;
        }
    }
    if (!any)
        return 0;
    fprintf(f, "\n%s%s:\n", config_group_titles[g], keys ? "" : " (not config-file keys)");
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        if (o->group == g && listed(o, cmd)) {
            put_row(f, o, cmd);
            durations |= o->kind == CONFIG_KIND_DURATION;
        }
    }
    return durations;
}

/* Writes the flags of command cmd, its groups in the command's order. */
static void put_command_flags(FILE *f, enum config_command cmd)
{
    int durations = 0;

    for (const enum config_group *g = config_commands[cmd].groups; *g != CONFIG_GROUP_COUNT; g++)
        durations |= put_group(f, *g, (int)cmd);
    if (durations)
        fprintf(f, "\n%s\n", DURATION_NOTE);
}

/* Writes the usage line of command cmd, the flags it requires included
 * (each "--flag ARG" kept on one line), what it does, and its flags. */
static void put_command_help(FILE *f, enum config_command cmd)
{
    const struct config_command_info *c = &config_commands[cmd];
    const char *start = "Usage: oidc-discovery ";
    char sentence[512];
    int used =
        fprintf(f, "%s%s%s%s", start, cmd == CONFIG_CMD_SERVE ? "[" : "", c->name, cmd == CONFIG_CMD_SERVE ? "]" : "");

    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        if (!(o->required & CONFIG_CMD_BIT(cmd)))
            continue;
        if (used + (int)(strlen(o->name) + strlen(o->arg) + 4) > WIDTH)
            used = fprintf(f, "\n%*s", (int)strlen(start), "") - 1;
        used += fprintf(f, " --%s %s", o->name, o->arg);
    }
    snprintf(sentence, sizeof sentence, "%s.", c->summary);
    fprintf(f, " [flags]\n\n");
    put_wrapped(f, sentence, 0, 0);
    if (c->note)
        put_wrapped(f, c->note, 0, 0);
    put_command_flags(f, cmd);
}

/* Writes the commands, one line each. */
static void put_command_list(FILE *f)
{
    char left[64];

    fprintf(f, "Commands:\n");
    for (int c = 0; c < CONFIG_COMMAND_COUNT; c++) {
        snprintf(left, sizeof left, "  %s", config_commands[c].name);
        put_wrapped(f, config_commands[c].summary, put_left(f, left), COLUMN);
    }
    put_wrapped(f,
                "Print the flags of a command (the same as COMMAND --help), or with all, every flag of every command",
                put_left(f, "  help [COMMAND|all]"), COLUMN);
}

/* The overview: the commands, then the flags of serve, which runs when
 * no command is named. */
static void put_overview(FILE *f)
{
    fprintf(f, "Usage: oidc-discovery [COMMAND] [flags]\n\n");
    put_command_list(f);
    fprintf(f, "\n");
    put_wrapped(
        f, "\"oidc-discovery help COMMAND\" lists the flags of a command. With no command, serve runs; its flags:", 0,
        0);
    put_command_flags(f, CONFIG_CMD_SERVE);
}

/* Every flag once, by group: the reference the man page is made of. */
static void put_all(FILE *f)
{
    int durations = 0;

    fprintf(f, "Usage: oidc-discovery [COMMAND] [flags]\n\n");
    put_command_list(f);
    for (int g = 0; g < CONFIG_GROUP_COUNT; g++)
        durations |= put_group(f, (enum config_group)g, ALL);
    if (durations)
        fprintf(f, "\n%s\n", DURATION_NOTE);
}

char *config_usage(enum config_command topic)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (!f)
        return NULL;
    if (topic == CONFIG_HELP_ALL)
        put_all(f);
    else if (topic < CONFIG_COMMAND_COUNT)
        put_command_help(f, topic);
    else
        put_overview(f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
