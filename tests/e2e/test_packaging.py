# SPDX-License-Identifier: Apache-2.0
"""Packaging: `cmake --install` lays out the binary, the man page, the
systemd unit and its settings file, the unit naming the paths of the
install's prefix (the Debian package is tests/e2e/test_deb.py's, the OCI
image tests/e2e/test_image.py's); the unit's command line is one the binary
accepts, its sandbox directives are the ones its comment rates with
`systemd-analyze security` (at or below the score it states), its
open-file limit holds the default --max-connections, and serve does
everything it does under the unit's SystemCallFilter (loaded with
libseccomp, as systemd loads it); an installed binary (any --prefix, any
DESTDIR) starts the external signer."""

import errno
import functools
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import tempfile
import unittest

import oidc_harness as H

H.ensure_system_modules("grpc", "grpc_tools")

import extsigner_client as X  # noqa: E402

BUILD_DIR = H.BUILD_DIR
cmake_cache = H.cmake_cache
UNIT = os.path.join(H.REPO, "deploy", "oidc-discovery.service")
# The one version (CMake's project() reads the file; the chart's is
# tests/helm/test_chart.py's to check).
VERSION = H.read_bytes(os.path.join(H.REPO, "VERSION")).decode().strip()


def unit_entries(text):
    """[(key, value)] of a systemd unit, continuation lines joined."""
    text = re.sub(r"\\\n", " ", text)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            k, _, v = line.partition("=")
            out.append((k.strip(), v.strip()))
    return out


def unit_values(key):
    """Every value the unit gives key, in order."""
    return [v for k, v in unit_entries(H.read_bytes(UNIT).decode()) if k == key]


@functools.lru_cache(maxsize=None)
def syscall_set(name):
    """The system calls a SystemCallFilter= name stands for: a call, or an
    @group as `systemd-analyze syscall-filter` lists it, nested groups
    expanded."""
    if not name.startswith("@"):
        return frozenset([name])
    r = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager", name], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise AssertionError("systemd-analyze syscall-filter %s: %s" % (name, r.stderr))
    calls = set()
    for line in r.stdout.splitlines()[1:]:
        word = line.strip()
        if word and not word.startswith("#"):
            calls |= syscall_set(word)
    return frozenset(calls)


def unit_syscall_allowlist():
    """The system calls the unit's SystemCallFilter= lines allow, merged as
    systemd merges them: the first line an allow-list, later lines add to it
    or, with ~, take away from it."""
    allowed = None
    for value in unit_values("SystemCallFilter"):
        deny = value.startswith("~")
        calls = frozenset().union(*(syscall_set(n) for n in value.lstrip("~").split()))
        if allowed is None:
            if deny:
                raise AssertionError("the unit's first SystemCallFilter= is a deny-list: %s" % value)
            allowed = set(calls)
        elif deny:
            allowed -= calls
        else:
            allowed |= calls
    return allowed


