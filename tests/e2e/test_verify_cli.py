# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of `oidc-discovery verify`.

Exit status 0 (valid), 1 (invalid: stderr names the reason), 2 (usage, keys,
discovery); the TokenReview JSON on stdout; the token from a file or from
standard input; --repeat's report, cached and uncached; and --discovery-url,
both against our own server over http (--allow-insecure-issuer) and over
https against a small Python server holding a certificate from a test CA made
here with the openssl CLI (documents copied from our server's output).

Tokens are minted by `oidc-discovery token` and, independently, by PyJWT
(Debian's python3-jwt) or by the test's own base64url/HMAC code.
"""

import hashlib
import hmac
import json
import os
import re
import socket
import socketserver
import threading
import time
import unittest

import oidc_harness as H

H.ensure_pyjwt()
try:
    import jwt  # PyJWT
except ImportError:  # reported by each test (H.pyjwt_problem)
    jwt = None

ISSUER = "https://issuer.example.com"
SA_UID = "0d6c6c1e-6b35-4d0c-9b9e-cb1a0f3f4d10"
POD = ("web-7d4b9c8f6-x2x9q", "3f1c2b7e-0a44-4d6f-8f0c-5b5d9a6e2c11")
REPEAT_RX = re.compile(r"^([0-9]+) verifications in ([0-9]+\.[0-9]{3}) s: ([0-9]+) verifications/s "
                       r"\((cached|uncached)\)$")
INVALID_RX = re.compile(r"^oidc-discovery verify: invalid token \(([a-z0-9_]+)\): (.+)$")


class CannedHTTPServer:
    """Answers each request for a path with fixed response bytes (status
    line, headers and body as given), over plain HTTP on 127.0.0.1:<a port
    the kernel picks>, then closes the connection; HANG instead sends
    nothing until the client leaves. Records the paths asked for. Use as a
    context manager."""

    HANG = object()

    def __init__(self):
        self.responses = {}
        self.requests = []
        self.done = threading.Event()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                self.request.settimeout(H.SOCK_TIMEOUT * 4)
                head = b""
                try:
                    while b"\r\n\r\n" not in head:
                        chunk = self.request.recv(4096)
                        if not chunk:
                            return
                        head += chunk
                    path = head.split(b" ")[1].decode()
                    outer.requests.append(path)
                    response = outer.responses.get(path, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    if response is CannedHTTPServer.HANG:
                        while not outer.done.is_set() and self.request.recv(4096):
                            pass
                        return
                    self.request.sendall(response)
                except OSError:
                    pass  # the client left: some tests are about that

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
        return False


class VerifyBase(H.FixtureKeysTestCase):

    def key_args(self, keys=None):
        args = []
        for k in keys or (self.rsa, self.ec):
            args += ["--service-account-key-file", k.pub]
        return args

    def verify(self, token=None, args=(), token_file=None, keys=None, issuer=ISSUER, timeout=H.RUN_TIMEOUT):
        """Runs verify with the fixture keys; the token on stdin unless
        token_file is given. Returns (rc, stdout, stderr)."""
        argv = ["verify", "--token-file", token_file or "-"]
        if keys is not False:
            argv += self.key_args(keys)
        if issuer:
            argv += ["--service-account-issuer", issuer]
        argv += list(args)
        return H.run_bin(argv, input=None if token_file else token + "\n", timeout=timeout)

    def pyjwt_token(self, key, payload, alg=None, headers=None, kid=True):
        hdr = {"kid": key.kid} if kid else {}
        hdr.update(headers or {})
        return jwt.encode(payload, H.read_bytes(key.priv), algorithm=alg or key.alg, headers=hdr)

    def assert_valid(self, rc, out, err, username=None):
        self.assertEqual(rc, 0, "stdout: %s\nstderr: %s" % (out, err))
        self.assertEqual(err, "")
        doc = json.loads(out)
        self.assertIs(doc["status"]["authenticated"], True)
        if username:
            self.assertEqual(doc["status"]["user"]["username"], username)
        return doc

    def assert_invalid(self, rc, out, err, reason, message_part=""):
        self.assertEqual(rc, 1, "stdout: %s\nstderr: %s" % (out, err))
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        m = INVALID_RX.match(lines[0])
        self.assertIsNotNone(m, err)
        self.assertEqual(m.group(1), reason, err)
        self.assertIn(message_part, m.group(2))
        doc = json.loads(out)
        self.assertEqual(doc["status"], {"authenticated": False, "user": {}, "error": m.group(2)})
        return m.group(2)

    def assert_usage_error(self, rc, out, err, part=None):
        self.assertEqual(rc, 2, "stdout: %s\nstderr: %s" % (out, err))
        self.assertEqual(out, "")
        self.assertTrue(err.strip(), "exit 2 without a message")
        if part is not None:
            self.assertIn(part, err)


class ExitCodes(VerifyBase):

    def test_valid_token_from_file_and_stdin(self):
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], namespace="web", sa="frontend",
                             sa_uid=SA_UID, pod=POD)
        path = os.path.join(self.tmp, "token")
        with open(path, "w") as f:
            f.write(token + "\n")
        rc, out, err = self.verify(token_file=path, args=["--api-audiences", "vault"])
        doc = self.assert_valid(rc, out, err, "system:serviceaccount:web:frontend")
        self.assertEqual(out.count("\n"), 1)
        _, claims, _ = H.jwt_parts(token)
        self.assertEqual(doc, {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "metadata": {"creationTimestamp": None},
            "spec": {"token": token},
            "status": {"authenticated": True,
                       "user": {"username": "system:serviceaccount:web:frontend", "uid": SA_UID,
                                "groups": ["system:serviceaccounts", "system:serviceaccounts:web",
                                           "system:authenticated"],
                                "extra": {"authentication.kubernetes.io/pod-name": [POD[0]],
                                          "authentication.kubernetes.io/pod-uid": [POD[1]],
                                          "authentication.kubernetes.io/credential-id": ["JTI=" + claims["jti"]]}},
                       "audiences": ["vault"]}})
        # the same through standard input, with and without a newline
        rc2, out2, err2 = self.verify(token, ["--api-audiences", "vault"])
        self.assertEqual((rc2, out2, err2), (rc, out, err))
        r = H.run_bin(["verify", "--token-file", "-", "--service-account-issuer", ISSUER,
                       "--api-audiences", "vault"] + self.key_args(), input=token)
        self.assertEqual(r, (rc, out, err))
        # without --api-audiences the issuer is the wanted audience
        token_iss = H.mint_token(self.ec.priv, ISSUER, sa_uid=SA_UID)
        self.assertEqual(H.jwt_parts(token_iss)[1]["aud"], [ISSUER])
        doc = self.assert_valid(*self.verify(token_iss))
        self.assertEqual(doc["status"]["audiences"], [ISSUER])

    def test_invalid_tokens_exit_1_with_reason(self):
        now = int(time.time())
        claims = H.kube_claims(ISSUER, ["vault"], "ns", "sa", SA_UID, now=now)
        good = self.pyjwt_token(self.rsa, claims)
        h64, p64, s64 = good.split(".")
        pub_pem = H.read_bytes(self.rsa.pub)
        foreign = self.keys.ec("P-256")
        legacy = {"iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "ns",
                  "kubernetes.io/serviceaccount/secret.name": "sa-token-abcde",
                  "kubernetes.io/serviceaccount/service-account.name": "sa",
                  "kubernetes.io/serviceaccount/service-account.uid": SA_UID,
                  "sub": "system:serviceaccount:ns:sa"}

        def raw_rs256(header_json: bytes, payload_json: bytes):
            # a token whose JSON the test writes byte for byte, RSA-signed
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import padding
            key = serialization.load_pem_private_key(H.read_bytes(self.rsa.priv), None)
            si = (H.b64url(header_json) + "." + H.b64url(payload_json)).encode()
            return si.decode() + "." + H.b64url(key.sign(si, padding.PKCS1v15(), hashes.SHA256()))

        payload_json = json.dumps(claims, separators=(",", ":")).encode()
        cases = [
            ("expired", self.pyjwt_token(self.rsa, H.kube_claims(ISSUER, ["vault"], now=now - 7200)), [],
             "expired", "service account token has expired"),
            ("not yet valid", self.pyjwt_token(self.rsa, dict(claims, nbf=now + 3600)), [],
             "not_yet_valid", "service account token is not valid yet"),
            ("issued in the future", self.pyjwt_token(self.rsa, dict(claims, iat=now + 3600)), [],
             "issued_in_future", "service account token is issued in the future"),
            ("audience", good, ["--api-audiences", "a,b"], "audience",
             'token audiences ["vault"] is invalid for the target audiences ["a" "b"]'),
            ("issuer", self.pyjwt_token(self.rsa, dict(claims, iss="https://other.example")), [], "issuer", ""),
            ("alg none", H.jws_compact({"alg": "none", "kid": self.rsa.kid}, claims), [], "alg_none", ""),
            ("alg none, no kid", H.jws_compact({"alg": "none"}, claims), [], "alg_none", ""),
            ("HS256 keyed with the public PEM",
             H.jws_compact({"alg": "HS256", "kid": self.rsa.kid}, claims,
                           lambda si: hmac.new(pub_pem, si, hashlib.sha256).digest()), [], "alg_hmac", "HS256"),
            ("HS512", H.jws_compact({"alg": "HS512"}, claims,
                                    lambda si: hmac.new(pub_pem, si, hashlib.sha512).digest()), [], "alg_hmac", ""),
            ("unknown kid", self.pyjwt_token(foreign, claims), [], "unknown_kid", ""),
            ("wrong key under our kid", self.pyjwt_token(foreign, claims, headers={"kid": self.ec.kid}), [],
             "signature", ""),
            ("tampered payload", h64 + "." + H.b64url(json.dumps(dict(claims, sub="system:serviceaccount:x:y"))
                                                      .encode()) + "." + s64, [], "signature", ""),
            ("RS512", self.pyjwt_token(self.rsa, claims, alg="RS512"), [], "alg_unsupported", ""),
            ("PS256", self.pyjwt_token(self.rsa, claims, alg="PS256"), [], "alg_unsupported", ""),
            ("crit", self.pyjwt_token(self.rsa, claims, headers={"crit": ["exp"], "exp": 1}), [], "crit", ""),
            ("jku", self.pyjwt_token(self.rsa, claims, headers={"jku": "https://evil.example/jwks"}), [],
             "embedded_key", ""),
            ("jwk", self.pyjwt_token(self.rsa, claims, headers={"jwk": self.rsa.jwk}), [], "embedded_key", ""),
            ("x5c", self.pyjwt_token(self.rsa, claims, headers={"x5c": ["MIIB"]}), [], "embedded_key", ""),
            ("x5u", self.pyjwt_token(self.rsa, claims, headers={"x5u": "https://evil.example/c"}), [],
             "embedded_key", ""),
            ("padding", h64 + "." + p64 + "." + s64 + "==", [], "base64", ""),
            ("standard base64 alphabet", h64 + "." + p64 + "." + s64.replace("-", "+").replace("_", "/")
             + ("" if ("-" in s64 or "_" in s64) else "+"), [], "base64", ""),
            ("four segments", good + ".x", [], "segments", ""),
            ("duplicate claim", raw_rs256(b'{"alg":"RS256","kid":"%s"}' % self.rsa.kid.encode(),
                                          payload_json[:-1] + b',"iss":"' + ISSUER.encode() + b'"}'),
             [], "json", ""),
            ("duplicate header member", raw_rs256(b'{"alg":"RS256","alg":"RS256","kid":"%s"}'
                                                  % self.rsa.kid.encode(), payload_json), [], "json", ""),
            ("nesting depth 40", raw_rs256(b'{"alg":"RS256","kid":"%s"}' % self.rsa.kid.encode(),
                                           payload_json[:-1] + b',"x":' + b"[" * 39 + b"]" * 39 + b"}"),
             [], "json", ""),
            ("exp a string", self.pyjwt_token(self.rsa, dict(claims, exp=str(now + 600))), [], "claim_type", ""),
            ("legacy token", self.pyjwt_token(self.rsa, legacy), [], "legacy", ""),
            ("too large", self.pyjwt_token(self.rsa, dict(claims, pad="x" * 17000)), [], "too_large", ""),
            ("over --max-token-size", good, ["--max-token-size", "256"], "too_large", ""),
        ]
        for name, token, extra, reason, part in cases:
            with self.subTest(case=name):
                args = list(extra) if "--api-audiences" in extra else ["--api-audiences", "vault"] + list(extra)
                self.assert_invalid(*self.verify(token, args), reason, part)

    def test_accepted_edge_cases(self):
        now = int(time.time())
        # no kid: every key is tried (here the second of two)
        doc = self.assert_valid(*self.verify(
            self.pyjwt_token(self.ec, H.kube_claims(ISSUER, ["vault"], "ns", "nokid", SA_UID, now=now), kid=False),
            ["--api-audiences", "vault"]), "system:serviceaccount:ns:nokid")
        self.assertEqual(doc["status"]["audiences"], ["vault"])
        # depth 32 is allowed
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding
        key = serialization.load_pem_private_key(H.read_bytes(self.rsa.priv), None)
        payload = json.dumps(H.kube_claims(ISSUER, ["vault"], now=now), separators=(",", ":")).encode()
        si = (H.b64url(b'{"alg":"RS256","kid":"%s"}' % self.rsa.kid.encode()) + "." +
              H.b64url(payload[:-1] + b',"x":' + b"[" * 31 + b"]" * 31 + b"}")).encode()
        self.assert_valid(*self.verify(si.decode() + "." + H.b64url(key.sign(si, padding.PKCS1v15(),
                                                                              hashes.SHA256())),
                                       ["--api-audiences", "vault"]))
        # the audience list: any one of them
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["x", "vault"], sa_uid=SA_UID)
        doc = self.assert_valid(*self.verify(token, ["--api-audiences", "a,vault,b"]))
        self.assertEqual(doc["status"]["audiences"], ["vault"])
        # a legacy token, when asked for
        legacy = self.pyjwt_token(self.rsa, {
            "iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "ns",
            "kubernetes.io/serviceaccount/secret.name": "sa-token-abcde",
            "kubernetes.io/serviceaccount/service-account.name": "sa",
            "kubernetes.io/serviceaccount/service-account.uid": SA_UID, "sub": "system:serviceaccount:ns:sa"})
        doc = self.assert_valid(*self.verify(legacy, ["--accept-legacy-tokens"]), "system:serviceaccount:ns:sa")
        self.assertEqual(doc["status"]["user"]["uid"], SA_UID)

    def test_leeway(self):
        # (margins of tens of seconds or more, so a slow machine cannot flip a verdict)
        now = int(time.time())
        # expired 20 s ago: inside the default 60 s, outside 10 s and 0
        token = self.pyjwt_token(self.rsa, H.kube_claims(ISSUER, ["vault"], now=now - 620, lifetime=600))
        self.assert_valid(*self.verify(token, ["--api-audiences", "vault"]))
        self.assert_valid(*self.verify(token, ["--api-audiences", "vault", "--token-leeway", "5m"]))
        self.assert_invalid(*self.verify(token, ["--api-audiences", "vault", "--token-leeway", "10s"]), "expired")
        self.assert_invalid(*self.verify(token, ["--api-audiences", "vault", "--token-leeway", "0"]), "expired")
        # issued (and valid from) 30 s in the future: inside the default leeway
        soon = self.pyjwt_token(self.rsa, H.kube_claims(ISSUER, ["vault"], now=now + 30))
        self.assert_valid(*self.verify(soon, ["--api-audiences", "vault"]))
        # 10 minutes in the future: outside it, inside 15m
        later = self.pyjwt_token(self.rsa, H.kube_claims(ISSUER, ["vault"], now=now + 600))
        self.assert_invalid(*self.verify(later, ["--api-audiences", "vault"]), "not_yet_valid")
        self.assert_valid(*self.verify(later, ["--api-audiences", "vault", "--token-leeway", "15m"]))

    def exact_size_token(self, size):
        """An RS256 token of exactly size bytes (a pad claim, and a typ header
        member when base64url cannot reach the length otherwise)."""
        base = H.kube_claims(ISSUER, ["vault"])
        for headers in ({}, {"typ": "JWT"}, {"typ": "JWT", "x": "y"}):
            short = len(self.pyjwt_token(self.rsa, dict(base, pad=""), headers=headers))
            guess = (size - short) * 3 // 4
            for pad in range(max(0, guess - 3), guess + 4):
                token = self.pyjwt_token(self.rsa, dict(base, pad="p" * pad), headers=headers)
                if len(token) == size:
                    return token
        self.fail("no token of exactly %d bytes" % size)

    def test_max_token_size_boundary(self):
        for limit in (1024, 16384):
            with self.subTest(limit=limit):
                args = ["--api-audiences", "vault"] + (["--max-token-size", str(limit)] if limit != 16384 else [])
                self.assert_valid(*self.verify(self.exact_size_token(limit), args))
                self.assert_invalid(*self.verify(self.exact_size_token(limit + 1), args), "too_large")

    def test_exit_2(self):
        token = H.mint_token(self.rsa.priv, ISSUER, sa_uid=SA_UID)
        path = os.path.join(self.tmp, "token")
        with open(path, "w") as f:
            f.write(token)
        garbage = os.path.join(H.FIXTURES, "garbage.pem")
        cases = [
            ("no --token-file", H.run_bin(["verify"] + self.key_args() + ["--service-account-issuer", ISSUER])),
            ("missing token file", self.verify(token_file=os.path.join(self.tmp, "nope"))),
            ("no keys", self.verify(token, keys=False)),
            ("unreadable key file", self.verify(token, ["--service-account-key-file",
                                                        os.path.join(self.tmp, "missing.pem")])),
            ("key file without keys", H.run_bin(["verify", "--token-file", path, "--service-account-issuer",
                                                 ISSUER, "--service-account-key-file", garbage])),
            ("no issuer", self.verify(token, issuer=None)),
            ("unknown flag", self.verify(token, ["--no-such-flag"])),
            ("bad leeway", self.verify(token, ["--token-leeway", "2h"])),
            ("bad max size", self.verify(token, ["--max-token-size", "10"])),
            ("bad repeat", self.verify(token, ["--repeat", "0"])),
            ("http discovery without --allow-insecure-issuer",
             H.run_bin(["verify", "--token-file", path, "--discovery-url", "http://127.0.0.1:%d" % H.free_port()])),
            ("discovery, nothing listening",
             H.run_bin(["verify", "--token-file", path, "--discovery-url", "https://127.0.0.1:%d" % H.free_port()])),
        ]
        for name, (rc, out, err) in cases:
            with self.subTest(case=name):
                self.assert_usage_error(rc, out, err)


class KubeRules(VerifyBase):
    """Tokens kube-apiserver treats in its own way."""

    def test_legacy_token_is_held_to_its_aud(self):
        # a legacy token carrying aud was let through whatever it said
        claims = {"iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "ns",
                  "kubernetes.io/serviceaccount/secret.name": "sa-token-abcde",
                  "kubernetes.io/serviceaccount/service-account.name": "sa",
                  "kubernetes.io/serviceaccount/service-account.uid": SA_UID, "sub": "system:serviceaccount:ns:sa"}
        args = ["--api-audiences", "vault", "--accept-legacy-tokens"]
        other = self.pyjwt_token(self.rsa, dict(claims, aud=["some-other-audience"]))
        self.assert_invalid(*self.verify(other, args), "audience",
                            'token audiences ["some-other-audience"] is invalid for the target audiences ["vault"]')
        # without aud it carries the API audiences
        doc = self.assert_valid(*self.verify(self.pyjwt_token(self.rsa, claims), args), "system:serviceaccount:ns:sa")
        self.assertEqual(doc["status"]["audiences"], ["vault"])
        doc = self.assert_valid(*self.verify(self.pyjwt_token(self.rsa, dict(claims, aud="vault")), args))
        self.assertEqual(doc["status"]["audiences"], ["vault"])

    def test_kidless_token_is_tried_against_the_first_16_keys(self):
        # without kid, every key of the alg was tried: with many keys, a bad
        # token cost a signature check per key; now 16 at most
        d = os.path.join(self.tmp, "many")
        os.mkdir(d)
        keys = [self.keys.ec("P-256") for _ in range(20)]
        for i, k in enumerate(keys):
            os.symlink(k.pub, os.path.join(d, "k%02d.pub" % i))
        now = int(time.time())
        claims = H.kube_claims(ISSUER, ["vault"], "ns", "nokid", SA_UID, now=now)
        args = ["--api-audiences", "vault", "--service-account-key-file", d]
        self.assert_valid(*self.verify(self.pyjwt_token(keys[15], claims, kid=False), args, keys=False),
                          "system:serviceaccount:ns:nokid")
        self.assert_invalid(*self.verify(self.pyjwt_token(keys[16], claims, kid=False), args, keys=False),
                            "unknown_kid", "a token without kid is checked against at most 16 keys; 4 more are "
                            "configured")
        self.assert_valid(*self.verify(self.pyjwt_token(keys[19], claims), args, keys=False))


class Repeat(VerifyBase):

    def run_repeat(self, n, extra=()):
        token = H.mint_token(self.rsa.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID)
        rc, out, err = self.verify(token, ["--api-audiences", "vault", "--repeat", str(n)] + list(extra),
                                   timeout=60)
        self.assertEqual(rc, 0, "stdout: %s\nstderr: %s" % (out, err))
        lines = out.splitlines()
        reports = [ln for ln in lines if REPEAT_RX.match(ln)]
        self.assertEqual(len(reports), 1, out[:2000])
        m = REPEAT_RX.match(reports[0])
        self.assertEqual(int(m.group(1)), n)
        self.assertGreater(int(m.group(3)), 0, reports[0])
        # and the review itself, once
        docs = [json.loads(ln) for ln in lines if ln.startswith("{")]
        self.assertEqual(len(docs), 1, out[:2000])
        self.assertIs(docs[0]["status"]["authenticated"], True)
        return m

    def test_repeat_cached(self):
        m = self.run_repeat(2000)
        self.assertEqual(m.group(4), "cached")

    def test_repeat_uncached(self):
        m = self.run_repeat(200, ["--no-cache"])
        self.assertEqual(m.group(4), "uncached")

    def test_repeat_invalid_token(self):
        now = int(time.time())
        token = self.pyjwt_token(self.rsa, H.kube_claims(ISSUER, ["vault"], now=now - 7200))
        rc, out, err = self.verify(token, ["--api-audiences", "vault", "--repeat", "50"])
        self.assertEqual(rc, 1, err)
        self.assertIn("invalid token (expired)", err)


class Discovery(VerifyBase):

    def test_discovery_over_http_from_our_server(self):
        port = H.free_port()
        issuer = "http://127.0.0.1:%d" % port
        srv = self.start_server(["--service-account-issuer", issuer, "--allow-insecure-issuer",
                                 "--service-account-key-file", self.rsa.pub,
                                 "--service-account-key-file", self.ec.pub], port=port)
        token = H.mint_token(self.ec.priv, issuer, audiences=["vault"], sa="disc", sa_uid=SA_UID,
                             extra=["--allow-insecure-issuer"])
        path = os.path.join(self.tmp, "token")
        with open(path, "w") as f:
            f.write(token)

        def run(*args):
            return H.run_bin(["verify", "--token-file", path, "--api-audiences", "vault"] + list(args))

        ok = "system:serviceaccount:default:disc"
        self.assert_valid(*run("--discovery-url", issuer, "--allow-insecure-issuer"), ok)
        self.assert_valid(*run("--discovery-url", issuer + H.DISCOVERY, "--allow-insecure-issuer"), ok)
        self.assert_valid(*run("--discovery-url", issuer, "--allow-insecure-issuer",
                               "--service-account-issuer", issuer), ok)
        # issuer mismatch: the document names another issuer than expected
        self.assert_usage_error(*run("--discovery-url", issuer, "--allow-insecure-issuer",
                                     "--service-account-issuer", "https://other.example"), "issuer")
        self.assert_usage_error(*run("--discovery-url", issuer + "/", "--allow-insecure-issuer"), "issuer")
        self.assert_usage_error(*run("--discovery-url", "http://localhost:%d" % port, "--allow-insecure-issuer"),
                                "issuer")
        # http needs --allow-insecure-issuer
        self.assert_usage_error(*run("--discovery-url", issuer))
        # a token from another issuer is invalid (1), not a discovery problem
        other = H.mint_token(self.ec.priv, "https://other.example", audiences=["vault"], sa_uid=SA_UID)
        rc, out, err = H.run_bin(["verify", "--token-file", "-", "--api-audiences", "vault", "--discovery-url",
                                  issuer, "--allow-insecure-issuer"], input=other)
        self.assert_invalid(rc, out, err, "issuer")
        # a key not in the served JWKS
        foreign = self.keys.rsa(2048)
        stray = H.mint_token(foreign.priv, issuer, audiences=["vault"], sa_uid=SA_UID,
                             extra=["--allow-insecure-issuer"])
        rc, out, err = H.run_bin(["verify", "--token-file", "-", "--api-audiences", "vault", "--discovery-url",
                                  issuer, "--allow-insecure-issuer"], input=stray)
        self.assert_invalid(rc, out, err, "unknown_kid")
        self.stop_ok(srv)

    def test_discovery_failures_name_the_url(self):
        """Every way a fetch can fail stops verify with exit 2 and a message
        naming the URL and the reason: redirects are not followed, documents
        are capped at 1 MiB whatever their framing, no content coding, a
        silent server times out."""
        path = os.path.join(self.tmp, "token")
        with open(path, "w") as f:
            f.write(H.mint_token(self.ec.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID))

        def ok(body, ctype="application/json"):
            return b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (
                ctype.encode(), len(body), body)

        big = b"{" + b" " * (1024 * 1024) + b"}"
        with CannedHTTPServer() as srv:
            def discovery(case):
                return "%s/%s%s" % (srv.url, case, H.DISCOVERY)

            srv.responses = {
                "/redirect" + H.DISCOVERY: b"HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n"
                                           % discovery("elsewhere").encode(),
                "/missing" + H.DISCOVERY: b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
                "/big" + H.DISCOVERY: ok(big),
                "/bigclose" + H.DISCOVERY: b"HTTP/1.0 200 OK\r\n\r\n" + big,
                "/gzip" + H.DISCOVERY: b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}",
                "/notjson" + H.DISCOVERY: ok(b"{not json"),
                "/jwks404" + H.DISCOVERY: ok(json.dumps({"issuer": srv.url + "/jwks404",
                                                          "jwks_uri": srv.url + "/jwks404/keys"}).encode()),
                "/slow" + H.DISCOVERY: CannedHTTPServer.HANG,
            }
            cases = [
                ("redirect", discovery("redirect"), "HTTP 302"),
                ("redirect", discovery("redirect"), "redirects are not followed"),
                ("missing", discovery("missing"), "HTTP 404 Not Found"),
                ("big", discovery("big"), "response body exceeds 1048576 bytes"),
                ("bigclose", discovery("bigclose"), "response body exceeds 1048576 bytes"),
                ("gzip", discovery("gzip"), "Content-Encoding \"gzip\""),
                ("notjson", discovery("notjson"), "invalid JSON"),
                ("jwks404", srv.url + "/jwks404/keys", "HTTP 404"),
            ]
            for case, url, reason in cases:
                with self.subTest(case=case, reason=reason):
                    rc, out, err = H.run_bin(["verify", "--token-file", path, "--allow-insecure-issuer",
                                              "--discovery-url", srv.url + "/" + case])
                    self.assert_usage_error(rc, out, err, reason)
                    self.assertIn(url + ": ", err)
            self.assertNotIn("/elsewhere" + H.DISCOVERY, srv.requests)

            start = time.monotonic()
            rc, out, err = H.run_bin(["verify", "--token-file", path, "--allow-insecure-issuer",
                                      "--discovery-url", srv.url + "/slow"], timeout=60)
            self.assert_usage_error(rc, out, err, "GET %s: timed out after 10 s" % discovery("slow"))
            self.assertLess(time.monotonic() - start, 40)

    def https_fixture(self):
        """A test CA, certificates for IP:127.0.0.1 (by the CA), DNS:other.example
        (by the CA) and IP:127.0.0.1 (by another CA)."""
        d = os.path.join(self.tmp, "pki")
        os.makedirs(d)
        ca = H.make_ca(d, "ca")
        other_ca = H.make_ca(d, "otherca")
        good = H.make_server_cert(d, ca, "IP:127.0.0.1", "good")
        wrong_name = H.make_server_cert(d, ca, "DNS:other.example", "wrongname")
        wrong_ca = H.make_server_cert(d, other_ca, "IP:127.0.0.1", "wrongca")
        return ca, good, wrong_name, wrong_ca

    def serve_documents(self, cert, key):
        """A StaticHTTPSServer whose documents are our server's output for
        issuer https://127.0.0.1:<its port>."""
        https = H.StaticHTTPSServer(cert, key, {})
        issuer = https.url
        srv = self.start_server(["--service-account-issuer", issuer, "--service-account-key-file", self.rsa.pub,
                                 "--service-account-key-file", self.ec.pub])
        st, h, disc = srv.get(H.DISCOVERY)
        self.assertEqual(st, 200)
        st, h, jwks = srv.get(H.JWKS)
        self.assertEqual(st, 200)
        self.assertEqual(json.loads(disc)["jwks_uri"], issuer + "/openid/v1/jwks")
        https.docs = {H.DISCOVERY: ("application/json", disc), H.JWKS: ("application/jwk-set+json", jwks)}
        srv.kill()  # its documents are copied; no need to wait for a graceful stop
        return https, issuer

    def test_discovery_over_https(self):
        ca, good, wrong_name, wrong_ca = self.https_fixture()
        path = os.path.join(self.tmp, "token")

        def run(url, *args):
            return H.run_bin(["verify", "--token-file", path, "--api-audiences", "vault",
                              "--discovery-url", url] + list(args), timeout=20)

        https, issuer = self.serve_documents(*good)
        with https:
            token = H.mint_token(self.rsa.priv, issuer, audiences=["vault"], namespace="tls", sa="client",
                                 sa_uid=SA_UID)
            with open(path, "w") as f:
                f.write(token)
            doc = self.assert_valid(*run(issuer, "--ca-file", ca[0]), "system:serviceaccount:tls:client")
            self.assertEqual(doc["status"]["user"]["uid"], SA_UID)
            self.assertIn(H.DISCOVERY, https.requests)
            self.assertIn(H.JWKS, https.requests)
            self.assert_valid(*run(issuer + H.DISCOVERY, "--ca-file", ca[0]))
            # the system's CAs do not know the test CA
            rc, out, err = run(issuer)
            self.assert_usage_error(rc, out, err)
            self.assertRegex(err.lower(), r"certificate|verif|ssl|tls", err)
            # a CA file with another CA
            rc, out, err = run(issuer, "--ca-file", os.path.join(self.tmp, "pki", "otherca.crt"))
            self.assert_usage_error(rc, out, err)
            self.assertRegex(err.lower(), r"certificate|verif|ssl|tls", err)
            # an expired-token verdict still comes through TLS discovery
            expired = self.pyjwt_token(self.ec, H.kube_claims(issuer, ["vault"], now=int(time.time()) - 7200))
            rc, out, err = H.run_bin(["verify", "--token-file", "-", "--api-audiences", "vault", "--discovery-url",
                                      issuer, "--ca-file", ca[0]], input=expired, timeout=20)
            self.assert_invalid(rc, out, err, "expired")

        for name, (cert, key) in (("certificate for another name", wrong_name),
                                  ("certificate from another CA", wrong_ca)):
            with self.subTest(case=name):
                https, issuer = self.serve_documents(cert, key)
                with https:
                    token = H.mint_token(self.rsa.priv, issuer, audiences=["vault"], sa_uid=SA_UID)
                    with open(path, "w") as f:
                        f.write(token)
                    rc, out, err = run(issuer, "--ca-file", ca[0])
                    self.assert_usage_error(rc, out, err)
                    self.assertRegex(err.lower(), r"certificate|verif|ssl|tls|host|name", err)
                    self.assertNotIn(H.JWKS, https.requests)


if __name__ == "__main__":
    unittest.main()
