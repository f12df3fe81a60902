# SPDX-License-Identifier: Apache-2.0
"""End-to-end: `oidc-discovery export --out DIR` writes the two documents
byte for byte as `serve` answers with the same flags, and prints the headers
each object must be uploaded with."""

import json
import os
import re
import shlex
import stat
import unittest

import oidc_harness as H
from oidc_harness import DISCOVERY, JWKS, one

ISSUER = "https://issuer.example.com"
OBJECTS = {".well-known/openid-configuration": DISCOVERY, "openid/v1/jwks": JWKS}
LINE = re.compile(r'^(\S+)  Content-Type: (.+?)  Cache-Control: (.+?)  ETag: ("[^"]*")$')


def parse_report(out):
    """The per-object lines of export's output: name -> {content-type,
    cache-control, etag}."""
    objs = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            objs[m.group(1)] = {"content-type": m.group(2), "cache-control": m.group(3), "etag": m.group(4)}
    return objs


class Export(H.ServerTestCase):

    def setUp(self):
        super().setUp()
        self.rsa = self.keys.rsa()
        self.ec = self.keys.ec("P-384")
        self.out = os.path.join(self.tmp, "site")

    def export(self, args, out=None):
        rc, stdout, err = H.run_once(["export", *args, "--out", out or self.out])
        self.assertEqual(rc, 0, "export failed: %s" % err)
        return stdout

    def assert_same_as_serve(self, args, report, out=None):
        """Starts serve with args and checks that each exported object, and
        the headers export printed for it, are what serve answers."""
        out = out or self.out
        srv = self.start_server(args)
        self.assertEqual(set(report), set(OBJECTS), report)
        for name, url_path in OBJECTS.items():
            st, h, body = srv.get(url_path)
            self.assertEqual(st, 200, body)
            path = os.path.join(out, name)
            self.assertEqual(H.read_bytes(path), body, "%s differs from serve's %s" % (name, url_path))
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o644, path)
            for header in ("content-type", "cache-control", "etag"):
                self.assertEqual(report[name][header], one(h, header), "%s of %s" % (header, name))
        self.stop_ok(srv)

    def test_rsa_and_ec_match_serve(self):
        args = ["--service-account-issuer", ISSUER, "--service-account-key-file", self.rsa.pub,
                "--service-account-key-file", self.ec.priv]
        report = parse_report(self.export(args))
        self.assertEqual(report[".well-known/openid-configuration"]["content-type"], "application/json")
        self.assertEqual(report["openid/v1/jwks"]["content-type"], "application/jwk-set+json")
        self.assertEqual(report["openid/v1/jwks"]["cache-control"], "public, max-age=3600")
        # independently of serve, too
        self.assertEqual(H.read_bytes(os.path.join(self.out, ".well-known", "openid-configuration")),
                         H.expected_discovery(ISSUER, H.default_jwks_uri(ISSUER), ["RS256", "ES384"]))
        self.assertEqual(H.read_bytes(os.path.join(self.out, "openid", "v1", "jwks")),
                         H.expected_jwks([self.rsa, self.ec]))
        self.assert_same_as_serve(args, report)

    def test_json_content_type_and_max_age(self):
        args = ["--service-account-issuer", ISSUER + "/cluster-1/", "--service-account-key-file", self.ec.pub,
                "--service-account-key-file", self.rsa.priv, "--jwks-content-type", "application/json",
                "--max-age", "600", "--service-account-jwks-uri", "https://cdn.example.com/cluster-1/keys"]
        stdout = self.export(args)
        report = parse_report(stdout)
        for name in OBJECTS:
            self.assertEqual(report[name]["content-type"], "application/json")
            self.assertEqual(report[name]["cache-control"], "public, max-age=600")
        # where relying parties will look, and bucket keys that answer there
        self.assertIn("  https://issuer.example.com/cluster-1/.well-known/openid-configuration\n", stdout)
        self.assertIn("  https://cdn.example.com/cluster-1/keys\n", stdout)
        self.assert_same_as_serve(args, report)

    def test_upload_commands_carry_the_headers(self):
        out = os.path.join(self.tmp, "it's a dir")
        stdout = self.export(["--service-account-issuer", ISSUER, "--service-account-key-file", self.rsa.pub], out)
        report = parse_report(stdout)
        cmds = [shlex.split(line) for line in stdout.splitlines()
                if line.startswith(("  aws ", "  gsutil ", "  az "))]
        self.assertEqual(len(cmds), 6, stdout)
        for name, want in report.items():
            local = os.path.join(out, name)
            aws = next(c for c in cmds if c[0] == "aws" and c[3] == local)
            self.assertEqual(aws[:3], ["aws", "s3", "cp"])
            self.assertEqual(aws[4], "s3://BUCKET/" + name)
            self.assertEqual(aws[aws.index("--content-type") + 1], want["content-type"])
            self.assertEqual(aws[aws.index("--cache-control") + 1], want["cache-control"])
            gs = next(c for c in cmds if c[0] == "gsutil" and local in c)
            self.assertIn("Content-Type:" + want["content-type"], gs)
            self.assertIn("Cache-Control:" + want["cache-control"], gs)
            self.assertEqual(gs[-1], "gs://BUCKET/" + name)
            az = next(c for c in cmds if c[0] == "az" and local in c)
            self.assertEqual(az[az.index("--name") + 1], name)
            self.assertEqual(az[az.index("--content-type") + 1], want["content-type"])
            self.assertEqual(az[az.index("--content-cache-control") + 1], want["cache-control"])

    def test_retained_keys_read_not_written(self):
        state = os.path.join(self.tmp, "state")
        both = ["--service-account-issuer", ISSUER, "--service-account-key-file", self.rsa.pub,
                "--service-account-key-file", self.ec.pub, "--key-retention", "1h", "--state-dir", state]
        self.stop_ok(self.start_server(both))
        state_file = os.path.join(state, "keys.json")
        before = H.read_bytes(state_file)
        mtime = os.stat(state_file).st_mtime_ns
        # the EC key left the inputs: export still publishes it, as serve would
        one_key = ["--service-account-issuer", ISSUER, "--service-account-key-file", self.rsa.pub,
                   "--key-retention", "1h", "--state-dir", state]
        report = parse_report(self.export(one_key))
        self.assertEqual(H.read_bytes(state_file), before, "export wrote the state file")
        self.assertEqual(os.stat(state_file).st_mtime_ns, mtime)
        kids = [k["kid"] for k in json.loads(H.read_bytes(os.path.join(self.out, "openid", "v1", "jwks")))["keys"]]
        self.assertEqual(kids, [self.rsa.kid, self.ec.kid])
        self.assert_same_as_serve(one_key, report)

    def test_export_replaces_previous_files(self):
        self.export(["--service-account-issuer", ISSUER, "--service-account-key-file", self.rsa.pub])
        self.export(["--service-account-issuer", ISSUER, "--service-account-key-file", self.ec.pub])
        self.assertEqual(H.read_bytes(os.path.join(self.out, "openid", "v1", "jwks")), H.expected_jwks([self.ec]))
        for d in (os.path.join(self.out, ".well-known"), os.path.join(self.out, "openid", "v1")):
            self.assertEqual(len(os.listdir(d)), 1, "temporary files left in %s: %r" % (d, os.listdir(d)))


