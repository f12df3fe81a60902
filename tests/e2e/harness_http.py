# SPDX-License-Identifier: Apache-2.0
"""The e2e harness's HTTP clients: requests on plain and TLS connections,
raw sockets and a raw HTTP/1.1 response reader (pipelining, HTTP/1.0), the
admin listener and its /metrics, and a tiny static HTTPS server for the
tests that need a remote party."""

import email.utils
import hashlib
import http.client
import json
import re
import socket
import subprocess
import time

from harness_env import SOCK_TIMEOUT, START_TIMEOUT, wait_until

__all__ = ["IMF_FIXDATE", "http_date", "parse_http_date", "do_request", "one", "RawReader", "jwks_kids",
           "StaticHTTPSServer", "tls_context", "tls_connect", "tls_peer_fingerprint", "https_request", "raw_request",
           "wait_accepting", "admin_get", "scrape_metrics", "scrape_until", "metric", "curl"]


# --------------------------------------------------------------------------
# requests and their answers

IMF_FIXDATE = re.compile(
    r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} "
    r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} "
    r"[0-9]{2}:[0-9]{2}:[0-9]{2} GMT$")


def http_date(ts: float) -> str:
    return email.utils.formatdate(ts, usegmt=True)


def parse_http_date(s: str) -> float:
    return email.utils.parsedate_to_datetime(s).timestamp()


def do_request(c, method, path, headers=None, body=None):
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    hdrs = {}
    for k, v in r.getheaders():
        hdrs.setdefault(k.lower(), []).append(v)
    return r.status, hdrs, data


def one(headers, name):
    """The single value of a header (fails on zero or several)."""
    vals = headers.get(name.lower(), [])
    if len(vals) != 1:
        raise AssertionError("expected exactly one %s header, got %r (all headers: %r)" % (name, vals, headers))
    return vals[0]


# --------------------------------------------------------------------------
# raw HTTP/1.1 response reader (for pipelining and HTTP/1.0)

class RawReader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.eof = False

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            self.eof = True
            raise EOFError("connection closed by server")
        self.buf += chunk

    def read_response(self, method="GET"):
        """Returns (status, headers dict lower->list, body bytes)."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status_line = lines[0]
        m = re.match(r"^HTTP/1\.[01] ([0-9]{3})( .*)?$", status_line)
        if not m:
            raise AssertionError("bad status line %r" % status_line)
        status = int(m.group(1))
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers.setdefault(k.strip().lower(), []).append(v.strip())
        if "transfer-encoding" in headers:
            raise AssertionError("unexpected Transfer-Encoding in %r" % headers)
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return status, headers, b""
        if "content-length" not in headers:
            raise AssertionError("response without Content-Length: %r" % headers)
        n = int(headers["content-length"][0])
        while len(self.buf) < n:
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, headers, body

    def wait_closed(self, timeout=SOCK_TIMEOUT):
        """True if the server closes the connection (after any remaining
        bytes) within timeout."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True


def jwks_kids(body: bytes):
    """The kids of a JWKS document, in order."""
    return [k["kid"] for k in json.loads(body)["keys"]]


# --------------------------------------------------------------------------
# TLS: a tiny static HTTPS server, verified TLS clients

class StaticHTTPSServer:
    """Serves fixed documents (path -> (content type, bytes)) over HTTPS on
    127.0.0.1:<free port> from a thread. Use as a context manager."""

    def __init__(self, cert, key, docs):
        import http.server
        import ssl
        import threading
        self.docs = dict(docs)
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.path)
                doc = outer.docs.get(self.path)
                if doc is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                ctype, body = doc
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # failed handshakes are the point of some tests

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.timeout = SOCK_TIMEOUT
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = "https://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
        return False


def tls_context(cafile, alpn=("http/1.1",)):
    import ssl
    ctx = ssl.create_default_context(cafile=cafile)
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    return ctx


def tls_connect(port, cafile, host="127.0.0.1", alpn=("http/1.1",), server_hostname=None):
    """A verified TLS socket to host:port (server_hostname defaults to host)."""
    ctx = tls_context(cafile, alpn)
    raw = socket.create_connection((host, port), timeout=SOCK_TIMEOUT)
    try:
        return ctx.wrap_socket(raw, server_hostname=server_hostname or host)
    except Exception:
        raw.close()
        raise


def tls_peer_fingerprint(port, cafile, host="127.0.0.1"):
    """sha256 hex of the certificate a new TLS connection is given."""
    with tls_connect(port, cafile, host) as s:
        return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()


def https_request(port, method, path, cafile, headers=None, body=None, host="127.0.0.1"):
    """One HTTP/1.1 request over a fresh verified TLS connection:
    (status, headers lower->list, body)."""
    c = http.client.HTTPSConnection(host, port, timeout=SOCK_TIMEOUT, context=tls_context(cafile))
    try:
        return do_request(c, method, path, headers, body)
    finally:
        c.close()


def raw_request(sock, path, host="x", method="GET", extra=b""):
    """Sends one HTTP/1.1 request (keep-alive) on a raw or TLS socket."""
    sock.sendall(b"%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (method.encode(), path.encode(), host.encode(), extra))


# --------------------------------------------------------------------------
# listeners coming up, the admin listener's metrics, curl

def wait_accepting(port, host="127.0.0.1", timeout=START_TIMEOUT):
    """True once host:port accepts TCP connections (within timeout)."""
    deadline = time.monotonic() + timeout
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    while True:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(1.0)
                s.connect((host, port))
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def admin_get(port, path, host="127.0.0.1", timeout=START_TIMEOUT):
    """GET on the admin listener: (status, headers, body). Server.start
    waits for the public port only, so a refused connection is retried
    until timeout (the admin listener may come up a moment later)."""
    deadline = time.monotonic() + timeout
    while True:
        c = http.client.HTTPConnection(host, port, timeout=SOCK_TIMEOUT)
        try:
            return do_request(c, "GET", path)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
        finally:
            c.close()
        time.sleep(0.05)


def scrape_metrics(port):
    """Parses /metrics of the admin listener with prometheus_client's own
    parser; returns {(sample name, frozenset(labels.items())): value}."""
    from prometheus_client.parser import text_string_to_metric_families
    st, h, body = admin_get(port, "/metrics")
    if st != 200:
        raise AssertionError("/metrics answered %d: %r" % (st, body[:300]))
    out = {}
    for fam in text_string_to_metric_families(body.decode("utf-8")):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def scrape_until(port, done, timeout=5.0):
    """The first /metrics scrape for which done(samples) holds, or the last
    one when timeout seconds (stretched by SLOW) pass. A worker counts a
    request once its response is written, which can be just after the
    client has read it: a scrape straight after the last response may be a
    request or two behind."""
    last = {}

    def check():
        last["samples"] = scrape_metrics(port)
        return done(last["samples"])
    wait_until(check, timeout)
    return last["samples"]


def metric(samples, name, **labels):
    """One sample's value (None when absent)."""
    return samples.get((name, frozenset(labels.items())))


def curl(*args, timeout=30):
    """Runs curl -sS with args; returns CompletedProcess (text)."""
    return subprocess.run(["curl", "-sS", "--max-time", "10", *args], capture_output=True, text=True,
                          timeout=timeout)
