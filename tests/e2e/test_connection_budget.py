# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of the connection budgets against clients that connect
and say nothing: such connections used to hold a slot of their listener's
budget for the whole --request-timeout, so a few dozen of them, reopened as
they closed, locked the probes out of the admin listener (Kubernetes then
restarts the pod and takes it out of its Service), a thousand locked the
TokenReview callers out, ten thousand the relying parties.

Now a connection that has sent nothing (over TLS: not finished its
handshake) is closed after --handshake-timeout, and at its listener's
budget, or at its address's share of it (--connection-share-per-address),
the connection silent for longest makes room for a new one. Each flood
below keeps its count of connections open for the whole test (it reopens
those the server closes before every legitimate request), with
--handshake-timeout long enough that only making room can let the
legitimate client in (on the admin listener, the connection between
requests accepted first makes room too, so clients that send a request
and then hold the connection cannot lock the probes out either); the
flood comes from other loopback addresses
(127.0.0.2 and up: all of 127/8 is loopback on Linux) or from the
legitimate client's own 127.0.0.1. 30 of 30 legitimate requests must
succeed: probes on the admin listener, a mutual-TLS caller on the
TokenReview listener, a GET of the JWKS on the public one (10,000
connections: not under memcheck, which is too slow to open them in time).
"""

import http.client
import json
import resource
import selectors
import socket
import ssl
import struct
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("prometheus_client")

ISSUER = "https://issuer.example"
ATTEMPTS = 30
ADMIN_BUDGET = 64  # --admin-max-connections's default
REVIEW_BUDGET = 1000  # --token-review-max-connections's default
PUBLIC_BUDGET = 10000  # --max-connections's default
SLACK = 2.0 * H.SLOW  # seconds beyond --handshake-timeout for a close to arrive
# Longer than any flood test runs: a silent connection leaves only to make
# room, never by its deadline, while the legitimate requests are made.
LONG_HANDSHAKE = ("--handshake-timeout", "2m")


def sources(first, n):
    """n loopback addresses from 127.0.0.<first> on."""
    return ["127.0.%d.%d" % ((first + i) // 256, (first + i) % 256) for i in range(n)]


def raise_nofile(test, need):
    """Raises the test process's soft open-file limit to need (the servers
    it starts inherit it), or skips the test when the hard limit is
    lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        test.skipTest("RLIMIT_NOFILE hard limit %d is below the %d descriptors needed" % (hard, need))
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        test.addCleanup(resource.setrlimit, resource.RLIMIT_NOFILE, (soft, hard))


class Silent:
    """count TCP connections to port, each from the next of srcs in turn,
    that never send a byte (or, given hello, send that one request, read
    its answer and then hold the connection open). top_up() replaces the
    ones the server has closed since, so the flood holds count open
    whenever it returns."""

    def __init__(self, port, srcs, count, hello=None):
        self.port, self.srcs, self.count, self.hello = port, srcs, count, hello
        self.sel = selectors.DefaultSelector()
        self.socks = set()
        self.opened = self.closed_by_server = 0

    def open_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # closed with a reset: no TIME_WAIT left behind by thousands of them
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        try:
            s.bind((self.srcs[self.opened % len(self.srcs)], 0))
            s.settimeout(H.SOCK_TIMEOUT)
            s.connect(("127.0.0.1", self.port))
            if self.hello is not None:
                s.sendall(self.hello)
                H.RawReader(s).read_response()
            s.setblocking(False)
        except BaseException:
            s.close()
            raise
        self.opened += 1
        self.socks.add(s)
        self.sel.register(s, selectors.EVENT_READ)

    def drop(self, s):
        self.sel.unregister(s)
        self.socks.discard(s)
        s.close()

    def top_up(self):
        for key, _ in self.sel.select(0):
            s = key.fileobj
            try:
                data = s.recv(1)
            except (ConnectionResetError, BlockingIOError):
                data = b""
            if not data:
                self.closed_by_server += 1
                self.drop(s)
        while len(self.socks) < self.count:
            self.open_one()

    def close(self):
        for s in list(self.socks):
            self.drop(s)
        self.sel.close()


def probes_ok(port):
    """/livez and /readyz on fresh connections, as kubelet probes: True
    when both answer 200."""
    for path in ("/livez", "/readyz"):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=H.SOCK_TIMEOUT)
        try:
            if H.do_request(c, "GET", path)[0] != 200:
                return False
        except (OSError, http.client.HTTPException):
            return False
        finally:
            c.close()
    return True


def metric(srv, name, **labels):
    return H.metric(H.scrape_metrics(srv.admin_port), name, **labels) or 0


