/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redact: the one rule by which a URL is shown anywhere this program
 * speaks (a message, a log line, a metric label, the status page, a
 * table). A URL can carry a credential: an Azure SAS token or a presigned
 * S3 URL in its query string, a user and password in its userinfo, a token
 * in its fragment. Whoever reads logs or reaches the admin port must not
 * get a write credential for the bucket relying parties trust, so a URL is
 * shown as scheme://host[:port]/path with:
 *   - the userinfo replaced by "<redacted>";
 *   - the query string replaced by the names of its parameters, never a
 *     value: "?<redacted: sv, se, sp, sig>" (a part that is not a short
 *     name=value pair, which could be a bare secret, shows as "*");
 *   - the fragment replaced by "#<redacted>".
 * The result is also made printable (printable_copy's rule), so a hostile
 * URL from a document or a Location field cannot forge log lines.
 */
#ifndef OIDC_REDACT_H
#define OIDC_REDACT_H

#include <stddef.h>

/* Writes url as shown into out, at most max bytes of it, then "..." when
 * it was cut (out holds max + 4 bytes, as printable_copy's). Returns out. */
const char *redact_url(const char *url, char *out, size_t max);

/* Replaces, in the NUL-terminated text s, every occurrence of the secret
 * parts of url (its query string, userinfo and fragment, when at least
 * REDACT_SECRET_MIN bytes long) with "<redacted>", in place (the text only
 * shrinks or keeps its length). For text a library wrote about a request
 * (libcurl's error buffer) that could have quoted the URL whole. */
void redact_url_parts_in(char *s, const char *url);

/* Shorter secret parts are not searched for: they would match ordinary
 * words, no credential is that short, and the replacement then never
 * makes the text longer. */
#define REDACT_SECRET_MIN 10

#endif
