/* SPDX-License-Identifier: Apache-2.0 */
#include "server/obs/status.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "push/status.h"
#include "util/strbuf.h"
#include "util/clock.h"

static pthread_mutex_t status_mu = PTHREAD_MUTEX_INITIALIZER;
static struct status *status_current; /* guarded by status_mu */

/* A copy of s (NULL stays NULL); a failed copy marks st failed. */
static char *status_dup(struct status *st, const char *s)
{
    char *copy;

    if (s == NULL)
        return NULL;
    if ((copy = strdup(s)) == NULL)
        st->failed = 1;
    return copy;
}

/* Room for one more element of an array of n elements of size bytes. */
static int status_grow(struct status *st, void **array, size_t n, size_t size)
{
    void *p = realloc(*array, (n + 1) * size);

    if (p == NULL) {
        st->failed = 1;
        return -1;
    }
    *array = p;
    return 0;
}

struct status *status_new(const char *issuer, const char *jwks_uri)
{
    struct status *st = calloc(1, sizeof(*st));

    if (st == NULL)
        return NULL;
    atomic_init(&st->refs, 1);
    st->issuer = status_dup(st, issuer);
    st->jwks_uri = status_dup(st, jwks_uri);
    return st;
}

void status_add_key(struct status *st, const struct status_key *k)
{
    struct status_key *copy;

    if (status_grow(st, (void **)&st->keys, st->nkeys, sizeof(*st->keys)) != 0)
        return;
    copy = &st->keys[st->nkeys++];
    *copy = *k;
    copy->kid = status_dup(st, k->kid);
    copy->alg = status_dup(st, k->alg);
    copy->source = status_dup(st, k->source);
    copy->role = status_dup(st, k->role);
}

void status_add_issuer(struct status *st, const struct status_issuer *is)
{
    struct status_issuer *copy;

    if (status_grow(st, (void **)&st->issuers, st->nissuers, sizeof(*st->issuers)) != 0)
        return;
    copy = &st->issuers[st->nissuers++];
    *copy = *is;
    copy->name = status_dup(st, is->name);
    copy->file = status_dup(st, is->file);
    copy->issuer = status_dup(st, is->issuer);
    copy->jwks_etag = status_dup(st, is->jwks_etag);
    copy->problem = status_dup(st, is->problem);
}

static void status_free(struct status *st)
{
    for (size_t i = 0; i < st->nissuers; i++) {
        free((char *)st->issuers[i].name);
        free((char *)st->issuers[i].file);
        free((char *)st->issuers[i].issuer);
        free((char *)st->issuers[i].jwks_etag);
        free((char *)st->issuers[i].problem);
    }
    free(st->issuers);
    for (size_t i = 0; i < st->nkeys; i++) {
        free((char *)st->keys[i].kid);
        free((char *)st->keys[i].alg);
        free((char *)st->keys[i].source);
        free((char *)st->keys[i].role);
    }
    free(st->keys);
    free(st->reload_error);
    free(st->rotation_paused);
    free(st->issuer);
    free(st->jwks_uri);
    free(st);
}

void status_release(struct status *st)
{
    if (st != NULL && atomic_fetch_sub_explicit(&st->refs, 1, memory_order_acq_rel) == 1)
        status_free(st);
}

void status_publish(struct status *st)
{
    struct status *old;

    if (st == NULL || st->failed) {
        status_release(st);
        return;
    }
    pthread_mutex_lock(&status_mu);
    old = status_current;
    status_current = st;
    pthread_mutex_unlock(&status_mu);
    status_release(old);
}

void status_clear(void)
{
    struct status *old;

    pthread_mutex_lock(&status_mu);
    old = status_current;
    status_current = NULL;
    pthread_mutex_unlock(&status_mu);
    status_release(old);
}

struct status *status_acquire(void)
{
    struct status *st;

    pthread_mutex_lock(&status_mu);
    if ((st = status_current) != NULL)
        atomic_fetch_add_explicit(&st->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&status_mu);
    return st;
}

/* ---- the page ---------------------------------------------------------- */

/* s as HTML text or attribute value: every character that could end one
 * (or start markup) is escaped; control characters other than tab and
 * newline, which a file name may hold, are shown as U+FFFD. */
