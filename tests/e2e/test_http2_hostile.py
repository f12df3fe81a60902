# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of HTTP/2 against hostile clients (tests/e2e/h2_attacks.py).

h2o 2.2.5 lets one HTTP/2 client exhaust the server's memory: a header
block of 400 KiB of one-byte references to a dynamic-table entry becomes
400 000 headers (30 to 50 MiB per stream, and a stream whose window stays
shut is never freed). bench/h2_hostile.py has the figures; docs/http2.md
the decision: HTTP/2 is off unless --http2 is given.

Without --http2: TLS ALPN does not select h2, the h2c preface (prior
knowledge, plain or over TLS) is answered 400 and the connection closed,
Upgrade: h2c is ignored, and the HPACK bomb never reaches HTTP/2 parsing.
The TokenReview and admin listeners never speak HTTP/2, even with --http2.

With --http2, the patterns that are bounded stay bounded: rapid reset
(CVE-2023-44487), CONTINUATION floods (CVE-2024-27316 style) and more
streams than SETTINGS_MAX_CONCURRENT_STREAMS leave the server serving
HTTP/1.1 and HTTP/2 clients with 200, its memory growth small.

Attacks run in a child process while this process probes the server.
Bounds are generous: the machine is shared, and the ASan build is slower
and holds freed memory in quarantine.
"""

import multiprocessing
import os
import socket
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("h2", "prometheus_client")
import h2_attacks as A  # noqa: E402  (needs hyper-h2, which the line above provides)

ISSUER = "https://issuer.example"
GROWTH_MIB = 200   # memory growth allowed for a bounded pattern
PROBE_SLOW = 5.0   # a probe may take this long while an attack runs

# In the sanitizer build freed memory waits in ASan's quarantine (256 MiB by
# default), which would count as growth: the servers get a small one.
os.environ["ASAN_OPTIONS"] = ":".join(filter(None, (os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=16",
                                                    "thread_local_quarantine_size_kb=64")))


def _attack_child(fn, kwargs, queue):
    queue.put(fn(**kwargs))


class HTTP2Base(H.SanitizerCheck, H.TLSServerTestCase):

    def setUp(self):
        super().setUp()
        self.key = self.keys.ec()
        self.cert, self.tkey = self.new_cert("server")

    def start(self, *extra):
        srv = self.start_tls_server(["--service-account-issuer", ISSUER, "--service-account-key-file", self.key.priv,
                                     "--threads", "1", *extra], self.cert, self.tkey)
        srv.target = A.Target("127.0.0.1", srv.port, srv.tls_port, self.ca_cert)
        return srv

    def rss_mib(self, srv):
        return A.proc_stats(srv.proc.pid)[1] / 1024

    def assert_serves_h1(self, srv):
        st, body = A.http1_get(srv.target)
        self.assertEqual((st, body), (200, H.expected_jwks([self.key])))

    def attack_while_probing(self, srv, fn, **kwargs):
        """Runs fn(target, **kwargs) in a child process; meanwhile probes
        the server with HTTP/1.1 and HTTP/2 GETs (when it speaks h2).
        Returns the attack's result and the probes [(kind, ok, seconds,
        detail)]."""
        queue = multiprocessing.Queue()
        child = multiprocessing.Process(target=_attack_child, args=(fn, dict(kwargs, target=srv.target), queue))
        child.start()
        probes = []
        try:
            time.sleep(0.3)
            while child.is_alive() and queue.empty():
                probes.append(("h1",) + A.timed(A.http1_get, srv.target))
                probes.append(("h2",) + A.timed(A.h2_get, srv.target))
                time.sleep(0.2)
            result = queue.get(timeout=60)
        finally:
            child.join(10)
            if child.is_alive():
                child.kill()
        return result, probes

    def assert_probes_served(self, probes, srv):
        self.assertTrue(probes, "the attack ended before any probe ran")
        for kind in ("h1", "h2"):
            ours = [p for p in probes if p[0] == kind]
            self.assertTrue(ours)
            bad = [p for p in ours if not p[1] or p[2] > PROBE_SLOW]
            self.assertFalse(bad, "%s probes failed or took over %.0f s during the attack: %r; stderr:\n%s"
                             % (kind, PROBE_SLOW, bad[:5], srv.stderr()[-2000:]))


class TestHTTP2OffByDefault(HTTP2Base):

    def test_alpn_does_not_select_h2(self):
        srv = self.start()
        with H.tls_connect(srv.tls_port, self.ca_cert, alpn=["h2", "http/1.1"]) as s:
            self.assertEqual(s.selected_alpn_protocol(), "http/1.1")
            H.raw_request(s, H.JWKS)
            self.assertEqual(H.RawReader(s).read_response()[0], 200)
        with self.assertRaisesRegex(ConnectionError, "ALPN did not select h2"):
            A.connect(srv.target, tls=True)
        # curl asking for HTTP/2 gets HTTP/1.1
        r = H.curl("--cacert", self.ca_cert, "--http2", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                   "https://127.0.0.1:%d%s" % (srv.tls_port, H.JWKS))
        self.assertEqual((r.returncode, r.stdout), (0, "1.1 200"), r.stderr)

    def assert_preface_refused(self, sock):
        sock.sendall(A.PREFACE + A.settings() + A.header_frames(1, A.request_block()))
        reader = H.RawReader(sock)
        try:
            status = reader.read_response()[0]
        except (socket.timeout, EOFError) as e:
            self.fail("no HTTP/1.1 answer to the HTTP/2 preface (%s): the listener speaks HTTP/2" % e)
        self.assertEqual(status, 400)
        self.assertTrue(reader.wait_closed(), "the connection stayed open after the HTTP/2 preface")

    def test_h2c_prior_knowledge_refused(self):
        srv = self.start()
        with srv.raw_socket() as s:
            self.assert_preface_refused(s)
        # h2o 2.2.5 also takes the preface on a TLS connection that chose http/1.1
        with H.tls_connect(srv.tls_port, self.ca_cert, alpn=["http/1.1"]) as s:
            self.assert_preface_refused(s)
        self.assert_serves_h1(srv)

    def test_upgrade_h2c_ignored(self):
        srv = self.start()
        with srv.raw_socket() as s:
            H.raw_request(s, H.JWKS, extra=b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                                          b"HTTP2-Settings: AAMAAABkAAQAAP__\r\n")
            st, h, body = H.RawReader(s).read_response()
        self.assertEqual((st, body), (200, H.expected_jwks([self.key])))
        self.assertNotIn("upgrade", h)

    def test_hpack_bomb_never_reaches_http2(self):
        srv = self.start()
        before = self.rss_mib(srv)
        result = A.held_streams(srv.target, connections=4, streams=20, seconds=1, tls=False,
                                block_for=A.hpack_bomb_block(400000))
        self.assertEqual(result["closed_by_server"], 4, result)
        self.assertLess(self.rss_mib(srv) - before, 50, "memory grew on a refused HTTP/2 preface")
        self.assert_serves_h1(srv)

    def test_review_and_admin_listeners_never_speak_http2(self):
        srv = self.start("--http2", "--enable-token-review", "--token-review-listen", "127.0.0.1:0",
                         *H.review_caller_args())
        review = srv.port_of("--token-review-listen")
        self.assertTrue(H.wait_accepting(review))
        for port in (review, srv.admin_port):
            with self.subTest(port=port), socket.create_connection(("127.0.0.1", port), timeout=H.SOCK_TIMEOUT) as s:
                self.assert_preface_refused(s)


class TestHTTP2Enabled(HTTP2Base):

    def test_flag_turns_http2_on(self):
        srv = self.start("--http2")
        self.assertEqual(A.h2_get(srv.target), (200, H.expected_jwks([self.key])))
        with A.connect(srv.target, tls=False) as s:  # h2c with prior knowledge
            reader = A.FrameReader(s)
            s.sendall(A.settings() + A.OPEN_CONNECTION_WINDOW + A.header_frames(1, A.request_block()))
            deadline = time.monotonic() + H.SOCK_TIMEOUT
            while A.DATA not in reader.types and not reader.closed and time.monotonic() < deadline:
                reader.drain(0.1)
            self.assertEqual((reader.types[A.HEADERS], reader.types[A.DATA] > 0, reader.goaway), (1, True, None))

    def test_rapid_reset_leaves_server_serving(self):
        srv = self.start("--http2")
        before = self.rss_mib(srv)
        result, probes = self.attack_while_probing(srv, A.rapid_reset, seconds=3)
        self.assertGreater(result["streams"], 1000, result)
        self.assertFalse(result["server_closed"], result)
        self.assert_probes_served(probes, srv)
        self.assertLess(self.rss_mib(srv) - before, GROWTH_MIB)
        # each reset stream is a request the server answers (then drops),
        # once it has worked through what is still in its socket buffer:
        # megabytes under memcheck, so wait for as long as it makes progress
        def served():
            m = H.scrape_metrics(srv.admin_port)
            return H.metric(m, "oidc_http_requests_total", path=H.JWKS, method="GET", status="200") or 0
        want, last, now = result["streams"] * 0.9, -1, served()
        while last < now < want:
            last = now
            time.sleep(2.0 * H.SLOW)
            now = served()
        self.assertGreaterEqual(now, want, (result, srv.stderr()[-1500:]))

    def test_continuation_of_400k_closes_connection(self):
        srv = self.start("--http2")
        result = A.continuation_flood(srv.target, seconds=10, frame_len=16384)
        self.assertTrue(result["server_closed"], result)
        # the stream is refused past ~400 KiB, and the next CONTINUATION
        # ends the connection; what the attacker got into the socket
        # buffers meanwhile is no measure of the server
        self.assertEqual(result["resets"].get(A.REFUSED_STREAM), 1, result)
        self.assertEqual(result["goaway"][1], A.PROTOCOL_ERROR, result)
        self.assertLess(result["bytes_sent"], 64 << 20, "the server kept reading an endless header block")
        self.assert_serves_h1(srv)

    def test_empty_continuation_flood_bounded(self):
        srv = self.start("--http2")
        before = self.rss_mib(srv)
        result, probes = self.attack_while_probing(srv, A.continuation_flood, seconds=3, frame_len=0)
        self.assertGreater(result["frames"], 10000, result)
        self.assert_probes_served(probes, srv)
        self.assertLess(self.rss_mib(srv) - before, GROWTH_MIB)

    def test_too_many_streams_refused_and_bounded(self):
        srv = self.start("--http2", "--http2-max-concurrent-streams", "100")
        before = self.rss_mib(srv)
        result, probes = self.attack_while_probing(srv, A.held_streams, connections=10, streams=300, seconds=2)
        # past 100 open streams a connection's new streams are refused
        self.assertGreaterEqual(result["refused_streams"], 10 * 100, result)
        self.assert_probes_served(probes, srv)
        self.assertLess(self.rss_mib(srv) - before, GROWTH_MIB)


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    unittest.main()
