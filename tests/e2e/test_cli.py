# SPDX-License-Identifier: Apache-2.0
"""End-to-end: command line (help, version, flag errors), the config file,
signals, startup log, listeners (several, IPv6)."""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import unittest

import oidc_harness as H
from oidc_harness import DISCOVERY, JWKS, one

ISSUER = "https://issuer.example.com"


VERSION_LINE = re.compile(r"^oidc-discovery (?P<version>[0-9]+\.[0-9]+\.[0-9]+\S*) \(commit "
                          r"(?P<commit>[0-9a-f]{12}(?:-dirty)?|unknown), built (?P<date>\d{4}-\d\d-\d\d)\)\n$")


def git_head():
    """The checkout's commit as --version shows it, or None outside git."""
    try:
        r = subprocess.run(["git", "-C", H.REPO, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                           timeout=30)
    except OSError:
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def project_version():
    try:
        with open(os.path.join(H.REPO, "CMakeLists.txt")) as f:
            m = re.search(r"project\(\s*oidc-discovery\s+VERSION\s+([0-9][0-9.]*)", f.read())
            return m.group(1) if m else None
    except OSError:
        return None


class HelpVersion(H.ServerTestCase):

    def test_help(self):
        rc, out, err = H.run_once(["--help"])
        self.assertEqual(rc, 0, err)
        text = out + err
        for flag in ("--service-account-issuer", "--service-account-key-file", "--listen",
                     "--service-account-jwks-uri", "--max-age", "--jwks-content-type", "--no-cors",
                     "--allow-insecure-issuer", "--config", "--threads"):
            self.assertIn(flag, text)
        self.assertTrue(out.strip(), "usage should go to stdout")

    def test_serve_help(self):
        rc, out, err = H.run_once(["serve", "--help"])
        self.assertEqual(rc, 0, err)
        self.assertIn("--service-account-issuer", out + err)

    def test_command_help(self):
        """Each command's help lists its own flags first; `help COMMAND`
        prints the same, and `help all` every flag of every command."""
        own = {"serve": "--service-account-issuer", "keys": "--output", "verify": "--token-file",
               "token": "--issuer", "export": "--out"}
        for command, first in own.items():
            with self.subTest(command=command):
                rc, out, err = H.run_once([command, "--help"])
                self.assertEqual(rc, 0, err)
                self.assertTrue(out.startswith("Usage: oidc-discovery"), out)
                self.assertIn(command, out.splitlines()[0])
                flags = re.findall(r"^  (?:-h, )?(--[a-z0-9-]+)", out, re.M)
                self.assertEqual(flags[0], first, out)
                rc, out2, err = H.run_once(["help", command])
                self.assertEqual((rc, out2), (0, out), err)
        rc, out, _ = H.run_once(["token", "--help"])
        self.assertNotIn("--listen", out, "token's help lists only token's flags")
        rc, out, err = H.run_once(["help", "all"])
        self.assertEqual(rc, 0, err)
        for flag in ("--token-file", "--issuer", "--out", "--output", "--listen", "--http2"):
            self.assertRegex(out, r"(?m)^  %s\b" % flag)

    def test_version(self):
        """--version names the version, the commit (one of this checkout's
        when the binary was built from it) and the build date."""
        rc, out, err = H.run_once(["--version"])
        self.assertEqual(rc, 0, err)
        m = VERSION_LINE.match(out)
        self.assertIsNotNone(m, out)
        v = project_version()
        if v:
            self.assertEqual(m.group("version"), v)
        commit = m.group("commit").removesuffix("-dirty")
        if git_head() and os.path.realpath(H.BIN).startswith(os.path.realpath(H.REPO) + os.sep):
            # built from this checkout: HEAD, or one before it when not rebuilt since
            r = subprocess.run(["git", "-C", H.REPO, "merge-base", "--is-ancestor", commit, "HEAD"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, "commit %s is not in this checkout's history: %s" % (commit, r.stderr))

    def build_info(self, src, env=None, commit=None):
        """The header cmake/build_info.cmake writes for source dir src."""
        out = os.path.join(self.tmp, "build_info.h")
        argv = ["cmake", "-DSRC=" + src, "-DOUT=" + out, "-P", os.path.join(H.REPO, "cmake", "build_info.cmake")]
        if commit is not None:
            argv[1:1] = ["-DCOMMIT=" + commit]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, **(env or {})))
        if r.returncode != 0:
            return None, r.stderr
        return dict(re.findall(r'#define (OIDC_BUILD_\w+)\s+"([^"]*)"', H.read_bytes(out).decode())), r.stderr

    def test_build_info_from_a_tarball_and_reproducible(self):
        """A source without .git says the commit is unknown (or what
        -DOIDC_BUILD_COMMIT says), and SOURCE_DATE_EPOCH fixes the date."""
        src = os.path.join(self.tmp, "oidc-discovery-0.1.0")
        os.mkdir(src)
        info, err = self.build_info(src, env={"SOURCE_DATE_EPOCH": "1700000000"})
        self.assertEqual(info, {"OIDC_BUILD_COMMIT": "unknown", "OIDC_BUILD_DATE": "2023-11-14"}, err)
        info, err = self.build_info(src, commit="0123456789ab")
        self.assertEqual(info["OIDC_BUILD_COMMIT"], "0123456789ab", err)
        info, err = self.build_info(src, commit='x" evil')
        self.assertIsNone(info)
        self.assertIn("OIDC_BUILD_COMMIT", err)
        head = git_head()
        if head:
            info, err = self.build_info(H.REPO, env={"SOURCE_DATE_EPOCH": "0"})
            self.assertEqual(info["OIDC_BUILD_COMMIT"].removesuffix("-dirty"), head, err)
            self.assertEqual(info["OIDC_BUILD_DATE"], "1970-01-01")
            # a tarball unpacked inside a checkout does not take its commit
            inner = os.path.join(H.REPO, "build", "oidc-e2e-tarball-%d" % os.getpid())
            if os.path.isdir(os.path.dirname(inner)):
                os.mkdir(inner)
                try:
                    info, err = self.build_info(inner)
                    self.assertEqual(info["OIDC_BUILD_COMMIT"], "unknown", err)
                finally:
                    os.rmdir(inner)


