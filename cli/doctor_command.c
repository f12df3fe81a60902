/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/doctor_command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/fleet_each.h"
#include "diag/doctor.h"
#include "jose/token_file.h"

/* The largest token doctor reads: --max-token-size's own limit. A token
 * that size is refused by every relying party anyway; doctor says so. */
#define DOCTOR_TOKEN_MAX (1024 * 1024)

/* Reads --token-file, when given. Returns 0, or -1 (said on stderr). */
static int doctor_read_token(const struct config *cfg, struct doctor_options *o, char **token)
{
    char err[1024];

    *token = NULL;
    if (cfg->token_file == NULL)
        return 0;
    if ((*token = token_file_read(cfg->token_file, DOCTOR_TOKEN_MAX, &o->token_len, err, sizeof(err))) == NULL) {
        fprintf(stderr, "oidc-discovery doctor: %s\n", err);
        return -1;
    }
    if (o->token_len > DOCTOR_TOKEN_MAX) {
        fprintf(stderr, "oidc-discovery doctor: --token-file %s: larger than %d bytes, no token\n", cfg->token_file,
                DOCTOR_TOKEN_MAX);
        return -1;
    }
    o->token = *token;
    return 0;
}

/* One issuer of a fleet in one line: "RESULT NAME URL: P pass, W warn, F
 * fail", then the first FAIL (else WARN) check's id and message, every
 * byte outside printable ASCII shown as "?" (a URL comes from a file). */
static char *doctor_line(const struct diag_report *r, const char *name, const char *issuer)
{
    static const char *const words[] = {"PASS", "WARN", "FAIL"};
    enum diag_status worst = diag_worst(r);
    size_t count[3] = {0, 0, 0};
    const struct diag_check *first = NULL;
    char *line;

    for (size_t i = 0; i < r->count; i++) {
        count[r->checks[i].status]++;
        if (first == NULL && r->checks[i].status == worst && worst != DIAG_PASS)
            first = &r->checks[i];
    }
    if (asprintf(&line, "%s %s %s: %zu pass, %zu warn, %zu fail%s%s%s%s\n", words[worst], name, issuer, count[0],
                 count[1], count[2], first ? "; " : "", first ? first->id : "", first ? ": " : "",
                 first && first->message ? first->message : "") < 0)
        return NULL;
    for (char *c = line; *c; c++)
        if ((*c < 0x20 && *c != '\n') || *c > 0x7e)
            *c = '?';
    return line;
}

/* A --ca-file that cannot be read is the command line's fault, not the
 * issuer's: say so before any check runs. */
static int doctor_check_ca_file(const char *path)
{
    if (path == NULL || access(path, R_OK) == 0)
        return 0;
    fprintf(stderr, "oidc-discovery doctor: --ca-file %s: %s\n", path, strerror(errno));
    return -1;
}

/* What every issuer's check shares: the options and the token, read
 * once (a --token-file - is standard input, which cannot be read twice). */
struct doctor_run {
    const struct config *cfg;
    const char *token;
    size_t token_len;
};

/* Checks issuer with the run's options. Writes the full report, or with
 * name (a fleet's issuer), one line: the result, the name, the URL and the
 * count of each status, and the first failing (else warning) check.
 * Returns the exit code: 1 for a FAIL, else 0. */
static int doctor_one(const struct doctor_run *run, const char *issuer, const char *name)
{
    const struct config *cfg = run->cfg;
    struct doctor_options o = {
        .issuer = issuer,
        .ca_file = cfg->ca_file,
        .allow_http = cfg->allow_insecure_issuer,
        .audiences = cfg->audiences.items,
        .naudiences = cfg->audiences.count,
        .now = time(NULL),
        .token = run->token,
        .token_len = run->token_len,
    };
    struct diag_report report = {0};
    const char *targets[RP_TARGET_COUNT];
    size_t ntargets = 0;
    char *out;
    int rc;

    for (size_t i = 0; i < cfg->targets.count; i++) {
        enum rp_target t;
        if (rp_target_parse(cfg->targets.items[i], &t) == 0)
            o.targets |= 1u << t;
    }
    for (enum rp_target t = 0; t < RP_TARGET_COUNT; t++)
        if (o.targets & (1u << t))
            targets[ntargets++] = rp_target_name(t);
    doctor_run(&o, &report);
    if (name != NULL && strcmp(cfg->output, "json") != 0)
        out = doctor_line(&report, name, issuer);
    else
        out = strcmp(cfg->output, "json") == 0 ? diag_render_json(&report, o.issuer, targets, ntargets)
                                               : diag_render_text(&report);
    if (out == NULL || report.out_of_memory) {
        fprintf(stderr, "oidc-discovery doctor: out of memory\n");
        rc = 1;
    } else {
        fputs(out, stdout);
        rc = diag_worst(&report) == DIAG_FAIL ? 1 : 0;
    }
    free(out);
    diag_report_clear(&report);
    return rc;
}

/* fleet_each_url's step: one issuer of the fleet, on one line. */
static int doctor_issuer(struct config *issuer, const char *name, size_t index, void *arg)
{
    (void)index;
    return doctor_one(arg, issuer->issuers.items[0], name);
}

int doctor_command(const struct config *cfg)
{
    struct doctor_options read = {0};
    struct doctor_run run = {.cfg = cfg};
    char *token = NULL;
    int rc;

    if (doctor_check_ca_file(cfg->ca_file) != 0 || doctor_read_token(cfg, &read, &token) != 0)
        return 2;
    run.token = read.token;
    run.token_len = read.token_len;
    if (cfg->issuers_dir != NULL)
        rc = fleet_each_url(cfg, "doctor", doctor_issuer, &run);
    else
        rc = doctor_one(&run, cfg->mint_issuer, NULL);
    free(token);
    return rc;
}
