# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of --upstream: mirroring an API server's documents.

The upstream is a stand-in kube-apiserver (apiserver_standin.py): TLS with
a private CA made for each test, a bearer token compared on every request,
documents served from files the tests rewrite (built by the harness from
openssl's DER, independently of the server), ETags and 304s, a max-age,
and failures switched on and off. The server reads it every second
(--upstream-refresh-interval 1s).

What must hold:
  - until the first good read both documents answer 503 with Retry-After
    and /readyz is 503, key files or not; then both documents are the
    upstream's bytes exactly (kids and order kept, kids of any form);
  - a rotation upstream is followed within two refresh intervals;
  - the token file is read again for every request: a replaced token is
    the one used;
  - the upstream down, 401, 500, garbage and an empty key set each leave
    the last good bytes served (same ETag), with /readyz ready until
    --upstream-max-staleness passes; requests are conditional (304);
  - an upstream naming another issuer is never published, is logged once
    per issuer it names, and makes /readyz 503 and the mismatch gauge 1;
  - a key the upstream dropped stays published for --key-retention, across
    a restart; key files and the upstream are published together;
  - a JWKS file (kubectl get --raw /openid/v1/jwks) is a key file, kids kept;
  - a FIFO put where the token or CA file was fails each read, naming the
    file, instead of blocking the mirror for good: reads go on, the last
    good bytes stay served, a regular file put back is read again, and
    SIGTERM exits at once.
"""

import json
import os
import re
import time
import unittest

import oidc_harness as H
from apiserver_standin import StandInAPIServer, jwks_with_kids

H.ensure_system_modules("prometheus_client", "jwt", "cryptography", "botocore")

ISSUER = "https://oidc.example.com/clusters/c1"
REFRESH = 1.0  # --upstream-refresh-interval, seconds
# How long a test waits for the mirror to follow a change upstream. It
# follows within two refresh intervals on an idle machine, but the suite
# runs many tests at a time beside other work: this bounds the wait for the
# event, it is not a timing requirement (those are benchmarks' business).
FOLLOW = 30.0  # stretched by SLOW in wait_until


def reads(samples, result):
    return H.metric(samples, "oidc_upstream_fetches_total", result=result) or 0


class MirrorBase(H.SanitizerCheck, H.ServerTestCase):

    def setUp(self):
        super().setUp()
        problem = H.modules_problem("prometheus_client")
        if problem:
            self.fail(problem)
        self.api = StandInAPIServer(os.path.join(self.tmp, "apiserver"), tokens=("token-one",))
        self.api.__enter__()
        self.addCleanup(self.api.stop)
        self.token = os.path.join(self.tmp, "token")
        H.atomic_write(self.token, b"token-one\n")
        self.a, self.b = self.keys.rsa(), self.keys.ec()

    def args(self, *extra, upstream=None):
        return ["--service-account-issuer", ISSUER, "--upstream", upstream or self.api.url,
                "--upstream-ca-file", self.api.ca_file, "--upstream-token-file", self.token,
                "--upstream-refresh-interval", "%ds" % REFRESH, *extra]

    def start(self, *extra, ready=True):
        srv = self.start_server(self.args(*extra))
        if ready:
            self.wait_ready(srv)
        return srv

    def wait_ready(self, srv, timeout=FOLLOW):
        """Until /readyz is 200; then, as every worker thread takes the
        published set from its own queue, until the JWKS is served."""
        ok = H.wait_until(lambda: H.admin_get(srv.admin_port, "/readyz")[0] == 200, timeout)
        self.assertTrue(ok, "not ready: %r\n%s" % (H.admin_get(srv.admin_port, "/readyz"), srv.stderr()[-3000:]))
        self.assertTrue(H.wait_until(lambda: srv.get(H.JWKS)[0] == 200, 1), "ready, but the JWKS is not served")
        time.sleep(H.PUBLISH_SETTLE)

    def good_reads(self, srv):
        samples = H.scrape_metrics(srv.admin_port)
        return reads(samples, "ok") + reads(samples, "not_modified")

    def readyz(self, srv):
        st, h, body = H.admin_get(srv.admin_port, "/readyz")
        return st, body.decode()

    def wait_jwks(self, srv, body, timeout=FOLLOW):
        last = [None]

        def check():
            last[0] = srv.get(H.JWKS)
            return last[0][0] == 200 and last[0][2] == body
        ok = H.wait_until(check, timeout)
        self.assertTrue(ok, "JWKS not %r within %.1fs: %r\n%s" % (body, timeout * H.SLOW, last[0],
                                                                    srv.stderr()[-3000:]))
        time.sleep(H.PUBLISH_SETTLE)
        return last[0]

    def assert_mirrored(self, srv):
        """Both documents are exactly the stand-in's bytes, served as ours."""
        for path in (H.DISCOVERY, H.JWKS):
            st, h, body = srv.get(path)
            self.assertEqual(st, 200, body)
            self.assertEqual(body, self.api.document(path), path)
            self.assertEqual(H.one(h, "cache-control"), "public, max-age=3600")
        return srv.get(H.JWKS)


class TestBeforeAndAfterTheFirstRead(MirrorBase):

    def test_503_until_the_first_good_read_then_the_upstreams_bytes(self):
        self.api.set_documents(ISSUER, [self.a, self.b])
        self.api.set_mode("500")
        srv = self.start(ready=False)
        self.assertEqual(H.wait_for_log(srv, r"reading --upstream failed \(status\)", timeout=FOLLOW), 1)
        for path in (H.DISCOVERY, H.JWKS):
            for method in ("GET", "HEAD"):
                st, h, body = srv.request(method, path)
                self.assertEqual(st, 503, (path, method))
                self.assertEqual(H.one(h, "retry-after"), "1", "Retry-After: the refresh interval")
                self.assertEqual(H.one(h, "cache-control"), "no-store", "a 503 is never cached")
                self.assertEqual(body, b'{"error":"no keys are published yet"}' if method == "GET" else b"")
        st, why = self.readyz(srv)
        self.assertEqual(st, 503)
        self.assertIn("no good answer from the --upstream " + self.api.url, why)
        self.assertIn("HTTP 500", why, "the reason says why")
        self.assertEqual(H.count_log(srv, r"reading --upstream failed \(status\)"), 1,
                         "a failure that repeats is logged once")
        self.api.set_mode("ok")
        self.wait_ready(srv)
        self.assert_mirrored(srv)
        # byte for byte, and as kube-apiserver's are (an independent build)
        st, h, body = srv.get(H.DISCOVERY)
        self.assertEqual(body, H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER), ["RS256", "ES256"]))
        self.assertEqual(srv.get(H.JWKS)[2], H.expected_jwks([self.a, self.b]))
        # the base URL's own paths were read, with the token, never the advertised jwks_uri
        self.assertEqual({r.path for r in self.api.seen()}, {H.DISCOVERY, H.JWKS})
        self.assertEqual({r.token for r in self.api.seen()}, {"token-one"})
        samples = H.scrape_metrics(srv.admin_port)
        self.assertGreaterEqual(reads(samples, "status"), 1)
        self.assertGreaterEqual(reads(samples, "ok"), 1)
        self.assertEqual(H.metric(samples, "oidc_upstream_issuer_mismatch"), 0)
        self.assertGreater(H.metric(samples, "oidc_upstream_last_success_timestamp_seconds"), time.time() - 30)
        self.assertLessEqual(H.metric(samples, "oidc_upstream_data_age_seconds"), 5)
        self.stop_ok(srv)

    def test_key_files_and_upstream_published_together_after_the_first_read(self):
        c = self.keys.ec("P-384")
        self.api.set_documents(ISSUER, [self.a])
        self.api.set_mode("down")
        srv = self.start("--service-account-key-file", c.pub, ready=False)
        self.assertEqual(srv.get(H.JWKS)[0], 503, "the files alone are not published: the set would be short")
        self.assertEqual(self.readyz(srv)[0], 503)
        self.api.set_mode("ok")
        self.wait_ready(srv)
        self.wait_jwks(srv, H.expected_jwks([c, self.a]))
        self.assertEqual(srv.get(H.DISCOVERY)[2],
                         H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER), ["ES384", "RS256"]))

    def test_kids_not_of_kubes_form_are_kept_and_verify(self):
        import jwt
        kids = ["external-signer:rsa/2024-06", "k2"]
        jwks = jwks_with_kids([self.a, self.b], kids)
        self.api.set_documents(ISSUER, [self.a, self.b], jwks=jwks)
        self.api.set_mode("down")
        srv = H.start_review_server(self, self.args(), self.a.priv)
        # the caller's bearer token is signed by a, found by the upstream's kid for a
        srv.review_bearer = jwt.encode(
            H.kube_claims(ISSUER, [H.REVIEW_CALLER_AUDIENCE], namespace=H.REVIEW_CALLER_NS, sa=H.REVIEW_CALLER_SA),
            H.read_bytes(self.a.priv), algorithm="RS256", headers={"kid": kids[0]})
        # before the first read, TokenReview says neither "unauthorized" nor "not authenticated": it cannot know yet
        token = jwt.encode(H.kube_claims(ISSUER, [ISSUER]), H.read_bytes(self.a.priv), algorithm="RS256",
                           headers={"kid": kids[0]})
        st, answer = H.review(srv, token)
        self.assertEqual((st, answer.get("reason")), (503, "ServiceUnavailable"), answer)
        self.api.set_mode("ok")
        self.wait_ready(srv)
        st, h, body = self.wait_jwks(srv, jwks)
        self.assertEqual(H.jwks_kids(body), kids)
        # our own verifier finds the key by that kid
        st, answer = H.review(srv, token)
        self.assertEqual((st, answer["status"].get("authenticated")), (201, True), answer)
        # a relying party nobody here wrote finds and verifies by that kid
        claims = {"iss": ISSUER, "aud": "vault", "sub": "system:serviceaccount:ns:sa",
                  "iat": int(time.time()), "exp": int(time.time()) + 600}
        for key, kid in zip((self.a, self.b), kids):
            token = jwt.encode(claims, H.read_bytes(key.priv), algorithm=key.alg, headers={"kid": kid})
            signing = jwt.PyJWKClient(srv.url(H.JWKS), cache_keys=False).get_signing_key_from_jwt(token)
            self.assertEqual(jwt.decode(token, signing.key, algorithms=[key.alg], audience="vault",
                                        issuer=ISSUER)["sub"], claims["sub"])


