# SPDX-License-Identifier: Apache-2.0
"""A fleet on one endpoint (serve --issuers-dir): one server, one JSON file
per issuer.

a. three issuers on two hosts (two of them share localhost and differ by
   path) answer byte for byte, headers included (but Date and
   Last-Modified, which are the time of each process's read), what a
   one-issuer server with the same settings answers: GET, HEAD, a
   conditional GET, a CORS preflight, and 404 for what no issuer serves;
b. panva/jose and PyJWT, fetching each issuer's JWKS through the fleet
   server, verify that issuer's tokens and refuse another issuer's;
c. at start, a broken file, a file with a key that is not per issuer and
   two files claiming one issuer URL are refused, each logged with its
   file's name (both names for the clash), and the others are served;
d. live, under load on two untouched issuers (each request on a kept-alive
   connection, counted): a file added, changed, broken (its last good
   state keeps serving; /readyz?verbose, /metrics and the status page name
   it), fixed, a key file broken (its issuer's last good set serves; the
   server stays ready) and mended, a file claiming a served issuer's URL (refused naming the
   file that serves it) and a file removed, each awaited until served;
   not one request of the untouched issuers fails, changes its ETag or
   loses its connection;
e. 150 files at start (read on every CPU at once) are all served.

One fleet server and three one-issuer servers are shared by the cases.
"""

import http.client
import json
import os
import re
import shutil
import threading
import unittest

import oidc_harness as H

H.ensure_pyjwt()
try:
    import jwt  # PyJWT
except ImportError:  # reported by the test (H.pyjwt_problem)
    jwt = None

# Two hosts that resolve to the loopback for any client: issuers compare
# hosts without their port, so the URLs need none.
ISSUERS = {
    "one": ("http://localhost/c/1", "/c/1"),
    "two": ("http://localhost/c/2/", "/c/2"),  # a trailing slash, as kube-apiserver allows
    "root": ("http://127.0.0.1", ""),
}
VERIFY = "verify_token.mjs"


def write_json(path, obj):
    H.atomic_write(path, json.dumps(obj).encode())


