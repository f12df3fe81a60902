"""Shared helpers for the end-to-end tests of oidc-discovery.

Everything here talks only to loopback addresses, bounds every wait, and uses
the Python standard library plus the `openssl` command-line tool (keys are
generated at run time in a temporary directory; the expected documents are
built independently of the server from the DER encodings openssl prints).

Environment:
  OIDC_BIN       path to the oidc-discovery binary (default: <repo>/build/oidc-discovery)
  OIDC_NODE_DIR  tests/node (default: <repo>/tests/node)
  OIDC_VALGRIND  1: run every server and command under valgrind's memcheck;
                 a test fails when memcheck reports an error or a definite or
                 indirect leak (scripts/valgrind-e2e.sh)
"""

import base64
import email.utils
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

BIN = os.environ.get("OIDC_BIN") or os.path.join(REPO, "build", "oidc-discovery")
# The build tree BIN comes from (ctest sets it), for the tests that install
# or package it.
BUILD_DIR = os.environ.get("OIDC_BUILD_DIR") or os.path.join(REPO, "build")
NODE_DIR = os.environ.get("OIDC_NODE_DIR") or os.path.join(REPO, "tests", "node")

VALGRIND = os.environ.get("OIDC_VALGRIND") == "1"
VALGRIND_SUPP = os.path.join(REPO, "tests", "valgrind.supp")
# Memcheck runs the binary some 20 to 50 times slower; every bound on the
# server's speed stretches by this factor under it.
SLOW = 5 if VALGRIND else 1

SOCK_TIMEOUT = 5.0 * SLOW     # every socket operation
START_TIMEOUT = 10.0 * SLOW   # server must accept connections within this
STOP_TIMEOUT = 10.0 * SLOW    # server must exit within this after a signal
RUN_TIMEOUT = 10.0 * SLOW     # one-shot invocations (--help, bad flags)

DISCOVERY = "/.well-known/openid-configuration"
JWKS = "/openid/v1/jwks"


# --------------------------------------------------------------------------
# small utilities

