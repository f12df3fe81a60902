# SPDX-License-Identifier: Apache-2.0
"""End-to-end with a relying party nobody here wrote: panva/jose (Node).

tests/node/verify_jwks.mjs signs a JWT with a PKCS#8 private key and verifies
it against the JWKS the server publishes, using jose's createRemoteJWKSet +
jwtVerify. RS256 (RSA 2048), ES256, ES384 and ES512 keys are served together,
first from their public keys, then from the private keys directly.

Requires `node` and tests/node/node_modules (`npm ci` in tests/node); their
absence is a failure, not a skip.
"""

import json
import os
import shutil
import subprocess
import unittest

import oidc_harness as H
from oidc_harness import DISCOVERY, JWKS

SCRIPT = os.path.join(H.NODE_DIR, "verify_jwks.mjs")
NODE_TIMEOUT = 30


def node_problem():
    if shutil.which("node") is None:
        return "`node` is not on PATH; install Node.js 18 or 20"
    if not os.path.isfile(SCRIPT):
        return "missing %s" % SCRIPT
    if not os.path.isdir(os.path.join(H.NODE_DIR, "node_modules", "jose")):
        return ("%s/node_modules/jose is missing; run `npm ci` in %s" % (H.NODE_DIR, H.NODE_DIR))
    return None


class Jose(H.ServerTestCase):

    def setUp(self):
        super().setUp()
        problem = node_problem()
        if problem:
            self.fail(problem)
        self.rsa = self.keys.rsa(2048)
        self.e256 = self.keys.ec("P-256")
        self.e384 = self.keys.ec("P-384")
        self.e521 = self.keys.ec("P-521")
        self.all = [self.rsa, self.e256, self.e384, self.e521]

    def verify(self, jwks_url, issuer, alg, priv, kid):
        r = subprocess.run(["node", SCRIPT, jwks_url, issuer, alg, priv, kid],
                           cwd=H.NODE_DIR, capture_output=True, text=True, timeout=NODE_TIMEOUT)
        return r.returncode, r.stdout, r.stderr

    def start(self, use_private, issuer=None, extra=()):
        issuer = issuer or "https://issuer.example.com"
        args = ["--service-account-issuer", issuer]
        for k in self.all:
            args += ["--service-account-key-file", k.priv if use_private else k.pub]
        srv = self.start_server(args + list(extra))
        self.check_both(srv, issuer, self.all,
                        content_type=dict(zip(extra[::2], extra[1::2])).get("--jwks-content-type",
                                                                             "application/jwk-set+json"))
        return srv, issuer

    def run_all_algs(self, srv, issuer):
        jwks_url = srv.url(JWKS)
        for k in self.all:
            with self.subTest(alg=k.alg):
                rc, out, err = self.verify(jwks_url, issuer, k.alg, k.priv, k.kid)
                self.assertEqual(rc, 0, "jose failed for %s:\nstdout: %s\nstderr: %s" % (k.alg, out, err))
                self.assertIn("OK " + k.kid, out.splitlines())

    def run_negative(self, srv, issuer):
        jwks_url = srv.url(JWKS)
        foreign = self.keys.rsa(2048)
        foreign_ec = self.keys.ec("P-256")
        cases = [
            ("unknown kid", "RS256", foreign.priv, foreign.kid),
            ("published kid, wrong key", "RS256", foreign.priv, self.rsa.kid),
            ("published EC kid, wrong key", "ES256", foreign_ec.priv, self.e256.kid),
        ]
        for name, alg, priv, kid in cases:
            with self.subTest(negative=name):
                rc, out, err = self.verify(jwks_url, issuer, alg, priv, kid)
                self.assertEqual(rc, 1, "expected verification failure (%s):\nstdout: %s\nstderr: %s"
                                 % (name, out, err))
                self.assertIn("FAIL", out)
                self.assertNotIn("OK ", out)

    def test_public_keys(self):
        srv, issuer = self.start(use_private=False)
        self.run_all_algs(srv, issuer)
        self.run_negative(srv, issuer)
        self.stop_ok(srv)

    def test_private_keys(self):
        srv, issuer = self.start(use_private=True)
        body = srv.get(JWKS)[2]
        for jwk in json.loads(body)["keys"]:
            self.assertNotIn("d", jwk)
        self.run_all_algs(srv, issuer)
        self.run_negative(srv, issuer)
        self.stop_ok(srv)

    def test_insecure_issuer_and_json_content_type(self):
        # an http issuer on the server's own address (jose doesn't care about
        # the issuer's scheme) and the older application/json content type
        port = H.free_port()
        issuer = "http://127.0.0.1:%d" % port
        args = ["--service-account-issuer", issuer, "--allow-insecure-issuer",
                "--jwks-content-type", "application/json"]
        for k in self.all:
            args += ["--service-account-key-file", k.pub]
        srv = self.start_server(args, port=port)
        self.check_both(srv, issuer, self.all, content_type="application/json")
        # follow the discovery document like a relying party would
        doc = json.loads(srv.get(DISCOVERY)[2])
        self.assertEqual(doc["issuer"], issuer)
        self.assertEqual(doc["jwks_uri"], issuer + "/openid/v1/jwks")
        for k in (self.rsa, self.e521):
            rc, out, err = self.verify(doc["jwks_uri"], doc["issuer"], k.alg, k.priv, k.kid)
            self.assertEqual(rc, 0, "stdout: %s\nstderr: %s" % (out, err))
            self.assertIn("OK " + k.kid, out.splitlines())
        self.stop_ok(srv)


if __name__ == "__main__":
    unittest.main()
