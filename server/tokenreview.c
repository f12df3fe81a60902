#include "tokenreview.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "keys/jsonw.h"

/* What a JSON value is to the review, from the member names leading to it. */
enum tr_place { TR_OTHER, TR_TOP, TR_KIND, TR_APIVERSION, TR_SPEC, TR_TOKEN, TR_AUDIENCES, TR_AUDIENCE };

struct tokenreview_parser {
    struct tokenreview_request *req;
    int depth;
    enum tr_place next;                             /* place of the next value in the current map */
    enum tr_place stack[TOKENREVIEW_MAX_DEPTH + 1]; /* place of each open container */
    unsigned char is_array[TOKENREVIEW_MAX_DEPTH + 1];
    unsigned seen_top, seen_spec; /* members met, to refuse duplicates */
    const char *error;
};

static int tr_fail(struct tokenreview_parser *p, const char *why)
{
    p->error = why;
    return 0;
}

/* The place of the value the parser is about to report. */
static enum tr_place tr_value_place(const struct tokenreview_parser *p)
{
    if (p->depth == 0)
        return TR_TOP;
    if (p->is_array[p->depth])
        return p->stack[p->depth] == TR_AUDIENCES ? TR_AUDIENCE : TR_OTHER;
    return p->next;
}

static int tr_push(struct tokenreview_parser *p, enum tr_place place, int is_array)
{
    if (p->depth == TOKENREVIEW_MAX_DEPTH)
        return tr_fail(p, "request JSON is nested too deeply");
    p->depth++;
    p->stack[p->depth] = place;
    p->is_array[p->depth] = (unsigned char)is_array;
    return 1;
}

static int tr_pop(void *ctx)
{
    struct tokenreview_parser *p = ctx;
    p->depth--;
    return 1;
}

static int tr_start_map(void *ctx)
{
    struct tokenreview_parser *p = ctx;
    enum tr_place v = tr_value_place(p);

    if (v != TR_TOP && v != TR_SPEC && v != TR_OTHER)
        return tr_fail(p, "a TokenReview member has the wrong type");
    return tr_push(p, v, 0);
}

static int tr_start_array(void *ctx)
{
    struct tokenreview_parser *p = ctx;
    enum tr_place v = tr_value_place(p);

    if (v == TR_TOP)
        return tr_fail(p, "request must be a JSON object");
    if (v != TR_AUDIENCES && v != TR_OTHER)
        return tr_fail(p, "a TokenReview member has the wrong type");
    p->req->has_audiences |= v == TR_AUDIENCES;
    return tr_push(p, v, 1);
}

/* Member names: remember where the value goes and refuse duplicates of the
 * members that decide the review, so no two parsers can read one request
 * differently. */
static int tr_map_key(void *ctx, const unsigned char *key, size_t len)
{
    static const struct {
        enum tr_place container;
        const char *name;
        enum tr_place place;
        unsigned bit;
    } members[] = {
        {TR_TOP, "kind", TR_KIND, 1},    {TR_TOP, "apiVersion", TR_APIVERSION, 2}, {TR_TOP, "spec", TR_SPEC, 4},
        {TR_SPEC, "token", TR_TOKEN, 1}, {TR_SPEC, "audiences", TR_AUDIENCES, 2},
    };
    struct tokenreview_parser *p = ctx;
    enum tr_place container = p->stack[p->depth];

    p->next = TR_OTHER;
    for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
        if (members[i].container != container || strlen(members[i].name) != len ||
            memcmp(members[i].name, key, len) != 0)
            continue;
        unsigned *seen = container == TR_TOP ? &p->seen_top : &p->seen_spec;
        if (*seen & members[i].bit)
            return tr_fail(p, "duplicate member in the request");
        *seen |= members[i].bit;
        p->next = members[i].place;
    }
    return 1;
}

/* A copy of a JSON string; NULL for one holding NUL, which no token has. */
static char *tr_strdup(const unsigned char *s, size_t len)
{
    char *out = memchr(s, '\0', len) ? NULL : malloc(len + 1);

    if (out != NULL) {
        memcpy(out, s, len);
        out[len] = '\0';
    }
    return out;
}

