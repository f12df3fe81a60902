/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report: what `doctor` found, one check at a time, and the two ways it is
 * printed: one line per check for people, and a JSON document for
 * programs (its shape is documented in docs/doctor.md and kept stable).
 *
 * Each check has a stable id ("discovery.issuer"), a status, what was
 * found and, for a WARN or FAIL, what to change; a check that applies a
 * relying party's documented rule also names that documentation.
 */
#ifndef OIDC_DIAG_REPORT_H
#define OIDC_DIAG_REPORT_H

#include <stddef.h>

enum diag_status { DIAG_PASS, DIAG_WARN, DIAG_FAIL };

struct diag_check {
    const char *id; /* static */
    enum diag_status status;
    char *message;      /* owned */
    char *fix;          /* owned; NULL when there is nothing to change */
    const char *source; /* static: the documentation of the rule, or NULL */
};

struct diag_report {
    struct diag_check *checks;
    size_t count, cap;
    int out_of_memory; /* a check could not be recorded */
};

/* Adds a check with its message; returns it, or NULL when out of memory
 * (recorded in the report; diag_fix takes NULL). */
struct diag_check *diag_add(struct diag_report *r, enum diag_status status, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Sets what to change of a check (NULL: nothing). */
void diag_fix(struct diag_report *r, struct diag_check *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The worst status of the report (DIAG_PASS when empty). */
enum diag_status diag_worst(const struct diag_report *r);

/* The report for people: one line per check ("STATUS id: message", and
 * for a WARN or FAIL "; fix: ..." and the source), then a count of each
 * status. Every byte outside printable ASCII is shown as "?". The caller
 * frees it; NULL when out of memory. */
char *diag_render_text(const struct diag_report *r);

/* The report as JSON: {"issuer", "target" (the first of the ntargets
 * relying parties checked, or null), "targets" (all of them), "result"
 * ("pass", "warn" or "fail"), "summary" {"pass","warn","fail"}, "checks"
 * [{"id", "status", "message", "fix" (or null), "source" (or null)}]},
 * with a trailing newline. The caller frees it; NULL when out of memory. */
char *diag_render_json(const struct diag_report *r, const char *issuer, const char *const *targets, size_t ntargets);

void diag_report_clear(struct diag_report *r);

#endif