def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def read_bytes(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def cmake_cache(name):
    """A value of the build directory's CMakeCache.txt."""
    with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
        m = re.search(r"^%s:[A-Z]+=(.*)$" % re.escape(name), f.read(), re.M)
    if m is None:
        raise AssertionError("%s is not in %s/CMakeCache.txt" % (name, BUILD_DIR))
    return m.group(1)


def int_to_min_bytes(n: int) -> bytes:
    if n == 0:
        return b"\x00"
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


def local_port_range():
    """The kernel's ephemeral port range: where bind(0) and the local end
    of every outgoing connection get their ports."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port(host="127.0.0.1"):
    """A port nothing was bound to a moment ago, picked at random outside
    the kernel's ephemeral range: servers started by the harness bind port
    0 (the kernel's choice, from that range) and client sockets take their
    local ports from it too, so neither can take this one. For a port
    nobody listens on, and for the few servers whose port a test must know
    before they start (an issuer URL that names it)."""
    lo, hi = local_port_range()
    ports = range(max(1024, lo - 16384), lo) if lo > 2048 else range(hi + 1, 65536)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(200):
        port = random.choice(ports)
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        return port
    raise AssertionError("no free port outside the ephemeral range on %s" % host)


def ipv6_loopback_available():
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def require_binary(testcase):
    if not (os.path.isfile(BIN) and os.access(BIN, os.X_OK)):
        testcase.fail(f"server binary not found or not executable: {BIN} (set OIDC_BIN)")
    if VALGRIND and shutil.which("valgrind") is None:
        testcase.fail("OIDC_VALGRIND=1 but valgrind is not on PATH; run scripts/setup.sh")


IMF_FIXDATE = re.compile(
    r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} "
    r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} "
    r"[0-9]{2}:[0-9]{2}:[0-9]{2} GMT$")


def http_date(ts: float) -> str:
    return email.utils.formatdate(ts, usegmt=True)


def parse_http_date(s: str) -> float:
    return email.utils.parsedate_to_datetime(s).timestamp()


def json_str(s: str) -> str:
    """A JSON string literal as Go's encoding/json writes it for plain ASCII
    URLs (the tests only use such values)."""
    assert all(0x20 <= ord(c) < 0x7f and c not in '<>&' for c in s), s
    return json.dumps(s)


def expected_discovery(issuer, jwks_uri, algs):
    return ('{"issuer":%s,"jwks_uri":%s,"response_types_supported":["id_token"],'
            '"subject_types_supported":["public"],'
            '"id_token_signing_alg_values_supported":[%s]}'
            % (json_str(issuer), json_str(jwks_uri),
               ",".join(json_str(a) for a in sorted(set(algs))))).encode()


def default_jwks_uri(issuer):
    return issuer.rstrip("/") + "/openid/v1/jwks"


def expected_jwks(keys):
    return ('{"keys":[' + ",".join(k.jwk_json for k in keys) + "]}").encode()


# --------------------------------------------------------------------------
# a minimal DER reader (enough for SPKI, PKCS#8, PKCS#1 and SEC1)

def der_read(buf, pos=0):
    """Returns (tag, content_bytes, next_pos)."""
    tag = buf[pos]
    pos += 1
    length = buf[pos]
    pos += 1
    if length & 0x80:
        nbytes = length & 0x7f
        length = int.from_bytes(buf[pos:pos + nbytes], "big")
        pos += nbytes
    return tag, buf[pos:pos + length], pos + length


def der_children(content):
    out = []
    pos = 0
    while pos < len(content):
        tag, val, pos = der_read(content, pos)
        out.append((tag, val))
    return out


def der_int(val: bytes) -> int:
    return int.from_bytes(val, "big", signed=False)


OID_RSA = bytes.fromhex("2a864886f70d010101")
OID_EC = bytes.fromhex("2a8648ce3d0201")
CURVES = {
    bytes.fromhex("2a8648ce3d030107"): ("P-256", "ES256", 32),
    bytes.fromhex("2b81040022"): ("P-384", "ES384", 48),
    bytes.fromhex("2b81040023"): ("P-521", "ES512", 66),
}
OPENSSL_CURVE = {"P-256": "P-256", "P-384": "P-384", "P-521": "P-521"}


def parse_spki(der):
    """Returns dict describing the public key in a DER SubjectPublicKeyInfo."""
    tag, seq, _ = der_read(der)
    assert tag == 0x30
    (t1, algid), (t2, bits) = der_children(seq)
    assert t1 == 0x30 and t2 == 0x03
    alg_children = der_children(algid)
    oid = alg_children[0][1]
    key_bytes = bits[1:]  # skip "unused bits" byte
    if oid == OID_RSA:
        _, rsaseq, _ = der_read(key_bytes)
        (_, n), (_, e) = der_children(rsaseq)
        return {"kty": "RSA", "n": der_int(n), "e": der_int(e), "alg": "RS256"}
    if oid == OID_EC:
        crv, alg, size = CURVES[alg_children[1][1]]
        assert key_bytes[0] == 4 and len(key_bytes) == 1 + 2 * size
        return {"kty": "EC", "crv": crv, "alg": alg, "size": size,
                "x": key_bytes[1:1 + size], "y": key_bytes[1 + size:]}
    raise ValueError("unsupported SPKI algorithm")


def parse_private_pkcs8(der):
    """Returns the list of private integers (as big-endian minimal bytes) of
    a DER PKCS#8 PrivateKeyInfo: d,p,q,dp,dq,qi for RSA; the scalar for EC."""
    _, seq, _ = der_read(der)
    children = der_children(seq)
    algid = der_children(children[1][1])
    inner = children[2][1]
    _, iseq, _ = der_read(inner)
    ic = der_children(iseq)
    if algid[0][1] == OID_RSA:
        # version, n, e, d, p, q, dp, dq, qi
        return {name: int_to_min_bytes(der_int(ic[i][1]))
                for i, name in zip(range(3, 9), ("d", "p", "q", "dp", "dq", "qi"))}
    if algid[0][1] == OID_EC:
        return {"d": ic[1][1]}
    raise ValueError("unsupported PKCS#8 algorithm")


# --------------------------------------------------------------------------
# key generation with the openssl CLI

def pem_body(pem: bytes, label: str) -> bytes:
    """The DER bytes of the first PEM block with the given label."""
    m = re.search(rb"-----BEGIN " + label.encode() + rb"-----\r?\n(.*?)-----END " + label.encode() + rb"-----",
                  pem, re.S)
    if not m:
        raise ValueError("no %s block" % label)
    return base64.b64decode(b"".join(m.group(1).split()))


def openssl(*args, input=None):
    r = subprocess.run(["openssl", *args], input=input, capture_output=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
    return r.stdout


class Key:
    """A freshly generated key pair with every encoding the tests need.

    Attributes: priv (PKCS#8 PEM path), pub (PKIX PEM path), spki (DER bytes),
    kid, alg, kty, jwk (dict), jwk_json (exact expected bytes as str),
    secrets (dict name -> bytes of private integers)."""

    def __init__(self, dirpath, name, priv_path):
        self.dir = dirpath
        self.name = name
        self.priv = priv_path
        self.pub = os.path.join(dirpath, name + ".pub")
        openssl("pkey", "-in", self.priv, "-pubout", "-out", self.pub)
        self.spki = openssl("pkey", "-in", self.priv, "-pubout", "-outform", "DER")
        # the documented check: sha256 over the DER SPKI, base64url, no padding
        self.kid = b64url(hashlib.sha256(self.spki).digest())
        info = parse_spki(self.spki)
        self.kty = info["kty"]
        self.alg = info["alg"]
        if self.kty == "RSA":
            n = b64url(int_to_min_bytes(info["n"]))
            e = b64url(int_to_min_bytes(info["e"]))
            self.jwk = {"use": "sig", "kty": "RSA", "kid": self.kid, "alg": "RS256", "n": n, "e": e}
            self.jwk_json = ('{"use":"sig","kty":"RSA","kid":"%s","alg":"RS256","n":"%s","e":"%s"}'
                             % (self.kid, n, e))
        else:
            x = b64url(info["x"])
            y = b64url(info["y"])
            self.x_raw, self.y_raw = info["x"], info["y"]
            self.crv = info["crv"]
            self.jwk = {"use": "sig", "kty": "EC", "kid": self.kid, "crv": info["crv"],
                        "alg": info["alg"], "x": x, "y": y}
            self.jwk_json = ('{"use":"sig","kty":"EC","kid":"%s","crv":"%s","alg":"%s","x":"%s","y":"%s"}'
                             % (self.kid, info["crv"], info["alg"], x, y))
        self.secrets = parse_private_pkcs8(pem_body(read_bytes(self.priv), "PRIVATE KEY"))

    # other encodings of the same key ---------------------------------
    def pkcs1(self):
        """RSA: 'RSA PRIVATE KEY' (PKCS#1) PEM path."""
        path = os.path.join(self.dir, self.name + ".pkcs1.pem")
        openssl("rsa", "-in", self.priv, "-traditional", "-out", path)
        assert b"BEGIN RSA PRIVATE KEY" in read_bytes(path)
        return path

    def sec1(self, with_params=False):
        """EC: 'EC PRIVATE KEY' (SEC1) PEM path, optionally preceded by an
        'EC PARAMETERS' block (as `openssl ecparam -genkey` writes)."""
        path = os.path.join(self.dir, self.name + (".sec1p.pem" if with_params else ".sec1.pem"))
        body = openssl("ec", "-in", self.priv)
        if with_params:
            params = openssl("ecparam", "-name", {"P-256": "prime256v1", "P-384": "secp384r1",
                                                  "P-521": "secp521r1"}[self.crv])
            body = params + body
        with open(path, "wb") as f:
            f.write(body)
        assert b"BEGIN EC PRIVATE KEY" in body
        return path

    def certificate(self, ca=False):
        """A self-signed certificate for the key: a leaf (CA:FALSE), or with
        ca=True a CA certificate (CA:TRUE, what `openssl req -x509` makes
        by default), which the server refuses as a key source."""
        path = os.path.join(self.dir, self.name + (".ca.crt" if ca else ".crt"))
        openssl("req", "-x509", "-new", "-key", self.priv, "-subj", "/CN=oidc-e2e", "-days", "1",
                "-addext", "basicConstraints=critical,CA:%s" % ("TRUE" if ca else "FALSE"), "-out", path)
        return path


class KeyFactory:
    def __init__(self, dirpath):
        self.dir = dirpath
        self.count = 0

    def _name(self, prefix):
        self.count += 1
        return "%s%d" % (prefix, self.count)

    def rsa(self, bits=2048, pubexp=None):
        name = self._name("rsa")
        path = os.path.join(self.dir, name + ".key")
        args = ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:%d" % bits]
        if pubexp is not None:
            args += ["-pkeyopt", "rsa_keygen_pubexp:%d" % pubexp]
        openssl(*args, "-out", path)
        return Key(self.dir, name, path)

    def ec(self, curve="P-256"):
        name = self._name("ec")
        path = os.path.join(self.dir, name + ".key")
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:" + curve,
                "-pkeyopt", "ec_param_enc:named_curve", "-out", path)
        return Key(self.dir, name, path)

    def ec_with_short_coordinate(self, curve="P-256", tries=3000):
        """An EC key whose x or y has a leading zero byte (so that padding to
        the curve size matters). Returns None if none was found in time."""
        deadline = time.monotonic() + 20
        for _ in range(tries):
            if time.monotonic() > deadline:
                return None
            path = os.path.join(self.dir, "short.key")
            openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:" + curve,
                    "-pkeyopt", "ec_param_enc:named_curve", "-out", path)
            der = openssl("pkey", "-in", path, "-pubout", "-outform", "DER")
            info = parse_spki(der)
            if info["x"][0] == 0 or info["y"][0] == 0:
                name = self._name("ecshort")
                final = os.path.join(self.dir, name + ".key")
                os.rename(path, final)
                return Key(self.dir, name, final)
        return None

    def ed25519(self):
        name = self._name("ed")
        path = os.path.join(self.dir, name + ".key")
        openssl("genpkey", "-algorithm", "ED25519", "-out", path)
        pub = os.path.join(self.dir, name + ".pub")
        openssl("pkey", "-in", path, "-pubout", "-out", pub)
        return path, pub

    def concat(self, name, *paths):
        out = os.path.join(self.dir, name)
        with open(out, "wb") as f:
            for p in paths:
                f.write(read_bytes(p))
        return out

    def write(self, name, data: bytes):
        out = os.path.join(self.dir, name)
        with open(out, "wb") as f:
            f.write(data)
        return out


# --------------------------------------------------------------------------
# running the binary

MEMCHECK_EXIT = 99  # memcheck's exit status when it found something
MEMCHECK_SUMMARY = re.compile(r"^==\d+== ERROR SUMMARY: (\d+) errors", re.M)


def memcheck_argv(argv, logdir):
    """argv itself, or under OIDC_VALGRIND=1 argv run by memcheck with one
    log per process in logdir. Only argv that starts the binary itself is
    wrapped: a test that runs it under another tool (strace) is left alone."""
    if not VALGRIND or argv[0] != BIN:
        return list(argv)
    return ["valgrind", "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=definite,indirect",
            "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=%d" % MEMCHECK_EXIT,
            "--num-callers=40", "--suppressions=" + VALGRIND_SUPP,
            "--log-file=" + os.path.join(logdir, "memcheck.%p.log")] + list(argv)


def memcheck_problems(logdir):
    """What memcheck reported for the processes that logged in logdir: a
    list of reports, empty when every one ended with zero errors (or none ran
    under memcheck). A log without its final summary means the process was
    killed before memcheck could check it, which is reported too."""
    problems = []
    for name in sorted(os.listdir(logdir)) if os.path.isdir(logdir) else ():
        if not (name.startswith("memcheck.") and name.endswith(".log")):
            continue
        with open(os.path.join(logdir, name), errors="replace") as f:
            text = re.sub(r"(?m)^==\d+== \n", "", f.read())
        m = MEMCHECK_SUMMARY.search(text)
        if m is None:
            problems.append("memcheck never finished (the process was killed); its log:\n" + text[-4000:])
        elif int(m.group(1)) != 0:
            problems.append("memcheck reported %s errors:\n%s" % (m.group(1), text[-16000:]))
    return problems


def run_once(args, timeout=None, input=None, env=None):
    """Runs the binary to completion (for --help, bad flags, ...), with
    optional bytes on standard input and variables added to the
    environment. Returns (returncode, stdout, stderr) as str. A process
    still alive at the timeout (RUN_TIMEOUT, or the given seconds stretched
    by SLOW) is killed and reported as returncode None. Under
    OIDC_VALGRIND=1 a memcheck report raises AssertionError."""
    timeout = RUN_TIMEOUT if timeout is None else timeout * SLOW
    logdir = tempfile.mkdtemp(prefix="oidc-e2e-memcheck-")
    try:
        p = subprocess.Popen(memcheck_argv([BIN, *args], logdir),
                             stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=dict(os.environ, **env) if env else None)
        try:
            out, err = p.communicate(input, timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate(timeout=5)
            rc = None
        problems = memcheck_problems(logdir) if rc is not None else []
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
    if problems:
        raise AssertionError("%r: %s" % (args, "\n".join(problems)))
    return rc, out.decode(errors="replace"), err.decode(errors="replace")


# "listening on URL (N threads): WHAT" ("1 thread"), one line per address, in the
# order of the flags; text or JSON log lines alike.
LISTENING = re.compile(r"listening on (?:(https?)://(?:\[[^\]]*\]|[^:/\s]+):(\d+)|unix:\S+) \(\d+ threads?\): "
                       r"(/livez|POST |[a-z])")
LISTEN_FLAGS = ("--listen", "--tls-listen", "--token-review-listen", "--admin-listen")


class Server:
    """The binary running as a server.

    args: arguments after the program name. Unless listen=False, the
    harness appends `--listen HOST:PORT`, port 0 unless given (the kernel
    chooses), and unless args name one, `--admin-listen 127.0.0.1:0`. Once
    started, the port every listener got is read from its "listening on"
    log line: port (the first --listen), admin_port, and port_of(flag, i)
    for the i-th address of any listen flag. With listen=False the caller
    passes its own --listen (or a config file) and may set port/host;
    port is then that of the first TCP --listen address."""

    def __init__(self, args, listen=True, host="127.0.0.1", port=None, command="serve"):
        self.host = host
        self.port = port
        self.listen = listen
        self.admin_port = None
        self.ports = {}  # listen flag -> the ports of its addresses, in order (None: a Unix socket)
        argv = [BIN] + ([command] if command else []) + list(args)
        if listen:
            h = "[%s]" % host if ":" in host else host
            argv += ["--listen", "%s:%d" % (h, port or 0)]
        # Parallel tests must not fight over the default admin port, and a
        # test's SIGTERM should not wait for the production drain grace.
        if "--admin-listen" not in argv:
            argv += ["--admin-listen", "127.0.0.1:0"]
        if "--shutdown-grace" not in argv:
            argv += ["--shutdown-grace", "0s"]
        self.argv = argv
        self.errdir = tempfile.mkdtemp(prefix="oidc-e2e-stderr-")
        self.errpath = os.path.join(self.errdir, "stderr.log")
        self.outpath = os.path.join(self.errdir, "stdout.log")
        self.proc = None
        self.returncode = None

    # lifecycle --------------------------------------------------------
    def start(self):
        """Starts the server and waits until every listener has logged the
        port it got and the public one accepts connections."""
        self._err = open(self.errpath, "wb")
        self._out = open(self.outpath, "wb")
        self.proc = subprocess.Popen(memcheck_argv(self.argv, self.errdir), stdin=subprocess.DEVNULL,
                                     stdout=self._out, stderr=self._err)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("server exited with status %s before accepting connections;"
                                     " argv=%r stderr:\n%s" % (self.proc.returncode, self.argv, self.stderr()))
            if self._read_ports() and (self.port is None or wait_accepting(self.port, self.host, 0)):
                return self
            time.sleep(0.05)
        self.kill()
        raise AssertionError("server did not log its listeners and accept connections within %.0fs; argv=%r "
                             "stderr:\n%s" % (START_TIMEOUT, self.argv, self.stderr()))

    def _expected_listeners(self):
        """How many addresses the command line names (a config file may
        add more), and whether one is the admin listener's."""
        n, admin = 0, False
        for i, a in enumerate(self.argv[:-1]):
            if a in LISTEN_FLAGS and self.argv[i + 1] != "none":
                n += 1
                admin = admin or a == "--admin-listen"
        return n, admin

    def _read_ports(self):
        """Reads the listeners' ports from the log into self.ports; True
        once all of them are there. The admin listener's line is written
        last, so once it is there, every line is."""
        ports = {}
        for m in LISTENING.finditer(self.stderr()):
            scheme, port, what = m.groups()
            flag = ("--admin-listen" if what == "/livez" else "--token-review-listen" if what == "POST "
                    else "--tls-listen" if scheme == "https" else "--listen")
            ports.setdefault(flag, []).append(int(port) if port else None)
        n, admin = self._expected_listeners()
        if sum(len(v) for v in ports.values()) < n or (admin and "--admin-listen" not in ports):
            return False
        self.ports = ports
        tcp = [p for p in ports.get("--listen", []) if p is not None]
        if self.port is None and tcp:
            # the harness's own --listen comes after the caller's
            self.port = tcp[-1] if self.listen else tcp[0]
        self.admin_port = ports.get("--admin-listen", [None])[0]
        return True

    def port_of(self, flag, index=0):
        """The port the index-th address of flag got (e.g. --tls-listen)."""
        return self.ports[flag][index]

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Sends sig and waits; returns the exit status (None if it had to
        be killed)."""
        if self.proc is None:
            return self.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
                self.returncode = None
                self._close_files()
                self.proc = None
                return None
        self.returncode = self.proc.returncode
        self._close_files()
        self.proc = None
        return self.returncode

    def kill(self):
        """Ends the server now: SIGKILL; under memcheck SIGTERM first, so
        that memcheck gets to check the exit for leaks."""
        if VALGRIND:
            self.stop()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            self.returncode = self.proc.returncode
        self._close_files()
        self.proc = None

    def _close_files(self):
        for f in (getattr(self, "_err", None), getattr(self, "_out", None)):
            if f is not None and not f.closed:
                f.close()

    def cleanup(self):
        """Ends the server and removes its files; returns memcheck's
        reports on it (see memcheck_problems)."""
        self.kill()
        problems = memcheck_problems(self.errdir)
        shutil.rmtree(self.errdir, ignore_errors=True)
        return problems

    def stderr(self):
        try:
            with open(self.errpath, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    # HTTP -------------------------------------------------------------
    def conn(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=SOCK_TIMEOUT)

    def request(self, method, path, headers=None, body=None):
        """One request on a fresh connection: (status, headers, body).
        headers: dict of lower-case name -> list of values."""
        c = self.conn()
        try:
            return do_request(c, method, path, headers, body)
        finally:
            c.close()

    def get(self, path, headers=None):
        return self.request("GET", path, headers)

    def url(self, path):
        h = "[%s]" % self.host if ":" in self.host else self.host
        return "http://%s:%d%s" % (h, self.port, path)

    def raw_socket(self):
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(SOCK_TIMEOUT)
        s.connect((self.host, self.port))
        return s


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


# --------------------------------------------------------------------------
# base test case

class ServerTestCase(unittest.TestCase):
    """Gives each test a temporary directory, a KeyFactory and a way to
    start servers that are always killed in teardown."""

    def setUp(self):
        require_binary(self)
        self.tmp = tempfile.mkdtemp(prefix="oidc-e2e-")
        self.keys = KeyFactory(self.tmp)
        self._servers = []

    def tearDown(self):
        problems = [p for s in self._servers for p in s.cleanup()]
        shutil.rmtree(self.tmp, ignore_errors=True)
        if problems:
            self.fail("\n\n".join(problems))

    def start_server(self, args, **kw):
        s = Server(args, **kw)
        self._servers.append(s)
        s.start()
        return s

    def stop_ok(self, server, sig=signal.SIGTERM):
        rc = server.stop(sig)
        self.assertEqual(rc, 0, "server exit status after %s was %r; stderr:\n%s\n%s"
                         % (signal.Signals(sig).name, rc, server.stderr(),
                            "\n".join(memcheck_problems(server.errdir))))

    # assertions shared by several files -------------------------------
    def assert_doc(self, status, headers, body, expected_body, content_type,
                   max_age=3600, cors=True, method="GET"):
        self.assertEqual(status, 200, body)
        self.assertEqual(one(headers, "content-type"), content_type)
        self.assertEqual(one(headers, "cache-control"), "public, max-age=%d" % max_age)
        self.assertEqual(int(one(headers, "content-length")), len(expected_body))
        self.assertNotIn("transfer-encoding", headers)
        etag = one(headers, "etag")
        self.assertRegex(etag, r'^"[\x21\x23-\x7e]*"$', "ETag must be strong")
        lm = one(headers, "last-modified")
        self.assertRegex(lm, IMF_FIXDATE)
        self.assertLessEqual(parse_http_date(lm), time.time() + 2, "Last-Modified in the future")
        if cors:
            self.assertEqual(one(headers, "access-control-allow-origin"), "*")
        else:
            self.assertNotIn("access-control-allow-origin", headers)
        if method == "GET":
            self.assertEqual(body, expected_body)
        else:
            self.assertEqual(body, b"")
        return etag, lm

    def check_both(self, server, issuer, keys, jwks_uri=None, content_type="application/jwk-set+json",
                   max_age=3600, cors=True):
        jwks_uri = jwks_uri or default_jwks_uri(issuer)
        st, h, b = server.get(DISCOVERY)
        self.assert_doc(st, h, b, expected_discovery(issuer, jwks_uri, [k.alg for k in keys]),
                        "application/json", max_age, cors)
        st, h, b = server.get(JWKS)
        self.assert_doc(st, h, b, expected_jwks(keys), content_type, max_age, cors)
        return b


def rss_kib(pid):
    """The VmRSS of process pid, in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/%d/status" % pid)


# --------------------------------------------------------------------------
# key rotation helpers (files changing under a running server)

def wait_until(pred, timeout, interval=0.05):
    """Calls pred until it returns a truthy value or timeout seconds
    (stretched by SLOW) pass; returns the last value (falsy on timeout)."""
    deadline = time.monotonic() + timeout * SLOW
    while True:
        value = pred()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def atomic_write(path, data: bytes):
    """Writes data beside path and renames it over path (one inotify
    IN_MOVED_TO, never a torn file)."""
    tmp = os.path.join(os.path.dirname(path) or ".", ".tmp-" + os.path.basename(path))
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def secret_dir_create(path, files, stamp="..2026_01"):
    """Lays out a directory as the kubelet does for a Secret volume:
    path/<stamp>/<name> regular files, path/..data -> <stamp>, and
    path/<name> -> ..data/<name>. files: dict name -> bytes."""
    os.makedirs(os.path.join(path, stamp))
    for name, data in files.items():
        with open(os.path.join(path, stamp, name), "wb") as f:
            f.write(data)
    os.symlink(stamp, os.path.join(path, "..data"))
    for name in files:
        os.symlink(os.path.join("..data", name), os.path.join(path, name))
    return path


def secret_dir_swap(path, files, stamp):
    """Rotates a Secret volume the kubelet's way: writes a new <stamp>
    directory, points ..data_tmp at it, renames ..data_tmp over ..data,
    fixes the user-visible symlinks and removes the previous <stamp>."""
    old = os.readlink(os.path.join(path, "..data"))
    os.makedirs(os.path.join(path, stamp))
    for name, data in files.items():
        with open(os.path.join(path, stamp, name), "wb") as f:
            f.write(data)
    tmp = os.path.join(path, "..data_tmp")
    os.symlink(stamp, tmp)
    os.replace(tmp, os.path.join(path, "..data"))
    for name in files:
        link = os.path.join(path, name)
        if not os.path.islink(link):
            os.symlink(os.path.join("..data", name), link)
    for name in os.listdir(path):
        link = os.path.join(path, name)
        if not name.startswith(".") and name not in files and os.path.islink(link):
            os.unlink(link)
    shutil.rmtree(os.path.join(path, old), ignore_errors=True)


def jwks_kids(body: bytes):
    """The kids of a JWKS document, in order."""
    return [k["kid"] for k in json.loads(body)["keys"]]


# Each worker thread takes a new key set from its own message queue: once
# one thread serves it, the others do within moments (longer under memcheck,
# which runs one thread at a time).
PUBLISH_SETTLE = 0.05 * SLOW


def wait_for_jwks(server, keys, timeout=3.0):
    """Polls the JWKS until it is exactly expected_jwks(keys), then waits
    PUBLISH_SETTLE so that every thread serves it; returns (status, headers,
    body) of the last response."""
    want = expected_jwks(keys)
    last = [None]

    def check():
        last[0] = server.get(JWKS)
        return last[0][0] == 200 and last[0][2] == want
    if wait_until(check, timeout):
        time.sleep(PUBLISH_SETTLE)
    return last[0]


def count_log(server, pattern):
    """How many lines of the server's stderr match the regex pattern."""
    rx = re.compile(pattern)
    return sum(1 for line in server.stderr().splitlines() if rx.search(line))


def wait_for_log(server, pattern, count=1, timeout=3.0):
    """Waits until at least count stderr lines match pattern; returns the
    number found (fewer on timeout)."""
    wait_until(lambda: count_log(server, pattern) >= count, timeout)
    return count_log(server, pattern)


def sighup_and_wait(server, timeout=3.0, settle=0.3):
    """Sends SIGHUP and waits until the server has logged it, then a little
    longer for the reload that follows the log line in the same loop turn."""
    n = count_log(server, r"SIGHUP: reloading keys")
    server.proc.send_signal(signal.SIGHUP)
    got = wait_for_log(server, r"SIGHUP: reloading keys", n + 1, timeout)
    time.sleep(settle * SLOW)
    return got >= n + 1


# --------------------------------------------------------------------------
# token verification helpers (TokenReview API, verify/token commands,
# PyJWT, node jose, a small HTTPS server)

FIXTURES = os.environ.get("OIDC_FIXTURES") or os.path.join(REPO, "tests", "fixtures")
TOKENREVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
SYSTEM_PYTHON = "/usr/bin/python3"


def ensure_pyjwt():
    """Makes `import jwt` and `import cryptography` work: CI installs them
    as Debian packages (python3-jwt, python3-cryptography) for the system
    interpreter, while cmake may have picked another python3 (pyenv, venv);
    see ensure_system_modules."""
    ensure_system_modules("jwt", "cryptography")


def pyjwt_problem():
    try:
        import jwt  # noqa: F401
        import cryptography  # noqa: F401
    except ImportError as e:
        return ("PyJWT / cryptography not importable (%s); install Debian's python3-jwt and "
                "python3-cryptography (scripts/setup.sh)" % e)
    return None


def b64url_decode(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def jwt_parts(token: str):
    """(header dict, payload dict, signature bytes) of a compact JWS, no checks."""
    h, p, s = token.split(".")
    return json.loads(b64url_decode(h)), json.loads(b64url_decode(p)), b64url_decode(s)


def jws_compact(header, payload, sign=None):
    """Builds a compact JWS from dicts (or bytes, taken as already-serialized
    JSON); sign(signing_input_bytes) -> signature bytes (None: empty)."""
    def enc(v):
        if isinstance(v, (bytes, bytearray)):
            return b64url(bytes(v))
        return b64url(json.dumps(v, separators=(",", ":")).encode())
    signing_input = enc(header) + "." + enc(payload)
    sig = sign(signing_input.encode("ascii")) if sign else b""
    return signing_input + "." + b64url(sig)


def kube_claims(issuer, audiences, namespace="default", sa="default", sa_uid="sa-uid-0001",
                pod=None, node=None, now=None, lifetime=3600, jti="11111111-2222-4333-8444-555555555555"):
    """A bound service-account token payload shaped as kube-apiserver issues
    it (docs/compatibility.md §4). pod/node: (name, uid) tuples or None."""
    now = int(time.time()) if now is None else int(now)
    k8s = {"namespace": namespace}
    if node:
        k8s["node"] = {"name": node[0], "uid": node[1]}
    if pod:
        k8s["pod"] = {"name": pod[0], "uid": pod[1]}
    k8s["serviceaccount"] = {"name": sa, "uid": sa_uid}
    return {"aud": list(audiences), "exp": now + lifetime, "iat": now, "iss": issuer, "jti": jti,
            "kubernetes.io": k8s, "nbf": now, "sub": "system:serviceaccount:%s:%s" % (namespace, sa)}


def run_bin(args, input=None, timeout=None):
    """Like run_once, with bytes or str on standard input (empty when None)."""
    if isinstance(input, str):
        input = input.encode()
    return run_once(args, timeout, b"" if input is None else input)


def mint_token(signing_key, issuer, audiences=(), namespace="default", sa="default", sa_uid="sa-uid-0001",
               pod=None, node=None, duration=None, extra=()):
    """A token from `oidc-discovery token`; returns the compact JWS string."""
    args = ["token", "--signing-key-file", signing_key, "--issuer", issuer,
            "--namespace", namespace, "--service-account", sa, "--service-account-uid", sa_uid]
    for a in audiences:
        args += ["--audience", a]
    if pod:
        args += ["--pod-name", pod[0], "--pod-uid", pod[1]]
    if node:
        args += ["--node-name", node[0], "--node-uid", node[1]]
    if duration:
        args += ["--duration", duration]
    args += list(extra)
    rc, out, err = run_bin(args)
    if rc != 0:
        raise AssertionError("oidc-discovery token failed (%r): %s" % (rc, err))
    token = out.strip()
    if token.count(".") != 2 or "\n" in token:
        raise AssertionError("oidc-discovery token printed %r" % out)
    return token


# The caller every review server of the harness allows (a bearer
# service-account token), and the audience its token carries: kept apart
# from the audiences the tests review tokens for.
REVIEW_CALLER_NS, REVIEW_CALLER_SA = "e2e", "reviewer"
REVIEW_CALLER = "system:serviceaccount:%s:%s" % (REVIEW_CALLER_NS, REVIEW_CALLER_SA)
REVIEW_CALLER_AUDIENCE = "e2e-review-caller"


def review_caller_args(tls=False):
    """The flags that let REVIEW_CALLER call a review listener: plain HTTP
    (--token-review-insecure-http) unless tls (the caller passes the TLS
    flags then), and REVIEW_CALLER_AUDIENCE as the caller audience."""
    return ([] if tls else ["--token-review-insecure-http"]) + [
        "--token-review-allowed-callers", REVIEW_CALLER, "--token-review-caller-audiences", REVIEW_CALLER_AUDIENCE]


def review_caller_token(signing_key, issuer, namespace=REVIEW_CALLER_NS, sa=REVIEW_CALLER_SA,
                        audiences=(REVIEW_CALLER_AUDIENCE,), duration=None):
    """A bearer token for a review listener: REVIEW_CALLER's by default,
    signed by signing_key (a private key the server publishes) for issuer."""
    return mint_token(signing_key, issuer, audiences=audiences, namespace=namespace, sa=sa,
                      sa_uid="e2e-caller-uid-0001", duration=duration)


def start_review_server(testcase, args, caller_key, public_port=None, tls=False):
    """Starts `serve` with the TokenReview API on a second loopback port
    (the kernel's choice), over plain HTTP, with review_caller_args() (or,
    with tls, only the caller flags: args carry the TLS ones). caller_key
    is a private key whose public key the server publishes: REVIEW_CALLER's
    bearer token, signed with it for the first --service-account-issuer of
    args, is server.review_bearer, which review_post and review send by
    default when given the server. Returns the Server; its review port is
    server.review_port."""
    kw = {"port": public_port} if public_port else {}
    srv = testcase.start_server(list(args) + ["--enable-token-review", "--token-review-listen", "127.0.0.1:0"]
                                + review_caller_args(tls), **kw)
    srv.review_port = srv.port_of("--token-review-listen")
    issuer = args[list(args).index("--service-account-issuer") + 1]
    srv.review_bearer = review_caller_token(caller_key, issuer)
    return srv


DEFAULT_BEARER = object()


def review_post(target, body, content_type="application/json", method="POST", path=TOKENREVIEW_PATH,
                host="127.0.0.1", bearer=DEFAULT_BEARER, headers=None):
    """One request to a TokenReview listener: (status, headers, body bytes).
    target: a Server of start_review_server (its review port, and by
    default its review_bearer as "Authorization: Bearer"), or a port (no
    Authorization by default). bearer: a token, or None for no
    Authorization header. body: dict (serialized as JSON), str or bytes."""
    if isinstance(target, Server):
        port = target.review_port
        bearer = target.review_bearer if bearer is DEFAULT_BEARER else bearer
    else:
        port = target
        bearer = None if bearer is DEFAULT_BEARER else bearer
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    elif isinstance(body, str):
        body = body.encode()
    headers = dict(headers or {})
    if content_type is not None:
        headers["Content-Type"] = content_type
    if bearer is not None:
        headers["Authorization"] = "Bearer " + bearer
    c = http.client.HTTPConnection(host, port, timeout=SOCK_TIMEOUT)
    try:
        return do_request(c, method, path, headers, body)
    finally:
        c.close()


def review_body(token, audiences=None):
    spec = {"token": token}
    if audiences is not None:
        spec["audiences"] = list(audiences)
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}


def review(target, token, audiences=None, bearer=DEFAULT_BEARER):
    """POSTs a TokenReview (to target, as review_post); returns (http
    status, parsed JSON answer)."""
    st, h, b = review_post(target, review_body(token, audiences), bearer=bearer)
    try:
        doc = json.loads(b)
    except ValueError:
        raise AssertionError("TokenReview answer %d is not JSON: %r" % (st, b[:300]))
    return st, doc


# node (panva/jose) --------------------------------------------------------

NODE_TIMEOUT = 30


def node_problem(*scripts):
    """None when node, the given scripts and node_modules/jose are there;
    else what is missing (the tests fail with it, they do not skip)."""
    if shutil.which("node") is None:
        return "`node` is not on PATH; install Node.js 18 or 20 (scripts/setup.sh)"
    for s in scripts:
        if not os.path.isfile(os.path.join(NODE_DIR, s)):
            return "missing %s" % os.path.join(NODE_DIR, s)
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "jose")):
        return "%s/node_modules/jose is missing; run `npm ci` in %s" % (NODE_DIR, NODE_DIR)
    return None


