# SPDX-License-Identifier: Apache-2.0
"""A fleet of mirrored issuers (serve --issuers-dir, files with `upstream`):
each issuer is read from its own cluster's API server (stand-ins,
apiserver_standin.py), by the fleet's mirror pool.

a. every issuer serves its upstream's documents byte for byte;
b. one upstream rotating its keys is followed, while the other issuers
   keep their ETags;
c. one upstream failing (answering 500: a port closed under a kept-alive
   connection goes on answering on it until its idle timeout) leaves its
   last good bytes serving and is
   reported for that issuer alone (/readyz?verbose stays 200, names it);
   the others keep serving; it recovers when the upstream answers again;
d. the process's thread count (/proc/PID/status Threads) does not grow
   when 50 more mirrored issuers are added;
e. a file changed but not in its upstream settings goes on serving its
   upstream's set without a gap.

One fleet server and three stand-ins are shared by the cases.
"""

import json
import os
import unittest

import oidc_harness as H
H.ensure_system_modules("prometheus_client")
from apiserver_standin import StandInAPIServer

NAMES = ("a", "b", "c")
FOLLOW = 30.0  # bounds the wait for an event (stretched by SLOW), not a timing requirement


def issuer_of(name):
    return "http://localhost/m/" + name


def threads_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads line for %d" % pid)


