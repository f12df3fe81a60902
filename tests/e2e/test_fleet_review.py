# SPDX-License-Identifier: Apache-2.0
"""TokenReview over a fleet (serve --issuers-dir --enable-token-review):
each token is verified with the keys and audiences of the issuer its iss
names exactly.

a. tokens of two issuers are accepted, each for its own audiences: A's
   from its file's api-audiences, B's from the command line's
   --api-audiences (the default of a file without them);
b. a token of A carrying only B's audience is refused, and B's carrying
   only A's;
c. a token whose iss names no issuer of the fleet is refused with a reason
   naming it, as is one with no iss at all;
d. a token signed with A's key but claiming B's iss is refused (B's keys
   do not verify it), as is one claiming B's iss with an issuer URL that
   differs only by a trailing slash (exact match);
e. a review's own audiences are honoured per issuer;
f. callers: a bearer token of either issuer authenticates the caller; one
   of an unknown issuer is 401.

One fleet server is shared by the cases.
"""

import os
import json
import unittest

import oidc_harness as H

ISSUER_A = "https://fleet.example/clusters/a"
ISSUER_B = "https://b.fleet.example"
AUD_A = "aud-of-a"
AUD_DEFAULT = "aud-of-the-command-line"


class FleetReview(H.SharedSetUpCase):
    TMP_PREFIX = "oidc-e2e-fleet-review-"

    @classmethod
    def _start(cls):
        keys = H.KeyFactory(cls.tmp)
        cls.key_a, cls.key_b = keys.rsa(), keys.ec()
        d = os.path.join(cls.tmp, "issuers")
        os.mkdir(d)
        H.atomic_write(os.path.join(d, "a.json"), json.dumps({
            "service-account-issuer": ISSUER_A, "service-account-key-file": cls.key_a.pub,
            "api-audiences": [AUD_A]}).encode())
        H.atomic_write(os.path.join(d, "b.json"), json.dumps({
            "service-account-issuer": ISSUER_B, "service-account-key-file": cls.key_b.pub}).encode())
        cls.server = H.Server(["--issuers-dir", d, "--api-audiences", AUD_DEFAULT, "--enable-token-review",
                               "--token-review-listen", "127.0.0.1:0"] + H.review_caller_args())
        cls.servers.append(cls.server)
        cls.server.start()
        cls.server.review_port = cls.server.port_of("--token-review-listen")
        cls.server.review_bearer = H.review_caller_token(cls.key_a.priv, ISSUER_A)

    def accepted(self, token, audiences=None, bearer=H.DEFAULT_BEARER):
        st, doc = H.review(self.server, token, audiences, bearer=bearer)
        self.assertEqual(st, 201, doc)
        status = doc["status"]
        self.assertIs(status["authenticated"], True, status)
        return status

    def refused(self, token, error_part, audiences=None):
        st, doc = H.review(self.server, token, audiences)
        self.assertEqual(st, 201, doc)
        status = doc["status"]
        self.assertIs(status["authenticated"], False, status)
        self.assertIn(error_part, status["error"])
        return status["error"]

    def test_a_each_issuer_with_its_audiences(self):
        status = self.accepted(H.mint_token(self.key_a.priv, ISSUER_A, audiences=[AUD_A], sa="app-a"))
        self.assertEqual(status["user"]["username"], "system:serviceaccount:default:app-a")
        self.assertEqual(status["audiences"], [AUD_A])
        status = self.accepted(H.mint_token(self.key_b.priv, ISSUER_B, audiences=[AUD_DEFAULT], sa="app-b"))
        self.assertEqual(status["user"]["username"], "system:serviceaccount:default:app-b")
        self.assertEqual(status["audiences"], [AUD_DEFAULT])

    def test_b_another_issuers_audience_refused(self):
        self.refused(H.mint_token(self.key_a.priv, ISSUER_A, audiences=[AUD_DEFAULT]), "audience")
        self.refused(H.mint_token(self.key_b.priv, ISSUER_B, audiences=[AUD_A]), "audience")

    def test_c_unknown_issuer_refused_with_reason(self):
        err = self.refused(H.mint_token(self.key_a.priv, "https://c.fleet.example", audiences=[AUD_A]),
                           "not an issuer this server reviews for")
        self.assertIn("https://c.fleet.example", err)
        self.refused(H.mint_token(self.key_a.priv, "https://fleet.example/clusters", audiences=[AUD_A]),
                     "not an issuer this server reviews for")
        # no iss at all: a hand-made payload, signature never looked at
        seg = lambda obj: H.b64url(json.dumps(obj).encode())  # noqa: E731
        token = "%s.%s.%s" % (seg({"alg": "RS256"}), seg({"sub": "x", "aud": [AUD_A]}), H.b64url(b"sig"))
        self.refused(token, "no readable iss")

    def test_d_signed_by_a_claiming_b_refused(self):
        self.refused(H.mint_token(self.key_a.priv, ISSUER_B, audiences=[AUD_DEFAULT]), "")
        st, doc = H.review(self.server, H.mint_token(self.key_a.priv, ISSUER_B, audiences=[AUD_DEFAULT]))
        self.assertNotIn("not an issuer", doc["status"]["error"])  # B's keys were tried, and refused it
        self.refused(H.mint_token(self.key_b.priv, ISSUER_B + "/", audiences=[AUD_DEFAULT]),
                     "not an issuer this server reviews for")

    def test_e_review_audiences_per_issuer(self):
        self.accepted(H.mint_token(self.key_b.priv, ISSUER_B, audiences=["vault"]), audiences=["vault"])
        self.refused(H.mint_token(self.key_b.priv, ISSUER_B, audiences=["vault"]), "audience", audiences=["other"])

    def test_f_callers_of_each_issuer(self):
        token = H.mint_token(self.key_a.priv, ISSUER_A, audiences=[AUD_A])
        self.accepted(token, bearer=H.review_caller_token(self.key_b.priv, ISSUER_B))
        st, doc = H.review(self.server, token, bearer=H.review_caller_token(self.key_a.priv, "https://c.fleet.example"))
        self.assertEqual(st, 401, doc)
        # a caller token of A's key claiming B: B's keys refuse it
        st, doc = H.review(self.server, token, bearer=H.review_caller_token(self.key_a.priv, ISSUER_B))
        self.assertEqual(st, 401, doc)


if __name__ == "__main__":
    unittest.main()