def run_node(script, *args, timeout=NODE_TIMEOUT):
    r = subprocess.run(["node", os.path.join(NODE_DIR, script), *args], cwd=NODE_DIR,
                       capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


# TLS: a test CA, server certificates, a tiny static HTTPS server ------------

def make_ca(dirpath, name="ca"):
    """A self-signed CA (EC P-256) for one test: returns (cert path, key path)."""
    key = os.path.join(dirpath, name + ".key")
    crt = os.path.join(dirpath, name + ".crt")
    openssl("req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", crt, "-subj", "/CN=oidc-e2e test CA %s" % name, "-days", "2",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return crt, key


def make_server_cert(dirpath, ca, san, name="server"):
    """A server certificate signed by ca (cert, key) for the subjectAltName
    san (e.g. "IP:127.0.0.1" or "DNS:other.example"): (cert path, key path)."""
    key = os.path.join(dirpath, name + ".key")
    csr = os.path.join(dirpath, name + ".csr")
    crt = os.path.join(dirpath, name + ".crt")
    ext = os.path.join(dirpath, name + ".ext")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", "/CN=oidc-e2e %s" % name)
    with open(ext, "w") as f:
        f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n" % san)
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
            "-out", crt, "-days", "1", "-extfile", ext)
    return crt, key


def make_client_cert(dirpath, ca, subject, name="client"):
    """A client certificate (extendedKeyUsage clientAuth) signed by ca
    (cert, key) for subject in openssl's "/O=example/CN=vault" form:
    (cert path, key path)."""
    key = os.path.join(dirpath, name + ".key")
    csr = os.path.join(dirpath, name + ".csr")
    crt = os.path.join(dirpath, name + ".crt")
    ext = os.path.join(dirpath, name + ".ext")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", subject)
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
            "-out", crt, "-days", "1", "-extfile", ext)
    return crt, key