class Install(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.prefix = tempfile.mkdtemp(prefix="oidc-install-")
        r = subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", cls.prefix],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            shutil.rmtree(cls.prefix, ignore_errors=True)
            raise AssertionError("cmake --install failed:\n%s%s" % (r.stdout, r.stderr))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.prefix, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.prefix, *parts)

    def test_binary(self):
        b = self.path("bin", "oidc-discovery")
        self.assertTrue(os.access(b, os.X_OK), b)
        r = subprocess.run([b, "--version"], capture_output=True, text=True, timeout=H.RUN_TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^oidc-discovery %s \(commit ([0-9a-f]{12}(-dirty)?|unknown), "
                                   r"built \d{4}-\d\d-\d\d\)\n$" % re.escape(VERSION))

    def test_man_page(self):
        page = H.read_bytes(self.path("share", "man", "man1", "oidc-discovery.1")).decode()
        self.assertRegex(page, r'^\.TH OIDC\\-DISCOVERY 1 "\d{4}-\d\d-\d\d" "oidc-discovery %s" ' % re.escape(VERSION), page[:80])
        for section in (".SH NAME", ".SH SYNOPSIS", ".SH COMMANDS", ".SH OPTIONS", ".SH EXIT STATUS",
                        ".SH SEE ALSO"):
            self.assertIn("\n" + section + "\n", page)
        # flags are minus signs, so they survive copy and paste from man
        for flag in ("service-account-issuer", "key-retention", "out DIR"):
            self.assertIn("\\-\\-" + flag.replace("-", "\\-"), page)
        for line in page.splitlines():
            self.assertFalse(line.startswith("'"), "a line read as a roff request: %r" % line)
        # the synopsis names every command `help` lists
        r = subprocess.run([self.path("bin", "oidc-discovery"), "help"], capture_output=True, text=True,
                           timeout=H.RUN_TIMEOUT)
        commands = re.findall(r"^  ([a-z]+) ", r.stdout.split("Commands:")[1].split("\n\n")[0], re.M)
        synopsis = page.split(".SH SYNOPSIS\n")[1].split(".SH ")[0]
        self.assertGreaterEqual(len(commands), 8, r.stdout)
        for c in commands:
            if c != "help":
                self.assertIn("\\fI%s\\fR" % c, synopsis, c)
        # every flag `help all` lists is an entry of the page, once
        r = subprocess.run([self.path("bin", "oidc-discovery"), "help", "all"], capture_output=True, text=True,
                           timeout=H.RUN_TIMEOUT)
        flags = re.findall(r"^  (?:-h, )?--([a-z0-9-]+)", r.stdout, re.M)
        self.assertGreater(len(flags), 40, r.stdout)
        for flag in flags:
            tag = re.escape("\\-\\-" + flag.replace("-", "\\-"))
            self.assertEqual(len(re.findall(r"(?m)^\\fB(?:\\-h, )?" + tag + r"(?=\\fR| |,)", page)), 1, flag)
        if shutil.which("groff"):
            r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z"], input=page, capture_output=True, text=True,
                               timeout=60)
            self.assertEqual((r.returncode, r.stderr), (0, ""), "groff warns about the page")

    def test_unit_installed(self):
        """The unit and its settings file name this install's paths (the
        unit in deploy/ names the Debian package's, /usr and /etc)."""
        want = H.read_bytes(UNIT).decode().replace("/usr/bin/oidc-discovery", self.path("bin", "oidc-discovery"))
        want = want.replace("/etc/default/oidc-discovery", self.path("etc", "default", "oidc-discovery"))
        self.assertEqual(H.read_bytes(self.path("lib", "systemd", "system", "oidc-discovery.service")).decode(), want)
        self.assertIn("EnvironmentFile=-%s\n" % self.path("etc", "default", "oidc-discovery"), want)
        self.assertEqual(H.read_bytes(self.path("etc", "default", "oidc-discovery")),
                         H.read_bytes(os.path.join(H.REPO, "deploy", "oidc-discovery.default")))

    def test_unit_hardening(self):
        entries = unit_entries(H.read_bytes(UNIT).decode())
        keys = dict(entries)
        want = {"User": "oidc-discovery", "Group": "oidc-discovery", "RemoveIPC": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
                "PrivateDevices": "yes", "NoNewPrivileges": "yes", "ProtectKernelTunables": "yes",
                "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes",
                "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "RestrictNamespaces": "yes",
                "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
                "SystemCallArchitectures": "native", "CapabilityBoundingSet": "",
                "ReadOnlyPaths": "/etc/kubernetes/pki/sa.pub", "StateDirectory": "oidc-discovery",
                "ExecReload": "/bin/kill -HUP $MAINPID", "Restart": "on-failure", "TimeoutStopSec": "30",
                "EnvironmentFile": "-/etc/default/oidc-discovery", "PrivateMounts": "yes",
                "ProtectProc": "invisible", "ProcSubset": "pid", "SystemCallErrorNumber": "EPERM",
                "LimitNOFILE": "16384", "MemoryMax": "512M"}
        for k, v in want.items():
            self.assertEqual(keys.get(k), v, k)
        self.assertNotIn("AmbientCapabilities", keys, "port 8080 needs no capability")
        self.assertNotIn("DynamicUser", keys, "the Debian package makes the user (tests/e2e/test_deb.py)")
        self.assertEqual(unit_values("SystemCallFilter"), ["@system-service", "~@privileged @resources"])
        for k in ("LimitNOFILE", "MemoryMax"):
            self.assertEqual(len(unit_values(k)), 1, k)

    @unittest.skipUnless(shutil.which("systemd-analyze"), "systemd-analyze not installed")
    def test_systemd_analyze_security_score(self):
        """The exposure systemd-analyze gives the unit is at most the one
        its comment states (a directive dropped raises it)."""
        stated = re.search(r"rates this unit's exposure ([0-9]+\.[0-9]) ", re.sub(r"\n# ?", " ",
                                                                                 H.read_bytes(UNIT).decode()))
        self.assertIsNotNone(stated, "the unit's comment does not state its systemd-analyze security score")
        r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", UNIT],
                           capture_output=True, text=True, timeout=60)
        m = re.search(r"Overall exposure level for oidc-discovery\.service: ([0-9]+\.[0-9])", r.stdout)
        self.assertIsNotNone(m, r.stdout[-2000:] + r.stderr)
        self.assertLessEqual(float(m.group(1)), float(stated.group(1)), r.stdout)

    def test_unit_command_line_is_accepted(self):
        """ExecStart's flags, with a real key and state directory put in,
        are ones the binary takes (keys reads serve's flags and exits)."""
        argv = shlex.split(dict(unit_entries(H.read_bytes(UNIT).decode()))["ExecStart"])
        self.assertEqual(argv[:2], ["/usr/bin/oidc-discovery", "serve"])
        self.assertEqual(argv[argv.index("--state-dir") + 1], "/var/lib/oidc-discovery")
        self.assertEqual(argv[argv.index("--key-retention") + 1], "24h")
        self.assertEqual(argv[argv.index("--listen") + 1], "0.0.0.0:8080")
        key = os.path.join(os.environ.get("OIDC_FIXTURES") or os.path.join(H.REPO, "tests", "fixtures"),
                           "rsa2048.pub")
        subst = {"${OIDC_ISSUER}": "https://oidc.example.com", "/etc/kubernetes/pki/sa.pub": key,
                 "/var/lib/oidc-discovery": self.path("state")}
        args = [subst.get(a, a) for a in argv[2:] if a != "$OIDC_EXTRA_ARGS"]
        r = subprocess.run([self.path("bin", "oidc-discovery"), "keys", *args], capture_output=True, text=True,
                           timeout=H.RUN_TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(self.path("state", "keys.json")), "keys must not write the state")

    @unittest.skipUnless(shutil.which("systemd-analyze"), "systemd-analyze not installed")
    def test_systemd_analyze_verify(self):
        unit_dir = self.path("verify")
        os.makedirs(unit_dir, exist_ok=True)
        unit = os.path.join(unit_dir, "oidc-discovery.service")
        text = H.read_bytes(UNIT).decode().replace("/usr/bin/oidc-discovery", self.path("bin", "oidc-discovery"))
        with open(unit, "w") as f:
            f.write(text)
        env = dict(os.environ, MANPATH=self.path("share", "man"))
        r = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stderr.strip(), "", r.stderr)


