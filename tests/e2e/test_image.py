# SPDX-License-Identifier: Apache-2.0
"""The OCI image: scripts/build-image.sh builds it with buildah FROM scratch
out of the build tree and writes an OCI archive. The test reads the archive
as a registry client would (index.json -> manifest -> config and layers,
every blob checked against its digest), unpacks the layers into a root
directory and runs the server from it under chroot as the image's user,
with /proc mounted as a container runtime mounts it: both documents are the
bytes the build tree's binary serves with the same key, and the image's
binary starts the external signer. The image has no shell and no package
manager, no program but the server, exactly the libraries the server loads
(ldd's), the CA certificates, a non-root user that /etc/passwd names, and
the version label VERSION.

Needs root (buildah, chroot); skipped otherwise, and skipped without buildah
except in CI (CI=true), where a missing buildah fails. One image is built
for the whole file."""

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
import unittest

import oidc_harness as H

BUILD_DIR = H.BUILD_DIR
SCRIPT = os.path.join(H.REPO, "scripts", "build-image.sh")
VERSION = H.read_bytes(os.path.join(H.REPO, "VERSION")).decode().strip()
IMAGE_BIN = "/usr/bin/oidc-discovery"
BUILD_TIMEOUT = 300
# What a shell or a package manager would leave in an image.
FORBIDDEN = ("bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/bash", "bin/busybox", "usr/bin/busybox", "bin/dash",
             "usr/bin/dash", "usr/bin/apt", "usr/bin/apt-get", "usr/bin/dpkg", "sbin/apk", "usr/bin/microdnf",
             "usr/bin/yum", "var/lib/dpkg", "var/lib/apt")


def skip_reason():
    """Why the image cannot be built here, or None. In CI a missing
    buildah is a failure (setUpClass raises), not a skip."""
    if os.geteuid() != 0:
        return "builds an image with buildah and runs it under chroot: run as root (CI does)"
    if not shutil.which("buildah") and os.environ.get("CI") != "true":
        return "buildah is not installed (scripts/setup.sh installs it; in CI, CI=true, this fails instead)"
    if H.VALGRIND:
        return "the image's server runs chrooted, where valgrind is not"
    return None


def blob(layout, digest):
    """A blob of the OCI layout, checked against its digest."""
    algo, _, hexd = digest.partition(":")
    data = H.read_bytes(os.path.join(layout, "blobs", algo, hexd))
    if algo != "sha256" or hashlib.sha256(data).hexdigest() != hexd:
        raise AssertionError("blob %s does not match its digest" % digest)
    return data


def ldd_paths(elf):
    """The paths ldd resolves for an ELF file's libraries, the loader's
    included."""
    out = subprocess.run(["ldd", elf], capture_output=True, text=True, timeout=30).stdout
    return set(re.findall(r"=> (/\S+)", out)) | set(re.findall(r"^\s*(/\S+) \(0x", out, re.M))