class FleetMirror(H.SharedSetUpCase):
    TMP_PREFIX = "oidc-e2e-fleet-mirror-"

    @classmethod
    def _start(cls):
        cls.apis = {}
        cls.keys = H.KeyFactory(cls.tmp)
        cls.token = os.path.join(cls.tmp, "token")
        H.atomic_write(cls.token, b"token-one\n")
        cls.dir = os.path.join(cls.tmp, "issuers")
        os.mkdir(cls.dir)
        for name in NAMES:
            api = StandInAPIServer(os.path.join(cls.tmp, "api-" + name), tokens=("token-one",))
            api.__enter__()
            cls.cleanups.append(api.stop)
            cls.apis[name] = api
            api.set_documents(issuer_of(name), [cls.keys.rsa(), cls.keys.ec()])
            cls.write(name, api)
        # the command line's upstream settings are every file's defaults
        cls.server = H.Server(["--issuers-dir", cls.dir, "--allow-insecure-issuer", "--upstream-token-file",
                               cls.token, "--upstream-refresh-interval", "1s"])
        cls.servers.append(cls.server)
        cls.server.start()
        for name in NAMES:
            cls.wait_jwks(name, cls.apis[name].document(H.JWKS))

    @classmethod
    def write(cls, name, api, issuer=None):
        doc = {"service-account-issuer": issuer or issuer_of(name), "upstream": api.url,
               "upstream-ca-file": api.ca_file}
        H.atomic_write(os.path.join(cls.dir, name + ".json"), json.dumps(doc).encode())

    @classmethod
    def get(cls, name, doc):
        return cls.server.request("GET", "/m/" + name + doc, {"Host": "localhost:%d" % cls.server.port})

    @classmethod
    def wait_jwks(cls, name, body):
        last = [None]

        def check():
            last[0] = cls.get(name, H.JWKS)
            return last[0][0] == 200 and last[0][2] == body
        if not H.wait_until(check, FOLLOW):
            raise AssertionError("issuer %s: JWKS not the upstream's: %r\n%s" % (name, last[0],
                                                                                cls.server.stderr()[-3000:]))

    def etags(self):
        return {name: H.one(self.get(name, H.JWKS)[1], "etag") for name in NAMES}

    def readyz_verbose(self):
        st, _, body = H.admin_get(self.server.admin_port, "/readyz?verbose")
        return st, body.decode()

    def test_a_byte_for_byte(self):
        for name in NAMES:
            for doc in (H.DISCOVERY, H.JWKS):
                with self.subTest(issuer=name, doc=doc):
                    st, h, body = self.get(name, doc)
                    self.assertEqual(st, 200, body)
                    self.assertEqual(body, self.apis[name].document(doc))
                    self.assertEqual(H.one(h, "cache-control"), "public, max-age=3600")
        st, body = self.readyz_verbose()
        self.assertEqual(st, 200, body)
        for name in NAMES:
            self.assertIn("%s ok %s" % (name, issuer_of(name)), body)
        # the process's upstream metrics sum the issuers' reads; the last
        # success is the oldest of the issuers'
        samples = H.scrape_metrics(self.server.admin_port)
        self.assertGreaterEqual(H.metric(samples, "oidc_upstream_fetches_total", result="ok"), len(NAMES))
        self.assertGreater(H.metric(samples, "oidc_upstream_last_success_timestamp_seconds"), 0)

    def test_b_one_rotates_the_others_keep_their_etags(self):
        before = self.etags()
        self.apis["b"].set_documents(issuer_of("b"), [self.keys.ec("P-384")])
        self.wait_jwks("b", self.apis["b"].document(H.JWKS))
        after = self.etags()
        self.assertNotEqual(after["b"], before["b"])
        self.assertEqual({n: after[n] for n in ("a", "c")}, {n: before[n] for n in ("a", "c")})
        self.assertGreaterEqual(H.count_log(self.server, r"issuer b: --upstream \S+ changed its keys"), 1)

    def test_c_one_down_the_others_serve(self):
        before = self.etags()
        served = self.get("c", H.JWKS)[2]
        self.apis["c"].set_mode("500")
        try:
            self.assertTrue(H.wait_until(lambda: "c refused" in self.readyz_verbose()[1], FOLLOW),
                            "%r\n%s" % (self.readyz_verbose(), self.server.stderr()[-3000:]))
            st, body = self.readyz_verbose()
            self.assertEqual(st, 200, "one issuer's upstream does not make the fleet unready: " + body)
            self.assertRegex(body, r"c refused \(the last good state serves\): its upstream fails")
            self.assertIn("a ok", body)
            self.assertEqual(H.count_log(self.server, r"issuer c: reading --upstream failed \(status\)"), 1)
            self.assertEqual(self.get("c", H.JWKS)[2], served, "c keeps its last good bytes")
            self.assertEqual(self.etags(), before)
        finally:
            self.apis["c"].set_mode("ok")
        self.assertTrue(H.wait_until(lambda: "c ok" in self.readyz_verbose()[1], FOLLOW),
                        "%r\n%s" % (self.readyz_verbose(), self.server.stderr()[-3000:]))
        self.assertEqual(self.etags(), before)

    def test_d_threads_do_not_grow_with_the_issuers(self):
        pid = self.server.proc.pid
        before = threads_of(pid)
        # 50 more issuers, each mirrored (from stand-in a, which names
        # another issuer: every read is an answer the mirror refuses, and
        # each is read again and again on its own schedule)
        mirrored = H.count_log(self.server, r"mirroring upstream")
        for i in range(50):
            self.write("x%02d" % i, self.apis["a"], issuer="http://localhost/x/%d" % i)
        try:
            self.assertEqual(H.wait_for_log(self.server, r"mirroring upstream", mirrored + 50, FOLLOW),
                             mirrored + 50)
            self.assertEqual(H.wait_for_log(self.server, r"issuer x\d\d: .*is not --service-account-issuer", 50, FOLLOW), 50,
                             self.server.stderr()[-3000:])
            self.assertEqual(threads_of(pid), before)
            self.assertTrue(H.wait_until(lambda: H.metric(H.scrape_metrics(self.server.admin_port),
                                                          "oidc_upstream_issuer_mismatch") == 50, FOLLOW),
                            "the issuers whose upstream names another issuer are counted")
        finally:
            for i in range(50):
                os.unlink(os.path.join(self.dir, "x%02d.json" % i))
        self.assertEqual(H.wait_for_log(self.server, r"issuer x\d\d removed", 50, FOLLOW), 50)
        self.assertEqual(threads_of(pid), before)
        self.assertEqual(self.get("a", H.JWKS)[2], self.apis["a"].document(H.JWKS))

    def test_e_a_changed_file_keeps_its_mirrored_set(self):
        """A file changed in what it serves but not in its upstream
        settings: its new reloader starts from the last good set (no 503
        until the next read), and the upstream's bytes stay."""
        body = self.apis["a"].document(H.JWKS)
        H.atomic_write(os.path.join(self.dir, "a.json"), json.dumps({
            "service-account-issuer": issuer_of("a"), "upstream": self.apis["a"].url,
            "upstream-ca-file": self.apis["a"].ca_file, "jwks-content-type": "application/json"}).encode())
        seen = []

        def changed():
            st, h, got = self.get("a", H.JWKS)
            seen.append((st, got == body))
            return st == 200 and H.one(h, "content-type") == "application/json"
        self.assertTrue(H.wait_until(changed, FOLLOW), self.server.stderr()[-3000:])
        self.assertEqual([x for x in seen if x != (200, True)], [], "every answer was the upstream's set")
        self.assertEqual(self.get("a", H.JWKS)[2], body)


if __name__ == "__main__":
    unittest.main()
