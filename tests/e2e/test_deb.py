# SPDX-License-Identifier: Apache-2.0
"""The Debian package: `cpack -G DEB` in the build directory makes
oidc-discovery_VERSION_ARCH.deb; `apt-get install ./...deb` installs it with
the libraries it needs (dependencies computed by dpkg-shlibdeps), the
system user the unit runs as, the unit and /etc/default/oidc-discovery (a
conffile); the installed /usr/bin/oidc-discovery names VERSION, serves the
same documents as the build tree's binary and starts the external signer;
`apt-get remove` keeps the settings and the user, `apt-get purge` leaves
nothing behind.

Needs root (it installs a package on this machine); skipped otherwise.
Only this test touches the installed package: every other test runs the
build tree's binary (OIDC_BIN), and the guides' tests (tests/docs) put a
shim for it first on PATH, so that /usr/bin/oidc-discovery appearing for a
while changes nothing for them. Two runs of this test at once (the
valgrind copy, say) take turns on a lock."""

import fcntl
import os
import re
import shutil
import subprocess
import unittest

import oidc_harness as H

VERSION = H.read_bytes(os.path.join(H.REPO, "VERSION")).decode().strip()
PACKAGE = "oidc-discovery"
INSTALLED_BIN = "/usr/bin/oidc-discovery"
DEFAULTS = "/etc/default/oidc-discovery"
UNIT = "/usr/lib/systemd/system/oidc-discovery.service"
LOCK = "/run/lock/oidc-discovery-test-deb.lock"
# apt waits this long for dpkg's lock (another apt may hold it), and each
# command is bounded by a little more.
APT_LOCK_WAIT = 240
APT_TIMEOUT = APT_LOCK_WAIT + 120


def run(argv, timeout, env=None):
    """Runs a command to completion within timeout seconds (killed after),
    returning the CompletedProcess with text output."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def apt_get(*args):
    return run(["apt-get", "-o", "DPkg::Lock::Timeout=%d" % APT_LOCK_WAIT, "-y", "-q", *args], APT_TIMEOUT,
               env={"DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"})


def package_status():
    """dpkg's status of the package ("install ok installed", "deinstall ok
    config-files", ...), or None when dpkg does not know it."""
    r = run(["dpkg-query", "-W", "-f", "${Status}", PACKAGE], 60)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def known_to_dpkg():
    """Whether dpkg knows the package in any state: `dpkg -l` fails for one
    it has never seen or that was purged."""
    r = run(["dpkg", "-l", PACKAGE], 60)
    return r.returncode == 0 and not re.search(r"^[up]n ", r.stdout, re.M)


def getent(db, name):
    r = run(["getent", db, name], 30)
    return r.stdout.strip() if r.returncode == 0 else None


