# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of the connection and request limits: slowloris and
idle keep-alive connections closed after --request-timeout, oversized
header blocks refused (--max-request-header-size), --max-connections
closing the connection over the limit at once (counted in
oidc_connections_refused_total) without harming later clients, clients
that never read closed after --write-timeout (oidc_write_timeouts_total),
and each listener (public, TokenReview, admin) with a budget of its own.
"""

import select
import socket
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("prometheus_client", "cryptography")

ISSUER = "https://issuer.example"
# Every client of a test comes from 127.0.0.1: the tests of a whole budget
# let one address hold all of it (test_connection_budgets tests the share).
WHOLE_BUDGET = ("--connection-share-per-address", "100")
SLACK = 2.0  # seconds beyond --request-timeout for a close to arrive
REQUEST = b"GET " + H.JWKS.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n"
NON_READERS = 20
PIPELINED = 50    # GETs each non-reading client sends at once
BIG_JWKS_KEYS = 300  # about 60 KiB of JWKS: far more than the kernel buffers of a client that does not read
CLIENT_RCVBUF = 2048


def wait_close(sock, timeout):
    """Seconds until the peer closes sock (EOF or reset), reading and
    discarding any response; None if still open after timeout."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        r, _, _ = select.select([sock], [], [], left)
        if not r:
            return None
        try:
            if not sock.recv(65536):
                return time.monotonic() - t0
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - t0


def send_big(sock, data, chunk=16384):
    """Sends data until done or the server stops reading/closes; returns
    True if everything was sent."""
    sock.settimeout(H.SOCK_TIMEOUT)
    try:
        for i in range(0, len(data), chunk):
            sock.sendall(data[i:i + chunk])
        return True
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        return False


def public_keys_pem(n):
    """n fresh P-256 public keys in one PEM file's bytes."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    return b"".join(ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo) for _ in range(n))


def non_reader(port):
    """A client with a small receive buffer that sends PIPELINED GETs of the
    JWKS and never reads an answer."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, CLIENT_RCVBUF)
    s.settimeout(H.SOCK_TIMEOUT)
    s.connect(("127.0.0.1", port))
    s.sendall(REQUEST * PIPELINED)
    return s


def answer(port, request=REQUEST, method="GET"):
    """(status, body) of one request on a new connection, or None when the
    server closes it without an answer (a listener over its budget)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=H.SOCK_TIMEOUT)
    try:
        s.sendall(request)
        st, _, body = H.RawReader(s).read_response(method)
        return st, body
    except (EOFError, ConnectionResetError, BrokenPipeError):
        return None
    finally:
        s.close()


def idle_after_answer(port, request):
    """A connection left open after one answered request: it certainly
    holds a slot of its listener's budget. One refused because the close
    of an earlier connection has not reached the server yet is retried."""
    deadline = time.monotonic() + 3.0 * H.SLOW
    while True:
        s = socket.create_connection(("127.0.0.1", port), timeout=H.SOCK_TIMEOUT)
        try:
            s.sendall(request)
            H.RawReader(s).read_response()
            return s
        except (EOFError, ConnectionResetError, BrokenPipeError):
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def read_status(sock, timeout=H.SOCK_TIMEOUT):
    """The status code of the first response on sock, or None when the
    server closes (or resets) without one."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, BrokenPipeError, socket.timeout):
        pass
    if data.startswith(b"HTTP/1.1 ") and len(data) >= 12:
        return int(data[9:12])
    return None


class LimitsBase(H.SanitizerCheck, H.ServerTestCase):

    def setUp(self):
        super().setUp()
        self.key = self.keys.ec()

    def args(self, *extra):
        return ["--service-account-issuer", ISSUER, "--service-account-key-file", self.key.priv, *extra]

    def assert_serving(self, srv):
        st, h, b = srv.get(H.JWKS)
        self.assertEqual((st, b), (200, H.expected_jwks([self.key])))


