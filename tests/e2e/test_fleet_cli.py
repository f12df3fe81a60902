# SPDX-License-Identifier: Apache-2.0
"""The one-shot commands over a fleet (--issuers-dir DIR): keys lists each
issuer's keys under its name, export writes each issuer's documents under
OUT/NAME/, each byte for byte what the one-issuer command writes; with
--issuer NAME, only that issuer (export: into OUT itself), and a NAME the
directory does not hold is an error listing the names it holds; a file
that is refused is reported with its name and fails the command (exit 2)
while the others are still listed; a directory that cannot be read is an
error. doctor over a fleet checks each issuer as relying parties do, one
line each (a fleet server on a port the issuer URLs name), and exits with
the worst result; --issuer NAME checks one.
"""

import json
import os
import shutil
import tempfile
import unittest

import oidc_harness as H

ISSUERS = {"a": "https://a.example/c/1", "b": "https://b.example"}


class FleetCli(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        H.require_binary(cls)
        cls.tmp = tempfile.mkdtemp(prefix="oidc-e2e-fleet-cli-")
        keys = H.KeyFactory(cls.tmp)
        cls.keys = {"a": keys.ec(), "b": keys.rsa()}
        cls.dir = os.path.join(cls.tmp, "issuers")
        os.mkdir(cls.dir)
        for name, issuer in ISSUERS.items():
            doc = {"service-account-issuer": issuer, "service-account-key-file": cls.keys[name].pub}
            if name == "b":
                doc["max-age"] = "5m"
            H.atomic_write(os.path.join(cls.dir, name + ".json"), json.dumps(doc).encode())

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_ok(self, args):
        rc, out, err = H.run_bin(args)
        self.assertEqual(rc, 0, "%r: %s" % (args, err))
        return out

    def test_keys_lists_each_issuer(self):
        out = self.run_ok(["keys", "--issuers-dir", self.dir])
        blocks = out.split("\n\n")
        self.assertEqual(len(blocks), 2, out)
        for block, name in zip(blocks, sorted(ISSUERS)):
            lines = block.strip().split("\n")
            self.assertEqual(lines[0], "issuer %s: %s" % (name, ISSUERS[name]))
            self.assertTrue(lines[1].startswith("KID"), block)
            self.assertEqual(len(lines), 3, block)
            self.assertTrue(lines[2].startswith(self.keys[name].kid + " "), block)
        out = self.run_ok(["keys", "--issuers-dir", self.dir, "--output", "json"])
        docs = [json.loads(line) for line in out.splitlines()]
        self.assertEqual([d["issuer"] for d in docs], ["a", "b"])
        for d in docs:
            self.assertEqual([k["kid"] for k in d["keys"]], [self.keys[d["issuer"]].kid])

    def test_export_each_issuer_under_its_name(self):
        out = os.path.join(self.tmp, "out")
        self.run_ok(["export", "--issuers-dir", self.dir, "--out", out])
        self.assertEqual(sorted(os.listdir(out)), ["a", "b"])
        for name, issuer in ISSUERS.items():
            single = os.path.join(self.tmp, "single-" + name)
            args = ["export", "--service-account-issuer", issuer, "--service-account-key-file",
                    self.keys[name].pub, "--out", single]
            if name == "b":
                args += ["--max-age", "5m"]
            self.run_ok(args)
            for doc in (".well-known/openid-configuration", "openid/v1/jwks"):
                with open(os.path.join(out, name, doc), "rb") as f, open(os.path.join(single, doc), "rb") as g:
                    self.assertEqual(f.read(), g.read(), "%s %s" % (name, doc))

    def test_one_issuer_by_name(self):
        out = self.run_ok(["keys", "--issuers-dir", self.dir, "--issuer", "b"])
        lines = out.strip().split("\n")
        self.assertEqual(lines[0], "issuer b: " + ISSUERS["b"])
        self.assertEqual(len(lines), 3, out)
        self.assertNotIn(self.keys["a"].kid, out)
        dest = os.path.join(self.tmp, "one")
        self.run_ok(["export", "--issuers-dir", self.dir, "--issuer", "a", "--out", dest])
        self.assertEqual(sorted(os.listdir(dest)), [".well-known", "openid"])
        with open(os.path.join(dest, "openid/v1/jwks")) as f:
            self.assertEqual([k["kid"] for k in json.load(f)["keys"]], [self.keys["a"].kid])

    def test_unknown_issuer_name(self):
        for command in (["keys"], ["export", "--out", os.path.join(self.tmp, "never")]):
            rc, out, err = H.run_bin(command + ["--issuers-dir", self.dir, "--issuer", "zz"])
            self.assertEqual(rc, 2, err)
            self.assertIn("--issuer zz: no such issuer", err)
            self.assertIn("its issuers: a, b", err)
            self.assertEqual(out, "")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "never")))
        rc, out, err = H.run_bin(["keys", "--service-account-key-file", self.keys["a"].pub, "--issuer", "a"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--issuer NAME picks one issuer of --issuers-dir", err)

    def test_refused_file_and_missing_dir(self):
        d = os.path.join(self.tmp, "with-bad")
        shutil.copytree(self.dir, d)
        H.atomic_write(os.path.join(d, "bad.json"), b'{"service-account-issuer": "https://c.example", "listen": ":1"}')
        rc, out, err = H.run_bin(["keys", "--issuers-dir", d])
        self.assertEqual(rc, 2, err)
        self.assertIn("issuer bad:", err)
        self.assertIn("listen", err)
        self.assertIn("issuer a: " + ISSUERS["a"], out)
        self.assertIn("issuer b: " + ISSUERS["b"], out)
        rc, out, err = H.run_bin(["export", "--issuers-dir", os.path.join(self.tmp, "nope"), "--out",
                                  os.path.join(self.tmp, "o2")])
        self.assertEqual(rc, 2)
        self.assertIn("--issuers-dir", err)


class FleetDoctor(H.SharedSetUpCase):
    TMP_PREFIX = "oidc-e2e-fleet-doctor-"

    @classmethod
    def _start(cls):
        cls.key = key = H.KeyFactory(cls.tmp).rsa()
        port, dead = H.free_port(), H.free_port()
        cls.dir = os.path.join(cls.tmp, "issuers")
        os.mkdir(cls.dir)
        cls.urls = {"a": "http://127.0.0.1:%d/c/1" % port, "b": "http://127.0.0.1:%d/c/2" % port,
                    "dead": "http://127.0.0.1:%d/x" % dead}
        for name, url in cls.urls.items():
            H.atomic_write(os.path.join(cls.dir, name + ".json"), json.dumps(
                {"service-account-issuer": url, "service-account-key-file": key.pub}).encode())
        cls.server = H.Server(["--issuers-dir", cls.dir, "--allow-insecure-issuer"], port=port)
        cls.servers.append(cls.server)
        cls.server.start()

    def test_each_issuer_one_line_worst_exit(self):
        rc, out, err = H.run_bin(["doctor", "--issuers-dir", self.dir, "--allow-insecure-issuer"])
        lines = out.splitlines()
        self.assertEqual(len(lines), 3, out + err)
        # http issuers warn at best (--allow-insecure-issuer); nothing listens for dead
        self.assertTrue(lines[0].startswith("WARN a %s: " % self.urls["a"]), out)
        self.assertTrue(lines[1].startswith("WARN b %s: " % self.urls["b"]), out)
        self.assertTrue(lines[2].startswith("FAIL dead %s: " % self.urls["dead"]), out)
        self.assertIn("0 fail", lines[0])
        self.assertIn("discovery.fetch", lines[2])
        self.assertEqual(rc, 1, out + err)

    def test_token_from_stdin_checked_per_issuer(self):
        """--token-file - is read once and checked against each issuer:
        a's token passes for a and is refused for b (another iss)."""
        rc, token, err = H.run_bin(["token", "--signing-key-file", self.key.priv, "--issuer", self.urls["a"],
                                    "--service-account-uid", "u-1", "--allow-insecure-issuer"])
        self.assertEqual(rc, 0, err)
        rc, out, err = H.run_bin(["doctor", "--issuers-dir", self.dir, "--allow-insecure-issuer", "--token-file", "-",
                                  "--issuer", "a"], input=token)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("0 fail", out)
        rc, out, err = H.run_bin(["doctor", "--issuers-dir", self.dir, "--allow-insecure-issuer", "--token-file", "-"],
                                 input=token)
        lines = out.splitlines()
        self.assertEqual(len(lines), 3, out + err)
        self.assertIn("0 fail", lines[0])
        self.assertTrue(lines[1].startswith("FAIL b "), out)
        self.assertIn("token.", lines[1])
        self.assertEqual(rc, 1, out + err)

    def test_one_issuer_by_name(self):
        rc, out, err = H.run_bin(["doctor", "--issuers-dir", self.dir, "--allow-insecure-issuer", "--issuer", "b"])
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(len(out.splitlines()), 1, out)
        self.assertTrue(out.startswith("WARN b %s: " % self.urls["b"]), out)
        rc, out, err = H.run_bin(["doctor", "--issuers-dir", self.dir, "--issuer", "zz"])
        self.assertEqual(rc, 2, out + err)
        self.assertIn("--issuer zz: no such issuer", err)
        self.assertIn("its issuers: a, b, dead", err)


if __name__ == "__main__":
    unittest.main()
