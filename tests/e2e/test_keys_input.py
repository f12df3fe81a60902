# SPDX-License-Identifier: Apache-2.0
"""End-to-end: what the server accepts in --service-account-key-file and what
it publishes from it (public parts only, each key once)."""

import json
import os
import re
import shutil
import time
import unittest

import oidc_harness as H
from oidc_harness import JWKS, DISCOVERY

ISSUER = "https://issuer.example.com"
PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"}


class PrivateKeyInputs(H.ServerTestCase):

    def assert_public_only(self, srv, keys):
        """The JWKS holds exactly the public members, and no private integer
        appears anywhere in the raw bytes on the wire."""
        body = self.check_both(srv, ISSUER, keys)
        for jwk in json.loads(body)["keys"]:
            self.assertFalse(PRIVATE_MEMBERS & set(jwk), jwk.keys())
        raw = b""
        for path in (JWKS, DISCOVERY):
            s = srv.raw_socket()
            try:
                s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    raw += chunk
            finally:
                s.close()
        self.assertIn(body, raw)
        for k in keys:
            for name, value in k.secrets.items():
                enc = H.b64url(value).encode()
                self.assertNotIn(enc, raw, "private %s of %s leaked" % (name, k.name))
                self.assertNotIn(H.base64.b64encode(value).rstrip(b"="), raw,
                                 "private %s of %s leaked (std base64)" % (name, k.name))
        # and not in the log either
        err = srv.stderr()
        for k in keys:
            for name, value in k.secrets.items():
                self.assertNotIn(H.b64url(value), err)
                self.assertNotIn(value.hex(), err.lower().replace(":", ""))

    def test_rsa_pkcs1_private(self):
        k = self.keys.rsa()
        path = k.pkcs1()
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", path])
        self.assert_public_only(srv, [k])
        self.stop_ok(srv)

    def test_rsa_pkcs8_private(self):
        k = self.keys.rsa()
        self.assertIn(b"BEGIN PRIVATE KEY", H.read_bytes(k.priv))
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", k.priv])
        self.assert_public_only(srv, [k])
        self.stop_ok(srv)

    def test_ec_sec1_private_all_curves(self):
        ks = [self.keys.ec("P-256"), self.keys.ec("P-384"), self.keys.ec("P-521")]
        args = ["--service-account-issuer", ISSUER]
        for k in ks:
            args += ["--service-account-key-file", k.sec1()]
        srv = self.start_server(args)
        self.assert_public_only(srv, ks)
        self.stop_ok(srv)

    def test_ec_sec1_with_ec_parameters_block(self):
        k = self.keys.ec("P-256")
        path = k.sec1(with_params=True)
        self.assertIn(b"BEGIN EC PARAMETERS", H.read_bytes(path))
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", path])
        self.assert_public_only(srv, [k])
        self.stop_ok(srv)

    def test_ec_pkcs8_private(self):
        ks = [self.keys.ec("P-256"), self.keys.ec("P-521")]
        args = ["--service-account-issuer", ISSUER]
        for k in ks:
            args += ["--service-account-key-file", k.priv]
        srv = self.start_server(args)
        self.assert_public_only(srv, ks)
        self.stop_ok(srv)

    def test_certificate(self):
        k = self.keys.rsa()
        e = self.keys.ec("P-384")
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", k.certificate(),
                                 "--service-account-key-file", e.certificate()])
        self.assert_public_only(srv, [k, e])
        self.stop_ok(srv)

    def test_mixed_public_files(self):
        # PKIX public keys of both kinds, several blocks in one file, mixed
        # with a private-key file.
        r = self.keys.rsa()
        e = self.keys.ec("P-256")
        p = self.keys.ec("P-384")
        multi = self.keys.concat("multi.pem", r.pub, e.pub)
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", multi,
                                 "--service-account-key-file", p.sec1()])
        self.assert_public_only(srv, [r, e, p])
        self.stop_ok(srv)