@unittest.skipUnless(os.geteuid() == 0, "installs a Debian package on this machine: run as root (CI does)")
class DebianPackage(H.ServerTestCase):

    @classmethod
    def setUpClass(cls):
        os.makedirs(os.path.dirname(LOCK), exist_ok=True)
        cls.lock = open(LOCK, "w")
        fcntl.flock(cls.lock, fcntl.LOCK_EX)

    @classmethod
    def tearDownClass(cls):
        fcntl.flock(cls.lock, fcntl.LOCK_UN)
        cls.lock.close()

    def setUp(self):
        super().setUp()
        if not shutil.which("dpkg-shlibdeps"):
            self.fail("dpkg-shlibdeps is not installed: cpack computes the package's dependencies with it "
                      "(dpkg-dev, scripts/setup.sh)")
        # A package left by an earlier run that stopped half-way.
        self.purge()
        self.assertIsNone(getent("passwd", PACKAGE), "user oidc-discovery exists without the package; "
                          "remove it (deluser --system oidc-discovery) before this test")
        self.addCleanup(self.purge)

    def purge(self):
        if known_to_dpkg():
            r = apt_get("purge", PACKAGE)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def build_package(self):
        """cpack in the build directory, writing into a directory of this
        test's (-B), so nothing else in the build tree changes."""
        out = os.path.join(self.tmp, "cpack")
        r = subprocess.run(["cpack", "-G", "DEB", "-B", out], cwd=H.BUILD_DIR, capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        debs = [f for f in os.listdir(out) if f.endswith(".deb")]
        arch = run(["dpkg", "--print-architecture"], 30).stdout.strip()
        self.assertEqual(debs, ["%s_%s_%s.deb" % (PACKAGE, VERSION, arch)])
        return os.path.join(out, debs[0])

    def test_install_run_remove_purge(self):
        deb = self.build_package()
        fields = run(["dpkg-deb", "-f", deb, "Depends", "Version"], 60).stdout
        depends = re.search(r"^Depends: (.*)$", fields, re.M).group(1)
        for lib in ("libc6", "libssl3", "libcurl4", "libh2o-evloop0.13", "libnghttp2-14", "libprotobuf-c1",
                    "adduser"):
            self.assertRegex(depends, r"(^|, )%s( \(|,|$)" % re.escape(lib), "computed dependencies: " + depends)
        self.assertIn("Version: %s\n" % VERSION, fields)

        r = apt_get("install", os.path.abspath(deb))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(package_status(), "install ok installed")
        self.check_files()
        self.check_user()
        self.check_installed_binary()

        # remove: the program goes; the settings (a conffile) and the user stay
        with open(DEFAULTS, "a") as f:
            f.write("OIDC_ISSUER=https://oidc.example.com\n")
        r = apt_get("remove", PACKAGE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(package_status(), "deinstall ok config-files")
        for path in (INSTALLED_BIN, UNIT):
            self.assertFalse(os.path.exists(path), path)
        self.assertIn("OIDC_ISSUER=https://oidc.example.com\n", H.read_bytes(DEFAULTS).decode())
        self.assertIsNotNone(getent("passwd", PACKAGE))

        # purge: nothing left
        r = apt_get("purge", PACKAGE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for path in (INSTALLED_BIN, UNIT, DEFAULTS, "/usr/share/man/man1/oidc-discovery.1",
                     "/var/lib/oidc-discovery"):
            self.assertFalse(os.path.lexists(path), path)
        self.assertIsNone(getent("passwd", PACKAGE))
        self.assertIsNone(getent("group", PACKAGE))
        self.assertFalse(known_to_dpkg(), run(["dpkg", "-l", PACKAGE], 60).stdout)

    def check_files(self):
        listed = set(run(["dpkg", "-L", PACKAGE], 60).stdout.split())
        for path in (INSTALLED_BIN, UNIT, DEFAULTS, "/usr/share/man/man1/oidc-discovery.1",
                     "/usr/share/doc/oidc-discovery/copyright"):
            self.assertIn(path, listed)
            self.assertTrue(os.path.isfile(path), path)
        self.assertEqual([p for p in listed if p.startswith("/usr/local")], [])
        conffiles = run(["dpkg-query", "-W", "-f", "${Conffiles}", PACKAGE], 60).stdout
        self.assertEqual([line.split()[0] for line in conffiles.splitlines() if line.strip()], [DEFAULTS])
        # every setting in the settings file is commented out until set
        text = H.read_bytes(DEFAULTS).decode()
        self.assertIn("#OIDC_ISSUER=", text)
        self.assertEqual([line for line in text.splitlines() if line.strip() and not line.startswith("#")], [])
        unit = H.read_bytes(UNIT).decode()
        self.assertEqual(unit, H.read_bytes(os.path.join(H.REPO, "deploy", "oidc-discovery.service")).decode(),
                         "the package's unit is deploy/'s as it is (its paths are the package's)")
        self.assertRegex(unit, r"(?m)^User=oidc-discovery$")
        if shutil.which("systemd-analyze"):
            r = run(["systemd-analyze", "verify", UNIT], 60)
            self.assertEqual((r.returncode, r.stderr.strip()), (0, ""), r.stdout + r.stderr)

    def check_user(self):
        """A system user without a login or a home, with a group of its own,
        and the installed binary runs as it."""
        name, _, uid, gid, _, home, shell = getent("passwd", PACKAGE).split(":")
        self.assertLess(int(uid), 1000)
        self.assertEqual(home, "/nonexistent")
        self.assertFalse(os.path.exists(home))
        self.assertIn(shell, ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false"))
        self.assertEqual(getent("group", PACKAGE).split(":")[2], gid)
        if shutil.which("runuser"):
            r = run(["runuser", "-u", PACKAGE, "--", INSTALLED_BIN, "--version"], H.RUN_TIMEOUT)
            self.assertEqual(r.returncode, 0, r.stderr)

    def check_installed_binary(self):
        r = run([INSTALLED_BIN, "--version"], H.RUN_TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("%s %s (commit " % (PACKAGE, VERSION)), r.stdout)

        # both documents, the same bytes as the build tree's binary serves
        key = self.keys.rsa()
        issuer = "https://oidc.example.com"
        args = ["--service-account-issuer", issuer, "--service-account-key-file", key.pub]
        installed = H.Server(args)
        installed.argv[0] = INSTALLED_BIN
        self._servers.append(installed)
        installed.start()
        built = self.start_server(args)
        for path in (H.DISCOVERY, H.JWKS):
            with self.subTest(path=path):
                st, _, body = installed.get(path)
                self.assertEqual(st, 200)
                self.assertEqual(body, built.get(path)[2])
        self.assertEqual(H.jwks_kids(installed.get(H.JWKS)[2]), [key.kid])
        self.stop_ok(installed)

        # the external signer, from the installed binary itself
        sock = os.path.join(self.tmp, "signer.sock")
        signer = H.Server(["--service-account-issuer", issuer, "--signing-key-dir", os.path.join(self.tmp, "sk"),
                           "--external-signer-listen", "unix:" + sock])
        signer.argv[0] = INSTALLED_BIN
        self._servers.append(signer)
        signer.start()
        self.assertTrue(H.wait_until(lambda: os.path.exists(sock), 10.0), signer.stderr())
        with open("/proc/%d/maps" % signer.proc.pid) as f:
            self.assertIn(INSTALLED_BIN, f.read())
        self.stop_ok(signer)


if __name__ == "__main__":
    unittest.main()