class InstalledSigner(X.SignerTestCase):
    """`cmake --install` to a DESTDIR and to another --prefix: the binary
    there, not the build tree's, starts the external signer."""

    def install(self, env=None, args=()):
        r = subprocess.run(["cmake", "--install", BUILD_DIR, *args], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, **(env or {})))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def check_signer(self, prefix):
        """The binary installed under prefix starts the signer, which
        answers Metadata, and is the program the process runs."""
        sock = os.path.join(self.tmp, "signer.sock")
        srv = H.Server(["--service-account-issuer", "https://issuer.example", "--signing-key-dir", self.dir,
                        "--signing-key-type", "ec-p256",
                        "--external-signer-listen", "unix:" + sock, "--max-token-lifetime", "90m"])
        binary = os.path.join(prefix, cmake_cache("CMAKE_INSTALL_BINDIR"), "oidc-discovery")
        srv.argv[0] = binary
        self._servers.append(srv)
        srv.start()
        self.assertTrue(X.wait_socket(sock), srv.stderr())
        c = X.Signer(sock)
        self.addCleanup(c.close)
        self.assertEqual(c.metadata().max_token_expiration_seconds, 5400)
        with open("/proc/%d/maps" % srv.proc.pid) as f:
            self.assertIn(os.path.realpath(binary), f.read())

    def test_destdir(self):
        root = os.path.join(self.tmp, "root")
        self.install(env={"DESTDIR": root})
        self.check_signer(root + cmake_cache("CMAKE_INSTALL_PREFIX"))

    def test_prefix(self):
        prefix = os.path.join(self.tmp, "opt")
        self.install(args=("--prefix", prefix))
        self.check_signer(prefix)


