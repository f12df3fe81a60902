# SPDX-License-Identifier: Apache-2.0
"""The external signer on etcd through etcd's faults (test_signer_etcd.py's
set-up, a cluster of this file's own): the etcd leader killed (rotation
goes on), quorum lost (every signer keeps signing, nothing rotates,
/readyz stays ready, the log, /metrics and the status page say rotation
is paused and why, an overdue rotation is a loud warning), a signer
restarted while etcd is down (it signs from its local copy), quorum back
(rotation resumes with no operator); every member frozen (SIGSTOP: the
client's calls hang instead of failing) while the keys rotate: Sign
answers all along on every signer, the rotator's included, and rotation
resumes when etcd thaws."""

import os
import signal
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("grpc", "grpc_tools", "jwt", "cryptography")

import extsigner_client as X  # noqa: E402
import harness_etcd as E  # noqa: E402
import test_signer_etcd as T  # noqa: E402

ISSUER, AHEAD = T.ISSUER, T.AHEAD


def setUpModule():
    T.use_cluster(E.EtcdCluster())


def tearDownModule():
    if T.cluster is not None:
        T.cluster.close()


class EtcdFaults(T.EtcdSignerCase):

    def test_etcd_faults_pause_rotation_never_signing(self):
        a, b, c = (self.start_signer(n) for n in "abc")
        servers = [a, b, c]
        self.wait_one_rotator(servers, 10)
        _, loads = zip(*(self.observe(s) for s in (a, b)))
        loads = [l for ls in loads for l in ls]
        stopped = []
        try:
            # the etcd leader dies: a new one is elected, rotation goes on
            leader = H.wait_until(T.cluster.leader, 10)
            self.assertIsNotNone(leader)
            T.cluster.stop_member(leader)
            stopped.append(leader)
            self.wait_new_kid(a, self.kids_now(a), 20)
            T.cluster.start_member(leader)
            stopped.remove(leader)
            # quorum lost: two of three members stop
            for i in (0, 1):
                T.cluster.stop_member(i)
                stopped.append(i)
            for s in servers:
                self.assertTrue(H.wait_for_log(s, r"rotation paused, signing goes on", 1, 20), s.stderr()[-3000:])
                m = H.scrape_until(s.admin_port, lambda m: H.metric(m, "oidc_signer_store_reachable") == 0, 10)
                self.assertEqual(H.metric(m, "oidc_signer_store_reachable"), 0)
                self.assertEqual(H.metric(m, "oidc_signer_lock_held"), 0, "nobody rotates without etcd")
                self.assertEqual(H.admin_get(s.admin_port, "/readyz")[0], 200, "signing must not stop")
                self.assertTrue(H.wait_until(lambda: self.rotation_row(s).startswith("paused: "), 10),
                                self.rotation_row(s))
            kids = {s.name: self.kids_now(s) for s in servers}
            time.sleep(2 * AHEAD)  # more than a rotation period's worth of the schedule
            for s in servers:
                self.assertEqual(self.kids_now(s), kids[s.name], "%s rotated without etcd" % s.name)
            # a signer restarted while etcd is down starts from its copy and signs
            self.stop_ok(c)
            c = self.start_signer("c")
            self.assertIn("rotation paused", c.stderr())
            X.Signer(c.sock).token(X.claims(ISSUER))
            # an overdue rotation is a loud warning, never a reason to stop
            self.assertTrue(H.wait_for_log(a, r"ROTATION OVERDUE: .*Rotation is paused", 1, 15), a.stderr()[-3000:])
            X.Signer(a.sock).token(X.claims(ISSUER))
            # quorum back: rotation resumes with no operator
            for i in (0, 1):
                T.cluster.start_member(i)
                stopped.remove(i)
            for s in (a, b, c):
                self.assertTrue(H.wait_for_log(s, r"etcd answers again; rotation resumes", 1, 30), s.stderr()[-3000:])
            self.wait_one_rotator([a, b, c], 20)
            self.wait_new_kid(a, kids["a"], 20)
            self.assertTrue(H.wait_until(lambda: self.rotation_row(a) == "running", 10), self.rotation_row(a))
        finally:
            for i in stopped:
                T.cluster.start_member(i)
        for l in loads:
            l.stop()
        self.assertEqual([f for l in loads for f in l.failures], [], "every Sign answered through the faults")

    def test_sign_never_waits_on_a_frozen_etcd(self):
        a, b = self.start_signer("a"), self.start_signer("b")
        rotator = self.wait_one_rotator([a, b], 10)
        loads = [l for s in (a, b) for l in self.observe(s)[1]]
        self.wait_new_kid(rotator, self.kids_now(rotator), 20)  # rotations under way
        frozen = T.cluster.running()
        try:
            for i in frozen:
                T.cluster.procs[i].send_signal(signal.SIGSTOP)
            t0 = time.monotonic()
            # the etcd thread of each signer is stuck in a call that does
            # not fail: it gives up on its own timeout and says so
            for s in (a, b):
                self.assertTrue(H.wait_for_log(s, r"rotation paused, signing goes on", 1, 40), s.stderr()[-3000:])
            t1 = time.monotonic()
        finally:
            for i in frozen:
                T.cluster.procs[i].send_signal(signal.SIGCONT)
        for s in (a, b):
            self.assertTrue(H.wait_for_log(s, r"etcd answers again; rotation resumes", 1, 30), s.stderr()[-3000:])
        self.wait_new_kid(rotator, self.kids_now(rotator), 30)
        for l in loads:
            l.stop()
        self.assertEqual([f for l in loads for f in l.failures], [], "every Sign answered while etcd was frozen")
        for l in loads:
            during = [x for x in l.signs if t0 <= x[0] and x[1] <= t1]
            self.assertGreater(len(during), 0, "no Sign completed while etcd was frozen")


if __name__ == "__main__":
    unittest.main()
