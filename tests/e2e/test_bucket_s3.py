# SPDX-License-Identifier: Apache-2.0
"""End-to-end: publishing to S3 (`publish --to`, `serve --publish-to`, `keys
--publish-to`) against the S3 stand-in of s3_standin.py, which recomputes
every request's Signature V4 with botocore (the AWS SDK's signer) and
refuses a mismatch with 403, honours If-Match / If-None-Match with 412, and
keeps objects with their headers, metadata and ETags.

What it proves: the objects are byte for byte, and Content-Type and
Cache-Control for Content-Type and Cache-Control, what serve answers; a
wrong secret is refused and reported without stopping serving; a key added
to a watched directory reaches the bucket's JWKS within seconds, before the
discovery document changes; two serve processes with different key sets on
one bucket settle on the newer set; hand edits and deletions are repaired
and counted; keys shows what the bucket holds."""

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import time
import unittest

import oidc_harness as H
H.ensure_system_modules("botocore", "prometheus_client")
from oidc_harness import DISCOVERY, JWKS, one  # noqa: E402
from s3_standin import S3Standin  # noqa: E402

ISSUER = "https://oidc.example.com/cluster-1"
BUCKET = "oidc"
PREFIX = "cluster-1"
KEY_ID, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
OBJECTS = {PREFIX + JWKS: JWKS, PREFIX + DISCOVERY: DISCOVERY}
WAIT = 10.0 * H.SLOW


@contextlib.contextmanager
def environment(**values):
    """Sets (or with None removes) environment variables while a process
    is started; the child keeps what it got."""
    old = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