def make_client_cert_x509(dirpath, ca, name, subject=(), san=(), not_after=None):
    """A client certificate signed by ca, built with `cryptography` for what
    `openssl x509 -req` cannot make: a notAfter to the second (not_after, a
    Unix time; default a day from now) and an empty subject. subject is a
    list of (attribute, value) pairs such as [("O", "example"), ("CN",
    "vault")], most general first; san lists DNS names, critical when the
    subject is empty (RFC 5280 4.2.1.6). Needs ensure_pyjwt() (which makes
    `cryptography` importable). Returns (cert path, key path, notAfter)."""
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    utc = datetime.timezone.utc
    now = int(time.time())
    not_after = int(not_after if not_after is not None else now + 86400)
    ca_cert = x509.load_pem_x509_certificate(read_bytes(ca[0]))
    ca_key = serialization.load_pem_private_key(read_bytes(ca[1]), None)
    key = ec.generate_private_key(ec.SECP256R1())
    names = {"CN": NameOID.COMMON_NAME, "O": NameOID.ORGANIZATION_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME}
    b = (x509.CertificateBuilder()
         .subject_name(x509.Name([x509.NameAttribute(names[k], v) for k, v in subject]))
         .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(datetime.datetime.fromtimestamp(now - 60, utc))
         .not_valid_after(datetime.datetime.fromtimestamp(not_after, utc))
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
         .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if san:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(d) for d in san]), critical=not subject)
    cert = b.sign(ca_key, hashes.SHA256())
    crt, keyfile = os.path.join(dirpath, name + ".crt"), os.path.join(dirpath, name + ".key")
    with open(crt, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(keyfile, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return crt, keyfile, not_after


def cert_subject_rfc4514(path):
    """The subject of a PEM certificate as `openssl x509 -nameopt RFC2253`
    prints it: what --token-review-allowed-callers names it by."""
    out = openssl("x509", "-in", path, "-noout", "-subject", "-nameopt", "RFC2253").decode().strip()
    return out.split("=", 1)[1]


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


# --------------------------------------------------------------------------
# production serving: system-python modules, TLS clients, the admin
# listener's metrics, curl

def ensure_system_modules(*modules):
    """ensure_pyjwt() for any modules: when one of them cannot be imported
    here but SYSTEM_PYTHON has them all (Debian packages such as
    python3-prometheus-client), the test re-executes itself under
    SYSTEM_PYTHON. Otherwise nothing happens and the import fails later with
    a clear message (see modules_problem)."""
    import importlib
    import sys
    if modules_problem(*modules) is None:
        return
    if os.environ.get("OIDC_E2E_REEXEC") or os.path.realpath(sys.executable) == os.path.realpath(SYSTEM_PYTHON):
        return
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import " + ", ".join(modules)], capture_output=True, timeout=30)
    if probe.returncode != 0:
        return
    importlib.invalidate_caches()
    os.environ["OIDC_E2E_REEXEC"] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(sys.argv[0]), *sys.argv[1:]])


