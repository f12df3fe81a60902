# SPDX-License-Identifier: Apache-2.0
"""Interoperability with JOSE implementations nobody here wrote.

a. tokens signed by panva/jose (Node; tests/node/sign_token.mjs: SignJWT with
   RS256, ES256, ES384, ES512 and PKCS#8 keys, kube-shaped claims, our kid)
   verify with `oidc-discovery verify` (exit 0) and on the TokenReview API;
b. the same for tokens signed by PyJWT (Debian's python3-jwt);
c. tokens minted by `oidc-discovery token` verify in jose
   (tests/node/verify_token.mjs: createRemoteJWKSet against our served JWKS
   + jwtVerify with issuer and audience) and in PyJWT (PyJWKClient against
   the same URL + jwt.decode with audience and issuer), RSA and EC keys;
d. PyJWT's ECDSA signatures are raw r||s (JWS); the same signature
   re-encoded as DER (cryptography's encode_dss_signature) is refused with
   reason ecdsa_format.

Requires `node` with tests/node/node_modules (`npm ci` in tests/node) and
PyJWT + cryptography; their absence is a failure, not a skip.
"""

import json
import time
import unittest

import oidc_harness as H

H.ensure_pyjwt()
try:
    import jwt  # PyJWT
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature, decode_dss_signature
except ImportError:  # reported by each test (H.pyjwt_problem)
    jwt = None

ISSUER = "https://oidc.interop.example"
SA_UID = "5b0f4a3e-2f57-4c7e-9d1b-7a0c3e8f9a21"
POD = ("interop-6b9f7c-abcde", "c2a9e0d4-7b1f-4e55-8a3c-90f1d2e3b4c5")
NODE = ("worker-3", "e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b")
SIGN = "sign_token.mjs"
VERIFY = "verify_token.mjs"


class InteropBase(H.FixtureKeysTestCase):

    def setUp(self):
        super().setUp()
        problem = H.node_problem(SIGN, VERIFY)
        if problem:
            self.fail(problem)
        # the fixture keys plus generated P-384 and P-521 keys (PKCS#8: what
        # jose's importPKCS8 reads; the P-384 fixture is SEC1 only)
        self.e256 = self.ec
        self.e384 = self.keys.ec("P-384")
        self.e521 = self.keys.ec("P-521")
        self.all = [self.rsa, self.e256, self.e384, self.e521]

    def start(self, issuer=ISSUER, port=None, extra=()):
        args = ["--service-account-issuer", issuer, "--api-audiences", "vault"]
        for k in self.all:
            args += ["--service-account-key-file", k.pub]
        srv = H.start_review_server(self, args + list(extra), self.rsa.priv, public_port=port)
        # the served JWKS is exactly our keys: the kids the signers use are ours
        self.assertEqual(H.jwks_kids(srv.get(H.JWKS)[2]), [k.kid for k in self.all])
        return srv

    def served_kid(self, srv, key):
        field = "x" if key.kty == "EC" else "n"
        for jwk in json.loads(srv.get(H.JWKS)[2])["keys"]:
            if jwk["kty"] == key.kty and jwk[field] == key.jwk[field]:
                return jwk["kid"]
        self.fail("key %s not in the served JWKS" % key.name)

    def claims(self, sa, now=None):
        return H.kube_claims(ISSUER, ["vault", "other"], "interop", sa, SA_UID, pod=POD, node=NODE, now=now,
                             lifetime=600, jti="jti-" + sa)

    def cli_verify(self, token):
        args = ["verify", "--token-file", "-", "--service-account-issuer", ISSUER, "--api-audiences", "vault"]
        for k in self.all:
            args += ["--service-account-key-file", k.pub]
        return H.run_bin(args, input=token)

    def assert_accepted_everywhere(self, srv, token, sa):
        want_user = "system:serviceaccount:interop:%s" % sa
        rc, out, err = self.cli_verify(token)
        self.assertEqual(rc, 0, "verify refused it:\nstdout: %s\nstderr: %s" % (out, err))
        doc = json.loads(out)
        self.assertEqual(doc["status"]["user"]["username"], want_user)
        self.assertEqual(doc["status"]["user"]["extra"]["authentication.kubernetes.io/credential-id"],
                         ["JTI=jti-" + sa])
        st, doc = H.review(srv, token, ["vault"])
        self.assertEqual(st, 201)
        self.assertIs(doc["status"]["authenticated"], True, doc)
        self.assertEqual(doc["status"]["user"]["username"], want_user)
        self.assertEqual(doc["status"]["user"]["uid"], SA_UID)
        self.assertEqual(doc["status"]["audiences"], ["vault"])
        self.assertEqual(doc["status"]["user"]["extra"]["authentication.kubernetes.io/pod-name"], [POD[0]])

    def node_sign(self, alg, key, kid, payload):
        rc, out, err = H.run_node(SIGN, alg, key.priv, kid, json.dumps(payload))
        self.assertEqual(rc, 0, "sign_token.mjs failed: %s %s" % (out, err))
        token = out.strip()
        self.assertEqual(token.count("."), 2, out)
        return token


