# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of private-key hygiene.

- A private key given to `serve`, `export` or `keys` never shows up in
  anything the process emits: standard output, standard error, every byte
  of every HTTP response (documents, HEAD, 304, 404, /metrics, TokenReview)
  and the exported files. Scanned for JWK private members and for each
  secret integer (from `openssl pkey -text`) as hex, decimal, base64 and
  base64url at every byte alignment, and for the key's DER and PEM body.
- A private key file readable by group or others draws a warning naming it.
- `serve` writes nowhere but --state-dir (checked with strace).
"""

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import oidc_harness as H

ISSUER = "https://issuer.example"
AUDIENCE = "hygiene-audience"
JWK_PRIVATE = ("d", "p", "q", "dp", "dq", "qi")
RSA_FIELDS = ("privateExponent", "prime1", "prime2", "exponent1", "exponent2", "coefficient")


# --------------------------------------------------------------------------
# what a leak would look like

def openssl_secrets(path):
    """The private integers `openssl pkey -text -noout` prints for a key
    file: d, p, q, dp, dq, qi for RSA; priv for EC."""
    text = H.openssl("pkey", "-in", path, "-text", "-noout").decode()
    out, name, digits = {}, None, ""
    for line in text.splitlines() + ["end:"]:
        if line.startswith((" ", "\t")):
            if name:
                digits += line.strip().replace(":", "")
            continue
        if name and digits:
            out[name] = int(digits, 16)
        field = line.split(":", 1)[0].strip()
        name = field if field in RSA_FIELDS + ("priv",) else None
        digits = ""
    return out


def b64_aligned(data, alphabet):
    """Base64 (alphabet "std" or "url") of data as it would appear at any
    offset inside a longer encoding: for each of the 3 alignments, the
    encoded characters that do not depend on the neighbouring bytes."""
    out = []
    for k in range(3):
        chunk = data[k:]
        chunk = chunk[:len(chunk) - len(chunk) % 3]
        if len(chunk) < 12:
            continue
        enc = base64.b64encode(chunk) if alphabet == "std" else base64.urlsafe_b64encode(chunk)
        out.append(enc.rstrip(b"="))
    return out


def leak_patterns(key_path):
    """name -> bytes that must appear nowhere."""
    pats = {}
    secrets = openssl_secrets(key_path)
    if not secrets:
        raise AssertionError("no secrets parsed from %s" % key_path)
    for name, n in secrets.items():
        raw = H.int_to_min_bytes(n)
        pats[name + " hex"] = raw.hex().encode()
        pats[name + " HEX"] = raw.hex().upper().encode()
        pats[name + " decimal"] = str(n).encode()
        pats[name + " raw"] = raw
        for i, enc in enumerate(b64_aligned(raw, "std")):
            pats["%s base64/%d" % (name, i)] = enc
        for i, enc in enumerate(b64_aligned(raw, "url")):
            pats["%s base64url/%d" % (name, i)] = enc
    pem = H.read_bytes(key_path)
    for m in re.finditer(rb"-----BEGIN ([A-Z ]*PRIVATE KEY)-----\r?\n(.*?)-----END", pem, re.S):
        body = m.group(2)
        # whole bodies only: the leading lines of a PKCS#1 or SEC1 body
        # encode the public modulus or point, which is published anyway
        pats["PEM body"] = b"".join(body.split())
        pats["PEM body as written"] = body.strip()
        pats["DER"] = base64.b64decode(b"".join(body.split()))
    der = H.openssl("pkey", "-in", key_path, "-outform", "DER")
    pats["PKCS#8 DER"] = der
    return pats


JWK_MEMBER = re.compile(rb'"(%s)"\s*:' % b"|".join(m.encode() for m in JWK_PRIVATE))


def find_leaks(blob, pats):
    found = [name for name, p in pats.items() if p in blob]
    found += ["JWK member %s" % m.group(1).decode() for m in JWK_MEMBER.finditer(blob)]
    return found


# --------------------------------------------------------------------------
# capturing every byte

def raw_exchange(port, request):
    """Sends request bytes on a new connection and returns every byte the
    server sends until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=H.SOCK_TIMEOUT) as s:
        s.sendall(request)
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    return data


