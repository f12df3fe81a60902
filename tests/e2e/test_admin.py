# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of the admin listener (`--admin-listen`): /livez,
/readyz and /metrics.

/metrics is parsed with prometheus_client's own parser (Debian's
python3-prometheus-client; the test re-executes under the system python
when the ctest interpreter lacks it) and its counters must move by exactly
what the test did. /readyz must turn 503 during the shutdown grace (while
the public listener still answers) and while key reloads keep failing.
The admin port serves no documents and the public port no metrics.
"""

import os
import shutil
import signal
import socket
import subprocess
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("prometheus_client")

ISSUER = "https://issuer.example"


def req_key(path, status, method="GET"):
    return ("oidc_http_requests_total", frozenset({"path": path, "method": method, "status": str(status)}.items()))


class AdminBase(H.SanitizerCheck, H.ServerTestCase):

    def setUp(self):
        super().setUp()
        problem = H.modules_problem("prometheus_client")
        if problem:
            self.fail(problem)
        self.key = self.keys.ec()
        self.keyfile = os.path.join(self.tmp, "sa.key")
        with open(self.keyfile, "wb") as f:
            f.write(H.read_bytes(self.key.priv))

    def args(self, *extra):
        return ["--service-account-issuer", ISSUER, "--service-account-key-file", self.keyfile, *extra]

    def metrics(self, srv):
        try:
            return H.scrape_metrics(srv.admin_port)
        except OSError as e:
            raise AssertionError("scraping 127.0.0.1:%d failed (%s); server %s; stderr:\n%s"
                                 % (srv.admin_port, e, "exited %r" % srv.proc.poll()
                                    if srv.proc.poll() is not None else "running", srv.stderr()))


class TestEndpoints(AdminBase):

    def test_livez_readyz(self):
        srv = self.start_server(self.args())
        st, h, b = H.admin_get(srv.admin_port, "/livez")
        self.assertEqual(st, 200)
        st, h, b = H.admin_get(srv.admin_port, "/readyz")
        self.assertEqual((st, b.strip()), (200, b"ok"))
        st, h, b = H.admin_get(srv.admin_port, "/metrics")
        self.assertEqual(st, 200)
        self.assertTrue(H.one(h, "content-type").startswith("text/plain"), h)

    def test_ports_are_separate(self):
        srv = self.start_server(self.args())
        for path in (H.DISCOVERY, H.JWKS):
            st, h, b = H.admin_get(srv.admin_port, path)
            self.assertEqual(st, 404, "admin port served %s" % path)
        st, h, b = srv.get("/metrics")
        self.assertEqual(st, 404, "public port served /metrics")
        self.assertNotIn(b"oidc_http_requests_total", b)
        # and the documents are where they belong
        self.check_both(srv, ISSUER, [self.key])

    def test_admin_listen_none(self):
        srv = self.start_server(self.args("--admin-listen", "none"))
        self.assertIsNone(srv.admin_port)
        self.check_both(srv, ISSUER, [self.key])

    def test_admin_port_in_use_fails_start_before_any_port_listens(self):
        """Every site's sockets are opened before any of them accepts, so a
        taken admin port stops the server before the public port ever
        answered, and once the public port answers the admin one does."""
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            admin = "127.0.0.1:%d" % taken.getsockname()[1]
            public = "127.0.0.1:0"
            rc, out, err = H.run_once(["serve", *self.args("--listen", public, "--admin-listen", admin)])
        self.assertEqual(rc, 1, err)
        self.assertIn("--admin-listen %s: cannot listen: Address already in use" % admin, err)
        self.assertNotIn("listening on", err)

    def test_build_info(self):
        """oidc_build_info carries what --version says: version, commit and
        build date."""
        rc, out, err = H.run_once(["--version"])
        self.assertEqual(rc, 0, err)
        version, commit, date = H.re.match(r"oidc-discovery (\S+) \(commit (\S+), built (\S+)\)$", out).groups()
        srv = self.start_server(self.args())
        m = self.metrics(srv)
        self.assertEqual(H.metric(m, "oidc_build_info", version=version, commit=commit, build_date=date), 1,
                         sorted(k for k in m if "build" in k[0]))


class TestCounters(AdminBase):

    def test_request_counters_move_exactly(self):
        srv = self.start_server(self.args())
        before = self.metrics(srv)
        n = 7
        for _ in range(n):
            st, h, b = srv.get(H.JWKS)
            self.assertEqual(st, 200)
        etag = H.one(h, "etag")
        for _ in range(3):
            st, h2, b2 = srv.get(H.JWKS, headers={"If-None-Match": etag})
            self.assertEqual(st, 304)
        st, _, _ = srv.get(H.DISCOVERY)
        self.assertEqual(st, 200)
        want = {req_key(H.JWKS, 200): n, req_key(H.DISCOVERY, 200): 1, ("oidc_http_not_modified_total", frozenset()): 3}
        after = H.scrape_until(srv.admin_port,
                               lambda m: all(m.get(k, 0) - before.get(k, 0) >= v for k, v in want.items()))

        def delta(key):
            return after.get(key, 0) - before.get(key, 0)
        self.assertEqual(delta(req_key(H.JWKS, 200)), n)
        self.assertEqual(delta(req_key(H.DISCOVERY, 200)), 1)
        self.assertEqual(delta(("oidc_http_not_modified_total", frozenset())), 3)
        self.assertGreaterEqual(delta(("oidc_http_request_duration_seconds_count", frozenset())), n + 4)
        self.assertGreater(delta(("oidc_http_request_duration_seconds_sum", frozenset())), 0)
        self.assertGreaterEqual(delta(("oidc_http_response_bytes_total", frozenset())), n * len(b))
        # histogram buckets are cumulative and end with +Inf == count
        buckets = sorted(((float(dict(k[1])["le"]), v) for k, v in after.items()
                          if k[0] == "oidc_http_request_duration_seconds_bucket"))
        self.assertTrue(buckets)
        self.assertEqual([v for _, v in buckets], sorted(v for _, v in buckets))
        self.assertEqual(buckets[-1], (float("inf"), after[("oidc_http_request_duration_seconds_count", frozenset())]))
        # scraping does not count as public traffic
        again = self.metrics(srv)
        self.assertEqual(again.get(req_key(H.JWKS, 200)), after.get(req_key(H.JWKS, 200)))

    def test_keyset_generation_and_keys_published(self):
        srv = self.start_server(self.args("--key-reload-interval", "1s"))
        m = self.metrics(srv)
        gen = H.metric(m, "oidc_keyset_generation")
        self.assertIsNotNone(gen)
        self.assertEqual(H.metric(m, "oidc_keys_published"), 1)
        k2, k3 = self.keys.ec(), self.keys.rsa()
        H.atomic_write(self.keyfile, H.read_bytes(k2.priv) + H.read_bytes(k3.priv))
        want = sorted([k2.kid, k3.kid])
        self.assertTrue(H.wait_until(lambda: sorted(H.jwks_kids(srv.get(H.JWKS)[2])) == want, 3.0),
                        srv.stderr())
        m = self.metrics(srv)
        self.assertGreater(H.metric(m, "oidc_keyset_generation"), gen)
        self.assertEqual(H.metric(m, "oidc_keys_published"), 2)
        self.assertGreater(H.metric(m, "oidc_last_reload_success_timestamp_seconds"), time.time() - 60)

    def test_reload_failures_and_readyz(self):
        srv = self.start_server(self.args("--key-reload-interval", "1s"))
        m = self.metrics(srv)
        fail0 = H.metric(m, "oidc_reload_failures_total", source="keys")
        self.assertEqual(fail0, 0)
        H.atomic_write(self.keyfile, b"garbage, not a PEM file\n")
        self.assertTrue(H.wait_until(
            lambda: H.metric(self.metrics(srv), "oidc_reload_failures_total", source="keys") > fail0, 3.0),
            srv.stderr())
        # the old key set stays published
        st, h, b = srv.get(H.JWKS)
        self.assertEqual((st, b), (200, H.expected_jwks([self.key])))
        # failing for longer than --key-reload-interval: not ready
        last = [None]

        def not_ready():
            last[0] = H.admin_get(srv.admin_port, "/readyz")
            return last[0][0] == 503
        self.assertTrue(H.wait_until(not_ready, 4.0, interval=0.1), "readyz still %r; stderr:\n%s"
                        % (last[0], srv.stderr()))
        self.assertRegex(last[0][2].decode(errors="replace"), r"key", "503 without a reason")
        self.assertEqual(H.one(H.admin_get(srv.admin_port, "/livez")[1], "content-type")[:10], "text/plain")
        self.assertEqual(H.admin_get(srv.admin_port, "/livez")[0], 200, "livez must not follow readiness")
        # fixed: ready again
        H.atomic_write(self.keyfile, H.read_bytes(self.key.priv))
        self.assertTrue(H.wait_until(lambda: H.admin_get(srv.admin_port, "/readyz")[0] == 200, 3.0),
                        srv.stderr())

    def test_token_reviews_counted(self):
        signing = self.keys.rsa()
        srv = H.start_review_server(self, ["--service-account-issuer", ISSUER,
                                           "--service-account-key-file", signing.priv], signing.priv)
        before = self.metrics(srv)
        token = H.mint_token(signing.priv, ISSUER, audiences=[ISSUER])
        for _ in range(2):
            st, doc = H.review(srv, token)
            self.assertEqual(st, 201)
            self.assertTrue(doc["status"]["authenticated"], doc)
        st, doc = H.review(srv, "not.a.token")
        self.assertEqual(st, 201)
        self.assertFalse(doc["status"]["authenticated"], doc)
        after = self.metrics(srv)
        ok = ("oidc_token_reviews_total", frozenset({"authenticated": "true", "reason": ""}.items()))
        self.assertEqual(after.get(ok, 0) - before.get(ok, 0), 2)
        bad = {k: v - before.get(k, 0) for k, v in after.items()
               if k[0] == "oidc_token_reviews_total" and dict(k[1]).get("authenticated") == "false"}
        self.assertEqual(sum(bad.values()), 1, bad)
        (label,) = [dict(k[1]) for k, v in bad.items() if v == 1]
        self.assertNotEqual(label.get("reason", ""), "", label)


class TestStatusPage(AdminBase):
    """The status page at / of the admin listener, over plain HTTP: what it
    shows (it is HTML for people; the browser test loads it in chromium),
    that every value is escaped, and that it follows reloads."""

    def setUp(self):
        super().setUp()
        # a key file whose path reads as markup: it must stay text
        self.evil_dir = os.path.join(self.tmp, "<script>alert(1)<")
        os.mkdir(self.evil_dir)
        self.evil_file = os.path.join(self.evil_dir, "script>.pub")
        self.rsa = self.keys.rsa()
        with open(self.evil_file, "wb") as f:
            f.write(H.read_bytes(self.rsa.pub))

    def page(self, srv):
        st, h, body = H.admin_get(srv.admin_port, "/")
        self.assertEqual(st, 200, body)
        return h, body.decode()

    def test_page(self):
        srv = self.start_server(self.args("--service-account-key-file", self.evil_file,
                                          "--signing-key-file", self.keyfile))
        for _ in range(3):
            self.assertEqual(srv.get(H.JWKS)[0], 200)
        h, text = self.page(srv)
        self.assertEqual(H.one(h, "content-type"), "text/html; charset=utf-8")
        self.assertEqual(H.one(h, "cache-control"), "no-store")
        self.assertIn("default-src 'none'", H.one(h, "content-security-policy"))
        self.assertEqual(H.one(h, "x-content-type-options"), "nosniff")
        self.assertTrue(text.startswith("<!DOCTYPE html>"), text[:100])
        tables = H.html_tables(text)
        docs = H.html_rows(tables, "documents")
        self.assertEqual(docs["issuer"], ISSUER)
        self.assertEqual(docs["jwks_uri"], H.default_jwks_uri(ISSUER))
        self.assertRegex(docs["version"], r"^\S+ \(commit \S+, built \d{4}-\d\d-\d\d\)$")
        header, *rows = tables["keys"]
        self.assertEqual(header, ["kid", "alg", "size", "source", "first seen", "retained until", "role"])
        self.assertEqual([r[0] for r in rows], H.jwks_kids(srv.get(H.JWKS)[2]), "the published keys, in order")
        by_kid = {r[0]: r for r in rows}
        self.assertEqual(by_kid[self.key.kid][1:3], [self.key.alg, "P-256"])
        self.assertEqual(by_kid[self.key.kid][3], self.keyfile + " (block 1)")
        self.assertRegex(by_kid[self.key.kid][6], r"^signing", "the --signing-key-file key")
        self.assertEqual(by_kid[self.rsa.kid][1:4], ["RS256", "2048", self.evil_file + " (block 1)"])
        self.assertEqual(by_kid[self.rsa.kid][6], "-")
        for r in rows:
            self.assertRegex(r[4], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", "first seen")
            self.assertEqual(r[5], "-", "not retained")
        self.assertEqual(H.html_rows(tables, "reload")["result"], "ok")
        # a request is counted once it is done, which may be after its
        # response reached the client (under valgrind, visibly so)
        jwks_count = lambda: int(H.html_rows(H.html_tables(self.page(srv)[1]), "counters")["requests " + H.JWKS])
        self.assertTrue(H.wait_until(lambda: jwks_count() >= 3, 10), jwks_count())
        # the file name is text, never markup
        self.assertNotIn("<script", text)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;.pub (block 1)", text)

    def test_page_shows_a_failed_reload(self):
        srv = self.start_server(self.args("--key-reload-interval", "1s"))
        H.atomic_write(self.keyfile, b"<b>garbage</b>, not a PEM file\n")
        last = [None]

        def failed():
            last[0] = H.html_tables(self.page(srv)[1])
            return H.html_rows(last[0], "reload").get("result", "").startswith("failed: ")
        self.assertTrue(H.wait_until(failed, 5.0, interval=0.2), "%r\n%s" % (last[0], srv.stderr()))
        self.assertIn(self.keyfile, H.html_rows(last[0], "reload")["result"])
        self.assertGreaterEqual(int(H.html_rows(last[0], "reload")["failed reloads"]), 1)
        self.assertEqual([r[0] for r in last[0]["keys"][1:]], [self.key.kid], "the last good set stays")
        # and recovers
        H.atomic_write(self.keyfile, H.read_bytes(self.key.priv))
        self.assertTrue(H.wait_until(lambda: H.html_rows(H.html_tables(self.page(srv)[1]), "reload")
                                     .get("result") == "ok", 5.0, interval=0.2), srv.stderr())

    def test_only_on_the_admin_listener(self):
        srv = self.start_server(self.args())
        st, h, b = srv.get("/")
        self.assertEqual(st, 404, "the public listener has no status page")
        self.assertNotIn(b"<html", b)


class TestShutdown(AdminBase):

    def test_readyz_503_during_grace_then_exit_0(self):
        srv = self.start_server(self.args("--shutdown-grace", "3s"))
        self.assertEqual(H.admin_get(srv.admin_port, "/readyz")[0], 200)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        last = [None]

        def not_ready():
            try:
                last[0] = H.admin_get(srv.admin_port, "/readyz", timeout=0.5)
            except OSError as e:
                last[0] = e
                return False
            return last[0][0] == 503
        self.assertTrue(H.wait_until(not_ready, 1.5, interval=0.05), "readyz: %r" % (last[0],))
        self.assertTrue(last[0][2].strip(), "503 without a reason")
        # the public listener still answers during the grace
        self.assertLess(time.monotonic() - t0, 2.5)
        st, h, b = srv.get(H.JWKS)
        self.assertEqual((st, b), (200, H.expected_jwks([self.key])))
        st, h, b = srv.get(H.DISCOVERY)
        self.assertEqual(st, 200)
        try:
            rc = srv.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.fail("server did not exit within 10 s of SIGTERM with --shutdown-grace 3s")
        self.assertEqual(rc, 0, srv.stderr())
        elapsed = time.monotonic() - t0
        self.assertLess(elapsed, 8.0)


@unittest.skipIf(shutil.which("strace") is None, "strace is not installed (scripts/setup.sh installs it)")
class TestStuckReload(AdminBase):
    """A key file read that never returns (a FIFO on a server that blocks on
    it, a hung network file system) is simulated with strace, which holds
    a reload's open(2) of the key file for a minute. /livez must then turn
    503, and SIGTERM must still end the process in time."""

    HOLD = "30s"
    STALL = 10.0  # HEALTH_RELOAD_STALL_MS

    def child_pid(self, srv):
        """The server's pid: strace's only child (env exec'ed into it)."""
        def child():
            try:
                with open("/proc/%d/task/%d/children" % (srv.proc.pid, srv.proc.pid)) as f:
                    return f.read().split()
            except OSError:
                return []
        kids = H.wait_until(child, 5.0)
        self.assertEqual(len(kids), 1, kids)
        # killing strace detaches the server without ending it
        self.addCleanup(self.kill_quietly, int(kids[0]))
        return int(kids[0])

    @staticmethod
    def kill_quietly(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def test_stuck_reload_fails_livez_and_sigterm_still_exits(self):
        if H.VALGRIND:
            self.skipTest("strace and valgrind cannot both trace the server")
        probe = subprocess.run(["strace", "-f", "-o", os.devnull, "true"], capture_output=True, timeout=30)
        if probe.returncode != 0:
            self.skipTest("strace cannot trace here: %s" % probe.stderr.decode(errors="replace").strip())
        srv = H.Server(self.args("--shutdown-grace", "1s"))
        # LeakSanitizer cannot run under ptrace (see test_key_hygiene)
        srv.argv = ["strace", "-f", "-qq", "-o", os.devnull, "-P", self.keyfile, "-e", "trace=openat",
                    "-e", "inject=openat:delay_enter=%s:when=2+" % self.HOLD,
                    "env", "ASAN_OPTIONS=detect_leaks=0"] + srv.argv
        self._servers.append(srv)
        srv.start()
        pid = self.child_pid(srv)
        self.assertEqual(H.admin_get(srv.admin_port, "/livez")[0], 200)
        # strace counts opens per thread: a thread's first open of the key
        # file passes, its second is held. A second SIGHUP is needed where
        # the reloads run on a thread of their own, and harmless where they
        # share the one that read the file at start.
        os.kill(pid, signal.SIGHUP)
        self.assertTrue(H.wait_for_log(srv, r"SIGHUP: reloading keys"), srv.stderr())
        time.sleep(0.5)
        os.kill(pid, signal.SIGHUP)
        last = [None]

        def dead():
            last[0] = H.admin_get(srv.admin_port, "/livez")
            return last[0][0] == 503
        self.assertTrue(H.wait_until(dead, self.STALL + 10.0, interval=0.2),
                        "/livez still %r with the reload stuck; stderr:\n%s" % (last[0], srv.stderr()))
        self.assertIn(b"stuck", last[0][2])
        st, _, body = H.admin_get(srv.admin_port, "/readyz")
        self.assertEqual(st, 503, body)
        # the documents are still served meanwhile
        st, _, body = srv.get(H.JWKS)
        self.assertEqual((st, body), (200, H.expected_jwks([self.key])))

        os.kill(pid, signal.SIGTERM)

        def ended():
            # strace reaps its tracee only once the held open is released,
            # so the server's end shows as a zombie (or no process) first
            try:
                with open("/proc/%d/stat" % pid) as f:
                    return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
            except OSError:
                return True
        self.assertTrue(H.wait_until(ended, H.STOP_TIMEOUT, interval=0.1),
                        "SIGTERM did not end the server while its reload was stuck; stderr:\n" + srv.stderr())
        self.assertIn("did not stop", srv.stderr())


if __name__ == "__main__":
    unittest.main()