class FlagErrors(H.ServerTestCase):

    def setUp(self):
        super().setUp()
        self.key = self.keys.ec("P-256")

    def base(self, issuer=ISSUER, key=True, listen=True):
        a = ["serve"]
        if issuer is not None:
            a += ["--service-account-issuer", issuer]
        if key:
            a += ["--service-account-key-file", self.key.pub]
        if listen:
            a += ["--listen", "127.0.0.1:0"]
        return a

    def assert_config_error(self, args, flag, value=None):
        rc, out, err = H.run_once(args)
        self.assertIsNotNone(rc, "did not exit for %r; stderr:\n%s" % (args, err))
        self.assertEqual(rc, 2, "exit status for %r; stderr:\n%s" % (args, err))
        lines = [line for line in err.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, "expected one line on stderr, got:\n" + err)
        self.assertIn(flag, lines[0])
        if value is not None:
            self.assertIn(value, lines[0])
        return lines[0]

    def test_http_issuer_rejected(self):
        line = self.assert_config_error(self.base(issuer="http://x"), "--service-account-issuer", "http://x")
        self.assertIn("https", line)

    def test_issuer_with_query_or_fragment(self):
        for bad in ("https://a.example/?x=1", "https://a.example/#frag", "not a url", "https://"):
            with self.subTest(issuer=bad):
                self.assert_config_error(self.base(issuer=bad), "--service-account-issuer")

    def test_missing_issuer(self):
        self.assert_config_error(self.base(issuer=None), "--service-account-issuer")

    def test_missing_key_file_flag(self):
        self.assert_config_error(self.base(key=False), "--service-account-key-file")

    def test_bad_jwks_uri(self):
        for bad in ("http://cdn.example/jwks", "https://cdn.example/jwks?x=1", "jwks"):
            with self.subTest(jwks_uri=bad):
                self.assert_config_error(self.base() + ["--service-account-jwks-uri", bad],
                                         "--service-account-jwks-uri")

    def test_bad_numbers(self):
        for flag, bad in (("--threads", "0"), ("--threads", "abc"), ("--threads", "-1"),
                          ("--max-age", "abc"), ("--max-age", "-5"), ("--max-age", "1x")):
            with self.subTest(flag=flag, value=bad):
                self.assert_config_error(self.base() + [flag, bad], flag)

    def test_bad_listen(self):
        for bad in ("nonsense", "127.0.0.1:99999", "127.0.0.1:", "[::1:80"):
            with self.subTest(listen=bad):
                self.assert_config_error(self.base(listen=False) + ["--listen", bad], "--listen")

    def test_listen_without_host_suggests_one(self):
        line = self.assert_config_error(self.base(listen=False) + ["--listen", ":8080"], "--listen")
        self.assertIn("has no host; did you mean 0.0.0.0:8080", line)

    def test_wrong_flag_names_get_a_suggestion(self):
        for wrong, meant in (("--issuer", "--service-account-issuer"), ("--key-file", "--service-account-key-file"),
                             ("--port", "--listen")):
            with self.subTest(flag=wrong):
                line = self.assert_config_error(self.base() + [wrong, "x"], wrong)
                self.assertIn("did you mean %s?" % meant, line)

    def test_max_age_takes_a_duration(self):
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", self.key.pub,
                                 "--max-age", "15m"])
        self.check_both(srv, ISSUER, [self.key], max_age=900)
        self.stop_ok(srv)

    def test_unknown_flag(self):
        rc, _, err = H.run_once(self.base() + ["--no-such-flag"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--no-such-flag", err)

    def test_flag_missing_value(self):
        rc, _, err = H.run_once(self.base() + ["--max-age"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--max-age", err)

    def test_insecure_issuer_allowed_with_flag(self):
        port = H.free_port()
        issuer = "http://127.0.0.1:%d" % port
        srv = self.start_server(["--service-account-issuer", issuer,
                                 "--service-account-key-file", self.key.pub,
                                 "--allow-insecure-issuer"], port=port)
        self.assertIn("warn", srv.stderr().lower(), "no warning for an http issuer:\n" + srv.stderr())
        self.check_both(srv, issuer, [self.key])
        self.stop_ok(srv)

    def test_trailing_slash_issuer_warns(self):
        """Accepted as kube-apiserver accepts it, and served as given, with a
        warning that relying parties compare it byte for byte."""
        issuer = ISSUER + "/"
        srv = self.start_server(["--service-account-issuer", issuer, "--service-account-key-file", self.key.pub])
        self.check_both(srv, issuer, [self.key])
        warnings = [line for line in srv.stderr().splitlines() if "byte for byte" in line]
        self.assertEqual(len(warnings), 1, srv.stderr())
        self.assertIn("warn", warnings[0].lower())
        self.assertIn('--service-account-issuer "%s"' % issuer, warnings[0])
        self.stop_ok(srv)

    def test_port_in_use(self):
        """A taken port stops the start with a message that names the flag
        whose address it is, and says what to do."""
        tls_files = ["--tls-cert-file", os.path.join(H.FIXTURES, "rsa2048.crt"),
                     "--tls-private-key-file", os.path.join(H.FIXTURES, "rsa2048.pkcs8.key")]
        others = {"--listen": "127.0.0.1:0", "--admin-listen": "127.0.0.1:0", "--tls-listen": None,
                  "--token-review-listen": None}
        for flag in others:
            with self.subTest(flag=flag), socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                s.listen(1)
                taken = "127.0.0.1:%d" % s.getsockname()[1]
                args = self.base(listen=False)
                for other, addr in others.items():
                    if other != flag and addr:
                        args += [other, addr]
                args += [flag, taken]
                if flag == "--tls-listen":
                    args += tls_files
                if flag == "--token-review-listen":
                    args += ["--enable-token-review"] + H.review_caller_args(tls=False)
                rc, _, err = H.run_once(args)
                self.assertEqual(rc, 1, err)
                self.assertIn("%s %s: cannot listen: Address already in use; another process listens there: stop "
                              "it or choose another address" % (flag, taken), err)
                self.assertNotIn("listening on", err)

    def test_startup_key_error_says_it_is_the_start(self):
        """Key files that give nothing to publish at start are a start-up
        error, not a reload that failed."""
        missing = os.path.join(self.tmp, "missing.pub")
        rc, _, err = H.run_once(self.base(key=False) + ["--service-account-key-file", missing,
                                                       "--admin-listen", "none"])
        self.assertEqual(rc, 2, err)
        self.assertIn("cannot start: no key set to publish: %s: cannot read: No such file or directory" % missing, err)
        self.assertNotIn("reload", err)
        self.assertNotIn("so far", err)


class KeysCommand(H.ServerTestCase):

    def test_json_members_have_json_types(self):
        """keys --output json: sizes are numbers (bits), the curve a string
        or null, times strings (RFC 3339) or null, for programs to read."""
        rsa, ec = self.keys.rsa(3072), self.keys.ec("P-521")
        rc, out, err = H.run_once(["keys", "--service-account-key-file", rsa.pub, "--service-account-key-file", ec.pub,
                                   "--output", "json"])
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual(list(doc), ["keys"])
        a, b = doc["keys"]
        self.assertEqual(a, {"kid": rsa.kid, "alg": "RS256", "size": 3072, "curve": None,
                             "source": rsa.pub + " (block 1)", "first_seen": None, "retained_until": None,
                             "role": None, "role_until": None})
        self.assertEqual((b["kid"], b["alg"], b["size"], b["curve"]), (ec.kid, "ES512", 521, "P-521"))
        for k in (a, b):
            self.assertIs(type(k["size"]), int)


class ConfigFile(H.ServerTestCase):

    def write_config(self, doc):
        path = os.path.join(self.tmp, "config.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_config_file(self):
        k = self.keys.rsa()
        cfg = self.write_config({"service-account-issuer": ["https://a.example"],
                                 "service-account-key-file": [k.pub],
                                 "listen": ["127.0.0.1:0"],
                                 "max-age": 600})
        srv = self.start_server(["--config", cfg], listen=False)
        self.check_both(srv, "https://a.example", [k], max_age=600)
        self.stop_ok(srv)

    def test_flag_overrides_config(self):
        k = self.keys.rsa()
        k2 = self.keys.ec("P-256")
        cfg = self.write_config({"service-account-issuer": ["https://a.example"],
                                 "service-account-key-file": [k.pub],
                                 "listen": ["127.0.0.1:0"],
                                 "max-age": 600})
        srv = self.start_server(["--config", cfg, "--max-age", "60",
                                 "--service-account-issuer", "https://b.example",
                                 "--service-account-key-file", k2.pub], listen=False)
        # repeatable flags on the command line replace the file's lists
        self.check_both(srv, "https://b.example", [k2], max_age=60)
        self.stop_ok(srv)

    def test_config_other_keys(self):
        k = self.keys.ec("P-384")
        cfg = self.write_config({"service-account-issuer": ["https://a.example/"],
                                 "service-account-jwks-uri": "https://cdn.example/keys",
                                 "service-account-key-file": [k.pub],
                                 "listen": ["127.0.0.1:0"],
                                 "jwks-content-type": "application/json",
                                 "threads": 2})
        srv = self.start_server(["--config", cfg], listen=False)
        self.check_both(srv, "https://a.example/", [k], jwks_uri="https://cdn.example/keys",
                        content_type="application/json")
        self.stop_ok(srv)

    def test_config_validated_like_flags(self):
        k = self.keys.rsa()
        cfg = self.write_config({"service-account-issuer": ["http://insecure.example"],
                                 "service-account-key-file": [k.pub],
                                 "listen": ["127.0.0.1:0"]})
        rc, _, err = H.run_once(["serve", "--config", cfg])
        self.assertEqual(rc, 2, err)
        self.assertIn("service-account-issuer", err)

    def test_config_errors(self):
        bad_json = os.path.join(self.tmp, "bad.json")
        with open(bad_json, "w") as f:
            f.write('{"service-account-issuer": ["https://a.example"],')
        for path in (bad_json, os.path.join(self.tmp, "missing.json")):
            with self.subTest(path=path):
                rc, _, err = H.run_once(["serve", "--config", path])
                self.assertEqual(rc, 2, err)
                self.assertTrue(path in err or "--config" in err, err)


# An LD_PRELOAD library that makes the signal set-up call OIDC_SHIM_FAIL
# names fail, as libc may: "sigmask" pthread_sigmask blocking SIGTERM,
# "sigpipe" sigaction ignoring SIGPIPE.
SIGNAL_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static int failing(const char *what)
{
    const char *f = getenv("OIDC_SHIM_FAIL");
    return f != NULL && strcmp(f, what) == 0;
}

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    int (*real)(int, const sigset_t *, sigset_t *) = (int (*)(int, const sigset_t *, sigset_t *))dlsym(
        RTLD_NEXT, "pthread_sigmask");
    if (failing("sigmask") && how == SIG_BLOCK && set != NULL && sigismember(set, SIGTERM) == 1)
        return EINVAL;
    return real(how, set, old);
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    int (*real)(int, const struct sigaction *, struct sigaction *) =
        (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
    if (failing("sigpipe") && sig == SIGPIPE && act != NULL) {
        errno = EINVAL;
        return -1;
    }
    return real(sig, act, old);
}
"""


class Lifecycle(H.ServerTestCase):

    def setUp(self):
        super().setUp()
        self.key = self.keys.rsa()
        self.args = ["--service-account-issuer", ISSUER, "--service-account-key-file", self.key.pub]

    def test_signal_setup_failure_refuses_to_start(self):
        """A server whose signals cannot be set up could not be stopped
        cleanly (SIGTERM would kill it mid-response, or SIGPIPE on a write
        to a client that left): it refuses to start, saying why, before it
        listens."""
        if H.VALGRIND:
            self.skipTest("the LD_PRELOAD shim would be loaded into valgrind as well")
        cc = shutil.which("cc")
        self.assertIsNotNone(cc, "cc is needed to build this test's LD_PRELOAD library")
        src, lib = os.path.join(self.tmp, "shim.c"), os.path.join(self.tmp, "shim.so")
        with open(src, "w") as f:
            f.write(SIGNAL_SHIM)
        subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src, "-ldl"], check=True, timeout=60)
        for fail in ("sigmask", "sigpipe"):
            with self.subTest(fail):
                rc, out, err = H.run_once(["serve", *self.args, "--listen", "127.0.0.1:0", "--admin-listen", "none"],
                                          timeout=5, env={"LD_PRELOAD": lib, "OIDC_SHIM_FAIL": fail,
                                                          "ASAN_OPTIONS": "verify_asan_link_order=0"})
                self.assertEqual(rc, 1, "stderr:\n" + err)
                self.assertIn("cannot set up signal handling (Invalid argument); not starting", err)
                self.assertNotIn("listening on", err)

    def test_sigterm(self):
        srv = self.start_server(self.args)
        self.assertEqual(srv.get(JWKS)[0], 200)
        self.stop_ok(srv, signal.SIGTERM)

    def test_sigint(self):
        srv = self.start_server(self.args)
        self.assertEqual(srv.get(JWKS)[0], 200)
        self.stop_ok(srv, signal.SIGINT)

    def test_sigterm_with_idle_keepalive_connection(self):
        srv = self.start_server(self.args)
        c = srv.conn()
        try:
            st, _, _ = H.do_request(c, "GET", JWKS)
            self.assertEqual(st, 200)
            t0 = time.monotonic()
            self.stop_ok(srv, signal.SIGTERM)
            self.assertLess(time.monotonic() - t0, H.STOP_TIMEOUT)
        finally:
            c.close()

    def test_sigterm_with_partial_request_and_stalled_reader(self):
        srv = self.start_server(self.args)
        partial = srv.raw_socket()
        stalled = srv.raw_socket()
        try:
            partial.sendall(b"GET /openid/v1/jw")
            # a client that pipelines many requests and never reads the answers
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            try:
                stalled.sendall(b"GET /openid/v1/jwks HTTP/1.1\r\nHost: x\r\n\r\n" * 2000)
            except socket.timeout:
                pass
            # the server still answers others
            st, _, b = srv.get(JWKS)
            self.assertEqual(st, 200)
            t0 = time.monotonic()
            self.stop_ok(srv, signal.SIGTERM)
            self.assertLess(time.monotonic() - t0, H.STOP_TIMEOUT)
        finally:
            partial.close()
            stalled.close()

    def test_second_signal_ends_the_grace(self):
        """SIGINT starts the grace (5 minutes here); a second SIGINT or
        SIGTERM ends it at once, while SIGHUP in between only reloads."""
        for second in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(second=second.name):
                srv = self.start_server(self.args + ["--shutdown-grace", "5m"])
                srv.proc.send_signal(signal.SIGINT)
                self.assertEqual(H.wait_for_log(srv, r"received Interrupt; /readyz answers 503, serving 300s more",
                                                1, 10), 1, srv.stderr())
                srv.proc.send_signal(signal.SIGHUP)
                self.assertEqual(H.wait_for_log(srv, r"SIGHUP: reloading keys", 1, 10), 1, srv.stderr())
                self.assertEqual(srv.get(JWKS)[0], 200, "still serving during the grace")
                t0 = time.monotonic()
                rc = srv.stop(second, timeout=30 * H.SLOW)
                took = time.monotonic() - t0
                self.assertEqual(rc, 0, srv.stderr())
                self.assertLess(took, 30 * H.SLOW, "the second signal did not end the 300 s grace")
                self.assertEqual(H.count_log(srv, r"received %s during the grace; shutting down now"
                                             % re.escape(signal.strsignal(second))), 1, srv.stderr())

    def test_sigterm_before_any_request(self):
        srv = self.start_server(self.args)
        self.stop_ok(srv, signal.SIGTERM)

    def test_default_command_is_serve(self):
        srv = self.start_server(self.args, command=None)
        self.check_both(srv, ISSUER, [self.key])
        self.stop_ok(srv)

    def test_startup_log(self):
        e = self.keys.ec("P-521")
        srv = self.start_server(self.args + ["--service-account-key-file", e.pub])
        err = srv.stderr()
        v = project_version()
        if v:
            self.assertIn(v, err)
        self.assertIn(ISSUER, err)
        self.assertIn(H.default_jwks_uri(ISSUER), err)
        for k in (self.key, e):
            self.assertIn(k.kid, err)
            self.assertIn(k.alg, err)
        self.assertIn(str(srv.port), err)
        self.stop_ok(srv)

    def test_two_listeners(self):
        srv = self.start_server(self.args + ["--listen", "127.0.0.1:0"])
        p2 = srv.port_of("--listen", 0)  # the test's; the harness's is srv.port
        self.assertNotEqual(p2, srv.port)
        a = srv.get(JWKS)
        srv2 = H.Server([], listen=False, port=p2)  # only for its HTTP helpers
        b = srv2.request("GET", JWKS)
        srv2.cleanup()
        self.assertEqual(a[0], 200)
        self.assertEqual(b[0], 200)
        self.assertEqual(a[2], b[2])
        self.assertEqual(one(a[1], "etag"), one(b[1], "etag"))
        self.stop_ok(srv)

    def test_port_zero_binds_and_logs_a_port_per_listener(self):
        """Port 0 on every listen flag: each address gets a port of its
        own, and its "listening on" line names that port (the harness
        starts every server so; here each port is checked to serve its
        kind)."""
        srv = self.start_server(self.args + ["--enable-token-review", "--token-review-listen", "127.0.0.1:0",
                                             "--listen", "127.0.0.1:0"] + H.review_caller_args())
        public = [srv.port_of("--listen", 0), srv.port_of("--listen", 1)]
        review = srv.port_of("--token-review-listen")
        ports = public + [review, srv.admin_port]
        self.assertEqual(len(set(ports)), 4, "each listener its own port: %r\n%s" % (ports, srv.stderr()))
        self.assertNotIn(0, ports)
        for p in public:
            with self.subTest(listen=p):
                c = http.client.HTTPConnection("127.0.0.1", p, timeout=H.SOCK_TIMEOUT)
                try:
                    self.assertEqual(H.do_request(c, "GET", JWKS)[0], 200)
                finally:
                    c.close()
        caller = H.review_caller_token(self.key.priv, ISSUER)
        self.assertEqual(H.review_post(review, H.review_body("x.y.z"), bearer=caller)[0], 201)
        self.assertEqual(H.admin_get(srv.admin_port, "/livez")[0], 200)
        self.stop_ok(srv)

    def test_ipv6_listener(self):
        if not H.ipv6_loopback_available():
            self.skipTest("IPv6 loopback not available")
        srv = self.start_server(self.args, host="::1")
        self.check_both(srv, ISSUER, [self.key])
        self.stop_ok(srv)


class Dev(H.ServerTestCase):
    """`dev` (the README's first command): a key pair generated into
    ./dev-keys on the first start and reused after, an http issuer on the
    listen address, both documents served."""

    def start_dev(self, work, grace="0s"):
        """dev in work; grace None: dev's own --shutdown-grace."""
        port = H.free_port()
        srv = H.Server([] if grace is None else ["--shutdown-grace", grace], command="dev", port=port)
        if grace is None:  # the harness's own 0s would hide dev's default
            i = srv.argv.index("--shutdown-grace")
            del srv.argv[i:i + 2]
        # run in work, where dev-keys/ goes: a wrapper the harness keeps
        srv.argv[0] = os.path.abspath(srv.argv[0])
        srv.argv[:0] = ["sh", "-c", 'cd "$0" && exec "$@"', work]
        self._servers.append(srv)
        srv.start()
        return srv

    def served_kid(self, srv):
        issuer = "http://127.0.0.1:%d" % srv.port
        st, _, body = srv.get(DISCOVERY)
        self.assertEqual(st, 200)
        doc = json.loads(body)
        self.assertEqual(doc["issuer"], issuer)
        self.assertEqual(doc["jwks_uri"], issuer + JWKS)
        st, _, body = srv.get(JWKS)
        self.assertEqual(st, 200)
        keys = json.loads(body)["keys"]
        self.assertEqual([(k["kty"], k["alg"]) for k in keys], [("RSA", "RS256")])
        return keys[0]["kid"]

    def test_ctrl_c_stops_dev_at_once(self):
        """dev has no shutdown grace (no load balancer drains it): Ctrl-C
        stops it at once, not after serve's 5 s."""
        work = os.path.join(self.tmp, "checkout")
        os.mkdir(work)
        srv = self.start_dev(work, grace=None)
        self.assertNotIn("--shutdown-grace", srv.argv)
        self.assertEqual(srv.get(JWKS)[0], 200)
        t0 = time.monotonic()
        rc = srv.stop(signal.SIGINT)
        took = time.monotonic() - t0
        self.assertEqual(rc, 0, srv.stderr())
        if not H.VALGRIND:
            self.assertLess(took, 4, "dev waited for a grace after Ctrl-C")
        self.assertEqual(H.count_log(srv, r"received Interrupt; shutting down$"), 1, srv.stderr())
        self.assertNotIn("more before shutting down", srv.stderr())

    def test_dev_generates_then_reuses_its_key_pair(self):
        work = os.path.join(self.tmp, "checkout")
        os.mkdir(work)
        srv = self.start_dev(work)
        kid = self.served_kid(srv)
        self.assertIn("generated a development key pair in dev-keys/", srv.stderr())
        self.assertEqual(os.stat(os.path.join(work, "dev-keys", "sa.key")).st_mode & 0o777, 0o600)
        self.assertTrue(os.path.isfile(os.path.join(work, "dev-keys", "sa.pub")))
        self.stop_ok(srv)
        srv = self.start_dev(work)
        self.assertEqual(self.served_kid(srv), kid, "the second start serves the same key")
        self.assertIn("using the development key pair in dev-keys/", srv.stderr())
        self.stop_ok(srv)


if __name__ == "__main__":
    unittest.main()