def http_bytes(port, method, path, headers=(), body=b""):
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" % (method, path)
    for h in headers:
        head += h + "\r\n"
    if body:
        head += "Content-Length: %d\r\n" % len(body)
    return raw_exchange(port, head.encode() + b"\r\n" + body)


def etag_of(response):
    m = re.search(rb"\r\netag: (\"[^\"]*\")", response, re.I)
    return m.group(1).decode() if m else None


def files_under(path):
    out = b""
    for root, _, names in os.walk(path):
        for n in names:
            out += H.read_bytes(os.path.join(root, n))
    return out


# --------------------------------------------------------------------------

class KeyVariants:
    """(name, path of the private key file, Key) for each encoding tested."""

    @staticmethod
    def make(test):
        out = []
        rsa = test.keys.rsa(2048)
        out.append(("RSA 2048 PKCS#8", rsa.priv, rsa))
        out.append(("RSA 2048 PKCS#1", rsa.pkcs1(), rsa))
        for crv in ("P-256", "P-384"):
            ec = test.keys.ec(crv)
            out.append(("EC %s PKCS#8" % crv, ec.priv, ec))
            out.append(("EC %s SEC1" % crv, ec.sec1(), ec))
        for _, path, _ in out:
            os.chmod(path, 0o600)
        return out


