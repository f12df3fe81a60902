/* SPDX-License-Identifier: Apache-2.0 */
#include "jose/tokenreview.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsonw.h"
#include "jose/jwt.h"

#define TOKENREVIEW_GROUP "authentication.k8s.io"

/* Copies spec.audiences; null or absent means none were asked for. */
static const char *tr_audiences(const struct json_value *auds, struct tokenreview_request *out)
{
    size_t n = 0;

    if (auds == NULL || auds->type == JSON_NULL)
        return NULL;
    if (auds->type != JSON_ARRAY)
        return "spec.audiences must be an array of strings";
    for (const struct json_value *v = auds->child; v != NULL; v = v->next)
        if (v->type != JSON_STRING)
            return "spec.audiences must be an array of strings";
        else
            n++;
    out->has_audiences = 1;
    if (n > 0 && (out->audiences = calloc(n, sizeof(*out->audiences))) == NULL)
        return "out of memory";
    for (const struct json_value *v = auds->child; v != NULL; v = v->next)
        if ((out->audiences[out->naudiences++] = strdup(v->str)) == NULL)
            return "out of memory";
    return NULL;
}

static int tr_is_one_of(const struct json_value *v, const char *a, const char *b)
{
    return v->type == JSON_STRING && (strcmp(v->str, a) == 0 || (b != NULL && strcmp(v->str, b) == 0));
}

/* Reads the members a review needs from the parsed request; NULL when all
 * is well, else what a Status message should say. */
static const char *tr_extract(const struct json_value *root, struct tokenreview_request *out)
{
    const struct json_value *kind = json_get(root, "kind"), *api = json_get(root, "apiVersion");
    const struct json_value *spec = json_get(root, "spec"), *token = json_get(spec, "token");

    if (kind != NULL && !tr_is_one_of(kind, "TokenReview", NULL))
        return "kind must be TokenReview";
    if (api != NULL && !tr_is_one_of(api, "authentication.k8s.io/v1", "authentication.k8s.io/v1beta1"))
        return "apiVersion must be authentication.k8s.io/v1";
    if (spec != NULL && spec->type != JSON_OBJECT)
        return "spec must be an object";
    if (token == NULL || token->type != JSON_STRING || token->str[0] == '\0')
        return "spec.token: Required value";
    if ((out->token = strdup(token->str)) == NULL)
        return "out of memory";
    return tr_audiences(json_get(spec, "audiences"), out);
}

/* The request goes through the token verifier's strict JSON parser: no
 * duplicate member anywhere (so no two parsers can read one request
 * differently), nesting at most 32, nothing after the object. */
int tokenreview_parse(const char *body, size_t len, struct tokenreview_request *out, char *err, size_t errlen)
{
    char why[256];
    struct json_value *root;
    const char *problem;

    memset(out, 0, sizeof(*out));
    root = json_parse((const unsigned char *)body, len, why, sizeof(why));
    problem = root ? tr_extract(root, out) : why;
    json_free(root);
    if (problem != NULL) {
        snprintf(err, errlen, "%s", problem);
        tokenreview_request_clear(out);
        return -1;
    }
    return 0;
}

void tokenreview_request_clear(struct tokenreview_request *req)
{
    free(req->token);
    for (size_t i = 0; i < req->naudiences; i++)
        free(req->audiences[i]);
    free(req->audiences);
    memset(req, 0, sizeof(*req));
}

static void tr_str_array(struct jsonw *w, char *const *items, size_t n)
{
    jsonw_raw(w, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            jsonw_raw(w, ",", 1);
        jsonw_str(w, items[i]);
    }
    jsonw_raw(w, "]", 1);
}

/* status.user as kube-apiserver reports a service account, with the
 * system:authenticated group its authenticator chain adds. */
static void tr_user(struct jsonw *w, const struct token_user *u)
{
    jsonw_lit(w, "\"user\":{\"username\":");
    jsonw_str(w, u->username);
    jsonw_lit(w, ",\"uid\":");
    jsonw_str(w, u->uid);
    jsonw_lit(w, ",\"groups\":[");
    jsonw_str(w, u->groups[0]);
    jsonw_raw(w, ",", 1);
    jsonw_str(w, u->groups[1]);
    jsonw_lit(w, ",\"system:authenticated\"]");
    if (u->nextra > 0) {
        jsonw_lit(w, ",\"extra\":{");
        for (size_t i = 0; i < u->nextra; i++) {
            jsonw_lit(w, i ? ",\"" : "\"");
            jsonw_lit(w, u->extra[i].key);
            jsonw_lit(w, "\":[");
            jsonw_str(w, u->extra[i].value);
            jsonw_raw(w, "]", 1);
        }
        jsonw_raw(w, "}", 1);
    }
    jsonw_raw(w, "}", 1);
}