def modules_problem(*modules):
    """None when every module imports; else a message naming the first
    that does not."""
    import importlib
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            return "python module %s not importable (%s); run scripts/setup.sh" % (m, e)
    return None


TLS_SAN = "IP:127.0.0.1,DNS:localhost"


def cert_der(path) -> bytes:
    return pem_body(read_bytes(path), "CERTIFICATE")


def cert_fingerprint(path) -> str:
    """sha256 hex of the DER of the first certificate in a PEM file."""
    return hashlib.sha256(cert_der(path)).hexdigest()


def cert_not_after(path) -> int:
    """notAfter of a PEM certificate as a Unix time."""
    import ssl
    out = openssl("x509", "-in", path, "-noout", "-enddate").decode().strip()
    return int(ssl.cert_time_to_seconds(out.split("=", 1)[1]))


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


class FixtureKeysTestCase(ServerTestCase):
    """ServerTestCase for tests that check tokens with PyJWT too: fails when
    PyJWT is missing, and has the committed fixture keys (PKCS#8 private;
    their public keys are what a server of the test publishes) as self.rsa
    and self.ec."""

    def setUp(self):
        super().setUp()
        problem = pyjwt_problem()
        if problem:
            self.fail(problem)
        self.rsa = Key(self.tmp, "fixrsa", os.path.join(FIXTURES, "rsa2048.pkcs8.key"))
        self.ec = Key(self.tmp, "fixec", os.path.join(FIXTURES, "ec256.pkcs8.key"))