class NoSecretLeakTest(H.ServerTestCase):
    def assert_clean(self, what, blob, pats):
        leaks = find_leaks(blob, pats)
        self.assertEqual(leaks, [], "%s leaks %s" % (what, leaks))

    def test_serve(self):
        for name, path, key in KeyVariants.make(self):
            with self.subTest(name):
                pats = leak_patterns(path)
                srv = H.start_review_server(self, ["--service-account-issuer", ISSUER,
                                                   "--service-account-key-file", path,
                                                   "--api-audiences", AUDIENCE, "--log-level", "debug"], path)
                caller = ["Authorization: Bearer " + srv.review_bearer]
                got = []
                got.append(http_bytes(srv.port, "GET", H.DISCOVERY))
                jwks = http_bytes(srv.port, "GET", H.JWKS)
                got.append(jwks)
                self.assertIn(b" 200 ", jwks.split(b"\r\n", 1)[0])
                self.assertIn(key.kid.encode(), jwks)
                got.append(http_bytes(srv.port, "HEAD", H.JWKS))
                got.append(http_bytes(srv.port, "HEAD", H.DISCOVERY))
                etag = etag_of(jwks)
                self.assertIsNotNone(etag)
                r304 = http_bytes(srv.port, "GET", H.JWKS, ["If-None-Match: " + etag])
                self.assertIn(b" 304 ", r304.split(b"\r\n", 1)[0])
                got.append(r304)
                got.append(http_bytes(srv.port, "GET", "/nope"))
                got.append(http_bytes(srv.port, "GET", "/openid/v1/jwks/.."))
                got.append(http_bytes(srv.port, "POST", H.JWKS, body=b"x"))
                H.admin_get(srv.admin_port, "/readyz")
                metrics = http_bytes(srv.admin_port, "GET", "/metrics")
                self.assertIn(b" 200 ", metrics.split(b"\r\n", 1)[0])
                got.append(metrics)
                got.append(http_bytes(srv.admin_port, "GET", "/livez"))
                got.append(http_bytes(srv.admin_port, "GET", "/readyz"))
                token = H.mint_token(path, ISSUER, [AUDIENCE])
                body = json.dumps(H.review_body(token)).encode()
                tr = http_bytes(srv.review_port, "POST", H.TOKENREVIEW_PATH, ["Content-Type: application/json"] + caller,
                                body)
                self.assertIn(b'"authenticated":true', tr)
                got.append(tr)
                bad = json.dumps(H.review_body(token + "x")).encode()
                got.append(http_bytes(srv.review_port, "POST", H.TOKENREVIEW_PATH,
                                      ["Content-Type: application/json"] + caller, bad))
                srv.proc.send_signal(signal.SIGHUP)
                time.sleep(0.3)
                self.stop_ok(srv)
                out = H.read_bytes(srv.outpath)
                err = H.read_bytes(srv.errpath)
                self.assert_clean("HTTP responses", b"\n".join(got), pats)
                self.assert_clean("stdout", out, pats)
                self.assert_clean("stderr", err, pats)

    def test_export_and_keys(self):
        for name, path, key in KeyVariants.make(self):
            with self.subTest(name):
                pats = leak_patterns(path)
                outdir = tempfile.mkdtemp(prefix="export-", dir=self.tmp)
                rc, out, err = H.run_bin(["export", "--service-account-issuer", ISSUER,
                                          "--service-account-key-file", path, "--out", outdir,
                                          "--log-level", "debug"])
                self.assertEqual(rc, 0, err)
                files = files_under(outdir)
                self.assertIn(key.kid.encode(), files)
                self.assert_clean("export stdout", out.encode(), pats)
                self.assert_clean("export stderr", err.encode(), pats)
                self.assert_clean("exported files", files, pats)
                rc, out, err = H.run_bin(["keys", "--service-account-key-file", path, "--output", "json",
                                          "--log-level", "debug"])
                self.assertEqual(rc, 0, err)
                self.assertIn(key.kid, out)
                self.assert_clean("keys stdout", out.encode(), pats)
                self.assert_clean("keys stderr", err.encode(), pats)

    def test_patterns_would_catch_a_leak(self):
        # the scanner itself: a private JWK as a careless encoder would write it
        rsa = self.keys.rsa(2048)
        pats = leak_patterns(rsa.priv)
        s = rsa.secrets
        # openssl's text output and the harness's own DER reader agree
        self.assertEqual({H.int_to_min_bytes(v) for v in openssl_secrets(rsa.priv).values()}, set(s.values()))
        jwk = json.dumps({"kty": "RSA", "d": H.b64url(s["d"])}).encode()
        self.assertIn("privateExponent base64url/0", find_leaks(jwk, pats))
        self.assertIn("JWK member d", find_leaks(jwk, pats))
        self.assertTrue(find_leaks(b"xx" + s["p"].hex().encode(), pats))
        self.assertTrue(find_leaks(base64.b64encode(b"\x01" + s["q"]), pats))
        self.assertTrue(find_leaks(str(int.from_bytes(s["qi"], "big")).encode(), pats))
        self.assertTrue(find_leaks(H.read_bytes(rsa.priv), pats))