class TestTimeouts(LimitsBase):

    def test_slowloris_closed_within_request_timeout(self):
        srv = self.start_server(self.args("--request-timeout", "2s"))
        s = srv.raw_socket()
        self.addCleanup(s.close)
        s.sendall(b"GET /openid/v1/jwks HTTP/1.1\r\nHost: x\r\n")
        t0 = time.monotonic()
        closed_after = None
        header = b"X-Slow: " + b"a" * 20
        for i in range(12):  # one header byte per second, for up to 12 s
            try:
                s.sendall(header[i:i + 1])
            except (BrokenPipeError, ConnectionResetError):
                closed_after = time.monotonic() - t0
                break
            if wait_close(s, 1.0) is not None:
                closed_after = time.monotonic() - t0
                break
        self.assertIsNotNone(closed_after, "a request trickling one byte per second was never cut off")
        self.assertLessEqual(closed_after, 2.0 + SLACK)
        self.assert_serving(srv)

    def test_idle_keepalive_closed_after_request_timeout(self):
        srv = self.start_server(self.args("--request-timeout", "2s"))
        s = srv.raw_socket()
        self.addCleanup(s.close)
        reader = H.RawReader(s)
        H.raw_request(s, H.JWKS)
        self.assertEqual(reader.read_response()[0], 200)
        H.raw_request(s, H.DISCOVERY)
        self.assertEqual(reader.read_response()[0], 200)
        took = wait_close(s, 2.0 + SLACK + 1)
        self.assertIsNotNone(took, "idle keep-alive connection still open after %.0fs" % (2.0 + SLACK + 1))
        self.assertGreaterEqual(took, 1.0, "closed long before --request-timeout")
        self.assertLessEqual(took, 2.0 + SLACK)

    def test_silent_connection_closed(self):
        srv = self.start_server(self.args("--request-timeout", "1s"))
        s = srv.raw_socket()
        self.addCleanup(s.close)
        took = wait_close(s, 1.0 + SLACK + 1)
        self.assertIsNotNone(took, "a connection that never sent a byte stays open")
        self.assertLessEqual(took, 1.0 + SLACK)


class TestHeaderSize(LimitsBase):

    def test_20k_header_refused_by_default(self):
        srv = self.start_server(self.args())
        s = srv.raw_socket()
        self.addCleanup(s.close)
        req = (b"GET /openid/v1/jwks HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20480 + b"\r\n\r\n")
        send_big(s, req)
        reader = H.RawReader(s)
        st, h, b = reader.read_response()
        # our handler's answer (--max-request-header-size): h2o parsed the
        # head, so the request was framed correctly and the connection stays
        self.assertEqual((st, b), (431, b'{"error":"request header fields too large"}'))
        self.assertEqual(H.one(h, "connection"), "keep-alive")
        H.raw_request(s, H.JWKS)
        st2, h2, b2 = reader.read_response()
        self.assertEqual((st2, b2), (200, H.expected_jwks([self.key])))
        self.assert_serving(srv)
        # just under the default limit is fine
        st, h, b = srv.get(H.JWKS, headers={"X-Big": "a" * 6000})
        self.assertEqual(st, 200)

    def test_limit_follows_flag(self):
        srv = self.start_server(self.args("--max-request-header-size", "32768"))
        st, h, b = srv.get(H.JWKS, headers={"X-Big": "a" * 20480})
        self.assertEqual((st, b), (200, H.expected_jwks([self.key])))
        s = srv.raw_socket()
        self.addCleanup(s.close)
        send_big(s, b"GET /openid/v1/jwks HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n")
        self.assertEqual(read_status(s), 431)  # our handler, over the flag's 32768
        small = self.start_server(self.args("--max-request-header-size", "1024"))
        s2 = small.raw_socket()
        self.addCleanup(s2.close)
        send_big(s2, b"GET /openid/v1/jwks HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 2048 + b"\r\n\r\n")
        self.assertEqual(read_status(s2), 431)  # our handler, over the flag's 1024
        st, h, b = small.get(H.JWKS, headers={"X-Small": "a" * 200})
        self.assertEqual(st, 200)

    def test_1mib_header_block_and_others_still_served(self):
        srv = self.start_server(self.args())
        # another client keeps a connection open throughout
        other = srv.raw_socket()
        self.addCleanup(other.close)
        other_reader = H.RawReader(other)
        H.raw_request(other, H.JWKS)
        self.assertEqual(other_reader.read_response()[0], 200)

        s = srv.raw_socket()
        self.addCleanup(s.close)
        block = b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 1000) for i in range(1048))  # ~1 MiB
        t0 = time.monotonic()
        send_big(s, b"GET /openid/v1/jwks HTTP/1.1\r\nHost: x\r\n" + block + b"\r\n")
        st = read_status(s)
        # h2o's answer, not ours: it stops buffering a head at H2O_MAX_REQLEN
        # (417792 bytes), answers 400 and closes, before any handler runs
        self.assertEqual(st, 400, "1 MiB header block")
        self.assertLess(time.monotonic() - t0, 15)
        # the other connection and new ones are served
        H.raw_request(other, H.DISCOVERY)
        self.assertEqual(other_reader.read_response()[0], 200)
        self.assert_serving(srv)


