# SPDX-License-Identifier: Apache-2.0
"""The external signer on an HA control plane: three signer processes,
each with a --signing-key-dir of its own, sharing their keys, roles and
schedule through a real three-member etcd cluster (Debian's etcd-server,
TLS with client-certificate auth, harness_etcd.py), one cluster for the
whole file. Under Sign load from python3-grpcio:

- the first signer uploads its keys (sealed), the others take etcd's set
  and say so; exactly one rotates; every kid that signs anywhere was
  published by all three at least --publish-ahead before, and stays
  published on all three until --max-token-lifetime after its last
  signature;
- kill -9 of the rotator: another takes over within the lease TTL and a
  second, and the schedule goes on; a stopped follower holds back the
  promotion of a key it does not publish until its lease lapses;
- no value under the prefix holds a private key in a readable form;
- a wrong encryption key refuses the start naming the flag; a corrupt and
  a foreign value under the prefix are refused or reported, naming the
  etcd key; etcd certificates that are wrong or expired are named.

Periods as in test_signer_rotation.py (seconds), --etcd-lease-ttl 2s."""

import base64
import json
import os
import re
import signal
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("grpc", "grpc_tools", "jwt", "cryptography")

import extsigner_client as X  # noqa: E402
import harness_etcd as E  # noqa: E402

ISSUER = "https://issuer.example"
AHEAD, LIFETIME = 2.0, 3.0
LEASE_TTL = 2
FLAGS = ["--signing-key-type", "ec-p256", "--max-age", "1s", "--publish-ahead", "2s", "--rotation-period", "3s",
         "--max-token-lifetime", "3s", "--allow-short-token-lifetime", "--token-leeway", "0",
         "--key-reload-interval", "1s", "--external-signer-threads", "2", "--etcd-lease-ttl", "%ds" % LEASE_TTL]
RUN = 16.0  # seconds of load: three rotations or more, the takeover among them

cluster = None  # one cluster for every test of the module that runs (see use_cluster)


def setUpModule():
    use_cluster(E.EtcdCluster())


def tearDownModule():
    if cluster is not None:
        cluster.close()


def use_cluster(c):
    """Makes c the cluster the tests of EtcdSignerCase use (another test
    module that imports this one passes its own)."""
    global cluster
    cluster = c