class Fleet(H.SharedSetUpCase):
    TMP_PREFIX = "oidc-e2e-fleet-"

    @classmethod
    def _start(cls):
        keys = H.KeyFactory(cls.tmp)
        cls.keys = {"one": [keys.rsa()], "two": [keys.ec()]}
        cls.keys["root"] = [cls.keys["one"][0], keys.ec("P-384")]
        cls.dir = os.path.join(cls.tmp, "issuers")
        os.mkdir(cls.dir)
        settings = {"one": {}, "two": {"max-age": "5m", "jwks-content-type": "application/json"},
                    "root": {"api-audiences": "vault"}}
        for name, (issuer, _) in ISSUERS.items():
            doc = {"service-account-issuer": issuer, "service-account-key-file": [k.pub for k in cls.keys[name]]}
            doc.update(settings[name])
            write_json(os.path.join(cls.dir, name + ".json"), doc)
        # refused at start, each for its own reason
        with open(os.path.join(cls.dir, "broken.json"), "w") as f:
            f.write("{\"service-account-issuer\": ")
        write_json(os.path.join(cls.dir, "listens.json"),
                   {"service-account-issuer": "http://localhost/l", "listen": "127.0.0.1:1"})
        for name in ("dup-a", "dup-b"):
            write_json(os.path.join(cls.dir, name + ".json"),
                       {"service-account-issuer": "http://LOCALHOST:8443/dup/"})
        common = ["--allow-insecure-issuer", "--service-account-key-file", cls.keys["two"][0].pub]
        cls.fleet = cls._server(["--issuers-dir", cls.dir] + common)
        cls.single = {}
        for name, (issuer, _) in ISSUERS.items():
            args = ["--service-account-issuer", issuer] + common[:1]
            for k in cls.keys[name]:
                args += ["--service-account-key-file", k.pub]
            for key, value in settings[name].items():
                args += ["--" + key, value]
            cls.single[name] = cls._server(args)

    @classmethod
    def _server(cls, args):
        s = H.Server(args)
        cls.servers.append(s)
        return s.start()

    def fleet_request(self, method, host, path, headers=None):
        h = {"Host": host}
        h.update(headers or {})
        return self.fleet.request(method, path, h)

    def assert_same(self, name, method, doc, headers=None):
        """The fleet's answer for issuer name's doc is the one-issuer
        server's, byte for byte but Date and Last-Modified."""
        issuer, prefix = ISSUERS[name]
        host = "localhost" if "localhost" in issuer else "127.0.0.1"
        got = self.fleet_request(method, "%s:%d" % (host, self.fleet.port), prefix + doc, headers)
        want = self.single[name].request(method, doc, headers)
        for answer in (got, want):
            for varying in ("date", "last-modified"):
                answer[1].pop(varying, None)
        self.assertEqual(got, want, "%s %s of %s" % (method, doc, name))
        return got

    def test_a_byte_for_byte(self):
        for name in ISSUERS:
            with self.subTest(issuer=name):
                for doc in (H.DISCOVERY, H.JWKS):
                    status, headers, _ = self.assert_same(name, "GET", doc)
                    self.assertEqual(status, 200)
                    etag = H.one(headers, "etag")
                    self.assertEqual(self.assert_same(name, "GET", doc, {"If-None-Match": etag})[0], 304)
                    self.assert_same(name, "HEAD", doc)
                    self.assertEqual(self.assert_same(name, "OPTIONS", doc)[0], 204)
                    self.assertEqual(self.assert_same(name, "POST", doc)[0], 405)
        # the three ETags differ: three key sets
        etags = {self.assert_same(n, "GET", H.JWKS)[1]["etag"][0] for n in ISSUERS}
        self.assertEqual(len(etags), 3)

    def test_a_unknown_is_404(self):
        _, _, body404 = self.single["one"].get("/nope")
        for host, path in (("localhost", H.JWKS), ("localhost", "/c/3" + H.JWKS), ("localhost", "/c" + H.JWKS),
                           ("127.0.0.1", "/c/1" + H.JWKS), ("other.example", H.DISCOVERY),
                           ("localhost", "/c/1/nope"), ("localhost", "/c/1" + H.JWKS + "/"),
                           ("localhost", "/dup" + H.JWKS), ("localhost", "/l" + H.JWKS)):
            with self.subTest(host=host, path=path):
                status, _, body = self.fleet_request("GET", host, path)
                self.assertEqual((status, body), (404, body404))
        # hosts compare without regard to case, and without their port
        self.assertEqual(self.fleet_request("GET", "LocalHost:1", "/c/1" + H.JWKS)[0], 200)

    def test_b_real_clients_verify_each_issuer(self):
        if jwt is None:
            self.fail(H.pyjwt_problem())
        for name, (issuer, prefix) in ISSUERS.items():
            host = "localhost" if "localhost" in issuer else "127.0.0.1"
            jwks_url = "http://%s:%d%s%s" % (host, self.fleet.port, prefix, H.JWKS)
            pyjwk = jwt.PyJWKClient(jwks_url, cache_keys=False)
            for key in self.keys[name]:
                with self.subTest(issuer=name, alg=key.alg):
                    token = H.mint_token(key.priv, issuer, audiences=["vault"], sa="fleet-" + name,
                                         extra=["--allow-insecure-issuer"])
                    rc, out, err = H.run_node(VERIFY, jwks_url, issuer, "vault", token)
                    self.assertEqual(rc, 0, "jose refused %s's token:\n%s%s" % (name, out, err))
                    self.assertEqual(json.loads(out[3:])["payload"]["iss"], issuer)
                    claims = jwt.decode(token, pyjwk.get_signing_key_from_jwt(token).key, algorithms=[key.alg],
                                        audience="vault", issuer=issuer)
                    self.assertEqual(claims["sub"], "system:serviceaccount:default:fleet-" + name)
        # issuer two's JWKS does not hold issuer one's key
        token = H.mint_token(self.keys["one"][0].priv, ISSUERS["one"][0], audiences=["vault"],
                             extra=["--allow-insecure-issuer"])
        two = "http://localhost:%d/c/2%s" % (self.fleet.port, H.JWKS)
        rc, out, err = H.run_node(VERIFY, two, ISSUERS["one"][0], "vault", token)
        self.assertEqual(rc, 1, out + err)
        with self.assertRaises(jwt.PyJWKClientError):
            jwt.PyJWKClient(two, cache_keys=False).get_signing_key_from_jwt(token)

    def test_c_refused_at_start(self):
        log = self.fleet.stderr()
        broken = os.path.join(self.dir, "broken.json")
        self.assertIn("issuer file %s refused: config file %s: " % (broken, broken), log)
        listens = os.path.join(self.dir, "listens.json")
        self.assertIn("issuer file %s refused: config file %s: key \"listen\": is not a per-issuer setting"
                      % (listens, listens), log)
        a, b = (os.path.join(self.dir, n + ".json") for n in ("dup-a", "dup-b"))
        self.assertIn("issuer file %s refused: its issuer URL http://LOCALHOST:8443/dup/ is that of issuer file %s, "
                      "which claims it too" % (a, b), log)
        self.assertIn("issuer file %s refused: its issuer URL http://LOCALHOST:8443/dup/ is that of issuer file %s, "
                      "which claims it too" % (b, a), log)
        self.assertIn("serving 3 issuer(s) of %s" % self.dir, log)
        # the key gauges are the fleet's: every issuer's keys (1 + 1 + 2)
        self.assertEqual(self.metric("oidc_keys_published"), 4)
        # each issuer's reloader names its issuer
        self.assertIn("issuer one: published key set generation 1: 1 keys", log)
        self.assertIn("issuer root: published key set generation 1: 2 keys", log)


    # d -----------------------------------------------------------------
    def load(self, name, stop, counts):
        """Requests issuer name's JWKS on one kept-alive connection until
        stop is set; counts requests and failures (an error, another status
        or ETag than the first, a connection lost)."""
        issuer, prefix = ISSUERS[name]
        host = "localhost" if "localhost" in issuer else "127.0.0.1"
        c = http.client.HTTPConnection("127.0.0.1", self.fleet.port, timeout=H.SOCK_TIMEOUT)
        first = None
        while not stop.is_set():
            try:
                status, headers, _ = H.do_request(c, "GET", prefix + H.JWKS, {"Host": host})
                etag = headers.get("etag", [None])[0]
                first = first or etag
                ok = status == 200 and etag == first
            except (OSError, http.client.HTTPException) as e:
                ok = False
                counts[name + " error"] = repr(e)
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", self.fleet.port, timeout=H.SOCK_TIMEOUT)
            counts[name] = counts.get(name, 0) + 1
            counts[name + " failed"] = counts.get(name + " failed", 0) + (not ok)
        c.close()

    def served(self, prefix, want_status=200, max_age=None):
        """Waits until localhost's prefix JWKS answers want_status (and
        that max-age); True when it did."""
        def check():
            status, headers, _ = self.fleet_request("GET", "localhost", prefix + H.JWKS)
            return status == want_status and (max_age is None or
                                              headers["cache-control"] == ["public, max-age=%d" % max_age])
        return H.wait_until(check, 5)

    def admin(self, path):
        return H.admin_get(self.fleet.admin_port, path)

    def metric(self, name):
        return H.metric(H.scrape_metrics(self.fleet.admin_port), name)

    def test_d_live_under_load(self):
        stop, counts = threading.Event(), {}
        threads = [threading.Thread(target=self.load, args=(n, stop, counts)) for n in ("one", "root")]
        path = {n: os.path.join(self.dir, n + ".json") for n in ("new", "two", "thief")}
        two = {"service-account-issuer": ISSUERS["two"][0], "service-account-key-file": self.keys["two"][0].pub,
               "jwks-content-type": "application/json"}
        for t in threads:
            t.start()
        try:
            refused = self.metric("oidc_fleet_issuer_files_refused")
            # added
            write_json(path["new"], {"service-account-issuer": "http://localhost/c/new"})
            self.assertTrue(self.served("/c/new"), self.fleet.stderr())
            # changed
            write_json(path["two"], dict(two, **{"max-age": "2m"}))
            self.assertTrue(self.served("/c/2", max_age=120), self.fleet.stderr())
            # broken: the last good state serves
            H.atomic_write(path["two"], b'{"service-account-issuer": "http://localhost/c/2/", "max-age": 1.5}')
            pattern = "issuer file %s refused \\(its last good state keeps serving\\): config file" % re.escape(
                path["two"])
            self.assertEqual(H.wait_for_log(self.fleet, pattern, timeout=5), 1, self.fleet.stderr())
            self.assertTrue(self.served("/c/2", max_age=120))
            status, _, body = self.admin("/readyz?verbose")
            self.assertEqual(status, 200, body)
            self.assertIn(b"\ntwo refused (the last good state serves): config file %s: key \"max-age\"" %
                          path["two"].encode(), body)
            self.assertIn(b"\none ok http://localhost/c/1\n", body)
            self.assertEqual(self.metric("oidc_fleet_issuer_files_refused"), refused + 1)
            _, _, page = self.admin("/")
            self.assertIn(b"<td class=\"name\">two</td>", page)
            self.assertIn(b"refused (the last good state serves): config file", page)
            # fixed
            write_json(path["two"], two)
            self.assertTrue(self.served("/c/2", max_age=3600), self.fleet.stderr())
            self.assertEqual(self.metric("oidc_fleet_issuer_files_refused"), refused)
            # a served issuer's URL claimed by another file
            write_json(path["thief"], {"service-account-issuer": "http://localhost/c/1/"})
            pattern = "issuer file %s refused: its issuer URL http://localhost/c/1/ is that of issuer file %s, " \
                      "which serves it" % (re.escape(path["thief"]), re.escape(os.path.join(self.dir, "one.json")))
            self.assertEqual(H.wait_for_log(self.fleet, pattern, timeout=5), 1, self.fleet.stderr())
            os.unlink(path["thief"])
            # an issuer whose key file breaks keeps its last good set, and only it is reported
            kf_key = os.path.join(self.tmp, "kf.pub")
            shutil.copy(self.keys["root"][1].pub, kf_key)
            write_json(os.path.join(self.dir, "kf.json"),
                       {"service-account-issuer": "http://localhost/kf", "service-account-key-file": kf_key})
            self.assertTrue(self.served("/kf"), self.fleet.stderr())
            etag = self.fleet_request("GET", "localhost", "/kf" + H.JWKS)[1]["etag"]
            H.atomic_write(kf_key, b"-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n")
            pattern = "issuer kf \\(%s\\): its keys cannot be read, its last good set keeps serving: " % re.escape(
                os.path.join(self.dir, "kf.json"))
            self.assertEqual(H.wait_for_log(self.fleet, pattern, timeout=5), 1, self.fleet.stderr())
            status, headers, _ = self.fleet_request("GET", "localhost", "/kf" + H.JWKS)
            self.assertEqual((status, headers["etag"]), (200, etag))
            status, _, body = self.admin("/readyz?verbose")
            self.assertEqual(status, 200, body)
            self.assertIn(b"\nkf refused (the last good state serves): its keys cannot be read: ", body)
            shutil.copy(self.keys["root"][1].pub, kf_key)
            self.assertEqual(H.wait_for_log(self.fleet, "issuer kf .*: its keys are read again", timeout=5), 1,
                             self.fleet.stderr())
            os.unlink(os.path.join(self.dir, "kf.json"))
            # removed
            os.unlink(path["new"])
            self.assertTrue(self.served("/c/new", want_status=404), self.fleet.stderr())
        finally:
            stop.set()
            for t in threads:
                t.join()
        for name in ("one", "root"):
            self.assertGreater(counts.get(name, 0), 0)
            self.assertEqual(counts.get(name + " failed"), 0, counts)


    # e -----------------------------------------------------------------
    def test_e_many_issuers_read_in_parallel(self):
        # enough files that the start reads them on every CPU at once
        many = os.path.join(self.tmp, "many")
        os.mkdir(many)
        for i in range(150):
            write_json(os.path.join(many, "c%d.json" % i), {"service-account-issuer": "http://localhost/id/%d" % i})
        server = self._server(["--issuers-dir", many, "--allow-insecure-issuer", "--service-account-key-file",
                               self.keys["one"][0].pub])
        jwks = self.single["one"].get(H.JWKS)[2]
        for i in range(150):
            status, _, body = server.request("GET", "/id/%d%s" % (i, H.DISCOVERY), {"Host": "localhost"})
            self.assertEqual(status, 200)
            self.assertEqual(json.loads(body)["issuer"], "http://localhost/id/%d" % i)
            self.assertEqual(server.request("GET", "/id/%d%s" % (i, H.JWKS), {"Host": "localhost"})[2], jwks)
        self.assertIn("serving 150 issuer(s) of %s" % many, server.stderr())


if __name__ == "__main__":
    unittest.main()