class TestFollowing(MirrorBase):

    def test_rotation_followed(self):
        c = self.keys.ec("P-521")
        self.api.set_documents(ISSUER, [self.a])
        srv = self.start()
        self.assert_mirrored(srv)
        for keys in ([self.a, c], [c]):
            self.api.set_documents(ISSUER, keys)
            self.wait_jwks(srv, H.expected_jwks(keys))
            self.assert_mirrored(srv)
        self.assertEqual(H.count_log(srv, r"--upstream \S+ changed its keys"), 2)

    def test_conditional_reads_and_max_age(self):
        self.api.set_documents(ISSUER, [self.a])
        self.api.max_age = 1
        srv = self.start("--upstream-refresh-interval", "1h", "--upstream-max-staleness", "2h")
        since = self.api.count()
        # max-age 1s, not the hour asked for: more reads come, conditional ones
        self.assertTrue(H.wait_until(lambda: len(self.api.seen(since, path=H.JWKS, status=304)) >= 2, 5),
                        self.api.seen(since))
        for r in self.api.seen(since):
            self.assertIsNotNone(r.if_none_match, r)
        H.scrape_until(srv.admin_port, lambda samples: reads(samples, "not_modified") >= 2)
        self.assertGreaterEqual(reads(H.scrape_metrics(srv.admin_port), "not_modified"), 2)

    def test_replaced_token_file_is_used(self):
        self.api.set_documents(ISSUER, [self.a])
        srv = self.start()
        self.api.set_tokens("token-one", "token-two")
        H.atomic_write(self.token, b"token-two\n")  # as the kubelet replaces a projected token
        since = self.api.count()
        self.assertTrue(H.wait_until(lambda: self.api.seen(since, token="token-two"), FOLLOW))
        self.api.set_tokens("token-two")  # the old token is no longer accepted
        self.api.set_documents(ISSUER, [self.b])
        self.wait_jwks(srv, H.expected_jwks([self.b]))
        self.assertEqual(self.api.seen(since, status=401), [], "no request after the switch was refused")
        self.assertEqual(self.readyz(srv)[0], 200)