class TestMaxConnections(LimitsBase):

    def test_connection_over_limit_closed_at_once(self):
        srv = self.start_server(self.args("--max-connections", "5", "--request-timeout", "30s", *WHOLE_BUDGET))
        # the harness's readiness probe must have been closed server-side
        time.sleep(0.3)
        before = H.metric(H.scrape_metrics(srv.admin_port), "oidc_connections_refused_total", listener="public")
        self.assertEqual(before, 0)
        time.sleep(0.2)  # the scrape's connection is gone too
        idle = []
        self.addCleanup(lambda: [s.close() for s in idle])
        # each has been answered once: a connection that has sent nothing
        # would be closed to make room for the sixth
        for _ in range(5):
            idle.append(idle_after_answer(srv.port, REQUEST))
        # the five are really open: one of them can still be used
        H.raw_request(idle[0], H.JWKS)
        self.assertEqual(H.RawReader(idle[0]).read_response()[0], 200)

        sixth = srv.raw_socket()
        self.addCleanup(sixth.close)
        t0 = time.monotonic()
        try:
            H.raw_request(sixth, H.JWKS)
        except (BrokenPipeError, ConnectionResetError):
            pass
        took = wait_close(sixth, 2.0)
        self.assertIsNotNone(took, "the 6th connection was not closed")
        self.assertLess(time.monotonic() - t0, 1.5 * H.SLOW)

        for s in idle:
            s.close()
        idle.clear()

        # the server sees the closes asynchronously (slowly under memcheck);
        # until it has, the slots are still taken
        def all_closed():
            return H.metric(H.scrape_metrics(srv.admin_port), "oidc_open_connections", listener="public") == 0
        self.assertTrue(H.wait_until(all_closed, 3.0), "the closed connections still count")
        for _ in range(5):
            self.assert_serving(srv)
        refused = H.wait_until(lambda: H.metric(H.scrape_metrics(srv.admin_port),
                                                "oidc_connections_refused_total", listener="public"), 2.0)
        self.assertGreaterEqual(refused, 1)


def open_public(srv):
    return H.metric(H.scrape_metrics(srv.admin_port), "oidc_open_connections", listener="public")


class TestWriteTimeout(LimitsBase):
    """h2o 2.2.5 has no timer while it writes an HTTP/1 response: clients
    that pipeline GETs and never read used to hold their connections, and
    the whole --max-connections budget, for as long as they liked."""

    def setUp(self):
        super().setUp()
        self.keyfile = self.keys.write("many.pub", public_keys_pem(BIG_JWKS_KEYS))
        self.caller = self.keys.ec()  # signs the TokenReview caller's token

    def start(self, write_timeout, *extra):
        srv = H.start_review_server(self, ["--service-account-issuer", ISSUER, "--service-account-key-file",
                                           self.keyfile, "--service-account-key-file", self.caller.pub,
                                           "--write-timeout", "%ds" % write_timeout, "--request-timeout", "60s",
                                           *WHOLE_BUDGET, *extra], self.caller.priv)
        st, _, self.jwks = srv.get(H.JWKS)
        self.assertEqual(st, 200)
        self.assertGreater(len(self.jwks), 50000)
        # the harness's probe and the GET above are gone
        self.assertTrue(H.wait_until(lambda: open_public(srv) == 0, 3.0))
        return srv

    def test_non_readers_closed_and_a_fresh_client_served(self):
        timeout = 2 * H.SLOW
        srv = self.start(timeout, "--max-connections", str(NON_READERS), "--threads", "2")
        socks = []
        self.addCleanup(lambda: [s.close() for s in socks])
        for _ in range(NON_READERS):
            socks.append(non_reader(srv.port))
        filled = time.monotonic()
        # the budget is full (once both threads have accepted theirs): one
        # more is closed without an answer ...
        self.assertTrue(H.wait_until(lambda: open_public(srv) == NON_READERS, 2.0))
        self.assertTrue(answer(srv.port) is None, "a connection over the budget was served")
        # ... while TokenReview and the probes, budgeted apart, answer
        st, review = H.review(srv, "not-a-token")
        self.assertEqual((st, review["status"]["authenticated"]), (201, False))
        self.assertEqual(H.admin_get(srv.admin_port, "/livez")[0], 200)
        # a fresh client is served once --write-timeout has closed the
        # non-readers: within the timeout and a second
        deadline = filled + timeout + 1.0 * H.SLOW
        while True:
            got = answer(srv.port)
            if got is not None:
                break
            self.assertLess(time.monotonic(), deadline, "no fresh client served %.1fs after the budget filled"
                            % (time.monotonic() - filled))
            time.sleep(0.05)
        self.assertTrue(got == (200, self.jwks), "the fresh client got %r" % (got[0],))
        self.assertLessEqual(time.monotonic() - filled, timeout + 1.0 * H.SLOW)
        # all of them are closed and counted (the other thread's a moment
        # later, maybe: each worker checks on its own clock) ...
        # (a reset connection's request is counted when h2o disposes of it,
        # which may come just after the timeout is counted: wait for both)
        def served_of(m):
            return H.metric(m, "oidc_http_requests_total", path=H.JWKS, method="GET", status="200") or 0
        samples = H.scrape_until(srv.admin_port, lambda m: H.metric(m, "oidc_write_timeouts_total") == NON_READERS
                                 and served_of(m) >= 2 + NON_READERS)
        self.assertEqual(H.metric(samples, "oidc_write_timeouts_total"), NON_READERS)
        # ... with a reset, which drops the answers they did not take
        for s in socks:
            self.assertIsNotNone(wait_close(s, H.SOCK_TIMEOUT), "a non-reader is still connected")
        # answers are bounded per connection: h2o answers pipelined requests
        # one at a time, and the kernel takes no second one while the first
        # is unsent; none of the other pipelined GETs is answered after the
        # timeout (two for the reference GET and the fresh client)
        served = served_of(samples)
        self.assertLessEqual(served, 2 + 2 * NON_READERS)
        self.assertGreaterEqual(served, 2 + NON_READERS)

    def test_slow_reader_is_not_cut_off(self):
        """--write-timeout bounds a stall, not a transfer: a client that
        takes the big JWKS in small bites over longer than the timeout gets
        all of it."""
        srv = self.start(1)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(s.close)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, CLIENT_RCVBUF)
        s.settimeout(H.SOCK_TIMEOUT)
        s.connect(("127.0.0.1", srv.port))
        s.sendall(REQUEST)
        t0 = time.monotonic()
        data = b""
        while not data.endswith(self.jwks):
            chunk = s.recv(1024)
            self.assertTrue(chunk, "closed after %d bytes" % len(data))
            data += chunk
            time.sleep(0.05)
        took = time.monotonic() - t0
        self.assertTrue(data.startswith(b"HTTP/1.1 200 OK\r\n"))
        self.assertGreater(took, 1.0, "the answer took less than --write-timeout: nothing was shown")
        self.assertEqual(H.metric(H.scrape_metrics(srv.admin_port), "oidc_write_timeouts_total"), 0)


