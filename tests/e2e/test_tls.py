# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of HTTPS serving (`serve --tls-listen`).

Protocol versions (TLS 1.2 and 1.3 only), ALPN (h2 with --http2, and
http/1.1; tests/e2e/test_http2_hostile.py has HTTP/2 off by default), the same
documents and headers as the plain listener, certificate reload from
atomically renamed files and from a kubelet-style `..data` Secret volume
(with a keep-alive connection opened before the swap surviving it), a
mismatched pair at start and during reload, and two independent clients:
panva's openid-client 5.x (node) discovering the issuer over TLS, and
h2load (nghttp2) hammering the JWKS over HTTP/2.

A test CA and server certificates (subjectAltName IP:127.0.0.1 and
DNS:localhost) are made with the openssl CLI in a temporary directory.
"""

import datetime
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("prometheus_client")

ISSUER = "https://issuer.example"
RELOAD_WINDOW = 3.0  # a swapped certificate must be served within this


def no_openssl_conf_env():
    """An environment in which openssl ignores the system configuration
    (Debian's sets MinProtocol = TLSv1.2 for every client), so that a TLS
    1.1 client really offers TLS 1.1 and only the server can refuse it."""
    env = dict(os.environ)
    env["OPENSSL_CONF"] = "/dev/null"
    return env


def s_client(port, *flags):
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-servername", "localhost",
                        *flags], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20,
                       env=no_openssl_conf_env())
    return r.returncode, r.stdout + r.stderr


class TLSBase(H.SanitizerCheck, H.TLSServerTestCase):

    def setUp(self):
        super().setUp()
        self.key = self.keys.ec()
        self.cert1, self.tkey1 = self.new_cert("server1")

    def base_args(self, issuer=ISSUER, keys=None):
        args = ["--service-account-issuer", issuer]
        for k in keys or [self.key]:
            args += ["--service-account-key-file", k.priv]
        return args

    def wait_for_cert(self, port, cert, timeout=RELOAD_WINDOW):
        want = H.cert_fingerprint(cert)
        got = H.wait_until(lambda: H.tls_peer_fingerprint(port, self.ca_cert) == want, timeout, interval=0.1)
        return bool(got)

    def keep_alive_connection(self, srv):
        """A TLS connection that has had one answer, to keep open across a
        certificate swap: (socket, its RawReader)."""
        conn = H.tls_connect(srv.tls_port, self.ca_cert)
        self.addCleanup(conn.close)
        reader = H.RawReader(conn)
        H.raw_request(conn, H.JWKS)
        self.assertEqual(reader.read_response()[0], 200)
        return conn, reader


class TestProtocols(TLSBase):

    def test_tls12_and_tls13_accepted(self):
        srv = self.start_tls_server(self.base_args(), self.cert1, self.tkey1)
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            with self.subTest(version=version.name):
                ctx = H.tls_context(self.ca_cert)
                ctx.minimum_version = version
                ctx.maximum_version = version
                raw = H.socket.create_connection(("127.0.0.1", srv.tls_port), timeout=H.SOCK_TIMEOUT)
                with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                    self.assertEqual(s.version(), version.name.replace("v1_", "v1."))
                    H.raw_request(s, H.JWKS)
                    st, h, body = H.RawReader(s).read_response()
                    self.assertEqual(st, 200)
                    self.assertEqual(body, H.expected_jwks([self.key]))
        # the same with the openssl CLI
        for flag, name in (("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")):
            rc, out = s_client(srv.tls_port, flag, "-CAfile", self.ca_cert)
            self.assertEqual(rc, 0, out)
            self.assertRegex(out, r"New, %s, Cipher is (?!\(NONE\))" % re.escape(name), out)
            self.assertIn("Verify return code: 0 (ok)", out)

    def test_tls_only_server(self):
        """--listen none: the documents over TLS only, no plain-http port;
        the certificate's expiry is logged as a time, not a raw number."""
        srv = self.start_tls_server(self.base_args() + ["--listen", "none"], self.cert1, self.tkey1, listen=False)
        self.assertNotRegex(srv.stderr(), r"listening on http://\S+ \(\d+ threads?\): http://",
                            "no plain-http listener serves the documents")
        st, h, body = H.https_request(srv.tls_port, "GET", H.JWKS, self.ca_cert)
        self.assertEqual(st, 200)
        self.assertEqual(body, H.expected_jwks([self.key]))
        expiry = datetime.datetime.fromtimestamp(H.cert_not_after(self.cert1), datetime.timezone.utc)
        self.assertIn("(expires %s)" % expiry.strftime("%Y-%m-%dT%H:%M:%SZ"), srv.stderr())

    def test_tls11_and_tls10_refused(self):
        srv = self.start_tls_server(self.base_args(), self.cert1, self.tkey1)
        for flag in ("-tls1_1", "-tls1"):
            with self.subTest(flag=flag):
                # SECLEVEL=0 and no system configuration: the client is as
                # willing as it can be; the refusal must be the server's.
                rc, out = s_client(srv.tls_port, flag, "-cipher", "DEFAULT:@SECLEVEL=0")
                self.assertNotEqual(rc, 0, out)
                self.assertNotRegex(out, r"New, TLSv1(\.[01])?, Cipher is (?!\(NONE\))", out)
        # the server still serves afterwards
        st, h, b = H.https_request(srv.tls_port, "GET", H.JWKS, self.ca_cert)
        self.assertEqual(st, 200)

    def test_alpn_h2_and_http11(self):
        srv = self.start_tls_server(self.base_args() + ["--http2"], self.cert1, self.tkey1)
        with H.tls_connect(srv.tls_port, self.ca_cert, alpn=["h2", "http/1.1"]) as s:
            self.assertEqual(s.selected_alpn_protocol(), "h2")
        # A client offering only http/1.1 gets HTTP/1.1. (h2o 2.2.5 leaves
        # ALPN unnegotiated then instead of echoing http/1.1; RFC 7301 lets
        # such a client go on with HTTP/1.1, which is what matters here.)
        with H.tls_connect(srv.tls_port, self.ca_cert, alpn=["http/1.1"]) as s:
            self.assertIn(s.selected_alpn_protocol(), ("http/1.1", None))
            H.raw_request(s, H.JWKS)
            st, h, body = H.RawReader(s).read_response()
            self.assertEqual((st, body), (200, H.expected_jwks([self.key])))
        url = "https://127.0.0.1:%d%s" % (srv.tls_port, H.JWKS)
        for flag, version in (("--http2", "2"), ("--http1.1", "1.1")):
            r = H.curl("--cacert", self.ca_cert, flag, "-o", "/dev/null", "-w", "%{http_version} %{http_code}", url)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "%s 200" % version)

    def test_same_documents_and_headers_as_plain(self):
        srv = self.start_tls_server(self.base_args() + ["--http2"], self.cert1, self.tkey1)
        compare = ("content-type", "content-length", "etag", "last-modified", "cache-control",
                   "access-control-allow-origin")
        for path in (H.DISCOVERY, H.JWKS):
            pst, ph, pb = srv.get(path)
            self.assertEqual(pst, 200)
            # HTTP/1.1 over TLS
            st, h, b = H.https_request(srv.tls_port, "GET", path, self.ca_cert)
            self.assertEqual((st, b), (pst, pb))
            for name in compare:
                self.assertEqual(h.get(name), ph.get(name), name)
            # conditional request over TLS
            st, h, b = H.https_request(srv.tls_port, "GET", path, self.ca_cert,
                                       headers={"If-None-Match": H.one(ph, "etag")})
            self.assertEqual((st, b), (304, b""))
            # HTTP/2 (curl prints lower-case header names)
            hdr = os.path.join(self.tmp, "h2-headers")
            body = os.path.join(self.tmp, "h2-body")
            r = H.curl("--cacert", self.ca_cert, "--http2", "-D", hdr, "-o", body, "-w", "%{http_version}",
                       "https://127.0.0.1:%d%s" % (srv.tls_port, path))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "2")
            self.assertEqual(H.read_bytes(body), pb)
            lines = H.read_bytes(hdr).decode().split("\r\n")
            self.assertRegex(lines[0], r"^HTTP/2 200")
            h2 = {}
            for line in lines[1:]:
                if ":" in line:
                    k, _, v = line.partition(":")
                    h2.setdefault(k.strip().lower(), []).append(v.strip())
            for name in compare:
                self.assertEqual(h2.get(name), ph.get(name), "HTTP/2 %s" % name)