class Duplicates(H.ServerTestCase):

    def test_same_key_private_and_public(self):
        k = self.keys.rsa()
        sa_key = k.pkcs1()
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", sa_key,
                                 "--service-account-key-file", k.pub])
        body = self.check_both(srv, ISSUER, [k])
        self.assertEqual(body.count(k.kid.encode()), 1)
        self.assertIn("warn", srv.stderr().lower(), "no warning about the duplicate key:\n" + srv.stderr())
        self.stop_ok(srv)

    def test_duplicate_keeps_first_position(self):
        a = self.keys.ec("P-256")
        b = self.keys.rsa()
        # a, b, then a again (as a SEC1 private key): published a, b
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", a.pub,
                                 "--service-account-key-file", b.pub,
                                 "--service-account-key-file", a.sec1()])
        self.check_both(srv, ISSUER, [a, b])
        self.assertIn("warn", srv.stderr().lower())
        self.stop_ok(srv)

    def test_duplicate_block_in_one_file(self):
        a = self.keys.ec("P-384")
        path = self.keys.concat("twice.pem", a.pub, a.pub)
        srv = self.start_server(["--service-account-issuer", ISSUER,
                                 "--service-account-key-file", path])
        self.check_both(srv, ISSUER, [a])
        self.stop_ok(srv)


class Rejected(H.ServerTestCase):

    def assert_exit2_naming(self, path, extra_args=()):
        rc, out, err = H.run_once(["serve", "--service-account-issuer", ISSUER,
                                   "--service-account-key-file", path,
                                   "--listen", "127.0.0.1:0", *extra_args])
        self.assertIsNotNone(rc, "server started (did not exit) for key file %s; stderr:\n%s" % (path, err))
        self.assertEqual(rc, 2, "exit status for key file %s; stderr:\n%s" % (path, err))
        self.assertIn(path, err)

    def test_ed25519_private(self):
        priv, _ = self.keys.ed25519()
        self.assert_exit2_naming(priv)

    def test_ed25519_public(self):
        _, pub = self.keys.ed25519()
        self.assert_exit2_naming(pub)

    def test_unsupported_curves(self):
        # only P-256/384/521 have a JWS alg (ES256/384/512)
        for curve in ("P-224", "secp256k1"):
            with self.subTest(curve=curve):
                path = H.os.path.join(self.tmp, curve + ".key")
                H.openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:" + curve,
                          "-pkeyopt", "ec_param_enc:named_curve", "-out", path)
                self.assert_exit2_naming(path)
                pub = path + ".pub"
                H.openssl("pkey", "-in", path, "-pubout", "-out", pub)
                self.assert_exit2_naming(pub)

    def test_missing_file(self):
        self.assert_exit2_naming(H.os.path.join(self.tmp, "does-not-exist.pub"))

    def test_missing_second_file(self):
        k = self.keys.rsa()
        missing = H.os.path.join(self.tmp, "missing-2.pub")
        rc, _, err = H.run_once(["serve", "--service-account-issuer", ISSUER,
                                 "--service-account-key-file", k.pub,
                                 "--service-account-key-file", missing,
                                 "--listen", "127.0.0.1:0"])
        self.assertEqual(rc, 2, err)
        self.assertIn(missing, err)

    def test_empty_file(self):
        self.assert_exit2_naming(self.keys.write("empty.pem", b""))

    def test_garbage_file(self):
        self.assert_exit2_naming(self.keys.write("garbage.pem", b"this is not a PEM file\n" * 10))

    def test_ec_parameters_only(self):
        params = H.openssl("ecparam", "-name", "prime256v1")
        self.assert_exit2_naming(self.keys.write("params.pem", params))

    def test_encrypted_private_key(self):
        k = self.keys.rsa()
        enc = H.os.path.join(self.tmp, "enc.pem")
        H.openssl("pkcs8", "-topk8", "-in", k.priv, "-out", enc, "-passout", "pass:secret",
                  "-v2", "aes-256-cbc")
        self.assertIn(b"ENCRYPTED PRIVATE KEY", H.read_bytes(enc))
        self.assert_exit2_naming(enc)

    def test_directory_as_key_file(self):
        self.assert_exit2_naming(self.tmp)