class TestFailures(MirrorBase):

    def test_every_failure_keeps_the_last_good_bytes(self):
        self.api.set_documents(ISSUER, [self.a, self.b])
        srv = self.start("--upstream-max-staleness", "1h")
        _, h, good = self.assert_mirrored(srv)
        etag = H.one(h, "etag")
        good_discovery = srv.get(H.DISCOVERY)[2]
        for mode, result in (("down", "connect"), ("401", "unauthorized"), ("500", "status"),
                             ("garbage", "malformed"), ("empty", "malformed")):
            with self.subTest(mode=mode):
                before = reads(H.scrape_metrics(srv.admin_port), result)
                self.api.set_mode(mode)
                # what a good read would bring, if one happened
                self.api.set_documents(ISSUER, [self.b])
                self.assertTrue(H.wait_until(
                    lambda: reads(H.scrape_metrics(srv.admin_port), result) >= before + 2, 3 * FOLLOW),
                    "two failed reads (%s) not counted:\n%s" % (result, srv.stderr()[-2000:]))
                st, h, body = srv.get(H.JWKS)
                self.assertEqual((st, body, H.one(h, "etag")), (200, good, etag))
                self.assertEqual(srv.get(H.DISCOVERY)[2], good_discovery)
                self.assertEqual(self.readyz(srv)[0], 200, "within --upstream-max-staleness")
                good_reads = self.good_reads(srv)
                self.api.set_documents(ISSUER, [self.a, self.b])
                self.api.set_mode("ok")
                self.assertTrue(H.wait_until(lambda: self.good_reads(srv) > good_reads, FOLLOW))
        self.assertRegex(srv.stderr(), r"reading --upstream failed \(malformed\): \S+/openid/v1/jwks: JWKS has no "
                                       r"usable RSA or ECDSA signing key; the last good key set stays published")
        self.stop_ok(srv)

    def test_stale_upstream_makes_readyz_503_but_keeps_serving(self):
        self.api.set_documents(ISSUER, [self.a])
        srv = self.start("--upstream-max-staleness", "2s")
        good = self.assert_mirrored(srv)[2]
        self.api.set_mode("down")
        self.assertTrue(H.wait_until(lambda: self.readyz(srv)[0] == 503, 6), self.readyz(srv))
        st, why = self.readyz(srv)
        self.assertRegex(why, r"the last good answer from the --upstream \S+ is \d+s old, more than "
                              r"--upstream-max-staleness \(2s\): GET \S+: ")
        self.assertEqual(srv.get(H.JWKS)[2], good, "still served")
        self.api.set_mode("ok")
        self.wait_ready(srv)
        self.assertEqual(H.count_log(srv, r"--upstream \S+ answers again"), 1)

    def test_another_issuer_is_never_published(self):
        other = "https://kubernetes.default.svc.cluster.local"
        self.api.set_documents(other, [self.a])
        srv = self.start(ready=False)
        self.assertTrue(H.wait_until(lambda: reads(H.scrape_metrics(srv.admin_port), "issuer_mismatch") >= 3,
                                     3 * FOLLOW))
        self.assertEqual(srv.get(H.JWKS)[0], 503)
        st, why = self.readyz(srv)
        self.assertEqual(st, 503)
        self.assertIn("names another issuer", why)
        self.assertEqual(H.metric(H.scrape_metrics(srv.admin_port), "oidc_upstream_issuer_mismatch"), 1)
        pattern = re.escape('its issuer "%s" is not --service-account-issuer "%s"' % (other, ISSUER))
        self.assertEqual(H.count_log(srv, pattern), 1, "logged once, however many reads")
        self.assertEqual(self.api.seen(path=H.JWKS), [], "its JWKS is not even read")
        # it matches: published; then it names another again: the last good set stays
        self.api.set_documents(ISSUER, [self.a])
        self.wait_ready(srv)
        good = self.assert_mirrored(srv)[2]
        self.api.set_documents(other + "/", [self.b])
        self.assertTrue(H.wait_until(lambda: self.readyz(srv)[0] == 503, FOLLOW))
        self.assertEqual(srv.get(H.JWKS)[2], good)
        self.assertEqual(H.count_log(srv, re.escape('its issuer "%s/"' % other)), 1)
        self.assertEqual(H.metric(H.scrape_metrics(srv.admin_port), "oidc_upstream_issuer_mismatch"), 1)


