# SPDX-License-Identifier: Apache-2.0
"""The external signer's gRPC client for the end-to-end tests: Debian's
python3-grpcio with stubs that python3-grpc-tools generates, at test time,
from the repository's own proto/externaljwt.proto into a temporary
directory; nothing here encodes a message by hand. Also what the signer
tests share: kube-shaped claims, the JWKS as PyJWT keys, a JWKS sampler
and a Sign load that record what they saw with the time they saw it."""

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import oidc_harness as H

PROTO_DIR = os.path.join(H.REPO, "proto")
# google/protobuf/timestamp.proto, from Debian's libprotobuf-dev
WELL_KNOWN = "/usr/include"

_stubs = None


def stubs():
    """(messages module, grpc stubs module), generated once per process."""
    global _stubs
    if _stubs is None:
        out = tempfile.mkdtemp(prefix="oidc-e2e-grpc-")
        r = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + PROTO_DIR, "-I" + WELL_KNOWN,
                            "--python_out=" + out, "--grpc_python_out=" + out, "externaljwt.proto"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError("grpc_tools.protoc failed: %s" % r.stderr)
        sys.path.insert(0, out)
        pb, pb_grpc = importlib.import_module("externaljwt_pb2"), importlib.import_module("externaljwt_pb2_grpc")
        sys.path.remove(out)
        shutil.rmtree(out, ignore_errors=True)
        _stubs = (pb, pb_grpc)
    return _stubs


def problem():
    """None when grpcio, grpc-tools, PyJWT and cryptography import; else what
    is missing (the tests fail with it)."""
    return H.modules_problem("grpc", "grpc_tools", "jwt", "cryptography")


class SignerTestCase(H.SanitizerCheck, H.ServerTestCase):
    """ServerTestCase for the signer's tests: fails (never skips) when the
    Python modules are missing, fails on a sanitizer report of a server it
    started (the -DOIDC_SANITIZE=ON build), and gives each test a key
    directory path, self.dir, not created yet."""

    def setUp(self):
        super().setUp()
        missing = problem()
        if missing:
            self.fail(missing)
        self.dir = os.path.join(self.tmp, "keys")


class Signer:
    """A client of the external signer on a Unix socket."""

    def __init__(self, path, timeout=5.0):
        import grpc
        self.grpc = grpc
        self.pb, pb_grpc = stubs()
        self.channel = grpc.insecure_channel("unix:" + path)
        self.stub = pb_grpc.ExternalJWTSignerStub(self.channel)
        self.timeout = timeout * H.SLOW

    def close(self):
        self.channel.close()

    def metadata(self):
        return self.stub.Metadata(self.pb.MetadataRequest(), timeout=self.timeout)

    def fetch_keys(self):
        return self.stub.FetchKeys(self.pb.FetchKeysRequest(), timeout=self.timeout)

    def sign(self, claims_b64):
        return self.stub.Sign(self.pb.SignJWTRequest(claims=claims_b64), timeout=self.timeout)

    def call(self, path, request, response_type):
        """A call by method path (the v1 API, or one nobody serves)."""
        method = self.channel.unary_unary(path, request_serializer=type(request).SerializeToString,
                                          response_deserializer=response_type.FromString)
        return method(request, timeout=self.timeout)

    def token(self, claims):
        """Signs claims (a dict) and assembles the JWT as kube-apiserver
        does: header.claims.signature."""
        c = H.b64url(json.dumps(claims, separators=(",", ":")).encode())
        r = self.sign(c)
        return "%s.%s.%s" % (r.header, c, r.signature)


def wait_socket(path, timeout=10.0):
    """Waits for the signer's socket to answer Metadata."""
    def ready():
        if not os.path.exists(path):
            return False
        s = Signer(path, timeout=1)
        try:
            s.metadata()
            return True
        except Exception:
            return False
        finally:
            s.close()
    return H.wait_until(ready, timeout, interval=0.05)


def kid_of_der(der):
    """kube-apiserver's kid: base64url of the SHA-256 of the PKIX DER."""
    return H.b64url(hashlib.sha256(der).digest())


