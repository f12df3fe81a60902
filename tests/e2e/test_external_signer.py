# SPDX-License-Identifier: Apache-2.0
"""The external signer (KEP-740) as kube-apiserver meets it, with a client
nobody here wrote: grpcio with stubs generated from proto/externaljwt.proto
(extsigner_client.py). Metadata says --max-token-lifetime; FetchKeys
returns exactly the served JWKS's keys, each with kube's kid (base64url
SHA-256 of the DER) and a data_timestamp equal to the JWKS's
Last-Modified; Sign's header is exactly alg, kid, typ "JWT" and the
assembled token verifies against the served JWKS with PyJWT and node jose;
bad claims, other methods and the v1 API path. The key directory (created
0700, keys 0600), the import of sa.key beside a published sa.pub, the
refusal of an empty directory beside published keys, foreign and corrupt
files, the directory's and key files' modes (0700, 0600) enforced at start
and on reload, an imported key beside an --upstream (at once only when the
upstream publishes it), `keys` with roles, the schedule on /metrics, and
the socket: its mode and group, a live or non-socket path refused, a stale
one replaced."""

import json
import os
import re
import socket
import stat
import time
import unittest

import oidc_harness as H

H.ensure_system_modules("grpc", "grpc_tools", "jwt", "cryptography", "prometheus_client")

import extsigner_client as X  # noqa: E402
from apiserver_standin import StandInAPIServer  # noqa: E402

ISSUER = "https://issuer.example"


class SignerCase(X.SignerTestCase):

    def setUp(self):
        super().setUp()
        self.sock = os.path.join(self.tmp, "signer.sock")

    def start_signer(self, *extra, sock=None, check=True):
        """A signer on the test's directory. Keys are ec-p256 unless a test
        says otherwise: generating RSA keys takes a minute under valgrind
        (RS256 comes from an imported fixture key instead; the unit tests
        generate every type)."""
        extra = list(extra)
        if "--signing-key-type" not in extra:
            extra += ["--signing-key-type", "ec-p256"]
        args = ["--service-account-issuer", ISSUER, "--signing-key-dir", self.dir, "--external-signer-listen",
                "unix:" + (sock or self.sock), "--external-signer-threads", "2"] + extra
        srv = self.start_server(args)
        if check:
            self.assertTrue(X.wait_socket(sock or self.sock), srv.stderr())
        return srv

    def client(self, sock=None):
        c = X.Signer(sock or self.sock)
        self.addCleanup(c.close)
        return c