class TestStatusPage(MirrorBase):
    """The admin listener's page at / shows the upstream's freshness, read
    from what the mirror keeps (the same values as /metrics and /readyz)."""

    def upstream_rows(self, srv):
        st, h, body = H.admin_get(srv.admin_port, "/")
        self.assertEqual(st, 200, body)
        return H.html_rows(H.html_tables(body.decode()), "upstream")

    def wait_rows(self, srv, check, timeout=FOLLOW):
        last = [None]

        def ok():
            last[0] = self.upstream_rows(srv)
            return check(last[0])
        self.assertTrue(H.wait_until(ok, timeout, interval=0.2), "%r\n%s" % (last[0], srv.stderr()[-3000:]))
        return last[0]

    def test_before_and_after_the_first_read_then_a_failure(self):
        self.api.set_documents(ISSUER, [self.a])
        self.api.set_mode("500")
        srv = self.start("--upstream-max-staleness", "1h", ready=False)
        rows = self.wait_rows(srv, lambda r: r.get("last read result") == "status")
        self.assertEqual(rows["url"], self.api.url)
        self.assertEqual(rows["documents"], "unavailable: both answer 503 until the upstream's first good answer")
        self.assertEqual((rows["last good read"], rows["age"]), ("-", "-"), "never read well")
        self.assertRegex(rows["last read"], H.RFC3339)
        self.assertRegex(rows["last error"], r"^GET %s\S+: HTTP 500" % re.escape(self.api.url))
        self.assertGreaterEqual(int(rows["failed reads since the last good one"]), 1)
        self.assertEqual(rows["issuer"], "-", "no answer named an issuer yet")
        self.assertNotIn("the upstream's issuer", rows)

        self.api.set_mode("ok")
        self.wait_ready(srv)
        rows = self.wait_rows(srv, lambda r: r.get("documents") == "served")
        self.assertIn(rows["last read result"], ("ok", "not_modified"))
        self.assertEqual(rows["last error"], "-")
        self.assertEqual(rows["failed reads since the last good one"], "0")
        self.assertEqual(rows["issuer"], "matches --service-account-issuer")
        last_good = H.parse_rfc3339(rows["last good read"])
        self.assertLessEqual(abs(last_good - time.time()), 5 * H.SLOW)
        self.assertRegex(rows["age"], r"^\d+s$")
        self.assertLessEqual(int(rows["age"][:-1]), 5 * H.SLOW)
        # the same value /metrics shows (the reads go on, every second)
        metric = H.metric(H.scrape_metrics(srv.admin_port), "oidc_upstream_last_success_timestamp_seconds")
        self.assertLessEqual(abs(metric - last_good), 3 * H.SLOW)

        # a failure after good reads: the last good read stays, its age grows
        self.api.set_mode("401")
        rows = self.wait_rows(srv, lambda r: r.get("last read result") == "unauthorized")
        self.assertEqual(rows["documents"], "served", "the last good set stays")
        self.assertRegex(rows["last error"], r"HTTP 401")
        self.assertRegex(rows["last good read"], H.RFC3339)
        self.stop_ok(srv)

    def test_another_issuer_shows_both(self):
        other = "https://kubernetes.default.svc.cluster.local/<b>x</b>"
        self.api.set_documents(ISSUER, [self.a])
        self.api.set_discovery_bytes(json.dumps({"issuer": other, "jwks_uri": other + H.JWKS}).encode())
        srv = self.start(ready=False)
        rows = self.wait_rows(srv, lambda r: r.get("last read result") == "issuer_mismatch")
        self.assertEqual(rows["issuer"], "mismatch: what it answers is not published")
        self.assertEqual(rows["the upstream's issuer"], other)
        self.assertEqual(rows["--service-account-issuer"], ISSUER)
        self.assertEqual(rows["documents"], "unavailable: both answer 503 until the upstream's first good answer")
        body = H.admin_get(srv.admin_port, "/")[2].decode()
        self.assertIn("https://kubernetes.default.svc.cluster.local/&lt;b&gt;x&lt;/b&gt;", body, "escaped")
        self.assertNotIn("<b>x", body)
        # it names ours again: the mismatch rows go
        self.api.set_documents(ISSUER, [self.a])
        rows = self.wait_rows(srv, lambda r: r.get("issuer") == "matches --service-account-issuer")
        self.assertNotIn("the upstream's issuer", rows)


