/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for jose/token_iss: the unverified iss of a token, by which a
 * fleet's TokenReview picks the issuer to verify with.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "jose/token_iss.h"
#include "util/b64url.h"

/* A token whose payload is json (header and signature arbitrary). */
static char *token_of(const char *json)
{
    static char token[32768];
    char *p = token + sprintf(token, "eyJhbGciOiJSUzI1NiJ9.");

    p += b64url_encode((const unsigned char *)json, strlen(json), p);
    strcpy(p, ".c2ln");
    return token;
}

/* The iss read from json's token, or NULL. */
static const char *peek(const char *json)
{
    static char iss[256];
    char *t = token_of(json);

    return token_iss_peek(t, strlen(t), iss, sizeof(iss)) >= 0 ? iss : NULL;
}

Test(token_iss, top_level_member)
{
    cr_assert_str_eq(peek("{\"aud\":[\"a\"],\"iss\":\"https://a.example/c/1\",\"sub\":\"x\"}"),
                     "https://a.example/c/1");
    cr_assert_str_eq(peek(" { \"iss\" : \"https:\\/\\/b.example\" } "), "https://b.example");
    /* an iss inside another member does not count, nor one in a string */
    cr_assert_str_eq(peek("{\"kubernetes.io\":{\"iss\":\"inner\"},\"x\":\"\\\"iss\\\":\",\"iss\":\"outer\"}"), "outer");
    cr_assert_str_eq(peek("{\"a\":[{\"iss\":\"no\"},\"iss\"],\"iss\":\"yes\"}"), "yes");
    /* a value that happens to be "iss" is not a member name */
    cr_assert_str_eq(peek("{\"sub\":\"iss\",\"iss\":\"yes\"}"), "yes");
}

Test(token_iss, refused)
{
    char *t;

    cr_assert_null(peek("{\"sub\":\"x\"}"));
    cr_assert_null(peek("{\"kubernetes.io\":{\"iss\":\"inner\"}}"));
    cr_assert_null(peek("{\"iss\":42}"));
    cr_assert_null(peek("[\"iss\",\"x\"]"));
    cr_assert_null(peek("{\"iss\":\"a\\u0041\"}"), "escapes an issuer URL needs none of");
    cr_assert_null(peek("{\"iss\":\"unterminated"));
    t = "no-dots";
    cr_assert_eq(token_iss_peek(t, strlen(t), (char[8]){0}, 8), -1);
    t = "a.!!!.c";
    cr_assert_eq(token_iss_peek(t, strlen(t), (char[8]){0}, 8), -1);
    t = token_of("{\"iss\":\"longer than the buffer\"}");
    cr_assert_eq(token_iss_peek(t, strlen(t), (char[8]){0}, 8), -1);
}

Test(token_iss, payload_size_bounded)
{
    static char json[TOKEN_ISS_PAYLOAD_MAX + 64];
    size_t n;

    n = (size_t)sprintf(json, "{\"iss\":\"x\",\"pad\":\"");
    memset(json + n, 'p', sizeof(json) - n - 3);
    strcpy(json + sizeof(json) - 3, "\"}");
    cr_assert_null(peek(json), "a payload larger than the buffer is not read");
}