def header_of(token):
    """The JWS header's JSON, as text, so that member order shows."""
    return H.b64url_decode(token.split(".")[0]).decode()


def claims(issuer, audience="api", lifetime=600, now=None):
    now = int(time.time()) if now is None else int(now)
    return H.kube_claims(issuer, [audience], now=now, lifetime=lifetime)


def pyjwt_verify(token, jwks_body, issuer, audience="api"):
    """Verifies token with PyJWT against the JWK of its kid in the JWKS
    document jwks_body; returns the payload (raises on failure)."""
    import jwt
    kid = jwt.get_unverified_header(token)["kid"]
    jwk = [k for k in json.loads(jwks_body)["keys"] if k["kid"] == kid]
    if len(jwk) != 1:
        raise AssertionError("kid %s is %d times in the JWKS" % (kid, len(jwk)))
    key = jwt.PyJWK.from_dict(jwk[0])
    return jwt.decode(token, key.key, algorithms=[jwk[0]["alg"]], audience=audience, issuer=issuer)


class JwksSampler(threading.Thread):
    """Fetches a server's JWKS over and over; samples is a list of
    (request start, response end, set of kids), monotonic seconds."""

    def __init__(self, server, interval=0.02):
        super().__init__(daemon=True)
        self.server, self.interval = server, interval
        self.samples, self.errors = [], []
        self.stop_flag = threading.Event()

    def run(self):
        while not self.stop_flag.is_set():
            t0 = time.monotonic()
            try:
                st, _, body = self.server.get(H.JWKS)
                t1 = time.monotonic()
                if st == 200:
                    self.samples.append((t0, t1, frozenset(H.jwks_kids(body))))
                else:
                    self.errors.append("status %d" % st)
            except Exception as e:  # a restart: the server is away for a moment
                self.errors.append(repr(e))
            self.stop_flag.wait(self.interval)

    def stop(self):
        self.stop_flag.set()
        self.join(timeout=10)


class SignLoad(threading.Thread):
    """Calls Sign over and over on one socket; signs is a list of (call
    start, call end, kid), monotonic seconds; failures counts calls that did
    not return a signature (a server restarting)."""

    def __init__(self, path, issuer, name=""):
        super().__init__(daemon=True)
        self.path, self.issuer, self.name = path, issuer, name
        self.signs, self.failures, self.tokens = [], [], {}
        self.stop_flag = threading.Event()

    def run(self):
        client = Signer(self.path, timeout=2)
        c = H.b64url(json.dumps(claims(self.issuer), separators=(",", ":")).encode())
        while not self.stop_flag.is_set():
            t0 = time.monotonic()
            try:
                r = client.sign(c)
                t1 = time.monotonic()
                kid = json.loads(H.b64url_decode(r.header))["kid"]
                self.signs.append((t0, t1, kid))
                self.tokens.setdefault(kid, "%s.%s.%s" % (r.header, c, r.signature))
            except Exception as e:
                self.failures.append(repr(e)[:200])
                self.stop_flag.wait(0.05)
        client.close()

    def stop(self):
        self.stop_flag.set()
        self.join(timeout=10)


def observe(srv, issuer, watch, loads=1):
    """Starts a JWKS sampler and `loads` Sign loads for issuer on srv (whose
    sock is its signer socket), adds them to watch (the test stops and joins
    what is there) and returns (sampler, loads)."""
    sampler = JwksSampler(srv)
    signers = [SignLoad(srv.sock, issuer) for _ in range(loads)]
    for t in [sampler] + signers:
        t.start()
        watch.append(t)
    return sampler, signers


def publication(samples, kid):
    """(end of the first sample showing kid, start of the last sample
    showing it), or None when no sample shows it."""
    shown = [(s0, s1) for s0, s1, kids in samples if kid in kids]
    if not shown:
        return None
    return shown[0][1], shown[-1][0]


def dropped_after(samples, kid, t):
    """Whether a sample that started after t lacks kid: the key was
    dropped and the drop was seen."""
    return any(s0 > t and kid not in kids for s0, s1, kids in samples)