class ModeWarningTest(H.ServerTestCase):
    WARNING = "private key file is readable by group or others"

    def keys_stderr(self, *paths):
        args = ["keys"]
        for p in paths:
            args += ["--service-account-key-file", p]
        rc, out, err = H.run_bin(args)
        self.assertEqual(rc, 0, err)
        return err

    def test_group_or_world_readable_private_key_warns(self):
        ec = self.keys.ec()
        for mode in (0o644, 0o640, 0o604, 0o660):
            with self.subTest(mode=oct(mode)):
                os.chmod(ec.priv, mode)
                err = self.keys_stderr(ec.priv)
                want = "%s: %s (mode %04o); chmod 600 it" % (ec.priv, self.WARNING, mode)
                self.assertIn(want, err)
                self.assertEqual(err.count(self.WARNING), 1, err)

    def test_owner_only_private_key_and_public_keys_do_not_warn(self):
        ec = self.keys.ec()
        os.chmod(ec.priv, 0o600)
        os.chmod(ec.pub, 0o644)
        self.assertNotIn(self.WARNING, self.keys_stderr(ec.priv))
        self.assertNotIn(self.WARNING, self.keys_stderr(ec.pub))
        os.chmod(ec.priv, 0o400)
        self.assertNotIn(self.WARNING, self.keys_stderr(ec.priv))

    def test_once_per_file_with_several_private_blocks(self):
        a, b = self.keys.ec(), self.keys.rsa(2048)
        both = self.keys.concat("both.pem", a.priv, b.priv)
        os.chmod(both, 0o644)
        err = self.keys_stderr(both)
        self.assertEqual(err.count(self.WARNING), 1, err)
        self.assertIn(both, err)

    def test_directory_names_the_file(self):
        d = os.path.join(self.tmp, "keys.d")
        os.mkdir(d)
        a, b = self.keys.ec(), self.keys.ec()
        shutil.copy(a.priv, os.path.join(d, "a.key"))
        shutil.copy(b.pub, os.path.join(d, "b.pub"))
        os.chmod(os.path.join(d, "a.key"), 0o644)
        os.chmod(os.path.join(d, "b.pub"), 0o644)
        err = self.keys_stderr(d)
        self.assertIn(os.path.join(d, "a.key") + ": " + self.WARNING, err)
        self.assertNotIn("b.pub: " + self.WARNING, err)

    def test_serve_warns_too(self):
        ec = self.keys.ec()
        os.chmod(ec.priv, 0o644)
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", ec.priv])
        self.assertTrue(H.wait_for_log(srv, re.escape(ec.priv) + ": " + self.WARNING))

    def assert_once(self, srv, pattern, why):
        """pattern is logged once, and not again after reloads."""
        self.assertEqual(H.wait_for_log(srv, pattern), 1, "%s: no warning; stderr:\n%s" % (why, srv.stderr()))
        for _ in range(2):
            self.assertTrue(H.sighup_and_wait(srv, settle=0.2), srv.stderr())
        self.assertEqual(H.count_log(srv, pattern), 1, "%s: warned more than once:\n%s" % (why, srv.stderr()))

    def test_serve_warns_once_across_reloads(self):
        ec = self.keys.ec()
        os.chmod(ec.priv, 0o644)
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", ec.priv])
        self.assert_once(srv, r"\bwarn\b.*" + re.escape(ec.priv) + ": " + self.WARNING, "--service-account-key-file")

    def test_signing_key_file_readable_by_others_warns(self):
        ec = self.keys.ec()
        os.chmod(ec.priv, 0o640)
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", ec.pub,
                                 "--signing-key-file", ec.priv])
        self.assert_once(srv, r"\bwarn\b.*" + re.escape(ec.priv) + ": " + self.WARNING, "--signing-key-file")

    def test_tls_private_key_readable_by_others_warns(self):
        ec = self.keys.ec()
        ca = H.make_ca(self.tmp)
        cert, tkey = H.make_server_cert(self.tmp, ca, "IP:127.0.0.1")
        os.chmod(tkey, 0o644)
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", ec.pub,
                                 "--tls-listen", "127.0.0.1:0", "--tls-cert-file", cert,
                                 "--tls-private-key-file", tkey])
        self.assert_once(srv, r"\bwarn\b.*" + re.escape(tkey) + ": " + self.WARNING, "--tls-private-key-file")
        os.chmod(tkey, 0o600)
        srv2 = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", ec.pub,
                                  "--tls-listen", "127.0.0.1:0", "--tls-cert-file", cert,
                                  "--tls-private-key-file", tkey])
        self.assertTrue(H.sighup_and_wait(srv2), srv2.stderr())
        self.assertNotIn(self.WARNING, srv2.stderr())


