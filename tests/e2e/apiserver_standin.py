# SPDX-License-Identifier: Apache-2.0
"""A stand-in kube-apiserver for the tests of --upstream (mirroring).

It serves what a real API server serves to a mirror, and nothing else:
GET /.well-known/openid-configuration and GET /openid/v1/jwks over TLS with
a certificate from a private CA made by openssl for the test, only to
requests that carry one of the bearer tokens it currently accepts
(compared on every request; anonymous auth is off, as almost everywhere),
with `Cache-Control: public, max-age=N` (kube-apiserver's is 3600) and a
strong ETag, answering 304 to a matching If-None-Match.

The documents are files in its directory that the test rewrites
(set_documents, set_jwks_bytes, set_discovery_bytes); the failures a mirror must live through
are switched with set_mode: "ok", "down" (the port refuses connections),
"401", "500", "garbage" (200 with a body that is not JSON) and "empty"
(200 with {"keys":[]}). Every request is recorded (path, token,
If-None-Match, status) for the tests to assert on.

It also keeps API objects (service accounts, pods, secrets, nodes), as
--token-review-check-bound-objects looks them up: GET
/api/v1/namespaces/NS/{serviceaccounts,pods,secrets}/NAME and
/api/v1/nodes/NAME answer the object (metadata.uid, a deletionTimestamp
when set, a secret's data) or kube's 404 Status; the test creates,
deletes and recreates them (with a new uid), and may hold their answers
(hold/release) to make reviews wait on one lookup, and mark them
being deleted (mark_deleting). It keeps connections alive (HTTP/1.1),
counts those opened (connections), and closes them when set "down".

Standard library only (http.server, ssl, threading) plus the harness's
openssl helpers; loopback only; every socket operation bounded.
"""

import base64
import hashlib
import http.server
import json
import os
import socket
import ssl
import threading
import time
import uuid

import oidc_harness as H

DISCOVERY = H.DISCOVERY
JWKS = H.JWKS
MODES = ("ok", "down", "401", "500", "garbage", "empty")
# The kinds of API object, by the plural of their path.
KINDS = {"serviceaccounts": "ServiceAccount", "pods": "Pod", "secrets": "Secret", "nodes": "Node"}


def object_path(kind, ns, name):
    """The API path of an object (kind: a plural, "pods"); ns None for a node."""
    return "/api/v1/nodes/%s" % name if kind == "nodes" else "/api/v1/namespaces/%s/%s/%s" % (ns, kind, name)


def kube_discovery(issuer, keys, jwks_uri=None):
    """The discovery document kube-apiserver serves for issuer and keys
    (docs/compatibility.md §1), built by the harness independently of the
    server under test."""
    return H.expected_discovery(issuer, jwks_uri or H.default_jwks_uri(issuer), [k.alg for k in keys])


def jwks_with_kids(keys, kids):
    """A JWKS of keys in kube's member order under other kids (an external
    signer's): kids[i] replaces keys[i].kid; None keeps it."""
    jwks = []
    for k, kid in zip(keys, kids):
        jwks.append(k.jwk_json.replace('"kid":"%s"' % k.kid, '"kid":"%s"' % (kid or k.kid)))
    return ('{"keys":[' + ",".join(jwks) + "]}").encode()


class Request:
    def __init__(self, path, token, if_none_match, status):
        self.path, self.token, self.if_none_match, self.status = path, token, if_none_match, status

    def __repr__(self):
        return "Request(%s, token=%r, inm=%r, %d)" % (self.path, self.token, self.if_none_match, self.status)


