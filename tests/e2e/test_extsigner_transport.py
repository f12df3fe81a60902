# SPDX-License-Identifier: Apache-2.0
"""The external signer's transport, gRPC over HTTP/2 on the Unix socket
(nghttp2 and protobuf-c, linked into the binary; no library of gRPC's),
as a client other than grpcio sees it: Python's h2 (Debian's python3-h2, an
HTTP/2 implementation nobody here wrote) sends what grpcio never would.
An answer's exact shape (HEADERS, one length-prefixed message, trailers
with grpc-status 0); requests that are not gRPC (405, 415); an unknown
method, a compressed or badly framed message, an expired or malformed
grpc-timeout and a request over the size limit, each answered with its
gRPC status in one HEADERS frame while the connection goes on; fifty
calls in flight on one connection; calls cut off by the client leaving; a
client that sends calls and never reads holds up no other client of the
same thread; GOAWAY when the server stops. And the limits a local client
gone wrong meets: a connection quiet for --external-signer-idle-timeout
is told GOAWAY and closed; unfinished calls hold at most
--external-signer-max-buffered-bytes over all connections, the calls past
it answered RESOURCE_EXHAUSTED; a thread full of idle connections closes
the quietest for a new one; a thread full of busy ones closes the new
one, and says so in the log at most every ten seconds."""

import os
import re
import select
import signal
import socket
import subprocess
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("grpc", "grpc_tools", "h2")

import extsigner_client as X  # noqa: E402

ISSUER = "https://issuer.example"
METADATA = b"/v1alpha1.ExternalJWTSigner/Metadata"
SIGN = b"/v1alpha1.ExternalJWTSigner/Sign"
EMPTY_MESSAGE = b"\x00\x00\x00\x00\x00"
GRPC_LIBS = re.compile(r"\blib(grpc|gpr|absl_)[^/\s]*\.so")


def framed(message, compressed=False):
    """A gRPC length-prefixed message."""
    return bytes([1 if compressed else 0]) + len(message).to_bytes(4, "big") + message


class Answer:
    def __init__(self):
        self.headers, self.data, self.trailers, self.ended, self.reset = None, b"", None, False, None

    def status(self):
        """grpc-status from the trailers, or from the headers of a
        Trailers-Only answer."""
        for block in (self.trailers, self.headers):
            if block and b"grpc-status" in block:
                return int(block[b"grpc-status"])
        return None


class RawClient:
    """An HTTP/2 client (python3-h2) on the signer's socket."""

    def __init__(self, path):
        import h2.config
        import h2.connection
        import h2.events
        self.events = h2.events
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10 * H.SLOW)
        self.sock.connect(path)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.conn.initiate_connection()
        self.flush()
        self.answers = {}
        self.goaway = None

    def close(self):
        self.sock.close()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def start(self, path=METADATA, body=EMPTY_MESSAGE, method=b"POST", content_type=b"application/grpc",
              extra=()):
        sid = self.conn.get_next_available_stream_id()
        headers = [(b":method", method), (b":scheme", b"http"), (b":path", path), (b":authority", b"localhost"),
                   (b"content-type", content_type), (b"te", b"trailers")] + list(extra)
        self.conn.send_headers(sid, headers, end_stream=body is None)
        if body is not None:
            self.conn.send_data(sid, body, end_stream=True)
        self.answers[sid] = Answer()
        self.flush()
        return sid

    def pump(self, timeout):
        """Reads what arrives within timeout; False once the server closed."""
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            return True
        data = self.sock.recv(65536)
        if not data:
            return False
        for ev in self.conn.receive_data(data):
            a = self.answers.get(getattr(ev, "stream_id", None))
            if isinstance(ev, self.events.ResponseReceived):
                a.headers = dict(ev.headers)
            elif isinstance(ev, self.events.DataReceived):
                a.data += ev.data
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, self.events.TrailersReceived):
                a.trailers = dict(ev.headers)
            elif isinstance(ev, self.events.StreamEnded):
                a.ended = True
            elif isinstance(ev, self.events.StreamReset):
                a.reset = ev.error_code
            elif isinstance(ev, self.events.ConnectionTerminated):
                self.goaway = ev.error_code
        self.flush()
        return True

    def wait(self, *sids):
        deadline = time.monotonic() + 10 * H.SLOW
        while not all(self.answers[s].ended or self.answers[s].reset is not None for s in sids):
            if time.monotonic() > deadline or not self.pump(0.2):
                break
        return [self.answers[s] for s in sids]

    def call(self, *args, **kwargs):
        return self.wait(self.start(*args, **kwargs))[0]

    def start_unfinished(self, path=SIGN, part=8192):
        """A call whose message announces more than the part of it sent:
        the server holds what came until the rest arrives."""
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(b":method", b"POST"), (b":scheme", b"http"), (b":path", path),
                                     (b":authority", b"localhost"), (b"content-type", b"application/grpc")])
        self.conn.send_data(sid, b"\x00" + (2 * part).to_bytes(4, "big") + b"\x0a" + b"x" * (part - 6))
        self.answers[sid] = Answer()
        self.flush()
        return sid

    def closed(self, timeout):
        """True once the server has closed the connection (within
        timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if not self.pump(0.2):
                    return True
            except (ConnectionResetError, BrokenPipeError):
                return True
        return False


class SignerSocket(X.SignerTestCase):
    """A server with the external signer on a socket of the test's."""

    def setUp(self):
        super().setUp()
        self.sock = os.path.join(self.tmp, "signer.sock")

    def start_signer(self, *extra):
        srv = self.start_server(["--service-account-issuer", ISSUER, "--signing-key-dir", self.dir,
                                 "--signing-key-type", "ec-p256", "--external-signer-listen", "unix:" + self.sock,
                                 "--max-token-lifetime", "1h", *extra])
        self.assertTrue(X.wait_socket(self.sock), srv.stderr())
        return srv

    def raw(self):
        c = RawClient(self.sock)
        self.addCleanup(c.close)
        return c

    def assert_refused(self, a, status, details):
        """A Trailers-Only answer: one HEADERS frame with grpc-status,
        ending the stream, no message."""
        self.assertTrue(a.ended, vars(a))
        self.assertEqual(a.headers[b":status"], b"200")
        self.assertEqual(a.headers[b"content-type"], b"application/grpc")
        self.assertEqual(int(a.headers[b"grpc-status"]), status, vars(a))
        self.assertIn(details, a.headers[b"grpc-message"])
        self.assertEqual((a.data, a.trailers), (b"", None))


