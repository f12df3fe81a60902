# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of the production-serving options that shape requests
and logs: `--listen unix:PATH`, `--path-prefix`, `--allowed-hosts` (HTTP/1.1
Host and HTTP/2 :authority), `--access-log` (file and standard output, JSON
lines that stay valid for hostile input) and `--log-format json`.
"""

import json
import os
import re
import signal
import socket
import stat
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("prometheus_client")

ISSUER = "https://issuer.example"
ACCESS_FIELDS = ("time", "remote", "method", "path", "status", "bytes", "duration_us", "user_agent", "protocol")
# Lines are flushed every 100 ms; the waits below end as soon as the lines
# are there, and this only bounds them on a machine busy with other work.
ACCESS_WINDOW = 30.0


def read_json_lines(path):
    """(parsed objects, raw lines) of a JSON-lines file; a line that does
    not parse raises with the line in the message."""
    try:
        data = H.read_bytes(path)
    except OSError:
        return [], []
    objs, raws = [], []
    for raw in data.split(b"\n"):
        if not raw:
            continue
        try:
            text = raw.decode("utf-8")
            objs.append(json.loads(text))
        except ValueError as e:
            raise AssertionError("access log line is not UTF-8 JSON (%s): %r" % (e, raw))
        raws.append(raw)
    return objs, raws


def strip_lsan_suppressions(raw: bytes) -> bytes:
    """Drops the "Suppressions used" table LeakSanitizer prints at exit in
    the sanitizer build (-DOIDC_SANITIZE=ON); real sanitizer errors stay."""
    return re.sub(rb"-{20,}\nSuppressions used:\n.*?-{20,}\n\n?", b"", raw, flags=re.S)


def http1(host_port, raw: bytes, unix=None):
    """Sends raw bytes on a fresh connection (Connection: close expected)
    and returns (status, whole response bytes)."""
    if unix:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(H.SOCK_TIMEOUT)
        s.connect(unix)
    else:
        s = socket.create_connection(host_port, timeout=H.SOCK_TIMEOUT)
    with s:
        s.sendall(raw)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    m = re.match(rb"HTTP/1\.[01] ([0-9]{3})", data)
    return (int(m.group(1)) if m else None), data


def host_get(srv, host, path=H.JWKS):
    st, data = http1((srv.host, srv.port),
                     b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path.encode(), host.encode()))
    return st


class TestUnixSocket(H.SanitizerCheck, H.ServerTestCase):

    def test_unix_listener(self):
        key = self.keys.ec()
        sock = os.path.join(self.tmp, "oidc.sock")
        # only the Unix socket publicly
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", key.priv,
                                 "--listen", "unix:" + sock], listen=False)
        H.wait_until(lambda: os.path.exists(sock), 3.0)
        r = H.curl("--unix-socket", sock, "-w", "\n%{http_code}", "http://localhost" + H.JWKS)
        self.assertEqual(r.returncode, 0, r.stderr)
        body, _, code = r.stdout.rpartition("\n")
        self.assertEqual(code, "200")
        self.assertEqual(body.encode(), H.expected_jwks([key]))
        st, data = http1(None, b"GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                         % H.DISCOVERY.encode(), unix=sock)
        self.assertEqual(st, 200)
        self.assertTrue(data.endswith(H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER), [key.alg])))
        # any local user may connect (a reverse proxy of another user), and
        # that is the mode the socket has from its creation, whatever the umask
        self.assertEqual(stat.S_IMODE(os.lstat(sock).st_mode), 0o666)
        self.stop_ok(srv)

    def test_a_directory_others_can_write_is_refused(self):
        # there, anyone could swap the socket for a link between bind and
        # chmod, and have the file it names made 0666
        key = self.keys.ec()
        shared = os.path.join(self.tmp, "shared")
        os.mkdir(shared)
        sock = os.path.join(shared, "oidc.sock")
        for mode in (0o777, 0o1777, 0o770):
            with self.subTest(mode=oct(mode)):
                os.chmod(shared, mode)
                rc, out, err = H.run_once(["serve", "--service-account-issuer", ISSUER, "--service-account-key-file",
                                           key.priv, "--listen", "unix:" + sock, "--admin-listen", "none"])
                self.assertEqual(rc, 1, err)
                self.assertIn("--listen unix:%s: the socket's directory %s is writable by group or others (mode %04o)"
                              % (sock, shared, mode), err)
                self.assertFalse(os.path.lexists(sock))


class TestPathPrefix(H.SanitizerCheck, H.ServerTestCase):

    def test_prefixed_documents(self):
        key = self.keys.ec()
        issuer = "https://issuer.example/oidc"
        srv = self.start_server(["--service-account-issuer", issuer, "--service-account-key-file", key.priv,
                                 "--path-prefix", "/oidc"])
        st, h, b = srv.get("/oidc" + H.DISCOVERY)
        self.assertEqual(st, 200)
        doc = json.loads(b)
        self.assertEqual(doc["issuer"], issuer)
        st, h, b = srv.get("/oidc" + H.JWKS)
        self.assertEqual((st, b), (200, H.expected_jwks([key])))
        for path in (H.DISCOVERY, H.JWKS, "/oidcx" + H.JWKS, "/oid" + H.JWKS):
            st, h, b = srv.get(path)
            self.assertEqual(st, 404, path)
        # HEAD and conditional requests work under the prefix too
        st, h, b = srv.request("HEAD", "/oidc" + H.JWKS)
        self.assertEqual((st, b), (200, b""))
        st, h2, b = srv.get("/oidc" + H.JWKS, headers={"If-None-Match": H.one(h, "etag")})
        self.assertEqual(st, 304)


class TestAllowedHosts(H.SanitizerCheck, H.TLSServerTestCase):

    def test_host_and_authority(self):
        key = self.keys.ec()
        cert, tkey = self.new_cert("server")
        srv = self.start_tls_server(["--service-account-issuer", ISSUER, "--service-account-key-file", key.priv,
                                     "--allowed-hosts", "a.example.com,b.example.com:8443", "--http2"], cert, tkey)
        cases = [("a.example.com", 200), ("A.EXAMPLE.COM:1234", 200), ("a.example.com:80", 200),
                 ("b.example.com:8443", 200), ("b.example.com:9", 421), ("b.example.com", 421),
                 ("c.example.com", 421), ("example.com", 421), ("a.example.com.evil", 421),
                 ("127.0.0.1:%d" % srv.port, 421)]
        for host, want in cases:
            with self.subTest(proto="HTTP/1.1", host=host):
                self.assertEqual(host_get(srv, host), want)
        # the same over HTTP/2, where the Host header becomes :authority
        url = "https://127.0.0.1:%d%s" % (srv.tls_port, H.JWKS)
        for host, want in cases:
            with self.subTest(proto="HTTP/2", host=host):
                r = H.curl("--cacert", self.ca_cert, "--http2", "-H", "Host: " + host, "-o", "/dev/null",
                           "-w", "%{http_version} %{http_code}", url)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout, "2 %d" % want)
        # and HTTP/1.1 over TLS
        st, h, b = H.https_request(srv.tls_port, "GET", H.JWKS, self.ca_cert, headers={"Host": "b.example.com:8443"})
        self.assertEqual((st, b), (200, H.expected_jwks([key])))
        st, h, b = H.https_request(srv.tls_port, "GET", H.JWKS, self.ca_cert, headers={"Host": "evil.example"})
        self.assertEqual(st, 421)

    def test_absolute_form_authority_is_the_host(self):
        """RFC 9112 3.2.2: with an absolute-form target the server must
        ignore Host and use the target's authority. Before, an allowed Host
        let any authority through."""
        key = self.keys.ec()
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", key.priv,
                                 "--allowed-hosts", "a.example.com,b.example.com:8443"])
        cases = [("http://evil.example", "a.example.com", 421), ("http://evil.example:8443", "b.example.com:8443", 421),
                 ("http://a.example.com.evil", "a.example.com", 421), ("https://b.example.com:9", "a.example.com", 421),
                 ("http://a.example.com", "evil.example", 200), ("http://A.Example.COM:80", "a.example.com", 200),
                 ("https://b.example.com:8443", "evil.example", 200)]
        for target, host, want in cases:
            with self.subTest(target=target, host=host):
                st, data = http1((srv.host, srv.port), b"GET %s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                                 % (target.encode(), H.JWKS.encode(), host.encode()))
                self.assertEqual(st, want)
                if want == 200:
                    self.assertTrue(data.endswith(H.expected_jwks([key])))
        # with a query and without a path: the authority ends at either
        st, _ = http1((srv.host, srv.port), b"GET http://evil.example?x=/openid/v1/jwks HTTP/1.1\r\n"
                      b"Host: a.example.com\r\nConnection: close\r\n\r\n")
        self.assertEqual(st, 421)

    def test_any_host_by_default(self):
        key = self.keys.ec()
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", key.priv])
        for host in ("a.example.com", "whatever:1", "127.0.0.1"):
            self.assertEqual(host_get(srv, host), 200, host)


class TestAccessLog(H.SanitizerCheck, H.TLSServerTestCase):

    def setUp(self):
        super().setUp()
        self.started = time.monotonic()

    def wait_lines(self, path, n):
        H.wait_until(lambda: len(read_json_lines(path)[0]) >= n, ACCESS_WINDOW * H.SLOW)
        return read_json_lines(path)

    def check_line(self, line):
        for f in ACCESS_FIELDS:
            self.assertIn(f, line)
        self.assertRegex(line["time"], r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")
        self.assertRegex(line["remote"], r"^127\.0\.0\.1:[0-9]+$")
        self.assertIsInstance(line["status"], int)
        self.assertIsInstance(line["bytes"], int)
        # no request of the test can have taken longer than the test so far
        self.assertIsInstance(line["duration_us"], int)
        elapsed_us = (time.monotonic() - self.started) * 1e6
        self.assertTrue(0 <= line["duration_us"] <= elapsed_us, "duration_us %d, but the test has run %d us"
                        % (line["duration_us"], elapsed_us))
        self.assertIn(line["protocol"], ("HTTP/1.1", "HTTP/2", "HTTP/1.0"))

    def test_file_lines(self):
        key = self.keys.ec()
        cert, tkey = self.new_cert("server")
        log = os.path.join(self.tmp, "access.log")
        srv = self.start_tls_server(["--service-account-issuer", ISSUER, "--service-account-key-file", key.priv,
                                     "--access-log", log, "--http2"], cert, tkey)
        c = srv.conn()
        st, h, jwks = H.do_request(c, "GET", H.JWKS, {"User-Agent": "e2e-agent/1"})
        st2, _, _ = H.do_request(c, "GET", H.JWKS, {"User-Agent": "e2e-agent/1", "If-None-Match": H.one(h, "etag")})
        st3, _, _ = H.do_request(c, "GET", "/nope", {"User-Agent": "e2e-agent/1"})
        st4, _, _ = H.do_request(c, "HEAD", H.DISCOVERY, {"User-Agent": "e2e-agent/1"})
        c.close()
        self.assertEqual((st, st2, st3, st4), (200, 304, 404, 200))
        # written while the server runs, by the periodic flush
        lines, _ = self.wait_lines(log, 4)
        self.assertEqual(len(lines), 4, lines)
        for line in lines:
            self.check_line(line)
            self.assertEqual(line["protocol"], "HTTP/1.1")
            self.assertEqual(line["user_agent"], "e2e-agent/1")
        got = sorted((l["method"], l["path"], l["status"]) for l in lines)
        self.assertEqual(got, sorted([("GET", H.JWKS, 200), ("GET", H.JWKS, 304), ("GET", "/nope", 404),
                                      ("HEAD", H.DISCOVERY, 200)]))
        by = {(l["path"], l["status"]): l for l in lines}
        self.assertEqual(by[(H.JWKS, 200)]["bytes"], len(jwks))
        self.assertEqual(by[(H.JWKS, 304)]["bytes"], 0)
        # one remote port for the keep-alive connection
        self.assertEqual(len({l["remote"] for l in lines}), 1)

        # HTTP/2 over TLS
        r = H.curl("--cacert", self.ca_cert, "--http2", "-A", "curl-h2-agent", "-o", "/dev/null", "-w",
                   "%{http_version}", "https://127.0.0.1:%d%s" % (srv.tls_port, H.JWKS))
        self.assertEqual(r.stdout, "2", r.stderr)
        lines, _ = self.wait_lines(log, 5)
        self.assertEqual(len(lines), 5)
        h2 = [l for l in lines if l["user_agent"] == "curl-h2-agent"]
        self.assertEqual(len(h2), 1, lines)
        self.check_line(h2[0])
        self.assertEqual((h2[0]["protocol"], h2[0]["status"], h2[0]["bytes"]), ("HTTP/2", 200, len(jwks)))
        # admin requests are not public traffic
        H.admin_get(srv.admin_port, "/metrics")
        time.sleep(0.3)
        self.assertEqual(len(read_json_lines(log)[0]), 5)

    def test_hostile_input_stays_json(self):
        key = self.keys.ec()
        cert, tkey = self.new_cert("server")
        log = os.path.join(self.tmp, "access.log")
        srv = self.start_tls_server(["--service-account-issuer", ISSUER, "--service-account-key-file", key.priv,
                                     "--access-log", log, "--http2"], cert, tkey)
        agents = [b'quote"back\\slash', b'tab\there', b'\xff\xfe not utf-8 \xc3( \xe2\x82', b'\\u0000"}{',
                  b'</script>\xc2\xa0\xf0\x9f\x98\x80', b"'single' %s %n {{x}}"]
        sent = 0
        for ua in agents:
            st, data = http1((srv.host, srv.port), b"GET %s HTTP/1.1\r\nHost: x\r\nUser-Agent: %s\r\n"
                             b"Connection: close\r\n\r\n" % (H.JWKS.encode(), ua))
            self.assertEqual(st, 200, ua)
            sent += 1
        # a hostile path (404), and control characters, which h2o's HTTP/1.1
        # parser refuses (so nothing is logged)
        st, data = http1((srv.host, srv.port), b'GET /a"b\\c\xff\x80?q="\\ HTTP/1.1\r\nHost: x\r\n'
                         b"Connection: close\r\n\r\n")
        self.assertEqual(st, 404)
        sent += 1
        for ua in (b"ctl\x01\x1b[31m\x7f", b"nul\x00byte"):
            st, data = http1((srv.host, srv.port), b"GET %s HTTP/1.1\r\nHost: x\r\nUser-Agent: %s\r\n"
                             b"Connection: close\r\n\r\n" % (H.JWKS.encode(), ua))
            # h2o's answer, not ours: picohttpparser takes no control
            # character but tab in a field value, and h2o answers 400
            self.assertEqual(st, 400, ua)
            self.assertTrue(data.endswith(b"\r\n\r\nBad Request"), data)
        # HTTP/2 carries header values as opaque bytes, but h2o's HPACK
        # decoder (lib/http2/hpack.c, not our code) checks them against RFC
        # 7230 and answers 400 too
        r = H.curl("--cacert", self.ca_cert, "--http2", "-H", "User-Agent: h2\x01ctl\x1b\x7f\"\\end",
                   "-o", "/dev/null", "-w", "%{http_code}", "https://127.0.0.1:%d%s" % (srv.tls_port, H.JWKS))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "400")
        # a server still alive and logging
        st, h, b = srv.get(H.JWKS, headers={"User-Agent": "final-marker"})
        self.assertEqual(st, 200)
        sent += 1
        H.wait_until(lambda: len(read_json_lines(log)[0]) >= sent and
                     any(l.get("user_agent") == "final-marker" for l in read_json_lines(log)[0]),
                     ACCESS_WINDOW * H.SLOW)
        lines, raws = read_json_lines(log)  # raises on any line that is not JSON
        self.assertGreaterEqual(len(lines), sent)
        for line in lines:
            self.check_line(line)
        uas = [l["user_agent"] for l in lines]
        self.assertIn('quote"back\\slash', uas)
        self.assertIn("tab\there", uas)
        self.assertIn('\\u0000"}{', uas)
        self.assertIn("final-marker", uas)
        # non-UTF-8 bytes come out as valid UTF-8 (replaced or escaped)
        self.assertTrue(any(u and "not utf-8" in u for u in uas), uas)
        paths = [l["path"] for l in lines if l["status"] == 404]
        self.assertEqual(len(paths), 1)
        self.assertTrue(paths[0].startswith('/a"b\\c'), paths)
        # no raw control character or unescaped byte in the file
        for raw in raws:
            self.assertFalse(any(b < 0x20 for b in raw), raw)

    def test_stdout(self):
        key = self.keys.ec()
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", key.priv,
                                 "--access-log", "-"])
        for _ in range(3):
            self.assertEqual(srv.get(H.JWKS, headers={"User-Agent": "stdout-agent"})[0], 200)
        H.wait_until(lambda: len(read_json_lines(srv.outpath)[0]) >= 3, ACCESS_WINDOW * H.SLOW)
        lines, _ = read_json_lines(srv.outpath)
        self.assertEqual(len(lines), 3, H.read_bytes(srv.outpath))
        for line in lines:
            self.check_line(line)
            self.assertEqual((line["path"], line["status"], line["user_agent"]), (H.JWKS, 200, "stdout-agent"))
        # access lines do not go to stderr
        self.assertNotIn("stdout-agent", srv.stderr())
        self.stop_ok(srv)


class TestLogFormat(H.SanitizerCheck, H.ServerTestCase):

    def test_json_stderr(self):
        key = self.keys.ec()
        keyfile = os.path.join(self.tmp, "sa.key")
        with open(keyfile, "wb") as f:
            f.write(H.read_bytes(key.priv))
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", keyfile,
                                 "--log-format", "json", "--key-reload-interval", "1s"])
        self.assertEqual(srv.get(H.JWKS)[0], 200)
        # a warning or error: a broken key file
        H.atomic_write(keyfile, b"garbage \" \\ \x01 \xff\n")
        H.wait_until(lambda: len(srv.stderr().splitlines()) > 0 and
                     any('"level":"info"' not in l for l in srv.stderr().splitlines()), 3.0)
        H.atomic_write(keyfile, H.read_bytes(key.priv))
        srv.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        self.stop_ok(srv)
        raw = strip_lsan_suppressions(H.read_bytes(srv.errpath))
        lines = raw.split(b"\n")
        self.assertEqual(lines[-1], b"", "stderr does not end with a newline")
        levels = set()
        for line in lines[:-1]:
            try:
                obj = json.loads(line.decode("utf-8"))
            except ValueError as e:
                self.fail("stderr line is not JSON (%s): %r" % (e, line))
            self.assertIsInstance(obj, dict)
            for f in ("time", "level", "msg"):
                self.assertIn(f, obj, line)
            self.assertIsInstance(obj["msg"], str)
            self.assertRegex(obj["time"], r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T")
            levels.add(obj["level"])
        self.assertGreaterEqual(len(lines), 5)
        self.assertIn("info", levels)
        self.assertTrue(levels - {"info"}, "no warning or error logged for a broken key file: %r" % levels)
        self.assertTrue(levels <= {"error", "warn", "info", "debug"}, levels)


if __name__ == "__main__":
    unittest.main()
