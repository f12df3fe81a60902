/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options: every flag of every command, one row each, in one table
 * (options.c). A row holds all that config/ knows of its flag: the name
 * (which is also its config-file key), the kind of value and its range,
 * the commands that take it and those that require it, its default, its
 * help, and the struct config field it fills. Parsing, the config file,
 * the checks, the defaults and the help text are all read from the rows,
 * so that a flag is described once.
 *
 * This header is config/'s own, and the unit tests' that check the table.
 */
#ifndef OIDC_CONFIG_OPTIONS_H
#define OIDC_CONFIG_OPTIONS_H

#include <stddef.h>

#include "config/checks.h"
#include "config/config.h"

/* A bit per command, for the commands that take (or require) a flag. */
#define CONFIG_CMD_BIT(c) (1u << (c))
#define CONFIG_FOR_SERVING                                                                                             \
    (CONFIG_CMD_BIT(CONFIG_CMD_SERVE) | CONFIG_CMD_BIT(CONFIG_CMD_DEV) | CONFIG_CMD_BIT(CONFIG_CMD_KEYS))
/* The flags that decide the published bytes: export and publish write what
 * serve would serve with them, so they take these and no listener flag. */
#define CONFIG_FOR_DOCUMENTS                                                                                           \
    (CONFIG_FOR_SERVING | CONFIG_CMD_BIT(CONFIG_CMD_EXPORT) | CONFIG_CMD_BIT(CONFIG_CMD_PUBLISH))
/* The commands that open listeners. */
#define CONFIG_FOR_SERVERS (CONFIG_CMD_BIT(CONFIG_CMD_SERVE) | CONFIG_CMD_BIT(CONFIG_CMD_DEV))
#define CONFIG_FOR_EVERY                                                                                               \
    (CONFIG_FOR_DOCUMENTS | CONFIG_CMD_BIT(CONFIG_CMD_VERIFY) | CONFIG_CMD_BIT(CONFIG_CMD_TOKEN) |                     \
     CONFIG_CMD_BIT(CONFIG_CMD_DOCTOR))

/* What a flag's value is, and how struct config holds it. */
enum config_kind {
    CONFIG_KIND_STRING,   /* char *; the last value given wins */
    CONFIG_KIND_CHOICE,   /* char *, one of the row's choices */
    CONFIG_KIND_LIST,     /* struct config_strlist; repeatable, every value kept in order */
    CONFIG_KIND_COMMAS,   /* struct config_strlist; repeatable comma-separated lists, joined */
    CONFIG_KIND_LISTEN,   /* struct config_listen * and a size_t count; repeatable */
    CONFIG_KIND_UINT,     /* unsigned long, a decimal integer in [min, max] */
    CONFIG_KIND_DURATION, /* unsigned long seconds in [min, max]; "15m" or a number of seconds in the file */
    CONFIG_KIND_BOOL,     /* int; a switch on the command line, true or false in the config file */
    CONFIG_KIND_ACTION,   /* --config, --help, --version: act on the parse itself, fill no field */
};

/* Row flags. */
#define CONFIG_FILE_KEY 0x01u /* also a key of the config file */
#define CONFIG_UNIX_OK  0x02u /* a listen flag that takes unix:/path */
#define CONFIG_NONE_OK  0x04u /* a listen flag that takes "none" (alone): no listener */
#define CONFIG_NEGATES  0x08u /* a switch that sets the switch with the same field to false */
#define CONFIG_LOWER    0x10u /* comma list items are lowercased (host names) */
#define CONFIG_ISSUER   0x20u /* also a key of an --issuers-dir file: each issuer may set its own */

/* The sections of the help, in the order `help all` prints them. */
enum config_group {
    CONFIG_GROUP_DOCUMENTS,
    CONFIG_GROUP_ROTATION,
    CONFIG_GROUP_SIGNER,
    CONFIG_GROUP_SERVING,
    CONFIG_GROUP_LIMITS,
    CONFIG_GROUP_REVIEW,
    CONFIG_GROUP_VERIFY,
    CONFIG_GROUP_TOKEN,
    CONFIG_GROUP_EXPORT,
    CONFIG_GROUP_PUBLISH,
    CONFIG_GROUP_KEYS,
    CONFIG_GROUP_DOCTOR,
    CONFIG_GROUP_GENERAL,
    CONFIG_GROUP_COUNT
};

/* A check of one value beyond its kind; allow_http is whether
 * --allow-insecure-issuer is on. Returns what is wrong, or NULL. */
typedef const char *config_check_fn(const char *value, int allow_http);

/* Where a field is not: --config, --help and --version, --no-cors (it
 * fills cors, through the row it negates). */
#define CONFIG_NO_FIELD ((size_t)-1)

/* What help says of a row for some of its commands only, where the row's
 * own words (which help all prints) would name other commands' rules. */
struct config_help_variant {
    unsigned commands;    /* CONFIG_CMD_BIT of the commands it is for; 0 ends the list */
    const char *help;     /* instead of the row's help, or NULL */
    const char *def_text; /* instead of the row's def_text, or NULL */
};

