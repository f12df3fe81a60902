# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of `oidc-discovery doctor`, and of the relying-party
limit warnings `serve` logs.

doctor runs against our own server over TLS, with a private CA made here
with the openssl CLI and passed by --ca-file; "the system's trust store" is
pointed (SSL_CERT_FILE, which the HTTP client honours without --ca-file) at
that CA for a chain that should count as publicly trusted, and at another
CA for one that should not. JWKS faults our server never publishes (no kid,
a kid twice, an alg of the wrong type) are served by the harness's small
static HTTPS server. Tokens come from `oidc-discovery token` and, for an
expired one and one signed by an unpublished key, from PyJWT (Debian's
python3-jwt), which also generates the 101 RSA keys of the AWS limit test
(python3-cryptography, far faster than one openssl process per key).

Exit status: 0 without FAIL, 1 with one, 2 for usage errors; the JSON
report is read back with Python's json and checked against its documented
shape (docs/doctor.md).
"""

import json
import os
import re
import shutil
import signal
import tempfile
import time
import unittest

import oidc_harness as H

H.ensure_pyjwt()
try:
    import jwt  # PyJWT
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
except ImportError:  # reported by each test (H.pyjwt_problem)
    jwt = None

AUDIENCE = "sts.amazonaws.com"
SA_UID = "6c1b9a4e-0d0b-4d2c-9a53-1f5c2b0f0a11"
LINE_RX = re.compile(r"^(PASS|WARN|FAIL) ([a-z0-9_.]+): (.+)$")
SUMMARY_RX = re.compile(r"^([0-9]+) PASS, ([0-9]+) WARN, ([0-9]+) FAIL$")
AWS_API = "https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateOpenIDConnectProvider.html"

# What a healthy issuer passes, with a token and --audience, in this order.
HEALTHY_CHECKS = [
    "issuer.url", "discovery.fetch", "tls.public", "discovery.content_type", "discovery.cache_control",
    "discovery.issuer", "discovery.members", "discovery.jwks_uri", "jwks.fetch", "jwks.content_type",
    "jwks.cache_control", "jwks.counts", "jwks.kid", "jwks.kid_unique", "jwks.use", "jwks.alg", "jwks.key_types",
    "jwks.private", "jwks.sizes", "discovery.algorithms", "token.format", "token.kid", "token.key",
    "token.signature", "token.iss", "token.aud", "token.lifetime", "token.sub",
]


def parse_report(out):
    """The text report as [(status, id, message)], checking its form: one
    line per check, then the summary, which must count them."""
    lines = out.rstrip("\n").split("\n")
    checks = []
    for line in lines[:-1]:
        m = LINE_RX.match(line)
        if not m:
            raise AssertionError("not a check line: %r\nreport:\n%s" % (line, out))
        checks.append(m.groups())
    m = SUMMARY_RX.match(lines[-1])
    if not m:
        raise AssertionError("no summary line: %r" % lines[-1])
    counted = tuple(sum(1 for c in checks if c[0] == s) for s in ("PASS", "WARN", "FAIL"))
    if counted != tuple(int(x) for x in m.groups()):
        raise AssertionError("summary %r counts %r" % (lines[-1], counted))
    return checks


class DoctorTest(H.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="oidc-e2e-doctor-")
        keys = H.KeyFactory(cls.dir)
        cls.rsa = keys.rsa()
        cls.ec = keys.ec()
        cls.stranger = keys.rsa()  # never published
        cls.ca = H.make_ca(cls.dir, "ca")
        cls.other_ca = H.make_ca(cls.dir, "otherca")
        cls.cert = H.make_server_cert(cls.dir, cls.ca, H.TLS_SAN, "server")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        super().setUp()
        if jwt is None:
            self.fail(H.pyjwt_problem())

    # helpers ------------------------------------------------------------
    def serve_tls(self, key_files=None, extra=(), path=""):
        """Our server with a --tls-listen port known in advance, so the
        issuer (https://127.0.0.1:PORT plus path) can name it. Returns
        (server, issuer)."""
        port = H.free_port()
        issuer = "https://127.0.0.1:%d%s" % (port, path)
        args = ["--service-account-issuer", issuer, "--tls-listen", "127.0.0.1:%d" % port,
                "--tls-cert-file", self.cert[0], "--tls-private-key-file", self.cert[1]]
        for k in key_files or (self.rsa.pub, self.ec.pub):
            args += ["--service-account-key-file", k]
        return self.start_server(args + list(extra)), issuer

    def doctor(self, issuer, *args, trusted=True, token=None):
        """Runs doctor against issuer; the system store (SSL_CERT_FILE) holds
        the test CA when trusted, else another CA. token: a token to write
        to a file and pass with --token-file. Returns (rc, stdout, stderr)."""
        argv = ["doctor", "--issuer", issuer] + list(args)
        if token is not None:
            path = os.path.join(self.tmp, "token")
            with open(path, "w") as f:
                f.write(token + "\n")
            argv += ["--token-file", path]
        env = {"SSL_CERT_FILE": self.ca[0] if trusted else self.other_ca[0]}
        return H.run_once(argv, timeout=30, env=env)

    def checks(self, rc, out, err, want_rc):
        """The report's checks as {id: (status, message)}, once the exit
        status is want_rc and stderr is empty."""
        self.assertEqual(rc, want_rc, "stdout:\n%s\nstderr:\n%s" % (out, err))
        self.assertEqual(err, "")
        return {c[1]: (c[0], c[2]) for c in parse_report(out)}

    def assert_check(self, checks, cid, status, pattern=None):
        self.assertIn(cid, checks, "no %s in %r" % (cid, sorted(checks)))
        self.assertEqual(checks[cid][0], status, "%s: %s" % (cid, checks[cid][1]))
        if pattern:
            self.assertRegex(checks[cid][1], pattern)

    def mint(self, issuer, audience=AUDIENCE, key=None):
        return H.mint_token((key or self.rsa).priv, issuer, audiences=[audience], namespace="apps", sa="web",
                            sa_uid=SA_UID)

    def pyjwt_token(self, key, claims):
        return jwt.encode(claims, H.read_bytes(key.priv), algorithm=key.alg, headers={"kid": key.kid})

    # a healthy issuer -----------------------------------------------------
    def test_healthy_issuer_passes_every_check(self):
        srv, issuer = self.serve_tls()
        rc, out, err = self.doctor(issuer, "--ca-file", self.ca[0], "--audience", AUDIENCE, token=self.mint(issuer))
        checks = self.checks(rc, out, err, 0)
        self.assertEqual([c[1] for c in parse_report(out)], HEALTHY_CHECKS)
        for cid, (status, message) in checks.items():
            self.assertEqual(status, "PASS", "%s: %s" % (cid, message))
        self.assert_check(checks, "discovery.fetch", "PASS",
                          r"^GET \"%s/\.well-known/openid-configuration\": 200, [0-9]+ bytes, TLS verified against "
                          r"--ca-file " % re.escape(issuer))
        self.assert_check(checks, "jwks.counts", "PASS", r"^2 keys: 1 RSA, 1 EC, 0 other$")
        self.assert_check(checks, "token.key", "PASS", re.escape(self.rsa.kid))
        self.assert_check(checks, "token.sub", "PASS", "system:serviceaccount:apps:web")
        # the same without --ca-file: the system store (here the test CA) verifies the chain
        rc, out, err = self.doctor(issuer, "--target", "vault")
        checks = self.checks(rc, out, err, 0)
        self.assert_check(checks, "discovery.fetch", "PASS", "against the system's trust store")
        self.assert_check(checks, "vault.discovery_url", "PASS", re.escape('"%s"' % issuer))

    def test_json_report(self):
        srv, issuer = self.serve_tls()
        token = self.mint(issuer, audience="vault")
        rc, out, err = self.doctor(issuer, "--audience", AUDIENCE, "--target", "aws", "--output", "json",
                                   token=token)
        self.assertEqual(rc, 1, out + err)
        doc = json.loads(out)
        self.assertEqual(sorted(doc), ["checks", "issuer", "result", "summary", "target", "targets"])
        self.assertEqual(doc["issuer"], issuer)
        self.assertEqual(doc["target"], "aws")
        self.assertEqual(doc["targets"], ["aws"])
        self.assertEqual(doc["result"], "fail")
        for c in doc["checks"]:
            self.assertEqual(sorted(c), ["fix", "id", "message", "source", "status"], c)
            self.assertIn(c["status"], ("pass", "warn", "fail"))
            self.assertEqual(c["fix"] is None, c["status"] == "pass", c)
        statuses = [c["status"] for c in doc["checks"]]
        self.assertEqual(doc["summary"], {s: statuses.count(s) for s in ("pass", "warn", "fail")})
        by_id = {c["id"]: c for c in doc["checks"]}
        self.assertEqual(by_id["token.aud"]["status"], "fail")
        self.assertEqual(by_id["aws.issuer_url"]["status"], "fail")
        self.assertEqual(by_id["aws.issuer_url"]["source"], AWS_API)
        self.assertEqual(by_id["aws.key_count"]["status"], "pass")
        self.assertTrue(by_id["aws.key_count"]["source"].startswith("https://docs.aws.amazon.com/"))
        self.assertIsNone(by_id["jwks.kid"]["source"])
        # the text report says the same, check by check
        rc, text, err = self.doctor(issuer, "--audience", AUDIENCE, "--target", "aws", "--output", "text",
                                    token=token)
        self.assertEqual([(c[1], c[0].lower()) for c in parse_report(text)],
                         [(c["id"], c["status"]) for c in doc["checks"]])

    # the certificate chain ------------------------------------------------
    def test_private_ca(self):
        srv, issuer = self.serve_tls()
        rc, out, err = self.doctor(issuer, "--ca-file", self.ca[0], trusted=False)
        checks = self.checks(rc, out, err, 0)
        self.assert_check(checks, "discovery.fetch", "PASS", "--ca-file")
        self.assert_check(checks, "tls.public", "WARN", "does not verify against the system's trust store")
        rc, out, err = self.doctor(issuer, "--ca-file", self.ca[0], "--target", "gcp", trusted=False)
        checks = self.checks(rc, out, err, 1)
        self.assert_check(checks, "gcp.public_trust", "FAIL", "not publicly trusted")
        rc, out, err = self.doctor(issuer, "--ca-file", self.ca[0], "--target", "aws", trusted=False)
        self.assert_check(self.checks(rc, out, err, 1), "aws.thumbprint", "WARN", "thumbprint")
        # several relying parties in one run: each one's rules are checked
        rc, out, err = self.doctor(issuer, "--ca-file", self.ca[0], "--target", "aws", "--target", "gcp",
                                   "--output", "json", trusted=False)
        doc = json.loads(out)
        self.assertEqual(doc["targets"], ["aws", "gcp"])
        ids = [c["id"] for c in doc["checks"]]
        self.assertIn("aws.thumbprint", ids)
        self.assertIn("gcp.public_trust", ids)
        # without --ca-file nothing verifies the chain
        rc, out, err = self.doctor(issuer, trusted=False)
        checks = self.checks(rc, out, err, 1)
        self.assert_check(checks, "discovery.fetch", "FAIL", "TLS certificate verification failed")
        self.assertNotIn("jwks.fetch", checks)

    # the issuer ---------------------------------------------------------------
    def test_trailing_slash_mismatch(self):
        srv, issuer = self.serve_tls()
        rc, out, err = self.doctor(issuer + "/", "--ca-file", self.ca[0], token=self.mint(issuer))
        checks = self.checks(rc, out, err, 1)
        self.assert_check(checks, "issuer.url", "PASS", 'ending with "/"')
        self.assert_check(checks, "discovery.fetch", "PASS", re.escape(issuer + "/.well-known/"))
        self.assert_check(checks, "discovery.issuer", "FAIL", r"differs from --issuer .* by a trailing slash")
        self.assert_check(checks, "token.iss", "FAIL", "by a trailing slash")
        self.assert_check(checks, "jwks.kid", "PASS")

    def test_port_in_issuer_with_target_aws(self):
        srv, issuer = self.serve_tls()
        port = issuer.rsplit(":", 1)[1]
        rc, out, err = self.doctor(issuer, "--ca-file", self.ca[0], "--target", "aws")
        checks = self.checks(rc, out, err, 1)
        self.assert_check(checks, "aws.issuer_url", "FAIL", r"has a port \(:%s\)" % port)
        self.assertIn("fix: publish the documents on port 443", out)
        self.assertIn("(%s)" % AWS_API, out)
        self.assertEqual([c for c, (s, m) in checks.items() if s == "FAIL"], ["aws.issuer_url"])

    def test_http_issuer_is_strict_by_default(self):
        srv = self.start_server(["--service-account-issuer", "http://127.0.0.1:1", "--service-account-key-file",
                                 self.rsa.pub, "--allow-insecure-issuer"])
        issuer = "http://127.0.0.1:%d" % srv.port
        rc, out, err = self.doctor(issuer)
        checks = self.checks(rc, out, err, 1)
        self.assert_check(checks, "issuer.url", "FAIL", "is http")
        self.assertEqual(list(checks), ["issuer.url"], "nothing is fetched over http")
        rc, out, err = self.doctor(issuer, "--allow-insecure-issuer")
        checks = self.checks(rc, out, err, 1)
        self.assert_check(checks, "issuer.url", "WARN", "--allow-insecure-issuer")
        self.assert_check(checks, "discovery.fetch", "PASS", "over plain http")
        self.assert_check(checks, "discovery.issuer", "FAIL", "by port")
        self.assert_check(checks, "discovery.jwks_uri", "WARN", "is http")
        self.assert_check(checks, "jwks.fetch", "FAIL", "cannot connect to 127.0.0.1:1")

    # the JWKS -----------------------------------------------------------------
    def test_unreachable_jwks_uri(self):
        dead = "https://127.0.0.1:%d/openid/v1/jwks" % H.free_port()
        srv, issuer = self.serve_tls(extra=["--service-account-jwks-uri", dead])
        rc, out, err = self.doctor(issuer, "--ca-file", self.ca[0])
        checks = self.checks(rc, out, err, 1)
        self.assert_check(checks, "discovery.jwks_uri", "PASS", re.escape(dead))
        self.assert_check(checks, "jwks.fetch", "FAIL", r"^GET %s: cannot connect to 127\.0\.0\.1:" % re.escape(dead))
        self.assertRegex(out, r"FAIL jwks\.fetch: .*; fix: make the URL reachable")
        self.assertNotIn("jwks.kid", checks)

    def test_jwks_faults_of_other_servers(self):
        """No kid, one kid twice, an alg of another type: JWKS our server
        never publishes, served by a static HTTPS server, each under its
        own issuer path."""
        rsa, ec, stranger = dict(self.rsa.jwk), dict(self.ec.jwk), dict(self.stranger.jwk)
        no_kid = dict(ec)
        del no_kid["kid"]
        wrong_alg = dict(rsa, alg="ES256")
        cases = {
            "/nokid": ([rsa, no_kid], "jwks.kid", r"1 key\(s\) without a kid string \(keys\[1\]\)"),
            "/dupkid": ([rsa, dict(stranger, kid=rsa["kid"])], "jwks.kid_unique",
                        r"keys\[0\] and keys\[1\] share the kid"),
            "/wrongalg": ([wrong_alg, ec], "jwks.alg", r'keys\[0\] is RSA but its alg is "ES256"'),
        }
        https = H.StaticHTTPSServer(self.cert[0], self.cert[1], {})
        for path, (keys, _, _) in cases.items():
            issuer = https.url + path
            discovery = {"issuer": issuer, "jwks_uri": issuer + "/jwks", "response_types_supported": ["id_token"],
                         "subject_types_supported": ["public"],
                         "id_token_signing_alg_values_supported": ["ES256", "RS256"]}
            https.docs[path + H.DISCOVERY] = ("application/json", json.dumps(discovery).encode())
            https.docs[path + "/jwks"] = ("application/json", json.dumps({"keys": keys}).encode())
        with https:
            for path, (keys, cid, pattern) in cases.items():
                with self.subTest(path=path):
                    rc, out, err = self.doctor(https.url + path, "--ca-file", self.ca[0])
                    checks = self.checks(rc, out, err, 1)
                    self.assert_check(checks, cid, "FAIL", pattern)
                    self.assert_check(checks, "discovery.issuer", "PASS")
                    self.assert_check(checks, "discovery.cache_control", "WARN", "missing")
                    self.assertEqual(sorted(c for c, (s, m) in checks.items() if s == "FAIL"), [cid])

    def relying_parties_accept(self, jwks_url, issuer, token, jwks):
        """node jose (createRemoteJWKSet over HTTPS) and PyJWT (its JWK set
        reader, the key picked by kid as PyJWKClient picks it) both accept
        token; jwks is the document served at jwks_url."""
        problem = H.node_problem("verify_token.mjs")
        if problem:
            self.fail(problem)
        saved = os.environ.get("NODE_EXTRA_CA_CERTS")
        os.environ["NODE_EXTRA_CA_CERTS"] = self.ca[0]
        try:
            rc, out, err = H.run_node("verify_token.mjs", jwks_url, issuer, AUDIENCE, token)
        finally:
            if saved is None:
                os.environ.pop("NODE_EXTRA_CA_CERTS")
            else:
                os.environ["NODE_EXTRA_CA_CERTS"] = saved
        self.assertEqual(rc, 0, "node jose refused the token: %s%s" % (out, err))
        kid = jwt.get_unverified_header(token)["kid"]
        key = [k for k in jwt.PyJWKSet.from_dict(jwks).keys if k.key_id == kid][0]
        claims = jwt.decode(token, key.key, algorithms=["RS256", "ES256"], audience=AUDIENCE, issuer=issuer)
        self.assertEqual(claims["iss"], issuer)

    def test_what_real_clients_accept_doctor_accepts(self):
        """A kid that names two keys fails jwks.kid_unique, but a token whose
        kid is unique still verifies (node jose and PyJWT accept it); a JWKS
        served as text/plain is a warning, not a refusal (node jose does not
        look at the type)."""
        rsa, ec, stranger = dict(self.rsa.jwk), dict(self.ec.jwk), dict(self.stranger.jwk)
        https = H.StaticHTTPSServer(self.cert[0], self.cert[1], {})
        cases = {"/dupkid": ({"keys": [rsa, dict(stranger, kid=rsa["kid"]), ec]}, "application/json",
                             "jwks.kid_unique", "FAIL"),
                 "/textplain": ({"keys": [rsa, ec]}, "text/plain", "jwks.content_type", "WARN")}
        for path, (jwks, ctype, _, _) in cases.items():
            issuer = https.url + path
            discovery = {"issuer": issuer, "jwks_uri": issuer + "/jwks", "response_types_supported": ["id_token"],
                         "subject_types_supported": ["public"],
                         "id_token_signing_alg_values_supported": ["ES256", "RS256"]}
            https.docs[path + H.DISCOVERY] = ("application/json", json.dumps(discovery).encode())
            https.docs[path + "/jwks"] = (ctype, json.dumps(jwks).encode())
        with https:
            for path, (jwks, _, cid, status) in cases.items():
                with self.subTest(path=path):
                    issuer = https.url + path
                    token = self.mint(issuer, key=self.ec)
                    self.relying_parties_accept(issuer + "/jwks", issuer, token, jwks)
                    rc, out, err = self.doctor(issuer, "--ca-file", self.ca[0], "--audience", AUDIENCE,
                                               token=token)
                    checks = self.checks(rc, out, err, 1 if status == "FAIL" else 0)
                    self.assert_check(checks, cid, status)
                    self.assert_check(checks, "token.signature", "PASS")
                    if cid == "jwks.content_type":
                        self.assertNotIn("jose accept", checks[cid][1])

    # the token ------------------------------------------------------------------
    def test_token_faults(self):
        srv, issuer = self.serve_tls()
        now = int(time.time())
        cases = [
            ("wrong audience", self.mint(issuer, audience="vault"), "token.aud", r'does not hold "%s"' % AUDIENCE),
            ("expired", self.pyjwt_token(self.rsa, H.kube_claims(issuer, [AUDIENCE], now=now - 7200)),
             "token.lifetime", r"expired [0-9]+ s ago"),
            ("unpublished key", self.pyjwt_token(self.stranger, H.kube_claims(issuer, [AUDIENCE])),
             "token.key", "unpublished key"),
        ]
        for name, token, cid, pattern in cases:
            with self.subTest(case=name):
                rc, out, err = self.doctor(issuer, "--ca-file", self.ca[0], "--audience", AUDIENCE, token=token)
                checks = self.checks(rc, out, err, 1)
                self.assert_check(checks, cid, "FAIL", pattern)
                self.assertEqual([c for c, (s, m) in checks.items() if s == "FAIL"], [cid])
                if cid != "token.key":
                    self.assert_check(checks, "token.signature", "PASS", "RS256")

    # AWS's 100 keys of a type, and serve's warnings -------------------------------
    def write_rsa_keys(self, path, n):
        """n fresh RSA public keys (1024 bits: only their number matters) in
        one PEM file."""
        with open(path, "wb") as f:
            for _ in range(n):
                key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
                f.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo))

    def test_over_100_rsa_keys_with_target_aws(self):
        keydir = os.path.join(self.tmp, "keys")
        os.makedirs(keydir)
        self.write_rsa_keys(os.path.join(keydir, "a.pem"), 101)
        srv, issuer = self.serve_tls(key_files=[keydir], extra=["--key-reload-interval", "1h"])
        limit = r"warn +relying-party limit: AWS IAM: %d RSA and 0 EC keys published; AWS uses at most 100"
        self.assertEqual(H.count_log(srv, limit % 101), 1, srv.stderr())
        self.assertEqual(H.count_log(srv, r"warn +relying-party limit: AWS IAM: the issuer has a port"), 1)
        rc, out, err = self.doctor(issuer, "--ca-file", self.ca[0], "--target", "aws")
        checks = self.checks(rc, out, err, 1)
        self.assert_check(checks, "jwks.counts", "PASS", "^101 keys: 101 RSA, 0 EC")
        self.assert_check(checks, "aws.key_count", "FAIL", "101 RSA and 0 EC keys published")
        self.assert_check(checks, "aws.algorithms", "PASS")
        # an unchanged reload logs nothing new; a changed set logs again
        self.assertTrue(H.sighup_and_wait(srv))
        self.assertEqual(H.count_log(srv, "relying-party limit"), 2, srv.stderr())
        self.write_rsa_keys(os.path.join(keydir, ".b.tmp"), 1)
        os.rename(os.path.join(keydir, ".b.tmp"), os.path.join(keydir, "b.pem"))
        self.assertEqual(H.wait_for_log(srv, limit % 102, timeout=10), 1, srv.stderr())
        self.assertEqual(H.count_log(srv, "relying-party limit"), 4, "both, once more")

    # usage errors ---------------------------------------------------------------
    def test_usage_errors(self):
        missing = os.path.join(self.tmp, "missing")
        for args, message in [
            ([], "--issuer is required"),
            (["--issuer", "https://127.0.0.1:1", "--ca-file", missing], "--ca-file %s: No such file" % missing),
            (["--issuer", "https://127.0.0.1:1", "--token-file", missing], "--token-file %s: cannot read: No such file" % missing),
            (["--issuer", "https://127.0.0.1:1", "--target", "oci"], "--target \"oci\": must be one of aws, gcp, "
                                                                      "azure, vault"),
            (["--issuer", "ftp://127.0.0.1"], "must be an https URL"),
        ]:
            with self.subTest(args=args):
                rc, out, err = H.run_once(["doctor"] + args)
                self.assertEqual(rc, 2, out + err)
                self.assertEqual(out, "")
                self.assertIn(message, err)


if __name__ == "__main__":
    unittest.main()
