# SPDX-License-Identifier: Apache-2.0
"""A fleet publishing to object storage (serve --issuers-dir --publish-to),
against the S3 stand-in (s3_standin.py, SigV4 checked with botocore):

a. the command line's --publish-to is every issuer's default, each under
   its issuer URL's path (s3://oidc/fleet -> fleet/c/1/...); a file's own
   publish-to is taken as it is; the bucket holds, for each issuer, the
   bytes, Content-Type and Cache-Control the fleet serves for it;
b. a rotation of one issuer's key file reaches its objects, and the other
   issuer's objects are not rewritten.
"""

import json
import os
import shutil
import unittest

import oidc_harness as H
H.ensure_system_modules("botocore")
from oidc_harness import DISCOVERY, JWKS, one  # noqa: E402
from s3_standin import S3Standin  # noqa: E402

BUCKET = "oidc"
KEY_ID, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
# name -> (issuer, path on the fleet server, prefix in the bucket)
ISSUERS = {"one": ("http://localhost/c/1", "/c/1", "fleet/c/1"),
           "two": ("http://localhost/c/2", "/c/2", "own-two")}
WAIT = 20.0


class FleetPublish(H.SharedSetUpCase):
    TMP_PREFIX = "oidc-e2e-fleet-publish-"

    @classmethod
    def _start(cls):
        cls.s3 = S3Standin(KEY_ID, SECRET, region="eu-west-1", buckets=[BUCKET]).start()
        cls.cleanups.append(cls.s3.stop)
        keys = H.KeyFactory(cls.tmp)
        cls.keys = keys
        cls.dir = os.path.join(cls.tmp, "issuers")
        os.mkdir(cls.dir)
        cls.keyfile = {}
        for name, (issuer, _, _) in ISSUERS.items():
            cls.keyfile[name] = os.path.join(cls.tmp, name + ".pub")
            shutil.copy(keys.rsa().pub, cls.keyfile[name])
            doc = {"service-account-issuer": issuer, "service-account-key-file": cls.keyfile[name]}
            if name == "two":
                doc["publish-to"] = "s3://%s/own-two" % BUCKET
            H.atomic_write(os.path.join(cls.dir, name + ".json"), json.dumps(doc).encode())
        env = {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            cls.server = H.Server(["--issuers-dir", cls.dir, "--allow-insecure-issuer", "--publish-to",
                                   "s3://%s/fleet" % BUCKET, "--s3-endpoint", cls.s3.endpoint, "--s3-region",
                                   "eu-west-1", "--publish-check-interval", "1s"])
            cls.servers.append(cls.server)
            cls.server.start()
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def served(self, name, doc):
        return self.server.request("GET", ISSUERS[name][1] + doc, {"Host": "localhost:%d" % self.server.port})

    def in_bucket(self, name, doc):
        return self.s3.get(BUCKET, ISSUERS[name][2] + doc)

    def wait_bucket(self, name):
        def same():
            return all((self.in_bucket(name, d) or {}).get("body") == self.served(name, d)[2]
                       for d in (DISCOVERY, JWKS))
        self.assertTrue(H.wait_until(same, WAIT), "%s's objects are not what it serves; log:\n%s"
                        % (name, self.server.stderr()[-3000:]))

    def test_a_each_issuer_under_its_prefix(self):
        for name in ISSUERS:
            self.wait_bucket(name)
            for doc in (DISCOVERY, JWKS):
                st, h, body = self.served(name, doc)
                self.assertEqual(st, 200)
                o = self.in_bucket(name, doc)
                self.assertEqual(o["body"], body)
                self.assertEqual(o["content_type"], one(h, "content-type"))
                self.assertEqual(o["cache_control"], one(h, "cache-control"))
        self.assertIsNone(self.s3.get(BUCKET, "fleet/c/2" + JWKS), "a file's own publish-to replaces the default")

    def test_b_one_rotates_the_other_is_not_rewritten(self):
        for name in ISSUERS:
            self.wait_bucket(name)
        before = self.in_bucket("two", JWKS)
        old = self.in_bucket("one", JWKS)["body"]
        H.atomic_write(self.keyfile["one"], H.read_bytes(self.keys.ec().pub))
        self.assertTrue(H.wait_until(lambda: self.in_bucket("one", JWKS)["body"] != old, WAIT),
                        self.server.stderr()[-3000:])
        self.wait_bucket("one")
        self.assertEqual(self.in_bucket("two", JWKS), before)


if __name__ == "__main__":
    unittest.main()