class Protocol(SignerCase):

    def test_metadata_fetch_keys_and_sign_with_an_independent_client(self):
        srv = self.start_signer("--max-token-lifetime", "90m", "--signing-key-import",
                                os.path.join(H.FIXTURES, "rsa2048.pkcs1.key"))
        c = self.client()
        self.assertEqual(c.metadata().max_token_expiration_seconds, 5400)

        st, h, body = srv.get(H.JWKS)
        self.assertEqual(st, 200)
        jwks = json.loads(body)
        fk = c.fetch_keys()
        self.assertEqual([k.key_id for k in fk.keys], [k["kid"] for k in jwks["keys"]],
                         "FetchKeys and the JWKS are one key set, in one order")
        for k in fk.keys:
            self.assertEqual(k.key_id, X.kid_of_der(k.key), "kid = base64url(SHA-256(PKIX DER))")
            self.assertFalse(k.exclude_from_oidc_discovery)
        self.assertGreater(fk.refresh_hint_seconds, 0)
        self.assertLessEqual(fk.refresh_hint_seconds, 60)
        self.assertEqual(fk.data_timestamp.seconds, int(H.parse_http_date(H.one(h, "last-modified"))),
                         "data_timestamp is when the published set last changed")

        token = c.token(X.claims(ISSUER))
        self.assertEqual(X.header_of(token), '{"alg":"RS256","kid":"%s","typ":"JWT"}' % fk.keys[0].key_id)
        payload = X.pyjwt_verify(token, body, ISSUER)
        self.assertEqual(payload["sub"], "system:serviceaccount:default:default")
        problem = H.node_problem("verify_token.mjs")
        self.assertIsNone(problem, problem)
        rc, out, err = H.run_node("verify_token.mjs", srv.url(H.JWKS), ISSUER, "api", token)
        self.assertEqual(rc, 0, out + err)
        self.assertTrue(out.startswith("OK "), out)

    def test_es256_tokens_are_raw_r_s_and_verify(self):
        srv = self.start_signer("--signing-key-type", "ec-p256")
        token = self.client().token(X.claims(ISSUER))
        self.assertTrue(X.header_of(token).startswith('{"alg":"ES256","kid":'), X.header_of(token))
        self.assertEqual(len(H.b64url_decode(token.split(".")[2])), 64)
        X.pyjwt_verify(token, srv.get(H.JWKS)[2], ISSUER)
        rc, out, err = H.run_node("verify_token.mjs", srv.url(H.JWKS), ISSUER, "api", token)
        self.assertEqual(rc, 0, out + err)

    def test_refusals_and_the_v1_api(self):
        self.start_signer("--max-token-size", "1024")
        c = self.client()
        grpc = c.grpc
        for bad in ("", "a.b", "abc=", "x" * 1025):
            with self.assertRaises(grpc.RpcError) as e:
                c.sign(bad)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, bad[:20])
            self.assertIn("base64url", e.exception.details())
        with self.assertRaises(grpc.RpcError) as e:
            c.call("/v1alpha1.ExternalJWTSigner/Verify", c.pb.MetadataRequest(), c.pb.MetadataResponse)
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        # kube-apiserver 1.34 and later call the same messages as v1
        self.assertEqual(c.call("/v1.ExternalJWTSigner/Metadata", c.pb.MetadataRequest(),
                                c.pb.MetadataResponse).max_token_expiration_seconds, 48 * 3600)
        keys = c.call("/v1.ExternalJWTSigner/FetchKeys", c.pb.FetchKeysRequest(), c.pb.FetchKeysResponse)
        claims = H.b64url(json.dumps(X.claims(ISSUER)).encode())
        r = c.call("/v1.ExternalJWTSigner/Sign", c.pb.SignJWTRequest(claims=claims), c.pb.SignJWTResponse)
        self.assertIn(keys.keys[0].key_id, X.header_of(r.header + ".x.y"))

    def test_metrics_show_the_schedule(self):
        srv = self.start_signer("--rotation-period", "30d", "--publish-ahead", "1d")
        self.client().token(X.claims(ISSUER))
        m = H.scrape_until(srv.admin_port, lambda m: H.metric(m, "oidc_signer_signatures_total", result="ok") == 1)
        self.assertEqual(H.metric(m, "oidc_signer_lock_held"), 1)
        self.assertEqual(H.metric(m, "oidc_signer_keys", role="signing"), 1)
        self.assertEqual(H.metric(m, "oidc_signer_keys", role="next"), 0)
        self.assertEqual(H.metric(m, "oidc_signer_signatures_total", result="ok"), 1)
        self.assertEqual(H.metric(m, "oidc_signer_calls_total", method="Sign"), 1)
        self.assertAlmostEqual(H.metric(m, "oidc_signer_next_rotation_timestamp_seconds"),
                               time.time() + 30 * 86400 + 60, delta=120)
        self.assertLess(H.metric(m, "oidc_signer_signing_key_age_seconds"), 60)
        self.assertEqual(H.metric(m, "oidc_signer_signing_with_retired_key"), 0)


