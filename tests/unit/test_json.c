/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keys/json_parse (the strict JSON parser of token headers,
 * payloads and TokenReview requests). It must read what yajl 2.1 read when
 * the project parsed with it, and decode strings the same way: each quirk
 * kept for that (whitespace, UTF-8 and surrogate handling) has a test here,
 * as has every refusal. fuzz_token compares it with yajl input by input.
 */
#include <criterion/criterion.h>

#include "test_support.h"

#include <stdio.h>
#include <string.h>

#include "util/json.h"

/* Writes tree v compactly: {name:value,...}, [...], strings quoted with
 * bytes outside printable ASCII (and '"', '\\') as \xHH, numbers in %.17g,
 * true, false, null. */
static void dump(const struct json_value *v, char *out, size_t size)
{
    size_t len = strlen(out);
#define PUT(...) (len += (size_t)snprintf(out + len, len < size ? size - len : 0, __VA_ARGS__))
    if (v->name != NULL)
        PUT("%s:", v->name);
    switch (v->type) {
    case JSON_NULL:
        PUT("null");
        break;
    case JSON_BOOL:
        PUT("%s", v->boolean ? "true" : "false");
        break;
    case JSON_NUMBER:
        PUT("%.17g", v->num);
        break;
    case JSON_STRING:
        PUT("\"");
        for (const unsigned char *s = (const unsigned char *)v->str; *s; s++)
            PUT(*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\' ? "%c" : "\\x%02x", *s);
        PUT("\"");
        break;
    case JSON_ARRAY:
    case JSON_OBJECT:
        PUT("%c", v->type == JSON_OBJECT ? '{' : '[');
        for (const struct json_value *c = v->child; c != NULL; c = c->next) {
            dump(c, out, size);
            len = strlen(out);
            if (c->next != NULL)
                PUT(",");
        }
        PUT("%c", v->type == JSON_OBJECT ? '}' : ']');
        break;
    }
#undef PUT
}

/* Parses the n bytes of json, which must be accepted and read as want. */
static void expect_tree_n(const char *json, size_t n, const char *want)
{
    char err[128] = "", got[1024] = "";
    struct json_value *root = json_parse((const unsigned char *)json, n, err, sizeof(err));

    cr_assert_not_null(root, "refused %s: %s", json, err);
    dump(root, got, sizeof(got));
    cr_expect_str_eq(got, want, "%s", json);
    json_free(root);
}

static void expect_tree(const char *json, const char *want)
{
    expect_tree_n(json, strlen(json), want);
}

/* The n bytes of json must be refused, with a reason containing why. */
static void expect_refused_n(const char *json, size_t n, const char *why)
{
    char err[128] = "";
    struct json_value *root = json_parse((const unsigned char *)json, n, err, sizeof(err));

    cr_expect_null(root, "accepted %s", json);
    cr_expect(strstr(err, why) != NULL, "%s: \"%s\", not \"%s\"", json, err, why);
    json_free(root);
}

static void expect_refused(const char *json, const char *why)
{
    expect_refused_n(json, strlen(json), why);
}

Test(json_parse, tree_keeps_types_names_and_order)
{
    expect_tree("{\"b\":1,\"a\":[true,false,null,\"x\",{}],\"c\":{\"d\":[]}}",
                "{b:1,a:[true,false,null,\"x\",{}],c:{d:[]}}");
    expect_tree("{}", "{}");
    expect_tree("{\"\":\"\"}", "{:\"\"}");
}

/* yajl's whitespace: RFC 8259's four and \v and \f, everywhere. */
Test(json_parse, whitespace)
{
    expect_tree(" \t\n\r\v\f{ \v\"a\"\f:\t[ 1 ,\n2 ] ,\"b\" : {} }\r\n\v\f ", "{a:[1,2],b:{}}");
    expect_refused("{\"a\":1}\x01", "invalid JSON");
    expect_refused("\xef\xbb\xbf{}", "top level"); /* a byte order mark is not whitespace */
    expect_refused("{\"a\":\xc2\xa0"
                   "1}",
                   "invalid JSON");
}

Test(json_parse, top_level_must_be_an_object)
{
    const char *not_objects[] = {"[]", "[{}]", "\"a\"", "1", "true", "null", "", "   ", "x"};
    for (size_t i = 0; i < COUNT(not_objects); i++)
        expect_refused(not_objects[i], "the top level is not a JSON object");
}

/* Only whitespace after the object. yajl let an unterminated string through
 * there (`{} "abc`): that one is refused too. */
Test(json_parse, trailing_bytes)
{
    const char *trailing[] = {"{} x", "{}{}", "{} []", "{} 1", "{},", "{}}", "{} \"abc\"", "{} \"abc", "{} \"", "{} /"};
    for (size_t i = 0; i < COUNT(trailing); i++)
        expect_refused(trailing[i], "invalid JSON");
    expect_refused_n("{}\0", 3, "invalid JSON");
}

Test(json_parse, structure_errors)
{
    const char *bad[] = {
        "{",          "{\"a\"",       "{\"a\":",        "{\"a\":1",      "{\"a\":1,}", "{,}",
        "{\"a\" 1}",  "{\"a\":}",     "{1:2}",          "{a:1}",         "{'a':1}",    "{\"a\":1 \"b\":2}",
        "{\"a\":[}",  "{\"a\":[1,]}", "{\"a\":[,1]}",   "{\"a\":[1 2]}", "{\"a\":[1}", "{\"a\":{]}",
        "{\"a\":1;}", "{\"a\"::1}",   "{\"a\":/*c*/1}",
    };
    for (size_t i = 0; i < COUNT(bad); i++)
        expect_refused(bad[i], "invalid JSON");
}

/* RFC 8259's grammar; the value is strtod's (exact for integers up to 15
 * digits, +-inf beyond a double's range). */
Test(json_parse, numbers)
{
    expect_tree("{\"a\":[0,-0,7,-12,1.5,-0.25,1e2,1E+2,25e-2,1.5e1,123456789012345,1234567890123456789]}",
                "{a:[0,-0,7,-12,1.5,-0.25,100,100,0.25,15,123456789012345,1.2345678901234568e+18]}");
    expect_tree("{\"a\":1e400,\"b\":-1e400,\"c\":1e-400}", "{a:inf,b:-inf,c:0}");
    const char *bad[] = {"01",  "-01",  "00",  "-",        "+1",        ".5",    "1.",  "1.e2",  "1e",   "1e+",
                         "1E-", "0x10", "NaN", "Infinity", "-Infinity", "1_000", "--1", "1.5.2", "1e2e3"};
    char json[64];
    for (size_t i = 0; i < COUNT(bad); i++) {
        snprintf(json, sizeof(json), "{\"a\":%s}", bad[i]);
        expect_refused(json, "invalid JSON");
    }
}

Test(json_parse, literals)
{
    const char *bad[] = {"tru", "True", "nul", "nulll", "falsey", "fals", "t"};
    char json[64];
    for (size_t i = 0; i < COUNT(bad); i++) {
        snprintf(json, sizeof(json), "{\"a\":%s}", bad[i]);
        expect_refused(json, "invalid JSON");
    }
}

Test(json_parse, escapes)
{
    expect_tree("{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}", "{a:\"\\x22\\x5c/\\x08\\x0c\\x0a\\x0d\\x09\"}");
    expect_tree("{\"\\u0061\\u00e9\\u20AC\":\"x\\u007f\"}", "{a\xc3\xa9\xe2\x82\xac:\"x\\x7f\"}");
    const char *bad[] = {"\\x41", "\\'", "\\u12", "\\u12G4", "\\U0041", "\\", "\\ ", "\\0"};
    char json[64];
    for (size_t i = 0; i < COUNT(bad); i++) {
        snprintf(json, sizeof(json), "{\"a\":\"%s\"}", bad[i]);
        expect_refused(json, "invalid JSON");
    }
}

/* C strings cannot hold U+0000: a name or value with one would compare
 * equal to its prefix. */
Test(json_parse, u0000_refused)
{
    expect_refused("{\"a\":\"x\\u0000\"}", "U+0000");
    expect_refused("{\"a\\u0000\":1}", "U+0000");
    expect_refused_n("{\"a\":\"x\0\"}", sizeof("{\"a\":\"x\0\"}") - 1,
                     "invalid JSON"); /* a raw NUL is a control character */
}

/* Control characters must be escaped; DEL need not. */
Test(json_parse, control_characters)
{
    char json[16];
    for (int c = 1; c < 0x20; c++) {
        snprintf(json, sizeof(json), "{\"a\":\"%c\"}", c);
        expect_refused(json, "invalid JSON");
    }
    expect_tree("{\"a\":\"\x7f\"}", "{a:\"\\x7f\"}");
}

/* yajl's UTF-8 check: a lead byte and its continuation bytes. The code
 * point is not checked: overlong forms, encoded surrogates and leads up to
 * F7 pass as they are. */
Test(json_parse, utf8)
{
    expect_tree("{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
                "{a:\"\\xc3\\xa9\\xe2\\x82\\xac\\xf0\\x9f\\x98\\x80\"}");
    expect_tree("{\"a\":\"\xc0\x80\xed\xa0\x80\xf7\xbf\xbf\xbf\"}",
                "{a:\"\\xc0\\x80\\xed\\xa0\\x80\\xf7\\xbf\\xbf\\xbf\"}");
    const char *bad[] = {"\x80",        "\xbf",     "\xf8\x80\x80\x80\x80", "\xff",         "\xc3",
                         "\xc3\x41",    "\xe2\x82", "\xe2\x82\x41",         "\xf0\x9f\x98", "\xf0\x9f\x98\xc0",
                         "\xc3\xa9\x80"};
    char json[64];
    for (size_t i = 0; i < COUNT(bad); i++) {
        snprintf(json, sizeof(json), "{\"a\":\"%s\"}", bad[i]);
        expect_refused(json, "invalid JSON");
    }
}

/* yajl's \u decoding: a high surrogate joins the \u escape after it (any
 * one), becomes '?' without one; a lone low surrogate is written as it is. */
Test(json_parse, surrogates)
{
    expect_tree("{\"a\":\"\\uD83D\\uDE00\"}", "{a:\"\\xf0\\x9f\\x98\\x80\"}");
    expect_tree("{\"a\":\"\\udbff\\udfff\"}", "{a:\"\\xf4\\x8f\\xbf\\xbf\"}");
    expect_tree("{\"a\":\"\\uD800\\u0041\"}", "{a:\"\\xf0\\x90\\x81\\x81\"}");
    expect_tree("{\"a\":\"\\uD800x\"}", "{a:\"?x\"}");
    expect_tree("{\"a\":\"\\uD800\"}", "{a:\"?\"}");
    expect_tree("{\"a\":\"\\uD800\\n\"}", "{a:\"?\\x0a\"}");
    expect_tree("{\"a\":\"\\uD800\\\\u0041\"}", "{a:\"?\\x5cu0041\"}");
    expect_tree("{\"a\":\"\\uDC00\"}", "{a:\"\\xed\\xb0\\x80\"}");
    expect_tree("{\"a\":\"\\uD800\\uD800\\uDC00\"}", "{a:\"\\xf0\\x90\\x80\\x80\\xed\\xb0\\x80\"}");
}

/* Two parsers that keep the first or the last of a name given twice would
 * see different tokens: refused at every level, also when spelt
 * differently. */
Test(json_parse, duplicate_members)
{
    expect_refused("{\"a\":1,\"a\":1}", "duplicate member");
    expect_refused("{\"a\":1,\"b\":{\"c\":1,\"c\":2}}", "duplicate member");
    expect_refused("{\"a\":1,\"\\u0061\":2}", "duplicate member");
    expect_refused("{\"a\":[{\"x\":1,\"y\":2,\"x\":3}]}", "duplicate member");
    expect_tree("{\"a\":{\"a\":1},\"b\":[{\"a\":1},{\"a\":2}]}", "{a:{a:1},b:[{a:1},{a:2}]}");
}

/* {"m0":0,...,"m<n-1>":0} with member dup renamed to "m<to>" (dup < 0:
 * none), inside {"x":...} when nest; malloc'ed. */
static char *wide_object(size_t n, long dup, size_t to, int nest)
{
    char *json = malloc(n * 16 + 32);
    size_t len = (size_t)sprintf(json, "%s{", nest ? "{\"x\":" : "");

    cr_assert_not_null(json);
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(json + len, "%s\"m%zu\":0", i ? "," : "", (long)i == dup ? to : i);
    strcpy(json + len, nest ? "}}" : "}");
    return json;
}

/* A large object is checked once, when it ends (each member against all
 * the others made wide documents quadratic): the duplicate is found
 * wherever it is, and distinct names pass. */
Test(json_parse, duplicate_members_of_a_large_object)
{
    const size_t sizes[] = {32, 33, 40000};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        const long dups[][2] = {{1, 0}, {(long)n - 1, 0}, {(long)n - 1, n - 2}, {(long)n / 2, 3}};
        for (int nest = 0; nest < 2; nest++) {
            char err[128] = "", *json = wide_object(n, -1, 0, nest);
            struct json_value *root = json_parse((const unsigned char *)json, strlen(json), err, sizeof(err));
            cr_expect_not_null(root, "%zu distinct members refused: %s", n, err);
            json_free(root);
            free(json);
            for (size_t d = 0; d < sizeof(dups) / sizeof(dups[0]); d++) {
                json = wide_object(n, dups[d][0], (size_t)dups[d][1], nest);
                expect_refused(json, "duplicate member");
                free(json);
            }
        }
    }
}