def kubeadm_pki(root, keys):
    """A directory laid out like kubeadm's /etc/kubernetes/pki, made with
    the openssl CLI: the cluster CA, the front-proxy CA, the API server's
    serving and kubelet-client pairs, the service-account pair (from
    keys, a KeyFactory) and etcd/ with its own CA. Returns (pki, sa Key)."""
    pki = os.path.join(root, "pki")
    os.makedirs(os.path.join(pki, "etcd"))
    ca = H.make_ca(pki, "ca")
    H.make_ca(pki, "front-proxy-ca")
    H.make_server_cert(pki, ca, "DNS:kubernetes", name="apiserver")
    H.make_server_cert(pki, ca, "DNS:kubelet", name="apiserver-kubelet-client")
    H.make_ca(os.path.join(pki, "etcd"), "ca")
    sa = keys.rsa(2048)
    shutil.copyfile(sa.priv, os.path.join(pki, "sa.key"))
    shutil.copyfile(sa.pub, os.path.join(pki, "sa.pub"))
    # what kubeadm leaves there is keys and certificates only
    for name in os.listdir(pki):
        if name.endswith((".csr", ".ext", ".srl")):
            os.unlink(os.path.join(pki, name))
    for name in os.listdir(pki):
        if name.endswith(".key"):
            os.chmod(os.path.join(pki, name), 0o600)
    return pki, sa


class KeySources(H.ServerTestCase):
    """Key sources that are not what the operator meant are refused at
    start, naming the file and saying what to point at instead; during a
    reload they keep the last good set."""

    def refused(self, *flags, needles=()):
        """serve and keys both exit 2 (promptly) and name every needle."""
        for cmd in (["serve", "--service-account-issuer", ISSUER, "--listen", "127.0.0.1:0",
                     "--admin-listen", "none"], ["keys"]):
            with self.subTest(cmd[0]):
                rc, out, err = H.run_once(cmd + list(flags), timeout=10)
                self.assertIsNotNone(rc, "%s did not finish; stderr:\n%s" % (cmd[0], err))
                self.assertEqual(rc, 2, "%s accepted %r; stdout:\n%s\nstderr:\n%s" % (cmd[0], flags, out, err))
                for needle in needles:
                    self.assertIn(needle, err)
        return err

    def test_kubeadm_pki_directory_is_refused(self):
        pki, _ = kubeadm_pki(self.tmp, self.keys)
        err = self.refused("--service-account-key-file", pki,
                           needles=[os.path.join(pki, "ca.crt"), os.path.join(pki, "sa.pub"), "sa.key"])
        self.assertIn("PKI directory", err)

    def test_pki_directory_without_ca_files_is_refused_by_its_ca_certificate(self):
        # no CA-like names, but a certificate with CA:TRUE beside the keys
        pki, _ = kubeadm_pki(self.tmp, self.keys)
        os.rename(os.path.join(pki, "ca.crt"), os.path.join(pki, "cluster.crt"))
        for name in ("ca.key", "front-proxy-ca.crt", "front-proxy-ca.key"):
            os.unlink(os.path.join(pki, name))
        err = self.refused("--service-account-key-file", pki,
                           needles=[os.path.join(pki, "cluster.crt"), "CA:TRUE", "sa.pub"])
        self.assertNotIn("PKI directory", err)

    def test_ca_certificate_file_is_refused(self):
        k = self.keys.ec("P-256")
        self.refused("--service-account-key-file", k.certificate(ca=True),
                     needles=[k.certificate(ca=True), "CA:TRUE", "sa.pub"])

    def test_sa_key_in_the_pki_directory_is_fine(self):
        pki, sa = kubeadm_pki(self.tmp, self.keys)
        for name in ("sa.pub", "sa.key"):
            with self.subTest(name):
                srv = self.start_server(["--service-account-issuer", ISSUER,
                                         "--service-account-key-file", os.path.join(pki, name)])
                self.check_both(srv, ISSUER, [sa])
                self.stop_ok(srv)

    def test_pki_files_during_a_reload_keep_the_last_good_set(self):
        d = os.path.join(self.tmp, "keys")
        os.mkdir(d)
        sa = self.keys.ec("P-256")
        shutil.copyfile(sa.pub, os.path.join(d, "sa.pub"))
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", d])
        body = self.check_both(srv, ISSUER, [sa])
        failed = r"key reload failed .*keeping the published set: .*%s"
        ca_crt, ca_key = H.make_ca(self.tmp, "cluster")
        for name, src, needle in (("ca.key", ca_key, "PKI directory"), ("issuer.crt", ca_crt, "CA:TRUE")):
            with self.subTest(name):
                path = os.path.join(d, name)
                n = H.count_log(srv, failed % re.escape(path))
                H.atomic_write(path, H.read_bytes(src))
                self.assertGreater(H.wait_for_log(srv, failed % re.escape(path), n + 1, 3.0), n,
                                   "not reported; stderr:\n" + srv.stderr())
                lines = [ln for ln in srv.stderr().splitlines() if re.search(failed % re.escape(path), ln)]
                self.assertIn(needle, lines[-1])
                time.sleep(0.2)
                self.assertEqual(srv.get(JWKS)[2], body, "the published set changed")
                os.unlink(path)
                st, _, got = H.wait_for_jwks(srv, [sa])
                self.assertEqual(got, body)
        self.stop_ok(srv)


