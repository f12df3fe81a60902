# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of --token-review-check-bound-objects: TokenReview
refuses, as kube-apiserver does, a token whose pod, secret, node or
service account is gone (or has another uid), looked up at the --upstream.

The API server is the stand-in (apiserver_standin.py): it serves the keys
the server mirrors, and the objects the test creates, deletes and recreates;
it counts requests and can hold its answers. Reviews are sent as Vault
sends them (POST, application/json, the reviewer's bearer token).

What must hold:
  - a pod-bound token is accepted while its pod lives (and while a
    graceful deletion's grace runs) and refused, in kube's words naming the
    pod, within the TTL plus a second of the pod's deletion; a pod
    recreated with a new uid is a uid mismatch;
  - a service account recreated with a new uid refuses its tokens;
  - a legacy token is refused once its Secret is deleted;
  - a node-bound token is refused once its node is deleted;
  - the API server down: reviews fail closed (api_unreachable, /readyz 503)
    once the TTL passes, and recover when it answers again;
  - 200 concurrent reviews of one pod make one lookup, and while it waits
    the event loop (one thread) still answers other reviews; a client that
    hangs up while its review waits, or a SIGTERM then, harms nothing;
  - lookups keep their connections to the API server alive;
  - /metrics counts refusals by reason, cache hits and misses, lookups;
    the status page shows the hit ratio since start.
"""

import json
import os
import socket
import threading
import time
import unittest

import oidc_harness as H
from apiserver_standin import StandInAPIServer

H.ensure_system_modules("prometheus_client", "jwt", "cryptography")

ISSUER = "https://oidc.example.com/clusters/c1"
TTL = 1  # --token-review-bound-object-cache-ttl, seconds
NS = "team-a"


class BoundBase(H.SanitizerCheck, H.ServerTestCase):

    def setUp(self):
        super().setUp()
        self.api = StandInAPIServer(os.path.join(self.tmp, "apiserver"), tokens=("token-one",))
        self.api.__enter__()
        self.addCleanup(self.api.stop)
        self.token_file = os.path.join(self.tmp, "token")
        H.atomic_write(self.token_file, b"token-one\n")
        self.key = self.keys.rsa()
        self.api.set_documents(ISSUER, [self.key])

    def start(self, *extra, ttl=TTL):
        args = ["--service-account-issuer", ISSUER, "--upstream", self.api.url,
                "--upstream-ca-file", self.api.ca_file, "--upstream-token-file", self.token_file,
                "--token-review-check-bound-objects", "--token-review-bound-object-cache-ttl", "%ds" % ttl,
                *extra]
        srv = H.start_review_server(self, args, self.key.priv)
        ok = H.wait_until(lambda: H.admin_get(srv.admin_port, "/readyz")[0] == 200, 10)
        self.assertTrue(ok, "not ready: %r\n%s" % (H.admin_get(srv.admin_port, "/readyz"), srv.stderr()[-3000:]))
        # every worker thread takes the mirrored set from its own queue
        self.assertTrue(H.wait_until(lambda: srv.get(H.JWKS)[0] == 200, 5))
        time.sleep(H.PUBLISH_SETTLE)
        return srv

    def token(self, sa_uid, sa="web", pod=None, node=None):
        return H.mint_token(self.key.priv, ISSUER, audiences=(ISSUER,), namespace=NS, sa=sa, sa_uid=sa_uid,
                            pod=pod, node=node)

    def review(self, srv, token):
        st, doc = H.review(srv, token)
        self.assertEqual(st, 201, doc)
        return doc["status"]

    def assert_accepted(self, srv, token):
        status = self.review(srv, token)
        self.assertTrue(status.get("authenticated"), status)
        return status

    def refused_within(self, srv, token, timeout):
        """Reviews token until refused (bounded); returns the status."""
        last = [None]

        def refused():
            last[0] = self.review(srv, token)
            return not last[0].get("authenticated")
        self.assertTrue(H.wait_until(refused, timeout * H.SLOW, interval=0.1),
                        "still accepted after %.1fs: %r" % (timeout, last[0]))
        return last[0]

    def metrics(self, srv):
        return H.scrape_metrics(srv.admin_port)

    def refusals(self, srv, reason):
        return H.metric(self.metrics(srv), "oidc_token_review_bound_refused_total", reason=reason) or 0


class TestObjectsGo(BoundBase):

    def test_pod_deleted_then_recreated_service_account_recreated_node_deleted(self):
        srv = self.start()
        # lookups reuse their thread's connection: a dozen pods' lookups, one
        # after the other, open at most one connection per lookup thread (4)
        fleet_sa = self.api.create("serviceaccounts", NS, "fleet")
        fleet = [self.token(fleet_sa, sa="fleet", pod=("fleet-%d" % i, self.api.create("pods", NS, "fleet-%d" % i)))
                 for i in range(12)]
        opened, asked = self.api.connections, self.api.count()
        for tok in fleet:
            self.assert_accepted(srv, tok)
        self.assertEqual(self.api.count() - asked, 13, self.api.seen(asked))
        self.assertLessEqual(self.api.connections - opened, 4)

        sa_uid = self.api.create("serviceaccounts", NS, "web")
        pod_uid = self.api.create("pods", NS, "web-0")
        tok = self.token(sa_uid, pod=("web-0", pod_uid))
        status = self.assert_accepted(srv, tok)
        self.assertEqual(status["user"]["username"], "system:serviceaccount:team-a:web")
        self.assertEqual(status["user"]["extra"]["authentication.kubernetes.io/pod-uid"], [pod_uid])
        self.assert_accepted(srv, tok)

        # the pod goes: refused within the TTL plus a second
        self.api.delete("pods", NS, "web-0")
        status = self.refused_within(srv, tok, TTL + 1)
        self.assertEqual(status["error"], "service account token has been invalidated: pod team-a/web-0 (uid %s) "
                                          "no longer exists" % pod_uid)
        self.assertEqual(status["user"], {})
        self.assertGreaterEqual(self.refusals(srv, "pod_deleted"), 1)
        # a pod of that name again, another uid: still not the token's pod
        new_pod = self.api.create("pods", NS, "web-0")
        status = self.refused_within(srv, tok, TTL + 1)
        self.assertTrue(H.wait_until(lambda: "does not match" in self.review(srv, tok).get("error", ""),
                                     (TTL + 1) * H.SLOW, interval=0.1))
        self.assertEqual(self.review(srv, tok)["error"],
                         "pod UID (%s) does not match service account pod ref claim (%s)" % (new_pod, pod_uid))

        # the service account recreated with a new uid
        tok = self.token(sa_uid, pod=("web-0", new_pod))
        self.assert_accepted(srv, tok)
        new_sa = self.api.create("serviceaccounts", NS, "web")
        status = self.refused_within(srv, tok, TTL + 1)
        self.assertEqual(status["error"], "service account UID (%s) does not match claim (%s)" % (new_sa, sa_uid))
        self.assertGreaterEqual(self.refusals(srv, "uid_mismatch"), 2)
        self.api.delete("serviceaccounts", NS, "web")
        self.assertEqual(self.refused_within(srv, self.token(new_sa), TTL + 1)["error"],
                         'serviceaccounts "web" not found')

        # a node-bound token whose node goes
        sa2 = self.api.create("serviceaccounts", NS, "agent")
        node_uid = self.api.create("nodes", None, "n1")
        tok = self.token(sa2, sa="agent", node=("n1", node_uid))
        self.assert_accepted(srv, tok)
        self.api.delete("nodes", None, "n1")
        status = self.refused_within(srv, tok, TTL + 1)
        self.assertEqual(status["error"], "service account token has been invalidated: node n1 (uid %s) no longer "
                                          "exists" % node_uid)
        self.assertGreaterEqual(self.refusals(srv, "node_deleted"), 1)

        # a pod being deleted: its token holds until the grace period ends
        # (the deletionTimestamp), plus kube-apiserver's minute of leeway
        sa3 = self.api.create("serviceaccounts", NS, "web")  # (deleted above; cached missing for the TTL)
        pod2 = self.api.create("pods", NS, "web-2")
        tok = self.token(sa3, pod=("web-2", pod2))
        self.assertTrue(H.wait_until(lambda: self.review(srv, tok).get("authenticated"), TTL + 1, interval=0.1))
        asked = self.api.object_requests("pods", NS, "web-2")
        self.api.mark_deleting("pods", NS, "web-2", time.time() + 30)
        # reviews until the cached answer expires and the pod is asked for again
        self.assertTrue(H.wait_until(lambda: self.review(srv, tok) and
                                     self.api.object_requests("pods", NS, "web-2") > asked, TTL + 1, interval=0.1))
        self.assert_accepted(srv, tok)
        self.api.mark_deleting("pods", NS, "web-2", time.time() - 120)
        self.assertEqual(self.refused_within(srv, tok, TTL + 1)["error"], "service account token has been "
                         "invalidated: pod team-a/web-2 (uid %s) is being deleted" % pod2)

        samples = self.metrics(srv)
        self.assertGreater(H.metric(samples, "oidc_token_review_bound_cache_hits_total"), 0)
        self.assertGreater(H.metric(samples, "oidc_token_review_bound_cache_misses_total"), 0)
        self.assertGreater(H.metric(samples, "oidc_token_review_bound_lookups_total", result="found"), 0)
        self.assertGreater(H.metric(samples, "oidc_token_review_bound_lookups_total", result="missing"), 0)
        self.assertGreater(H.metric(samples, "oidc_token_review_bound_lookup_duration_seconds_count"), 0)
        self.assertEqual(H.metric(samples, "oidc_token_review_bound_api_reachable"), 1)
        # the status page shows the hit ratio since start, from the same counters
        # (no review runs between the two reads)
        st, _, page = H.admin_get(srv.admin_port, "/")
        self.assertEqual(st, 200)
        hits = H.metric(samples, "oidc_token_review_bound_cache_hits_total")
        misses = H.metric(samples, "oidc_token_review_bound_cache_misses_total")
        page = page.decode() if isinstance(page, bytes) else page
        self.assertIn("<tr><th>bound-object cache hits</th><td>%d</td></tr>" % hits, page)
        self.assertIn("<tr><th>bound-object cache misses</th><td>%d</td></tr>" % misses, page)
        self.assertIn("<tr><th>bound-object cache hit ratio since start</th><td>%.4f</td></tr>"
                      % (hits / (hits + misses)), page)

    def test_legacy_token_whose_secret_is_deleted(self):
        import jwt
        srv = self.start("--accept-legacy-tokens")
        self.assertIn("TokenReview refuses one once its Secret is deleted", srv.stderr())
        self.assertIn("TokenReview looks up each token's service account, pod, secret or node at --upstream "
                      "https://127.0.0.1:%d, cached for 1s" % self.api.port, srv.stderr())
        sa_uid = self.api.create("serviceaccounts", NS, "web")
        claims = {"iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": NS,
                  "kubernetes.io/serviceaccount/secret.name": "web-token-x1",
                  "kubernetes.io/serviceaccount/service-account.name": "web",
                  "kubernetes.io/serviceaccount/service-account.uid": sa_uid,
                  "sub": "system:serviceaccount:%s:web" % NS}
        with open(self.key.priv, "rb") as f:
            tok = jwt.encode(claims, f.read(), algorithm="RS256", headers={"kid": self.key.kid})
        self.api.create("secrets", NS, "web-token-x1", data={"token": tok.encode()})
        self.assert_accepted(srv, tok)
        # another token in the secret: this one is no longer its copy
        self.api.create("secrets", NS, "web-token-x1", data={"token": b"another"})
        self.assertEqual(self.refused_within(srv, tok, TTL + 1)["error"], "token does not match server's copy")
        self.api.create("secrets", NS, "web-token-x1", data={"token": tok.encode()})
        self.assertTrue(H.wait_until(lambda: self.review(srv, tok).get("authenticated"), (TTL + 1) * H.SLOW, 0.1))
        self.api.delete("secrets", NS, "web-token-x1")
        status = self.refused_within(srv, tok, TTL + 1)
        self.assertEqual(status["error"], "token has been invalidated: secret team-a/web-token-x1 no longer exists")
        self.assertGreaterEqual(self.refusals(srv, "secret_deleted"), 1)
        self.assertGreaterEqual(self.refusals(srv, "token_mismatch"), 1)


class TestAPIServer(BoundBase):

    def test_down_fails_closed_then_recovers(self):
        srv = self.start()
        sa_uid = self.api.create("serviceaccounts", NS, "web")
        pod_uid = self.api.create("pods", NS, "web-0")
        tok = self.token(sa_uid, pod=("web-0", pod_uid))
        self.assert_accepted(srv, tok)
        self.api.set_mode("down")
        status = self.refused_within(srv, tok, TTL + 1)
        # whichever of the two cached answers expired first is asked for first
        self.assertRegex(status["error"], r"^cannot confirm that (serviceaccount team-a/web|pod team-a/web-0) still "
                                          r"exists: the API server could not be reached; refused until the API server "
                                          r"answers$")
        self.assertGreaterEqual(self.refusals(srv, "api_unreachable"), 1)
        st, h, body = H.admin_get(srv.admin_port, "/readyz")
        self.assertEqual(st, 503, body)
        self.assertIn(b"--token-review-check-bound-objects: the API server could not be reached", body)
        self.assertEqual(H.metric(self.metrics(srv), "oidc_token_review_bound_api_reachable"), 0)
        # back: readiness returns without any review (the probe), reviews pass
        self.api.set_mode("ok")
        self.assertTrue(H.wait_until(lambda: H.admin_get(srv.admin_port, "/readyz")[0] == 200, 5 * H.SLOW),
                        H.admin_get(srv.admin_port, "/readyz"))
        self.assertTrue(H.wait_until(lambda: self.review(srv, tok).get("authenticated"), (TTL + 2) * H.SLOW, 0.1))

    def test_stopped_while_a_review_waits(self):
        """SIGTERM while a review waits for the API server: the lookup is
        cancelled, the review answered (refused) or its connection closed,
        and the server exits cleanly."""
        srv = self.start()
        sa_uid = self.api.create("serviceaccounts", NS, "web")
        tok = self.token(sa_uid)
        self.api.hold()
        result = []
        t = threading.Thread(target=lambda: result.append(self._try_review(srv, tok)), daemon=True)
        try:
            t.start()
            self.assertTrue(H.wait_until(lambda: self.api.object_requests("serviceaccounts", NS, "web") >= 1,
                                         10 * H.SLOW), "the service account was never asked for")
            self.stop_ok(srv)
        finally:
            self.api.release()
            t.join(30 * H.SLOW)
        self.assertEqual(len(result), 1)
        self.assertFalse(isinstance(result[0], dict) and result[0].get("authenticated"), result)

    def test_client_leaves_while_its_review_waits(self):
        """A client that hangs up while its review waits: the answer, when
        the objects come, is dropped (or goes nowhere), and the server goes
        on serving."""
        srv = self.start()
        sa_uid = self.api.create("serviceaccounts", NS, "web")
        tok = self.token(sa_uid)
        body = json.dumps(H.review_body(tok)).encode()
        self.api.hold()
        try:
            with socket.create_connection(("127.0.0.1", srv.review_port), timeout=H.SOCK_TIMEOUT) as s:
                s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s"
                          % (H.TOKENREVIEW_PATH.encode(), srv.review_bearer.encode(), len(body), body))
                self.assertTrue(H.wait_until(lambda: self.api.object_requests("serviceaccounts", NS, "web") >= 1,
                                             10 * H.SLOW), "the service account was never asked for")
        finally:
            self.api.release()
        self.assert_accepted(srv, tok)
        self.assertEqual(srv.proc.poll(), None, srv.stderr()[-2000:])

    def _try_review(self, srv, token):
        try:
            return self.review(srv, token)
        except Exception as e:  # the connection closed at shutdown
            return e

    def test_concurrent_reviews_of_one_pod_make_one_lookup_and_the_loop_stays_free(self):
        n = 200
        # a TTL the test cannot outlive: the warm token stays cached
        srv = self.start("--threads", "1", ttl=600)
        sa_uid = self.api.create("serviceaccounts", NS, "web")
        pod_uid = self.api.create("pods", NS, "web-0")
        other_pod = self.api.create("pods", NS, "web-1")
        warm = self.token(sa_uid, pod=("web-1", other_pod))
        tok = self.token(sa_uid, pod=("web-0", pod_uid))
        # warm one token's objects (the service account's too), then hold
        # the API server's answers
        self.assert_accepted(srv, warm)
        before = self.api.object_requests("pods", NS, "web-0")
        misses = H.metric(self.metrics(srv), "oidc_token_review_bound_cache_misses_total")
        self.api.hold()
        results = [None] * n

        def one(i):
            try:
                results[i] = self.review(srv, tok)
            except Exception as e:  # recorded, asserted below
                results[i] = e
        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
        try:
            for t in threads:
                t.start()
            ok = H.wait_until(lambda: self.api.object_requests("pods", NS, "web-0") > before, 10 * H.SLOW)
            self.assertTrue(ok, "the pod was never asked for")
            # every review is waiting for it (a miss each) before it answers
            ok = H.wait_until(lambda: H.metric(self.metrics(srv), "oidc_token_review_bound_cache_misses_total")
                              >= misses + n, 10 * H.SLOW)
            self.assertTrue(ok, "not all %d reviews wait for the lookup" % n)
            # the one worker thread is free meanwhile: a review of cached
            # objects is answered while 200 wait
            self.assert_accepted(srv, warm)
        finally:
            self.api.release()
            for t in threads:
                t.join(30 * H.SLOW)
        self.assertEqual([r for r in results if not (isinstance(r, dict) and r.get("authenticated"))], [])
        self.assertEqual(self.api.object_requests("pods", NS, "web-0") - before, 1, "one lookup for 200 reviews")


if __name__ == "__main__":
    unittest.main()