/* The refusal names the member given twice (quoted, so that no name can
 * break a log line), in small objects and in large ones alike. */
Test(json_parse, duplicate_member_named)
{
    char *json = wide_object(40, 30, 7, 0);

    expect_refused("{\"a\":1,\"b\":{\"c\":1,\"c\":2}}", "duplicate member \"c\" in a JSON object");
    expect_refused("{\"x\\ny\":1,\"x\\ny\":2}", "duplicate member \"x\\ny\" in a JSON object");
    expect_refused(json, "duplicate member \"m7\" in a JSON object");
    free(json);
}

/* json_parse_at says where the parse stopped, for messages pointing into a
 * file; a tree it accepts is json_parse's. */
Test(json_parse, stop_offset)
{
    const struct {
        const char *json;
        size_t stop;
    } cases[] = {{"{\"a\":1,}", 7}, {"{} {}", 3}, {"{\"a\":", 5}, {"[1]", 0}, {"{\"a\":1,\"a\":2}", 10}};
    char err[128];
    size_t stop;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        stop = 999;
        cr_expect_null(
            json_parse_at((const unsigned char *)cases[i].json, strlen(cases[i].json), &stop, err, sizeof(err)), "%s",
            cases[i].json);
        cr_expect_eq(stop, cases[i].stop, "%s: stopped at %zu", cases[i].json, stop);
    }
    stop = 999;
    struct json_value *root = json_parse_at((const unsigned char *)"{\"a\":1}", 7, &stop, err, sizeof(err));
    cr_assert_not_null(root);
    cr_expect_eq(stop, 999, "set on success");
    json_free(root);
}

