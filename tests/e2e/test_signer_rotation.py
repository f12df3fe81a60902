# SPDX-License-Identifier: Apache-2.0
"""Rotation by the external signer itself, with periods of seconds, under a
steady Sign load and with the JWKS sampled all along (extsigner_client.py):
every kid is published at least --publish-ahead before its first signature
and stays published at least --max-token-lifetime after its last; a
restart in the middle of a rotation (SIGTERM, then SIGKILL) continues with
the same next key and never signs with it before it has been published
for --publish-ahead in all; two processes on one key directory never sign
with a key the other does not publish, and when the rotating one stops the
other takes over.

Periods: --publish-ahead 2s (the next key is promoted once published for
2s + 1s of slack + --key-reload-interval 1s), --rotation-period 3s,
--max-token-lifetime 3s (a retired key stays for 3s + --token-leeway 0 +
1s). About 50 s in all."""

import json
import os
import signal
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("grpc", "grpc_tools", "jwt", "cryptography")

import extsigner_client as X  # noqa: E402

ISSUER = "https://issuer.example"
AHEAD, LIFETIME = 2.0, 3.0
FLAGS = ["--signing-key-type", "ec-p256", "--max-age", "1s", "--publish-ahead", "2s", "--rotation-period", "3s",
         "--max-token-lifetime", "3s", "--allow-short-token-lifetime", "--token-leeway", "0",
         "--key-reload-interval", "1s", "--external-signer-threads", "2"]
RUN = 14.0  # seconds of load: about three rotations


