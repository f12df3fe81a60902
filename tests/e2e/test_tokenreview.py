# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of the TokenReview API (`serve --enable-token-review`).

Every HTTP outcome of POST /apis/authentication.k8s.io/v1/tokenreviews on the
review listener: 201 with a full user (checked member by member), 201 with
authenticated:false for each kind of bad token, 400 Kubernetes Status objects
for bad requests, 405, 413, 415, and 404 on the public listener. Then key
rotation under a running server, and the callers: 401 for each kind of
missing or bad bearer token and 403 for one not allowed (kube-apiserver's
exact Status bodies), before anything else is looked at; the access log
naming the caller, the metrics by outcome, the cache the callers' tokens go
through, and the refusal to start without TLS or allowed callers.

These servers speak plain HTTP (--token-review-insecure-http) and allow
the harness's caller (H.REVIEW_CALLER); TLS, client certificates and a
Vault-shaped client are test_tokenreview_tls.py's.

Bad tokens are crafted independently of the server: with PyJWT (Debian's
python3-jwt) and the test's own HMAC/base64url code. The same tokens are
also given to `oidc-discovery verify`, whose reason name and message must
agree with the review's error.
"""

import hashlib
import hmac
import json
import os
import socket
import time
import unittest

import oidc_harness as H

H.ensure_pyjwt()
try:
    import jwt  # PyJWT
except ImportError:  # reported by each test (H.pyjwt_problem)
    jwt = None

ISSUER = "https://kubernetes.default.svc.cluster.local"
SA_UID = "a087d5a0-5f1e-4b4e-8a36-3c8a3b0e5c11"
POD = ("coredns-69cbfb9798-jv9gn", "778a530c-1c6a-4f0e-9a59-0d2f4b0d7e21")
NODE = ("node-1.example", "58456cb0-9c2e-4a1b-b5a5-71d0b5e4f0a3")
EXTRA = "authentication.kubernetes.io/"


class ReviewBase(H.FixtureKeysTestCase):

    def start(self, extra=(), keys=None):
        keys = keys or (self.rsa, self.ec)
        args = ["--service-account-issuer", ISSUER]
        for k in keys:
            args += ["--service-account-key-file", k.pub]
        return H.start_review_server(self, args + list(extra), keys[0].priv)

    def pyjwt_token(self, key, payload, alg=None, headers=None):
        hdr = {"kid": key.kid}
        hdr.update(headers or {})
        return jwt.encode(payload, H.read_bytes(key.priv), algorithm=alg or key.alg, headers=hdr)

    def cli_verify(self, token, audiences="vault", keys=None):
        args = ["verify", "--token-file", "-", "--service-account-issuer", ISSUER]
        for k in keys or (self.rsa, self.ec):
            args += ["--service-account-key-file", k.pub]
        if audiences:
            args += ["--api-audiences", audiences]
        return H.run_bin(args, input=token + "\n")

    def assert_json_response(self, st, h, b, code):
        self.assertEqual(st, code, b)
        self.assertEqual(H.one(h, "content-type"), "application/json")
        self.assertEqual(int(H.one(h, "content-length")), len(b))
        return json.loads(b)

    def assert_status_object(self, st, h, b, code, reason, message_part=None):
        doc = self.assert_json_response(st, h, b, code)
        self.assertEqual(set(doc), {"kind", "apiVersion", "metadata", "status", "message", "reason", "code"}, doc)
        self.assertEqual(doc["kind"], "Status")
        self.assertEqual(doc["apiVersion"], "v1")
        self.assertEqual(doc["metadata"], {})
        self.assertEqual(doc["status"], "Failure")
        self.assertEqual(doc["reason"], reason)
        self.assertEqual(doc["code"], code)
        self.assertIsInstance(doc["message"], str)
        self.assertTrue(doc["message"])
        if message_part is not None:
            self.assertIn(message_part, doc["message"])
        return doc

    def assert_refused(self, srv, token, audiences, error_part):
        """POSTs token; expects 201 authenticated:false with exactly the
        members kube-apiserver sends; returns the error text."""
        st, h, b = H.review_post(srv, H.review_body(token, audiences))
        doc = self.assert_json_response(st, h, b, 201)
        self.assertEqual(doc["apiVersion"], "authentication.k8s.io/v1")
        self.assertEqual(doc["kind"], "TokenReview")
        self.assertEqual(doc["spec"], H.review_body(token, audiences)["spec"])
        status = doc["status"]
        self.assertEqual(set(status), {"authenticated", "user", "error"}, status)
        self.assertIs(status["authenticated"], False)
        self.assertEqual(status["user"], {})
        self.assertIsInstance(status["error"], str)
        self.assertIn(error_part, status["error"])
        return status["error"]


class Valid(ReviewBase):

    def test_valid_review_every_member(self):
        srv = self.start(["--api-audiences", "vault"])
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault", "other"], namespace="kube-system",
                             sa="coredns", sa_uid=SA_UID, pod=POD, node=NODE)
        _, claims, _ = H.jwt_parts(token)
        st, h, b = H.review_post(srv, H.review_body(token, ["vault"]))
        doc = self.assert_json_response(st, h, b, 201)
        self.assertEqual(list(doc), ["apiVersion", "kind", "metadata", "spec", "status"])
        self.assertEqual(doc["apiVersion"], "authentication.k8s.io/v1")
        self.assertEqual(doc["kind"], "TokenReview")
        self.assertEqual(doc["metadata"], {"creationTimestamp": None})
        self.assertEqual(doc["spec"], {"token": token, "audiences": ["vault"]})
        status = doc["status"]
        self.assertEqual(list(status), ["authenticated", "user", "audiences"])
        self.assertIs(status["authenticated"], True)
        self.assertEqual(status["audiences"], ["vault"])
        user = status["user"]
        self.assertEqual(list(user), ["username", "uid", "groups", "extra"])
        self.assertEqual(user["username"], "system:serviceaccount:kube-system:coredns")
        self.assertEqual(user["uid"], SA_UID)
        self.assertEqual(user["groups"], ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                                          "system:authenticated"])
        self.assertEqual(user["extra"], {
            EXTRA + "pod-name": [POD[0]],
            EXTRA + "pod-uid": [POD[1]],
            EXTRA + "node-name": [NODE[0]],
            EXTRA + "node-uid": [NODE[1]],
            EXTRA + "credential-id": ["JTI=" + claims["jti"]],
        })
        # the same token again (a cache hit on the server) answers the same
        st2, h2, b2 = H.review_post(srv, H.review_body(token, ["vault"]))
        self.assertEqual((st2, b2), (st, b))
        self.stop_ok(srv)

    def test_node_bound_ec_token_and_api_audiences_default(self):
        srv = self.start(["--api-audiences", "vault,other"])
        token = H.mint_token(self.ec.priv, ISSUER, audiences=["other"], namespace="ns1", sa="builder",
                             sa_uid=SA_UID, node=NODE)
        header, claims, _ = H.jwt_parts(token)
        self.assertEqual(header, {"alg": "ES256", "kid": self.ec.kid})
        # no spec.audiences: --api-audiences apply, and the echo has none
        st, h, b = H.review_post(srv, H.review_body(token))
        doc = self.assert_json_response(st, h, b, 201)
        self.assertEqual(doc["spec"], {"token": token})
        self.assertIs(doc["status"]["authenticated"], True)
        self.assertEqual(doc["status"]["audiences"], ["other"])
        self.assertEqual(doc["status"]["user"]["username"], "system:serviceaccount:ns1:builder")
        self.assertEqual(doc["status"]["user"]["groups"],
                         ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"])
        self.assertEqual(doc["status"]["user"]["extra"], {
            EXTRA + "node-name": [NODE[0]],
            EXTRA + "node-uid": [NODE[1]],
            EXTRA + "credential-id": ["JTI=" + claims["jti"]],
        })
        # "audiences": null is "none given" too (Kubernetes clients send it)
        body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                           "spec": {"token": token, "audiences": None}})
        st, h, b = H.review_post(srv, body)
        self.assertIs(self.assert_json_response(st, h, b, 201)["status"]["authenticated"], True, b)
        # the request's audiences win over --api-audiences
        self.assert_refused(srv, token, ["vault"], 'is invalid for the target audiences ["vault"]')

    def test_audiences_default_to_the_issuer(self):
        srv = self.start()
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=[ISSUER], sa_uid=SA_UID)
        st, doc = H.review(srv, token)
        self.assertEqual(st, 201)
        self.assertIs(doc["status"]["authenticated"], True, doc)
        self.assertEqual(doc["status"]["audiences"], [ISSUER])
        self.assertEqual(doc["status"]["user"]["username"], "system:serviceaccount:default:default")
        vault_token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID)
        self.assert_refused(srv, vault_token, None, "token audiences")

    def test_empty_audiences_and_several_issuers(self):
        second = "https://second-issuer.example"
        srv = H.start_review_server(self, ["--service-account-issuer", ISSUER, "--service-account-issuer", second,
                                           "--service-account-key-file", self.rsa.pub], self.rsa.priv)
        # iss: the second issuer; aud: the first (the default audiences are the issuers)
        token = H.mint_token(self.rsa.priv, second, audiences=[ISSUER], sa_uid=SA_UID)
        for audiences in (None, []):
            with self.subTest(audiences=audiences):
                st, doc = H.review(srv, token, audiences)
                self.assertEqual(st, 201)
                self.assertIs(doc["status"]["authenticated"], True, doc)
                self.assertEqual(doc["status"]["audiences"], [ISSUER])
                self.assertEqual(doc["spec"], H.review_body(token, audiences)["spec"])
        third = H.mint_token(self.rsa.priv, "https://third.example", audiences=[ISSUER], sa_uid=SA_UID)
        self.assert_refused(srv, third, [], "")

    def test_charset_parameter_and_pyjwt_token_within_leeway(self):
        srv = self.start(["--api-audiences", "vault"])
        now = int(time.time())
        # expired 10 s ago: still inside the 60 s leeway
        payload = H.kube_claims(ISSUER, ["vault"], "ns2", "app", SA_UID, pod=POD, now=now - 600, lifetime=590)
        token = self.pyjwt_token(self.rsa, payload)
        st, h, b = H.review_post(srv, H.review_body(token, ["vault"]),
                                 content_type="application/json; charset=utf-8")
        doc = self.assert_json_response(st, h, b, 201)
        self.assertIs(doc["status"]["authenticated"], True, doc)
        self.assertEqual(doc["status"]["user"]["extra"][EXTRA + "credential-id"], ["JTI=" + payload["jti"]])


class Invalid(ReviewBase):

    def bad_tokens(self):
        """(name, token, reason name, error text part), all for audience vault."""
        now = int(time.time())
        good = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], namespace="team-a", sa="app",
                            sa_uid=SA_UID, pod=POD)
        header_b64, payload_b64, sig_b64 = good.split(".")
        _, claims, _ = H.jwt_parts(good)
        foreign = self.keys.rsa(2048)
        pub_pem = H.read_bytes(self.rsa.pub)

        # signed with a key the server does not know (its own kid)
        unknown = self.pyjwt_token(foreign, H.kube_claims(ISSUER, ["vault"], now=now))
        # expired an hour ago, crafted with the fixture key
        expired = self.pyjwt_token(self.rsa, H.kube_claims(ISSUER, ["vault"], now=now - 7200, lifetime=3600))
        # 2 minutes past exp: beyond the 60 s leeway
        just_expired = self.pyjwt_token(self.ec, H.kube_claims(ISSUER, ["vault"], now=now - 720, lifetime=600))
        future = self.pyjwt_token(self.rsa, dict(H.kube_claims(ISSUER, ["vault"], now=now), nbf=now + 600))
        wrong_aud = self.pyjwt_token(self.rsa, H.kube_claims(ISSUER, ["other"], now=now))
        wrong_iss = self.pyjwt_token(self.rsa, H.kube_claims("https://evil.example", ["vault"], now=now))
        alg_none = H.jws_compact({"alg": "none", "kid": self.rsa.kid}, claims)
        # HMAC confusion: HS256 keyed with the published public key's PEM
        hs256 = H.jws_compact({"alg": "HS256", "kid": self.rsa.kid}, claims,
                              lambda si: hmac.new(pub_pem, si, hashlib.sha256).digest())
        # another namespace in the payload, the original signature kept
        forged = dict(claims, sub="system:serviceaccount:kube-system:app")
        forged["kubernetes.io"] = dict(claims["kubernetes.io"], namespace="kube-system")
        tampered = header_b64 + "." + H.b64url(json.dumps(forged, separators=(",", ":")).encode()) + "." + sig_b64
        # RS256 header on the EC key's kid
        mismatch = self.pyjwt_token(self.rsa, H.kube_claims(ISSUER, ["vault"], now=now),
                                    headers={"kid": self.ec.kid})
        return [
            ("expired", expired, "expired", "service account token has expired"),
            ("expired beyond leeway", just_expired, "expired", "service account token has expired"),
            ("not yet valid", future, "not_yet_valid", "service account token is not valid yet"),
            ("wrong audience", wrong_aud, "audience",
             'token audiences ["other"] is invalid for the target audiences ["vault"]'),
            ("wrong issuer", wrong_iss, "issuer", ""),
            ("unknown key", unknown, "unknown_kid", ""),
            ("alg none", alg_none, "alg_none", "none"),
            ("HS256 with the public key", hs256, "alg_hmac", "HS256"),
            ("tampered payload", tampered, "signature", ""),
            ("alg/key mismatch", mismatch, "alg_mismatch", ""),
            ("padded base64url", header_b64 + "=." + payload_b64 + "." + sig_b64, "base64", ""),
            ("two segments", header_b64 + "." + payload_b64, "segments", ""),
        ]

    def test_invalid_tokens_answer_201_unauthenticated(self):
        srv = self.start(["--api-audiences", "vault"])
        for name, token, reason, part in self.bad_tokens():
            with self.subTest(case=name):
                error = self.assert_refused(srv, token, ["vault"], part)
                # the CLI refuses it for the same reason, with the same words
                rc, out, err = self.cli_verify(token)
                self.assertEqual(rc, 1, "verify: %s / %s" % (out, err))
                self.assertIn("oidc-discovery verify: invalid token (%s): " % reason, err)
                self.assertEqual(err.strip().split("): ", 1)[1], error)
                self.assertIs(json.loads(out)["status"]["authenticated"], False)
        self.stop_ok(srv)

    def test_cached_success_is_per_audience(self):
        srv = self.start()
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID)
        st, doc = H.review(srv, token, ["vault"])
        self.assertIs(doc["status"]["authenticated"], True, doc)
        # a success cached for "vault" must not answer for "other"
        self.assert_refused(srv, token, ["other"], "token audiences")
        st, doc = H.review(srv, token, ["vault"])
        self.assertIs(doc["status"]["authenticated"], True, doc)

    def test_oversized_token_is_refused_not_an_error(self):
        srv = self.start(["--api-audiences", "vault"])
        claims = H.kube_claims(ISSUER, ["vault"])
        claims["padding"] = "x" * 17000
        token = self.pyjwt_token(self.rsa, claims)
        self.assertGreater(len(token), 16384)
        self.assert_refused(srv, token, ["vault"], "")


class Legacy(ReviewBase):
    """Legacy (Secret-based) tokens, with --accept-legacy-tokens, under
    kube-apiserver's rule: a token without aud carries the API audiences,
    and the audiences a review asks for must intersect them."""

    def legacy(self, key=None, **extra):
        claims = {"iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "ns",
                  "kubernetes.io/serviceaccount/secret.name": "sa-token-abcde",
                  "kubernetes.io/serviceaccount/service-account.name": "sa",
                  "kubernetes.io/serviceaccount/service-account.uid": SA_UID, "sub": "system:serviceaccount:ns:sa"}
        claims.update(extra)
        return self.pyjwt_token(key or self.rsa, claims)

    def test_legacy_token_is_good_for_the_api_audiences_only(self):
        srv = self.start(["--api-audiences", "vault", "--accept-legacy-tokens"])
        token = self.legacy()
        # it was authenticated for any audience a review asked for
        self.assert_refused(srv, token, ["sts.amazonaws.com"],
                            'token audiences ["vault"] is invalid for the target audiences ["sts.amazonaws.com"]')
        for audiences in (None, ["vault"], ["x", "vault"]):
            with self.subTest(audiences=audiences):
                st, doc = H.review(srv, token, audiences)
                self.assertIs(doc["status"]["authenticated"], True, doc)
                self.assertEqual(doc["status"]["audiences"], ["vault"])
                self.assertEqual(doc["status"]["user"]["username"], "system:serviceaccount:ns:sa")
        # one that carries aud is held to it, here and in the CLI
        other = self.legacy(aud=["some-other-audience"])
        self.assert_refused(srv, other, None,
                            'token audiences ["some-other-audience"] is invalid for the target audiences ["vault"]')
        rc, out, err = H.run_bin(["verify", "--token-file", "-", "--service-account-issuer", ISSUER,
                                  "--service-account-key-file", self.rsa.pub, "--api-audiences", "vault",
                                  "--accept-legacy-tokens"], input=other + "\n")
        self.assertEqual(rc, 1, "verify --accept-legacy-tokens accepted it: %s / %s" % (out, err))
        self.assertIn("oidc-discovery verify: invalid token (audience): ", err)
        both = self.legacy(aud=["some-other-audience", "vault"])
        st, doc = H.review(srv, both)
        self.assertEqual(doc["status"]["audiences"], ["vault"], doc)
        self.stop_ok(srv)

    def test_start_up_warning(self):
        warning = (r"\bwarn\b.*--accept-legacy-tokens: legacy \(Secret-based\) service account tokens never "
                   r"expire and cannot be revoked here")
        srv = self.start(["--accept-legacy-tokens"])
        self.assertEqual(H.count_log(srv, warning), 1, srv.stderr())
        self.stop_ok(srv)
        srv = self.start()
        self.assertEqual(H.count_log(srv, warning), 0, srv.stderr())
        self.assertEqual(H.count_log(srv, "legacy"), 0, srv.stderr())
        self.stop_ok(srv)


class BadRequests(ReviewBase):

    def test_400_status_objects(self):
        srv = self.start()
        token = H.mint_token(self.rsa.priv, ISSUER, sa_uid=SA_UID)
        head = '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",'
        deep = head + '"spec":{"token":"%s","x":%s%s}}' % (token, "[" * 38, "]" * 38)  # depth 40
        at_limit = head + '"spec":{"token":"%s","x":%s%s}}' % (token, "[" * 30, "]" * 30)  # depth 32
        cases = [
            ("not JSON", "{not json", None),
            ("truncated JSON", head + '"spec":{"token":"' + token, None),
            ("missing spec.token", head + '"spec":{}}', "spec.token"),
            ("missing spec", head[:-1] + "}", "spec.token"),
            ("empty spec.token", head + '"spec":{"token":""}}', "spec.token"),
            ("wrong kind", '{"apiVersion":"authentication.k8s.io/v1","kind":"SubjectAccessReview",'
                           '"spec":{"token":"%s"}}' % token, "kind"),
            ("wrong apiVersion", '{"apiVersion":"v1","kind":"TokenReview","spec":{"token":"%s"}}' % token,
             "apiVersion"),
            ("duplicate token", head + '"spec":{"token":"%s","token":"%s"}}' % (token, token), "duplicate"),
            ("duplicate kind", head + '"kind":"TokenReview","spec":{"token":"%s"}}' % token, "duplicate"),
            ("token not a string", head + '"spec":{"token":42}}', None),
            ("audiences not strings", head + '"spec":{"token":"%s","audiences":[1]}}' % token, None),
            ("array at top", "[]", None),
            ("nesting depth 40", deep, "nested"),
        ]
        for name, body, part in cases:
            with self.subTest(case=name):
                st, h, b = H.review_post(srv, body)
                self.assert_status_object(st, h, b, 400, "BadRequest", part)
        # depth 32 is still fine (an unknown member is ignored)
        st, h, b = H.review_post(srv, at_limit)
        self.assertEqual(st, 201, b)
        self.stop_ok(srv)

    def test_415_405_404(self):
        srv = self.start()
        token = H.mint_token(self.rsa.priv, ISSUER, sa_uid=SA_UID)
        body = H.review_body(token)
        for ctype in ("text/plain", None, "application/x-www-form-urlencoded", "application/jsonx",
                      "application/yaml"):
            with self.subTest(content_type=ctype):
                st, h, b = H.review_post(srv, body, content_type=ctype)
                self.assert_status_object(st, h, b, 415, "UnsupportedMediaType")
        for method in ("GET", "PUT", "DELETE"):
            with self.subTest(method=method):
                st, h, b = H.review_post(srv, body if method != "GET" else None, method=method)
                self.assert_status_object(st, h, b, 405, "MethodNotAllowed")
                self.assertEqual(H.one(h, "allow"), "POST")
        # other paths on the review listener, including the public documents
        for path in ("/apis/authentication.k8s.io/v1/tokenreviewsx", "/", H.DISCOVERY, H.JWKS):
            with self.subTest(review_path=path):
                st, h, b = H.review_post(srv, body, path=path)
                self.assert_status_object(st, h, b, 404, "NotFound")
                st, h, b = H.review_post(srv, None, method="GET", path=path)
                self.assertEqual(st, 404, b)
        # the public listener does not serve the API
        st, h, b = srv.request("POST", H.TOKENREVIEW_PATH, {"Content-Type": "application/json"},
                               json.dumps(body).encode())
        self.assertEqual(st, 404, b)
        self.assertNotIn(b"TokenReview", b)
        st, h, b = srv.get(H.TOKENREVIEW_PATH)
        self.assertEqual(st, 404, b)
        # while it still serves its documents
        self.assertEqual(srv.get(H.JWKS)[0], 200)

    def _raw_post(self, srv, body):
        s = socket.create_connection(("127.0.0.1", srv.review_port), timeout=H.SOCK_TIMEOUT)
        try:
            head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                    "Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n"
                    % (H.TOKENREVIEW_PATH, srv.review_port, srv.review_bearer, len(body))).encode()
            try:
                s.sendall(head + body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server may answer and close before reading it all
            reader = H.RawReader(s)
            try:
                return reader.read_response("POST")
            except (EOFError, ConnectionResetError) as e:
                raise AssertionError("no complete response to a %d-byte body: %r (got %r)"
                                     % (len(body), e, reader.buf[:200]))
        finally:
            s.close()

    def test_413_over_64_kib(self):
        srv = self.start()
        token = H.mint_token(self.rsa.priv, ISSUER, sa_uid=SA_UID)

        def body_of(size):
            prefix = '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"%s"},' \
                     '"pad":"' % token
            pad = size - len(prefix) - 2
            b = (prefix + "x" * pad + '"}').encode()
            assert len(b) == size
            return b

        st, h, b = self._raw_post(srv, body_of(64 * 1024))
        self.assertEqual(st, 201, b[:300])
        self.assertIs(json.loads(b)["status"]["authenticated"], True)
        st, h, b = self._raw_post(srv, body_of(64 * 1024 + 1))
        self.assertEqual(st, 413, b[:300])
        st, h, b = self._raw_post(srv, body_of(200 * 1024))
        self.assertEqual(st, 413, b[:300])
        # still serving
        st, doc = H.review(srv, token)
        self.assertIs(doc["status"]["authenticated"], True)


class Rotation(ReviewBase):

    def test_new_key_valid_after_rotation(self):
        old = self.keys.rsa(2048)
        new = self.keys.ec("P-256")
        keyfile = os.path.join(self.tmp, "sa.pub")
        H.atomic_write(keyfile, H.read_bytes(old.pub))
        srv = H.start_review_server(self, ["--service-account-issuer", ISSUER,
                                           "--service-account-key-file", keyfile,
                                           "--key-reload-interval", "1s", "--api-audiences", "vault"], old.priv)
        st, _, b = H.wait_for_jwks(srv, [old])
        self.assertEqual(b, H.expected_jwks([old]))
        old_token = H.mint_token(old.priv, ISSUER, audiences=["vault"], sa="app", sa_uid=SA_UID)
        new_token = H.mint_token(new.priv, ISSUER, audiences=["vault"], sa="app", sa_uid=SA_UID)
        st, doc = H.review(srv, old_token)
        self.assertIs(doc["status"]["authenticated"], True, doc)
        self.assert_refused(srv, new_token, None, "")

        H.atomic_write(keyfile, H.read_bytes(new.pub))
        st, _, b = H.wait_for_jwks(srv, [new], timeout=10)
        self.assertEqual(b, H.expected_jwks([new]), "the JWKS did not change after rotation:\n%s" % srv.stderr())
        # the caller check follows the published key set too: the caller's
        # token signed by the key that left is refused on every thread
        old_caller = srv.review_bearer
        ok = H.wait_until(lambda: all(H.review(srv, new_token)[0] == 401 for _ in range(4)), 5)
        self.assertTrue(ok, "a caller token of the removed key still accepted; stderr:\n%s" % srv.stderr())
        srv.review_bearer = H.review_caller_token(new.priv, ISSUER)
        self.assertNotEqual(srv.review_bearer, old_caller)
        # the review endpoint follows the published key set
        ok = H.wait_until(lambda: H.review(srv, new_token)[1]["status"]["authenticated"], 5)
        self.assertTrue(ok, "token signed by the new key not accepted; stderr:\n%s" % srv.stderr())
        for _ in range(4):  # every worker thread, not only the first one asked
            st, doc = H.review(srv, new_token)
            self.assertIs(doc["status"]["authenticated"], True, doc)
            self.assertEqual(doc["status"]["user"]["username"], "system:serviceaccount:default:app")
            # a success cached under the old key set must not outlive it
            self.assert_refused(srv, old_token, None, "")


# --------------------------------------------------------------------------
# the callers: authentication (401), authorisation (403), the access log and
# the metrics

UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def forbidden(user):
    """kube-apiserver's 403 for a user without create on tokenreviews
    (docs/compatibility.md §5), members in its order."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'tokenreviews.authentication.k8s.io is forbidden: User "%s" cannot create resource '
                       '"tokenreviews" in API group "authentication.k8s.io" at the cluster scope' % user,
            "reason": "Forbidden", "details": {"group": "authentication.k8s.io", "kind": "tokenreviews"},
            "code": 403}


