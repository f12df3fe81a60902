# SPDX-License-Identifier: Apache-2.0
"""The e2e harness's TokenReview client: the caller every review server
of the harness allows, servers started with the TokenReview API, and
requests to it."""

import http.client
import json

from harness_env import SOCK_TIMEOUT, TOKENREVIEW_PATH
from harness_http import do_request
from harness_proc import Server
from harness_keys import mint_token

__all__ = ["REVIEW_CALLER_NS", "REVIEW_CALLER_SA", "REVIEW_CALLER", "REVIEW_CALLER_AUDIENCE", "review_caller_args",
           "review_caller_token", "start_review_server", "DEFAULT_BEARER", "review_post", "review_body", "review"]


# The caller every review server of the harness allows (a bearer
# service-account token), and the audience its token carries: kept apart
# from the audiences the tests review tokens for.
REVIEW_CALLER_NS, REVIEW_CALLER_SA = "e2e", "reviewer"
REVIEW_CALLER = "system:serviceaccount:%s:%s" % (REVIEW_CALLER_NS, REVIEW_CALLER_SA)
REVIEW_CALLER_AUDIENCE = "e2e-review-caller"


def review_caller_args(tls=False):
    """The flags that let REVIEW_CALLER call a review listener: plain HTTP
    (--token-review-insecure-http) unless tls (the caller passes the TLS
    flags then), and REVIEW_CALLER_AUDIENCE as the caller audience."""
    return ([] if tls else ["--token-review-insecure-http"]) + [
        "--token-review-allowed-callers", REVIEW_CALLER, "--token-review-caller-audiences", REVIEW_CALLER_AUDIENCE]


def review_caller_token(signing_key, issuer, namespace=REVIEW_CALLER_NS, sa=REVIEW_CALLER_SA,
                        audiences=(REVIEW_CALLER_AUDIENCE,), duration=None):
    """A bearer token for a review listener: REVIEW_CALLER's by default,
    signed by signing_key (a private key the server publishes) for issuer."""
    return mint_token(signing_key, issuer, audiences=audiences, namespace=namespace, sa=sa,
                      sa_uid="e2e-caller-uid-0001", duration=duration)


def start_review_server(testcase, args, caller_key, public_port=None, tls=False):
    """Starts `serve` with the TokenReview API on a second loopback port
    (the kernel's choice), over plain HTTP, with review_caller_args() (or,
    with tls, only the caller flags: args carry the TLS ones). caller_key
    is a private key whose public key the server publishes: REVIEW_CALLER's
    bearer token, signed with it for the first --service-account-issuer of
    args, is server.review_bearer, which review_post and review send by
    default when given the server. Returns the Server; its review port is
    server.review_port."""
    kw = {"port": public_port} if public_port else {}
    srv = testcase.start_server(list(args) + ["--enable-token-review", "--token-review-listen", "127.0.0.1:0"]
                                + review_caller_args(tls), **kw)
    srv.review_port = srv.port_of("--token-review-listen")
    issuer = args[list(args).index("--service-account-issuer") + 1]
    srv.review_bearer = review_caller_token(caller_key, issuer)
    return srv


DEFAULT_BEARER = object()


def review_post(target, body, content_type="application/json", method="POST", path=TOKENREVIEW_PATH,
                host="127.0.0.1", bearer=DEFAULT_BEARER, headers=None):
    """One request to a TokenReview listener: (status, headers, body bytes).
    target: a Server of start_review_server (its review port, and by
    default its review_bearer as "Authorization: Bearer"), or a port (no
    Authorization by default). bearer: a token, or None for no
    Authorization header. body: dict (serialized as JSON), str or bytes."""
    if isinstance(target, Server):
        port = target.review_port
        bearer = target.review_bearer if bearer is DEFAULT_BEARER else bearer
    else:
        port = target
        bearer = None if bearer is DEFAULT_BEARER else bearer
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    elif isinstance(body, str):
        body = body.encode()
    headers = dict(headers or {})
    if content_type is not None:
        headers["Content-Type"] = content_type
    if bearer is not None:
        headers["Authorization"] = "Bearer " + bearer
    c = http.client.HTTPConnection(host, port, timeout=SOCK_TIMEOUT)
    try:
        return do_request(c, method, path, headers, body)
    finally:
        c.close()


def review_body(token, audiences=None):
    spec = {"token": token}
    if audiences is not None:
        spec["audiences"] = list(audiences)
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}


def review(target, token, audiences=None, bearer=DEFAULT_BEARER):
    """POSTs a TokenReview (to target, as review_post); returns (http
    status, parsed JSON answer)."""
    st, h, b = review_post(target, review_body(token, audiences), bearer=bearer)
    try:
        doc = json.loads(b)
    except ValueError:
        raise AssertionError("TokenReview answer %d is not JSON: %r" % (st, b[:300]))
    return st, doc
