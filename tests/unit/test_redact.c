/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/redact.c: the one rule by which URLs are shown in messages.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "test_support.h"
#include "util/redact.h"

TestSuite(redact, .fini = leak_check);

struct shown_url {
    char url[160];
    char shown[160];
};

static struct shown_url shown_urls[] = {
    {"https://oidc.example.com/openid/v1/jwks", "https://oidc.example.com/openid/v1/jwks"},
    {"s3://bucket/prefix", "s3://bucket/prefix"},
    {"unix:/run/oidc.sock", "unix:/run/oidc.sock"},
    {"https://a.blob.core.windows.net/c/x?sv=2021-08-06&se=2030&sp=rw&sig=abc%2Bdef",
     "https://a.blob.core.windows.net/c/x?<redacted: sv, se, sp, sig>"},
    {"https://h/p?BareSecretWithoutName", "https://h/p?<redacted: *>"},
    {"https://h/p?a=1&&b", "https://h/p?<redacted: a, *>"},
    {"https://h/p?", "https://h/p?<redacted>"},
    {"https://user:pw@h:8443/p", "https://<redacted>@h:8443/p"},
    {"https://h/p#access_token=xyz", "https://h/p#<redacted>"},
    {"https://h/p?x=1#f?y=2", "https://h/p?<redacted: x>#<redacted>"},
    {"https://h/p?aVeryLongParameterNameThatCouldBeASecret1=1", "https://h/p?<redacted: *>"},
    {"https://h/a@b/c?q=1", "https://h/a@b/c?<redacted: q>"},
    {"/relative?sig=1", "/relative?<redacted: sig>"},
    {"https://h/\x01\x7f?x\x02=1", "https://h/??"
                                   "?<redacted: *>"},
};

ParameterizedTestParameters(redact, url)
{
    return cr_make_param_array(struct shown_url, shown_urls, COUNT(shown_urls));
}

ParameterizedTest(struct shown_url *u, redact, url)
{
    char out[164];

    cr_expect_str_eq(redact_url(u->url, out, 160), u->shown, "%s", u->url);
}

/* A long URL is cut where printable_copy would cut it, "..." after. */
Test(redact, cut)
{
    char out[24];

    cr_expect_str_eq(redact_url("https://h/p?sig=secret", out, 16), "https://h/p?<red...");
    cr_expect_str_eq(redact_url("https://h/p", out, 11), "https://h/p");
}

/* Text a library wrote about a request loses every long secret part of
 * the URL, wherever it appears and however often. */
Test(redact, parts_in_text)
{
    char text[] = "failed https://u:LongPassword@h/x?sig=0123456789abc: sig=0123456789abc again; frag ZZZZZZZZZZZZ";

    redact_url_parts_in(text, "https://u:LongPassword@h/x?sig=0123456789abc#ZZZZZZZZZZZZ");
    cr_expect_str_eq(text, "failed https://<redacted>@h/x?<redacted>: <redacted> again; frag <redacted>");
}