class Callers(ReviewBase):

    def assert_status_exactly(self, st, h, b, want):
        self.assertEqual(st, want["code"], b)
        self.assertEqual(H.one(h, "content-type"), "application/json")
        self.assertEqual(list(json.loads(b)), list(want), b)  # members in kube's order
        self.assertEqual(json.loads(b), want)

    def bad_callers(self, srv):
        """(name, Authorization header value or None) pairs that must all be
        401: none, another scheme, an empty or unparsable token, and service
        account tokens that do not verify for the caller audiences."""
        now = int(time.time())
        caller = H.kube_claims(ISSUER, [H.REVIEW_CALLER_AUDIENCE], H.REVIEW_CALLER_NS, H.REVIEW_CALLER_SA, now=now)
        good = srv.review_bearer
        h64, p64, _ = good.split(".")
        return [
            ("no header", None),
            ("Basic scheme", "Basic " + H.b64url(b"e2e:reviewer")),
            ("Bearer without a token", "Bearer"),
            ("two spaces before the token", "Bearer  " + good),
            ("not a JWT", "Bearer not-a-token"),
            ("forged signature", "Bearer %s.%s.%s" % (h64, p64, H.b64url(b"\x01" * 256))),
            ("unknown key", "Bearer " + self.pyjwt_token(self.keys.rsa(2048), caller)),
            ("expired", "Bearer " + self.pyjwt_token(self.rsa, H.kube_claims(
                ISSUER, [H.REVIEW_CALLER_AUDIENCE], H.REVIEW_CALLER_NS, H.REVIEW_CALLER_SA, now=now - 7200,
                lifetime=3600))),
            ("review audience, not the caller audience", "Bearer " + self.pyjwt_token(self.rsa, H.kube_claims(
                ISSUER, ["vault"], H.REVIEW_CALLER_NS, H.REVIEW_CALLER_SA, now=now))),
            ("another issuer", "Bearer " + self.pyjwt_token(self.rsa, dict(caller, iss="https://evil.example"))),
            ("alg none", "Bearer " + H.jws_compact({"alg": "none", "kid": self.rsa.kid}, caller)),
        ]

    def test_401_for_every_bad_credential_on_every_path(self):
        srv = self.start(["--api-audiences", "vault"])
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID)
        for name, auth in self.bad_callers(srv):
            headers = {"Authorization": auth} if auth is not None else {}
            with self.subTest(caller=name):
                st, h, b = H.review_post(srv, H.review_body(token), bearer=None, headers=headers)
                self.assert_status_exactly(st, h, b, UNAUTHORIZED)
        # before anything else: the path, the method and the body are not
        # looked at, so they tell an unauthenticated client nothing
        for method, path, body in (("GET", "/", None), ("GET", H.JWKS, None), ("DELETE", H.TOKENREVIEW_PATH, None),
                                   ("POST", H.TOKENREVIEW_PATH, "{not json")):
            with self.subTest(method=method, path=path):
                st, h, b = H.review_post(srv, body, method=method, path=path, bearer=None)
                self.assert_status_exactly(st, h, b, UNAUTHORIZED)
        # the caller's token is good for the caller audience only: as a
        # reviewed token for "vault" it does not authenticate
        self.assert_refused(srv, srv.review_bearer, ["vault"], "token audiences")
        self.stop_ok(srv)

    def test_403_for_an_authenticated_caller_not_allowed(self):
        srv = self.start(["--api-audiences", "vault"])
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID)
        cases = [("other-ns", H.REVIEW_CALLER_SA), (H.REVIEW_CALLER_NS, "other-sa")]
        for ns, sa in cases:
            with self.subTest(caller=(ns, sa)):
                other = H.review_caller_token(self.ec.priv, ISSUER, namespace=ns, sa=sa)
                st, h, b = H.review_post(srv, H.review_body(token), bearer=other)
                self.assert_status_exactly(st, h, b, forbidden("system:serviceaccount:%s:%s" % (ns, sa)))
                # whatever it asks for
                st, h, b = H.review_post(srv, None, method="GET", path="/", bearer=other)
                self.assertEqual(st, 403, b)
        # the allowed one, the same request
        st, doc = H.review(srv, token, ["vault"])
        self.assertEqual((st, doc["status"]["authenticated"]), (201, True), doc)
        self.stop_ok(srv)

    def test_access_log_and_metrics_by_outcome(self):
        log = os.path.join(self.tmp, "access.log")
        srv = self.start(["--api-audiences", "vault", "--access-log", log])
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID)
        outsider = H.review_caller_token(self.rsa.priv, ISSUER, namespace="other")
        self.assertEqual(H.review(srv, token)[0], 201)                                    # authenticated
        self.assertEqual(H.review(srv, token)[0], 201)                                    # again: cache
        self.assertEqual(H.review(srv, token, ["other"])[0], 201)                         # not authenticated
        self.assertEqual(H.review(srv, token, bearer=None)[0], 401)                       # unauthenticated
        self.assertEqual(H.review(srv, token, bearer=srv.review_bearer + "x")[0], 401)   # unauthenticated
        self.assertEqual(H.review(srv, token, bearer=outsider)[0], 403)                   # forbidden
        want = {"unauthenticated": 2, "forbidden": 1, "authenticated": 2, "not_authenticated": 1}
        samples = H.scrape_until(srv.admin_port, lambda m: all(
            H.metric(m, "oidc_token_review_requests_total", outcome=k) == v for k, v in want.items()))
        for outcome, n in want.items():
            with self.subTest(outcome=outcome):
                self.assertEqual(H.metric(samples, "oidc_token_review_requests_total", outcome=outcome), n)
        self.assertEqual(H.metric(samples, "oidc_http_requests_total", path="tokenreviews", method="POST",
                                  status="401"), 2)
        self.assertEqual(H.metric(samples, "oidc_http_requests_total", path="tokenreviews", method="POST",
                                  status="403"), 1)
        # reviews count the reviewed tokens only, not the callers' tokens
        self.assertEqual(H.metric(samples, "oidc_token_reviews_total", authenticated="true", reason=""), 2)
        lines = H.wait_until(lambda: [json.loads(l) for l in H.read_bytes(log).splitlines()]
                             if os.path.exists(log) and len(H.read_bytes(log).splitlines()) >= 6 else None, 5)
        self.assertEqual(len(lines), 6, lines)
        got = sorted((l["status"], l.get("caller")) for l in lines)
        self.assertEqual(got, sorted([(201, H.REVIEW_CALLER)] * 3 + [(401, None)] * 2
                                     + [(403, "system:serviceaccount:other:%s" % H.REVIEW_CALLER_SA)]))
        self.stop_ok(srv)

    def test_cached_caller_costs_one_verification(self):
        """A caller's token, once verified, is answered from the cache like a
        reviewed token (same cache, keyed with the caller audience)."""
        srv = self.start(["--api-audiences", "vault", "--threads", "1"])
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID)
        for _ in range(3):
            self.assertEqual(H.review(srv, token)[0], 201)
        samples = H.scrape_until(srv.admin_port, lambda m: H.metric(m, "oidc_verification_cache_hits_total") == 4)
        # two verifications (the caller's token and the reviewed one), then
        # four answers from the cache (two per later request)
        self.assertEqual(H.metric(samples, "oidc_verification_cache_hits_total"), 4)
        self.assertEqual(H.metric(samples, "oidc_verification_cache_entries"), 2)
        self.stop_ok(srv)

    def test_a_refused_caller_costs_one_signature_check_at_most(self):
        """A caller is not known when its token is checked: whatever the
        token, a refusal costs one signature check at most (the README's
        promise). A forged token without kid was tried against every key
        of its alg, 16 of the 17 P-256 keys here; now it is refused
        unchecked, and one with a kid costs one check."""
        keys = [self.ec] + [self.keys.ec() for _ in range(16)]
        srv = self.start(["--api-audiences", "vault", "--threads", "1"], keys=keys)
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID)
        caller = H.kube_claims(ISSUER, [H.REVIEW_CALLER_AUDIENCE], H.REVIEW_CALLER_NS, H.REVIEW_CALLER_SA)
        forged = H.b64url(b"\x01" * 64)  # r = s = 0x0101...: in range, so each key tried costs a full check
        kidless = "%s.%s.%s" % (H.b64url(b'{"alg":"ES256"}'), H.b64url(json.dumps(caller).encode()), forged)
        with_kid = "%s.%s.%s" % (H.b64url(json.dumps({"alg": "ES256", "kid": keys[-1].kid}).encode()),
                                 H.b64url(json.dumps(caller).encode()), forged)
        for bearer, checks in ((kidless, 0), (with_kid, 1)):
            before = H.metric(H.scrape_metrics(srv.admin_port), "oidc_token_signature_checks_total")
            for _ in range(3):
                st, h, b = H.review_post(srv, H.review_body(token), bearer=None,
                                         headers={"Authorization": "Bearer " + bearer})
                self.assert_status_exactly(st, h, b, UNAUTHORIZED)
            samples = H.scrape_until(srv.admin_port, lambda m: H.metric(
                m, "oidc_token_review_requests_total", outcome="unauthenticated") >= (3 if checks == 0 else 6))
            self.assertEqual(H.metric(samples, "oidc_token_signature_checks_total") - before, 3 * checks,
                             "signature checks for 3 refused callers, %s" % ("kid-less" if checks == 0 else "kid"))
        self.stop_ok(srv)

    def test_insecure_http_warns_at_start(self):
        srv = self.start()
        self.assertEqual(H.count_log(srv, r"\bwarn\b.*--token-review-insecure-http: the TokenReview API is served "
                                          r"over plain HTTP"), 1, srv.stderr())
        self.assertIn("listening on http://127.0.0.1:%d" % srv.review_port, srv.stderr())
        self.stop_ok(srv)

    def test_refuses_to_start_without_callers_or_tls(self):
        base = ["serve", "--service-account-issuer", ISSUER, "--service-account-key-file", self.rsa.pub,
                "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--enable-token-review",
                "--token-review-listen", "127.0.0.1:0"]
        cases = [
            ([], "--enable-token-review needs --token-review-tls-cert-file and --token-review-tls-private-key-file"),
            (["--token-review-insecure-http"], "--enable-token-review needs --token-review-allowed-callers NAME: "
                                               "nobody may call the TokenReview API otherwise"),
            (["--token-review-insecure-http", "--token-review-allowed-callers", "vault-auth"],
             '--token-review-allowed-callers "vault-auth": must be a service account\'s username'),
            (["--token-review-insecure-http", "--token-review-allowed-callers", "CN=vault"],
             '--token-review-allowed-callers "CN=vault": is a client certificate\'s subject, which needs '
             '--token-review-client-ca-file'),
        ]
        for extra, message in cases:
            with self.subTest(extra=extra):
                rc, out, err = H.run_bin(base + extra, timeout=30)
                self.assertEqual(rc, 2, err)
                self.assertIn(message, err)
                self.assertNotIn("listening", err)


if __name__ == "__main__":
    unittest.main()