class NotRegularFiles(H.ServerTestCase):
    """A FIFO (or socket, device) given as a key, signing-key or TLS file
    fails at once, naming it: opening a FIFO for reading would wait for a
    writer forever."""

    def fifo(self, name):
        path = os.path.join(self.tmp, name)
        os.mkfifo(path)
        return path

    def assert_fails_fast(self, argv, path):
        rc, out, err = H.run_once(argv, timeout=10)
        self.assertIsNotNone(rc, "%s hung on the FIFO %s; stderr:\n%s" % (argv[0], path, err))
        self.assertNotEqual(rc, 0, err)
        self.assertIn(path, err)
        self.assertIn("FIFO", err)
        return err

    def test_fifo_as_key_file(self):
        fifo = self.fifo("sa.pub")
        self.assert_fails_fast(["keys", "--service-account-key-file", fifo], fifo)
        self.assert_fails_fast(["serve", "--service-account-issuer", ISSUER, "--service-account-key-file", fifo,
                                "--listen", "127.0.0.1:0", "--admin-listen", "none"], fifo)

    def test_fifo_as_tls_file(self):
        k = self.keys.ec("P-256")
        ca = H.make_ca(self.tmp)
        cert, tkey = H.make_server_cert(self.tmp, ca, "IP:127.0.0.1")
        base = ["serve", "--service-account-issuer", ISSUER, "--service-account-key-file", k.pub,
                "--listen", "127.0.0.1:0", "--admin-listen", "none",
                "--tls-listen", "127.0.0.1:0"]
        fifo = self.fifo("fifo")
        for what, extra in (("--tls-cert-file", ["--tls-cert-file", fifo, "--tls-private-key-file", tkey]),
                            ("--tls-private-key-file", ["--tls-cert-file", cert, "--tls-private-key-file", fifo])):
            with self.subTest(what):
                self.assertIn(what, self.assert_fails_fast(base + extra, fifo))

    def test_fifo_as_signing_key_file(self):
        # an unreadable --signing-key-file is reported, not fatal: serve
        # must start, say so, and stop on SIGTERM
        k = self.keys.ec("P-256")
        fifo = self.fifo("signing.key")
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", k.pub,
                                 "--signing-key-file", fifo])
        self.assertEqual(H.wait_for_log(srv, r"--signing-key-file: %s: .*FIFO" % re.escape(fifo)), 1, srv.stderr())
        self.check_both(srv, ISSUER, [k])
        self.stop_ok(srv)

if __name__ == "__main__":
    unittest.main()