class UnitLimits(H.ServerTestCase):

    @unittest.skipUnless(shutil.which("prlimit"), "prlimit (util-linux) not installed")
    def test_open_file_limit_holds_the_default_max_connections(self):
        """Under the unit's LimitNOFILE, serve at the most threads (256) and
        with a third listener still fits the default --max-connections: it
        warns only when the limit is too small (checked with a quarter of
        it, so that the warning this looks for exists)."""
        limit = int(unit_values("LimitNOFILE")[0])
        if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < limit:
            self.skipTest("the hard open-file limit here is below the unit's %d" % limit)
        warning = r"open-file limit leaves room for [0-9]+ connections of the public listeners"
        for nofile, warns in ((limit, False), (limit // 4, True)):
            srv = H.Server(["--service-account-issuer", "https://oidc.example.com",
                            "--service-account-key-file", os.path.join(H.FIXTURES, "rsa2048.pub"),
                            "--threads", "256", "--enable-token-review",
                            "--token-review-listen", "127.0.0.1:0", *H.review_caller_args()])
            srv.argv[:0] = ["prlimit", "--nofile=%d:%d" % (nofile, nofile), "--"]
            self._servers.append(srv)
            srv.start()
            self.assertEqual(H.admin_get(srv.admin_port, "/readyz")[0], 200)
            self.assertEqual(H.count_log(srv, warning), int(warns), "LimitNOFILE=%d:\n%s" % (nofile, srv.stderr()))
            self.stop_ok(srv)


# Runs a program under a seccomp filter that allows the system calls listed
# in a file and fails every other with EPERM, native architecture only, with
# no_new_privs: what systemd loads for SystemCallFilter=,
# SystemCallErrorNumber=EPERM and SystemCallArchitectures=native, through the
# same libseccomp. Like systemd it starts the program with a soft open-file
# limit below the hard one, which serve raises.
SECCOMP_EXEC = r"""
import errno, os, resource, sys
import seccomp
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
f = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
for name in open(sys.argv[1]).read().split():
    try:
        f.add_rule(seccomp.ALLOW, name)
    except (RuntimeError, ValueError, OSError):
        pass  # not a system call of this architecture (systemd skips those too)
f.load()
os.execv(sys.argv[2], sys.argv[2:])
"""

# As root, also in a mount namespace with /proc remounted the way
# ProtectProc=invisible and ProcSubset=pid mount it.
PROC_SUBSET = ("unshare --mount --propagation private /bin/sh -c "
               "'mount -t proc -o hidepid=invisible,subset=pid proc /proc && exec \"$@\"' sh")


def seccomp_available():
    if not shutil.which("systemd-analyze"):
        return False
    r = subprocess.run([H.SYSTEM_PYTHON, "-c", "import seccomp"], capture_output=True, timeout=30)
    return r.returncode == 0


@unittest.skipUnless(seccomp_available(), "needs systemd-analyze (systemd) and python3-seccomp")
class UnitSyscallFilter(H.SanitizerCheck, H.TLSServerTestCase):

    def setUp(self):
        super().setUp()
        self.assertEqual(unit_values("SystemCallErrorNumber"), ["EPERM"])
        self.allowlist = os.path.join(self.tmp, "allowed-syscalls")
        with open(self.allowlist, "w") as f:
            f.write("\n".join(sorted(unit_syscall_allowlist())) + "\n")
        # LeakSanitizer (the -DOIDC_SANITIZE=ON build) stops the world with
        # ptrace, which no service's filter allows; the other tests look
        # for leaks. The last setting wins, so it goes after whatever
        # ASAN_OPTIONS the suite runs with (scripts/test.sh sets
        # detect_leaks=1).
        asan = os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        self.wrapper = ["env", "ASAN_OPTIONS=" + asan, H.SYSTEM_PYTHON, "-c", SECCOMP_EXEC, self.allowlist]
        self.proc_subset = os.geteuid() == 0 and shutil.which("unshare") is not None
        if self.proc_subset:
            self.wrapper = shlex.split(PROC_SUBSET) + self.wrapper

    def test_filter_is_enforced(self):
        """The wrapper really applies the unit's filter: nice(1) is refused
        setpriority (in @resources, which the unit takes away), which it is
        allowed without the wrapper; and, as root, /proc has only process
        directories."""
        nice = [shutil.which("nice"), "-n", "1", "true"]
        r = subprocess.run(nice, capture_output=True, text=True, timeout=H.RUN_TIMEOUT)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        r = subprocess.run(self.wrapper + nice, capture_output=True, text=True, timeout=H.RUN_TIMEOUT)
        self.assertIn("cannot set niceness: " + os.strerror(errno.EPERM), r.stderr)
        if self.proc_subset:
            r = subprocess.run(self.wrapper + ["/bin/cat", "/proc/stat"], capture_output=True, text=True,
                               timeout=H.RUN_TIMEOUT)
            self.assertIn("No such file", r.stderr)

    def test_serve_does_everything_under_the_filter(self):
        """Every feature that makes system calls of its own works under the
        filter: plain, Unix-socket, TLS (with --http2) and TokenReview (TLS,
        its own certificate) listeners, the admin listener, the access log, the state directory,
        raising the open-file limit, SIGHUP, inotify seeing a key added and
        one removed (retained), and a clean SIGTERM exit."""
        keydir = os.path.join(self.tmp, "keys")
        os.mkdir(keydir)
        shutil.copy(os.path.join(H.FIXTURES, "rsa2048.pub"), os.path.join(keydir, "sa.pub"))
        cert, key = self.new_cert("server")
        sock = os.path.join(self.tmp, "oidc.sock")
        issuer = "https://oidc.example.com"
        token = H.mint_token(os.path.join(H.FIXTURES, "rsa2048.pkcs8.key"), issuer, audiences=["vault"])
        srv = H.Server(["--service-account-issuer", issuer, "--service-account-key-file", keydir,
                        "--state-dir", os.path.join(self.tmp, "state"), "--key-retention", "24h",
                        "--key-reload-interval", "1s", "--listen", "unix:" + sock,
                        "--tls-listen", "127.0.0.1:0", "--tls-cert-file", cert,
                        "--tls-private-key-file", key, "--http2", "--enable-token-review",
                        "--token-review-listen", "127.0.0.1:0", "--token-review-tls-cert-file", cert,
                        "--token-review-tls-private-key-file", key, *H.review_caller_args(tls=True),
                        "--api-audiences", "vault",
                        "--access-log", os.path.join(self.tmp, "access.log"), "--threads", "2"])
        srv.argv[:0] = self.wrapper
        self._servers.append(srv)
        srv.start()

        self.assertEqual(srv.get(H.JWKS)[0], 200)
        st, _, body = H.https_request(srv.port_of("--tls-listen"), "GET", H.DISCOVERY, self.ca_cert)
        self.assertEqual((st, json.loads(body)["issuer"]), (200, issuer))
        r = H.curl("--unix-socket", sock, "http://localhost" + H.JWKS)
        self.assertEqual(len(json.loads(r.stdout)["keys"]), 1, r.stderr)
        caller = H.review_caller_token(os.path.join(H.FIXTURES, "rsa2048.pkcs8.key"), issuer)
        st, _, body = H.https_request(srv.port_of("--token-review-listen"), "POST", H.TOKENREVIEW_PATH, self.ca_cert,
                                      {"Content-Type": "application/json", "Authorization": "Bearer " + caller},
                                      json.dumps(H.review_body(token)).encode())
        self.assertEqual((st, json.loads(body)["status"].get("authenticated")), (201, True), body)

        def metric(name):
            text = H.admin_get(srv.admin_port, "/metrics")[2].decode()
            m = re.search(r"^%s ([0-9.e+]+)$" % name, text, re.M)
            return float(m.group(1)) if m else None

        H.sighup_and_wait(srv)
        shutil.copy(os.path.join(H.FIXTURES, "ec256.pub"), os.path.join(keydir, "next.pub"))
        self.assertTrue(H.wait_until(lambda: metric("oidc_keys_published") == 2, 5.0), srv.stderr())
        os.remove(os.path.join(keydir, "sa.pub"))
        self.assertTrue(H.wait_until(lambda: metric("oidc_keys_retained") == 1, 5.0), srv.stderr())
        self.assertTrue(os.path.getsize(os.path.join(self.tmp, "access.log")) > 0)
        self.assertEqual(H.count_log(srv, r"cannot raise the open-file limit"), 0, srv.stderr())
        self.assertEqual(H.count_log(srv, r"\b(error|warn)\b"), 0, srv.stderr())
        self.stop_ok(srv)


if __name__ == "__main__":
    unittest.main()
