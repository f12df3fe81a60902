# SPDX-License-Identifier: Apache-2.0
"""End-to-end: publishing to Azure Blob Storage against Azurite (the npm
package `azurite`, Microsoft's storage emulator, pinned in tests/node), with
SharedKey (the account key from a file and from AZURE_STORAGE_KEY) and with
an account SAS token from a file.

Azurite checks every SharedKey signature and SAS token itself. The test
signs its own requests (creating the container, reading and tampering with
blobs) and makes the SAS token with the few lines of HMAC below, written
from Microsoft's "Create an account SAS" and "Authorize with Shared Key"
pages; Azurite accepting them is what shows they are right.

Azurite runs once for the file, on a loopback port, in memory, with its
telemetry off (it would otherwise call out to the internet)."""

import base64
import datetime
import email.utils
import hashlib
import hmac
import http.client
import os
import shutil
import subprocess
import time
import unittest
import urllib.parse

import oidc_harness as H
H.ensure_system_modules("prometheus_client")
from oidc_harness import DISCOVERY, JWKS, one

ACCOUNT = "devstoreaccount1"
# Azurite's well-known development account key (public, in its README)
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
CONTAINER = "oidc"
ISSUER = "https://oidc.example.com/cluster-1"
VERSION = "2021-08-06"
AZURITE_MAIN = os.path.join(H.NODE_DIR, "node_modules", "azurite", "dist", "src", "blob", "main.js")
WAIT = 10.0 * H.SLOW


class Azurite:
    """Azurite's blob service on a loopback port, and requests signed with
    the account key."""

    def __init__(self, workdir):
        self.port = H.free_port()
        self.log = open(os.path.join(workdir, "azurite.log"), "wb")
        self.proc = subprocess.Popen(
            ["node", AZURITE_MAIN, "--blobHost", "127.0.0.1", "--blobPort", str(self.port), "--inMemoryPersistence",
             "--disableTelemetry"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir)
        if not H.wait_until(lambda: self.proc.poll() is not None or H.wait_accepting(self.port, "127.0.0.1", 0), 30) \
                or self.proc.poll() is not None:
            self.stop()
            with open(self.log.name, "rb") as f:
                raise AssertionError("Azurite did not start:\n%s" % f.read().decode(errors="replace")[-2000:])

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()

    def request(self, method, path, headers=None, body=b"", query="", key=ACCOUNT_KEY):
        """A SharedKey-signed request on /ACCOUNT/path: (status, headers
        with lowercase names, body)."""
        h = {"x-ms-date": email.utils.formatdate(time.time(), usegmt=True), "x-ms-version": VERSION}
        h.update(headers or {})
        low = {k.lower(): v for k, v in h.items()}
        standard = ["content-encoding", "content-language", "content-length", "content-md5", "content-type", "date",
                    "if-modified-since", "if-match", "if-none-match", "if-unmodified-since", "range"]
        lines = [method] + [(str(len(body)) if body else "") if s == "content-length" else low.get(s, "")
                            for s in standard]
        canonical_headers = "".join("%s:%s\n" % (k, low[k]) for k in sorted(low) if k.startswith("x-ms-"))
        resource = "/%s/%s/%s" % (ACCOUNT, ACCOUNT, path)
        for k, v in sorted(urllib.parse.parse_qsl(query)):
            resource += "\n%s:%s" % (k.lower(), v)
        to_sign = "\n".join(lines) + "\n" + canonical_headers + resource
        sig = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()).decode()
        h["Authorization"] = "SharedKey %s:%s" % (ACCOUNT, sig)
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=H.SOCK_TIMEOUT)
        try:
            c.request(method, "/%s/%s%s" % (ACCOUNT, path, "?" + query if query else ""), body=body, headers=h)
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def blob(self, name):
        st, h, body = self.request("GET", "%s/%s" % (CONTAINER, name))
        return (h, body) if st == 200 else None


