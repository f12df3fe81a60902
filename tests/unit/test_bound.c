/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for jose/bound: which objects a token names, what an API
 * server's answer says about one, and the verdict with kube-apiserver's
 * words, in its order.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "jose/bound.h"

#define NOW 1800000000 /* 2027-01-15T08:00:00Z */

static struct token_user user;
static char *extra_values[4];

/* A valid token's user: system:serviceaccount:team-a:web, uid sa-1, and
 * the pod, node or secret given (NULL: none). */
static void make_user(const char *pod, const char *pod_uid, const char *node, const char *node_uid)
{
    memset(&user, 0, sizeof(user));
    user.username = "system:serviceaccount:team-a:web";
    user.uid = "sa-1";
    if (pod) {
        user.extra[user.nextra].key = "authentication.kubernetes.io/pod-name";
        user.extra[user.nextra++].value = (char *)pod;
        user.extra[user.nextra].key = "authentication.kubernetes.io/pod-uid";
        user.extra[user.nextra++].value = (char *)pod_uid;
    }
    if (node) {
        user.extra[user.nextra].key = "authentication.kubernetes.io/node-name";
        user.extra[user.nextra++].value = (char *)node;
        user.extra[user.nextra].key = "authentication.kubernetes.io/node-uid";
        user.extra[user.nextra++].value = (char *)node_uid;
    }
    (void)extra_values;
}

static void claims_ok(struct bound_claims *c, const char *token)
{
    char err[200] = "";
    int rc = bound_claims_of(&user, token, token ? strlen(token) : 0, c, err, sizeof(err));
    cr_assert_eq(rc, 0, "%s", err);
}

/* An answer of the API server for an object with uid (and body extra). */
static void found(enum bound_kind kind, const char *json, struct bound_object *o)
{
    bound_object_read(kind, 200, json, strlen(json), o);
    cr_assert_eq(o->state, BOUND_FOUND, "%s", o->error);
}

static void refused(const struct bound_claims *c, const struct bound_object *objs, enum bound_reason want,
                    const char *msg)
{
    enum bound_reason why;
    char got[300];

    cr_assert_eq(bound_judge(c, objs, NOW, &why, got, sizeof(got)), -1, "accepted, wanted: %s", msg);
    cr_assert_str_eq(bound_reason_name(why), bound_reason_name(want));
    cr_assert_str_eq(got, msg);
}

static void accepted(const struct bound_claims *c, const struct bound_object *objs)
{
    enum bound_reason why;
    char got[300];

    cr_assert_eq(bound_judge(c, objs, NOW, &why, got, sizeof(got)), 0, "refused: %s", got);
    cr_assert_eq(why, BOUND_OK);
}

Test(bound, a_pod_bound_token_names_its_service_account_then_its_pod_not_its_node)
{
    struct bound_claims c;
    struct bound_ref back;
    char path[600], key[BOUND_KEY_MAX];

    make_user("web-0", "pod-1", "n1", "node-1");
    claims_ok(&c, NULL);
    cr_assert_eq(c.n, 2);
    cr_assert_eq(c.refs[0].kind, BOUND_SERVICEACCOUNT);
    cr_assert_str_eq(c.refs[0].ns, "team-a");
    cr_assert_str_eq(c.refs[0].name, "web");
    cr_assert_str_eq(c.refs[0].uid, "sa-1");
    bound_path(&c.refs[0], path, sizeof(path));
    cr_assert_str_eq(path, "/api/v1/namespaces/team-a/serviceaccounts/web");
    cr_assert_eq(c.refs[1].kind, BOUND_POD, "kube does not look up a pod-bound token's node");
    bound_path(&c.refs[1], path, sizeof(path));
    cr_assert_str_eq(path, "/api/v1/namespaces/team-a/pods/web-0");
    bound_key(&c.refs[1], key, sizeof(key));
    cr_assert_str_eq(key, "1/team-a/web-0");
    bound_ref_of_key(key, &back);
    cr_assert(back.kind == BOUND_POD && strcmp(back.ns, "team-a") == 0 && strcmp(back.name, "web-0") == 0);

    make_user(NULL, NULL, "n1.example", "node-1");
    claims_ok(&c, NULL);
    cr_assert_eq(c.refs[1].kind, BOUND_NODE);
    bound_path(&c.refs[1], path, sizeof(path));
    cr_assert_str_eq(path, "/api/v1/nodes/n1.example");
    bound_key(&c.refs[1], key, sizeof(key));
    cr_assert_str_eq(key, "3//n1.example");
    bound_ref_of_key(key, &back);
    cr_assert(back.kind == BOUND_NODE && back.ns[0] == '\0' && strcmp(back.name, "n1.example") == 0);

    make_user(NULL, NULL, NULL, NULL);
    claims_ok(&c, NULL);
    cr_assert_eq(c.n, 1, "a token bound to nothing: its service account only");
}

