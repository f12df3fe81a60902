# SPDX-License-Identifier: Apache-2.0
"""End-to-end: the two published documents, their headers, conditional
requests, HEAD, 404/405, query strings, keep-alive, pipelining, key order and
the flags that change the documents."""

import json
import socket
import threading
import time
import unittest

import oidc_harness as H
from oidc_harness import DISCOVERY, JWKS, one

ISSUER = "https://issuer.example.com"


class SingleServer(H.ServerTestCase):
    """One RSA + one P-256 public key behind the default flags."""

    def setUp(self):
        super().setUp()
        self.rsa = self.keys.rsa()
        self.ec = self.keys.ec("P-256")
        self.all = [self.rsa, self.ec]
        self.srv = self.start_server(["--service-account-issuer", ISSUER,
                                      "--service-account-key-file", self.rsa.pub,
                                      "--service-account-key-file", self.ec.pub])

    def tearDown(self):
        if self.srv.proc is not None:
            self.stop_ok(self.srv)
        super().tearDown()

    # ---- bodies and headers -------------------------------------------------

    def test_discovery_exact_bytes(self):
        st, h, b = self.srv.get(DISCOVERY)
        expected = (b'{"issuer":"https://issuer.example.com",'
                    b'"jwks_uri":"https://issuer.example.com/openid/v1/jwks",'
                    b'"response_types_supported":["id_token"],'
                    b'"subject_types_supported":["public"],'
                    b'"id_token_signing_alg_values_supported":["ES256","RS256"]}')
        self.assertEqual(expected, H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER), ["RS256", "ES256"]))
        self.assert_doc(st, h, b, expected, "application/json")
        self.assertFalse(b.endswith(b"\n"))

    def test_jwks_exact_bytes(self):
        st, h, b = self.srv.get(JWKS)
        self.assert_doc(st, h, b, H.expected_jwks(self.all), "application/jwk-set+json")
        doc = json.loads(b)
        self.assertEqual([k["kid"] for k in doc["keys"]], [self.rsa.kid, self.ec.kid])
        self.assertEqual(list(doc["keys"][0].keys()), ["use", "kty", "kid", "alg", "n", "e"])
        self.assertEqual(list(doc["keys"][1].keys()), ["use", "kty", "kid", "crv", "alg", "x", "y"])
        self.assertEqual(doc["keys"][0]["e"], "AQAB")

    def test_etags_distinct_and_strong(self):
        _, h1, _ = self.srv.get(DISCOVERY)
        _, h2, _ = self.srv.get(JWKS)
        e1, e2 = one(h1, "etag"), one(h2, "etag")
        self.assertFalse(e1.startswith("W/"))
        self.assertFalse(e2.startswith("W/"))
        self.assertNotEqual(e1, e2)
        # stable between requests
        _, h3, _ = self.srv.get(JWKS)
        self.assertEqual(one(h3, "etag"), e2)
        self.assertEqual(one(h3, "last-modified"), one(h2, "last-modified"))

    # ---- conditional requests --------------------------------------------

    def _cond(self, path, headers):
        return self.srv.request("GET", path, headers)

    def test_if_none_match(self):
        for path in (DISCOVERY, JWKS):
            with self.subTest(path=path):
                _, h, _ = self.srv.get(path)
                etag = one(h, "etag")
                for inm in (etag, '"nope", ' + etag, etag + ', "other"', '"a",' + etag + ',"b"',
                            "*", "W/" + etag):
                    st, h2, b2 = self._cond(path, {"If-None-Match": inm})
                    self.assertEqual(st, 304, "If-None-Match: %s" % inm)
                    self.assertEqual(b2, b"")
                    self.assertEqual(one(h2, "etag"), etag)
                    self.assertNotIn("transfer-encoding", h2)
                for inm in ('"different"', 'W/"different"', '"' + etag.strip('"') + 'x"'):
                    st, h2, b2 = self._cond(path, {"If-None-Match": inm})
                    self.assertEqual(st, 200, "If-None-Match: %s" % inm)
                    self.assertGreater(len(b2), 0)

    def test_if_none_match_other_documents_etag(self):
        _, h1, _ = self.srv.get(DISCOVERY)
        st, _, b = self._cond(JWKS, {"If-None-Match": one(h1, "etag")})
        self.assertEqual(st, 200)
        self.assertEqual(b, H.expected_jwks(self.all))

    def test_if_modified_since(self):
        for path in (DISCOVERY, JWKS):
            with self.subTest(path=path):
                _, h, body = self.srv.get(path)
                lm = one(h, "last-modified")
                lm_ts = H.parse_http_date(lm)
                st, h2, b2 = self._cond(path, {"If-Modified-Since": lm})
                self.assertEqual(st, 304, "If-Modified-Since equal to Last-Modified")
                self.assertEqual(b2, b"")
                self.assertEqual(one(h2, "etag"), one(h, "etag"))
                st, _, b2 = self._cond(path, {"If-Modified-Since": H.http_date(lm_ts - 3600)})
                self.assertEqual(st, 200, "If-Modified-Since earlier than Last-Modified")
                self.assertEqual(b2, body)
                # later than Last-Modified but not in the future
                while time.time() < lm_ts + 2.2:
                    time.sleep(0.1)
                st, _, b2 = self._cond(path, {"If-Modified-Since": H.http_date(lm_ts + 1)})
                self.assertEqual(st, 304, "If-Modified-Since later than Last-Modified")
                # If-None-Match takes precedence over If-Modified-Since
                st, _, b2 = self._cond(path, {"If-None-Match": '"different"', "If-Modified-Since": lm})
                self.assertEqual(st, 200, "non-matching If-None-Match must win over If-Modified-Since")
                self.assertEqual(b2, body)
                # an unparsable date is ignored
                st, _, b2 = self._cond(path, {"If-Modified-Since": "not a date"})
                self.assertEqual(st, 200)

    # ---- HEAD ---------------------------------------------------------------

    def test_head(self):
        for path, ctype in ((DISCOVERY, "application/json"), (JWKS, "application/jwk-set+json")):
            with self.subTest(path=path):
                gst, gh, gb = self.srv.get(path)
                st, h, b = self.srv.request("HEAD", path)
                self.assertEqual(st, 200)
                self.assertEqual(b, b"")
                self.assert_doc(st, h, b, gb, ctype, method="HEAD")
                for name in ("content-type", "cache-control", "etag", "last-modified",
                             "access-control-allow-origin", "content-length"):
                    self.assertEqual(one(h, name), one(gh, name), name)

    def test_head_raw_has_no_body(self):
        # http.client would silently discard a body after HEAD; check the wire.
        s = self.srv.raw_socket()
        try:
            s.sendall(b"HEAD /openid/v1/jwks HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /.well-known/openid-configuration HTTP/1.1\r\nHost: x\r\n\r\n")
            r = H.RawReader(s)
            st, h, _ = r.read_response("HEAD")
            self.assertEqual(st, 200)
            self.assertEqual(int(one(h, "content-length")), len(H.expected_jwks(self.all)))
            st, h, b = r.read_response("GET")
            self.assertEqual(st, 200)
            self.assertEqual(b, H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER), ["RS256", "ES256"]))
        finally:
            s.close()

    # ---- paths ----------------------------------------------------------------

    def test_query_string_ignored(self):
        for path, expected in ((JWKS, H.expected_jwks(self.all)),
                               (DISCOVERY, H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER),
                                                                ["RS256", "ES256"]))):
            for q in ("?x=1", "?", "?a=b&c=d"):
                st, h, b = self.srv.get(path + q)
                self.assertEqual(st, 200, path + q)
                self.assertEqual(b, expected, path + q)

    def test_not_found(self):
        for path in ("/.well-known", "/.well-known/", "/openid/v1/jwks/foo", "/", "/openid/v1/jwkss",
                     "/openid/v1", "/.well-known/openid-configuration/", "/openid/v1/jwks/",
                     "/.well-known/openid-configurationx", "/OPENID/V1/JWKS", "/nope?x=1"):
            with self.subTest(path=path):
                st, h, b = self.srv.get(path)
                self.assertEqual(st, 404)
                ctype = one(h, "content-type")
                self.assertEqual(ctype.split(";")[0].strip(), "application/json")
                self.assertEqual(int(one(h, "content-length")), len(b))
                doc = json.loads(b)
                self.assertIsInstance(doc, dict)
                self.assertIn("error", doc)

    def test_method_not_allowed(self):
        for path in (DISCOVERY, JWKS):
            for method in ("POST", "PUT", "DELETE", "PATCH"):
                with self.subTest(path=path, method=method):
                    st, h, b = self.srv.request(method, path, body=b"{}" if method != "DELETE" else None,
                                                headers={"Content-Type": "application/json"}
                                                if method != "DELETE" else None)
                    self.assertEqual(st, 405)
                    allow = [a.strip() for a in one(h, "allow").split(",")]
                    self.assertEqual(allow, ["GET", "HEAD"])

    # ---- connections ------------------------------------------------------

    def test_keep_alive(self):
        c = self.srv.conn()
        try:
            local = None
            for i in range(6):
                path = (DISCOVERY, JWKS, "/missing")[i % 3]
                st, h, b = H.do_request(c, "GET", path)
                self.assertEqual(st, 404 if path == "/missing" else 200)
                self.assertNotIn("close", ",".join(h.get("connection", [])).lower())
                name = c.sock.getsockname()
                if local is None:
                    local = name
                self.assertEqual(name, local, "server closed the keep-alive connection")
            # a conditional request and a HEAD on the same connection too
            st, h, _ = H.do_request(c, "HEAD", JWKS)
            self.assertEqual(st, 200)
            st, _, b = H.do_request(c, "GET", JWKS, {"If-None-Match": one(h, "etag")})
            self.assertEqual(st, 304)
            st, _, b = H.do_request(c, "GET", JWKS)
            self.assertEqual(b, H.expected_jwks(self.all))
            self.assertEqual(c.sock.getsockname(), local)
        finally:
            c.close()

    def test_pipelining(self):
        s = self.srv.raw_socket()
        try:
            reqs = (b"GET /.well-known/openid-configuration HTTP/1.1\r\nHost: issuer.example.com\r\n\r\n"
                    b"GET /openid/v1/jwks HTTP/1.1\r\nHost: issuer.example.com\r\n\r\n"
                    b"GET /nothing-here HTTP/1.1\r\nHost: issuer.example.com\r\n\r\n")
            s.sendall(reqs)
            r = H.RawReader(s)
            st, h, b = r.read_response()
            self.assertEqual(st, 200)
            self.assertEqual(b, H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER), ["RS256", "ES256"]))
            st, h, b = r.read_response()
            self.assertEqual(st, 200)
            self.assertEqual(b, H.expected_jwks(self.all))
            st, h, b = r.read_response()
            self.assertEqual(st, 404)
            self.assertIn("error", json.loads(b))
            # and the connection is still usable
            s.sendall(b"GET /openid/v1/jwks?again=1 HTTP/1.1\r\nHost: x\r\n\r\n")
            st, h, b = r.read_response()
            self.assertEqual(st, 200)
            self.assertEqual(b, H.expected_jwks(self.all))
        finally:
            s.close()

    def test_connection_close_and_http10(self):
        s = self.srv.raw_socket()
        try:
            s.sendall(b"GET /openid/v1/jwks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            r = H.RawReader(s)
            st, h, b = r.read_response()
            self.assertEqual(st, 200)
            self.assertEqual(b, H.expected_jwks(self.all))
            self.assertTrue(r.wait_closed(), "server kept the connection open after Connection: close")
        finally:
            s.close()
        s = self.srv.raw_socket()
        try:
            s.sendall(b"GET /.well-known/openid-configuration HTTP/1.0\r\n\r\n")
            r = H.RawReader(s)
            st, h, b = r.read_response()
            self.assertEqual(st, 200)
            self.assertEqual(b, H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER), ["RS256", "ES256"]))
            self.assertTrue(r.wait_closed(), "server kept an HTTP/1.0 connection open")
        finally:
            s.close()

    def test_absolute_form_request_target(self):
        # RFC 9112 section 3.2.2: a server MUST accept the absolute-form
        # (Go's net/http, i.e. kube-apiserver, routes it by its path).
        s = self.srv.raw_socket()
        try:
            s.sendall(b"GET http://issuer.example.com/openid/v1/jwks HTTP/1.1\r\n"
                      b"Host: issuer.example.com\r\n\r\n"
                      b"GET http://issuer.example.com/.well-known/openid-configuration?x=1 HTTP/1.1\r\n"
                      b"Host: issuer.example.com\r\n\r\n")
            r = H.RawReader(s)
            st, _, b = r.read_response()
            self.assertEqual(st, 200, "absolute-form GET of the JWKS: %r" % b[:100])
            self.assertEqual(b, H.expected_jwks(self.all))
            st, _, b = r.read_response()
            self.assertEqual(st, 200, "absolute-form GET of the discovery document: %r" % b[:100])
            self.assertEqual(b, H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER), ["RS256", "ES256"]))
        finally:
            s.close()

    def test_concurrent_clients(self):
        expected = {DISCOVERY: H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER), ["RS256", "ES256"]),
                    JWKS: H.expected_jwks(self.all)}
        errors = []

        def worker(n):
            try:
                c = self.srv.conn()
                try:
                    for i in range(20):
                        path = (DISCOVERY, JWKS)[(i + n) % 2]
                        st, _, b = H.do_request(c, "GET", path)
                        if st != 200 or b != expected[path]:
                            errors.append((n, i, st, b[:80]))
                finally:
                    c.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append((n, repr(e)))

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertFalse(any(t.is_alive() for t in threads), "clients hung")
        self.assertEqual(errors, [])

    def test_bad_request_does_not_kill_server(self):
        s = self.srv.raw_socket()
        try:
            s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
            try:
                data = s.recv(4096)
            except (socket.timeout, ConnectionResetError):
                data = b""
            if data:
                self.assertTrue(data.startswith(b"HTTP/1."), data[:100])
                self.assertNotIn(b" 200 ", data.split(b"\r\n", 1)[0])
        finally:
            s.close()
        st, _, b = self.srv.get(JWKS)
        self.assertEqual(st, 200)
        self.assertEqual(b, H.expected_jwks(self.all))