static void status_text(struct strbuf *b, const char *s)
{
    const char *run = s;

    for (; s != NULL && *s != '\0'; s++) {
        const char *esc = *s == '&'                                              ? "&amp;"
                          : *s == '<'                                            ? "&lt;"
                          : *s == '>'                                            ? "&gt;"
                          : *s == '"'                                            ? "&quot;"
                          : *s == '\''                                           ? "&#39;"
                          : (unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' ? "\xef\xbf\xbd"
                                                                                 : NULL;
        if (esc == NULL)
            continue;
        strbuf_add(b, run, (size_t)(s - run));
        strbuf_puts(b, esc);
        run = s + 1;
    }
    if (run != NULL)
        strbuf_puts(b, run);
}

/* t as RFC 3339 UTC, or "-" for 0. */
static void status_time(struct strbuf *b, time_t t)
{
    char when[CLOCK_RFC3339_SIZE];

    strbuf_puts(b, t == 0 ? "-" : clock_rfc3339(t, when));
}

/* <tr><th>name</th><td class="cls">value</td></tr>, value escaped; cls
 * is a literal, or NULL for none. */
static void status_row_class(struct strbuf *b, const char *name, const char *cls, const char *value)
{
    strbuf_puts(b, "<tr><th>");
    status_text(b, name);
    if (cls != NULL)
        strbuf_printf(b, "</th><td class=\"%s\">", cls);
    else
        strbuf_puts(b, "</th><td>");
    status_text(b, value);
    strbuf_puts(b, "</td></tr>\n");
}

static void status_row(struct strbuf *b, const char *name, const char *value)
{
    status_row_class(b, name, NULL, value);
}

/* <td class="cls">text</td>, text escaped; cls is a literal. */
static void status_cell(struct strbuf *b, const char *cls, const char *text)
{
    strbuf_printf(b, "<td class=\"%s\">", cls);
    status_text(b, text);
    strbuf_puts(b, "</td>");
}

static void status_cell_time(struct strbuf *b, const char *cls, time_t t)
{
    strbuf_printf(b, "<td class=\"%s\">", cls);
    status_time(b, t);
    strbuf_puts(b, "</td>");
}

static void status_row_time(struct strbuf *b, const char *name, time_t t)
{
    strbuf_printf(b, "<tr><th>%s</th><td>", name);
    status_time(b, t);
    strbuf_puts(b, "</td></tr>\n");
}

static const char status_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>oidc-discovery status</title>\n<style>\n"
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#1d1d1f;background:#fff}\n"
    "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}\n"
    "table{border-collapse:collapse}th,td{border:1px solid #d0d0d5;padding:.25em .6em;text-align:left;"
    "vertical-align:top}\nthead th,tbody th{background:#f2f2f5;font-weight:600}\n"
    "td.kid,td.source{font-family:ui-monospace,monospace;word-break:break-all}\n"
    "td.alg,td.size,td.first-seen,td.retained-until{white-space:nowrap}\n"
    ".ok{color:#176f2c}.failed{color:#b3261e;font-weight:600}\n"
    "</style></head><body>\n";

static void status_render_documents(struct strbuf *b, const struct status *st, const struct status_build *build,
                                    time_t now)
{
    char version[160];

    strbuf_puts(b, "<h1>oidc-discovery</h1>\n<table id=\"documents\">\n");
    status_row(b, "issuer", st->issuer);
    status_row(b, "jwks_uri", st->jwks_uri);
    strbuf_printf(b, "<tr><th>key set generation</th><td>%lu</td></tr>\n", st->generation);
    status_row_time(b, "published at", st->published_at);
    snprintf(version, sizeof(version), "%s (commit %s, built %s)", build->version, build->commit, build->date);
    status_row(b, "version", version);
    status_row_time(b, "this page", now);
    strbuf_puts(b, "</table>\n");
}

static void status_render_keys(struct strbuf *b, const struct status *st)
{
    strbuf_printf(b,
                  "<h2>Keys (%zu published)</h2>\n<table id=\"keys\">\n<thead><tr><th>kid</th><th>alg</th>"
                  "<th>size</th><th>source</th><th>first seen</th><th>retained until</th><th>role</th></tr>"
                  "</thead>\n<tbody>\n",
                  st->nkeys);
    for (size_t i = 0; i < st->nkeys; i++) {
        const struct status_key *k = &st->keys[i];
        char size[16];
        if (k->curve != NULL)
            snprintf(size, sizeof(size), "%s", k->curve);
        else
            snprintf(size, sizeof(size), "%d", k->bits);
        strbuf_puts(b, "<tr class=\"key\">");
        status_cell(b, "kid", k->kid);
        status_cell(b, "alg", k->alg);
        status_cell(b, "size", size);
        status_cell(b, "source", k->source);
        status_cell_time(b, "first-seen", k->first_seen);
        status_cell_time(b, "retained-until", k->retained_until);
        status_cell(b, "role", k->role != NULL ? k->role : "-");
        strbuf_puts(b, "</tr>\n");
    }
    strbuf_puts(b, "</tbody></table>\n");
}

static void status_render_reload(struct strbuf *b, const struct status *st)
{
    strbuf_puts(b, "<h2>Last reload</h2>\n<table id=\"reload\">\n");
    status_row_time(b, "at", st->reload_at);
    if (st->reload_error == NULL) {
        strbuf_puts(b, "<tr><th>result</th><td class=\"ok\">ok</td></tr>\n");
    } else {
        strbuf_puts(b, "<tr><th>result</th><td class=\"failed\">failed: ");
        status_text(b, st->reload_error);
        strbuf_puts(b, " (the last good key set stays published)</td></tr>\n");
    }
    strbuf_printf(b, "<tr><th>failed reloads</th><td>%lu</td></tr>\n", st->reload_failures);
    if (st->key_store && st->rotation_paused == NULL) {
        strbuf_puts(b, "<tr><th>key rotation (etcd)</th><td class=\"ok\">running</td></tr>\n");
    } else if (st->key_store) {
        strbuf_puts(b, "<tr><th>key rotation (etcd)</th><td class=\"failed\">paused: ");
        status_text(b, st->rotation_paused);
        strbuf_puts(b, " (signing goes on with this node's copy of the keys)</td></tr>\n");
    }
    strbuf_puts(b, "</table>\n");
}

/* --publish-to: each target's last push (push/status.h), read now: the
 * publisher thread updates it between reload passes. */
static void status_render_pushes(struct strbuf *b)
{
    size_t n = push_status_count();
    struct push_status ps;

    if (n == 0)
        return;
    strbuf_puts(b, "<h2>Publishing to object storage</h2>\n<table id=\"pushes\">\n<thead><tr><th>target</th>"
                   "<th>last push</th><th>result</th><th>last current</th><th>drift repairs</th><th>last error</th>"
                   "</tr></thead>\n<tbody>\n");
    for (size_t i = 0; i < n && push_status_get(i, &ps) == 0; i++) {
        strbuf_puts(b, "<tr class=\"push\">");
        status_cell(b, "target", ps.target);
        status_cell_time(b, "last-push", ps.last_attempt);
        status_cell(b, "result", ps.last_attempt != 0 ? push_result_name(ps.last_result) : "-");
        status_cell_time(b, "last-current", ps.last_current);
        strbuf_printf(b, "<td class=\"drift-repairs\">%llu</td>", (unsigned long long)ps.drift_repairs);
        status_cell(b, "error", ps.last_error[0] != '\0' ? ps.last_error : "-");
        strbuf_puts(b, "</tr>\n");
    }
    strbuf_puts(b, "</tbody></table>\n");
}

/* --upstream: the mirror's reads as the caller read them for this view
 * (struct status_upstream); NULL without --upstream. The page is handed
 * them and never reads the mirror itself. */
static void status_render_upstream(struct strbuf *b, const struct status *st, const struct status_upstream *m,
                                   time_t now)
{
    char text[160];

    if (m == NULL)
        return;
    strbuf_puts(b, "<h2>Upstream</h2>\n<table id=\"upstream\">\n");
    status_row(b, "url", m->url);
    status_row_class(b, "documents", st->unavailable ? "failed" : "ok",
                     st->unavailable ? "unavailable: both answer 503 until the upstream's first good answer"
                                     : "served");
    status_row_time(b, "last good read", m->last_success);
    if (m->last_success == 0)
        snprintf(text, sizeof(text), "-");
    else if (m->stale)
        snprintf(text, sizeof(text), "%llds, more than --upstream-max-staleness (%llds): not ready",
                 (long long)(now - m->last_success), (long long)m->max_staleness);
    else
        snprintf(text, sizeof(text), "%llds", (long long)(now - m->last_success));
    status_row(b, "age", text);
    status_row_time(b, "last read", m->last_attempt);
    status_row_class(b, "last read result",
                     m->last_result[0] == '\0' ? NULL
                     : m->last_failed          ? "failed"
                                               : "ok",
                     m->last_result[0] != '\0' ? m->last_result : "-");
    status_row(b, "last error", m->last_error[0] != '\0' ? m->last_error : "-");
    strbuf_printf(b, "<tr><th>failed reads since the last good one</th><td>%lu</td></tr>\n", m->failures);
    status_row_class(b, "issuer", m->issuer_mismatch ? "failed" : NULL,
                     m->issuer_mismatch ? "mismatch: what it answers is not published"
                     : m->has_data      ? "matches --service-account-issuer"
                                        : "-");
    if (m->issuer_mismatch) {
        status_row(b, "the upstream's issuer", m->mismatch);
        status_row(b, "--service-account-issuer", st->issuer);
    }
    strbuf_puts(b, "</table>\n");
}

/* A fleet's issuer files, page by page (build->page, from 1), a table
 * of STATUS_ISSUERS_PER_PAGE rows at most: a fleet may be thousands. */
static void status_render_issuers(struct strbuf *b, const struct status *st, size_t page)
{
    size_t pages = (st->nissuers + STATUS_ISSUERS_PER_PAGE - 1) / STATUS_ISSUERS_PER_PAGE, first, end;

    page = page == 0 ? 1 : page > pages && pages > 0 ? pages : page;
    first = (page - 1) * STATUS_ISSUERS_PER_PAGE;
    end = first + STATUS_ISSUERS_PER_PAGE < st->nissuers ? first + STATUS_ISSUERS_PER_PAGE : st->nissuers;
    strbuf_printf(b,
                  "<h2>Issuers (%zu files, page %zu of %zu)</h2>\n<table id=\"issuers\">\n<thead><tr><th>name</th>"
                  "<th>issuer</th><th>keys</th><th>jwks etag</th><th>published at</th><th>file</th><th>state</th>"
                  "</tr></thead>\n<tbody>\n",
                  st->nissuers, page, pages ? pages : 1);
    for (size_t i = first; i < end; i++) {
        const struct status_issuer *is = &st->issuers[i];
        strbuf_puts(b, "<tr class=\"issuer\">");
        status_cell(b, "name", is->name);
        status_cell(b, "issuer", is->issuer ? is->issuer : "-");
        strbuf_printf(b, "<td class=\"keys\">%zu</td>", is->nkeys);
        status_cell(b, "etag", is->jwks_etag ? is->jwks_etag : "-");
        status_cell_time(b, "published-at", is->issuer ? is->published_at : 0);
        status_cell(b, "file", is->file);
        if (is->problem == NULL) {
            strbuf_puts(b, "<td class=\"ok\">serving</td>");
        } else {
            strbuf_printf(b, "<td class=\"failed\">refused%s: ", is->issuer ? " (the last good state serves)" : "");
            status_text(b, is->problem);
            strbuf_puts(b, "</td>");
        }
        strbuf_puts(b, "</tr>\n");
    }
    strbuf_puts(b, "</tbody></table>\n<p>");
    if (page > 1)
        strbuf_printf(b, "<a rel=\"prev\" href=\"/?page=%zu\">previous page</a> ", page - 1);
    if (page < pages)
        strbuf_printf(b, "<a rel=\"next\" href=\"/?page=%zu\">next page</a>", page + 1);
    strbuf_puts(b, "</p>\n");
}

static void status_render_counters(struct strbuf *b, const struct metrics_summary_row *rows, size_t nrows)
{
    strbuf_puts(b, "<h2>Counters</h2>\n<table id=\"counters\">\n");
    for (size_t i = 0; i < nrows; i++) {
        strbuf_puts(b, "<tr><th>");
        status_text(b, rows[i].name);
        if (rows[i].text[0] != '\0') {
            strbuf_puts(b, "</th><td>");
            status_text(b, rows[i].text);
            strbuf_puts(b, "</td></tr>\n");
        } else {
            strbuf_printf(b, "</th><td>%llu</td></tr>\n", rows[i].value);
        }
    }
    strbuf_puts(b, "</table>\n<p>For machines: <a href=\"/metrics\">/metrics</a>, <a href=\"/readyz\">/readyz</a>, "
                   "<a href=\"/livez\">/livez</a>.</p>\n");
}

char *status_render_html(const struct status *st, const struct status_upstream *upstream,
                         const struct metrics_summary_row *rows, size_t nrows, const struct status_build *build,
                         time_t now, size_t *len)
{
    struct strbuf b = {0};

    strbuf_puts(&b, status_head);
    if (st != NULL) {
        status_render_documents(&b, st, build, now);
        if (st->fleet)
            status_render_issuers(&b, st, build->page);
        else
            status_render_keys(&b, st);
        status_render_reload(&b, st);
        status_render_upstream(&b, st, upstream, now);
        status_render_pushes(&b);
    } else {
        strbuf_puts(&b, "<h1>oidc-discovery</h1>\n<p>Nothing published yet.</p>\n");
    }
    status_render_counters(&b, rows, nrows);
    strbuf_puts(&b, "</body></html>\n");
    return strbuf_finish(&b, len);
}
