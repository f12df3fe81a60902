# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of hostile HTTP/1.1 input: request smuggling
(ambiguous message framing) and Host fields on every listener, and path
variants on the public one.

h2o 2.2.5 by itself lets Transfer-Encoding win over Content-Length, uses
the first of two Content-Length fields and reads a chunked body on GET, all
on a kept-alive connection; the server refuses each with 400 and closes the
connection, so bytes smuggled after such a request are never answered. The
same rule holds on the public, TokenReview and admin listeners, for every
path and method. h2o also takes the last of two Host fields and serves an
HTTP/1.1 request without one; both are answered 400 (RFC 9112 3.2).
HTTP/1.0 has no Transfer-Encoding, yet h2o decodes a chunked body there
and keeps the connection: any Transfer-Encoding in HTTP/1.0 is faulty
framing (RFC 9112 6.1), answered 400 with the connection closed.

Paths are matched byte for byte (the query aside): no percent-decoding and
no dot-segment removal, like kube-apiserver's exact mux paths.
"""

import socket
import unittest

import oidc_harness as H

ISSUER = "https://issuer.example"
NEXT = b"GET " + H.JWKS.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n"

# name -> request bytes, each followed on the wire by NEXT
SMUGGLING = {
    "content-length then transfer-encoding":
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "transfer-encoding then content-length":
        b"POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
    "get with content-length and transfer-encoding":
        b"GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "two equal content-length":
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
    "two different content-length":
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello",
    "two different content-length, larger first":
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 0\r\n\r\nhello",
    "mixed-case duplicate content-length":
        b"GET %s HTTP/1.1\r\nHost: x\r\ncontent-length: 0\r\nCONTENT-LENGTH: 0\r\n\r\n",
    "leading empty line, then both":
        b"\r\nPOST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "no space after the colons":
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length:5\r\nTransfer-Encoding:chunked\r\n\r\n0\r\n\r\n",
    "chunked body on get":
        b"GET %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "chunked body on head":
        b"HEAD %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
}


def assert_refused_and_closed(test, reader):
    """The next response on reader is a 400 that closes the connection, and
    nothing follows it: a smuggled request behind it went unanswered."""
    st, h, _ = reader.read_response()
    test.assertEqual(st, 400)
    test.assertEqual(H.one(h, "connection"), "close")
    test.assertTrue(reader.wait_closed())
    test.assertEqual(reader.buf, b"")


class HostileTestCase(H.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.key = self.keys.ec()
        self.srv = self.start_server(["--service-account-issuer", ISSUER,
                                      "--service-account-key-file", self.key.pub])

    def exchange(self, data):
        """Sends data on one connection; returns (first response, whether the
        server closed the connection, every byte left after the first response)."""
        s = self.srv.raw_socket()
        try:
            s.sendall(data)
            r = H.RawReader(s)
            first = r.read_response("HEAD" if data.startswith(b"HEAD") else "GET")
            closed = r.wait_closed()
            return first, closed, r.buf
        finally:
            s.close()


class SmugglingTest(HostileTestCase):
    def test_each_variant_refused_and_connection_closed(self):
        for name, req in SMUGGLING.items():
            with self.subTest(name):
                (st, h, body), closed, rest = self.exchange((req % H.JWKS.encode()) + NEXT)
                self.assertEqual(st, 400, body)
                self.assertEqual(H.one(h, "connection"), "close")
                self.assertTrue(closed, "connection left open after %s" % name)
                # the pipelined request after the smuggling attempt is never answered
                self.assertEqual(rest, b"", "bytes after the 400: %r" % rest[:200])

    def test_pipelined_request_after_smuggling_not_answered(self):
        # The body "GET /x..." would be a second request to a front end that
        # honours Content-Length while h2o honours chunked.
        req = (b"POST " + H.JWKS.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 43\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + NEXT + NEXT)
        (st, _, _), closed, rest = self.exchange(req)
        self.assertEqual(st, 400)
        self.assertTrue(closed)
        self.assertNotIn(b"HTTP/1.1", rest)

    def test_refused_after_an_ordinary_request_on_the_same_connection(self):
        # the second request's head is found where h2o parsed it, not at the
        # start of the connection's first request
        req = SMUGGLING["two different content-length"] % H.JWKS.encode()
        s = self.srv.raw_socket()
        try:
            s.sendall(NEXT + req + NEXT)
            r = H.RawReader(s)
            self.assertEqual(r.read_response()[0], 200)
            assert_refused_and_closed(self, r)
        finally:
            s.close()

    def test_server_still_serves_after_refusals(self):
        for req in SMUGGLING.values():
            self.exchange((req % H.JWKS.encode()) + NEXT)
        self.check_both(self.srv, ISSUER, [self.key])

    def test_plain_requests_unaffected(self):
        # one Content-Length, no Transfer-Encoding: ordinary framing, kept alive
        for data, want in ((b"GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 200),
                           (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 405),
                           (b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n", 200)):
            with self.subTest(data=data):
                s = self.srv.raw_socket()
                try:
                    s.sendall((data % H.JWKS.encode()) + NEXT)
                    r = H.RawReader(s)
                    self.assertEqual(r.read_response()[0], want)
                    st, h, _ = r.read_response()
                    self.assertEqual(st, 200, "pipelined request after an ordinary one")
                finally:
                    s.close()


class SmugglingOverTLSTest(H.TLSServerTestCase):
    def test_refused_over_tls(self):
        key = self.keys.ec()
        cert, tkey = self.new_cert("server")
        srv = self.start_tls_server(["--service-account-issuer", ISSUER, "--service-account-key-file", key.pub],
                                    cert, tkey)
        for name in ("content-length then transfer-encoding", "two equal content-length", "chunked body on get"):
            with self.subTest(name):
                s = H.tls_connect(srv.tls_port, self.ca_cert)
                try:
                    s.sendall((SMUGGLING[name] % H.JWKS.encode()) + NEXT)
                    assert_refused_and_closed(self, H.RawReader(s))
                finally:
                    s.close()


class PathVariantTest(HostileTestCase):
    VARIANTS = ("/openid/v1/%6Awks", "/openid/v1/%6awks", "//openid/v1/jwks", "/openid/v1/jwks/..",
                "/openid/v1/./jwks", "/openid/v1/jwks%00", "/openid/v1/jwks/", "/openid/v1//jwks",
                "/.well-known/openid-configuration/.", "/.well-known/%6Fpenid-configuration",
                "/OPENID/v1/jwks")

    def test_variants_not_found(self):
        for path in self.VARIANTS:
            with self.subTest(path):
                st, h, body = self.srv.get(path)
                self.assertEqual(st, 404, body)
                self.assertEqual(body, b'{"error":"not found"}')

    def test_query_ignored(self):
        st, _, body = self.srv.get(H.JWKS + "?x=%2e%2e")
        self.assertEqual(st, 200)
        self.assertEqual(body, H.expected_jwks([self.key]))

    def test_raw_nul_bytes_refused(self):
        # h2o's parser refuses a NUL byte in the request target or in a
        # header value: 400 and the connection closed, never the JWKS
        for name, request in (("target", b"GET /openid/v1/jwks\x00 HTTP/1.1\r\nHost: x\r\n\r\n"),
                              ("header", b"GET /openid/v1/jwks HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n")):
            with self.subTest(nul_in=name):
                s = self.srv.raw_socket()
                self.addCleanup(s.close)
                s.sendall(request)
                assert_refused_and_closed(self, H.RawReader(s))


class SmugglingTokenReviewTest(H.ServerTestCase):
    """The TokenReview listener takes POST bodies, so its framing matters
    most: each ambiguous variant is a 400 Status and a closed connection."""

    def test_review_listener_refuses_ambiguous_framing(self):
        key = self.keys.ec()
        srv = H.start_review_server(self, ["--service-account-issuer", ISSUER, "--service-account-key-file", key.pub],
                                    key.priv)
        body = b'{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x"}}'
        head = b"POST " + H.TOKENREVIEW_PATH.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        variants = {
            "content-length and transfer-encoding": head + b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n"
            % len(body) + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n",
            "two content-length": head + b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(body), len(body))
            + body,
        }
        for name, req in variants.items():
            with self.subTest(name):
                s = socket.create_connection(("127.0.0.1", srv.review_port), timeout=H.SOCK_TIMEOUT)
                try:
                    s.sendall(req + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    r = H.RawReader(s)
                    st, h, b = r.read_response("POST")
                    self.assertEqual(st, 400, b)
                    self.assertIn(b"ambiguous", b)
                    self.assertTrue(r.wait_closed(), "connection left open after %s" % name)
                    self.assertEqual(r.buf, b"")
                finally:
                    s.close()


class EveryListenerTest(H.ServerTestCase):
    """One framing and Host rule for the public, TokenReview and admin
    listeners and every path on them: before, the TokenReview listener
    checked framing only for a POST to its own path, and the admin listener
    not at all."""

    def setUp(self):
        super().setUp()
        key = self.keys.ec()
        # every case's connection stays open until the test ends, all from
        # 127.0.0.1: more than its share of the admin budget by default
        self.srv = H.start_review_server(self, ["--service-account-issuer", ISSUER,
                                                "--service-account-key-file", key.pub,
                                                "--connection-share-per-address", "100"], key.priv)
        self.targets = {  # listener -> (port, paths)
            "public": (self.srv.port, (H.JWKS, "/nope")),
            "tokenreview": (self.srv.review_port, (H.TOKENREVIEW_PATH, "/", "/apis/other")),
            "admin": (self.srv.admin_port, ("/livez", "/metrics", "/nope")),
        }

    def exchange(self, port, data, method="GET"):
        """Sends data on a new connection; returns (first response, the
        reader, for what follows). The connection is closed at cleanup."""
        s = socket.create_connection(("127.0.0.1", port), timeout=H.SOCK_TIMEOUT)
        self.addCleanup(s.close)
        s.sendall(data)
        r = H.RawReader(s)
        return r.read_response(method), r

    def test_ambiguous_framing_refused_and_closed_on_every_listener(self):
        for listener, (port, paths) in self.targets.items():
            for path in paths:
                for name, req in SMUGGLING.items():
                    with self.subTest(listener=listener, path=path, variant=name):
                        (st, h, body), r = self.exchange(port, (req % path.encode()) + NEXT,
                                                         "HEAD" if req.startswith(b"HEAD ") else "GET")
                        self.assertEqual(st, 400)
                        self.assertEqual(H.one(h, "connection"), "close")
                        if not req.startswith(b"HEAD "):
                            self.assertEqual(body, b'{"error":"ambiguous message framing"}')
                        self.assertTrue(r.wait_closed(), "connection left open")
                        self.assertEqual(r.buf, b"", "bytes after the 400: %r" % r.buf[:200])

    def host_requests(self, path):
        """name -> (request bytes, the error its answer names)."""
        two = b'{"error":"more than one Host header"}'
        none = b'{"error":"an HTTP/1.1 request needs a Host header"}'
        p = path.encode()
        return {
            "two hosts": (b"GET %s HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n" % p, two),
            "two hosts, same value": (b"GET %s HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n" % p, two),
            "two hosts apart, mixed case": (b"GET %s HTTP/1.1\r\nUser-Agent: t\r\nhOST: a\r\nAccept: */*\r\n"
                                            b"HOST: b\r\n\r\n" % p, two),
            "two hosts with a body": (b"POST %s HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nHost: b\r\n"
                                      b"Content-Type: application/json\r\n\r\n{}" % p, two),
            "two hosts in HTTP/1.0": (b"GET %s HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n" % p, two),
            "no host": (b"GET %s HTTP/1.1\r\nUser-Agent: t\r\n\r\n" % p, none),
            "no header at all": (b"GET %s HTTP/1.1\r\n\r\n" % p, none),
        }

    def test_host_fields_checked_on_every_listener(self):
        for listener, (port, paths) in self.targets.items():
            for path in paths:
                for name, (req, error) in self.host_requests(path).items():
                    with self.subTest(listener=listener, path=path, case=name):
                        http10 = b"HTTP/1.0" in req.split(b"\r\n", 1)[0]
                        (st, h, body), r = self.exchange(port, req + (b"" if http10 else NEXT))
                        self.assertEqual((st, body), (400, error))
                        # framing is sound, so the connection stays open
                        # (HTTP/1.0 closes it anyway) and what follows is
                        # answered
                        if http10:
                            self.assertTrue(r.wait_closed())
                        else:
                            self.assertEqual(H.one(h, "connection"), "keep-alive")
                            # (401: the TokenReview listener, to a request without a caller)
                            self.assertIn(r.read_response()[0], (200, 401, 404))

    def test_one_host_or_http10_without_one_served(self):
        for listener, port, path, want in (("public", self.srv.port, H.JWKS, 200),
                                           ("admin", self.srv.admin_port, "/livez", 200),
                                           ("tokenreview", self.srv.review_port, "/", 401)):
            with self.subTest(listener=listener):
                (st, _, _), _ = self.exchange(port, b"GET %s HTTP/1.0\r\n\r\n" % path.encode())
                self.assertEqual(st, want)
                (st, _, _), _ = self.exchange(port, b"GET %s HTTP/1.1\r\nUser-Agent: t\r\nHost: x\r\n\r\n"
                                              % path.encode())
                self.assertEqual(st, want)


# name -> an HTTP/1.0 request with a Transfer-Encoding field (keep-alive asked
# for, so that nothing but the framing rule closes the connection), each
# followed on the wire by NEXT
HTTP10_TE = {
    "chunked": b"POST %s HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    "chunked, empty body": b"POST %s HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n"
                           b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "chunked, mixed case": b"PUT %s HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n"
                           b"transfer-ENCODING: Chunked\r\n\r\n0\r\n\r\n",
    "gzip then chunked": b"POST %s HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n"
                         b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "on get": b"GET %s HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
}


class Http10TransferEncodingTest(H.TLSServerTestCase):
    """Any Transfer-Encoding in an HTTP/1.0 request is a 400 that closes the
    connection, on the public listener (plain and TLS), the admin listener
    and the TokenReview listener (plain and TLS); before, h2o decoded the
    chunked body, answered the request and kept the connection for the
    next one."""

    def setUp(self):
        super().setUp()
        key = self.keys.ec()
        cert, tkey = self.new_cert("server")
        base = ["--service-account-issuer", ISSUER, "--service-account-key-file", key.pub]
        plain = H.start_review_server(self, base, key.priv)
        tls = H.start_review_server(self, base + ["--tls-listen", "127.0.0.1:0", "--tls-cert-file", cert,
                                                  "--tls-private-key-file", tkey,
                                                  "--token-review-tls-cert-file", cert,
                                                  "--token-review-tls-private-key-file", tkey],
                                    key.priv, tls=True)
        # listener -> (a connected socket's maker, paths)
        self.targets = {
            "public": (lambda: socket.create_connection(("127.0.0.1", plain.port), timeout=H.SOCK_TIMEOUT),
                       (H.JWKS, "/nope")),
            "public tls": (lambda: H.tls_connect(tls.port_of("--tls-listen"), self.ca_cert), (H.JWKS,)),
            "admin": (lambda: socket.create_connection(("127.0.0.1", plain.admin_port), timeout=H.SOCK_TIMEOUT),
                      ("/livez", "/nope")),
            "tokenreview": (lambda: socket.create_connection(("127.0.0.1", plain.review_port),
                                                             timeout=H.SOCK_TIMEOUT),
                            (H.TOKENREVIEW_PATH, "/")),
            "tokenreview tls": (lambda: H.tls_connect(tls.review_port, self.ca_cert), (H.TOKENREVIEW_PATH,)),
        }

    def test_refused_and_closed_on_every_listener(self):
        for listener, (connect, paths) in self.targets.items():
            for path in paths:
                for name, req in HTTP10_TE.items():
                    with self.subTest(listener=listener, path=path, variant=name):
                        s = connect()
                        try:
                            s.sendall((req % path.encode()) + NEXT)
                            r = H.RawReader(s)
                            st, h, body = r.read_response()
                            self.assertEqual(st, 400, body)
                            self.assertEqual(H.one(h, "connection"), "close")
                            if name != "gzip then chunked":  # h2o itself refuses a coding it cannot read
                                self.assertIn(body, (b'{"error":"Transfer-Encoding in an HTTP/1.0 request"}',
                                                     b'{"error":"ambiguous message framing"}'))
                            self.assertTrue(r.wait_closed(), "connection left open")
                            self.assertEqual(r.buf, b"", "bytes after the 400: %r" % r.buf[:200])
                        finally:
                            s.close()

    def test_http10_without_transfer_encoding_still_served(self):
        for listener, (connect, paths) in self.targets.items():
            with self.subTest(listener=listener):
                s = connect()
                try:
                    s.sendall(b"GET %s HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n" % paths[0].encode())
                    # 401 from the TokenReview listener: no caller; 405: GET there
                    self.assertIn(H.RawReader(s).read_response()[0], (200, 401, 405))
                finally:
                    s.close()


if __name__ == "__main__":
    unittest.main()