@unittest.skipIf(skip_reason(), skip_reason())
class Image(H.ServerTestCase):

    @classmethod
    def setUpClass(cls):
        if not shutil.which("buildah"):
            raise AssertionError("buildah is not installed, and CI=true: scripts/setup.sh installs it")
        cls.work = tempfile.mkdtemp(prefix="oidc-image-test-")
        try:
            cls.build()
        except BaseException:
            shutil.rmtree(cls.work, ignore_errors=True)
            raise

    @classmethod
    def build(cls):
        cls.archive = os.path.join(cls.work, "image.oci.tar")
        r = subprocess.run(["bash", SCRIPT, BUILD_DIR, cls.archive], capture_output=True, text=True,
                           timeout=BUILD_TIMEOUT)
        if r.returncode != 0:
            raise AssertionError("scripts/build-image.sh failed:\n%s%s" % (r.stdout, r.stderr))
        cls.output = r.stdout
        layout = os.path.join(cls.work, "layout")
        with tarfile.open(cls.archive) as t:
            t.extractall(layout)
        cls.index = json.loads(H.read_bytes(os.path.join(layout, "index.json")))
        desc = cls.index["manifests"][0]
        cls.manifest_digest = desc["digest"]
        cls.manifest = json.loads(blob(layout, desc["digest"]))
        cls.config = json.loads(blob(layout, cls.manifest["config"]["digest"]))
        cls.root = os.path.join(cls.work, "root")
        os.mkdir(cls.root)
        cls.members = []
        for layer in cls.manifest["layers"]:
            data = blob(layout, layer["digest"])
            path = os.path.join(cls.work, "layer.tar")
            with open(path, "wb") as f:
                f.write(data)
            with tarfile.open(path) as t:   # gzip or not, as the media type says
                for m in t.getmembers():
                    base = os.path.basename(m.name)
                    if m.name.startswith("/") or ".." in m.name.split("/") or base.startswith(".wh."):
                        raise AssertionError("layer member %r: an absolute path, .. or a whiteout" % m.name)
                cls.members += t.getmembers()
                t.extractall(cls.root)
            os.remove(path)
        # Where chrooted() mounts /proc, as a container runtime does.
        os.makedirs(os.path.join(cls.root, "proc"), exist_ok=True)
        cls.uid, cls.gid = (int(x) for x in cls.config["config"]["User"].split(":"))
        # A sanitizer build (which no image is made from, but the suite
        # runs this test there too) reads the suppression files its
        # environment names: the chroot gets a copy at the same path.
        for var in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"):
            for path in re.findall(r"(?:^|:)suppressions=([^:]+)", os.environ.get(var, "")):
                if os.path.isfile(path):
                    dest = os.path.join(cls.root, path.lstrip("/"))
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    shutil.copyfile(path, dest)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def chrooted(self, argv):
        """argv (a program of the image and its arguments) run from the
        image's root, chrooted, as the image's user, with /proc mounted in
        a mount namespace of its own; the same process from exec to exit,
        so that signals reach it."""
        return ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                'root=$0 user=$1; shift; mount -t proc proc "$root/proc" && '
                'exec chroot --userspec="$user" "$root" "$@"',
                self.root, "%d:%d" % (self.uid, self.gid)] + list(argv)

    def image_server(self, args):
        """A server run from the image (chrooted())."""
        srv = H.Server(args)
        srv.argv[:1] = self.chrooted([IMAGE_BIN])
        self._servers.append(srv)
        srv.start()
        return srv

    def in_root(self, name, data, mode=0o644):
        """Writes a file the image's user can read into the root; its path
        there."""
        d = tempfile.mkdtemp(dir=self.root, prefix="test-")
        os.chmod(d, 0o755)
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        return "/" + os.path.relpath(path, self.root)

    def test_serves_the_build_trees_documents(self):
        key = self.keys.rsa()
        issuer = "https://oidc.example.com/clusters/a"
        inside = self.in_root("sa.pub", H.read_bytes(key.pub))
        common = ["--service-account-issuer", issuer, "--max-age", "600"]
        image = self.image_server(common + ["--service-account-key-file", inside])
        built = self.start_server(common + ["--service-account-key-file", key.pub])
        for path in (H.DISCOVERY, H.JWKS):
            with self.subTest(path=path):
                st, _, body = image.get(path)
                self.assertEqual(st, 200, image.stderr())
                self.assertEqual(body, built.get(path)[2])
        self.assertEqual(H.jwks_kids(image.get(H.JWKS)[2]), [key.kid])
        self.assertEqual(H.admin_get(image.admin_port, "/readyz")[0], 200)
        with open("/proc/%d/status" % image.proc.pid) as f:
            self.assertRegex(f.read(), r"(?m)^Uid:\s+%d\s" % self.uid)
        self.stop_ok(image)

    def test_external_signer_from_the_images_binary(self):
        d = tempfile.mkdtemp(dir=self.root, prefix="test-signer-")
        self.addCleanup(shutil.rmtree, d, True)
        os.chown(d, self.uid, self.gid)
        inside = "/" + os.path.relpath(d, self.root)
        srv = self.image_server(["--service-account-issuer", "https://oidc.example.com",
                                 "--signing-key-dir", inside + "/keys",
                                 "--external-signer-listen", "unix:" + inside + "/signer.sock"])
        self.assertTrue(H.wait_until(lambda: os.path.exists(os.path.join(d, "signer.sock")), 10.0), srv.stderr())
        with open("/proc/%d/maps" % srv.proc.pid) as f:
            maps = f.read()
        self.assertIn(os.path.join(self.root, IMAGE_BIN.lstrip("/")), maps)
        self.stop_ok(srv)

    def test_version(self):
        r = subprocess.run(self.chrooted([IMAGE_BIN, "--version"]), capture_output=True, text=True,
                           timeout=H.RUN_TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("oidc-discovery %s (commit " % VERSION), r.stdout)
        labels = self.config["config"]["Labels"]
        self.assertEqual(labels["org.opencontainers.image.version"], VERSION)
        self.assertEqual(labels["org.opencontainers.image.revision"],
                         re.search(r"\(commit ([^,]+),", r.stdout).group(1))
        self.assertEqual(labels["org.opencontainers.image.licenses"], "Apache-2.0")
        for label in ("org.opencontainers.image.created",
                      "org.opencontainers.image.title"):
            self.assertTrue(labels.get(label), label)
        # the archive's name for the image: the chart's default repository
        # (tests/helm/test_chart.py ties values.yaml to the script), tag VERSION
        name = self.index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
        self.assertTrue(name.endswith(":" + VERSION), name)
        self.assertIn("image:   %s\n" % name, self.output)
        self.assertIn("digest:  %s\n" % self.manifest_digest, self.output)
        self.assertRegex(self.output, r"archive: %s \([0-9.]+[KMG]?, [0-9]+ bytes\)" % re.escape(self.archive))

    def test_config(self):
        c = self.config["config"]
        self.assertNotEqual(self.uid, 0)
        self.assertNotEqual(self.gid, 0)
        passwd = H.read_bytes(os.path.join(self.root, "etc", "passwd")).decode()
        self.assertRegex(passwd, r"(?m)^oidc-discovery:x:%d:%d:" % (self.uid, self.gid))
        group = H.read_bytes(os.path.join(self.root, "etc", "group")).decode()
        self.assertRegex(group, r"(?m)^oidc-discovery:x:%d:" % self.gid)
        self.assertEqual(c["Entrypoint"], [IMAGE_BIN])
        self.assertEqual(c["Cmd"], ["--help"], "the image must not start serving without configuration")
        self.assertEqual(sorted(c["ExposedPorts"]), ["8080/tcp", "9090/tcp"])
        self.assertEqual((self.config["os"], len(self.manifest["layers"])), ("linux", 1))

    def test_no_shell_no_package_manager(self):
        for path in FORBIDDEN:
            self.assertFalse(os.path.lexists(os.path.join(self.root, path)), path)
        programs = sorted(m.name for m in self.members
                          if m.isfile() and m.mode & stat.S_IXUSR and ".so" not in os.path.basename(m.name))
        self.assertEqual(programs, ["usr/bin/oidc-discovery"], "the only program in the image")
        for m in self.members:
            self.assertEqual((m.uid, m.gid), (0, 0), m.name)
            self.assertFalse(m.mode & (stat.S_ISUID | stat.S_ISGID), m.name)
            self.assertFalse(m.mode & stat.S_IWOTH and not m.issym(), m.name)

    def test_exactly_the_libraries_loaded(self):
        """The image's libraries are what ldd resolves for the binary,
        each under the name it is loaded by (a link to the real file, as
        on the host), and nothing else; plus the CA certificates."""
        want = ldd_paths(os.path.join(BUILD_DIR, "oidc-discovery"))
        self.assertTrue(any("libssl" in p for p in want), want)
        found, targets = set(), set()
        for p in want:
            inside = os.path.join(self.root, p.lstrip("/"))
            self.assertTrue(os.path.exists(inside), p)
            self.assertEqual(H.read_bytes(inside), H.read_bytes(p), p)
            found.add(os.path.realpath(inside))
        for m in self.members:
            if m.isfile() and ".so" in os.path.basename(m.name):
                targets.add(os.path.realpath(os.path.join(self.root, m.name)))
        self.assertEqual(sorted(targets - found), [], "libraries nothing loads")
        self.assertEqual(H.read_bytes(os.path.join(self.root, "etc", "ssl", "certs", "ca-certificates.crt")),
                         H.read_bytes("/etc/ssl/certs/ca-certificates.crt"))


if __name__ == "__main__":
    unittest.main()