def account_sas(permissions, key=ACCOUNT_KEY, hours=1):
    """An account SAS token for the blob service (version 2021-08-06: the
    string to sign ends with the encryption scope, empty)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    fields = {"sv": VERSION, "ss": "b", "srt": "o", "sp": permissions,
              "st": (now - datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "se": (now + datetime.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ"), "spr": "https,http"}
    to_sign = "\n".join([ACCOUNT, fields["sp"], fields["ss"], fields["srt"], fields["st"], fields["se"], "",
                         fields["spr"], fields["sv"], ""]) + "\n"
    fields["sig"] = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()).decode()
    return urllib.parse.urlencode(fields)


class BucketAzure(H.ServerTestCase):
    azurite = None

    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(AZURITE_MAIN):
            raise AssertionError("azurite is not installed: run `npm ci` in %s (scripts/setup.sh does)" % H.NODE_DIR)
        cls.workdir = H.tempfile.mkdtemp(prefix="oidc-e2e-azurite-")
        cls.azurite = Azurite(cls.workdir)
        st, _, body = cls.azurite.request("PUT", CONTAINER, query="restype=container")
        assert st == 201, "cannot create the container: %d %r" % (st, body)

    @classmethod
    def tearDownClass(cls):
        cls.azurite.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def setUp(self):
        super().setUp()
        self.rsa = self.keys.rsa()
        self.ec = self.keys.ec("P-384")
        self.prefix = self.id().rsplit(".", 1)[-1].replace("_", "-")[:40]

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(data)
        return path

    def doc_args(self):
        return ["--service-account-issuer", ISSUER, "--service-account-key-file", self.rsa.pub,
                "--service-account-key-file", self.ec.priv]

    def url(self):
        return "azblob://%s/%s/%s" % (ACCOUNT, CONTAINER, self.prefix)

    def publish(self, *auth, env=None):
        return H.run_once(["publish", "--to", self.url(), "--azblob-endpoint", self.azurite.endpoint, *auth,
                           *self.doc_args()], timeout=30, env=env)

    def assert_same_as_serve(self):
        srv = self.start_server(self.doc_args())
        for path in (JWKS, DISCOVERY):
            st, h, body = srv.get(path)
            got = self.azurite.blob(self.prefix + path)
            self.assertIsNotNone(got, path)
            bh, bbody = got
            self.assertEqual(bbody, body, path)
            self.assertEqual(bh["content-type"], one(h, "content-type"), path)
            self.assertEqual(bh["cache-control"], one(h, "cache-control"), path)
        self.stop_ok(srv)

    # ------------------------------------------------------------------

    def test_shared_key_from_a_file(self):
        key = self.write("account.key", ACCOUNT_KEY + "\n")
        rc, out, err = self.publish("--azblob-key-file", key)
        self.assertEqual(rc, 0, err)
        self.assertIn("%s openid/v1/jwks: written (missing)" % self.url(), out)
        self.assert_same_as_serve()
        h, _ = self.azurite.blob(self.prefix + JWKS)
        self.assertEqual(len(h["x-ms-meta-oidc_sha256"]), 64)
        rc, out, err = self.publish("--azblob-key-file", key)
        self.assertEqual(rc, 0, err)
        self.assertIn("%s .well-known/openid-configuration: unchanged" % self.url(), out)
        # a wrong key: Azurite refuses the signature, and the message says what to check
        wrong = self.write("wrong.key", base64.b64encode(os.urandom(64)).decode())
        rc, out, err = self.publish("--azblob-key-file", wrong)
        self.assertEqual(rc, 1)
        self.assertRegex(err, r"HTTP 403 .*check the account key \(--azblob-key-file or AZURE_STORAGE_KEY\)")
        rc, out, err = self.publish("--azblob-key-file", self.write("bad.key", "not base64!"))
        self.assertEqual(rc, 1)
        self.assertIn("--azblob-key-file is not a base64 account key", err)

    def test_sas_token_from_a_file(self):
        sas = self.write("sas", "?" + account_sas("rcw") + "\n")
        rc, out, err = self.publish("--azblob-sas-file", sas)
        self.assertEqual(rc, 0, err)
        self.assert_same_as_serve()
        # read-only: the write is refused
        self.azurite.request("PUT", "%s/%s%s" % (CONTAINER, self.prefix, JWKS),
                             {"x-ms-blob-type": "BlockBlob"}, b"{}")
        read_only = account_sas("r")
        rc, out, err = self.publish("--azblob-sas-file", self.write("sas-r", read_only))
        self.assertEqual(rc, 1, out)
        # the URL is shown with its query parameters' names, never the token
        self.assertRegex(err, r"PUT http://127\.0\.0\.1:\d+/devstoreaccount1/oidc/.*/openid/v1/jwks"
                              r"\?<redacted: sv, [a-z, ]*sig>: HTTP 403")
        self.assertNotIn(read_only.split("sig=")[1], err + out)
        # signed with another key
        rc, out, err = self.publish("--azblob-sas-file",
                                    self.write("sas-x", account_sas("rcw", base64.b64encode(os.urandom(64)).decode())))
        self.assertEqual(rc, 1, out)
        self.assertIn("HTTP 403", err)
        self.assertIn("the SAS token (--azblob-sas-file)", err)
        rc, out, err = self.publish("--azblob-sas-file", self.write("sas-bad", "sv=1 2"))
        self.assertEqual(rc, 1)
        self.assertIn("not a SAS token", err)

    def test_serve_with_the_environment_key_repairs_drift(self):
        env = {"AZURE_STORAGE_KEY": ACCOUNT_KEY}
        old = os.environ.get("AZURE_STORAGE_KEY")
        os.environ.update(env)
        try:
            srv = self.start_server(self.doc_args() + ["--publish-to", self.url(), "--azblob-endpoint",
                                                       self.azurite.endpoint, "--publish-check-interval", "1s"])
        finally:
            if old is None:
                os.environ.pop("AZURE_STORAGE_KEY")
            else:
                os.environ["AZURE_STORAGE_KEY"] = old
        served = srv.get(JWKS)[2]
        # the first push is over (written and read back): what is written from now on is a repair
        H.scrape_until(srv.admin_port, lambda s: (H.metric(s, "oidc_publish_attempts_total", target=self.url(),
                                                           result="written") or 0) >= 1, WAIT)
        self.assertEqual(self.azurite.blob(self.prefix + JWKS)[1], served)
        st, _, _ = self.azurite.request("PUT", "%s/%s%s" % (CONTAINER, self.prefix, JWKS),
                                        {"x-ms-blob-type": "BlockBlob", "x-ms-blob-content-type": "text/plain"},
                                        b'{"keys":[]}')
        self.assertEqual(st, 201)
        self.assertTrue(H.wait_until(lambda: "openid/v1/jwks was changed outside oidc-discovery; repaired (drift)"
                                     in srv.stderr(), WAIT), srv.stderr())
        h, body = self.azurite.blob(self.prefix + JWKS)
        self.assertEqual(body, served)
        self.assertEqual(h["content-type"], "application/jwk-set+json")
        self.stop_ok(srv)
        rc, out, err = H.run_once(["keys", "--publish-to", self.url(), "--azblob-endpoint", self.azurite.endpoint,
                                   *self.doc_args()], env=env)
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"azblob://devstoreaccount1/oidc/\S+ +openid/v1/jwks .* current\n")


if __name__ == "__main__":
    unittest.main()