class KeyDirectory(SignerCase):

    def test_the_directory_is_private_and_keys_shows_roles(self):
        srv = self.start_signer()
        self.assertEqual(stat.S_IMODE(os.stat(self.dir).st_mode), 0o700)
        names = sorted(os.listdir(self.dir))
        self.assertEqual(len([n for n in names if n.startswith("key-")]), 1, names)
        for n in names:
            if n != ".lock":
                self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.dir, n)).st_mode), 0o600, n)
        pem = H.read_bytes(os.path.join(self.dir, [n for n in names if n.startswith("key-")][0])).decode()
        self.assertTrue(pem.startswith("-----BEGIN PRIVATE KEY-----"))
        rc, out, err = H.run_once(["keys", "--signing-key-dir", self.dir, "--output", "json"])
        self.assertEqual(rc, 0, err)
        (k,) = json.loads(out)["keys"]
        self.assertEqual(k["role"], "signing")
        self.assertIsNone(k["role_until"])
        rc, out, err = H.run_once(["keys", "--signing-key-dir", self.dir])
        self.assertEqual(rc, 0, err)
        self.assertRegex(out.splitlines()[0], r"KID\s+ALG\s+SIZE\s+ROLE\s+FIRST SEEN")
        self.assertIn(" signing ", out.splitlines()[1])
        # export writes what serve serves, the directory's keys included
        out_dir = os.path.join(self.tmp, "export")
        rc, out, err = H.run_once(["export", "--service-account-issuer", ISSUER, "--signing-key-dir", self.dir,
                                   "--out", out_dir])
        self.assertEqual(rc, 0, err)
        self.assertEqual(H.read_bytes(os.path.join(out_dir, "openid", "v1", "jwks")), srv.get(H.JWKS)[2])

    def test_status_page_shows_each_keys_role_as_keys_does(self):
        """The admin page's role column: next, signing, retired until a
        time, the same text as `keys` prints for the same directory. With
        a 3s period and 2s ahead the three coexist from about 6s to 10s
        after the start; a retired key stays for 60s + 1s."""
        policy = ["--max-age", "1s", "--publish-ahead", "2s", "--rotation-period", "3s", "--max-token-lifetime",
                  "60s", "--allow-short-token-lifetime", "--token-leeway", "0", "--key-reload-interval", "1s"]
        srv = self.start_signer(*policy)
        last = [None]

        def page_roles():
            tables = H.html_tables(H.admin_get(srv.admin_port, "/")[2].decode())
            header, *rows = tables["keys"]
            return {r[0]: r[header.index("role")] for r in rows}

        def three_roles():
            last[0] = page_roles()
            return sorted(r.split(" ")[0] for r in last[0].values()) == ["next", "retired", "signing"]
        self.assertTrue(H.wait_until(three_roles, 20, interval=0.2), "%r\n%s" % (last[0], srv.stderr()[-3000:]))
        (retired,) = [r for r in last[0].values() if r.startswith("retired")]
        self.assertRegex(retired, r"^retired until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        until = H.parse_rfc3339(retired[len("retired until "):])
        self.assertGreater(until, time.time() + 50, "kept for 61s from its retirement, a few seconds ago")
        self.assertLessEqual(until, time.time() + 62)
        self.assertEqual(H.jwks_kids(srv.get(H.JWKS)[2]), list(last[0]), "every published key, in order")

        def same_as_keys():
            page = page_roles()
            rc, out, err = H.run_once(["keys", "--signing-key-dir", self.dir, "--output", "json", *policy])
            self.assertEqual(rc, 0, err)
            cli = {k["kid"]: k for k in json.loads(out)["keys"]}
            last[0] = (page, cli)
            if set(page) != set(cli):
                return False
            for kid, role in page.items():
                name, _, when = role.partition(" until ")
                if name != cli[kid]["role"] or bool(when) != bool(cli[kid]["role_until"]):
                    return False
                # keys reads the ages rotation.json last saved: "at the earliest", a little later
                if when and not 0 <= H.parse_rfc3339(cli[kid]["role_until"]) - H.parse_rfc3339(when) <= 10:
                    return False
            return True
        self.assertTrue(H.wait_until(same_as_keys, 10, interval=0.5), last[0])

    def test_sa_key_is_imported_beside_the_published_key_files(self):
        old = self.keys.rsa()       # the API server's key until now, still published
        other = self.keys.ec()      # another published key
        srv = self.start_signer("--service-account-key-file", old.pub, "--service-account-key-file",
                                other.pub, "--signing-key-import", old.priv)
        self.assertEqual(H.jwks_kids(srv.get(H.JWKS)[2]), [old.kid, other.kid], "sa.key's key once, not twice")
        token = self.client().token(X.claims(ISSUER))
        self.assertIn('"kid":"%s"' % old.kid, X.header_of(token), "signs with sa.key at once")
        X.pyjwt_verify(token, srv.get(H.JWKS)[2], ISSUER)
        self.assertEqual([k.key_id for k in self.client().fetch_keys().keys], [old.kid, other.kid])
        self.stop_ok(srv)
        # a second start: the directory holds keys, the import is ignored
        srv = self.start_signer("--service-account-key-file", old.pub, "--signing-key-import",
                                other.priv)
        self.assertIn("--signing-key-import %s ignored" % other.priv, srv.stderr())
        self.assertIn(old.kid, X.header_of(self.client().token(X.claims(ISSUER))))

    def test_an_empty_directory_beside_published_keys_is_refused(self):
        k = self.keys.rsa()
        rc, out, err = H.run_once(["serve", "--service-account-issuer", ISSUER, "--service-account-key-file",
                                   k.pub, "--signing-key-dir", self.dir, "--listen", "127.0.0.1:0",
                                   "--admin-listen", "none"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--signing-key-import", err)
        self.assertIn(self.dir, err)

    def test_foreign_files_are_reported_and_never_published(self):
        self.start_signer().stop()
        stranger = self.keys.ec()
        with open(os.path.join(self.dir, "notes.txt"), "w") as f:
            f.write("hello")
        with open(stranger.priv, "rb") as f:
            H.atomic_write(os.path.join(self.dir, "key-%s.pem" % stranger.kid), f.read())
        os.chmod(os.path.join(self.dir, "key-%s.pem" % stranger.kid), 0o600)  # a key file of another mode is refused
        srv = self.start_signer()
        self.assertIn("%s/notes.txt: not a file of the signing key directory" % self.dir, srv.stderr())
        self.assertIn("key-%s.pem: not a file of the signing key directory" % stranger.kid, srv.stderr())
        kids = H.jwks_kids(srv.get(H.JWKS)[2])
        self.assertEqual(len(kids), 1)
        self.assertNotIn(stranger.kid, kids)
        self.assertNotIn(stranger.kid, [k.key_id for k in self.client().fetch_keys().keys])

    def test_corrupt_files_stop_the_start_naming_them(self):
        self.start_signer().stop()
        state = os.path.join(self.dir, "rotation.json")
        good = H.read_bytes(state).decode()
        key = [n for n in os.listdir(self.dir) if n.startswith("key-")][0]
        for path, text, says in ((state, good[:len(good) // 2], "rotation.json"),
                                 (state, good.replace('"role":"signing"', '"role":"boss"'), "role"),
                                 (os.path.join(self.dir, key), "garbage", "holds no private key")):
            keep = H.read_bytes(path).decode()
            H.atomic_write(path, text.encode())
            os.chmod(path, 0o600)  # as the directory writes them: another mode is refused before any read
            rc, out, err = H.run_once(["serve", "--service-account-issuer", ISSUER, "--signing-key-dir", self.dir,
                                       "--listen", "127.0.0.1:0", "--admin-listen", "none"])
            self.assertEqual(rc, 2, err)
            self.assertIn(path, err)
            self.assertIn(says, err)
            H.atomic_write(path, keep.encode())
            os.chmod(path, 0o600)


    def test_private_modes_are_enforced_at_start_and_on_reload(self):
        """A key file in --signing-key-dir that group or others may read,
        or a directory they may list, is refused naming it: at start the
        server does not start; on a reload the pass fails as other reload
        errors do, and the last good state goes on serving and signing."""
        srv = self.start_signer()
        (name,) = [n for n in os.listdir(self.dir) if n.startswith("key-")]
        key = os.path.join(self.dir, name)
        kid = name[len("key-"):-len(".pem")]
        for path, mode, says in ((key, 0o644, "chmod 600"), (self.dir, 0o755, "chmod 700")):
            os.chmod(path, mode)
            pattern = r"key reload failed .*%s.* has mode %04o.*%s" % (re.escape(path), mode, says)
            n = H.count_log(srv, pattern)
            self.assertTrue(H.sighup_and_wait(srv), srv.stderr())
            self.assertGreater(H.wait_for_log(srv, pattern, n + 1, timeout=10), n, srv.stderr()[-3000:])
            self.assertIn('"kid":"%s"' % kid, X.header_of(self.client().token(X.claims(ISSUER))),
                          "the last good state signs on")
            self.assertEqual(H.jwks_kids(srv.get(H.JWKS)[2]), [kid], "and is served")
            os.chmod(path, 0o700 if path == self.dir else 0o600)
        self.stop_ok(srv)
        for path, mode, says in ((key, 0o640, "%s: private key file of the signing key directory has mode 0640"
                                  % key), (self.dir, 0o750, "%s has mode 0750" % self.dir)):
            os.chmod(path, mode)
            rc, out, err = H.run_once(["serve", "--service-account-issuer", ISSUER, "--signing-key-dir", self.dir,
                                       "--listen", "127.0.0.1:0", "--admin-listen", "none"])
            self.assertEqual(rc, 2, err)
            self.assertIn(says, err)
            os.chmod(path, 0o700 if path == self.dir else 0o600)

class ImportBesideAnUpstream(SignerCase):
    """--signing-key-import signs at once on the premise that the key has
    been published all along. Beside an --upstream that premise holds when
    the upstream's set holds the key; when it does not, no set anybody
    published held it, and the key waits --publish-ahead (24h by default)
    like a new one."""

    def setUp(self):
        super().setUp()
        self.api = StandInAPIServer(os.path.join(self.tmp, "apiserver"), tokens=("token-one",))
        self.api.__enter__()
        self.addCleanup(self.api.stop)
        self.token = os.path.join(self.tmp, "token")
        H.atomic_write(self.token, b"token-one\n")

    def start_importing(self, imported, upstream_keys):
        """A signer importing imported beside the stand-in serving
        upstream_keys, once its signer state holds the upstream's answer
        (FetchKeys lists every published key, the imported one included)."""
        self.api.set_documents(ISSUER, upstream_keys)
        srv = self.start_signer("--upstream", self.api.url, "--upstream-ca-file", self.api.ca_file,
                                "--upstream-token-file", self.token, "--upstream-refresh-interval", "1s",
                                "--signing-key-import", imported.priv)
        want = sorted([imported.kid] + [k.kid for k in upstream_keys if k.kid != imported.kid])

        def published():
            return sorted(k.key_id for k in self.client().fetch_keys().keys) == want
        self.assertTrue(H.wait_until(published, 10), srv.stderr()[-3000:])
        self.assertEqual(sorted(H.jwks_kids(srv.get(H.JWKS)[2])), want)
        return srv

    def test_an_imported_key_the_upstream_lacks_waits(self):
        served, imported = self.keys.ec(), self.keys.ec()
        srv = self.start_importing(imported, [served])
        c = self.client()
        with self.assertRaises(c.grpc.RpcError) as e:
            c.token(X.claims(ISSUER))
        self.assertIn("--publish-ahead", e.exception.details())
        self.assertIn(imported.kid, e.exception.details())
        self.stop_ok(srv)

    def test_an_imported_key_the_upstream_publishes_signs_at_once(self):
        served, imported = self.keys.ec(), self.keys.ec()
        srv = self.start_importing(imported, [imported, served])
        token = self.client().token(X.claims(ISSUER))
        self.assertIn('"kid":"%s"' % imported.kid, X.header_of(token))
        X.pyjwt_verify(token, srv.get(H.JWKS)[2], ISSUER)
        self.stop_ok(srv)

class Socket(SignerCase):

    def test_mode_and_group(self):
        self.start_signer()
        st = os.stat(self.sock)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        other = os.path.join(self.tmp, "group.sock")
        self.start_signer("--external-signer-socket-mode", "0660", "--external-signer-socket-owner",
                          ":%d" % (os.getgid() if os.getuid() else 65534), sock=other)
        st = os.stat(other)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
        self.assertEqual(st.st_gid, os.getgid() if os.getuid() else 65534)

    def test_a_path_in_use_is_refused_and_a_stale_socket_replaced(self):
        srv = self.start_signer()
        argv = ["serve", "--service-account-issuer", ISSUER, "--signing-key-dir", self.dir,
                "--external-signer-listen", "unix:" + self.sock, "--listen", "127.0.0.1:0", "--admin-listen", "none"]
        rc, out, err = H.run_once(argv)
        self.assertEqual(rc, 1, err)
        self.assertIn("another process serves this socket", err)
        self.stop_ok(srv)
        # a socket file nobody serves, as a killed server leaves it
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(self.sock)
        stale.close()
        self.assertTrue(stat.S_ISSOCK(os.stat(self.sock).st_mode))
        self.start_signer()
        self.assertIn("max_token_expiration_seconds", str(self.client().metadata()))
        plain = os.path.join(self.tmp, "plain")
        open(plain, "w").close()
        rc, out, err = H.run_once(argv[:-5] + ["unix:" + plain, "--listen", "127.0.0.1:0", "--admin-listen", "none"])
        self.assertEqual(rc, 1, err)
        self.assertIn("not a socket", err)

    def test_a_directory_others_can_write_is_refused(self):
        # there, anyone could swap the socket for a link between bind and
        # chown, and have the file it names given to the socket's owner
        shared = os.path.join(self.tmp, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o1777)
        sock = os.path.join(shared, "signer.sock")
        rc, out, err = H.run_once(["serve", "--service-account-issuer", ISSUER, "--signing-key-dir", self.dir,
                                   "--external-signer-listen", "unix:" + sock, "--listen", "127.0.0.1:0",
                                   "--admin-listen", "none"])
        self.assertEqual(rc, 1, err)
        self.assertIn("--external-signer-listen unix:%s: the socket's directory %s is writable by group or others "
                      "(mode 1777)" % (sock, shared), err)
        self.assertFalse(os.path.lexists(sock))

    @unittest.skipUnless(os.getuid() == 0, "giving the socket to another user needs root")
    def test_owner_user_and_group(self):
        self.start_signer("--external-signer-socket-mode", "0660", "--external-signer-socket-owner", "65534:65534")
        st = os.lstat(self.sock)
        self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (65534, 65534, 0o660))
        self.assertIn("max_token_expiration_seconds", str(self.client().metadata()))

    def test_the_socket_goes_with_the_server(self):
        srv = self.start_signer()
        self.stop_ok(srv)
        self.assertFalse(os.path.exists(self.sock))


if __name__ == "__main__":
    unittest.main()
