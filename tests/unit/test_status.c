/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the status page (server/obs/status): what it shows, that
 * every value is escaped wherever it lands (text, a key's role, the reload
 * error, the pushes to object storage, the
 * --upstream's reads), its
 * order, and the publication of the status between threads (a reader
 * keeps its status while a newer one is published). Also util/strbuf,
 * which the page is written with.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "test_support.h"

#include "push/status.h"
#include "server/obs/status.h"
#include "server/reload/mirror.h"
#include "util/strbuf.h"

#define T0 1800000000L /* 2027-01-15T08:00:00Z */

static const struct status_build build = {"0.1.0", "0123456789ab", "2027-01-01", 0};

static void status_teardown(void)
{
    status_clear();
    leak_check();
}

TestSuite(status, .fini = status_teardown);

/* A status with two keys (one retained, one with a role), a failed last
 * pass; values take the hostile forms given. */
static struct status *sample(const char *source, const char *error, const char *role)
{
    struct status *st = status_new("https://issuer.example", "https://issuer.example/openid/v1/jwks");

    cr_assert_not_null(st);
    st->generation = 3;
    st->published_at = T0;
    st->reload_at = T0 + 60;
    st->reload_failures = 2;
    st->reload_error = strdup(error);
    status_add_key(
        st,
        &(struct status_key){
            .kid = "kid-rsa", .alg = "RS256", .source = source, .bits = 2048, .first_seen = T0 - 3600, .role = role});
    status_add_key(st, &(struct status_key){.kid = "kid-ec",
                                            .alg = "ES256",
                                            .source = "retained (state)",
                                            .bits = 256,
                                            .curve = "P-256",
                                            .first_seen = T0 - 7200,
                                            .retained_until = T0 + 86400});
    cr_assert_eq(st->failed, 0);
    return st;
}

static char *render(const struct status *st, size_t *len)
{
    struct metrics_summary_row rows[3] = {
        {"requests /openid/v1/jwks", 7, ""}, {"<b>odd</b> counter", 1, ""}, {"a cache's hit ratio", 0, "0.9500"}};
    struct mirror_status ms;
    struct status_upstream up;
    int upstream = mirror_status_get(&ms) && mirror_status_page(&ms, T0 + 61, &up);
    char *html = status_render_html(st, upstream ? &up : NULL, rows, 3, &build, T0 + 61, len);

    cr_assert_not_null(html);
    cr_assert_eq(strlen(html), *len);
    return html;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

Test(status, shows_documents_keys_reload_and_counters)
{
    struct status *st = sample("/etc/keys/sa.pub (block 1)", "a.pub: no key", "signing");
    size_t len;
    char *html = render(st, &len);

    cr_expect_not_null(strstr(html, "<td>https://issuer.example</td>"));
    cr_expect_not_null(strstr(html, "<td>https://issuer.example/openid/v1/jwks</td>"));
    cr_expect_not_null(strstr(html, "<tr><th>key set generation</th><td>3</td></tr>"));
    cr_expect_not_null(strstr(html, "<td>0.1.0 (commit 0123456789ab, built 2027-01-01)</td>"));
    cr_expect_eq(count(html, "<tr class=\"key\">"), 2);
    cr_expect_not_null(strstr(html, "<tr class=\"key\"><td class=\"kid\">kid-rsa</td><td class=\"alg\">RS256</td>"
                                    "<td class=\"size\">2048</td><td class=\"source\">/etc/keys/sa.pub (block 1)</td>"
                                    "<td class=\"first-seen\">2027-01-15T07:00:00Z</td>"
                                    "<td class=\"retained-until\">-</td><td class=\"role\">signing</td></tr>"),
                       "%s", html);
    cr_expect_not_null(strstr(html, "<td class=\"size\">P-256</td>"));
    cr_expect_not_null(strstr(html, "<td class=\"retained-until\">2027-01-16T08:00:00Z</td><td class=\"role\">-</td>"));
    cr_expect_not_null(strstr(html, "<tr><th>at</th><td>2027-01-15T08:01:00Z</td></tr>"));
    cr_expect_not_null(strstr(html, "failed: a.pub: no key"));
    cr_expect_not_null(strstr(html, "<tr><th>failed reloads</th><td>2</td></tr>"));
    cr_expect_not_null(strstr(html, "<tr><th>requests /openid/v1/jwks</th><td>7</td></tr>"));
    /* a figure that is not a count is shown as its text, not as 0 */
    cr_expect_not_null(strstr(html, "<tr><th>a cache&#39;s hit ratio</th><td>0.9500</td></tr>"), "%s", html);
    /* the order: documents, keys, last reload, counters */
    const char *order[] = {"id=\"documents\"", "id=\"keys\"", "id=\"reload\"", "id=\"counters\""};
    for (size_t i = 1; i < COUNT(order); i++)
        cr_expect_lt(strstr(html, order[i - 1]), strstr(html, order[i]), "%s before %s", order[i - 1], order[i]);
    cr_expect_null(strstr(html, "<script"), "the page runs no script");
    free(html);
    status_release(st);
}

/* Whatever a key file's name, a reload error or a key's role holds, it is
 * text on the page, never markup: a file named like a script stays one. */
Test(status, every_value_is_escaped)
{
    const char *evil = "/k/<script>alert(\"x\")</script>'&.pub";
    const char *escaped = "/k/&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;.pub";
    struct status *st = sample(evil, evil, evil);
    size_t len;
    char *html = render(st, &len);

    cr_expect_null(strstr(html, "<script"), "%s", html);
    cr_expect_null(strstr(html, "<b>"));
    cr_expect_eq(count(html, escaped), 3, "the source, the reload error and the role: %s", html);
    cr_expect_not_null(strstr(html, "&lt;b&gt;odd&lt;/b&gt; counter"));
    free(html);
    status_release(st);
}

/* With --publish-to, each target's last push as the publisher left it,
 * read when the page is rendered; without, no such table. */
Test(status, shows_the_pushes_to_object_storage)
{
    const char *urls[] = {"s3://oidc/<b>cluster</b>"};
    struct push_status ps = {
        .last_attempt = T0 + 30, .last_current = T0 + 31, .last_result = PUSH_RESULT_FAILED, .drift_repairs = 2};
    struct status *st = sample("/k/a.pub", "bad", "x");
    size_t len;
    char *html = render(st, &len);

    cr_expect_null(strstr(html, "id=\"pushes\""), "no --publish-to: no table");
    free(html);
    cr_assert_eq(push_status_init(urls, 1), 0);
    snprintf(ps.target, sizeof(ps.target), "%s", urls[0]);
    snprintf(ps.last_error, sizeof(ps.last_error), "PUT <x>: 403");
    push_status_put(0, &ps);
    html = render(st, &len);
    cr_expect_not_null(strstr(html,
                              "<tr class=\"push\"><td class=\"target\">s3://oidc/&lt;b&gt;cluster&lt;/b&gt;</td>"
                              "<td class=\"last-push\">2027-01-15T08:00:30Z</td><td class=\"result\">failed</td>"
                              "<td class=\"last-current\">2027-01-15T08:00:31Z</td>"
                              "<td class=\"drift-repairs\">2</td><td class=\"error\">PUT &lt;x&gt;: 403</td></tr>"),
                       "%s", html);
    cr_expect_lt(strstr(html, "id=\"pushes\""), strstr(html, "id=\"counters\""));
    push_status_reset();
    free(html);
    status_release(st);
}

/* With --upstream, its reads as the mirror thread last left them, read
 * when the page is rendered (the age at that moment); an issuer it names
 * is text, beside ours. Without, no such table. */
Test(status, shows_the_upstream_read_now)
{
    struct mirror_status ms = {.enabled = 1,
                               .has_data = 1,
                               .issuer_mismatch = 1,
                               .last_success = T0 - 60,
                               .last_attempt = T0 + 59,
                               .max_staleness = 300,
                               .failures = 4,
                               .last_result = "issuer_mismatch",
                               .last_failed = 1};
    struct status *st = sample("/k/a.pub", "bad", "x");
    size_t len;
    char *html = render(st, &len);

    cr_expect_null(strstr(html, "id=\"upstream\""), "no --upstream: no table");
    free(html);
    snprintf(ms.url, sizeof(ms.url), "https://api.example:6443");
    snprintf(ms.mismatch, sizeof(ms.mismatch), "https://other.example/<script>x</script>");
    snprintf(ms.last_error, sizeof(ms.last_error), "its issuer \"<b>\" is not ...");
    mirror_status_set(&ms);
    html = render(st, &len);
    cr_expect_not_null(strstr(html, "<tr><th>url</th><td>https://api.example:6443</td></tr>\n"
                                    "<tr><th>documents</th><td class=\"ok\">served</td></tr>\n"
                                    "<tr><th>last good read</th><td>2027-01-15T07:59:00Z</td></tr>\n"
                                    "<tr><th>age</th><td>121s</td></tr>\n"
                                    "<tr><th>last read</th><td>2027-01-15T08:00:59Z</td></tr>\n"
                                    "<tr><th>last read result</th><td class=\"failed\">issuer_mismatch</td></tr>\n"
                                    "<tr><th>last error</th><td>its issuer &quot;&lt;b&gt;&quot; is not ...</td></tr>\n"
                                    "<tr><th>failed reads since the last good one</th><td>4</td></tr>\n"
                                    "<tr><th>issuer</th><td class=\"failed\">mismatch: what it answers is not "
                                    "published</td></tr>\n"
                                    "<tr><th>the upstream&#39;s issuer</th><td>https://other.example/&lt;script&gt;x"
                                    "&lt;/script&gt;</td></tr>\n"
                                    "<tr><th>--service-account-issuer</th><td>https://issuer.example</td></tr>\n"),
                       "%s", html);
    cr_expect_null(strstr(html, "<script"));
    cr_expect_lt(strstr(html, "id=\"reload\""), strstr(html, "id=\"upstream\""));
    cr_expect_lt(strstr(html, "id=\"upstream\""), strstr(html, "id=\"counters\""));
    free(html);
    /* stale, never read well, not read yet */
    ms.max_staleness = 60;
    mirror_status_set(&ms);
    html = render(st, &len);
    cr_expect_not_null(strstr(html, "<td>121s, more than --upstream-max-staleness (60s): not ready</td>"), "%s", html);
    free(html);
    ms = (struct mirror_status){.enabled = 1, .last_result = ""};
    mirror_status_set(&ms);
    st->unavailable = 1;
    html = render(st, &len);
    cr_expect_not_null(strstr(html, "<td class=\"failed\">unavailable: both answer 503 until the upstream&#39;s "
                                    "first good answer</td>"),
                       "%s", html);
    cr_expect_not_null(strstr(html, "<tr><th>age</th><td>-</td></tr>"));
    cr_expect_not_null(strstr(html, "<tr><th>last read result</th><td>-</td></tr>"));
    cr_expect_not_null(strstr(html, "<tr><th>issuer</th><td>-</td></tr>"));
    mirror_status_set(&(struct mirror_status){0});
    free(html);
    status_release(st);
}

Test(status, control_characters_are_replaced)
{
    struct status *st = sample("/k/a\x1b[31m\r.pub", "bad", "x");
    size_t len;
    char *html = render(st, &len);

    cr_expect_not_null(strstr(html, "/k/a\xef\xbf\xbd[31m\xef\xbf\xbd.pub"), "%s", html);
    free(html);
    status_release(st);
}

Test(status, nothing_published_yet)
{
    size_t len;
    char *html = render(NULL, &len);

    cr_expect_not_null(strstr(html, "Nothing published yet."));
    cr_expect_not_null(strstr(html, "id=\"counters\""));
    free(html);
}

/* A reader holds its status while a newer one replaces it; the last
 * reference frees it (LeakSanitizer checks at the suite's end). */
Test(status, publication_between_threads)
{
    struct status *a = status_new("https://a.example", "https://a.example/jwks");
    struct status *b = status_new("https://b.example", "https://b.example/jwks");
    struct status *held, *now;

    cr_expect_null(status_acquire(), "nothing yet");
    status_publish(a);
    held = status_acquire();
    cr_assert_eq(held, a);
    status_publish(b);
    cr_expect_str_eq(held->issuer, "https://a.example", "still the reader's");
    now = status_acquire();
    cr_expect_eq(now, b);
    status_release(now);
    status_release(held);
}

/* A status whose building ran out of memory is not shown: the last good
 * one stays. */
Test(status, a_failed_status_is_not_published)
{
    struct status *good = status_new("https://a.example", "https://a.example/jwks");
    struct status *bad = status_new("https://b.example", "https://b.example/jwks");
    struct status *now;

    status_publish(good);
    bad->failed = 1;
    status_publish(bad);
    now = status_acquire();
    cr_expect_eq(now, good);
    status_release(now);
}

TestSuite(strbuf, .fini = leak_check);

Test(strbuf, grows_and_finishes)
{
    struct strbuf b = {0};
    char *text;
    size_t len = 0;

    for (int i = 0; i < 1000; i++)
        strbuf_printf(&b, "%04d,", i);
    strbuf_puts(&b, "end");
    strbuf_add(&b, "!?", 1);
    cr_assert_not_null(text = strbuf_finish(&b, &len));
    cr_expect_eq(len, 5000 + 4);
    cr_expect_eq(strncmp(text, "0000,0001,", 10), 0);
    cr_expect_str_eq(text + 4995, "0999,end!");
    cr_expect_eq(b.p, NULL, "the buffer is empty again");
    free(text);
    cr_assert_not_null(text = strbuf_finish(&b, &len), "nothing written: an empty string");
    cr_expect_eq(len, 0);
    cr_expect_str_eq(text, "");
    free(text);
}

Test(strbuf, a_failure_is_reported_once_at_the_end)
{
    struct strbuf b = {0};
    size_t len = 99;

    strbuf_puts(&b, "some");
    b.failed = 1;
    strbuf_puts(&b, "more");
    cr_expect_null(strbuf_finish(&b, &len));
    cr_expect_eq(len, 99);
}

/* A fleet of n issuer files, every seventh refused (the third of those
 * with nothing served), names escaped like every value. */
static struct status *fleet_sample(size_t n)
{
    struct status *st = status_new("a fleet", "-");

    cr_assert_not_null(st);
    st->fleet = 1;
    for (size_t i = 0; i < n; i++) {
        char name[32], file[64], issuer[64];
        snprintf(name, sizeof name, "c%03zu", i);
        snprintf(file, sizeof file, "/etc/issuers/c%03zu.json", i);
        snprintf(issuer, sizeof issuer, "https://oidc.example/id/%zu", i);
        status_add_issuer(st, &(struct status_issuer){.name = name,
                                                      .file = file,
                                                      .issuer = i % 21 == 14 ? NULL : issuer,
                                                      .jwks_etag = "\"etag\"",
                                                      .nkeys = 2,
                                                      .published_at = T0,
                                                      .problem = i % 7 == 0 ? "bad <json>" : NULL});
    }
    cr_assert_eq(st->failed, 0);
    return st;
}

Test(status, fleet_pages)
{
    struct status *st = fleet_sample(250);
    struct status_build paged = build;
    size_t len;
    char *html;

    html = render(st, &len);
    cr_assert_not_null(strstr(html, "<h2>Issuers (250 files, page 1 of 3)</h2>"));
    cr_assert_eq(count(html, "<tr class=\"issuer\">"), STATUS_ISSUERS_PER_PAGE);
    cr_assert_eq(count(html, "<td class=\"kid\">"), 0, "a fleet's page lists issuers, not keys");
    cr_assert_not_null(strstr(html, "<td class=\"name\">c000</td>"));
    cr_assert_null(strstr(html, "<td class=\"name\">c100</td>"));
    cr_assert_not_null(strstr(html, "refused (the last good state serves): bad &lt;json&gt;"));
    cr_assert_not_null(strstr(html, "<a rel=\"next\" href=\"/?page=2\">"));
    cr_assert_null(strstr(html, "rel=\"prev\""));
    free(html);
    paged.page = 3;
    html = status_render_html(st, NULL, NULL, 0, &paged, T0, &len);
    cr_assert_eq(count(html, "<tr class=\"issuer\">"), 50);
    cr_assert_not_null(strstr(html, "<td class=\"name\">c249</td>"));
    cr_assert_not_null(strstr(html, "<a rel=\"prev\" href=\"/?page=2\">"));
    cr_assert_null(strstr(html, "rel=\"next\""));
    free(html);
    paged.page = 99; /* past the end: the last page */
    html = status_render_html(st, NULL, NULL, 0, &paged, T0, &len);
    cr_assert_not_null(strstr(html, "page 3 of 3"));
    free(html);
    status_release(st);
}
