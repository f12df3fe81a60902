"""Packaging: `cmake --install` lays out the binary, the man page and the
systemd unit; the unit's command line is one the binary accepts; the
Dockerfile builds in one stage and runs unprivileged, compiler-free, in a
debian:12-slim stage that has every library the binary links."""

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

import oidc_harness as H

BUILD_DIR = os.environ.get("OIDC_BUILD_DIR") or os.path.join(H.REPO, "build")
UNIT = os.path.join(H.REPO, "deploy", "oidc-discovery.service")
DOCKERFILE = os.path.join(H.REPO, "Dockerfile")
COMPILERS = re.compile(r"^(build-essential|gcc(-[0-9]+)?|g\+\+(-[0-9]+)?|clang.*|cmake|make|pkg-config|.*-dev)$")


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


def docker_stages(text):
    """The Dockerfile's stages: [{"from": image, "name": alias or None,
    "instructions": [(INSTRUCTION, args)]}], continuation lines joined."""
    text = re.sub(r"\\\n", " ", text)
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instr, _, args = line.partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            words = args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append({"from": words[0], "name": name, "instructions": []})
        elif stages:
            stages[-1]["instructions"].append((instr, args.strip()))
    return stages


def apt_packages(stage):
    """The packages a stage's RUN lines apt-get install."""
    pkgs = []
    for instr, args in stage["instructions"]:
        if instr != "RUN":
            continue
        for cmd in re.split(r"&&|;", args):
            words = shlex.split(cmd)
            if words[:2] == ["apt-get", "install"]:
                pkgs += [w for w in words[2:] if not w.startswith("-")]
    return pkgs


def owning_package(path):
    """The Debian package that ships a library file, whichever of / and /usr
    (merged on Debian 12) the package lists it under; None if none does."""
    seen = []
    for p in (path, os.path.realpath(path)):
        bare = p[4:] if p.startswith("/usr/") else p
        for c in (bare, "/usr" + bare):
            if c in seen:
                continue
            seen.append(c)
            r = subprocess.run(["dpkg", "-S", c], capture_output=True, text=True, timeout=30)
            if r.returncode == 0:
                return r.stdout.split(":")[0]
    return None


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
        self.assertRegex(r.stdout, r"^oidc-discovery [0-9]+\.[0-9]+\.[0-9]+\n$")

    def test_man_page(self):
        page = H.read_bytes(self.path("share", "man", "man1", "oidc-discovery.1")).decode()
        self.assertTrue(page.startswith(".TH OIDC\\-DISCOVERY 1 "), page[:80])
        for section in (".SH NAME", ".SH SYNOPSIS", ".nf", ".fi", ".SH EXIT STATUS", ".SH SEE ALSO"):
            self.assertIn("\n" + section + "\n", page)
        # flags are minus signs, so they survive copy and paste from man
        for flag in ("service-account-issuer", "key-retention", "out DIR"):
            self.assertIn("\\-\\-" + flag.replace("-", "\\-"), page)
        for line in page.splitlines():
            self.assertFalse(line.startswith("'"), "a line read as a roff request: %r" % line)

    def test_unit_installed(self):
        self.assertEqual(H.read_bytes(self.path("lib", "systemd", "system", "oidc-discovery.service")),
                         H.read_bytes(UNIT))

    def test_unit_hardening(self):
        entries = unit_entries(H.read_bytes(UNIT).decode())
        keys = dict(entries)
        want = {"DynamicUser": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
                "PrivateDevices": "yes", "NoNewPrivileges": "yes", "ProtectKernelTunables": "yes",
                "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes",
                "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "RestrictNamespaces": "yes",
                "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes", "SystemCallFilter": "@system-service",
                "SystemCallArchitectures": "native", "CapabilityBoundingSet": "",
                "ReadOnlyPaths": "/etc/kubernetes/pki/sa.pub", "StateDirectory": "oidc-discovery",
                "ExecReload": "/bin/kill -HUP $MAINPID", "Restart": "on-failure", "TimeoutStopSec": "30",
                "EnvironmentFile": "-/etc/default/oidc-discovery"}
        for k, v in want.items():
            self.assertEqual(keys.get(k), v, k)
        self.assertNotIn("AmbientCapabilities", keys, "port 8080 needs no capability")

    def test_unit_command_line_is_accepted(self):
        """ExecStart's flags, with a real key and state directory put in,
        are ones the binary takes (keys reads serve's flags and exits)."""
        argv = shlex.split(dict(unit_entries(H.read_bytes(UNIT).decode()))["ExecStart"])
        self.assertEqual(argv[:2], ["/usr/local/bin/oidc-discovery", "serve"])
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
        text = H.read_bytes(UNIT).decode().replace("/usr/local/bin/oidc-discovery", self.path("bin", "oidc-discovery"))
        with open(unit, "w") as f:
            f.write(text)
        env = dict(os.environ, MANPATH=self.path("share", "man"))
        r = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stderr.strip(), "", r.stderr)


