/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parser: the state config_parse (config.c) carries through its stages,
 * and the helpers that read it, shared with rules.c, which holds the rules
 * between flags that the rows cannot say (see options.h's needs and
 * excludes for those they can). config/'s own header.
 */
#ifndef OIDC_CONFIG_PARSER_H
#define OIDC_CONFIG_PARSER_H

#include <stddef.h>

#include "config/config.h"
#include "config/options.h"

#define CMD(c) CONFIG_CMD_BIT(c)

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
    int fleet;      /* 1: serve --issuers-dir's own flags; 2: one of its issuer files (config_path) */
    char *err;
    size_t errlen;
};

/* A value in double quotes, ready for an error message. */
struct quoted {
    char s[CONFIG_ERR_MAX];
};

/* Writes a message of at most len bytes, cut short if it must be. */
__attribute__((format(printf, 3, 4))) void parser_say(char *out, size_t len, const char *fmt, ...);

/* Writes the error message; returns -1 so callers can `return fail(...)`. */
#define fail(p, ...) (parser_say((p)->err, (p)->errlen, __VA_ARGS__), -1)

/* Quotes s[0..len) for an error message so that no value can break the
 * message's single line. */
struct quoted parser_quote(const char *s, size_t len);

/* Writes what is said of a value of row o, naming where it came from: the
 * flag and the value on the command line, or the file and the key in a
 * config file. */
void parser_say_value(char *out, size_t len, const char *origin, const struct config_option *o, const char *value,
                      const char *what);

/* Reports a bad value of row o; returns -1. */
int parser_fail_value(struct parser *p, const char *origin, const struct config_option *o, const char *value,
                      const char *problem);

/* Adds a warning line to the config; returns 0, or -1 out of memory. */
int parser_warn(struct parser *p, const char *line);

/* The setting of row o, and of the row called name. */
struct setting *parser_setting_of(struct parser *p, const struct config_option *o);
struct setting *parser_named(struct parser *p, const char *name);

/* Records one value of row o from origin (the config file's path, or NULL
 * for the command line and defaults). Returns 0, or -1 out of memory. */
int parser_setting_put(struct parser *p, const struct config_option *o, const char *origin, const char *value);

/* The (only or latest) value of a single-valued setting, or NULL. */
const char *parser_setting_value(const struct setting *s);

/* True when the row called name has a value from a flag, the file or a
 * default. */
int parser_is_set(struct parser *p, const char *name);

/* True when the switch called name is on. */
int parser_is_on(struct parser *p, const char *name);

/* True when row o was given on the command line or in the config file
 * (not just defaulted) to a command that takes it. */
int parser_given_row(struct parser *p, const struct config_option *o);
int parser_given(struct parser *p, const char *name);

/* The number of a UINT or DURATION row's value (seconds). */
unsigned long parser_seconds_of(struct parser *p, const char *name);

/* True when the list holds "none", which a CONFIG_NONE_OK row takes alone. */
int parser_has_none(const struct config_strlist *l);

/* rules.c: the defaults that depend on other flags (dev's issuer, the
 * jwks_uri, token's audience, --upstream in-cluster), the rules between
 * flags that the rows' needs and excludes cannot say, and the warnings. */
int config_put_derived(struct parser *p);
int config_check_rules(struct parser *p);
int config_warnings(struct parser *p);

#endif
