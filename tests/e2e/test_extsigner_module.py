"""The external signer is a module (oidc-discovery-extsigner.so) the binary
loads only for --external-signer-listen: the module links nghttp2 and
protobuf-c and no gRPC library; the executable links no protobuf-c, a
server without the flag never maps it or the module, one with it maps the
module from beside the executable; a binary without its module
serves without the flag and, with it, refuses to start with an error that
names the flag and every path tried; a module that exists but does not
load is that error too, never a reason to look elsewhere."""

import os
import re
import shutil
import subprocess
import unittest

import oidc_harness as H

H.ensure_system_modules("grpc", "grpc_tools")

import extsigner_client as X  # noqa: E402

MODULE = "oidc-discovery-extsigner.so"
ISSUER = "https://issuer.example"
GRPC_LIBS = re.compile(r"\blib(grpc|gpr|absl_)[^/\s]*\.so")
PROTOBUF_C = re.compile(r"\blibprotobuf-c[^/\s]*\.so")


def needed(path):
    """The shared libraries an ELF file names (DT_NEEDED)."""
    dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, timeout=30, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)


def mapped(pid):
    """The files a running process has mapped."""
    with open("/proc/%d/maps" % pid) as f:
        return {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}


class Module(X.SignerTestCase):

    def signer_args(self, sock):
        return ["--service-account-issuer", ISSUER, "--signing-key-dir", self.dir, "--signing-key-type", "ec-p256",
                "--external-signer-listen", "unix:" + sock, "--external-signer-threads", "1"]

    def lone_binary(self):
        """A copy of the binary in a directory of its own, without module."""
        d = os.path.join(self.tmp, "bin")
        os.mkdir(d)
        b = os.path.join(d, "oidc-discovery")
        shutil.copy2(H.BIN, b)
        return b

    def start_with(self, binary, args):
        """A server of binary (not H.BIN), killed in teardown."""
        srv = H.Server(args)
        srv.argv[0] = binary
        self._servers.append(srv)
        return srv.start()

    def plain_args(self):
        return ["--service-account-issuer", ISSUER, "--service-account-key-file", self.keys.ec().pub]

    def run_lone(self, binary, *args):
        r = subprocess.run([binary, "serve", *args, "--listen", "127.0.0.1:0", "--admin-listen", "none"],
                           capture_output=True, text=True, timeout=H.RUN_TIMEOUT)
        return r.returncode, r.stderr

    def test_the_module_links_nghttp2_and_protobuf_c_the_executable_neither_of_ours(self):
        ldd = subprocess.run(["ldd", H.BIN], capture_output=True, text=True, timeout=30).stdout
        self.assertIsNone(GRPC_LIBS.search(ldd), ldd)
        self.assertIsNone(PROTOBUF_C.search(ldd), ldd)
        module = os.path.join(os.path.dirname(H.BIN), MODULE)
        libs = needed(module)
        self.assertTrue(any(lib.startswith("libnghttp2") for lib in libs), libs)
        self.assertTrue(any(lib.startswith("libprotobuf-c") for lib in libs), libs)
        self.assertEqual([lib for lib in libs if GRPC_LIBS.search(lib)], [], "gRPC's core is not the transport")

    def test_the_module_and_protobuf_c_are_mapped_only_with_the_flag(self):
        plain = self.start_server(self.plain_args())
        files = mapped(plain.proc.pid)
        self.assertEqual([f for f in files if PROTOBUF_C.search(f) or f.endswith(MODULE)], [])

        sock = os.path.join(self.tmp, "s.sock")
        signer = self.start_server(self.signer_args(sock))
        self.assertTrue(X.wait_socket(sock), signer.stderr())
        files = mapped(signer.proc.pid)
        self.assertIn(os.path.realpath(os.path.join(os.path.dirname(H.BIN), MODULE)), files,
                      "the module beside the executable is the one loaded")
        self.assertTrue(any(PROTOBUF_C.search(f) for f in files), sorted(files))
        self.assertEqual([f for f in files if GRPC_LIBS.search(f)], [])

    def test_missing_module_is_a_start_up_error_naming_the_flag_and_paths(self):
        b = self.lone_binary()
        plain = self.start_with(b, self.plain_args())
        self.assertEqual(plain.get(H.JWKS)[0], 200, "without the flag the module is not needed")
        sock = os.path.join(self.tmp, "s.sock")
        rc, err = self.run_lone(b, *self.signer_args(sock))
        self.assertEqual(rc, 1, err)
        self.assertIn("--external-signer-listen", err)
        self.assertIn("%s is not installed; tried %s/%s," % (MODULE, os.path.dirname(b), MODULE), err)
        self.assertRegex(err, r"%s/\.\./[^ ]*oidc-discovery/%s," % (re.escape(os.path.dirname(b)), re.escape(MODULE)))
        self.assertFalse(os.path.exists(sock))

    def test_unloadable_module_is_an_error_not_a_fallback(self):
        b = self.lone_binary()
        bad = os.path.join(os.path.dirname(b), MODULE)
        with open(bad, "w") as f:
            f.write("not an ELF file\n")
        sock = os.path.join(self.tmp, "s.sock")
        rc, err = self.run_lone(b, *self.signer_args(sock))
        self.assertEqual(rc, 1, err)
        self.assertIn("--external-signer-listen: cannot load the external signer's module: %s" % bad, err)
        self.assertFalse(os.path.exists(sock))


if __name__ == "__main__":
    unittest.main()