class BudgetBase(H.SanitizerCheck, H.ServerTestCase):

    def setUp(self):
        super().setUp()
        self.key = self.keys.ec()

    def args(self, *extra):
        return ["--service-account-issuer", ISSUER, "--service-account-key-file", self.key.priv, *extra]

    def flood(self, port, srcs, count, hello=None):
        f = Silent(port, srcs, count, hello)
        self.addCleanup(f.close)
        f.top_up()
        return f

    def through(self, flood, attempt):
        """Runs attempt() ATTEMPTS times, the flood topped up before each:
        the number that succeeded."""
        ok = 0
        for _ in range(ATTEMPTS):
            flood.top_up()
            ok += bool(attempt())
        return ok

    def assert_made_room(self, srv, listener):
        self.assertGreater(metric(srv, "oidc_connections_evicted_total", listener=listener), 0,
                           "%s listener: no connection was ever closed to make room" % listener)

    def wait_open(self, srv, listener, want):
        """Waits until the server holds want connections of listener (it
        accepts a flood a little after the client has connected)."""
        got = H.wait_until(lambda: metric(srv, "oidc_open_connections", listener=listener) == want, 10.0 * H.SLOW)
        self.assertTrue(got, "%s listener: %r open connections, not %d" % (
            listener, metric(srv, "oidc_open_connections", listener=listener), want))