class StandInAPIServer:
    """See the module's docstring. Use as a context manager, or start/stop.

    Attributes: port, url (https://127.0.0.1:PORT), ca_file, dir."""

    def __init__(self, dirpath, tokens=("token-1",), max_age=3600):
        self.dir = dirpath
        os.makedirs(dirpath, exist_ok=True)
        self.ca = H.make_ca(dirpath, "apiserver-ca")
        self.ca_file = self.ca[0]
        self.cert, self.key = H.make_server_cert(dirpath, self.ca, H.TLS_SAN, "apiserver")
        self.docs = {DISCOVERY: os.path.join(dirpath, "openid-configuration"),
                     JWKS: os.path.join(dirpath, "jwks")}
        self.lock = threading.Lock()
        self.tokens = set(tokens)
        self.mode = "ok"
        self.max_age = max_age
        self.requests = []
        self.objects = {}  # path -> the object (a dict)
        self.arrivals = []  # the paths of the object requests, as they arrive (before any hold)
        self.gate = threading.Event()
        self.gate.set()
        self.conns = set()  # the open connections, closed with the listener ("down")
        self.connections = 0  # how many were opened
        self.port = 0
        self.httpd = None
        self.thread = None

    # the documents and the failures ---------------------------------------
    def set_documents(self, issuer, keys, jwks=None, jwks_uri=None):
        """Serves kube's documents for issuer and keys (or the JWKS bytes
        given). Written atomically: a request sees the old or the new."""
        H.atomic_write(self.docs[DISCOVERY], kube_discovery(issuer, keys, jwks_uri))
        H.atomic_write(self.docs[JWKS], jwks if jwks is not None else H.expected_jwks(keys))

    def set_jwks_bytes(self, body: bytes):
        H.atomic_write(self.docs[JWKS], body)

    def set_discovery_bytes(self, body: bytes):
        H.atomic_write(self.docs[DISCOVERY], body)

    def document(self, path) -> bytes:
        return H.read_bytes(self.docs[path])

    def set_tokens(self, *tokens):
        with self.lock:
            self.tokens = set(tokens)

    def set_mode(self, mode):
        assert mode in MODES, mode
        if mode == "down" and self.httpd is not None:
            self._close()
        elif mode != "down" and self.httpd is None:
            self._open()
        with self.lock:
            self.mode = mode

    # API objects ----------------------------------------------------------------
    def create(self, kind, ns, name, data=None, labels=None):
        """Creates (or replaces) an object with a new uid; returns the uid.
        data: a secret's data, values bytes (served base64, as kube does)."""
        uid = str(uuid.uuid4())
        meta = {"name": name, "uid": uid, "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"}
        if ns is not None:
            meta["namespace"] = ns
        if labels:
            meta["labels"] = dict(labels)
        obj = {"kind": KINDS[kind], "apiVersion": "v1", "metadata": meta}
        if data is not None:
            obj["data"] = {k: base64.b64encode(v).decode() for k, v in data.items()}
        with self.lock:
            self.objects[object_path(kind, ns, name)] = obj
        return uid

    def delete(self, kind, ns, name):
        with self.lock:
            del self.objects[object_path(kind, ns, name)]

    def mark_deleting(self, kind, ns, name, when):
        """Sets the object's deletionTimestamp (unix seconds: a graceful
        deletion's is when its grace period ends), as a deletion does."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
        with self.lock:
            self.objects[object_path(kind, ns, name)]["metadata"]["deletionTimestamp"] = stamp

    def hold(self):
        """Object answers wait (at most SOCK_TIMEOUT) until release()."""
        self.gate.clear()

    def release(self):
        self.gate.set()

    def object_requests(self, kind, ns, name):
        """The requests for an object so far, answered or held."""
        with self.lock:
            return self.arrivals.count(object_path(kind, ns, name))

    def seen(self, since=0, **match):
        """The requests recorded from index since on whose attributes match."""
        with self.lock:
            reqs = self.requests[since:]
        return [r for r in reqs if all(getattr(r, k) == v for k, v in match.items())]

    def count(self):
        with self.lock:
            return len(self.requests)

    # lifecycle -----------------------------------------------------------------
    def __enter__(self):
        self._open()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def stop(self):
        if self.httpd is not None:
            self._close()

    def _open(self):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = H.SOCK_TIMEOUT

            def setup(self):
                super().setup()
                with outer.lock:
                    outer.conns.add(self.connection)
                    outer.connections += 1

            def finish(self):
                with outer.lock:
                    outer.conns.discard(self.connection)
                super().finish()

            def do_GET(self):
                outer._answer(self)

            def log_message(self, *a):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request, client_address):
                pass

        self.httpd = Server(("127.0.0.1", self.port), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, self.key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = "https://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    def _close(self):
        """Stops listening and closes the kept-alive connections, as an API
        server that goes down does (a client reusing one must not be
        answered)."""
        self.httpd.shutdown()
        self.httpd.server_close()
        with self.lock:
            conns, self.conns = list(self.conns), set()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.thread.join(timeout=5)
        self.httpd = None

    # one request ---------------------------------------------------------------
    def _answer(self, h):
        auth = h.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        inm = h.headers.get("If-None-Match")
        with self.lock:
            mode, tokens = self.mode, set(self.tokens)
        status, body, extra = self._respond(h.path, token, inm, mode, tokens)
        with self.lock:
            self.requests.append(Request(h.path, token, inm, status))
        h.send_response(status)
        for name, value in extra:
            h.send_header(name, value)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _object(self, path, mode):
        """An API object's answer: the object, or kube's NotFound Status."""
        with self.lock:
            self.arrivals.append(path)
        self.gate.wait(H.SOCK_TIMEOUT)
        if mode == "500":
            return 500, b"Internal Server Error\n", [("Content-Type", "text/plain")]
        with self.lock:
            obj = self.objects.get(path)
        if obj is None:
            kind, name = path.split("/")[-2:]
            return 404, json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": '%s "%s" not found' % (kind, name), "reason": "NotFound",
                                    "details": {"name": name, "kind": kind}, "code": 404}).encode(), \
                [("Content-Type", "application/json")]
        return 200, json.dumps(obj).encode(), [("Content-Type", "application/json")]

    def _respond(self, path, token, inm, mode, tokens):
        if token is None or token not in tokens or mode == "401":
            return 401, (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                         b'"message":"Unauthorized","reason":"Unauthorized","code":401}'), \
                [("Content-Type", "application/json")]
        if path.startswith("/api/v1/"):
            return self._object(path, mode)
        if path not in self.docs:
            return 404, b"404 page not found\n", [("Content-Type", "text/plain; charset=utf-8")]
        if mode == "500":
            return 500, b"Internal Server Error\n", [("Content-Type", "text/plain")]
        if mode == "garbage":
            return 200, b"<html>maintenance</html>", [("Content-Type", "application/json")]
        body = H.read_bytes(self.docs[path])
        if mode == "empty" and path == JWKS:
            body = b'{"keys":[]}'
        etag = '"%s"' % hashlib.sha256(body).hexdigest()[:32]
        headers = [("Cache-Control", "public, max-age=%d" % self.max_age), ("ETag", etag)]
        if inm is not None and etag in [t.strip() for t in inm.split(",")]:
            return 304, b"", headers
        ctype = "application/jwk-set+json" if path == JWKS else "application/json"
        return 200, body, headers + [("Content-Type", ctype)]
