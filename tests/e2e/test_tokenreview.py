"""End-to-end tests of the TokenReview API (`serve --enable-token-review`).

Every HTTP outcome of POST /apis/authentication.k8s.io/v1/tokenreviews on the
review listener: 201 with a full user (checked member by member), 201 with
authenticated:false for each kind of bad token, 400 Kubernetes Status objects
for bad requests, 405, 413, 415, and 404 on the public listener. Then key
rotation under a running server, and a client that treats the answers the
way HashiCorp Vault's Kubernetes auth method does.

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
        args = ["--service-account-issuer", ISSUER]
        for k in keys or (self.rsa, self.ec):
            args += ["--service-account-key-file", k.pub]
        return H.start_review_server(self, args + list(extra))

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
        st, h, b = H.review_post(srv.review_port, H.review_body(token, audiences))
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
        st, h, b = H.review_post(srv.review_port, H.review_body(token, ["vault"]))
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
        st2, h2, b2 = H.review_post(srv.review_port, H.review_body(token, ["vault"]))
        self.assertEqual((st2, b2), (st, b))
        self.stop_ok(srv)

    def test_node_bound_ec_token_and_api_audiences_default(self):
        srv = self.start(["--api-audiences", "vault,other"])
        token = H.mint_token(self.ec.priv, ISSUER, audiences=["other"], namespace="ns1", sa="builder",
                             sa_uid=SA_UID, node=NODE)
        header, claims, _ = H.jwt_parts(token)
        self.assertEqual(header, {"alg": "ES256", "kid": self.ec.kid})
        # no spec.audiences: --api-audiences apply, and the echo has none
        st, h, b = H.review_post(srv.review_port, H.review_body(token))
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
        st, h, b = H.review_post(srv.review_port, body)
        self.assertIs(self.assert_json_response(st, h, b, 201)["status"]["authenticated"], True, b)
        # the request's audiences win over --api-audiences
        self.assert_refused(srv, token, ["vault"], 'is invalid for the target audiences ["vault"]')

    def test_audiences_default_to_the_issuer(self):
        srv = self.start()
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=[ISSUER], sa_uid=SA_UID)
        st, doc = H.review(srv.review_port, token)
        self.assertEqual(st, 201)
        self.assertIs(doc["status"]["authenticated"], True, doc)
        self.assertEqual(doc["status"]["audiences"], [ISSUER])
        self.assertEqual(doc["status"]["user"]["username"], "system:serviceaccount:default:default")
        vault_token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID)
        self.assert_refused(srv, vault_token, None, "token audiences")

    def test_empty_audiences_and_several_issuers(self):
        second = "https://second-issuer.example"
        srv = H.start_review_server(self, ["--service-account-issuer", ISSUER, "--service-account-issuer", second,
                                           "--service-account-key-file", self.rsa.pub])
        # iss: the second issuer; aud: the first (the default audiences are the issuers)
        token = H.mint_token(self.rsa.priv, second, audiences=[ISSUER], sa_uid=SA_UID)
        for audiences in (None, []):
            with self.subTest(audiences=audiences):
                st, doc = H.review(srv.review_port, token, audiences)
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
        st, h, b = H.review_post(srv.review_port, H.review_body(token, ["vault"]),
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
        st, doc = H.review(srv.review_port, token, ["vault"])
        self.assertIs(doc["status"]["authenticated"], True, doc)
        # a success cached for "vault" must not answer for "other"
        self.assert_refused(srv, token, ["other"], "token audiences")
        st, doc = H.review(srv.review_port, token, ["vault"])
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
                st, doc = H.review(srv.review_port, token, audiences)
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
        st, doc = H.review(srv.review_port, both)
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
                st, h, b = H.review_post(srv.review_port, body)
                self.assert_status_object(st, h, b, 400, "BadRequest", part)
        # depth 32 is still fine (an unknown member is ignored)
        st, h, b = H.review_post(srv.review_port, at_limit)
        self.assertEqual(st, 201, b)
        self.stop_ok(srv)

    def test_415_405_404(self):
        srv = self.start()
        token = H.mint_token(self.rsa.priv, ISSUER, sa_uid=SA_UID)
        body = H.review_body(token)
        for ctype in ("text/plain", None, "application/x-www-form-urlencoded", "application/jsonx",
                      "application/yaml"):
            with self.subTest(content_type=ctype):
                st, h, b = H.review_post(srv.review_port, body, content_type=ctype)
                self.assert_status_object(st, h, b, 415, "UnsupportedMediaType")
        for method in ("GET", "PUT", "DELETE"):
            with self.subTest(method=method):
                st, h, b = H.review_post(srv.review_port, body if method != "GET" else None, method=method)
                self.assert_status_object(st, h, b, 405, "MethodNotAllowed")
                self.assertEqual(H.one(h, "allow"), "POST")
        # other paths on the review listener, including the public documents
        for path in ("/apis/authentication.k8s.io/v1/tokenreviewsx", "/", H.DISCOVERY, H.JWKS):
            with self.subTest(review_path=path):
                st, h, b = H.review_post(srv.review_port, body, path=path)
                self.assert_status_object(st, h, b, 404, "NotFound")
                st, h, b = H.review_post(srv.review_port, None, method="GET", path=path)
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

    def _raw_post(self, port, body):
        s = socket.create_connection(("127.0.0.1", port), timeout=H.SOCK_TIMEOUT)
        try:
            head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                    "Content-Length: %d\r\n\r\n" % (H.TOKENREVIEW_PATH, port, len(body))).encode()
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

        st, h, b = self._raw_post(srv.review_port, body_of(64 * 1024))
        self.assertEqual(st, 201, b[:300])
        self.assertIs(json.loads(b)["status"]["authenticated"], True)
        st, h, b = self._raw_post(srv.review_port, body_of(64 * 1024 + 1))
        self.assertEqual(st, 413, b[:300])
        st, h, b = self._raw_post(srv.review_port, body_of(200 * 1024))
        self.assertEqual(st, 413, b[:300])
        # still serving
        st, doc = H.review(srv.review_port, token)
        self.assertIs(doc["status"]["authenticated"], True)


class Rotation(ReviewBase):

    def test_new_key_valid_after_rotation(self):
        old = self.keys.rsa(2048)
        new = self.keys.ec("P-256")
        keyfile = os.path.join(self.tmp, "sa.pub")
        H.atomic_write(keyfile, H.read_bytes(old.pub))
        srv = H.start_review_server(self, ["--service-account-issuer", ISSUER,
                                           "--service-account-key-file", keyfile,
                                           "--key-reload-interval", "1s", "--api-audiences", "vault"])
        st, _, b = H.wait_for_jwks(srv, [old])
        self.assertEqual(b, H.expected_jwks([old]))
        old_token = H.mint_token(old.priv, ISSUER, audiences=["vault"], sa="app", sa_uid=SA_UID)
        new_token = H.mint_token(new.priv, ISSUER, audiences=["vault"], sa="app", sa_uid=SA_UID)
        st, doc = H.review(srv.review_port, old_token)
        self.assertIs(doc["status"]["authenticated"], True, doc)
        self.assert_refused(srv, new_token, None, "")

        H.atomic_write(keyfile, H.read_bytes(new.pub))
        st, _, b = H.wait_for_jwks(srv, [new], timeout=10)
        self.assertEqual(b, H.expected_jwks([new]), "the JWKS did not change after rotation:\n%s" % srv.stderr())
        # the review endpoint follows the published key set
        ok = H.wait_until(lambda: H.review(srv.review_port, new_token)[1]["status"]["authenticated"], 5)
        self.assertTrue(ok, "token signed by the new key not accepted; stderr:\n%s" % srv.stderr())
        for _ in range(4):  # every worker thread, not only the first one asked
            st, doc = H.review(srv.review_port, new_token)
            self.assertIs(doc["status"]["authenticated"], True, doc)
            self.assertEqual(doc["status"]["user"]["username"], "system:serviceaccount:default:app")
            # a success cached under the old key set must not outlive it
            self.assert_refused(srv, old_token, None, "")


# --------------------------------------------------------------------------
# a Vault-shaped client

class VaultLoginError(Exception):
    pass


def vault_review(port, login_jwt, role_audience):
    """What vault-plugin-auth-kubernetes (token_review.go: tokenReviewAPI.Review
    and parseResponse) does with a TokenReview answer, written the way its Go
    code reads the response: the JSON parsed into a dict, and a member the Go
    code dereferences that is missing fails hard (KeyError), except
    status.error, which is `json:"error,omitempty"` in TokenReviewStatus
    (absent on success, from kube-apiserver too) and reads as "".

    Returns {"name", "namespace", "uid"}; raises VaultLoginError with Vault's
    message otherwise."""
    body = {"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": {"token": login_jwt, "audiences": [role_audience]}, "status": {"user": {}}}
    # setRequestHeader: Authorization, Content-Type and Accept
    c = H.http.client.HTTPConnection("127.0.0.1", port, timeout=H.SOCK_TIMEOUT)
    try:
        c.request("POST", H.TOKENREVIEW_PATH, body=json.dumps(body).encode(),
                  headers={"Authorization": "Bearer " + login_jwt, "Content-Type": "application/json",
                           "Accept": "application/json"})
        resp = c.getresponse()
        status_code, raw = resp.status, resp.read()
    finally:
        c.close()
    # parseResponse: not 2xx -> a Kubernetes error
    if status_code < 200 or status_code > 206:
        raise VaultLoginError("kube error %d: %s" % (status_code, raw.decode(errors="replace").strip()))
    doc = json.loads(raw)
    # json.Unmarshal into metav1.Status succeeds unless "status" is something
    # other than a string (a TokenReview's status object); Status != "Success"
    # then makes it an error: so a TokenReview without a status object fails
    if "status" not in doc or not isinstance(doc["status"], dict):
        raise VaultLoginError("kube error: %s" % doc.get("message", doc.get("status")))
    status = doc["status"]
    if status.get("error", ""):
        raise VaultLoginError("lookup failed: %s" % status["error"])
    if not status["authenticated"]:
        raise VaultLoginError("lookup failed: service account jwt not valid")
    want = [role_audience]
    if not any(a in status["audiences"] for a in want):
        raise VaultLoginError("lookup failed: service account jwt valid for audience(s) %s, but wanted %s"
                              % (status["audiences"], want))
    parts = status["user"]["username"].split(":")
    if len(parts) != 4:
        raise VaultLoginError("lookup failed: unexpected username format")
    if parts[0] != "system" or parts[1] != "serviceaccount":
        raise VaultLoginError("lookup failed: username returned is not a service account")
    return {"name": parts[3], "namespace": parts[2], "uid": status["user"]["uid"]}


class Vault(ReviewBase):

    def test_vault_client_accepts_valid_and_rejects_invalid(self):
        srv = self.start(["--api-audiences", "vault"])
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], namespace="payments", sa="api",
                             sa_uid=SA_UID, pod=POD, node=NODE)
        self.assertEqual(vault_review(srv.review_port, token, "vault"),
                         {"name": "api", "namespace": "payments", "uid": SA_UID})

        now = int(time.time())
        expired = self.pyjwt_token(self.rsa, H.kube_claims(ISSUER, ["vault"], "payments", "api", SA_UID,
                                                           now=now - 7200, lifetime=3600))
        with self.assertRaises(VaultLoginError) as cm:
            vault_review(srv.review_port, expired, "vault")
        self.assertEqual(str(cm.exception), "lookup failed: service account token has expired")

        # a role bound to another audience: our server refuses the token
        # (audience), so Vault reports our error text
        with self.assertRaises(VaultLoginError) as cm:
            vault_review(srv.review_port, token, "other-role-aud")
        self.assertEqual(str(cm.exception), 'lookup failed: token audiences ["vault"] is invalid for the target'
                                            ' audiences ["other-role-aud"]')

        forged = token.split(".")
        forged[2] = H.b64url(b"\x00" * 256)
        with self.assertRaises(VaultLoginError) as cm:
            vault_review(srv.review_port, ".".join(forged), "vault")
        self.assertTrue(str(cm.exception).startswith("lookup failed: "), cm.exception)
        self.assertNotEqual(str(cm.exception), "lookup failed: ")


if __name__ == "__main__":
    unittest.main()
