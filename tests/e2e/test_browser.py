# SPDX-License-Identifier: Apache-2.0
"""Browsers: the documents used from a page of another origin (CORS), and
the admin listener's status page, in Debian's headless chromium.

CORS: a page served by this test on a second loopback port (another
origin) fetches the JWKS as a relying party running in a browser would:
plainly, with a header of its own and with If-None-Match set from
JavaScript to the ETag it read (both need a preflight, OPTIONS), and the
discovery document with If-Modified-Since. The page posts what it saw back
to the test. The same is checked over plain HTTP without a browser: the
preflight's 204 and its headers, the exposed headers, and --no-cors
answering OPTIONS with 405 as before.

Status page: chromium loads it, takes a screenshot (into the test's
temporary directory, removed after) and dumps the DOM, whose key rows must
be the published keys; a key file named like a script must stay text, and
so must an --upstream's issuer written as a script (the Upstream section).
"""

import json
import os
import struct
import threading
import time
import unittest
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import oidc_harness as H
from oidc_harness import DISCOVERY, JWKS, one

ISSUER = "https://issuer.example"
BROWSER_TIMEOUT = 30.0 * H.SLOW

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>relying party</title></head><body><script>
const base = %(base)s;
const results = {};
async function attempt(name, f) {
  try { results[name] = await f(); } catch (e) { results[name] = {error: String(e)}; }
}
(async () => {
  await attempt("plain", async () => {
    const r = await fetch(base + "/openid/v1/jwks");
    return {status: r.status, etag: r.headers.get("ETag"), lastModified: r.headers.get("Last-Modified"),
            cacheControl: r.headers.get("Cache-Control"), kids: (await r.json()).keys.map(k => k.kid)};
  });
  await attempt("custom_header", async () => {
    const r = await fetch(base + "/openid/v1/jwks", {headers: {"X-Request-Id": "e2e"}});
    return {status: r.status, kids: (await r.json()).keys.map(k => k.kid)};
  });
  await attempt("if_none_match", async () => {
    const r = await fetch(base + "/openid/v1/jwks", {headers: {"If-None-Match": results.plain.etag || '"none"'}});
    return {status: r.status, etag: r.headers.get("ETag")};
  });
  await attempt("if_modified_since", async () => {
    const r = await fetch(base + "/.well-known/openid-configuration",
                          {headers: {"If-Modified-Since": results.plain.lastModified}});
    return {status: r.status};
  });
  await attempt("head", async () => {
    const r = await fetch(base + "/openid/v1/jwks", {method: "HEAD", headers: {"X-Request-Id": "e2e"}});
    return {status: r.status, etag: r.headers.get("ETag")};
  });
  await fetch("/report", {method: "POST", body: JSON.stringify(results)});
})();
</script></body></html>
"""


class RelyingPartyPage:
    """An HTTP server on another loopback port (another origin) that
    serves PAGE and takes the report it posts."""

    def __init__(self, server_base):
        page = (PAGE % {"base": json.dumps(server_base)}).encode()
        outer = self
        self.report = None
        self.reported = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path != "/page.html":
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.report = json.loads(body)
                outer.reported.set()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d/page.html" % self.httpd.server_address[1]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class BrowserCase(H.SanitizerCheck, H.ServerTestCase):

    def setUp(self):
        super().setUp()
        H.require_chromium(self)
        self.key = self.keys.ec()
        self.profile_dir = os.path.join(self.tmp, "chromium")
        os.mkdir(self.profile_dir)
        self.profile = os.path.join(self.profile_dir, "profile")

    def args(self, *extra):
        return ["--service-account-issuer", ISSUER, "--service-account-key-file", self.key.pub, *extra]

    def visit(self, srv):
        """Opens the relying party's page in chromium; returns what it
        reported."""
        page = RelyingPartyPage("http://127.0.0.1:%d" % srv.port)
        browser = H.chromium_start(self.profile, page.url)
        try:
            reported = page.reported.wait(BROWSER_TIMEOUT)
        finally:
            H.chromium_stop(browser)
            page.close()
        self.assertTrue(reported, "the page reported nothing within %.0fs; chromium's stderr:\n%s"
                        % (BROWSER_TIMEOUT, H.chromium_output(self.profile)[1][-3000:]))
        return page.report


class Cors(BrowserCase):

    def test_page_on_another_origin(self):
        srv = self.start_server(self.args())
        etag = one(srv.get(JWKS)[1], "etag")
        r = self.visit(srv)
        self.assertEqual(r["plain"].get("status"), 200, r)
        self.assertEqual(r["plain"]["kids"], [self.key.kid])
        self.assertEqual(r["plain"]["etag"], etag, "JavaScript reads the ETag (Access-Control-Expose-Headers)")
        self.assertEqual(r["plain"]["cacheControl"], "public, max-age=3600")
        self.assertRegex(r["plain"]["lastModified"] or "", H.IMF_FIXDATE)
        self.assertEqual(r["custom_header"], {"status": 200, "kids": [self.key.kid]},
                         "a header of the page's own needs a preflight")
        self.assertEqual(r["if_none_match"], {"status": 304, "etag": etag},
                         "If-None-Match set from JavaScript: preflight, then 304")
        self.assertEqual(r["if_modified_since"], {"status": 304})
        self.assertEqual(r["head"], {"status": 200, "etag": etag})

    def test_no_cors_keeps_other_origins_out(self):
        srv = self.start_server(self.args("--no-cors"))
        r = self.visit(srv)
        for name in ("plain", "custom_header", "head"):
            self.assertIn("error", r[name], "%s: %r" % (name, r))


class CorsOverHttp(H.SanitizerCheck, H.ServerTestCase):
    """The headers a browser relies on, checked on the wire."""

    PREFLIGHT = {"access-control-allow-origin": "*", "access-control-allow-methods": "GET, HEAD",
                 "access-control-allow-headers": "If-None-Match, If-Modified-Since, *",
                 "access-control-max-age": "86400", "allow": "GET, HEAD, OPTIONS"}
    REQUEST = {"Origin": "http://page.example", "Access-Control-Request-Method": "GET",
               "Access-Control-Request-Headers": "if-none-match,x-request-id"}

    def setUp(self):
        super().setUp()
        self.key = self.keys.rsa()

    def start(self, *extra):
        return self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", self.key.pub,
                                  *extra])

    def test_preflight(self):
        srv = self.start()
        for path in (DISCOVERY, JWKS):
            with self.subTest(path=path):
                s = srv.raw_socket()
                try:
                    s.sendall(("OPTIONS %s HTTP/1.1\r\nHost: x\r\n%s\r\n"
                               % (path, "".join("%s: %s\r\n" % kv for kv in self.REQUEST.items()))).encode())
                    st, h, body = H.RawReader(s).read_response()
                finally:
                    s.close()
                self.assertEqual((st, body), (204, b""))
                for name, value in self.PREFLIGHT.items():
                    self.assertEqual(one(h, name), value, name)
                self.assertNotIn("content-length", h, "a 204 has no Content-Length (RFC 9110 8.6)")
        st, h, _ = srv.request("OPTIONS", "/elsewhere", headers=self.REQUEST)
        self.assertEqual(st, 404, "only the documents")

    def test_responses_expose_their_validators(self):
        srv = self.start()
        for path in (DISCOVERY, JWKS):
            st, h, _ = srv.get(path)
            self.assertEqual(st, 200)
            st, h304, _ = srv.get(path, headers={"If-None-Match": one(h, "etag")})
            self.assertEqual(st, 304)
            st, hh, _ = srv.request("HEAD", path)
            for headers in (h, h304, hh):
                self.assertEqual(one(headers, "access-control-allow-origin"), "*")
                self.assertEqual(one(headers, "access-control-expose-headers"), "ETag, Last-Modified, Cache-Control")

    def test_no_cors_answers_options_405(self):
        srv = self.start("--no-cors")
        for path in (DISCOVERY, JWKS):
            st, h, _ = srv.request("OPTIONS", path, headers=self.REQUEST)
            self.assertEqual(st, 405)
            self.assertEqual(one(h, "allow"), "GET, HEAD")
            self.assertFalse([k for k in h if k.startswith("access-control-")], h)
            st, h, _ = srv.get(path)
            self.assertFalse([k for k in h if k.startswith("access-control-")], h)


def png_size_and_colours(path):
    """(width, height) of a PNG and whether its pixels are not all one
    colour (decoded enough to tell: the filtered scanlines, zlib-inflated)."""
    data = H.read_bytes(path)
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("%s is not a PNG" % path)
    pos, idat, size = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            size = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    return size, len(set(raw[:200000])) > 8


class StatusPage(BrowserCase):

    def load(self, srv):
        """The status page in chromium: a screenshot (into the test's
        temporary directory) that must not be blank, then the DOM, in which
        no script ran."""
        url = "http://127.0.0.1:%d/" % srv.admin_port
        shot = os.path.join(self.tmp, "status.png")
        H.chromium_run(self.profile, "--screenshot=" + shot, "--window-size=1200,900", url,
                       timeout=BROWSER_TIMEOUT)
        size, drawn = png_size_and_colours(shot)
        self.assertEqual(size, (1200, 900))
        self.assertTrue(drawn, "the screenshot is blank")
        dom = H.chromium_run(self.profile, "--dump-dom", url, timeout=BROWSER_TIMEOUT)
        self.assertIn("<title>oidc-discovery status</title>", dom, "a script ran: " + dom[:300])
        self.assertNotIn("<script", dom)
        return dom

    def test_status_page_in_chromium(self):
        evil_dir = os.path.join(self.tmp, "<script>document.title='pwned'<")
        os.mkdir(evil_dir)
        evil = os.path.join(evil_dir, "script>.pub")
        rsa = self.keys.rsa()
        with open(evil, "wb") as f:
            f.write(H.read_bytes(rsa.pub))
        srv = self.start_server(self.args("--service-account-key-file", evil))
        dom = self.load(srv)
        tables = H.html_tables(dom)
        header, *rows = tables["keys"]
        self.assertEqual(header[:4], ["kid", "alg", "size", "source"])
        self.assertEqual([r[0] for r in rows], [self.key.kid, rsa.kid])
        self.assertEqual(rows[1][1:4], ["RS256", "2048", evil + " (block 1)"])
        self.assertEqual(H.html_rows(tables, "documents")["issuer"], ISSUER)
        self.assertEqual(H.html_rows(tables, "reload")["result"], "ok")
        self.assertIn("requests " + JWKS, H.html_rows(tables, "counters"))

    def test_upstream_section_in_chromium(self):
        """With --upstream, the page's Upstream section: an API server
        naming another issuer, one written as markup, is shown as text
        beside ours, and the documents as unavailable."""
        from apiserver_standin import StandInAPIServer
        api = StandInAPIServer(os.path.join(self.tmp, "apiserver"), tokens=("token-one",))
        api.__enter__()
        self.addCleanup(api.stop)
        token = os.path.join(self.tmp, "token")
        H.atomic_write(token, b"token-one\n")
        other = "https://other.example/<script>document.title='pwned'</script>"
        api.set_documents(ISSUER, [self.key])
        api.set_discovery_bytes(json.dumps({"issuer": other, "jwks_uri": ISSUER + JWKS}).encode())
        srv = self.start_server(["--service-account-issuer", ISSUER, "--upstream", api.url, "--upstream-ca-file",
                                 api.ca_file, "--upstream-token-file", token, "--upstream-refresh-interval", "1s"])
        self.assertTrue(H.wait_until(lambda: b"issuer_mismatch" in H.admin_get(srv.admin_port, "/")[2], 10),
                        srv.stderr())
        dom = self.load(srv)
        rows = H.html_rows(H.html_tables(dom), "upstream")
        self.assertEqual(rows.get("url"), api.url, dom)
        self.assertEqual(rows["issuer"], "mismatch: what it answers is not published")
        self.assertEqual(rows["the upstream's issuer"], other)
        self.assertEqual(rows["--service-account-issuer"], ISSUER)
        self.assertEqual(rows["last read result"], "issuer_mismatch")
        self.assertEqual(rows["documents"], "unavailable: both answer 503 until the upstream's first good answer")
        self.assertEqual(rows["last good read"], "-")


if __name__ == "__main__":
    unittest.main()
