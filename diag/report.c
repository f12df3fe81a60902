/* SPDX-License-Identifier: Apache-2.0 */
#include "diag/report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsonw.h"

static const char *const status_names[] = {"PASS", "WARN", "FAIL"};
static const char *const status_keys[] = {"pass", "warn", "fail"};

/* A formatted string, or NULL when out of memory. */
__attribute__((format(printf, 1, 0))) static char *vformat(const char *fmt, va_list ap)
{
    char *s = NULL;

    return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

struct diag_check *diag_add(struct diag_report *r, enum diag_status status, const char *id, const char *fmt, ...)
{
    struct diag_check *c;
    va_list ap;

    if (r->count == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 32;
        struct diag_check *grown = realloc(r->checks, cap * sizeof(*grown));
        if (grown == NULL) {
            r->out_of_memory = 1;
            return NULL;
        }
        r->checks = grown;
        r->cap = cap;
    }
    c = &r->checks[r->count];
    *c = (struct diag_check){.id = id, .status = status};
    va_start(ap, fmt);
    c->message = vformat(fmt, ap);
    va_end(ap);
    if (c->message == NULL) {
        r->out_of_memory = 1;
        return NULL;
    }
    r->count++;
    return c;
}

void diag_fix(struct diag_report *r, struct diag_check *c, const char *fmt, ...)
{
    va_list ap;

    if (c == NULL)
        return;
    free(c->fix);
    va_start(ap, fmt);
    c->fix = vformat(fmt, ap);
    va_end(ap);
    if (c->fix == NULL)
        r->out_of_memory = 1;
}

enum diag_status diag_worst(const struct diag_report *r)
{
    enum diag_status worst = DIAG_PASS;

    for (size_t i = 0; i < r->count; i++)
        if (r->checks[i].status > worst)
            worst = r->checks[i].status;
    return worst;
}

/* Writes s with every byte outside printable ASCII as "?": the messages
 * quote documents and tokens from elsewhere. */
static void put_printable(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s : '?', f);
}

char *diag_render_text(const struct diag_report *r)
{
    size_t counts[3] = {0}, len = 0;
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);

    if (f == NULL)
        return NULL;
    for (size_t i = 0; i < r->count; i++) {
        const struct diag_check *c = &r->checks[i];
        counts[c->status]++;
        fprintf(f, "%s %s: ", status_names[c->status], c->id);
        put_printable(f, c->message);
        if (c->status != DIAG_PASS && c->fix != NULL) {
            fputs("; fix: ", f);
            put_printable(f, c->fix);
        }
        if (c->status != DIAG_PASS && c->source != NULL)
            fprintf(f, " (%s)", c->source);
        fputc('\n', f);
    }
    fprintf(f, "%zu PASS, %zu WARN, %zu FAIL\n", counts[DIAG_PASS], counts[DIAG_WARN], counts[DIAG_FAIL]);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* A string member, or null. */
static void put_member(struct jsonw *w, const char *name, const char *value, int comma)
{
    if (comma)
        jsonw_lit(w, ",");
    jsonw_key(w, name);
    jsonw_str_or_null(w, value);
}

static void put_check(struct jsonw *w, const struct diag_check *c)
{
    jsonw_lit(w, "{");
    put_member(w, "id", c->id, 0);
    put_member(w, "status", status_keys[c->status], 1);
    put_member(w, "message", c->message, 1);
    put_member(w, "fix", c->fix, 1);
    put_member(w, "source", c->source, 1);
    jsonw_lit(w, "}");
}

char *diag_render_json(const struct diag_report *r, const char *issuer, const char *const *targets, size_t ntargets)
{
    struct jsonw w = {0};
    size_t counts[3] = {0}, len;
    char number[32], *out = NULL;

    for (size_t i = 0; i < r->count; i++)
        counts[r->checks[i].status]++;
    jsonw_lit(&w, "{");
    put_member(&w, "issuer", issuer, 0);
    put_member(&w, "target", ntargets ? targets[0] : NULL, 1);
    jsonw_lit(&w, ",");
    jsonw_key(&w, "targets");
    jsonw_lit(&w, "[");
    for (size_t i = 0; i < ntargets; i++) {
        if (i > 0)
            jsonw_lit(&w, ",");
        jsonw_str(&w, targets[i]);
    }
    jsonw_lit(&w, "]");
    put_member(&w, "result", status_keys[diag_worst(r)], 1);
    jsonw_lit(&w, ",\"summary\":{");
    for (int s = DIAG_PASS; s <= DIAG_FAIL; s++) {
        snprintf(number, sizeof(number), "%s\"%s\":%zu", s ? "," : "", status_keys[s], counts[s]);
        jsonw_lit(&w, number);
    }
    jsonw_lit(&w, "},\"checks\":[");
    for (size_t i = 0; i < r->count; i++) {
        if (i > 0)
            jsonw_lit(&w, ",");
        put_check(&w, &r->checks[i]);
    }
    jsonw_lit(&w, "]}\n");
    return jsonw_finish(&w, &out, &len) == 0 ? out : NULL;
}

void diag_report_clear(struct diag_report *r)
{
    for (size_t i = 0; i < r->count; i++) {
        free(r->checks[i].message);
        free(r->checks[i].fix);
    }
    free(r->checks);
    memset(r, 0, sizeof(*r));
}
