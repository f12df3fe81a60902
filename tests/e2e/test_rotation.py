# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of key rotation: the key files change under a running
server (kubelet Secret volume swaps, atomic renames, SIGHUP), bad inputs keep
the last good set, retention keeps a rotated-out key published for a while
(also across restarts), the signing-key age warnings, and the `keys` command;
and the state directory as untrusted input (StateFile): what a hostile
keys.json or state directory can no longer do.

Every wait is a poll with a deadline; nothing but 127.0.0.1 is contacted.
"""

import base64
import calendar
import json
import os
import re
import shutil
import subprocess
import threading
import time
import unittest

import oidc_harness as H
from oidc_harness import DISCOVERY, JWKS

ISSUER = "https://issuer.example.com"
PICKUP = 3.0  # inotify reacts within ~100 ms; allow this much
NODE_TIMEOUT = 30
SCRIPT = os.path.join(H.NODE_DIR, "verify_jwks.mjs")


def rfc3339(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


class RotationBase(H.ServerTestCase):
    """Helpers of the rotation tests."""
    def serve(self, keyfile, *extra):
        args = ["--service-account-issuer", ISSUER, "--service-account-key-file", keyfile] + list(extra)
        return self.start_server(args)

    def jwks(self, srv):
        st, h, body = srv.get(JWKS)
        self.assertEqual(st, 200, body)
        return h, body

    def assert_serves(self, srv, keys, timeout=PICKUP, why=""):
        st, h, body = H.wait_for_jwks(srv, keys, timeout)
        self.assertEqual(body, H.expected_jwks(keys),
                         "%s: JWKS not %r within %.1fs (kids %r); stderr:\n%s"
                         % (why, [k.kid for k in keys], timeout, H.jwks_kids(body) if st == 200 else st,
                            srv.stderr()))
        return h, body

    def assert_still(self, srv, body, etag, lm=None, why=""):
        h, now = self.jwks(srv)
        self.assertEqual(now, body, "%s: JWKS changed; stderr:\n%s" % (why, srv.stderr()))
        self.assertEqual(H.one(h, "etag"), etag, why)
        if lm is not None:
            self.assertEqual(H.one(h, "last-modified"), lm, why)

    def secret(self, name, key, stamp="..2026_01"):
        return H.secret_dir_create(os.path.join(self.tmp, name), {"sa.pub": H.read_bytes(key.pub)}, stamp)

    def swap(self, path, key, stamp):
        H.secret_dir_swap(path, {"sa.pub": H.read_bytes(key.pub)}, stamp)

    def state(self, name="state"):
        return os.path.join(self.tmp, name)


class Rotation(RotationBase):

    # 1 ------------------------------------------------------------------
    def test_kubelet_data_swap(self):
        a, b = self.keys.rsa(2048), self.keys.ec("P-256")
        d = self.secret("secret", a)
        srv = self.serve(d)
        self.check_both(srv, ISSUER, [a])
        etag_a = H.one(self.jwks(srv)[0], "etag")

        self.swap(d, b, "..2026_02")
        h, _ = self.assert_serves(srv, [b], why="after the ..data swap")
        self.assertNotEqual(H.one(h, "etag"), etag_a, "ETag must change with the key set")
        self.check_both(srv, ISSUER, [b])  # discovery now lists ES256 only
        self.stop_ok(srv)

    # 2 ------------------------------------------------------------------
    def test_rename_over_watched_file(self):
        a, b = self.keys.ec("P-256"), self.keys.ec("P-384")
        d = os.path.join(self.tmp, "plain")
        os.mkdir(d)
        path = os.path.join(d, "sa.pub")
        shutil.copyfile(a.pub, path)
        srv = self.serve(path)
        self.check_both(srv, ISSUER, [a])

        tmp = os.path.join(d, "sa.pub.new")
        shutil.copyfile(b.pub, tmp)
        os.replace(tmp, path)
        self.assert_serves(srv, [b], why="after rename over the file")
        self.check_both(srv, ISSUER, [b])
        self.stop_ok(srv)

    # 3 ------------------------------------------------------------------
    def test_sighup_reloads_what_inotify_missed(self):
        a, b = self.keys.ec("P-256"), self.keys.ec("P-256")
        d = os.path.join(self.tmp, "watched")
        other = os.path.join(self.tmp, "unwatched")
        os.mkdir(d)
        os.mkdir(other)
        path = os.path.join(d, "sa.pub")
        shutil.copyfile(a.pub, path)
        link = os.path.join(other, "sa.link")
        os.link(path, link)
        srv = self.serve(path, "--key-reload-interval", "1d")
        self.check_both(srv, ISSUER, [a])
        h, body = self.jwks(srv)

        # rewrite the inode in place through the entry in an unwatched
        # directory: no inotify event reaches the server
        data = H.read_bytes(b.pub)
        with open(link, "r+b") as f:
            f.write(data)
            f.truncate(len(data))
        self.assertEqual(H.read_bytes(path), data)
        time.sleep(1.0)
        self.assert_still(srv, body, H.one(h, "etag"), why="write via an unwatched hard link")

        self.assertTrue(H.sighup_and_wait(srv), srv.stderr())
        self.assert_serves(srv, [b], why="after SIGHUP")
        self.stop_ok(srv)

    # 4 ------------------------------------------------------------------
    def test_unchanged_reload_keeps_etag_and_last_modified(self):
        a = self.keys.ec("P-256")
        d = self.secret("secret", a)
        srv = self.serve(d)
        h, body = self.jwks(srv)
        etag, lm = H.one(h, "etag"), H.one(h, "last-modified")
        dh = srv.get(DISCOVERY)[1]
        # Last-Modified has one-second resolution: make a re-publish visible
        time.sleep(1.1)
        for _ in range(3):
            self.assertTrue(H.sighup_and_wait(srv, settle=0.1), srv.stderr())
        self.assert_still(srv, body, etag, lm, why="SIGHUP with unchanged files")
        # a touch (IN_ATTRIB) and a rewrite with the same bytes reload too
        os.utime(os.path.join(d, "..data", "sa.pub"))
        H.atomic_write(os.path.join(d, "..data", "sa.pub"), H.read_bytes(a.pub))
        time.sleep(0.5)
        self.assert_still(srv, body, etag, lm, why="same bytes rewritten")
        dh2 = srv.get(DISCOVERY)[1]
        self.assertEqual(H.one(dh2, "etag"), H.one(dh, "etag"))
        self.assertEqual(H.one(dh2, "last-modified"), H.one(dh, "last-modified"))
        self.assertEqual(H.count_log(srv, r"published key set generation"), 1, srv.stderr())
        self.stop_ok(srv)

    # 5 ------------------------------------------------------------------
    def test_bad_input_keeps_last_good_set(self):
        a, b = self.keys.ec("P-256"), self.keys.ec("P-384")
        parent = os.path.join(self.tmp, "parent")
        d = os.path.join(parent, "keys")
        os.makedirs(d)
        path = os.path.join(d, "sa.pub")
        shutil.copyfile(a.pub, path)
        srv = self.serve(d)
        self.check_both(srv, ISSUER, [a])
        h, body = self.jwks(srv)
        etag, lm = H.one(h, "etag"), H.one(h, "last-modified")
        failed = r"key reload failed \((\d+) so far\), keeping the published set: "

        def breaks(why, action, names):
            n = H.count_log(srv, failed)
            action()
            got = H.wait_for_log(srv, failed, n + 1, PICKUP)
            self.assertGreater(got, n, "%s: no 'key reload failed' logged; stderr:\n%s" % (why, srv.stderr()))
            lines = [ln for ln in srv.stderr().splitlines() if re.search(failed, ln)]
            self.assertTrue(any(name in lines[-1] for name in names),
                            "%s: failure does not name %r: %s" % (why, names, lines[-1]))
            self.assertRegex(lines[-1], r"\berror\b")
            self.assertEqual(int(re.search(failed, lines[-1]).group(1)), len(lines),
                             "failure counter is not the number of failures")
            time.sleep(0.2)
            self.assert_still(srv, body, etag, lm, why=why)

        fx = os.environ.get("OIDC_FIXTURES") or os.path.join(H.REPO, "tests", "fixtures")
        breaks("garbage", lambda: H.atomic_write(path, b"this is not a PEM file\n"), [path])
        breaks("EC PARAMETERS only", lambda: H.atomic_write(path, H.read_bytes(os.path.join(fx, "params-only.pem"))),
               [path])
        breaks("empty directory", lambda: os.unlink(path), [d])
        breaks("directory removed", lambda: os.rmdir(d), [d])
        self.assert_still(srv, body, etag, lm, why="after all failures")

        # fixed: a directory with a good key appears (renamed into place)
        staged = os.path.join(parent, ".staged")
        os.mkdir(staged)
        shutil.copyfile(b.pub, os.path.join(staged, "sa.pub"))
        os.rename(staged, d)
        h2, _ = self.assert_serves(srv, [b], why="after the fix")
        self.assertNotEqual(H.one(h2, "etag"), etag)
        self.check_both(srv, ISSUER, [b])
        # and a file written into the re-created directory is watched again
        H.atomic_write(os.path.join(d, "sb.pub"), H.read_bytes(a.pub))
        self.assert_serves(srv, [b, a], why="second file in the re-created directory")
        self.stop_ok(srv)

    # 6 ------------------------------------------------------------------
    def test_retention_holds_then_expires(self):
        a, b = self.keys.ec("P-256"), self.keys.ec("P-384")
        d = self.secret("secret", a)
        srv = self.serve(d, "--key-retention", "3s", "--state-dir", self.state())
        self.check_both(srv, ISSUER, [a])

        t_swap = time.time()
        self.swap(d, b, "..2026_02")
        h, _ = self.assert_serves(srv, [b, a], why="old key retained after the new one")
        t_seen = time.time()
        self.check_both(srv, ISSUER, [b, a])
        left = r"key kid=%s left the inputs; retained \(still published\) until (\S+)" % re.escape(a.kid)
        self.assertEqual(H.wait_for_log(srv, left, 1, 1.0), 1, srv.stderr())
        until = rfc3339(re.search(left, srv.stderr()).group(1))
        self.assertTrue(t_swap + 1 <= until <= t_seen + 3 + 1, "retained until %d, swap at %.1f" % (until, t_swap))

        # last_seen has one-second resolution: the key stays at least 2 s
        # after the reload that saw it leave (checked when the machine was
        # quick enough to leave a margin)
        if time.time() < t_swap + 1.0:
            time.sleep(max(0.0, t_swap + 1.5 - time.time()))
            self.assertEqual(H.jwks_kids(self.jwks(srv)[1]), [b.kid, a.kid], "dropped too early")

        # and goes without anything else happening
        self.assert_serves(srv, [b], timeout=max(0.1, t_seen + 3 + 1.5 - time.time()),
                           why="retained key not dropped on time")
        self.assertGreaterEqual(time.time(), until - 0.05, "dropped before its retained-until time")
        dropped = r"key kid=%s dropped from the published set" % re.escape(a.kid)
        self.assertEqual(H.wait_for_log(srv, dropped, 1, 1.0), 1, srv.stderr())
        self.assertEqual(H.count_log(srv, left), 1)
        state = json.loads(H.read_bytes(os.path.join(self.state(), "keys.json")))
        self.assertEqual([k["kid"] for k in state["keys"]], [b.kid])
        self.stop_ok(srv)

    # 7 ------------------------------------------------------------------
    def test_retention_survives_restart(self):
        a, b = self.keys.rsa(2048), self.keys.ec("P-256")
        d = self.secret("secret", a)
        sd = self.state()
        args = ["--key-retention", "30s", "--state-dir", sd]
        srv = self.serve(d, *args)
        self.check_both(srv, ISSUER, [a])
        t_swap = time.time()
        self.swap(d, b, "..2026_02")
        self.assert_serves(srv, [b, a], why="retained before restart")
        self.stop_ok(srv)

        state = json.loads(H.read_bytes(os.path.join(sd, "keys.json")))
        self.assertEqual(state["version"], 1)
        by_kid = {k["kid"]: k for k in state["keys"]}
        self.assertEqual(set(by_kid), {a.kid, b.kid})
        self.assertFalse(by_kid[a.kid]["present"])
        self.assertTrue(by_kid[b.kid]["present"])
        for k in state["keys"]:
            for member in ("kid", "first_seen", "last_seen", "present", "source", "spki"):
                self.assertIn(member, k)
        self.assertLessEqual(by_kid[a.kid]["first_seen"], by_kid[b.kid]["first_seen"])
        self.assertFalse(os.path.exists(os.path.join(sd, "keys.json.tmp")))

        # restart inside the window: the old key is still published
        srv2 = self.serve(d, *args)
        self.check_both(srv2, ISSUER, [b, a])
        self.stop_ok(srv2)

        # restart with a retention that has already run out: it is dropped
        time.sleep(max(0.0, t_swap + 2.5 - time.time()))
        srv3 = self.serve(d, "--key-retention", "2s", "--state-dir", sd)
        self.check_both(srv3, ISSUER, [b])
        self.stop_ok(srv3)

    # 8 ------------------------------------------------------------------
    def test_refuses_to_start(self):
        a = self.keys.ec("P-256")
        d = self.secret("secret", a)
        base = ["serve", "--service-account-issuer", ISSUER, "--service-account-key-file", d,
                "--listen", "127.0.0.1:0"]
        cases = []
        for name, text in (("garbage", b"{not json"), ("wrong version", b'{"version":7,"keys":[]}'),
                           ("truncated", b'{"version":1,"keys":[{"kid":"x"')):
            sd = os.path.join(self.tmp, "state-" + name.replace(" ", "-"))
            os.mkdir(sd)
            with open(os.path.join(sd, "keys.json"), "wb") as f:
                f.write(text)
            cases.append(("corrupt keys.json (%s)" % name, base + ["--state-dir", sd, "--key-retention", "1h"],
                          os.path.join(sd, "keys.json")))
        cases.append(("state dir is the key dir", base + ["--state-dir", d], "--state-dir"))
        cases.append(("state dir is the key dir via another path",
                      base + ["--state-dir", os.path.join(d, "..data", "..")], "--state-dir"))
        for why, argv, needle in cases:
            with self.subTest(why):
                rc, out, err = H.run_once(argv, timeout=5)
                self.assertIsNotNone(rc, "%s: server did not refuse to start; stderr:\n%s" % (why, err))
                self.assertNotEqual(rc, 0, err)
                self.assertIn(needle, err)
        # nothing was written into the key directory
        self.assertEqual(sorted(n for n in os.listdir(d) if not n.startswith("..")), ["sa.pub"])

    def test_fresh_start_says_no_earlier_publication_is_known(self):
        """The first start with a signing key that is published at once: no
        history says for how long, so the warning says that, not "0s"."""
        s = self.keys.ec("P-256")
        d = os.path.join(self.tmp, "keys")
        os.mkdir(d)
        shutil.copyfile(s.pub, os.path.join(d, "s.pub"))
        srv = self.serve(d, "--signing-key-file", s.priv)
        fresh = r"\bwarn\b.*SIGNING KEY TOO NEW: kid=%s is published from now on \(no earlier publication is known\)" \
            % re.escape(s.kid)
        self.assertEqual(H.wait_for_log(srv, fresh, 1, 5.0 * H.SLOW), 1, srv.stderr())
        self.assertNotIn("has been published for 0s", srv.stderr())
        self.stop_ok(srv)

    # 9 ------------------------------------------------------------------
    def test_signing_key_messages_once_each(self):
        a, s = self.keys.ec("P-256"), self.keys.ec("P-256")
        d = os.path.join(self.tmp, "keys")
        os.mkdir(d)
        shutil.copyfile(a.pub, os.path.join(d, "a.pub"))
        srv = self.serve(d, "--signing-key-file", s.priv, "--max-age", "2")
        not_pub = r"\berror\b.*SIGNING KEY NOT PUBLISHED: kid=%s" % re.escape(s.kid)
        too_new = r"\bwarn\b.*SIGNING KEY TOO NEW: kid=%s" % re.escape(s.kid)
        mature = r"signing key kid=%s has been published for at least --max-age" % re.escape(s.kid)
        self.assertEqual(H.wait_for_log(srv, not_pub, 1, 2.0), 1, srv.stderr())
        for _ in range(3):
            self.assertTrue(H.sighup_and_wait(srv, settle=0.15))
        self.assertEqual(H.count_log(srv, not_pub), 1, "repeated:\n" + srv.stderr())
        self.assertEqual(H.count_log(srv, too_new), 0)

        # publish it: too new for max-age 2
        H.atomic_write(os.path.join(d, "s.pub"), H.read_bytes(s.pub))
        t_pub = time.time()
        self.assert_serves(srv, [a, s], why="signing key published")
        self.assertEqual(H.wait_for_log(srv, too_new, 1, 1.0), 1, srv.stderr())
        for _ in range(2):
            self.assertTrue(H.sighup_and_wait(srv, settle=0.1))
        if time.time() < t_pub + 1.0:  # still young: nothing new to say
            self.assertEqual(H.count_log(srv, mature), 0, srv.stderr())
        # it matures without any other event
        self.assertEqual(H.wait_for_log(srv, mature, 1, max(0.1, t_pub + 2 + 2.0 - time.time())), 1,
                         "no maturity message; stderr:\n" + srv.stderr())
        for _ in range(3):
            self.assertTrue(H.sighup_and_wait(srv, settle=0.15))
        self.assertEqual(H.count_log(srv, not_pub), 1, srv.stderr())
        self.assertEqual(H.count_log(srv, too_new), 1, srv.stderr())
        self.assertEqual(H.count_log(srv, mature), 1, srv.stderr())

        # unpublished again: reported again, once
        os.unlink(os.path.join(d, "s.pub"))
        self.assert_serves(srv, [a], why="signing key removed")
        self.assertEqual(H.wait_for_log(srv, not_pub, 2, 1.0), 2, srv.stderr())
        self.assertTrue(H.sighup_and_wait(srv, settle=0.15))
        self.assertEqual(H.count_log(srv, not_pub), 2, srv.stderr())
        self.stop_ok(srv)

    # 10 -----------------------------------------------------------------
    def test_keys_command(self):
        a, b, c = self.keys.rsa(2048), self.keys.ec("P-256"), self.keys.ec("P-384")
        d = self.secret("secret", a)
        sd = self.state()
        srv = self.serve(d, "--key-retention", "60s", "--state-dir", sd)
        self.check_both(srv, ISSUER, [a])
        t_swap = time.time()
        self.swap(d, b, "..2026_02")
        self.assert_serves(srv, [b, a])
        self.stop_ok(srv)

        state_file = os.path.join(sd, "keys.json")
        before = H.read_bytes(state_file)
        mtime = os.stat(state_file).st_mtime_ns
        time.sleep(0.05)  # an mtime change would be visible
        common = ["--service-account-key-file", d, "--state-dir", sd, "--key-retention", "60s"]

        rc, out, err = H.run_once(["keys"] + common)
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0].split(),
                         ["KID", "ALG", "SIZE", "ROLE", "FIRST", "SEEN", "RETAINED", "UNTIL", "SOURCE"])
        self.assertEqual(len(lines), 3, out)
        self.assertEqual(lines[1].split()[:4], [b.kid, "ES256", "P-256", "-"], "key files' keys have no role")
        self.assertEqual(lines[2].split()[:4], [a.kid, "RS256", "2048", "-"])
        self.assertRegex(lines[2].split()[5], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", "retained until")

        # a brand-new key next to b (no server has seen it yet)
        with open(os.path.join(self.tmp, "c.pub.data"), "wb") as f:
            f.write(H.read_bytes(c.pub))
        os.symlink(os.path.join(self.tmp, "c.pub.data"), os.path.join(d, "z.pub"))
        rc, out, err = H.run_once(["keys"] + common + ["--output", "json"])
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual([k["kid"] for k in doc["keys"]], [b.kid, c.kid, a.kid])
        kb, kc, ka = doc["keys"]
        for k in doc["keys"]:
            self.assertEqual(set(k), {"kid", "alg", "size", "curve", "source", "first_seen", "retained_until", "role",
                                      "role_until"})
            self.assertIsNone(k["role"], "a key file's key has no role (only --signing-key-dir keys do)")
        self.assertEqual((kb["alg"], kb["size"], kb["curve"]), ("ES256", 256, "P-256"))
        self.assertEqual((kc["alg"], kc["size"], kc["curve"]), ("ES384", 384, "P-384"))
        self.assertEqual((ka["alg"], ka["size"], ka["curve"]), ("RS256", 2048, None))
        self.assertIsNone(kc["first_seen"], "a key not yet in the state is new")
        self.assertIsNone(kc["retained_until"])
        self.assertIsNone(kb["retained_until"])
        self.assertIsNotNone(kb["first_seen"])
        self.assertLessEqual(abs(rfc3339(kb["first_seen"]) - t_swap), 3)
        self.assertIsNotNone(ka["first_seen"])
        self.assertLessEqual(rfc3339(ka["first_seen"]), rfc3339(kb["first_seen"]))
        self.assertIsNotNone(ka["retained_until"])
        self.assertLessEqual(abs(rfc3339(ka["retained_until"]) - (t_swap + 60)), 3)
        self.assertTrue(ka["source"].startswith("retained"), ka["source"])
        self.assertIn(d, kb["source"])

        # keys never writes the state
        self.assertEqual(H.read_bytes(state_file), before)
        self.assertEqual(os.stat(state_file).st_mtime_ns, mtime)
        self.assertEqual(sorted(os.listdir(sd)), ["keys.json"])

        # without the state: no FIRST SEEN, nothing retained
        rc, out, err = H.run_once(["keys", "--service-account-key-file", d, "--output", "json"])
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual([k["kid"] for k in doc["keys"]], [b.kid, c.kid])
        self.assertTrue(all(k["first_seen"] is None and k["retained_until"] is None for k in doc["keys"]))

        # bad keys: exit 2, still no state written
        H.atomic_write(os.path.join(self.tmp, "c.pub.data"), b"garbage\n")
        for fmt in ([], ["--output", "json"]):
            rc, out, err = H.run_once(["keys"] + common + fmt)
            self.assertEqual(rc, 2, "stdout: %s\nstderr: %s" % (out, err))
            self.assertEqual(out, "")
            self.assertIn(os.path.join(d, "z.pub"), err)
        self.assertEqual(H.read_bytes(state_file), before)
        self.assertEqual(os.stat(state_file).st_mtime_ns, mtime)

    # 7b -----------------------------------------------------------------
    def test_key_back_from_retention_then_gone_over_restart(self):
        # a retained key that comes back is in the inputs again; when it
        # leaves again while the server is down, its last-seen is (at the
        # latest) the stop, so a restart right after must still publish it
        a, b = self.keys.ec("P-256"), self.keys.ec("P-384")
        d = os.path.join(self.tmp, "keys")
        os.mkdir(d)
        shutil.copyfile(a.pub, os.path.join(d, "a.pub"))
        shutil.copyfile(b.pub, os.path.join(d, "b.pub"))
        sd = self.state()
        # the restart must read the keys within the retention after the
        # stop: memcheck's start-up alone takes seconds
        retention = 3 * H.SLOW
        args = ["--key-retention", "%ds" % retention, "--state-dir", sd]
        srv = self.serve(d, *args)
        self.check_both(srv, ISSUER, [a, b])
        t_left = time.time()
        os.unlink(os.path.join(d, "a.pub"))
        self.assert_serves(srv, [b, a], why="a retained")
        shutil.copyfile(a.pub, os.path.join(d, ".a.tmp"))
        os.replace(os.path.join(d, ".a.tmp"), os.path.join(d, "a.pub"))
        self.assert_serves(srv, [a, b], why="a back in the inputs")
        # past the first retention window, a is still in the inputs
        time.sleep(max(0.0, t_left + retention + 1.2 - time.time()))
        self.check_both(srv, ISSUER, [a, b])
        self.stop_ok(srv)
        state_at_stop = H.read_bytes(os.path.join(sd, "keys.json")).decode()

        os.unlink(os.path.join(d, "a.pub"))
        srv2 = self.serve(d, *args)
        _, body = self.jwks(srv2)
        self.assertEqual(H.jwks_kids(body), [b.kid, a.kid],
                         "a was in the inputs until the stop, so it must be retained after the restart;"
                         " keys.json at the stop:\n%s\nstderr:\n%s" % (state_at_stop, srv2.stderr()))
        self.stop_ok(srv2)

    # 11 -----------------------------------------------------------------
    def test_jose_verifies_new_and_retained_key(self):
        problem = None
        if shutil.which("node") is None:
            problem = "`node` is not on PATH"
        elif not os.path.isdir(os.path.join(H.NODE_DIR, "node_modules", "jose")):
            problem = "%s/node_modules/jose is missing; run `npm ci` there" % H.NODE_DIR
        if problem:
            self.fail(problem)
        a, b = self.keys.rsa(2048), self.keys.ec("P-256")
        d = self.secret("secret", a)
        srv = self.serve(d, "--key-retention", "60s", "--state-dir", self.state())
        self.check_both(srv, ISSUER, [a])
        self.swap(d, b, "..2026_02")
        self.assert_serves(srv, [b, a])
        self.check_both(srv, ISSUER, [b, a])

        def verify(alg, priv, kid):
            r = subprocess.run(["node", SCRIPT, srv.url(JWKS), ISSUER, alg, priv, kid], cwd=H.NODE_DIR,
                               capture_output=True, text=True, timeout=NODE_TIMEOUT)
            return r.returncode, r.stdout, r.stderr

        for why, alg, key in (("new key", "ES256", b), ("retained key", "RS256", a)):
            with self.subTest(why):
                rc, out, err = verify(alg, key.priv, key.kid)
                self.assertEqual(rc, 0, "jose failed for the %s:\nstdout: %s\nstderr: %s" % (why, out, err))
                self.assertIn("OK " + key.kid, out.splitlines())
        # a key that was never published still fails
        foreign = self.keys.ec("P-256")
        rc, out, err = verify("ES256", foreign.priv, foreign.kid)
        self.assertEqual(rc, 1, "stdout: %s\nstderr: %s" % (out, err))
        self.stop_ok(srv)


YEAR_3000 = 32503680000
INT64_MAX = 2 ** 63 - 1


class StateFile(RotationBase):
    """--state-dir/keys.json is input, not truth: it can only shorten what is
    published. Each test plants what an attacker with write access to the
    state directory planted, and checks that it no longer works."""

    def entry(self, key, last_seen, first_seen=None, present=False, source="sa.pub", kid=None):
        return {"kid": kid or key.kid, "first_seen": first_seen or min(last_seen, int(time.time()) - 60),
                "last_seen": last_seen, "present": present, "source": source,
                "spki": base64.b64encode(key.spki).decode()}

    def plant(self, entries=None, raw=None, name="state"):
        """A state directory (mode 0700) whose keys.json holds entries (or
        the raw bytes); returns the directory."""
        sd = self.state(name)
        os.makedirs(sd, mode=0o700, exist_ok=True)
        with open(os.path.join(sd, "keys.json"), "wb") as f:
            f.write(raw if raw is not None else json.dumps({"version": 1, "keys": entries}).encode())
        return sd

    def keys_cmd(self, d, sd, *extra):
        return H.run_once(["keys", "--service-account-key-file", d, "--state-dir", sd, "--key-retention", "24h"]
                          + list(extra))

    def assert_no_sanitizer_report(self, err):
        self.assertNotIn("runtime error", err)
        self.assertNotIn("AddressSanitizer", err)

    def test_future_last_seen_publishes_nothing_and_signs_nothing(self):
        # an attacker's key with last_seen in the year 3000 was published
        # for ever (retention is 24h) and its tokens passed TokenReview
        a, x = self.keys.ec("P-256"), self.keys.ec("P-256")
        d = self.secret("secret", a)
        sd = self.plant([self.entry(x, YEAR_3000, first_seen=int(time.time()) - 60, source="evil")])
        srv = H.start_review_server(self, ["--service-account-issuer", ISSUER, "--service-account-key-file", d,
                                           "--key-retention", "24h", "--state-dir", sd, "--api-audiences", "vault"],
                                    a.priv)
        self.check_both(srv, ISSUER, [a])
        dropped = r"warn .*keys\[0\] \(kid \"%s\"\) dropped: last_seen %d is in the future" % (re.escape(x.kid),
                                                                                            YEAR_3000)
        self.assertEqual(H.count_log(srv, dropped), 1, srv.stderr())
        st, doc = H.review(srv, H.mint_token(x.priv, ISSUER, audiences=["vault"]))
        self.assertIs(doc["status"]["authenticated"], False, doc)
        st, doc = H.review(srv, H.mint_token(a.priv, ISSUER, audiences=["vault"]))
        self.assertIs(doc["status"]["authenticated"], True, doc)
        self.stop_ok(srv)
        # the next save leaves it out
        state = json.loads(H.read_bytes(os.path.join(sd, "keys.json")))
        self.assertEqual([k["kid"] for k in state["keys"]], [a.kid])
        rc, out, err = self.keys_cmd(d, sd, "--output", "json")
        self.assertEqual((rc, [k["kid"] for k in json.loads(out)["keys"]]), (0, [a.kid]), err)

    def test_recorded_present_does_not_extend_a_key(self):
        # "present": true made a restart count the key as seen until then:
        # a stale entry came back to life for a whole retention
        a, x = self.keys.ec("P-256"), self.keys.rsa(2048)
        d = self.secret("secret", a)
        sd = self.plant([self.entry(x, int(time.time()) - 7200, present=True)])
        srv = self.serve(d, "--key-retention", "1h", "--state-dir", sd)
        self.check_both(srv, ISSUER, [a])
        self.stop_ok(srv)
        # inside its retention it is still published, until last_seen + 1h
        last = int(time.time()) - 600
        sd = self.plant([self.entry(x, last, present=True)], name="state2")
        srv = self.serve(d, "--key-retention", "1h", "--state-dir", sd)
        self.check_both(srv, ISSUER, [a, x])
        left = r"key kid=%s left the inputs; retained \(still published\) until (\S+)" % re.escape(x.kid)
        self.assertEqual(H.wait_for_log(srv, left, 1, 1.0), 1, srv.stderr())
        self.assertEqual(rfc3339(re.search(left, srv.stderr()).group(1)), last + 3600)
        self.stop_ok(srv)

    def test_inconsistent_entries_are_dropped_and_the_rest_kept(self):
        a, b, x, y = self.keys.ec("P-256"), self.keys.ec("P-384"), self.keys.ec("P-256"), self.keys.rsa(2048)
        d = self.secret("secret", a)
        now = int(time.time())
        sd = self.plant([
            self.entry(b, now - 30),                          # a retained key: kept
            self.entry(x, now - 30, kid=y.kid),               # kid of another key
            self.entry(y, now - 10, first_seen=now - 5),      # first_seen after last_seen
            self.entry(b, now - 20),                          # b again
        ])
        srv = self.serve(d, "--key-retention", "24h", "--state-dir", sd)
        self.check_both(srv, ISSUER, [a, b])
        for i, kid, why in ((1, y.kid, "kid is not the one its spki gives"),
                            (2, y.kid, "first_seen is after last_seen"),
                            (3, b.kid, "an earlier entry has the same kid")):
            rx = r"warn .*keys\[%d\] \(kid \"%s\"\) dropped: %s" % (i, re.escape(kid), re.escape(why))
            self.assertEqual(H.count_log(srv, rx), 1, "keys[%d]: %s\n%s" % (i, why, srv.stderr()))
        self.assert_no_sanitizer_report(srv.stderr())
        self.stop_ok(srv)

    def test_int64_max_last_seen_is_dropped_with_a_warning(self):
        # last_seen + retention overflowed (UBSan in keys/history.c); a
        # release build dropped the entry without a word
        a, x = self.keys.ec("P-256"), self.keys.ec("P-256")
        d = self.secret("secret", a)
        sd = self.plant([self.entry(x, INT64_MAX, first_seen=int(time.time()) - 60)])
        srv = self.serve(d, "--key-retention", "24h", "--state-dir", sd)
        self.check_both(srv, ISSUER, [a])
        rx = (r"warn .*keys\[0\] \(kid \"%s\"\) dropped: first_seen and last_seen must be whole seconds "
              r"from 1 to 253402300799" % re.escape(x.kid))
        self.assertEqual(H.count_log(srv, rx), 1, srv.stderr())
        self.assert_no_sanitizer_report(srv.stderr())
        self.stop_ok(srv)
        sd = self.plant([self.entry(x, INT64_MAX, first_seen=int(time.time()) - 60)])  # serve saved without it
        rc, out, err = self.keys_cmd(d, sd)
        self.assertEqual(rc, 0, err)
        self.assertRegex(err, rx)
        self.assert_no_sanitizer_report(err)

    def test_deep_nesting_is_refused_not_a_crash(self):
        # 2,000,000 nested arrays crashed serve and keys inside yajl
        a = self.keys.ec("P-256")
        d = self.secret("secret", a)
        depth = 2000000
        sd = self.plant(raw=b'{"version":1,"keys":' + b"[" * depth + b"]" * depth + b"}")
        state_file = os.path.join(sd, "keys.json")
        rc, out, err = H.run_once(["serve", "--service-account-issuer", ISSUER, "--service-account-key-file", d,
                                   "--listen", "127.0.0.1:0", "--state-dir", sd, "--key-retention", "1h"])
        self.assertEqual(rc, 2, err)  # not a signal
        self.assertIn(state_file, err)
        self.assertIn("nested too deeply", err)
        rc, out, err = self.keys_cmd(d, sd)
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("--state-dir: state file %s: JSON nested too deeply" % state_file, err)

    def test_temporary_file_is_never_written_through_a_link(self):
        a = self.keys.ec("P-256")
        d = self.secret("secret", a)
        sd = self.state()
        os.mkdir(sd, 0o700)
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "wb") as f:
            f.write(b"precious\n")
        os.symlink(victim, os.path.join(sd, "keys.json.tmp"))
        srv = self.serve(d, "--key-retention", "1h", "--state-dir", sd)
        self.check_both(srv, ISSUER, [a])
        self.stop_ok(srv)
        self.assertEqual(H.read_bytes(victim), b"precious\n")
        self.assertEqual(sorted(os.listdir(sd)), ["keys.json"])
        state = json.loads(H.read_bytes(os.path.join(sd, "keys.json")))
        self.assertEqual([k["kid"] for k in state["keys"]], [a.kid])

    def test_source_is_quoted_in_the_log_and_the_keys_table(self):
        # a fake log line and a terminal escape in "source" got through
        a, x = self.keys.ec("P-256"), self.keys.ec("P-384")
        d = self.secret("secret", a)
        fake = "2026-01-01T00:00:00.000Z error FAKE LINE"
        sd = self.plant([self.entry(x, int(time.time()) - 30, source="x.pub\n" + fake + "\x1b[31m red")])
        srv = self.serve(d, "--key-retention", "1h", "--state-dir", sd)
        self.check_both(srv, ISSUER, [a, x])
        err = srv.stderr()
        self.assertNotIn("\x1b", err)
        self.assertFalse([line for line in err.splitlines() if line.startswith(fake)], err)
        want = 'source="retained, last seen in x.pub\\n%s\\x1b[31m red"' % fake
        self.assertEqual(H.count_log(srv, re.escape(want)), 1, err)
        self.stop_ok(srv)
        rc, out, err = self.keys_cmd(d, sd)
        self.assertEqual(rc, 0, err)
        self.assertNotIn("\x1b", out)
        lines = out.splitlines()
        self.assertEqual(len(lines), 3, out)
        self.assertTrue(lines[2].startswith(x.kid), out)
        self.assertTrue(lines[2].endswith('"retained, last seen in x.pub\\n%s\\x1b[31m red"' % fake), out)
        self.assertTrue(lines[1].endswith('"%s (block 1)"' % os.path.join(d, "sa.pub")), out)

    def test_state_directory_others_can_write_is_refused(self):
        a = self.keys.ec("P-256")
        d = self.secret("secret", a)
        base = ["serve", "--service-account-issuer", ISSUER, "--service-account-key-file", d,
                "--listen", "127.0.0.1:0", "--key-retention", "1h"]
        cases = [("world-writable", 0o777, None), ("group-writable", 0o770, None)]
        if os.geteuid() == 0:
            cases.append(("owned by another user", 0o700, 12345))
        for why, mode, owner in cases:
            with self.subTest(why):
                sd = self.state("state-" + why.replace(" ", "-"))
                os.mkdir(sd)
                os.chmod(sd, mode)
                if owner is not None:
                    os.chown(sd, owner, owner)
                rc, out, err = H.run_once(base + ["--state-dir", sd])
                self.assertIsNotNone(rc, "server did not refuse to start; stderr:\n%s" % err)
                self.assertEqual(rc, 2, err)
                self.assertIn("--state-dir: state directory %s" % sd, err)
                self.assertIn("chown" if owner else "chmod go-w", err)
                rc, out, err = self.keys_cmd(d, sd)
                self.assertEqual(rc, 2, err)
                self.assertIn("--state-dir: state directory %s" % sd, err)
                self.assertEqual(os.listdir(sd), [])
        # a missing one is created private, and accepted
        sd = self.state("fresh")
        srv = self.serve(d, "--key-retention", "1h", "--state-dir", sd)
        self.assertEqual(os.stat(sd).st_mode & 0o777, 0o700)
        self.stop_ok(srv)

    def test_stop_records_the_keys_as_seen_until_then(self):
        # a key that leaves while the server is down is retained from when
        # the server last saw it: the stop (which re-reads the key files)
        a, b = self.keys.ec("P-256"), self.keys.rsa(2048)
        d = os.path.join(self.tmp, "keys")
        os.mkdir(d)
        shutil.copyfile(a.pub, os.path.join(d, "a.pub"))
        shutil.copyfile(b.pub, os.path.join(d, "b.pub"))
        sd = self.state()
        srv = self.serve(d, "--key-retention", "1h", "--state-dir", sd, "--key-reload-interval", "1d")
        t_start = time.time()
        self.check_both(srv, ISSUER, [a, b])
        time.sleep(2.2)
        t_stop = time.time()
        self.stop_ok(srv)
        state = json.loads(H.read_bytes(os.path.join(sd, "keys.json")))
        for k in state["keys"]:
            self.assertGreaterEqual(k["last_seen"], int(t_stop), k)
            self.assertLessEqual(k["first_seen"], t_start + 1, k)
        os.unlink(os.path.join(d, "b.pub"))
        srv = self.serve(d, "--key-retention", "1h", "--state-dir", sd)
        self.check_both(srv, ISSUER, [a, b])


class JwksSampler:
    """Fetches the JWKS over and over on its own connection from a thread
    and records the kids of every 200 response, until stopped."""

    def __init__(self, srv):
        self.srv = srv
        self.samples = []
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                st, _, body = self.srv.get(JWKS)
                if st == 200:
                    self.samples.append((time.monotonic(), H.jwks_kids(body)))
            except OSError as e:
                self.errors.append(e)
            time.sleep(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)

    def since(self, t):
        return [kids for when, kids in self.samples if when >= t]


class PartialReads(H.ServerTestCase):
    """A key never leaves the published set because a file was read while
    it was being written; a real removal is published once confirmed."""

    CONFIRM = 1.0  # RELOAD_REMOVAL_CONFIRM_MS

    def serve(self, keyfile):
        return self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", keyfile])

    def serve_two_keys_in_one_file(self):
        """A server publishing keys a and b from the single file path:
        (a, b, path, server)."""
        a, b = self.keys.rsa(2048), self.keys.ec("P-256")
        d = os.path.join(self.tmp, "keys")
        os.mkdir(d)
        path = os.path.join(d, "sa.pem")
        shutil.copyfile(self.keys.concat("both.pem", a.pub, b.pub), path)
        srv = self.serve(path)
        self.check_both(srv, ISSUER, [a, b])
        return a, b, path, srv

    def test_file_rewritten_in_place_with_a_pause_never_loses_a_key(self):
        a, b, path, srv = self.serve_two_keys_in_one_file()
        with JwksSampler(srv) as sampler:
            t0 = time.monotonic()
            # in place (same inode), in two writes with a pause between the
            # PEM blocks, as a script or a slow copy would
            with open(path, "wb") as f:
                f.write(H.read_bytes(a.pub))
                f.flush()
                time.sleep(0.4)
                f.write(H.read_bytes(b.pub))
            # past the point where a confirmed removal would show
            time.sleep(self.CONFIRM + 1.0)
        seen = sampler.since(t0)
        self.assertGreater(len(seen), 20, "too few samples to tell: %r" % sampler.errors)
        short = [kids for kids in seen if kids != [a.kid, b.kid]]
        self.assertEqual(short, [], "a set other than [a, b] was published while the file was being written "
                                    "(%d of %d samples); stderr:\n%s" % (len(short), len(seen), srv.stderr()))
        self.assertEqual(H.count_log(srv, r"published key set generation"), 1, srv.stderr())
        self.stop_ok(srv)

    def test_key_removed_in_place_leaves_once_confirmed(self):
        a, b, path, srv = self.serve_two_keys_in_one_file()
        with JwksSampler(srv) as sampler:
            t0 = time.monotonic()
            with open(path, "wb") as f:
                f.write(H.read_bytes(a.pub))
            # the server cannot confirm before CONFIRM after it first read
            # the shrunken file, which is after the write
            time.sleep(self.CONFIRM / 2)
            early = sampler.since(t0)
        self.assertTrue(early and all(kids == [a.kid, b.kid] for kids in early),
                        "b left before its removal was confirmed: %r" % early)
        self.assertTrue(H.wait_for_log(srv, r"stay published until a re-read"), srv.stderr())
        self.check_both(srv, ISSUER, [a, b])
        # and leaves without any further event
        st, _, body = H.wait_for_jwks(srv, [a], PICKUP + self.CONFIRM)
        self.assertEqual(body, H.expected_jwks([a]), "b was never removed; stderr:\n" + srv.stderr())
        self.check_both(srv, ISSUER, [a])
        self.stop_ok(srv)

    def test_secret_data_swap_removes_at_once(self):
        # the kubelet writes the new files before the swap: nothing to confirm
        a, b = self.keys.ec("P-256"), self.keys.ec("P-384")
        d = H.secret_dir_create(os.path.join(self.tmp, "secret"),
                                {"sa.pub": H.read_bytes(self.keys.concat("ab.pem", a.pub, b.pub))})
        srv = self.serve(d)
        self.check_both(srv, ISSUER, [a, b])
        H.secret_dir_swap(d, {"sa.pub": H.read_bytes(b.pub)}, "..2026_02")
        st, _, body = H.wait_for_jwks(srv, [b], PICKUP)
        self.assertEqual(body, H.expected_jwks([b]), srv.stderr())
        self.assertEqual(H.count_log(srv, r"stay published until a re-read"), 0, srv.stderr())
        self.stop_ok(srv)


class NotRegularFile(H.ServerTestCase):
    """A FIFO put in place of a key file must not freeze the reloads: the
    reload fails (logged, naming the file), the last good set stays, later
    changes are still picked up, and SIGTERM still ends the process."""

    def test_fifo_in_place_of_key_file(self):
        a, b = self.keys.ec("P-256"), self.keys.ec("P-384")
        d = os.path.join(self.tmp, "keys")
        os.mkdir(d)
        path = os.path.join(d, "sa.pub")
        shutil.copyfile(a.pub, path)
        srv = self.start_server(["--service-account-issuer", ISSUER, "--service-account-key-file", path])
        body = self.check_both(srv, ISSUER, [a])
        fifo = os.path.join(d, ".fifo")
        os.mkfifo(fifo)
        os.replace(fifo, path)
        failed = r"key reload failed .*keeping the published set: %s: .*FIFO" % re.escape(path)
        self.assertEqual(H.wait_for_log(srv, failed, 1, PICKUP), 1,
                         "no reload failure naming the FIFO; stderr:\n" + srv.stderr())
        self.assertEqual(srv.get(JWKS)[2], body)
        # the reloads go on
        H.atomic_write(path, H.read_bytes(b.pub))
        st, _, got = H.wait_for_jwks(srv, [b], PICKUP + PartialReads.CONFIRM)
        self.assertEqual(got, H.expected_jwks([b]), "reloads stopped after the FIFO; stderr:\n" + srv.stderr())
        self.assertEqual(H.admin_get(srv.admin_port, "/livez")[0], 200)
        self.stop_ok(srv)


if __name__ == "__main__":
    unittest.main()