class SignedElsewhere(InteropBase):

    def test_a_jose_signed_tokens(self):
        srv = self.start()
        for key in self.all:
            with self.subTest(alg=key.alg):
                kid = self.served_kid(srv, key)
                sa = "jose-" + key.alg.lower()
                token = self.node_sign(key.alg, key, kid, self.claims(sa))
                header, payload, sig = H.jwt_parts(token)
                self.assertEqual(header, {"alg": key.alg, "kid": kid})
                if key.kty == "EC":
                    self.assertEqual(len(sig), 2 * {"ES256": 32, "ES384": 48, "ES512": 66}[key.alg])
                self.assert_accepted_everywhere(srv, token, sa)
        # without a kid: every key is tried
        token = self.node_sign("ES384", self.e384, "", self.claims("jose-nokid"))
        self.assertNotIn("kid", H.jwt_parts(token)[0])
        self.assert_accepted_everywhere(srv, token, "jose-nokid")
        # and jose's tokens are still refused when they should be
        expired = self.node_sign("RS256", self.rsa, self.rsa.kid, self.claims("old", now=time.time() - 7200))
        rc, out, err = self.cli_verify(expired)
        self.assertEqual(rc, 1, err)
        self.assertIn("invalid token (expired)", err)
        # a published kid on the wrong curve's key
        wrong = self.node_sign("ES256", self.e256, self.e384.kid, self.claims("wrong"))
        rc, out, err = self.cli_verify(wrong)
        self.assertEqual(rc, 1, err)
        self.assertIn("invalid token (alg_mismatch)", err)

    def test_b_pyjwt_signed_tokens(self):
        srv = self.start()
        for key in self.all:
            with self.subTest(alg=key.alg):
                sa = "pyjwt-" + key.alg.lower()
                token = jwt.encode(self.claims(sa), H.read_bytes(key.priv), algorithm=key.alg,
                                   headers={"kid": self.served_kid(srv, key)})
                header = H.jwt_parts(token)[0]
                self.assertEqual(header["alg"], key.alg)
                self.assertEqual(header["kid"], key.kid)
                self.assert_accepted_everywhere(srv, token, sa)


class MintedHere(InteropBase):

    def test_c_our_tokens_verify_in_jose_and_pyjwt(self):
        # jose and PyJWKClient fetch the JWKS over http from our server
        srv = self.start()
        jwks_url = srv.url(H.JWKS)
        pyjwk = jwt.PyJWKClient(jwks_url, cache_keys=False)
        for key in self.all:
            with self.subTest(alg=key.alg):
                sa = "minted-" + key.alg.lower()
                token = H.mint_token(key.priv, ISSUER, audiences=["vault", "other"], namespace="interop", sa=sa,
                                     sa_uid=SA_UID, pod=POD, node=NODE)
                self.assertEqual(H.jwt_parts(token)[0], {"alg": key.alg, "kid": key.kid})
                # panva/jose
                rc, out, err = H.run_node(VERIFY, jwks_url, ISSUER, "vault", token)
                self.assertEqual(rc, 0, "jose refused our token:\nstdout: %s\nstderr: %s" % (out, err))
                self.assertTrue(out.startswith("OK "), out)
                verified = json.loads(out[3:])
                self.assertEqual(verified["header"], {"alg": key.alg, "kid": key.kid})
                self.assertEqual(verified["payload"]["sub"], "system:serviceaccount:interop:" + sa)
                self.assertEqual(verified["payload"]["kubernetes.io"]["pod"], {"name": POD[0], "uid": POD[1]})
                if key is self.rsa:
                    # jose refuses it for a wrong audience or issuer (its checks are on)
                    rc, out, err = H.run_node(VERIFY, jwks_url, ISSUER, "nope", token)
                    self.assertEqual(rc, 1, out + err)
                    self.assertIn("FAIL ERR_JWT_CLAIM_VALIDATION_FAILED", out)
                    rc, out, err = H.run_node(VERIFY, jwks_url, "https://other.example", "vault", token)
                    self.assertEqual(rc, 1, out + err)
                    self.assertIn("FAIL ERR_JWT_CLAIM_VALIDATION_FAILED", out)
                # PyJWT
                signing_key = pyjwk.get_signing_key_from_jwt(token)
                claims = jwt.decode(token, signing_key.key, algorithms=[key.alg], audience="vault", issuer=ISSUER,
                                    options={"require": ["exp", "iat", "nbf", "iss", "aud", "sub"]})
                self.assertEqual(claims["sub"], "system:serviceaccount:interop:" + sa)
                self.assertEqual(claims["kubernetes.io"]["serviceaccount"], {"name": sa, "uid": SA_UID})
                self.assertEqual(claims["aud"], ["vault", "other"])
                self.assertLessEqual(abs(claims["iat"] - time.time()), 60)
                self.assertEqual(claims["exp"] - claims["iat"], 3600)
                with self.assertRaises(jwt.InvalidAudienceError):
                    jwt.decode(token, signing_key.key, algorithms=[key.alg], audience="nope", issuer=ISSUER)
                with self.assertRaises(jwt.InvalidIssuerError):
                    jwt.decode(token, signing_key.key, algorithms=[key.alg], audience="vault",
                               issuer="https://other.example")
        # a token signed by a key we do not publish fails in both
        foreign = self.keys.ec("P-256")
        stray = H.mint_token(foreign.priv, ISSUER, audiences=["vault"], sa_uid=SA_UID)
        rc, out, err = H.run_node(VERIFY, jwks_url, ISSUER, "vault", stray)
        self.assertEqual(rc, 1, out + err)
        with self.assertRaises(jwt.PyJWKClientError):
            pyjwk.get_signing_key_from_jwt(stray)
        self.stop_ok(srv)

    def test_c_jose_follows_discovery_with_http_issuer(self):
        port = H.free_port()
        issuer = "http://127.0.0.1:%d" % port
        args = ["--service-account-issuer", issuer, "--allow-insecure-issuer"]
        for k in (self.rsa, self.e521):
            args += ["--service-account-key-file", k.pub]
        srv = self.start_server(args, port=port)
        doc = json.loads(srv.get(H.DISCOVERY)[2])
        for key in (self.rsa, self.e521):
            with self.subTest(alg=key.alg):
                token = H.mint_token(key.priv, issuer, audiences=["vault"], sa_uid=SA_UID,
                                     extra=["--allow-insecure-issuer"])
                rc, out, err = H.run_node(VERIFY, doc["jwks_uri"], doc["issuer"], "vault", token)
                self.assertEqual(rc, 0, "stdout: %s\nstderr: %s" % (out, err))
                pyjwk = jwt.PyJWKClient(doc["jwks_uri"], cache_keys=False)
                claims = jwt.decode(token, pyjwk.get_signing_key_from_jwt(token).key, algorithms=[key.alg],
                                    audience="vault", issuer=doc["issuer"])
                self.assertEqual(claims["iss"], issuer)