class EtcdSignerCase(X.SignerTestCase):
    """What the tests of signers on etcd share (test_signer_etcd_faults.py
    too): each test its own --etcd-prefix on the module's cluster, an
    encryption key, signers started with the etcd flags, and the checks."""

    def setUp(self):
        super().setUp()
        self.prefix = "/t%d-%s/" % (os.getpid(), self._testMethodName)
        self.seal = self.seal_file("seal.key", os.urandom(32).hex())
        self.watch = []

    def tearDown(self):
        for w in self.watch:
            w.stop()
        super().tearDown()

    def seal_file(self, name, text, mode=0o600):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text + "\n")
        os.chmod(path, mode)
        return path

    def etcd_flags(self, seal=None, cert=None, ca=None):
        cert = cert or (cluster.cert, cluster.key)
        return ["--etcd-servers", cluster.servers, "--etcd-cafile", ca or cluster.ca, "--etcd-certfile", cert[0],
                "--etcd-keyfile", cert[1], "--etcd-prefix", self.prefix,
                "--signing-key-encryption-key-file", seal or self.seal]

    def argv(self, name, **kw):
        return ["--service-account-issuer", ISSUER, "--signing-key-dir", os.path.join(self.tmp, name),
                "--external-signer-listen", "unix:" + os.path.join(self.tmp, name + ".sock")] + FLAGS + \
            self.etcd_flags(**kw)

    def start_signer(self, name, **kw):
        srv = self.start_server(self.argv(name, **kw))
        srv.sock = os.path.join(self.tmp, name + ".sock")
        srv.name = name
        self.assertTrue(X.wait_socket(srv.sock), srv.stderr())
        return srv

    def observe(self, srv, loads=1):
        """Starts a JWKS sampler and Sign loads on srv; returns them."""
        return X.observe(srv, ISSUER, self.watch, loads)

    def rotators(self, servers):
        return [s for s in servers
                if H.metric(H.scrape_metrics(s.admin_port), "oidc_signer_lock_held") == 1]

    def wait_one_rotator(self, servers, timeout):
        found = H.wait_until(lambda: len(self.rotators(servers)) == 1, timeout)
        self.assertTrue(found, "not exactly one rotator:\n" + "\n".join(s.stderr()[-3000:] for s in servers))
        return self.rotators(servers)[0]

    # the promises, over every signer -------------------------------------
    def check_everywhere(self, samples, signs, first_kid):
        """Every kid that signed on any signer was in the JWKS of every
        signer (alive then) at least AHEAD before its first signature anywhere, and (for
        kids whose last signature is well before the end of that signer's
        samples: the killed one stopped early) still there LIFETIME after
        its last signature anywhere."""
        first, last = {}, {}
        for t0, t1, kid in signs:
            first[kid] = min(first.get(kid, t0), t0)
            last[kid] = max(last.get(kid, t1), t1)
        for name, ss in samples.items():
            end = max(x[1] for x in ss)
            for kid, t0 in first.items():
                if kid == first_kid or t0 > end:
                    continue  # the first key signs at once; the killed signer saw no later ones
                shown = X.publication(ss, kid)
                self.assertIsNotNone(shown, "kid %s signed but never published by %s" % (kid, name))
                self.assertGreaterEqual(t0 - shown[0], AHEAD,
                                        "kid %s signed %.3fs after %s published it" % (kid, t0 - shown[0], name))
            for kid, t1 in last.items():
                if t1 + LIFETIME + 2 > end:
                    continue
                shown = X.publication(ss, kid)
                self.assertGreaterEqual(shown[1] - t1, LIFETIME,
                                        "kid %s left %s's JWKS %.3fs after its last signature" % (kid, name,
                                                                                                   shown[1] - t1))
        return first

    # tests ---------------------------------------------------------------
    def rotation_row(self, srv):
        """The status page's word on rotation across the signers."""
        tables = H.html_tables(H.admin_get(srv.admin_port, "/")[2].decode())
        return H.html_rows(tables, "reload").get("key rotation (etcd)", "")

    def kids_now(self, srv):
        return set(H.jwks_kids(srv.get(H.JWKS)[2]))

    def wait_new_kid(self, srv, seen, timeout):
        """Waits for a kid srv publishes that is not in seen; returns it."""
        got = H.wait_until(lambda: self.kids_now(srv) - seen, timeout)
        self.assertTrue(got, "no new key on %s:\n%s" % (srv.name, srv.stderr()[-3000:]))
        return got