class WritableDirectoryTest(H.ServerTestCase):
    """Whoever can write where keys or the retention state are read from
    decides which keys relying parties trust: such a directory draws a
    warning naming it (once)."""

    WARNING = "is writable by others"

    def test_key_directory_writable_by_others(self):
        d = os.path.join(self.tmp, "keys")
        os.mkdir(d)
        ec = self.keys.ec()
        shutil.copy(ec.pub, os.path.join(d, "sa.pub"))
        os.chmod(d, 0o777)
        rc, out, err = H.run_bin(["keys", "--service-account-key-file", d])
        self.assertEqual(rc, 0, err)
        self.assertIn(d + ": key directory " + self.WARNING, err)
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", d])
        pattern = re.escape(d) + ": key directory " + self.WARNING
        self.assertEqual(H.wait_for_log(srv, pattern), 1, srv.stderr())
        self.assertTrue(H.sighup_and_wait(srv), srv.stderr())
        self.assertEqual(H.count_log(srv, pattern), 1, srv.stderr())
        # a key file in such a directory can be replaced by anyone: warned
        # too, unless the directory is sticky (/tmp)
        rc, out, err = H.run_bin(["keys", "--service-account-key-file", os.path.join(d, "sa.pub")])
        self.assertIn(d + ": directory of a key file " + self.WARNING, err)
        os.chmod(d, 0o1777)
        rc, out, err = H.run_bin(["keys", "--service-account-key-file", os.path.join(d, "sa.pub")])
        self.assertNotIn(self.WARNING, err)
        os.chmod(d, 0o755)
        rc, out, err = H.run_bin(["keys", "--service-account-key-file", d])
        self.assertNotIn(self.WARNING, err)


# --------------------------------------------------------------------------
# where serve writes

STRACE_CALLS = "openat,creat,rename,renameat,renameat2,mkdir,mkdirat,unlink,unlinkat"
WRITE_FLAGS = re.compile(r"\bO_(WRONLY|RDWR|CREAT)\b")
STR = r'"((?:[^"\\]|\\.)*)"'


def strace_targets(log):
    """(call, path, line) of every write-mode open, creat, rename (both
    paths), mkdir and unlink in an strace -f log; dirfd-relative paths with
    a dirfd other than AT_FDCWD come back as '<dirfd>/path'."""
    out = []
    for line in log.splitlines():
        m = re.search(r"\b(openat|open|creat|renameat2|renameat|rename|mkdirat|mkdir|unlinkat|unlink)\((.*)", line)
        if not m or "resumed>" in line[:m.start()]:
            continue
        call, args = m.group(1), m.group(2)
        if call in ("openat", "open"):
            if not WRITE_FLAGS.search(args):
                continue
        dirfds = re.findall(r"(?:^|, )(AT_FDCWD|\d+(?:<[^>]*>)?), \"", args)
        paths = re.findall(STR, args)
        if call.startswith("rename"):
            paths = paths[:2]
        else:
            paths = paths[:1]
        for i, p in enumerate(paths):
            fd = dirfds[i] if i < len(dirfds) else "AT_FDCWD"
            known = re.fullmatch(r"\d+<(/[^>]*)>", fd)  # strace -y names the directory
            if call in ("open", "creat", "rename", "mkdir", "unlink") or fd == "AT_FDCWD" or p.startswith("/"):
                out.append((call, p, line))
            elif known:
                out.append((call, os.path.join(known.group(1), p), line))
            else:
                out.append((call, "<%s>/%s" % (fd, p), line))
    return out


class StraceParserTest(unittest.TestCase):
    def test_targets(self):
        log = "\n".join([
            '10 openat(AT_FDCWD, "/etc/ssl/openssl.cnf", O_RDONLY) = 3',
            '10 openat(AT_FDCWD, "/s/keys.json.tmp", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600 <unfinished ...>',
            '11 <... openat resumed>) = 4',
            '10 rename("/s/a.tmp", "/s/a") = 0',
            '10 renameat2(AT_FDCWD, "rel", 5</x>, "b", RENAME_NOREPLACE) = 0',
            '10 unlinkat(AT_FDCWD, "/tmp/x", 0) = 0',
            '10 unlinkat(6, "t", 0) = 0',
            '10 mkdir("/s", 0700) = 0',
        ])
        got = [(c, p) for c, p, _ in strace_targets(log)]
        self.assertEqual(got, [("openat", "/s/keys.json.tmp"), ("rename", "/s/a.tmp"), ("rename", "/s/a"),
                               ("renameat2", "rel"), ("renameat2", "/x/b"), ("unlinkat", "/tmp/x"), ("unlinkat", "<6>/t"),
                               ("mkdir", "/s")])


