/*
 * printable: untrusted text (a JWKS member, a URL, a reason phrase) made
 * safe to quote in a message or a log line.
 */
#ifndef OIDC_PRINTABLE_H
#define OIDC_PRINTABLE_H

#include <stddef.h>

/* Copies at most max bytes of the string s into out, each byte outside
 * printable ASCII as '?', then "..." when s was longer. out holds max + 4
 * bytes. Returns out. A hostile document or server can thus neither forge
 * log lines (no newline or escape gets through) nor flood them. */
const char *printable_copy(const char *s, char *out, size_t max);

#endif