class SignerOnEtcd(EtcdSignerCase):

    def test_three_signers_rotate_as_one_and_survive_the_rotators_death(self):
        a = self.start_signer("a")
        self.assertTrue(H.wait_for_log(a, r"etcd held no key set under .*: uploaded", 1, 10), a.stderr())
        b = self.start_signer("b")
        c = self.start_signer("c")
        first_kid = H.jwks_kids(a.get(H.JWKS)[2])[0]
        for s in (b, c):
            self.assertIn("took etcd's key set", s.stderr())
            self.assertEqual(H.jwks_kids(s.get(H.JWKS)[2]), [first_kid])
        servers = [a, b, c]
        rotator = self.wait_one_rotator(servers, 10)
        observed = {s.name: self.observe(s) for s in servers}
        time.sleep(RUN / 2 * H.SLOW)
        # kill -9 the rotator mid-schedule: another takes over within the
        # lease TTL and a second (checked with slack for a loaded machine)
        killed_at = time.monotonic()
        rotator.kill()
        for t in [observed[rotator.name][0]] + observed[rotator.name][1]:
            t.stop()
        rest = [s for s in servers if s is not rotator]
        new = self.wait_one_rotator(rest, (LEASE_TTL + 1) * 3)
        took = time.monotonic() - killed_at
        self.assertIn("rotates the keys from now on", new.stderr())
        time.sleep(RUN / 2 * H.SLOW)
        for s in rest:
            for t in [observed[s.name][0]] + observed[s.name][1]:
                t.stop()
        samples = {n: o[0].samples for n, o in observed.items()}
        signs = [x for o in observed.values() for load in o[1] for x in load.signs]
        failures = [f for n, o in observed.items() if n != rotator.name for load in o[1] for f in load.failures]
        self.assertEqual(failures, [], "every Sign on the live signers answered")
        kids = self.check_everywhere(samples, signs, first_kid)
        self.assertGreaterEqual(len(kids), 3, "rotations went on: %s" % new.stderr()[-3000:])
        after = {kid for t0, t1, kid in signs if t0 > killed_at + took + 1}
        self.assertTrue(after - {k for t0, t1, k in signs if t1 < killed_at},
                        "a key newer than the kill signed: the schedule continued")
        # `keys` shows each key's source, and the status page does too
        live = rest[0]
        rc, out, err = H.run_once(["keys", "--signing-key-dir", os.path.join(self.tmp, live.name), "--output", "json",
                                   "--signing-key-type", "ec-p256"] + self.etcd_flags())
        self.assertEqual(rc, 0, err)
        rows = json.loads(out)["keys"]
        self.assertTrue(rows and all(r["key_store"] == "etcd" for r in rows), out)
        tables = H.html_tables(H.admin_get(live.admin_port, "/")[2].decode())
        self.assertTrue(any("(etcd)" in cell for row in tables.get("keys", []) for cell in row), tables.get("keys"))
        # nothing under the prefix is a private key in a readable form
        values = cluster.range_prefix(self.prefix)
        self.assertIn(self.prefix + "rotation", values)
        for key, value in values.items():
            for needle in (b"PRIVATE KEY", b'"d"', b"\x02\x01\x00\x30"):
                self.assertNotIn(needle, value, "%s holds %r" % (key, needle))
            if "/keys/" in key:
                self.assertTrue(value.startswith(b"ODS1"), key)
        # the sealed value is not the DER either: the private scalar of
        # each local key file appears nowhere under the prefix
        for s in rest:
            d = os.path.join(self.tmp, s.name)
            for name in os.listdir(d):
                if name.startswith("key-"):
                    pem = H.read_bytes(os.path.join(d, name)).decode()
                    der = base64.b64decode("".join(l for l in pem.splitlines() if not l.startswith("-----")))
                    for value in values.values():
                        self.assertNotIn(der[-40:], value)

    def test_no_promotion_before_every_live_signer_publishes_the_next_key(self):
        """A follower that stops answering (SIGSTOP) keeps its report, and
        its lease for --etcd-lease-ttl (long here): the next key it does
        not publish is not promoted meanwhile; once it goes on, it takes
        the key, reports it, and the promotion follows."""
        ttl = ["--etcd-lease-ttl", "60s"]
        a = self.start_server(self.argv("a") + ttl)
        a.sock, a.name = os.path.join(self.tmp, "a.sock"), "a"
        self.assertTrue(X.wait_socket(a.sock), a.stderr())
        self.assertTrue(H.wait_for_log(a, r"rotates the keys from now on", 1, 10), a.stderr())
        b = self.start_server(self.argv("b") + ttl)
        b.sock, b.name = os.path.join(self.tmp, "b.sock"), "b"
        self.assertTrue(X.wait_socket(b.sock), b.stderr())
        def reports():
            return {k: json.loads(v) for k, v in cluster.range_prefix(self.prefix + "nodes/").items()}
        self.assertTrue(H.wait_until(lambda: len(reports()) == 2, 10), reports())
        b.proc.send_signal(signal.SIGSTOP)
        try:
            # a key of a's that b's report (what the rotator reads) lacks
            reported = set.intersection(*(set(r["published"]) for r in reports().values()))
            nxt = self.wait_new_kid(a, reported, 15)
            # well past --rotation-period and --publish-ahead plus slack
            time.sleep(3 * AHEAD + 2)
            state = json.loads(H.read_bytes(os.path.join(self.tmp, "a", "rotation.json")))
            roles = {k["kid"]: k["role"] for k in state["keys"]}
            self.assertEqual([roles[k] for k in nxt], ["next"], "promoted while b did not publish it: %s" % roles)
        finally:
            b.proc.send_signal(signal.SIGCONT)
        self.assertTrue(H.wait_for_log(a, r"kid=%s promoted to signing" % re.escape(next(iter(nxt))), 1, 20),
                        a.stderr()[-3000:])

    def test_a_one_node_signer_becomes_ha_and_another_directory_gives_way(self):
        """A signer that ran alone (no etcd) uploads its keys when it is
        started with etcd on an empty prefix: the same key signs, no token
        breaks. Another node whose directory holds keys of its own takes
        etcd's set instead and says so."""
        def alone(name):
            srv = self.start_server(["--service-account-issuer", ISSUER, "--signing-key-dir",
                                     os.path.join(self.tmp, name), "--signing-key-type", "ec-p256"])
            kids = self.kids_now(srv)
            self.stop_ok(srv)
            return kids
        solo_kids = alone("solo")
        other_kids = alone("other")
        self.assertNotEqual(solo_kids, other_kids)
        solo = self.start_signer("solo")
        self.assertIn("uploaded", solo.stderr())
        self.assertTrue(solo_kids <= self.kids_now(solo), "the one-node signer's key is still published")
        other = self.start_signer("other")
        self.assertRegex(other.stderr(), r"other's keys differ from etcd's .*: taking etcd's set")
        self.assertEqual(self.kids_now(other), self.kids_now(solo))

    def test_a_wrong_encryption_key_refuses_the_start_naming_the_flag(self):
        self.start_signer("a")
        wrong = self.seal_file("wrong.key", os.urandom(32).hex())
        rc, out, err = H.run_once(["serve"] + self.argv("b", seal=wrong) + ["--listen", "127.0.0.1:0",
                                                                          "--admin-listen", "none"], timeout=30)
        self.assertNotEqual(rc, 0)
        self.assertIn("--signing-key-encryption-key-file", err)
        self.assertRegex(err, re.escape(self.prefix) + r"keys/\S+ does not open")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "b", "rotation.json")), "nothing adopted")
        loose = self.seal_file("loose.key", os.urandom(32).hex(), 0o644)
        rc, out, err = H.run_once(["serve"] + self.argv("c", seal=loose) + ["--listen", "127.0.0.1:0",
                                                                          "--admin-listen", "none"], timeout=30)
        self.assertNotEqual(rc, 0)
        self.assertIn("--signing-key-encryption-key-file %s: mode 0644" % loose, err)

    def test_a_corrupt_value_is_refused_and_a_foreign_one_reported(self):
        a = self.start_signer("a")
        self.assertTrue(H.wait_for_log(a, r"uploaded", 1, 10), a.stderr())
        cluster.put(self.prefix + "notes", "hello")
        b = self.start_signer("b")
        self.assertTrue(H.wait_for_log(b, re.escape(self.prefix) + r"notes is none of the signer's", 1, 10),
                        b.stderr())
        kid = H.jwks_kids(a.get(H.JWKS)[2])[0]
        victim = self.prefix + "keys/" + kid
        sealed = cluster.range_prefix(victim)[victim]
        cluster.put(victim, sealed[:-5])
        rc, out, err = H.run_once(["serve"] + self.argv("c") + ["--listen", "127.0.0.1:0", "--admin-listen", "none"],
                                  timeout=30)
        self.assertNotEqual(rc, 0)
        self.assertIn(victim + " does not open", err)
        # the running signers go on signing with their copies, and say why
        # nothing rotates
        for s in (a, b):
            self.assertTrue(H.wait_for_log(s, r"rotation paused.*" + re.escape(victim) + " does not open", 1, 10),
                            s.stderr())
            X.Signer(s.sock).token(X.claims(ISSUER))
        self.assertNotEqual(cluster.range_prefix(victim)[victim], sealed, "never overwritten by a signer")

    def test_etcd_certificates_that_are_wrong_or_expired_are_named(self):
        ca, crt, key = cluster.foreign_ca()
        expired = cluster.client_cert("expired", not_after=time.time() - 30)
        cases = [({"ca": ca}, "--etcd-cafile"), ({"cert": (crt, key)}, "--etcd-certfile"),
                 ({"cert": expired}, "--etcd-certfile")]
        for kw, flag in cases:
            # with an empty directory it cannot start: the message names the flag
            rc, out, err = H.run_once(["serve"] + self.argv("x", **kw) + ["--listen", "127.0.0.1:0",
                                                                        "--admin-listen", "none"], timeout=60)
            self.assertNotEqual(rc, 0, kw)
            self.assertIn(flag, err, kw)


if __name__ == "__main__":
    unittest.main()