class TestRetention(MirrorBase):

    def test_a_key_the_upstream_dropped_stays_for_the_retention(self):
        state = os.path.join(self.tmp, "state")
        args = ("--key-retention", "1h", "--state-dir", state)
        self.api.set_documents(ISSUER, [self.a, self.b])
        srv = self.start(*args)
        self.assert_mirrored(srv)
        self.api.set_documents(ISSUER, [self.b])
        self.wait_jwks(srv, H.expected_jwks([self.b, self.a]))
        self.assertRegex(srv.stderr(), r"key kid=%s left the inputs; retained" % re.escape(self.a.kid))
        self.stop_ok(srv)
        # a restart still publishes it, once the upstream has answered
        srv = self.start(*args)
        self.wait_jwks(srv, H.expected_jwks([self.b, self.a]))


class TestPublishTo(MirrorBase):
    """--upstream with --publish-to (a bucket, through the S3 stand-in of
    test_bucket_s3.py): nothing is pushed before the API server's first
    answer, since empty documents would overwrite good ones; then its bytes."""

    def test_nothing_pushed_before_the_first_read(self):
        from s3_standin import S3Standin
        s3 = S3Standin("AKIDEXAMPLE", "secret", region="eu-west-1", buckets=["oidc"]).start()
        self.addCleanup(s3.stop)
        self.api.set_documents(ISSUER, [self.a])
        self.api.set_mode("down")
        os.environ.update(AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="secret")
        try:
            srv = self.start("--publish-to", "s3://oidc/c1", "--s3-endpoint", s3.endpoint,
                             "--s3-region", "eu-west-1", "--publish-check-interval", "1s", ready=False)
        finally:
            for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
                os.environ.pop(k)
        H.wait_until(lambda: reads(H.scrape_metrics(srv.admin_port), "connect") >= 2, 3 * FOLLOW)
        time.sleep(1.0 * H.SLOW)  # time enough for a push, were one to happen
        self.assertIsNone(s3.get("oidc", "c1" + H.JWKS), "pushed before the API server answered")
        self.assertIsNone(s3.get("oidc", "c1" + H.DISCOVERY))
        self.api.set_mode("ok")
        self.wait_ready(srv)
        # the JWKS is written first, the discovery document after it
        pushed = lambda path: (s3.get("oidc", "c1" + path) or {}).get("body") == self.api.document(path)
        ok = H.wait_until(lambda: pushed(H.JWKS) and pushed(H.DISCOVERY), 10 * H.SLOW)
        self.assertTrue(ok, srv.stderr()[-3000:])