CREDENTIALS = {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": None}


class BucketS3(H.ServerTestCase):

    def setUp(self):
        super().setUp()
        self.s3 = S3Standin(KEY_ID, SECRET, region="eu-west-1", buckets=[BUCKET]).start()
        self.addCleanup(self.s3.stop)
        self.rsa = self.keys.rsa()
        self.ec = self.keys.ec("P-256")

    def target_args(self, prefix=PREFIX):
        return ["--s3-endpoint", self.s3.endpoint, "--s3-region", "eu-west-1"], "s3://%s/%s" % (BUCKET, prefix)

    def doc_args(self, *key_files):
        args = ["--service-account-issuer", ISSUER]
        for k in key_files:
            args += ["--service-account-key-file", k]
        return args

    def keys_cmd(self, key_files, *extra):
        """keys --publish-to the stand-in's target: (rc, stdout, stderr)."""
        store, url = self.target_args()
        with environment(**CREDENTIALS):
            return H.run_once(["keys", "--publish-to", url, *store, *self.doc_args(*key_files), *extra])

    def publish(self, key_files, env=None, prefix=PREFIX):
        store, url = self.target_args(prefix)
        with environment(**(env or CREDENTIALS)):
            return H.run_once(["publish", "--to", url, *store, *self.doc_args(*key_files)], timeout=30)

    def serve(self, key_files, extra=(), env=None):
        store, url = self.target_args()
        with environment(**(env or CREDENTIALS)):
            return self.start_server(self.doc_args(*key_files) + ["--publish-to", url, *store,
                                                                  "--publish-check-interval", "1s", *extra])

    def body(self, key):
        o = self.s3.get(BUCKET, key)
        return o["body"] if o else None

    def assert_same_as_serve(self, srv):
        """Each object in the bucket is what srv answers: bytes, Content-Type
        and Cache-Control."""
        for key, path in OBJECTS.items():
            st, h, body = srv.get(path)
            self.assertEqual(st, 200)
            o = self.s3.get(BUCKET, key)
            self.assertIsNotNone(o, key)
            self.assertEqual(o["body"], body, key)
            self.assertEqual(o["content_type"], one(h, "content-type"), key)
            self.assertEqual(o["cache_control"], one(h, "cache-control"), key)

    def wait_for_push(self, srv):
        """Waits until srv has recorded a push that wrote: from then on,
        what it writes is a repair."""
        H.scrape_until(srv.admin_port, lambda s: (H.metric(s, "oidc_publish_attempts_total", target="s3://oidc/"
                                                           "cluster-1", result="written") or 0) >= 1, WAIT)

    def wait_for_bucket(self, srv, what):
        ok = H.wait_until(lambda: all(self.body(k) == srv.get(p)[2] for k, p in OBJECTS.items()), WAIT)
        self.assertTrue(ok, "the bucket does not hold %s; log:\n%s" % (what, srv.stderr()))

    # ------------------------------------------------------------------

    def test_publish_once_matches_serve_and_is_signed(self):
        rc, out, err = self.publish([self.rsa.pub, self.ec.priv])
        self.assertEqual(rc, 0, err)
        self.assertIn("s3://oidc/cluster-1 openid/v1/jwks: written (missing)", out)
        self.assertIn("s3://oidc/cluster-1 .well-known/openid-configuration: written (missing)", out)
        self.assertIn("--s3-endpoint \"%s\": plain http" % self.s3.endpoint, err, "the http endpoint is warned about")
        self.assertEqual(self.s3.refusals(403), [], "a request botocore did not sign the same way")
        # JWKS first, each created only if absent, each read back
        self.assertEqual([(m, p) for m, p, _ in self.s3.log], [
            ("GET", "/oidc/cluster-1/openid/v1/jwks"), ("PUT", "/oidc/cluster-1/openid/v1/jwks"),
            ("GET", "/oidc/cluster-1/openid/v1/jwks"), ("GET", "/oidc/cluster-1/.well-known/openid-configuration"),
            ("PUT", "/oidc/cluster-1/.well-known/openid-configuration"),
            ("GET", "/oidc/cluster-1/.well-known/openid-configuration")])
        jwks = self.s3.get(BUCKET, PREFIX + JWKS)
        self.assertEqual(jwks["meta"]["oidc-sha256"], hashlib.sha256(jwks["body"]).hexdigest())
        self.assertTrue(re.fullmatch(r"\d{13}", jwks["meta"]["oidc-generation"]), jwks["meta"])
        self.assertEqual(jwks["body"], H.expected_jwks([self.rsa, self.ec]), "independently of serve too")
        srv = self.start_server(self.doc_args(self.rsa.pub, self.ec.priv))
        self.assert_same_as_serve(srv)
        # again: nothing to write
        writes = len(self.s3.writes())
        rc, out, err = self.publish([self.rsa.pub, self.ec.priv])
        self.assertEqual(rc, 0, err)
        self.assertIn("s3://oidc/cluster-1 openid/v1/jwks: unchanged", out)
        self.assertEqual(len(self.s3.writes()), writes)
        # keys reads what the bucket holds, and says what differs
        self.s3.put(BUCKET, PREFIX + JWKS, b'{"keys":[]}', "application/json", "public, max-age=3600",
                    jwks["meta"])
        self.s3.delete(BUCKET, PREFIX + DISCOVERY)
        rc, out, err = self.keys_cmd([self.rsa.pub, self.ec.priv], "--output", "json")
        self.assertEqual(rc, 0, err)
        published = json.loads(out)["published"]
        self.assertEqual([(p["target"], p["object"], p["state"], p["why"]) for p in published],
                         [("s3://oidc/cluster-1", "openid/v1/jwks", "differs", "changed outside oidc-discovery"),
                          ("s3://oidc/cluster-1", ".well-known/openid-configuration", "missing", None)])
        self.assertEqual(len(self.s3.writes()), writes, "keys writes nothing")
        # a session token travels signed
        self.s3.token = "session-token-1"
        rc, out, err = self.publish([self.rsa.pub], env=dict(CREDENTIALS, AWS_SESSION_TOKEN="session-token-1"))
        self.assertEqual(rc, 0, err)
        self.assertIn("openid/v1/jwks: written (changed outside oidc-discovery)", out)
        rc, out, err = self.publish([self.rsa.pub, self.ec.priv],
                                    env=dict(CREDENTIALS, AWS_SESSION_TOKEN="session-token-1"))
        self.assertEqual(rc, 0, err)
        self.assertIn("openid/v1/jwks: written (older)", out)
        rc, out, err = self.publish([self.rsa.pub], env=dict(CREDENTIALS, AWS_SESSION_TOKEN="other"))
        self.assertEqual(rc, 1)
        self.assertIn("HTTP 403 Forbidden (InvalidToken)", err)

    def test_publisher_needs_only_get_and_put(self):
        """Without s3:ListBucket a missing object is a 403 AccessDenied, not a
        404: it is created all the same, and a drift check recreates it."""
        self.s3.list_bucket = False
        rc, out, err = self.publish([self.rsa.pub])
        self.assertEqual(rc, 0, err)
        self.assertIn("openid/v1/jwks: written (missing)", out)
        self.assertEqual(len(self.s3.refusals(403)), 2, "one refused GET per object, no other refusal")
        self.s3.delete(BUCKET, PREFIX + DISCOVERY)
        rc, out, err = self.publish([self.rsa.pub])
        self.assertEqual(rc, 0, err)
        self.assertIn(".well-known/openid-configuration: written (missing)", out)

    def test_serve_pushes_what_it_serves_with_other_headers(self):
        srv = self.serve([self.rsa.pub], ["--jwks-content-type", "application/json", "--max-age", "600"])
        self.wait_for_bucket(srv, "serve's documents")
        self.assert_same_as_serve(srv)
        self.assertEqual(self.s3.get(BUCKET, PREFIX + JWKS)["cache_control"], "public, max-age=600")
        rc, out, err = self.keys_cmd([self.rsa.pub], "--jwks-content-type", "application/json", "--max-age", "600")
        self.assertEqual(rc, 0, err)
        rows = [line.split() for line in out.splitlines() if line.startswith("s3://")]
        self.assertEqual([(r[1], r[-1]) for r in rows], [("openid/v1/jwks", "current"),
                                                       (".well-known/openid-configuration", "current")], out)
        # the admin listener's status page shows the target's last push
        header, *pushes = H.html_tables(H.admin_get(srv.admin_port, "/")[2].decode())["pushes"]
        self.assertEqual(header, ["target", "last push", "result", "last current", "drift repairs", "last error"])
        self.assertEqual([(p[0], p[5]) for p in pushes], [("s3://oidc/cluster-1", "-")], pushes)
        self.assertIn(pushes[0][2], ("written", "unchanged"), "a later drift check finds it unchanged")
        self.assertRegex(pushes[0][3], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.stop_ok(srv)

    def test_wrong_secret_is_refused_reported_and_serving_goes_on(self):
        bad = dict(CREDENTIALS, AWS_SECRET_ACCESS_KEY="not-the-secret")
        rc, out, err = self.publish([self.rsa.pub], env=bad)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("GET %s/oidc/cluster-1/openid/v1/jwks: HTTP 403 Forbidden (SignatureDoesNotMatch): check "
                      "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" % self.s3.endpoint, err)
        self.assertIn("openid/v1/jwks: failed", out)
        self.assertEqual(self.s3.writes(), [])
        srv = self.serve([self.rsa.pub], env=bad)
        self.assertTrue(H.wait_until(lambda: "SignatureDoesNotMatch" in srv.stderr(), WAIT), srv.stderr())
        self.assertRegex(srv.stderr(), r"warn  publishing to s3://oidc/cluster-1 failed: .*retrying in \d+s")
        st, _, body = H.admin_get(srv.admin_port, "/readyz")
        self.assertEqual(st, 200, body)
        self.assertEqual(srv.get(JWKS)[0], 200)
        samples = H.scrape_until(srv.admin_port, lambda s: (H.metric(
            s, "oidc_publish_attempts_total", target="s3://oidc/cluster-1", result="failed") or 0) >= 1)
        self.assertEqual(H.metric(samples, "oidc_publish_last_success_timestamp_seconds",
                                  target="s3://oidc/cluster-1"), 0)
        (push,) = H.html_tables(H.admin_get(srv.admin_port, "/")[2].decode())["pushes"][1:]
        self.assertEqual((push[0], push[2], push[3]), ("s3://oidc/cluster-1", "failed", "-"), push)
        self.assertIn("SignatureDoesNotMatch", push[5])
        self.assertEqual(self.s3.writes(), [])
        self.stop_ok(srv)
        # no credentials at all: serve does not start, and says what to set
        with environment(AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None):
            store, url = self.target_args()
            rc, out, err = H.run_once(self.doc_args(self.rsa.pub) + ["--publish-to", url, *store, "--listen",
                                                                      "127.0.0.1:0", "--admin-listen", "none"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--publish-to s3://oidc/cluster-1: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", err)
        self.assertNotIn("listening on", err)

    def test_store_down_does_not_block_serving(self):
        dead = H.free_port()
        with environment(**CREDENTIALS):
            srv = self.start_server(self.doc_args(self.rsa.pub) + [
                "--publish-to", "s3://oidc/x", "--s3-endpoint", "http://127.0.0.1:%d" % dead])
        self.assertTrue(H.wait_until(lambda: "cannot connect to 127.0.0.1:%d" % dead in srv.stderr(), WAIT),
                        srv.stderr())
        self.assertEqual(H.admin_get(srv.admin_port, "/readyz")[0], 200)
        self.assertEqual(srv.get(DISCOVERY)[0], 200)
        self.stop_ok(srv)

    def test_added_key_reaches_the_bucket_jwks_first(self):
        keydir = os.path.join(self.tmp, "keys")
        os.mkdir(keydir)
        shutil.copy(self.rsa.pub, os.path.join(keydir, "a.pub"))
        srv = self.serve([keydir])
        self.wait_for_bucket(srv, "the first key set")
        before = len(self.s3.log)
        shutil.copy(self.ec.pub, os.path.join(keydir, "b.pub"))  # an ES256 key: the discovery document changes too
        t0 = time.monotonic()
        self.assertTrue(H.wait_until(lambda: self.body(PREFIX + JWKS) == H.expected_jwks([self.rsa, self.ec]) or
                                     self.body(PREFIX + JWKS) == H.expected_jwks([self.ec, self.rsa]), WAIT),
                        srv.stderr())
        took = time.monotonic() - t0
        self.wait_for_bucket(srv, "the new key set")
        puts = [p for m, p, s in self.s3.log[before:] if m == "PUT" and s == 200]
        self.assertEqual(puts, ["/oidc/cluster-1/openid/v1/jwks", "/oidc/cluster-1/.well-known/openid-configuration"],
                         "the JWKS first, then the discovery document")
        self.assertIn(b'"ES256"', self.body(PREFIX + DISCOVERY))
        self.assertLess(took, 5.0 * H.SLOW, "the new key took %.1fs to reach the bucket" % took)
        self.stop_ok(srv)

    def test_two_replicas_settle_on_the_newer_set(self):
        a = self.serve([self.rsa.pub])
        self.wait_for_bucket(a, "replica A's set")
        b = self.serve([self.rsa.pub, self.ec.pub])
        self.wait_for_bucket(b, "replica B's newer set")
        self.assertTrue(H.wait_until(lambda: "holds a newer key set" in a.stderr(), WAIT), a.stderr())
        etags = {k: self.s3.get(BUCKET, k)["etag"] for k in OBJECTS}
        a.proc.send_signal(signal.SIGHUP)  # A reloads its (unchanged) files: still older
        # both keep checking every second; nobody writes any more
        time.sleep(3.0 * H.SLOW)
        self.assertEqual({k: self.s3.get(BUCKET, k)["etag"] for k in OBJECTS}, etags,
                         "A overwrote B's newer set:\n" + a.stderr())
        self.assert_same_as_serve(b)
        samples = H.scrape_metrics(a.admin_port)
        self.assertGreaterEqual(H.metric(samples, "oidc_publish_attempts_total", target="s3://oidc/cluster-1",
                                         result="yielded"), 2)
        self.assertGreater(H.metric(samples, "oidc_publish_last_success_timestamp_seconds",
                                    target="s3://oidc/cluster-1"), 0)
        self.assertEqual(len(re.findall("holds a newer key set", a.stderr())), 1, "logged once, not every check")
        self.stop_ok(a)
        self.stop_ok(b)

    def test_hand_edits_and_deletions_are_repaired(self):
        srv = self.serve([self.rsa.pub])
        self.wait_for_bucket(srv, "serve's documents")
        self.wait_for_push(srv)
        good = {k: self.s3.get(BUCKET, k) for k in OBJECTS}
        # an upload by hand that kept our metadata, and a lifecycle rule's deletion
        self.s3.put(BUCKET, PREFIX + JWKS, b'{"keys":[]}', "application/json", good[PREFIX + JWKS]["cache_control"],
                    good[PREFIX + JWKS]["meta"])
        self.s3.delete(BUCKET, PREFIX + DISCOVERY)
        self.wait_for_bucket(srv, "the repaired documents")
        self.assert_same_as_serve(srv)
        log = srv.stderr()
        self.assertIn("s3://oidc/cluster-1: openid/v1/jwks was changed outside oidc-discovery; repaired (drift)", log)
        self.assertIn("s3://oidc/cluster-1: .well-known/openid-configuration was missing; repaired (drift)", log)
        samples = H.scrape_until(srv.admin_port, lambda s: H.metric(
            s, "oidc_publish_drift_repairs_total", target="s3://oidc/cluster-1") == 2)
        self.assertEqual(H.metric(samples, "oidc_publish_drift_repairs_total", target="s3://oidc/cluster-1"), 2)
        self.stop_ok(srv)


if __name__ == "__main__":
    unittest.main()