class TestBudgets(LimitsBase):
    """The public, TokenReview and admin listeners each have their own
    budget: before, the public and TokenReview listeners shared
    --max-connections, so filling one stopped the other."""

    def test_each_listener_has_its_own_budget(self):
        srv = H.start_review_server(self, self.args("--max-connections", "3", "--token-review-max-connections", "2",
                                                    "--admin-max-connections", "3", "--request-timeout", "60s",
                                                    *WHOLE_BUDGET),
                                    self.key.priv)
        review_get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"  # 401 (no caller), kept alive
        admin_get = b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"
        self.assertTrue(H.wait_until(lambda: open_public(srv) == 0, 3.0))
        held = []
        self.addCleanup(lambda: [s.close() for s in held])

        held += [idle_after_answer(srv.port, REQUEST) for _ in range(3)]
        self.assertTrue(answer(srv.port) is None, "a 4th public connection was served")
        st, review = H.review(srv, "not-a-token")
        self.assertEqual(st, 201, "TokenReview refused while the public budget is full")

        held += [idle_after_answer(srv.review_port, review_get) for _ in range(2)]
        self.assertTrue(answer(srv.review_port, review_get) is None, "a 3rd TokenReview connection was served")
        self.assertEqual(H.admin_get(srv.admin_port, "/livez")[0], 200)

        admins = [idle_after_answer(srv.admin_port, admin_get) for _ in range(3)]
        held += admins
        # the admin listener full of connections between requests: the
        # first of them makes room for a 4th, so that probes get through
        self.assertEqual(answer(srv.admin_port, admin_get), (200, b"ok\n"), "a 4th admin connection was refused")
        self.assertTrue(H.RawReader(admins[0]).wait_closed(), "the first admin connection was not closed for room")
        # counted per listener: the public and TokenReview ones are full; a
        # client's close reaches the server a moment later, so a connection
        # opened meanwhile may have been refused and retried, hence "at
        # least one". The admin one is full too, but each scrape may close
        # another of its idle connections for room (while the 4th's close
        # is on its way): at most its budget
        samples = H.scrape_metrics(srv.admin_port)
        for listener, open_ in (("public", 3), ("tokenreview", 2)):
            with self.subTest(listener=listener):
                self.assertEqual(H.metric(samples, "oidc_open_connections", listener=listener), open_)
                self.assertGreaterEqual(H.metric(samples, "oidc_connections_refused_total", listener=listener), 1)
        self.assertLessEqual(H.metric(samples, "oidc_open_connections", listener="admin"), 3)
        self.assertGreaterEqual(H.metric(samples, "oidc_connections_evicted_total", listener="admin"), 1)
        self.assertEqual(H.metric(samples, "oidc_connections_refused_total", listener="admin"), 0)


if __name__ == "__main__":
    unittest.main()