class KeyOrderAndFlags(H.ServerTestCase):

    def test_order_of_flags_then_blocks(self):
        r1 = self.keys.rsa()
        e256 = self.keys.ec("P-256")
        r2 = self.keys.rsa(3072)
        e384 = self.keys.ec("P-384")
        e521 = self.keys.ec("P-521")
        # file A: blocks e256, r1 ; file B: e521 ; file C: r2, e384
        fa = self.keys.concat("a.pem", e256.pub, r1.pub)
        fb = e521.pub
        fc = self.keys.concat("c.pem", r2.pub, e384.pub)
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", fa,
                                 "--service-account-key-file", fb,
                                 "--service-account-key-file", fc])
        order = [e256, r1, e521, r2, e384]
        self.check_both(srv, ISSUER, order)
        _, _, d = srv.get(DISCOVERY)
        self.assertEqual(json.loads(d)["id_token_signing_alg_values_supported"],
                         ["ES256", "ES384", "ES512", "RS256"])
        # the stderr log names every kid
        err = srv.stderr()
        for k in order:
            self.assertIn(k.kid, err)
        self.stop_ok(srv)

    def test_order_reversed_gives_reversed_keys(self):
        a = self.keys.ec("P-256")
        b = self.keys.ec("P-256")
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", b.pub,
                                 "--service-account-key-file", a.pub])
        self.check_both(srv, ISSUER, [b, a])
        self.stop_ok(srv)

    def test_rsa_exponent_and_sizes(self):
        r3 = self.keys.rsa(2048, pubexp=3)
        self.assertEqual(r3.jwk["e"], "Aw")
        r4096 = self.keys.rsa(4096)
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", r3.pub,
                                 "--service-account-key-file", r4096.pub])
        body = self.check_both(srv, ISSUER, [r3, r4096])
        self.assertIn(b'"e":"Aw"', body)
        # n is minimal: the DER sign byte is not published
        n0 = H.base64.urlsafe_b64decode(json.loads(body)["keys"][1]["n"] + "==")
        self.assertEqual(len(n0), 512)
        self.assertNotEqual(n0[0], 0)
        self.stop_ok(srv)

    def test_ec_coordinates_padded(self):
        short = self.keys.ec_with_short_coordinate("P-256")
        if short is None:
            self.skipTest("could not generate a P-256 key with a short coordinate in time")
        e521 = self.keys.ec("P-521")
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", short.pub,
                                 "--service-account-key-file", e521.pub])
        body = self.check_both(srv, ISSUER, [short, e521])
        keys = json.loads(body)["keys"]
        for k, size in ((keys[0], 32), (keys[1], 66)):
            for c in ("x", "y"):
                self.assertEqual(len(H.base64.urlsafe_b64decode(k[c] + "==")), size, (k["crv"], c))
        self.stop_ok(srv)

    def test_flags_content_type_max_age_no_cors(self):
        k = self.keys.ec("P-384")
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", k.pub,
                                 "--jwks-content-type", "application/json",
                                 "--max-age", "600",
                                 "--no-cors"])
        self.check_both(srv, ISSUER, [k], content_type="application/json", max_age=600, cors=False)
        st, h, _ = srv.request("HEAD", JWKS)
        self.assertNotIn("access-control-allow-origin", h)
        self.assertEqual(one(h, "cache-control"), "public, max-age=600")
        self.stop_ok(srv)

    def test_max_age_zero(self):
        k = self.keys.ec("P-256")
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", k.pub, "--max-age", "0"])
        self.check_both(srv, ISSUER, [k], max_age=0)
        self.stop_ok(srv)

    def test_jwks_uri_flag_and_issuers(self):
        k = self.keys.rsa()
        issuer = "https://kubernetes.default.svc/"   # trailing slash kept verbatim
        srv = self.start_server(["--service-account-issuer", issuer,
                                 "--service-account-issuer", "https://second.example",
                                 "--service-account-key-file", k.pub,
                                 "--service-account-jwks-uri", "https://cdn.example.net/sa/jwks.json"])
        self.check_both(srv, issuer, [k], jwks_uri="https://cdn.example.net/sa/jwks.json")
        self.stop_ok(srv)

    def test_default_jwks_uri_strips_trailing_slash(self):
        k = self.keys.rsa()
        issuer = "https://oidc.example.org/cluster-1/"
        srv = self.start_server(["--service-account-issuer", issuer,
                                 "--service-account-key-file", k.pub])
        _, _, d = srv.get(DISCOVERY)
        doc = json.loads(d)
        self.assertEqual(doc["issuer"], issuer)
        self.assertEqual(doc["jwks_uri"], "https://oidc.example.org/cluster-1/openid/v1/jwks")
        self.check_both(srv, issuer, [k])
        self.stop_ok(srv)

    def test_threads_flag(self):
        k = self.keys.ec("P-256")
        for n in ("1", "4"):
            with self.subTest(threads=n):
                srv = self.start_server(["--service-account-issuer", ISSUER,
                                         "--service-account-key-file", k.pub, "--threads", n])
                self.check_both(srv, ISSUER, [k])
                self.stop_ok(srv)

    def test_etag_same_across_instances(self):
        # Replicas behind a load balancer serving the same keys must agree on
        # the (strong) ETag, or caches revalidate forever.
        k = self.keys.rsa()
        args = ["--service-account-issuer", ISSUER, "--service-account-key-file", k.pub]
        a = self.start_server(args)
        b = self.start_server(args)
        for path in (DISCOVERY, JWKS):
            _, ha, ba = a.get(path)
            _, hb, bb = b.get(path)
            self.assertEqual(ba, bb)
            self.assertEqual(one(ha, "etag"), one(hb, "etag"), path)
        # and a different key set has a different JWKS ETag
        k2 = self.keys.rsa()
        c = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", k2.pub])
        self.assertNotEqual(one(a.get(JWKS)[1], "etag"), one(c.get(JWKS)[1], "etag"))
        for s in (a, b, c):
            self.stop_ok(s)


if __name__ == "__main__":
    unittest.main()
