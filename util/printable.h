/* SPDX-License-Identifier: Apache-2.0 */
/*
 * printable: untrusted text (a JWKS member, a URL, a reason phrase, a name
 * or source read from a state file or a token) made safe to quote in a
 * message, a log line or a table.
 */
#ifndef OIDC_PRINTABLE_H
#define OIDC_PRINTABLE_H

#include <stddef.h>

/* Copies at most max bytes of the string s into out, each byte outside
 * printable ASCII as '?', then "..." when s was longer. out holds max + 4
 * bytes. Returns out. A hostile document or server can thus neither forge
 * log lines (no newline or escape gets through) nor flood them. */
const char *printable_copy(const char *s, char *out, size_t max);

/* The smallest out printable_quote writes into: two quotes, "..." and the
 * NUL. */
#define PRINTABLE_QUOTE_MIN 6

/* Writes s into out (outlen >= PRINTABLE_QUOTE_MIN bytes) between double
 * quotes, as Go's %+q writes ASCII: '"' and '\\' after a backslash, \n, \r
 * and \t as such, every other byte outside printable ASCII as \xNN. When s
 * does not fit, as much of it as does, then "..." after the closing quote.
 * Returns out. Unlike printable_copy, nothing is lost (the exact bytes can
 * be read back) and the value cannot end its quotes early, so a hostile
 * value can fake neither a line nor a field. */
const char *printable_quote(const char *s, char *out, size_t outlen);

#endif
