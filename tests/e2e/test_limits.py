"""End-to-end tests of the connection and request limits: slowloris and
idle keep-alive connections closed after --request-timeout, oversized
header blocks refused (--max-request-header-size), and --max-connections
closing the connection over the limit at once (counted in
oidc_connections_refused_total) without harming later clients.
"""

import select
import socket
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("prometheus_client")

ISSUER = "https://issuer.example"
SLACK = 2.0  # seconds beyond --request-timeout for a close to arrive


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
        try:
            st, h, b = reader.read_response()
        except (EOFError, ConnectionResetError):
            st = None
        self.assertIn(st, (431, None), "20 KiB header answered %r" % st)
        if st is not None and "close" not in ",".join(h.get("connection", [])).lower():
            # kept alive: the request was framed correctly, so the next one
            # on the same connection is answered normally
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
        self.assertIn(read_status(s), (431, None))
        small = self.start_server(self.args("--max-request-header-size", "1024"))
        s2 = small.raw_socket()
        self.addCleanup(s2.close)
        send_big(s2, b"GET /openid/v1/jwks HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 2048 + b"\r\n\r\n")
        self.assertIn(read_status(s2), (431, None))
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
        self.assertIn(st, (400, 431, None), "1 MiB header block answered %r" % st)
        self.assertLess(time.monotonic() - t0, 15)
        # the other connection and new ones are served
        H.raw_request(other, H.DISCOVERY)
        self.assertEqual(other_reader.read_response()[0], 200)
        self.assert_serving(srv)


class TestMaxConnections(LimitsBase):

    def test_connection_over_limit_closed_at_once(self):
        srv = self.start_server(self.args("--max-connections", "5", "--request-timeout", "30s"))
        # the harness's readiness probe must have been closed server-side
        time.sleep(0.3)
        before = H.metric(H.scrape_metrics(srv.admin_port), "oidc_connections_refused_total")
        self.assertEqual(before, 0)
        time.sleep(0.2)  # the scrape's connection is gone too
        idle = []
        self.addCleanup(lambda: [s.close() for s in idle])
        for _ in range(5):
            idle.append(srv.raw_socket())
        time.sleep(0.3)
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
            return H.metric(H.scrape_metrics(srv.admin_port), "oidc_open_connections") == 0
        self.assertTrue(H.wait_until(all_closed, 3.0), "the closed connections still count")
        for _ in range(5):
            self.assert_serving(srv)
        refused = H.wait_until(lambda: H.metric(H.scrape_metrics(srv.admin_port),
                                                "oidc_connections_refused_total"), 2.0)
        self.assertGreaterEqual(refused, 1)


if __name__ == "__main__":
    unittest.main()