class Rotation(X.SignerTestCase):

    def setUp(self):
        super().setUp()
        self.watch = []

    def tearDown(self):
        for w in self.watch:
            w.stop()
        super().tearDown()

    def start_signer(self, name="a"):
        sock = os.path.join(self.tmp, name + ".sock")
        srv = self.start_server(["--service-account-issuer", ISSUER, "--signing-key-dir", self.dir,
                                 "--external-signer-listen", "unix:" + sock] + FLAGS)
        self.assertTrue(X.wait_socket(sock), srv.stderr())
        srv.sock = sock
        return srv

    def observe(self, srv, loads=2):
        """Starts a JWKS sampler and Sign loads on srv; returns them."""
        return X.observe(srv, ISSUER, self.watch, loads)

    # the two promises --------------------------------------------------
    def check_published_ahead(self, samples, signs, first_kid):
        """Every kid but the directory's first (it signs at once: nothing
        was published before it) showed in a JWKS sample that ended at
        least AHEAD before the call that first got a signature with it
        started; in fact AHEAD plus the second of slack the signer adds
        (ROTATION_SLACK_MS), of which half is left to the noise of
        sampling: a signer that kept only --rotation-period's arithmetic
        (the next key made publish-ahead before the period ends) would
        sign right at AHEAD and fail."""
        first_sign = {}
        for t0, t1, kid in sorted(signs):
            first_sign.setdefault(kid, t0)
        for kid, t0 in first_sign.items():
            if kid == first_kid:
                continue
            shown = X.publication(samples, kid)
            self.assertIsNotNone(shown, "kid %s signed but never seen in the JWKS" % kid)
            self.assertGreaterEqual(t0 - shown[0], AHEAD + 0.5,
                                    "kid %s signed %.3fs after it was first seen published" % (kid, t0 - shown[0]))
        return first_sign

    def check_kept_after_last_signature(self, samples, signs, end):
        """A kid whose last signature is over LIFETIME + 2s before the end
        was still in a sample that started LIFETIME after that signature,
        and the samples saw it go eventually if the run went on long
        enough."""
        last_sign = {}
        for t0, t1, kid in signs:
            last_sign[kid] = max(last_sign.get(kid, 0), t1)
        checked = 0
        for kid, t1 in last_sign.items():
            if t1 + LIFETIME + 2 > end:
                continue
            shown = X.publication(samples, kid)
            self.assertGreaterEqual(shown[1] - t1, LIFETIME,
                                    "kid %s left the JWKS %.3fs after its last signature" % (kid, shown[1] - t1))
            checked += 1
        return checked

    # tests -------------------------------------------------------------
    def test_rotation_under_load_keeps_both_promises(self):
        srv = self.start_signer()
        first_kid = H.jwks_kids(srv.get(H.JWKS)[2])[0]
        sampler, loads = self.observe(srv)
        time.sleep(RUN * H.SLOW)
        for t in loads + [sampler]:
            t.stop()
        end = time.monotonic()
        signs = [s for load in loads for s in load.signs]
        self.assertEqual([f for load in loads for f in load.failures], [], "every Sign answered")
        self.assertEqual(sampler.errors, [])
        kids = self.check_published_ahead(sampler.samples, signs, first_kid)
        self.assertGreaterEqual(len(kids), 3, "at least two rotations under load: %s" % srv.stderr())
        self.assertGreaterEqual(self.check_kept_after_last_signature(sampler.samples, signs, end), 1)
        # the tokens of the keys still published verify with PyJWT
        body = srv.get(H.JWKS)[2]
        published = H.jwks_kids(body)
        for load in loads:
            for kid, token in load.tokens.items():
                if kid in published:
                    X.pyjwt_verify(token, body, ISSUER)

    def test_a_restart_in_the_middle_of_a_rotation_continues_it(self):
        srv = self.start_signer()
        first_kid = H.jwks_kids(srv.get(H.JWKS)[2])[0]
        state = os.path.join(self.dir, "rotation.json")
        samples, signs = [], []
        next_kids, down = [], []  # down: (stopped, started again), monotonic
        for how in (signal.SIGTERM, signal.SIGKILL):
            sampler, loads = self.observe(srv, loads=1)
            # wait for a next key, published for a second (of the 4 s it waits)
            self.assertTrue(H.wait_until(lambda: len(H.jwks_kids(srv.get(H.JWKS)[2])) >= 2 and
                                         json.loads(H.read_bytes(state))["keys"][-1]["role"] == "next", 15),
                            srv.stderr())
            nxt = json.loads(H.read_bytes(state))["keys"][-1]["kid"]
            time.sleep(1.0)
            stopped = time.monotonic()
            if how == signal.SIGTERM:
                self.stop_ok(srv)
                saved = [k for k in json.loads(H.read_bytes(state))["keys"] if k["kid"] == nxt][0]
                self.assertEqual(saved["role"], "next")
                self.assertGreaterEqual(saved["published_ms"], 900, "its publication so far, saved at exit")
            else:
                srv.kill()
            for t in loads + [sampler]:
                t.stop()
            samples += sampler.samples
            signs += [s for load in loads for s in load.signs]
            srv = self.start_signer()
            down.append((stopped, time.monotonic()))
            kids = H.jwks_kids(srv.get(H.JWKS)[2])
            self.assertIn(nxt, kids, "the same next key after the restart")
            next_kids.append(nxt)
        sampler, loads = self.observe(srv, loads=1)
        self.assertTrue(H.wait_until(lambda: any(s[2] == next_kids[-1] for s in loads[0].signs), 15),
                        srv.stderr())
        time.sleep(0.5)
        for t in loads + [sampler]:
            t.stop()
        samples += sampler.samples
        signs += [s for load in loads for s in load.signs]
        # Publication counts only while a server is up: the samples taken
        # while each next key showed, before its first signature, span at
        # least AHEAD plus most of the slack (the intervals between samples
        # showing it are summed, less the time the server was down; a
        # loaded machine may leave long gaps between samples, which count).
        def up_between(a, b):
            return b - a - sum(max(0.0, min(b, t1) - max(a, t0)) for t0, t1 in down)
        for nxt in next_kids:
            first = min((t0 for t0, t1, kid in signs if kid == nxt), default=None)
            if first is None:
                continue
            shown = sorted(s for s in samples if nxt in s[2] and s[1] <= first)
            uptime = sum(up_between(a[1], b[1]) for a, b in zip(shown, shown[1:]))
            self.assertGreaterEqual(uptime, AHEAD + 0.5, "kid %s signed after %.2fs of publication" % (nxt, uptime))
        self.check_published_ahead(samples, signs, first_kid)

    def test_two_processes_never_sign_with_a_key_the_other_does_not_publish(self):
        a = self.start_signer("a")
        b = self.start_signer("b")
        self.assertIn("another process holds", b.stderr())
        first_kid = H.jwks_kids(a.get(H.JWKS)[2])[0]
        sa, la = self.observe(a)
        sb, lb = self.observe(b)
        time.sleep(RUN * H.SLOW)
        for t in la + lb + [sa, sb]:
            t.stop()
        end = time.monotonic()
        signs = {"a": [s for l in la for s in l.signs], "b": [s for l in lb for s in l.signs]}
        samples = {"a": sa.samples, "b": sb.samples}
        self.assertEqual([f for l in la + lb for f in l.failures], [])
        both = signs["a"] + signs["b"]
        self.assertGreaterEqual(len({kid for _, _, kid in signs["b"]}), 3, b.stderr())
        for p, q in (("a", "b"), ("b", "a")):
            for t0, t1, kid in signs[p]:
                before = [s for s in samples[q] if s[1] < t0]
                after = [s for s in samples[q] if s[0] > t1]
                if before and after:
                    self.assertTrue(kid in before[-1][2] and kid in after[0][2],
                                    "%s signed with %s while %s did not publish it" % (p, kid, q))
            self.check_published_ahead(samples[q], both, first_kid)
            self.check_kept_after_last_signature(samples[q], both, end)
        # the rotating process stops: the other takes the lock and goes on
        self.stop_ok(a)
        self.assertTrue(H.wait_for_log(b, r"holds .*/\.lock and rotates the keys from now on", timeout=5), b.stderr())
        before = set(H.jwks_kids(b.get(H.JWKS)[2]))
        self.assertTrue(H.wait_until(lambda: set(H.jwks_kids(b.get(H.JWKS)[2])) - before, 15),
                        "b made a key: %s" % b.stderr())


if __name__ == "__main__":
    unittest.main()