/* A number keeps its text unless it is a plain integer of at most 15
 * digits, which num holds exactly: readers that want an integer as it was
 * written (the config file refuses 1e3 and 1.0) can tell. */
Test(json_parse, number_text)
{
    char err[128];
    struct json_value *root =
        json_parse((const unsigned char *)"{\"a\":[123,-5,1e3,1.0,1234567890123456,-0.5]}", 44, err, sizeof(err));
    const char *want[] = {NULL, NULL, "1e3", "1.0", "1234567890123456", "-0.5"};
    const struct json_value *e;
    size_t i = 0;

    cr_assert_not_null(root, "%s", err);
    for (e = json_get(root, "a")->child; e != NULL; e = e->next, i++) {
        if (want[i] == NULL)
            cr_expect_null(e->str, "element %zu", i);
        else
            cr_expect_str_eq(e->str, want[i], "element %zu", i);
    }
    cr_expect_eq(i, 6);
    json_free(root);
}

/* A document of depth nested containers: the top-level object, then
 * arrays and objects by turns, the innermost one empty. */
static const char *nested(int depth)
{
    static char json[512];
    size_t n = 0;

    for (int i = 0; i < depth - 1; i++)
        n += (size_t)snprintf(json + n, sizeof(json) - n, "%s", i % 2 ? "[" : "{\"k\":");
    n += (size_t)snprintf(json + n, sizeof(json) - n, "%s", (depth - 1) % 2 ? "[]" : "{}");
    for (int i = depth - 2; i >= 0; i--)
        n += (size_t)snprintf(json + n, sizeof(json) - n, "%s", i % 2 ? "]" : "}");
    return json;
}

Test(json_parse, depth)
{
    char err[128];
    for (int depth = 1; depth <= JSON_MAX_DEPTH; depth++) {
        const char *json = nested(depth);
        struct json_value *root = json_parse((const unsigned char *)json, strlen(json), err, sizeof(err));
        cr_expect_not_null(root, "depth %d refused: %s: %s", depth, err, json);
        json_free(root);
    }
    expect_refused(nested(JSON_MAX_DEPTH + 1), "nested too deeply");
    expect_refused(nested(JSON_MAX_DEPTH + 5), "nested too deeply");
}