class AdminFloodTest(BudgetBase):
    """70 silent (or, once, held between requests) connections on the
    admin listener (budget 64, 16 per address at the default share of
    25%)."""

    def start(self):
        srv = self.start_server(self.args(*LONG_HANDSHAKE))
        self.assertTrue(probes_ok(srv.admin_port))
        return srv

    def test_many_addresses_fill_the_budget(self):
        srv = self.start()
        flood = self.flood(srv.admin_port, sources(2, 10), 70)  # 7 per address: under the share
        # the budget is full: the scrape that says so made room for itself
        self.wait_open(srv, "admin", ADMIN_BUDGET)
        self.assertEqual(self.through(flood, lambda: probes_ok(srv.admin_port)), ATTEMPTS)
        self.assert_made_room(srv, "admin")
        self.assertEqual(metric(srv, "oidc_connections_refused_total", listener="admin"), 0)
        self.stop_ok(srv)

    def test_few_addresses_held_to_their_share(self):
        srv = self.start()
        flood = self.flood(srv.admin_port, sources(2, 2), 70)  # 35 per address: over the share
        # two addresses hold 16 each; the probes need no room made
        self.assertEqual(self.through(flood, lambda: probes_ok(srv.admin_port)), ATTEMPTS)
        flood.top_up()
        self.assertLessEqual(metric(srv, "oidc_open_connections", listener="admin"), 2 * 16 + 1)
        self.assertGreater(flood.closed_by_server, 0)
        self.stop_ok(srv)

    def test_connections_held_between_requests(self):
        """Clients that send a request and then hold the connection are no
        longer silent: on the admin listener, the connection between
        requests accepted first makes room too."""
        srv = self.start()
        flood = self.flood(srv.admin_port, sources(2, 10), 70, hello=b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        self.wait_open(srv, "admin", ADMIN_BUDGET)
        self.assertEqual(self.through(flood, lambda: probes_ok(srv.admin_port)), ATTEMPTS)
        self.assert_made_room(srv, "admin")
        self.stop_ok(srv)

    def test_flood_from_the_probes_own_address(self):
        srv = self.start()
        flood = self.flood(srv.admin_port, ["127.0.0.1"], 70)
        self.assertEqual(self.through(flood, lambda: probes_ok(srv.admin_port)), ATTEMPTS)
        self.assert_made_room(srv, "admin")
        self.stop_ok(srv)


class ReviewFloodTest(BudgetBase):
    """1,010 silent connections on the TokenReview listener (budget 1000,
    250 per address) and a caller that authenticates with a client
    certificate."""

    def setUp(self):
        super().setUp()
        raise_nofile(self, 1010 + 512)
        self.ca = H.make_ca(self.tmp)
        self.cert, self.tkey = H.make_server_cert(self.tmp, self.ca, H.TLS_SAN, name="review")
        self.client_ca = H.make_ca(self.tmp, name="client-ca")
        self.caller = H.make_client_cert(self.tmp, self.client_ca, "/O=example/CN=vault", name="vault")
        self.ctx = ssl.create_default_context(cafile=self.ca[0])
        self.ctx.load_cert_chain(*self.caller)
        self.pod = self.keys.ec()

    def start(self):
        srv = self.start_server(self.args(
            "--service-account-key-file", self.pod.pub, "--api-audiences", "vault", *LONG_HANDSHAKE,
            "--enable-token-review", "--token-review-listen", "127.0.0.1:0",
            "--token-review-tls-cert-file", self.cert, "--token-review-tls-private-key-file", self.tkey,
            "--token-review-client-ca-file", self.client_ca[0],
            "--token-review-allowed-callers", H.cert_subject_rfc4514(self.caller[0])))
        srv.review_port = srv.port_of("--token-review-listen")
        self.body = json.dumps(H.review_body(H.mint_token(self.pod.priv, ISSUER, audiences=["vault"])))
        self.assertTrue(self.review_ok(srv))
        return srv

    def review_ok(self, srv):
        """One review by the caller on a fresh mutual-TLS connection: True
        when it is answered 201, authenticated."""
        c = http.client.HTTPSConnection("127.0.0.1", srv.review_port, timeout=H.SOCK_TIMEOUT, context=self.ctx)
        try:
            st, _, body = H.do_request(c, "POST", H.TOKENREVIEW_PATH, {"Content-Type": "application/json"},
                                       self.body)
            return st == 201 and json.loads(body)["status"]["authenticated"] is True
        except (OSError, http.client.HTTPException, ValueError):
            return False
        finally:
            c.close()

    def test_caller_through_a_flood_from_other_addresses(self):
        srv = self.start()
        flood = self.flood(srv.review_port, sources(2, 20), 1010)  # 50 or 51 per address
        self.wait_open(srv, "tokenreview", REVIEW_BUDGET)
        self.assertEqual(self.through(flood, lambda: self.review_ok(srv)), ATTEMPTS)
        self.assert_made_room(srv, "tokenreview")
        self.stop_ok(srv)

    def test_caller_through_a_flood_from_its_own_address(self):
        srv = self.start()
        flood = self.flood(srv.review_port, ["127.0.0.1"], 1010)
        self.assertEqual(self.through(flood, lambda: self.review_ok(srv)), ATTEMPTS)
        self.assertLessEqual(metric(srv, "oidc_open_connections", listener="tokenreview"), REVIEW_BUDGET // 4)
        self.stop_ok(srv)


@unittest.skipIf(H.VALGRIND, "10,000 connections: too slow under memcheck")
class PublicFloodTest(BudgetBase):
    """10,000 silent connections on the public listeners at the default
    --max-connections, from 40 addresses (250 each, 2500 allowed)."""

    def test_get_through_ten_thousand(self):
        raise_nofile(self, PUBLIC_BUDGET + 2048)
        srv = self.start_server(self.args(*LONG_HANDSHAKE))
        self.assertNotIn("open-file limit leaves room", srv.stderr())
        flood = self.flood(srv.port, sources(2, 40), PUBLIC_BUDGET)
        self.wait_open(srv, "public", PUBLIC_BUDGET)
        jwks = H.expected_jwks([self.key])

        def get():
            try:
                st, _, body = srv.get(H.JWKS)
            except (OSError, http.client.HTTPException):
                return False
            return (st, body) == (200, jwks)
        self.assertEqual(self.through(flood, get), ATTEMPTS)
        self.assert_made_room(srv, "public")
        self.stop_ok(srv)


class HandshakeTimeoutTest(BudgetBase, H.TLSServerTestCase):
    """--handshake-timeout closes a connection that has sent nothing, or
    not finished its TLS handshake, long before --request-timeout; one
    that has spoken is left to --request-timeout."""

    def wait_closed(self, s, within):
        s.settimeout(within)
        t0 = time.monotonic()
        try:
            while s.recv(65536):
                pass
        except (ConnectionResetError, socket.timeout) as e:
            if isinstance(e, socket.timeout):
                return None
        return time.monotonic() - t0

    def test_silent_connections_closed(self):
        cert, key = self.new_cert("public")
        # long enough for a TLS handshake under memcheck too
        timeout = 1 * H.SLOW
        srv = self.start_tls_server(self.args("--handshake-timeout", "%ds" % timeout, "--request-timeout", "60s"),
                                    cert, key)
        self.assertEqual(metric(srv, "oidc_handshake_timeouts_total", listener="public"), 0)
        silent = srv.raw_socket()
        self.addCleanup(silent.close)
        tls_silent = socket.create_connection(("127.0.0.1", srv.tls_port), timeout=H.SOCK_TIMEOUT)
        self.addCleanup(tls_silent.close)
        # a ClientHello cut short: the handshake never finishes
        tls_partial = socket.create_connection(("127.0.0.1", srv.tls_port), timeout=H.SOCK_TIMEOUT)
        self.addCleanup(tls_partial.close)
        tls_partial.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        # spoke: a request begun, and a TLS connection with its handshake done
        talker = srv.raw_socket()
        self.addCleanup(talker.close)
        talker.sendall(b"GET " + H.JWKS.encode() + b" HTTP/1.1\r\n")
        tls_idle = H.tls_connect(srv.tls_port, self.ca_cert)
        self.addCleanup(tls_idle.close)
        for s in (silent, tls_silent, tls_partial):
            took = self.wait_closed(s, timeout + SLACK + 1)
            self.assertIsNotNone(took, "a connection that said nothing is still open")
        samples = H.scrape_until(srv.admin_port, lambda m: H.metric(
            m, "oidc_handshake_timeouts_total", listener="public") == 3)
        self.assertEqual(H.metric(samples, "oidc_handshake_timeouts_total", listener="public"), 3)
        # the two that spoke are open and served, well after the deadline
        talker.sendall(b"Host: x\r\n\r\n")
        self.assertEqual(H.RawReader(talker).read_response()[0], 200)
        H.raw_request(tls_idle, H.JWKS)
        self.assertEqual(H.RawReader(tls_idle).read_response()[0], 200)
        self.stop_ok(srv)


if __name__ == "__main__":
    unittest.main()