static int tr_add_audience(struct tokenreview_request *req, const unsigned char *s, size_t len)
{
    char **auds = realloc(req->audiences, (req->naudiences + 1) * sizeof(*auds));

    if (auds == NULL)
        return 0;
    req->audiences = auds;
    if ((req->audiences[req->naudiences] = tr_strdup(s, len)) == NULL)
        return 0;
    req->naudiences++;
    return 1;
}

static int tr_is(const unsigned char *s, size_t len, const char *want)
{
    return strlen(want) == len && memcmp(s, want, len) == 0;
}

static int tr_string(void *ctx, const unsigned char *s, size_t len)
{
    struct tokenreview_parser *p = ctx;

    switch (tr_value_place(p)) {
    case TR_OTHER:
        return 1;
    case TR_KIND:
        return tr_is(s, len, "TokenReview") ? 1 : tr_fail(p, "kind must be TokenReview");
    case TR_APIVERSION:
        return tr_is(s, len, "authentication.k8s.io/v1") || tr_is(s, len, "authentication.k8s.io/v1beta1")
                   ? 1
                   : tr_fail(p, "apiVersion must be authentication.k8s.io/v1");
    case TR_TOKEN:
        return (p->req->token = tr_strdup(s, len)) != NULL ? 1 : tr_fail(p, "spec.token must be a string");
    case TR_AUDIENCE:
        return tr_add_audience(p->req, s, len) ? 1 : tr_fail(p, "spec.audiences must hold strings");
    case TR_TOP:
        return tr_fail(p, "request must be a JSON object");
    default:
        return tr_fail(p, "a TokenReview member has the wrong type");
    }
}

/* Numbers and booleans only belong where the review does not look. */
static int tr_scalar(struct tokenreview_parser *p)
{
    enum tr_place v = tr_value_place(p);

    if (v == TR_OTHER)
        return 1;
    return tr_fail(p, v == TR_TOP ? "request must be a JSON object" : "a TokenReview member has the wrong type");
}

static int tr_null(void *ctx)
{
    struct tokenreview_parser *p = ctx;

    /* Kubernetes clients send "audiences": null for none. */
    return tr_value_place(p) == TR_AUDIENCES ? 1 : tr_scalar(p);
}

static int tr_bool(void *ctx, int v)
{
    (void)v;
    return tr_scalar(ctx);
}

static int tr_number(void *ctx, const char *s, size_t len)
{
    (void)s, (void)len;
    return tr_scalar(ctx);
}

static const yajl_callbacks tr_callbacks = {
    tr_null, tr_bool, NULL, NULL, tr_number, tr_string, tr_start_map, tr_map_key, tr_pop, tr_start_array, tr_pop,
};

int tokenreview_parse(const char *body, size_t len, struct tokenreview_request *out, char *err, size_t errlen)
{
    struct tokenreview_parser p = {.req = out};
    yajl_handle h = yajl_alloc(&tr_callbacks, NULL, &p);
    int ok;

    memset(out, 0, sizeof(*out));
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ok = yajl_parse(h, (const unsigned char *)body, len) == yajl_status_ok && yajl_complete_parse(h) == yajl_status_ok;
    yajl_free(h);
    if (ok && (out->token == NULL || out->token[0] == '\0'))
        p.error = "spec.token: Required value";
    if (!ok || p.error != NULL) {
        snprintf(err, errlen, "%s", p.error ? p.error : "request body is not valid JSON");
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

char *tokenreview_render_status(int code, const char *reason, const char *message, size_t *len)
{
    struct jsonw w = {0};
    char num[16], *out;

    snprintf(num, sizeof(num), "%d", code);
    jsonw_lit(&w, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":");
    jsonw_str(&w, message);
    jsonw_lit(&w, ",\"reason\":");
    jsonw_str(&w, reason);
    jsonw_lit(&w, ",\"code\":");
    jsonw_lit(&w, num);
    jsonw_lit(&w, "}");
    return jsonw_finish(&w, &out, len) == 0 ? out : NULL;
}