char *tokenreview_render(const struct tokenreview_request *req, const struct token_user *user, const char *error,
                         size_t *len)
{
    struct jsonw w = {0};
    char *out;

    jsonw_lit(&w, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
                  "\"metadata\":{\"creationTimestamp\":null},\"spec\":{\"token\":");
    jsonw_str(&w, req->token);
    if (req->has_audiences) {
        jsonw_lit(&w, ",\"audiences\":");
        tr_str_array(&w, req->audiences, req->naudiences);
    }
    if (user != NULL) {
        jsonw_lit(&w, "},\"status\":{\"authenticated\":true,");
        tr_user(&w, user);
        jsonw_lit(&w, ",\"audiences\":");
        tr_str_array(&w, user->audiences, user->naudiences);
    } else {
        jsonw_lit(&w, "},\"status\":{\"authenticated\":false,\"user\":{},\"error\":");
        jsonw_str(&w, error);
    }
    jsonw_lit(&w, "}}");
    return jsonw_finish(&w, &out, len) == 0 ? out : NULL;
}

/* A Status object as kube-apiserver writes one (k8s.io/apimachinery
 * metav1.Status: kind, apiVersion, metadata, status, message, reason,
 * details, code), with details {"group":..., "kind":...} when
 * details_kind is not NULL. */
static char *tr_status(int code, const char *reason, const char *message, const char *details_kind, size_t *len)
{
    struct jsonw w = {0};
    char num[16], *out;

    snprintf(num, sizeof(num), "%d", code);
    jsonw_lit(&w, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":");
    jsonw_str(&w, message);
    jsonw_lit(&w, ",\"reason\":");
    jsonw_str(&w, reason);
    if (details_kind != NULL) {
        jsonw_lit(&w, ",\"details\":{\"group\":\"" TOKENREVIEW_GROUP "\",\"kind\":");
        jsonw_str(&w, details_kind);
        jsonw_lit(&w, "}");
    }
    jsonw_lit(&w, ",\"code\":");
    jsonw_lit(&w, num);
    jsonw_lit(&w, "}");
    return jsonw_finish(&w, &out, len) == 0 ? out : NULL;
}

char *tokenreview_render_status(int code, const char *reason, const char *message, size_t *len)
{
    return tr_status(code, reason, message, NULL, len);
}

/* Appends s as Go's %q verb writes a string of printable ASCII: in
 * double quotes, with '"' and '\\' escaped, and other bytes outside
 * printable ASCII as \xNN (Go keeps printable non-ASCII runes; a caller's
 * name has none: a certificate subject in RFC 4514 form escapes them). */
static void tr_go_quote(struct jsonw *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";

    jsonw_raw(w, "\"", 1);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
        if (c == '"' || c == '\\')
            jsonw_raw(w, esc, 1), jsonw_raw(w, s, 1);
        else if (c < 0x20 || c > 0x7e)
            jsonw_raw(w, esc, 4);
        else
            jsonw_raw(w, s, 1);
    }
    jsonw_raw(w, "\"", 1);
}

char *tokenreview_render_forbidden(const char *user, size_t *len)
{
    struct jsonw msg = {0};
    char *message, *out;
    size_t mlen;

    jsonw_lit(&msg, "tokenreviews." TOKENREVIEW_GROUP " is forbidden: User ");
    tr_go_quote(&msg, user);
    jsonw_lit(&msg,
              " cannot create resource \"tokenreviews\" in API group \"" TOKENREVIEW_GROUP "\" at the cluster scope");
    if (jsonw_finish(&msg, &message, &mlen) != 0)
        return NULL;
    out = tr_status(403, "Forbidden", message, "tokenreviews", len);
    free(message);
    return out;
}

char *tokenreview_render_unauthorized(size_t *len)
{
    return tr_status(401, "Unauthorized", "Unauthorized", NULL, len);
}