class ExportErrors(H.ServerTestCase):

    def setUp(self):
        super().setUp()
        self.key = self.keys.ec()
        self.base = ["export", "--service-account-issuer", ISSUER, "--service-account-key-file", self.key.pub]

    def one_line(self, args, status):
        rc, out, err = H.run_once(args)
        self.assertEqual(rc, status, "exit status for %r; stderr:\n%s" % (args, err))
        lines = [line for line in err.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, "expected one line on stderr, got:\n" + err)
        self.assertEqual(out, "", "nothing on stdout on failure")
        return lines[0]

    def test_missing_out(self):
        line = self.one_line(self.base, 2)
        self.assertIn("--out is required", line)

    def test_listener_flag_refused(self):
        line = self.one_line(self.base + ["--out", self.tmp, "--listen", "127.0.0.1:1"], 2)
        self.assertIn("--listen is not valid for the export command", line)

    def test_bad_keys(self):
        bad = self.keys.write("bad.pem", b"not a key\n")
        line = self.one_line(["export", "--service-account-issuer", ISSUER, "--service-account-key-file", bad,
                              "--out", os.path.join(self.tmp, "o")], 2)
        self.assertIn(bad, line)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "o")), "nothing is written for bad keys")

    def test_out_is_a_file(self):
        f = self.keys.write("plain-file", b"x")
        line = self.one_line(self.base + ["--out", f], 1)
        self.assertIn(os.path.join(f, ".well-known"), line)

    def test_unwritable_dir(self):
        if os.geteuid() == 0:
            # root writes anywhere: a directory in the way of a document stands in
            os.makedirs(os.path.join(self.tmp, "o", "openid", "v1", "jwks", "sub"))
            line = self.one_line(self.base + ["--out", os.path.join(self.tmp, "o")], 1)
            self.assertIn(os.path.join(self.tmp, "o", "openid", "v1", "jwks"), line)
            return
        ro = os.path.join(self.tmp, "ro")
        os.mkdir(ro, 0o555)
        line = self.one_line(self.base + ["--out", os.path.join(ro, "o")], 1)
        self.assertIn(os.path.join(ro, "o"), line)


if __name__ == "__main__":
    unittest.main()