Test(bound, names_no_object_can_have_are_refused_before_any_lookup)
{
    struct bound_claims c;
    char err[200];

    make_user("../../secrets/x", "pod-1", NULL, NULL);
    cr_assert_eq(bound_claims_of(&user, NULL, 0, &c, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "token is bound to an object whose name or uid no Kubernetes object can have");
    make_user("web-0", "uid with blank", NULL, NULL);
    cr_assert_eq(bound_claims_of(&user, NULL, 0, &c, err, sizeof(err)), -1);
    make_user("Web", "pod-1", NULL, NULL);
    cr_assert_eq(bound_claims_of(&user, NULL, 0, &c, err, sizeof(err)), -1, "upper case is no object name");
}

Test(bound, the_answers)
{
    struct bound_object o;
    const char pod[] = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-0\",\"uid\":\"pod-1\","
                       "\"deletionTimestamp\":\"2027-01-15T07:58:00Z\"},\"spec\":{}}";

    found(BOUND_POD, pod, &o);
    cr_assert_str_eq(o.uid, "pod-1");
    cr_assert_eq(o.deletion, NOW - 120);
    bound_object_read(BOUND_POD, 404, "{}", 2, &o);
    cr_assert_eq(o.state, BOUND_MISSING);
    bound_object_read(BOUND_POD, 403, "{}", 2, &o);
    cr_assert_eq(o.state, BOUND_FAILED);
    cr_assert_not(o.unreachable);
    cr_assert_str_eq(o.error,
                     "the API server refused the lookup (HTTP 403): the server's credentials may not get pods");
    bound_object_read(BOUND_POD, 503, "", 0, &o);
    cr_assert(o.state == BOUND_FAILED && o.unreachable);
    bound_object_read(BOUND_POD, 200, "<html>", 6, &o);
    cr_assert_eq(o.state, BOUND_FAILED);
    bound_object_read(BOUND_POD, 200, "{\"metadata\":{}}", 15, &o);
    cr_assert_str_eq(o.error, "its answer has no usable metadata.uid");
    bound_object_read(BOUND_POD, 200, "{\"metadata\":{\"uid\":\"a\",\"deletionTimestamp\":\"soon\"}}", 51, &o);
    cr_assert_str_eq(o.error, "its answer's metadata.deletionTimestamp is not a time");
}

Test(bound, a_pod_bound_token_with_kubes_words)
{
    struct bound_claims c;
    struct bound_object o[2];

    make_user("web-0", "pod-1", NULL, NULL);
    claims_ok(&c, NULL);
    found(BOUND_SERVICEACCOUNT, "{\"metadata\":{\"uid\":\"sa-1\"}}", &o[0]);
    found(BOUND_POD, "{\"metadata\":{\"uid\":\"pod-1\"}}", &o[1]);
    accepted(&c, o);

    bound_object_read(BOUND_POD, 404, "", 0, &o[1]);
    refused(&c, o, BOUND_POD_DELETED,
            "service account token has been invalidated: pod team-a/web-0 (uid pod-1) no longer exists");
    found(BOUND_POD, "{\"metadata\":{\"uid\":\"pod-2\"}}", &o[1]);
    refused(&c, o, BOUND_UID_MISMATCH, "pod UID (pod-2) does not match service account pod ref claim (pod-1)");
    /* graceful deletion: the timestamp is when the grace ends; kube allows
     * its minute of leeway after it */
    found(BOUND_POD, "{\"metadata\":{\"uid\":\"pod-1\",\"deletionTimestamp\":\"2027-01-15T07:59:30Z\"}}", &o[1]);
    accepted(&c, o);
    found(BOUND_POD, "{\"metadata\":{\"uid\":\"pod-1\",\"deletionTimestamp\":\"2027-01-15T07:58:59Z\"}}", &o[1]);
    refused(&c, o, BOUND_POD_DELETED,
            "service account token has been invalidated: pod team-a/web-0 (uid pod-1) is being deleted");

    /* the service account comes first */
    bound_object_read(BOUND_SERVICEACCOUNT, 404, "", 0, &o[0]);
    refused(&c, o, BOUND_SERVICEACCOUNT_DELETED, "serviceaccounts \"web\" not found");
    found(BOUND_SERVICEACCOUNT, "{\"metadata\":{\"uid\":\"sa-2\"}}", &o[0]);
    refused(&c, o, BOUND_UID_MISMATCH, "service account UID (sa-2) does not match claim (sa-1)");
    found(BOUND_SERVICEACCOUNT, "{\"metadata\":{\"uid\":\"sa-1\",\"deletionTimestamp\":\"2027-01-01T00:00:00Z\"}}",
          &o[0]);
    refused(&c, o, BOUND_SERVICEACCOUNT_DELETED, "service account team-a/web has been deleted");

    /* no answer: refused, whatever the rest says */
    found(BOUND_SERVICEACCOUNT, "{\"metadata\":{\"uid\":\"sa-1\"}}", &o[0]);
    bound_object_read(BOUND_POD, 502, "", 0, &o[1]);
    refused(&c, o, BOUND_API_UNREACHABLE,
            "cannot confirm that pod team-a/web-0 still exists: the API server answered HTTP 502; refused until the "
            "API server answers");
}

Test(bound, a_node_bound_token)
{
    struct bound_claims c;
    struct bound_object o[2];

    make_user(NULL, NULL, "n1", "node-1");
    claims_ok(&c, NULL);
    found(BOUND_SERVICEACCOUNT, "{\"metadata\":{\"uid\":\"sa-1\"}}", &o[0]);
    found(BOUND_NODE, "{\"metadata\":{\"uid\":\"node-1\"}}", &o[1]);
    accepted(&c, o);
    bound_object_read(BOUND_NODE, 404, "", 0, &o[1]);
    refused(&c, o, BOUND_NODE_DELETED,
            "service account token has been invalidated: node n1 (uid node-1) no longer exists");
    found(BOUND_NODE, "{\"metadata\":{\"uid\":\"node-9\"}}", &o[1]);
    refused(&c, o, BOUND_UID_MISMATCH, "node UID (node-9) does not match service account node ref claim (node-1)");
}

Test(bound, a_legacy_token_and_its_secret)
{
    struct bound_claims c;
    struct bound_object o[2];
    /* base64 of "a.b.c" is "YS5iLmM=" */
    const char secret[] = "{\"metadata\":{\"uid\":\"s-1\"},\"data\":{\"token\":\"YS5iLmM=\"}}";

    make_user(NULL, NULL, NULL, NULL);
    user.legacy = 1;
    user.secret_name = "web-token-x1";
    claims_ok(&c, "a.b.c");
    cr_assert_eq(c.n, 2);
    cr_assert_eq(c.refs[0].kind, BOUND_SECRET, "kube looks at a legacy token's secret first");
    cr_assert_eq(c.refs[1].kind, BOUND_SERVICEACCOUNT);
    found(BOUND_SECRET, secret, &o[0]);
    found(BOUND_SERVICEACCOUNT, "{\"metadata\":{\"uid\":\"sa-1\"}}", &o[1]);
    accepted(&c, o);

    claims_ok(&c, "a.b.d");
    refused(&c, o, BOUND_TOKEN_MISMATCH, "token does not match server's copy");
    claims_ok(&c, "a.b.c");
    bound_object_read(BOUND_SECRET, 404, "", 0, &o[0]);
    refused(&c, o, BOUND_SECRET_DELETED, "token has been invalidated: secret team-a/web-token-x1 no longer exists");
    found(BOUND_SECRET,
          "{\"metadata\":{\"uid\":\"s-1\",\"deletionTimestamp\":\"2027-01-15T08:00:30Z\"},\"data\":{\"token\":"
          "\"YS5iLmM=\"}}",
          &o[0]);
    refused(&c, o, BOUND_SECRET_DELETED, "token has been invalidated: secret team-a/web-token-x1 is being deleted");
    found(BOUND_SECRET,
          "{\"metadata\":{\"uid\":\"s-1\",\"labels\":{\"kubernetes.io/legacy-token-invalid-since\":\"2027-01-01\"}},"
          "\"data\":{\"token\":\"YS5iLmM=\"}}",
          &o[0]);
    refused(&c, o, BOUND_SECRET_DELETED,
            "the token in secret team-a/web-token-x1 has been marked invalid (label "
            "kubernetes.io/legacy-token-invalid-since)");
    /* a legacy token's service account: any deletion counts */
    found(BOUND_SECRET, secret, &o[0]);
    found(BOUND_SERVICEACCOUNT, "{\"metadata\":{\"uid\":\"sa-1\",\"deletionTimestamp\":\"2027-01-15T08:00:30Z\"}}",
          &o[1]);
    refused(&c, o, BOUND_SERVICEACCOUNT_DELETED, "service account team-a/web has been deleted");
}