class EcdsaFormat(InteropBase):

    def test_d_der_ecdsa_signature_refused(self):
        srv = self.start()
        for key in (self.e256, self.e384, self.e521):
            with self.subTest(alg=key.alg):
                size = {"ES256": 32, "ES384": 48, "ES512": 66}[key.alg]
                token = jwt.encode(self.claims("der-" + key.alg.lower()), H.read_bytes(key.priv),
                                   algorithm=key.alg, headers={"kid": key.kid})
                head, payload, sig_b64 = token.split(".")
                raw = H.b64url_decode(sig_b64)
                # PyJWT writes the JWS form: r||s, each exactly the curve size
                self.assertEqual(len(raw), 2 * size)
                r = int.from_bytes(raw[:size], "big")
                s = int.from_bytes(raw[size:], "big")
                der = encode_dss_signature(r, s)
                self.assertEqual(decode_dss_signature(der), (r, s))
                self.assertNotEqual(len(der), 2 * size)  # DER is never exactly 2*size here
                self.assert_accepted_everywhere(srv, token, "der-" + key.alg.lower())
                der_token = head + "." + payload + "." + H.b64url(der)
                rc, out, err = self.cli_verify(der_token)
                self.assertEqual(rc, 1, "DER signature accepted:\nstdout: %s\nstderr: %s" % (out, err))
                self.assertIn("invalid token (ecdsa_format)", err)
                st, doc = H.review(srv, der_token, ["vault"])
                self.assertEqual(st, 201)
                self.assertIs(doc["status"]["authenticated"], False, doc)
                self.assertEqual(doc["status"]["error"], err.strip().split("): ", 1)[1])
                # PyJWT itself refuses the DER form too
                with self.assertRaises(jwt.InvalidSignatureError):
                    jwt.decode(der_token, H.read_bytes(key.pub), algorithms=[key.alg], audience="vault")
        # a raw signature of the right length but with r = 0 or s >= n
        size = 32
        token = jwt.encode(self.claims("zero"), H.read_bytes(self.e256.priv), algorithm="ES256",
                           headers={"kid": self.e256.kid})
        head, payload, _ = token.split(".")
        for name, sig in (("r = 0", b"\x00" * size + b"\x01" * size), ("all ones", b"\xff" * (2 * size)),
                          ("one byte short", b"\x01" * (2 * size - 1))):
            with self.subTest(case=name):
                rc, out, err = self.cli_verify(head + "." + payload + "." + H.b64url(sig))
                self.assertEqual(rc, 1, err)
                self.assertRegex(err, r"invalid token \((ecdsa_format|signature)\)")


if __name__ == "__main__":
    unittest.main()