/* Other flags a flag goes with. A row's needs say what must be given with
 * it, its excludes what cannot be (config.c checks both for every flag
 * given, and names the flags in the message; the rules that are more than
 * that are in rules.c). A list ends with a NULL flags. */
struct config_relation {
    const char *flags; /* rows' names, blank-separated: needs all of them, excludes each */
    const char *why;   /* appended to the message (" DIR (...)", ": ..."), or NULL */
};

struct config_option {
    const char *name;           /* the long flag without "--", and its config-file key */
    char short_name;            /* 'h' for -h, else 0 */
    const char *arg;            /* what help calls the value ("URL"); NULL: the flag takes none */
    enum config_kind kind;      /* ... */
    unsigned flags;             /* CONFIG_FILE_KEY, ... */
    unsigned long min, max;     /* CONFIG_KIND_UINT and CONFIG_KIND_DURATION (seconds) only */
    const char *const *choices; /* CONFIG_KIND_CHOICE: the values, NULL-terminated */
    config_check_fn *check;     /* STRING, LIST and COMMAS: the value's check; NULL: not empty */
    unsigned commands;          /* CONFIG_CMD_BIT of each command that takes it */
    unsigned required;          /* CONFIG_CMD_BIT of each command that cannot do without it */
    const char *why_required;   /* appended to "--NAME is required" */
    const char *def;            /* the default, as it would be typed; NULL: none */
    const char *dev_def;        /* dev's default where it differs (dev serves plain http, its own keys) */
    void (*def_fn)(const struct config_option *o, char *out, size_t len); /* a default known at run time */
    const char *def_text;                       /* help's words for a default that def cannot give */
    const char *dev_text;                       /* the same for dev */
    const char *def_note;                       /* help: appended to the default ("; needs --state-dir") */
    const char *def_with;                       /* the default applies only with this flag, or NULL */
    const char *def_of;                         /* a UINT or DURATION default: def_times this row's value */
    unsigned long def_times;                    /* ... */
    const struct config_relation *needs;        /* what must be given with it, or NULL */
    const struct config_relation *excludes;     /* what cannot be, or NULL */
    size_t field, count_field;                  /* offsetof(struct config, ...); count_field for LISTEN only */
    enum config_group group;                    /* where help lists it */
    const char *help;                           /* one sentence; "%r" marks where the range goes (else at the end) */
    const struct config_help_variant *help_for; /* per-command words, or NULL */
    const char *also; /* other names people try for it, blank-separated ("port"), for suggestions */
};

/* The rows, and how many. */
extern const struct config_option config_options[];
extern const size_t config_option_count;

/* A command: its name, one line of help, and the groups its help lists,
 * its own first. */
struct config_command_info {
    const char *name;
    const char *summary;
    const char *note;                                 /* said under the usage line, or NULL */
    enum config_group groups[CONFIG_GROUP_COUNT + 1]; /* ends at CONFIG_GROUP_COUNT */
};

/* Indexed by enum config_command, up to CONFIG_CMD_DOCTOR. */
extern const struct config_command_info config_commands[];
#define CONFIG_COMMAND_COUNT (CONFIG_CMD_DOCTOR + 1)

/* The title of each group in the help. */
extern const char *const config_group_titles[CONFIG_GROUP_COUNT];

/* The row called name[0..len), or NULL. */
const struct config_option *config_option_named(const char *name, size_t len);

/* The row called name, which must exist (config/ refers to rows by name:
 * a typo aborts in the first test that reaches it). */
const struct config_option *config_option(const char *name);

/* The row a mistaken name most likely meant, among those of the commands
 * in `commands` (and only config-file keys with file_keys): one whose name
 * the row lists under also, one the name is the last words or the first
 * words of (then the only one), or, with typos, one a few edits away.
 * NULL when none is near enough to suggest. */
/* The command (or "help", "all") a mistyped command name most likely
 * meant: the only one at most two edits away, none more than one edit in
 * three letters; NULL when none is near enough. extra is the word allowed
 * besides the commands ("help" after the program name, "all" after help). */
const char *config_command_nearest(const char *name, const char *extra);

const struct config_option *config_option_nearest(const char *name, size_t len, unsigned commands, int file_keys,
                                                  int typos);

/* The row named next in a blank-separated list of names at *at (a
 * relation's flags), moving *at past it; NULL at the end of the list. */
const struct config_option *config_option_next(const char **at);

/* Writes "--a", "--a and --b" or "--a, --b and --c" for the rows the list
 * names. */
void config_option_names(const char *names, char *out, size_t len);

/* A row's index in config_options. */
size_t config_option_index(const struct config_option *o);

/* Writes what a value of the wrong kind is told: "must be true or false",
 * "must be an integer between 1 and 256", ... */
void config_option_problem(const struct config_option *o, char out[CONFIG_PROBLEM_MAX]);

/* Checks one value of the row; allow_http as for config_check_fn. Returns
 * NULL, or what is wrong (static, or written into problem). */
const char *config_option_check(const struct config_option *o, const char *value, int allow_http,
                                char problem[CONFIG_PROBLEM_MAX]);

/* The number of a value config_option_check accepted for a UINT or
 * DURATION row (seconds for a duration). */
unsigned long config_option_number(const struct config_option *o, const char *value);

#endif