class TLSServerTestCase(ServerTestCase):
    """ServerTestCase with a test CA and a way to start a server that also
    listens with TLS on a known port (server.tls_port)."""

    def setUp(self):
        super().setUp()
        self.ca = make_ca(self.tmp)
        self.ca_cert = self.ca[0]

    def new_cert(self, name, san=TLS_SAN):
        return make_server_cert(self.tmp, self.ca, san, name=name)

    def start_tls_server(self, args, cert, key, tls_port=None, **kw):
        """Starts a server that also listens with TLS on tls_port (by
        default the kernel's choice): server.tls_port."""
        srv = self.start_server(list(args) + ["--tls-listen", "127.0.0.1:%d" % (tls_port or 0),
                                              "--tls-cert-file", cert, "--tls-private-key-file", key], **kw)
        srv.tls_port = srv.port_of("--tls-listen")
        return srv


SANITIZER_ERROR = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error: |WARNING: ThreadSanitizer")


class SanitizerCheck:
    """Mixin for a ServerTestCase (list it first): at teardown, fails the
    test when a server it started printed an AddressSanitizer,
    LeakSanitizer or UBSan report (the -DOIDC_SANITIZE=ON build)."""

    def tearDown(self):
        for s in getattr(self, "_servers", []):
            if s.proc is not None and s.proc.poll() is None:
                s.stop()  # SIGTERM, so that LeakSanitizer runs at exit
        reports = [(s.argv, s.stderr()) for s in getattr(self, "_servers", [])
                   if SANITIZER_ERROR.search(s.stderr())]
        super().tearDown()
        if reports:
            argv, err = reports[0]
            self.fail("sanitizer report from %r:\n%s" % (argv, err[-6000:]))