@unittest.skipIf(shutil.which("strace") is None, "strace is not installed (scripts/setup.sh installs it)")
class WritesOnlyStateDirTest(H.ServerTestCase):
    def test_serve_writes_only_under_state_dir(self):
        # strace needs ptrace; a container without CAP_SYS_PTRACE under a
        # strict Yama policy cannot use it
        probe = subprocess.run(["strace", "-f", "-o", os.devnull, "true"], capture_output=True, timeout=30)
        if probe.returncode != 0:
            self.skipTest("strace cannot trace here: %s" % probe.stderr.decode(errors="replace").strip())
        state = os.path.join(self.tmp, "state")
        keydir = os.path.join(self.tmp, "keys")
        os.mkdir(keydir)
        k1, k2 = self.keys.ec(), self.keys.ec()
        keyfile = os.path.join(keydir, "sa.pub")
        H.atomic_write(keyfile, H.read_bytes(k1.pub))
        log = os.path.join(self.tmp, "strace.log")
        srv = H.Server(["--service-account-issuer", ISSUER, "--service-account-key-file", keyfile,
                        "--state-dir", state, "--key-retention", "1h", "--key-reload-interval", "1s"])
        # LeakSanitizer cannot run under ptrace; the leak check of the ASan
        # build is done by every other test, so it is switched off here only.
        srv.argv = ["strace", "-f", "-qq", "-y", "-e", "trace=" + STRACE_CALLS, "-o", log,
                    "env", "ASAN_OPTIONS=detect_leaks=0"] + srv.argv
        self._servers.append(srv)
        srv.start()
        self.check_both(srv, ISSUER, [k1])
        H.atomic_write(keyfile, H.read_bytes(k2.pub))
        st, _, body = H.wait_for_jwks(srv, [k2, k1], timeout=5.0)
        self.assertEqual(st, 200)
        self.assertEqual(H.jwks_kids(body), [k2.kid, k1.kid], "rotation with retention was not published")
        H.admin_get(srv.admin_port, "/metrics")
        srv.get("/nope")
        srv.proc.send_signal(signal.SIGHUP)
        time.sleep(0.3)
        # SIGTERM the server itself (strace's child), then let strace finish
        with open("/proc/%d/task/%d/children" % (srv.proc.pid, srv.proc.pid)) as f:
            children = f.read().split()
        self.assertEqual(len(children), 1, children)
        os.kill(int(children[0]), signal.SIGTERM)
        self.assertEqual(srv.proc.wait(timeout=H.STOP_TIMEOUT), 0, srv.stderr())
        srv.proc = None
        self.assertTrue(os.listdir(state), "no state was written")

        with open(log) as f:
            text = f.read()
        targets = strace_targets(text)
        self.assertTrue(any(c.startswith("rename") or c.startswith("open") for c, _, _ in targets),
                        "no write seen at all; strace log:\n" + text[-3000:])
        real_state = os.path.realpath(state)
        bad = []
        for call, path, line in targets:
            full = os.path.realpath(path if os.path.isabs(path) else os.path.join(os.getcwd(), path))
            if path.startswith("<") or not (full == real_state or full.startswith(real_state + os.sep)):
                bad.append(line.strip())
        self.assertEqual(bad, [], "writes outside --state-dir %s" % state)


if __name__ == "__main__":
    unittest.main()