class TestCertificateReload(TLSBase):

    def test_atomic_rename_swap(self):
        cert = os.path.join(self.tmp, "tls.crt")
        key = os.path.join(self.tmp, "tls.key")
        shutil.copy(self.cert1, cert)
        shutil.copy(self.tkey1, key)
        srv = self.start_tls_server(self.base_args(), cert, key)
        self.assertEqual(H.tls_peer_fingerprint(srv.tls_port, self.ca_cert), H.cert_fingerprint(self.cert1))

        # a keep-alive connection opened before the swap
        old, reader = self.keep_alive_connection(srv)

        cert2, tkey2 = self.new_cert("server2")
        self.assertNotEqual(H.cert_fingerprint(cert2), H.cert_fingerprint(self.cert1))
        H.atomic_write(key, H.read_bytes(tkey2))
        H.atomic_write(cert, H.read_bytes(cert2))
        self.assertTrue(self.wait_for_cert(srv.tls_port, cert2),
                        "new connections still get the old certificate after %.0fs; stderr:\n%s"
                        % (RELOAD_WINDOW, srv.stderr()))

        # the old connection still works, with the old certificate
        H.raw_request(old, H.DISCOVERY)
        st, h, body = reader.read_response()
        self.assertEqual(st, 200)
        self.assertEqual(H.hashlib.sha256(old.getpeercert(binary_form=True)).hexdigest(),
                         H.cert_fingerprint(self.cert1))
        # and requests on new connections work
        st, h, b = H.https_request(srv.tls_port, "GET", H.JWKS, self.ca_cert)
        self.assertEqual((st, b), (200, H.expected_jwks([self.key])))
        # the expiry gauge follows the served certificate
        m = H.scrape_metrics(srv.admin_port)
        self.assertEqual(H.metric(m, "oidc_tls_certificate_expiry_timestamp_seconds"), H.cert_not_after(cert2))

    def test_connections_silent_across_a_swap_still_handshake(self):
        """A TLS connection accepted before a swap whose ClientHello comes
        after it: h2o makes its SSL object only when the first bytes
        arrive, from the context the connection was accepted with, which
        must still be alive (it was freed under it once: memcheck and ASan
        reported the use after free, and the handshake could fail)."""
        cert = os.path.join(self.tmp, "tls.crt")
        key = os.path.join(self.tmp, "tls.key")
        shutil.copy(self.cert1, cert)
        shutil.copy(self.tkey1, key)
        srv = self.start_tls_server(self.base_args(), cert, key)
        silent = [socket.create_connection(("127.0.0.1", srv.tls_port), timeout=H.SOCK_TIMEOUT) for _ in range(4)]
        for s in silent:
            self.addCleanup(s.close)
        # the server has accepted them (and closes none) before the swap
        time.sleep(0.2)
        cert2, tkey2 = self.new_cert("server2")
        H.atomic_write(key, H.read_bytes(tkey2))
        H.atomic_write(cert, H.read_bytes(cert2))
        self.assertTrue(self.wait_for_cert(srv.tls_port, cert2), srv.stderr())
        ctx = H.tls_context(self.ca_cert, ("http/1.1",))
        for i, raw in enumerate(silent):
            with self.subTest(connection=i):
                conn = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
                self.assertEqual(H.hashlib.sha256(conn.getpeercert(binary_form=True)).hexdigest(),
                                 H.cert_fingerprint(self.cert1))
                H.raw_request(conn, H.JWKS)
                st, h, body = H.RawReader(conn).read_response()
                self.assertEqual((st, body), (200, H.expected_jwks([self.key])))

    def test_secret_volume_data_swap(self):
        vol = H.secret_dir_create(os.path.join(self.tmp, "tls"), {
            "tls.crt": H.read_bytes(self.cert1), "tls.key": H.read_bytes(self.tkey1)})
        srv = self.start_tls_server(self.base_args(), os.path.join(vol, "tls.crt"), os.path.join(vol, "tls.key"))
        self.assertEqual(H.tls_peer_fingerprint(srv.tls_port, self.ca_cert), H.cert_fingerprint(self.cert1))

        old, reader = self.keep_alive_connection(srv)

        for i, stamp in enumerate(("..2026_02", "..2026_03"), start=2):
            cert, tkey = self.new_cert("server%d" % i)
            H.secret_dir_swap(vol, {"tls.crt": H.read_bytes(cert), "tls.key": H.read_bytes(tkey)}, stamp)
            self.assertTrue(self.wait_for_cert(srv.tls_port, cert),
                            "swap %s not picked up within %.0fs; stderr:\n%s" % (stamp, RELOAD_WINDOW, srv.stderr()))
            H.raw_request(old, H.JWKS)
            st, h, body = reader.read_response()
            self.assertEqual((st, body), (200, H.expected_jwks([self.key])))
        self.assertEqual(H.count_log(srv, r"TLS certificate reload failed"), 0, srv.stderr())
        m = H.scrape_metrics(srv.admin_port)
        self.assertEqual(H.metric(m, "oidc_reload_failures_total", source="tls"), 0)

    def test_mismatched_pair_at_start(self):
        cert2, tkey2 = self.new_cert("server2")
        rc, out, err = H.run_once(["serve", *self.base_args(), "--listen", "127.0.0.1:0",
                                   "--admin-listen", "127.0.0.1:0",
                                   "--tls-listen", "127.0.0.1:0",
                                   "--tls-cert-file", self.cert1, "--tls-private-key-file", tkey2])
        self.assertIsNotNone(rc, "server kept running with a mismatched certificate and key")
        self.assertNotEqual(rc, 0)
        self.assertTrue(self.cert1 in err or tkey2 in err, "message names neither file: %r" % err)
        self.assertIn("cannot start: TLS certificate unusable: ", err, "a start-up error, not a reload's")
        self.assertNotIn("reload", err)
        # a missing certificate file
        missing = os.path.join(self.tmp, "missing.crt")
        rc, out, err = H.run_once(["serve", *self.base_args(), "--listen", "127.0.0.1:0",
                                   "--admin-listen", "127.0.0.1:0",
                                   "--tls-listen", "127.0.0.1:0",
                                   "--tls-cert-file", missing, "--tls-private-key-file", self.tkey1])
        self.assertNotIn(rc, (0, None))
        self.assertIn(missing, err)

    def test_bad_pair_during_reload_keeps_old_certificate(self):
        cert = os.path.join(self.tmp, "tls.crt")
        key = os.path.join(self.tmp, "tls.key")
        shutil.copy(self.cert1, cert)
        shutil.copy(self.tkey1, key)
        srv = self.start_tls_server(self.base_args(), cert, key)
        before = H.metric(H.scrape_metrics(srv.admin_port), "oidc_reload_failures_total", source="tls")
        self.assertEqual(before, 0)

        # a certificate that does not match the key on disk
        cert2, tkey2 = self.new_cert("server2")
        H.atomic_write(cert, H.read_bytes(cert2))
        self.assertGreaterEqual(H.wait_for_log(srv, r"TLS certificate reload failed", 1, RELOAD_WINDOW), 1,
                                srv.stderr())
        self.assertEqual(H.tls_peer_fingerprint(srv.tls_port, self.ca_cert), H.cert_fingerprint(self.cert1))
        st, h, b = H.https_request(srv.tls_port, "GET", H.JWKS, self.ca_cert)
        self.assertEqual((st, b), (200, H.expected_jwks([self.key])))
        m = H.scrape_metrics(srv.admin_port)
        self.assertGreaterEqual(H.metric(m, "oidc_reload_failures_total", source="tls"), 1)
        self.assertEqual(H.metric(m, "oidc_tls_certificate_expiry_timestamp_seconds"), H.cert_not_after(self.cert1))

        # garbage is no better
        H.atomic_write(cert, b"not a certificate\n")
        n = H.count_log(srv, r"TLS certificate reload failed")
        H.wait_for_log(srv, r"TLS certificate reload failed", n + 1, RELOAD_WINDOW)
        self.assertEqual(H.tls_peer_fingerprint(srv.tls_port, self.ca_cert), H.cert_fingerprint(self.cert1))

        # the matching key arrives: the new pair is served
        H.atomic_write(cert, H.read_bytes(cert2))
        H.atomic_write(key, H.read_bytes(tkey2))
        self.assertTrue(self.wait_for_cert(srv.tls_port, cert2), srv.stderr())