class Transport(SignerSocket):

    def test_an_answer_is_headers_one_message_and_trailers(self):
        self.start_signer()
        pb, _ = X.stubs()
        a = self.raw().call()
        self.assertTrue(a.ended)
        self.assertEqual(a.headers, {b":status": b"200", b"content-type": b"application/grpc"})
        self.assertEqual(a.trailers, {b"grpc-status": b"0"})
        self.assertEqual(a.data[0], 0, "not compressed")
        self.assertEqual(int.from_bytes(a.data[1:5], "big"), len(a.data) - 5, "one length-prefixed message")
        self.assertEqual(pb.MetadataResponse.FromString(a.data[5:]).max_token_expiration_seconds, 3600)

    def test_requests_that_are_not_grpc_get_http_statuses(self):
        self.start_signer()
        c = self.raw()
        a = c.call(method=b"GET", body=None)
        self.assertEqual((a.headers[b":status"], a.status()), (b"405", None))
        a = c.call(content_type=b"application/json")
        self.assertEqual((a.headers[b":status"], a.status()), (b"415", None))
        self.assertEqual(c.call().status(), 0, "the connection goes on")

    def test_bad_calls_get_their_grpc_status_and_the_connection_goes_on(self):
        self.start_signer("--max-token-size", "256")
        c = self.raw()
        self.assert_refused(c.call(path=b"/v1alpha1.ExternalJWTSigner/Verify"), 12, b"ExternalJWTSigner only")
        self.assert_refused(c.call(body=framed(b"", compressed=True)), 12, b"grpc-accept-encoding: identity")
        self.assert_refused(c.call(body=b"\x00\x00\x00\x00\x09abc"), 13, b"not one length-prefixed message")
        self.assert_refused(c.call(body=b""), 13, b"not one length-prefixed message")
        self.assert_refused(c.call(body=EMPTY_MESSAGE * 2), 13, b"not one length-prefixed message")
        self.assert_refused(c.call(extra=[(b"grpc-timeout", b"0n")]), 4, b"deadline passed")
        self.assert_refused(c.call(extra=[(b"grpc-timeout", b"5x")]), 13, b"malformed grpc-timeout")
        self.assert_refused(c.call(extra=[(b"grpc-timeout", b"123456789S")]), 13, b"malformed grpc-timeout")
        self.assertEqual(c.call(extra=[(b"grpc-timeout", b"10S")]).status(), 0)
        # over 256 claims + 64 + the prefix: refused as soon as it is over,
        # the rest of the request dropped
        big = c.call(path=b"/v1alpha1.ExternalJWTSigner/Sign", body=framed(b"\x0a" + b"x" * 400))
        self.assert_refused(big, 8, b"larger than 325 bytes (--max-token-size)")
        pb, _ = X.stubs()
        claims = H.b64url(b'{"iss":"%s"}' % ISSUER.encode())
        ok = c.call(path=b"/v1.ExternalJWTSigner/Sign", body=framed(pb.SignJWTRequest(claims=claims)
                                                                     .SerializeToString()))
        self.assertEqual(ok.status(), 0, vars(ok))
        self.assertTrue(pb.SignJWTResponse.FromString(ok.data[5:]).signature)

    def test_fifty_calls_in_flight_on_one_connection(self):
        self.start_signer()
        c = self.raw()
        sids = [c.start() for _ in range(50)]
        answers = c.wait(*sids)
        self.assertEqual([a.status() for a in answers], [0] * 50)

    def test_a_client_that_never_reads_holds_up_no_other(self):
        """One thread serves both connections: while the answers to the
        first cannot be written, the thread must still answer the second,
        and stop reading the first instead of buffering its answers."""
        srv = self.start_signer("--external-signer-threads", "1")
        rss = H.rss_kib(srv.proc.pid)
        hog = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(hog.close)
        hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        # a small send buffer too: once the server stops reading, the hog
        # stalls after a few KiB, not after the ~200 KiB a Unix socket
        # buffers by default, which Python on a busy machine may take
        # longer to produce than the test waits
        hog.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        hog.connect(self.sock)
        import h2.config
        import h2.connection
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        conn.initiate_connection()
        headers = [(b":method", b"POST"), (b":scheme", b"http"), (b":path", b"/v1alpha1.ExternalJWTSigner/FetchKeys"),
                   (b":authority", b"localhost"), (b"content-type", b"application/grpc")]
        hog.setblocking(False)
        sent, pending, deadline = 0, b"", time.monotonic() + 20 * H.SLOW * H.PATIENCE
        stalled_since = None
        # send calls until the server has stopped taking them for a second
        while time.monotonic() < deadline:
            if not pending:
                for _ in range(100):
                    sid = conn.get_next_available_stream_id()
                    conn.send_headers(sid, headers)
                    # the server's WINDOW_UPDATEs are never read: the
                    # connection window (64 KiB) is spent after 13,107
                    # calls, which a server that stops reading never takes
                    self.assertGreaterEqual(conn.local_flow_control_window(sid), len(EMPTY_MESSAGE),
                                            "the server kept reading %d calls it could not answer" % sent)
                    conn.send_data(sid, EMPTY_MESSAGE, end_stream=True)
                    sent += 1
                pending = conn.data_to_send()
            try:
                n = hog.send(pending)
                pending, stalled_since = pending[n:], None
            except BlockingIOError:
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > 1.0:
                    break
                time.sleep(0.01)
        self.assertIsNotNone(stalled_since, "the server kept reading %d calls it could not answer" % sent)
        t0 = time.monotonic()
        other = X.Signer(self.sock, timeout=5)
        self.addCleanup(other.close)
        self.assertEqual(other.metadata().max_token_expiration_seconds, 3600)
        self.assertLess(time.monotonic() - t0, 5 * H.SLOW * H.PATIENCE)
        self.assertLess(H.rss_kib(srv.proc.pid) - rss, 16 * 1024, "the server does not buffer the answers")
        hog.close()
        self.assertEqual(other.metadata().max_token_expiration_seconds, 3600, "and after the hog is gone")

    def test_calls_cut_off_by_the_client_going_away(self):
        """Streams still open when a connection ends are freed with it (the
        sanitizer build's leak check at exit fails the test otherwise)."""
        self.start_signer()
        for _ in range(3):
            c = RawClient(self.sock)
            sid = c.conn.get_next_available_stream_id()
            c.conn.send_headers(sid, [(b":method", b"POST"), (b":scheme", b"http"), (b":path", METADATA),
                                      (b":authority", b"localhost"), (b"content-type", b"application/grpc")])
            c.conn.send_data(sid, EMPTY_MESSAGE[:3])
            c.flush()
            c.close()
        self.assertEqual(self.raw().call().status(), 0)

    def test_stopping_says_goaway(self):
        srv = self.start_signer()
        c = self.raw()
        self.assertEqual(c.call().status(), 0)
        srv.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10 * H.SLOW
        while c.goaway is None and time.monotonic() < deadline and c.pump(0.2):
            pass
        self.assertEqual(c.goaway, 0, "GOAWAY with NO_ERROR before the connection closes")
        srv.proc.wait(10 * H.SLOW)
        self.assertFalse(os.path.exists(self.sock), "the socket goes with the server")

    def test_the_binary_links_nghttp2_and_protobuf_c_and_no_grpc_library(self):
        """gRPC's core is not the transport: the executable names nghttp2
        and protobuf-c itself, and neither it nor a running signer has a
        library of gRPC's."""
        dyn = subprocess.run(["readelf", "-d", H.BIN], capture_output=True, text=True, timeout=30, check=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
        self.assertTrue(any(lib.startswith("libnghttp2") for lib in needed), needed)
        self.assertTrue(any(lib.startswith("libprotobuf-c") for lib in needed), needed)
        ldd = subprocess.run(["ldd", H.BIN], capture_output=True, text=True, timeout=30).stdout
        self.assertIsNone(GRPC_LIBS.search(ldd), ldd)
        srv = self.start_signer()
        self.assertEqual(self.raw().call().status(), 0)
        with open("/proc/%d/maps" % srv.proc.pid) as f:
            self.assertIsNone(GRPC_LIBS.search(f.read()))


class Limits(SignerSocket):
    """What a local client gone wrong meets: before, 1,000 unfinished Sign
    calls held some 12 MiB per connection with no limit over connections,
    64 idle connections locked a thread's other clients out, and each one
    refused wrote a line to the log."""

    def test_a_quiet_connection_is_told_goaway_and_closed(self):
        self.start_signer("--external-signer-idle-timeout", "1s")
        quiet, busy = self.raw(), self.raw()
        self.assertEqual(quiet.call().status(), 0)
        # calling more often than the timeout keeps a connection open
        t0 = time.monotonic()
        while time.monotonic() - t0 < 2.0:
            self.assertEqual(busy.call().status(), 0)
            time.sleep(0.2)
        self.assertTrue(quiet.closed(1.0 + 2.0 * H.SLOW), "a connection quiet for 1s is still open")
        self.assertEqual(quiet.goaway, 0, "GOAWAY with NO_ERROR before the close")
        self.assertEqual(busy.call().status(), 0)

    def test_unfinished_calls_share_a_memory_limit(self):
        self.start_signer("--external-signer-max-buffered-bytes", "65536")
        hog = self.raw()
        sids = []
        for _ in range(12):  # 8 KiB each: 96 KiB in all, over the limit
            sids.append(hog.start_unfinished())
            hog.pump(0.05)
        deadline = time.monotonic() + 10 * H.SLOW
        while time.monotonic() < deadline and not hog.answers[sids[-1]].ended:
            hog.pump(0.2)
        refused = [s for s in sids if hog.answers[s].ended]
        self.assertTrue(refused, "no unfinished call was refused over the limit")
        self.assertNotIn(sids[0], refused, "the first call, under the limit, was refused")
        for s in refused:
            self.assert_refused(hog.answers[s], 8, b"too many unfinished calls")
        # another connection's call over the limit is refused too, while
        # a small one still fits
        other = self.raw()
        sid = other.start_unfinished()
        self.assert_refused(other.wait(sid)[0], 8, b"--external-signer-max-buffered-bytes")
        self.assertEqual(other.call().status(), 0)
        # the hog's calls give their memory back when it leaves
        hog.close()
        deadline = time.monotonic() + 10 * H.SLOW
        while True:
            again = self.raw()
            sid = again.start_unfinished()
            again.pump(0.5)
            if not again.answers[sid].ended:
                break
            self.assertLess(time.monotonic(), deadline, "the memory of a closed connection's calls stays taken")

    def connect_idle(self):
        """A connection that has said its preface and settings, and nothing
        more."""
        c = self.raw()
        c.pump(0.05)
        return c

    def test_a_thread_full_of_idle_connections_makes_room(self):
        self.start_signer("--external-signer-threads", "1")
        idle = [self.connect_idle() for _ in range(64)]
        signer = X.Signer(self.sock, timeout=5)
        self.addCleanup(signer.close)
        self.assertEqual(signer.metadata().max_token_expiration_seconds, 3600)
        self.assertTrue(idle[0].closed(5.0 * H.SLOW), "the quietest idle connection was not closed for room")
        self.assertEqual(idle[0].goaway, 0)

    def test_refusals_are_logged_at_most_every_ten_seconds(self):
        srv = self.start_signer("--external-signer-threads", "1")
        busy = []
        for _ in range(64):  # each with a call open: none is idle
            c = self.raw()
            c.start_unfinished(part=64)
            busy.append(c)
        for c in busy:
            c.pump(0.01)
        refused = 0
        for _ in range(50):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5 * H.SLOW)
            try:
                s.connect(self.sock)
                refused += s.recv(1) == b""
            except (ConnectionResetError, BrokenPipeError):
                refused += 1
            finally:
                s.close()
        self.assertEqual(refused, 50, "connections over a thread's 64 busy ones were served")
        lines = H.count_log(srv, r"closing a new one")
        self.assertEqual(lines, 1, "%d lines for 50 refusals:\n%s" % (lines, srv.stderr()[-3000:]))
        self.assertTrue(all(c.call().status() == 0 for c in busy[:3]), "the busy connections go on")


if __name__ == "__main__":
    unittest.main()