# --------------------------------------------------------------------------
# the admin listener's status page (/) and a headless browser

def html_tables(text):
    """The tables of an HTML page, parsed with the standard library's
    parser: {table id: [[cell text, ...] per row]}; tables without an id
    are listed under the title of the <h2> before them."""
    import html.parser

    class Tables(html.parser.HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.tables, self.rows, self.cell, self.heading, self.h2 = {}, None, None, None, None

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.rows = self.tables.setdefault(dict(attrs).get("id") or self.h2 or "", [])
            elif tag == "tr" and self.rows is not None:
                self.rows.append([])
            elif tag in ("td", "th") and self.rows is not None:
                self.cell = ""
            elif tag == "h2":
                self.heading = ""

        def handle_endtag(self, tag):
            if tag == "table":
                self.rows = None
            elif tag in ("td", "th") and self.cell is not None:
                self.rows[-1].append(self.cell)
                self.cell = None
            elif tag == "h2" and self.heading is not None:
                self.h2, self.heading = self.heading, None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data
            if self.heading is not None:
                self.heading += data

    p = Tables()
    p.feed(text)
    p.close()
    return p.tables


def html_rows(tables, table_id):
    """{first cell: second cell} of a two-column table (documents, reload,
    counters and the added sections)."""
    return {r[0]: r[1] for r in tables.get(table_id, []) if len(r) == 2}


# A time as the status page and `keys` show it.
RFC3339 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"


def parse_rfc3339(text):
    """Unix seconds of a time of RFC3339's form."""
    import calendar
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


CHROMIUM = shutil.which("chromium")

# Flags for Debian's chromium in a test: headless as root, no GPU, nothing
# fetched from outside (component updates, sync, safe browsing lists), no
# proxy from the environment.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--no-proxy-server", "--hide-scrollbars"]


def require_chromium(testcase):
    if CHROMIUM is None:
        testcase.fail("chromium not found: scripts/setup.sh installs Debian's chromium for the browser tests")


def chromium_argv(profile, *args):
    """chromium with the test flags and a profile directory of its own."""
    return [CHROMIUM, *CHROMIUM_FLAGS, "--user-data-dir=" + profile, *args]


def chromium_start(profile, *args):
    """Starts chromium in a process group of its own (it forks helpers),
    output to files in profile's parent directory."""
    out = open(os.path.join(os.path.dirname(profile), "chromium.out"), "wb")
    err = open(os.path.join(os.path.dirname(profile), "chromium.err"), "wb")
    p = subprocess.Popen(chromium_argv(profile, *args), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                         start_new_session=True)
    out.close()
    err.close()
    return p


def chromium_stop(p):
    """Ends chromium and its helpers (its process group)."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=10)


def chromium_output(profile):
    """What chromium wrote: (stdout, stderr) as str."""
    def read(name):
        try:
            return read_bytes(os.path.join(os.path.dirname(profile), name)).decode(errors="replace")
        except OSError:
            return ""
    return read("chromium.out"), read("chromium.err")


def chromium_run(profile, *args, timeout=60):
    """Runs chromium to completion (--dump-dom, --screenshot): its stdout,
    or AssertionError with its stderr when it fails or takes too long."""
    p = chromium_start(profile, *args)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        chromium_stop(p)
        raise AssertionError("chromium %r did not finish within %ds:\n%s" % (args, timeout,
                                                                            chromium_output(profile)[1][-3000:]))
    chromium_stop(p)  # helpers it left behind
    out, err = chromium_output(profile)
    if p.returncode != 0:
        raise AssertionError("chromium %r exited %d:\n%s" % (args, p.returncode, err[-3000:]))
    return out