class TestJWKSFile(MirrorBase):

    def test_jwks_file_as_a_key_file_keeps_its_kids(self):
        jwks = jwks_with_kids([self.b, self.a], ["signer-b", None])
        path = os.path.join(self.tmp, "jwks.json")
        H.atomic_write(path, jwks)
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", path])
        st, h, body = srv.get(H.JWKS)
        self.assertEqual((st, body), (200, jwks), "the bytes of `kubectl get --raw /openid/v1/jwks`")


class TestNotARegularFile(MirrorBase):
    """The token and CA files are read without blocking and only when they
    are regular files: before, open(2) of a FIFO there waited for a writer,
    so the mirror never read again and SIGTERM waited for it."""

    def setUp(self):
        super().setUp()
        self.ca = os.path.join(self.tmp, "upstream-ca.crt")
        H.atomic_write(self.ca, H.read_bytes(self.api.ca_file))

    def args(self, *extra, upstream=None):
        a = super().args(*extra, upstream=upstream)
        a[a.index("--upstream-ca-file") + 1] = self.ca
        return a

    def replace_with_fifo(self, path):
        os.unlink(path)
        os.mkfifo(path, 0o600)

    def assert_reads_fail_naming(self, srv, path):
        """Two more reads fail as "request" errors naming path as a FIFO,
        and the last good bytes stay served."""
        before = reads(H.scrape_metrics(srv.admin_port), "request")
        self.assertTrue(H.wait_until(
            lambda: reads(H.scrape_metrics(srv.admin_port), "request") >= before + 2, 3 * FOLLOW),
            "the mirror stopped reading:\n%s" % srv.stderr()[-2000:])
        self.assertRegex(srv.stderr(), r"reading --upstream failed \(request\): .*%s: cannot read: it is a FIFO, "
                                       r"not a regular file" % re.escape(path))
        self.assert_mirrored(srv)

    def test_fifo_as_token_file(self):
        self.api.set_documents(ISSUER, [self.a])
        srv = self.start("--upstream-max-staleness", "1h")
        self.replace_with_fifo(self.token)
        self.assert_reads_fail_naming(srv, self.token)
        os.unlink(self.token)
        H.atomic_write(self.token, b"token-one\n")
        self.api.set_documents(ISSUER, [self.b])
        self.wait_jwks(srv, H.expected_jwks([self.b]))
        self.replace_with_fifo(self.token)
        self.assert_reads_fail_naming(srv, self.token)
        self.stop_ok(srv)  # within STOP_TIMEOUT, with the FIFO still there

    def test_fifo_as_ca_file(self):
        self.api.set_documents(ISSUER, [self.a])
        srv = self.start("--upstream-max-staleness", "1h")
        self.replace_with_fifo(self.ca)
        self.assert_reads_fail_naming(srv, self.ca)
        self.assertRegex(srv.stderr(), r"cannot load CA certificates from %s: " % re.escape(self.ca))
        os.unlink(self.ca)
        H.atomic_write(self.ca, H.read_bytes(self.api.ca_file))
        self.api.set_documents(ISSUER, [self.b])
        self.wait_jwks(srv, H.expected_jwks([self.b]))
        self.replace_with_fifo(self.ca)
        self.assert_reads_fail_naming(srv, self.ca)
        self.stop_ok(srv)


if __name__ == "__main__":
    unittest.main(verbosity=2)