class TestIndependentClients(TLSBase):

    def test_openid_client_discovers_issuer(self):
        problem = H.node_problem("discover_openid_client.mjs")
        if problem is None and not os.path.isdir(os.path.join(H.NODE_DIR, "node_modules", "openid-client")):
            problem = "%s/node_modules/openid-client is missing; run `npm ci` in %s" % (H.NODE_DIR, H.NODE_DIR)
        if problem:
            self.fail(problem)
        rsa = self.keys.rsa()
        port = H.free_port()
        issuer = "https://127.0.0.1:%d" % port
        srv = self.start_tls_server(self.base_args(issuer, [rsa, self.key]), self.cert1, self.tkey1, tls_port=port)
        token = H.mint_token(rsa.priv, issuer, audiences=["test-aud"])
        script = os.path.join(H.NODE_DIR, "discover_openid_client.mjs")

        def run(*args, ca=True):
            env = dict(os.environ)
            env.pop("NODE_EXTRA_CA_CERTS", None)
            if ca:
                env["NODE_EXTRA_CA_CERTS"] = self.ca_cert
            r = subprocess.run(["node", script, *args], cwd=H.NODE_DIR, env=env, capture_output=True, text=True,
                               timeout=H.NODE_TIMEOUT)
            return r.returncode, r.stdout, r.stderr

        rc, out, err = run(issuer, token, "test-aud", "RS256")
        self.assertEqual(rc, 0, out + err)
        doc = json.loads(out)
        self.assertEqual(doc["issuer"], issuer)
        self.assertEqual(doc["jwks_uri"], issuer + "/openid/v1/jwks")
        self.assertEqual(sorted(doc["kids"]), sorted([rsa.kid, self.key.kid]))
        self.assertEqual(doc["validated"], "system:serviceaccount:default:default")
        # the relying party really checks: wrong audience, untrusted CA
        rc, out, err = run(issuer, token, "other-aud", "RS256")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("aud", out)
        rc, out, err = run(issuer, ca=False)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("FAIL", out)
        srv.stop()

    def test_h2load_all_2xx(self):
        if shutil.which("h2load") is None:
            self.fail("h2load is not on PATH; install nghttp2-client (scripts/setup.sh)")
        srv = self.start_tls_server(self.base_args() + ["--http2"], self.cert1, self.tkey1)
        before = H.scrape_metrics(srv.admin_port)
        r = subprocess.run(["h2load", "-n", "200", "-c", "2", "-m", "10",
                            "https://127.0.0.1:%d%s" % (srv.tls_port, H.JWKS)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"Application protocol: h2\b")
        self.assertRegex(r.stdout, r"requests: 200 total, 200 started, 200 done, 200 succeeded, 0 failed, 0 errored",
                         r.stdout)
        self.assertRegex(r.stdout, r"status codes: 200 2xx, 0 3xx, 0 4xx, 0 5xx", r.stdout)
        key = ("oidc_http_requests_total", frozenset({"path": H.JWKS, "method": "GET", "status": "200"}.items()))
        after = H.scrape_until(srv.admin_port, lambda m: m.get(key, 0) - before.get(key, 0) >= 200)
        self.assertEqual(after.get(key, 0) - before.get(key, 0), 200)


if __name__ == "__main__":
    unittest.main()
