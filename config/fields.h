/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fields: the struct config side of the rows. Once a row's values are
 * checked, config_field_store moves them into the field the row names,
 * in the form the row's kind gives it (see enum config_kind); config_free
 * (config.h) walks the same rows to free them.
 */
#ifndef OIDC_CONFIG_FIELDS_H
#define OIDC_CONFIG_FIELDS_H

#include "config/options.h"

/* Appends a copy of s[0..len) to the list. Returns 0, or -1 out of memory. */
int config_strlist_append(struct config_strlist *l, const char *s, size_t len);

/* Frees the strings and the array and leaves the list empty. */
void config_strlist_free(struct config_strlist *l);

/* Whether row o fills a field of its own (--no-cors fills --cors's through
 * it; --config, --help and --version fill none). */
int config_field_of(const struct config_option *o);

/* Moves the checked values of row o (none: its zero value) into its field
 * of cfg, leaving values empty: strings are taken over, numbers and
 * switches converted, comma lists split and joined, listen addresses
 * split into host and port ("none" left out). Returns 0, or -1 out of
 * memory (what was stored is still freed by config_free). */
int config_field_store(struct config *cfg, const struct config_option *o, struct config_strlist *values);

/* Frees what config_parse keeps for --issuers-dir (config.c); safe on
 * NULL. */
void config_sources_free(struct config_sources *src);

#endif