class Dockerfile(unittest.TestCase):

    def setUp(self):
        self.stages = docker_stages(H.read_bytes(DOCKERFILE).decode())

    def test_two_stages(self):
        self.assertEqual(len(self.stages), 2, [s["from"] for s in self.stages])
        build, final = self.stages
        self.assertEqual(build["from"], "debian:12")
        self.assertEqual(final["from"], "debian:12-slim")
        runs = " ".join(a for i, a in build["instructions"] if i == "RUN")
        self.assertIn("-DOIDC_TESTS=OFF", runs)
        self.assertIn("-DCMAKE_BUILD_TYPE=Release", runs)
        copies = [a for i, a in final["instructions"] if i == "COPY"]
        self.assertTrue(copies and all(c.startswith("--from=%s " % build["name"]) for c in copies), copies)

    def test_final_stage_unprivileged(self):
        final = self.stages[-1]
        users = [a for i, a in final["instructions"] if i == "USER"]
        self.assertEqual(len(users), 1, users)
        uid = users[0].split(":")[0]
        self.assertNotIn(uid, ("0", "root"))
        self.assertEqual(users[0], "65532:65532")
        entry = [a for i, a in final["instructions"] if i == "ENTRYPOINT"]
        self.assertEqual([json.loads(e) for e in entry], [["/usr/local/bin/oidc-discovery"]])
        cmd = [json.loads(a) for i, a in final["instructions"] if i == "CMD"]
        self.assertEqual(cmd, [["--help"]], "the image must not start serving without configuration")
        expose = " ".join(a for i, a in final["instructions"] if i == "EXPOSE").split()
        self.assertEqual(sorted(expose), ["8080", "9090"])

    def test_no_compiler_in_final_stage(self):
        build, final = self.stages
        self.assertIn("build-essential", apt_packages(build))
        pkgs = apt_packages(final)
        self.assertTrue(pkgs)
        self.assertEqual([p for p in pkgs if COMPILERS.match(p)], [])
        for p in ("libh2o-evloop0.13", "libssl3", "libyajl2", "ca-certificates"):
            self.assertIn(p, pkgs)

    @unittest.skipUnless(shutil.which("readelf") and shutil.which("dpkg"), "needs readelf and dpkg")
    def test_final_stage_has_every_linked_library(self):
        """Each library the built binary needs comes from a package the
        final stage installs (or libc6, which every image has)."""
        pkgs = set(apt_packages(self.stages[-1])) | {"libc6"}
        dyn = subprocess.run(["readelf", "-d", H.BIN], capture_output=True, text=True, timeout=30).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
        self.assertTrue(needed, dyn)
        ldd = subprocess.run(["ldd", H.BIN], capture_output=True, text=True, timeout=30).stdout
        for lib in needed:
            if lib.startswith(("libasan", "libubsan")):
                continue  # a sanitizer build; the image builds without
            m = re.search(r"^\s*%s => (\S+)" % re.escape(lib), ldd, re.M)
            self.assertIsNotNone(m, "ldd does not resolve %s:\n%s" % (lib, ldd))
            pkg = owning_package(m.group(1))
            self.assertIsNotNone(pkg, "no package ships %s" % m.group(1))
            self.assertIn(pkg, pkgs, "%s comes from %s, which the final stage does not install" % (lib, pkg))

    def test_dockerignore(self):
        lines = H.read_bytes(os.path.join(H.REPO, ".dockerignore")).decode().split()
        for p in ("build*/", "node_modules", "dev-keys"):
            self.assertIn(p, lines)


if __name__ == "__main__":
    unittest.main()
