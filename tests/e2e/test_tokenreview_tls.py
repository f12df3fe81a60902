# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of the TokenReview listener over TLS, as its main client
uses it: HashiCorp Vault's Kubernetes auth method.

VaultKubernetesAuth below is that method's client side written again in
Python (no Vault here), following vault-plugin-auth-kubernetes:
  - backend.go getDefaultTLSConfig / updateTLSConfig: TLS 1.2 or later,
    RootCAs the PEM of kubernetes_ca_cert only, the host name of
    kubernetes_host checked (Go's default);
  - backend.go loadConfig and token_review.go Review: the bearer token is
    token_reviewer_jwt; without it, unless disable_local_ca_jwt, the pod's
    own token file; else the JWT that logs in;
  - helpers.go setRequestHeader: "Authorization: Bearer <token>",
    Content-Type and Accept application/json;
  - token_review.go Review: POST <kubernetes_host>/apis/authentication.k8s.io/
    v1/tokenreviews with what encoding/json makes of
    authv1.TokenReview{Spec: {Token, Audiences}}, an empty TypeMeta omitted:
    {"metadata":{"creationTimestamp":null},"spec":{...},"status":{"user":{}}};
    then parseResponse: a status outside 200..206 is a Kubernetes error
    (kubeerrors.NewGenericServerResponse: a 401 becomes "lookup failed:
    service account unauthorized; ...", a 403 keeps the body as its
    message); a body that unmarshals into metav1.Status with a status other
    than "Success" is an error; then status.error, status.authenticated, the
    audiences asked for against status.audiences, the username in four parts
    starting system:serviceaccount;
  - path_login.go: the role's audience is checked against the token's aud
    claim first (cap/jwt), and serviceAccount.lookup asks for the role's
    audience, else the token's own aud claim, and compares status.user's
    name, uid and namespace with the token's claims.

The whole flow of the issue: the allowed reviewer -> 201 authenticated; the
pod's token for another audience -> not authenticated; no Authorization, a
forged caller, an expired caller and a caller outside the list -> 401, 401,
401, 403. Then the other ways Vault may be configured (its pod's own token,
no reviewer at all), mutual TLS with client certificates (curl, as a client
nobody here wrote), and the listener's certificate: reloaded on change with
its client CA, refused at start when broken. A client certificate names its
caller only while it is valid and its CA is trusted, however long a
connection or a TLS session lasts; one with an empty subject names nobody.
"""

import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import time
import unittest
import urllib.parse

import oidc_harness as H

H.ensure_pyjwt()
try:
    import jwt  # PyJWT
except ImportError:  # reported by each test (H.pyjwt_problem)
    jwt = None

ISSUER = "https://kubernetes.default.svc.cluster.local"
# What the tokens of pods carry when no audience is asked for: the API
# server's own audience (its issuer); Vault's pod sends such a token.
KUBE_AUDIENCE = ISSUER
REVIEWER = "system:serviceaccount:vault:vault-auth"
VAULT_POD = "system:serviceaccount:vault:vault"
SA_UID = "a087d5a0-5f1e-4b4e-8a36-3c8a3b0e5c11"
VAULT_UNAUTHORIZED = ("lookup failed: service account unauthorized; this could mean it has been deleted or "
                      "recreated with a new token")


class VaultError(Exception):
    pass


class VaultKubernetesAuth:
    """The client side of Vault's Kubernetes auth method (see the module's
    docstring for the code it follows), configured as `vault write
    auth/kubernetes/config` would: kubernetes_host, kubernetes_ca_cert,
    token_reviewer_jwt, disable_local_ca_jwt; local_jwt stands for
    /var/run/secrets/kubernetes.io/serviceaccount/token in Vault's pod."""

    def __init__(self, kubernetes_host, kubernetes_ca_cert, token_reviewer_jwt="", disable_local_ca_jwt=True,
                 local_jwt=None):
        self.host = kubernetes_host
        self.ca = kubernetes_ca_cert
        self.reviewer = token_reviewer_jwt
        self.disable_local = disable_local_ca_jwt
        self.local_jwt = local_jwt
        self.last = None  # (HTTP status, parsed body) of the last review

    def bearer(self, login_jwt):
        if self.reviewer:
            return self.reviewer
        if not self.disable_local and self.local_jwt:
            return self.local_jwt
        return login_jwt

    def post(self, body, authorization):
        u = urllib.parse.urlsplit(self.host)
        ctx = ssl.create_default_context(cadata=self.ca)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        c = http.client.HTTPSConnection(u.hostname, u.port, timeout=H.SOCK_TIMEOUT, context=ctx)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if authorization is not None:
            headers["Authorization"] = authorization.strip()
        try:
            c.request("POST", u.path.rstrip("/") + H.TOKENREVIEW_PATH, body=body, headers=headers)
            resp = c.getresponse()
            return resp.status, resp.read()
        finally:
            c.close()

    def review(self, login_jwt, audiences, authorization=H.DEFAULT_BEARER):
        """tokenReviewAPI.Review: {name, namespace, uid}, or VaultError with
        Vault's message. authorization replaces the header setRequestHeader
        sends (None: none), for the cases Vault itself never sends."""
        spec = {"token": login_jwt}
        if audiences:
            spec["audiences"] = list(audiences)
        body = json.dumps({"metadata": {"creationTimestamp": None}, "spec": spec, "status": {"user": {}}},
                          separators=(",", ":")).encode()
        if authorization is H.DEFAULT_BEARER:
            authorization = "Bearer " + self.bearer(login_jwt)
        st, raw = self.post(body, authorization)
        self.last = (st, json.loads(raw) if raw else None)
        if st < 200 or st > 206:
            if st == 401:
                raise VaultError(VAULT_UNAUTHORIZED)
            raise VaultError(raw.decode(errors="replace").strip())
        doc = json.loads(raw)
        if not isinstance(doc.get("status"), dict):  # unmarshals into a metav1.Status
            if doc.get("status") != "Success":
                raise VaultError(doc.get("message", ""))
        status = doc["status"]
        if status.get("error", ""):
            raise VaultError("lookup failed: %s" % status["error"])
        if not status.get("authenticated", False):
            raise VaultError("lookup failed: service account jwt not valid")
        got = status.get("audiences") or []
        if audiences and not any(a in got for a in audiences):
            raise VaultError("lookup failed: service account jwt valid for audience(s) [%s], but wanted [%s]"
                             % (" ".join(got), " ".join(audiences)))
        parts = status.get("user", {}).get("username", "").split(":")
        if len(parts) != 4:
            raise VaultError("lookup failed: unexpected username format")
        if parts[0] != "system" or parts[1] != "serviceaccount":
            raise VaultError("lookup failed: username returned is not a service account")
        return {"name": parts[3], "namespace": parts[2], "uid": status["user"].get("uid", "")}

    def login(self, role_audience, login_jwt):
        """pathLogin's checks around the review, for a bound token."""
        claims = H.jwt_parts(login_jwt)[1]
        if role_audience and role_audience not in claims.get("aud", []):
            raise VaultError("invalid audience (aud) claim: audience claim does not match any expected audience")
        sa = claims["kubernetes.io"]
        r = self.review(login_jwt, [role_audience] if role_audience else claims.get("aud", []))
        if sa["serviceaccount"]["name"] != r["name"]:
            raise VaultError("JWT names did not match")
        if sa["serviceaccount"]["uid"] != r["uid"]:
            raise VaultError("JWT UIDs did not match")
        if sa["namespace"] != r["namespace"]:
            raise VaultError("JWT namepaces did not match")
        return r


class TLSReviewBase(H.FixtureKeysTestCase):

    def setUp(self):
        super().setUp()
        self.ca = H.make_ca(self.tmp)
        self.ca_pem = H.read_bytes(self.ca[0]).decode()
        self.cert, self.tkey = H.make_server_cert(self.tmp, self.ca, H.TLS_SAN, name="review")

    def start(self, callers=(REVIEWER, VAULT_POD), extra=(), client_ca=None, cert=None, tkey=None):
        args = ["--service-account-issuer", ISSUER, "--service-account-key-file", self.rsa.pub,
                "--service-account-key-file", self.ec.pub, "--api-audiences", "vault",
                "--enable-token-review", "--token-review-listen", "127.0.0.1:0",
                "--token-review-tls-cert-file", cert or self.cert,
                "--token-review-tls-private-key-file", tkey or self.tkey,
                "--token-review-caller-audiences", KUBE_AUDIENCE]
        for c in callers:
            args += ["--token-review-allowed-callers", c]
        if client_ca:
            args += ["--token-review-client-ca-file", client_ca]
        srv = self.start_server(args + list(extra))
        srv.review_port = srv.port_of("--token-review-listen")
        srv.url = "https://127.0.0.1:%d" % srv.review_port
        return srv

    def sa_token(self, namespace, sa, audiences, uid=SA_UID, now=None, lifetime=3600, key=None):
        key = key or self.rsa
        claims = H.kube_claims(ISSUER, audiences, namespace, sa, uid, now=now, lifetime=lifetime)
        return jwt.encode(claims, H.read_bytes(key.priv), algorithm=key.alg, headers={"kid": key.kid})

    def pod_token(self, audiences=("vault",)):
        return H.mint_token(self.rsa.priv, ISSUER, audiences=list(audiences), namespace="payments", sa="api",
                            sa_uid=SA_UID, pod=("api-7d9f-x2", "778a530c-1c6a-4f0e-9a59-0d2f4b0d7e21"))

    def curl_review(self, srv, token, *args):
        """POSTs a review with curl (a client nobody here wrote): (HTTP
        status, parsed body or None, curl's exit status)."""
        body = json.dumps(H.review_body(token))
        r = H.curl("--cacert", self.ca[0], "-H", "Content-Type: application/json", "--data", body,
                   "-w", "\n%{http_code}", *args, srv.url + H.TOKENREVIEW_PATH)
        text, _, code = r.stdout.rpartition("\n")
        return int(code or 0), json.loads(text) if text else None, r.returncode


class Vault(TLSReviewBase):

    def test_the_whole_flow(self):
        srv = self.start()
        reviewer = self.sa_token("vault", "vault-auth", [KUBE_AUDIENCE])
        vault = VaultKubernetesAuth(srv.url, self.ca_pem, token_reviewer_jwt=reviewer)
        pod = self.pod_token()

        # the allowed reviewer: 201, authenticated, read as Vault reads it
        self.assertEqual(vault.login("vault", pod), {"name": "api", "namespace": "payments", "uid": SA_UID})
        st, doc = vault.last
        self.assertEqual(st, 201)
        self.assertEqual((doc["status"]["authenticated"], doc["status"]["audiences"]), (True, ["vault"]))
        self.assertEqual(doc["status"]["user"]["username"], "system:serviceaccount:payments:api")
        # a role without an audience asks for the token's own ones
        self.assertEqual(vault.login("", pod)["name"], "api")
        self.assertEqual(vault.last[1]["spec"]["audiences"], ["vault"])

        # the pod's token for another audience: answered, not authenticated
        other = self.pod_token(["sts.amazonaws.com"])
        with self.assertRaises(VaultError) as cm:
            vault.review(other, ["vault"])
        self.assertEqual(str(cm.exception), 'lookup failed: token audiences ["sts.amazonaws.com"] is invalid for '
                                            'the target audiences ["vault"]')
        self.assertEqual((vault.last[0], vault.last[1]["status"]["authenticated"]), (201, False))

        # no Authorization, a forged caller, an expired caller: 401
        h64, p64, _ = reviewer.split(".")
        forged = "%s.%s.%s" % (h64, p64, H.b64url(b"\x02" * 256))
        expired = self.sa_token("vault", "vault-auth", [KUBE_AUDIENCE], now=int(time.time()) - 7200)
        for name, authorization in (("no header", None), ("forged", "Bearer " + forged),
                                    ("expired", "Bearer " + expired)):
            with self.subTest(caller=name), self.assertRaises(VaultError) as cm:
                vault.review(pod, ["vault"], authorization=authorization)
            self.assertEqual(str(cm.exception), VAULT_UNAUTHORIZED)
            self.assertEqual(vault.last, (401, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                                "status": "Failure", "message": "Unauthorized",
                                                "reason": "Unauthorized", "code": 401}))
        # a caller outside the list: 403, whose Status Vault shows as it is
        outsider = VaultKubernetesAuth(srv.url, self.ca_pem,
                                       token_reviewer_jwt=self.sa_token("vault", "other", [KUBE_AUDIENCE]))
        with self.assertRaises(VaultError) as cm:
            outsider.login("vault", pod)
        self.assertEqual(outsider.last[0], 403)
        self.assertEqual(json.loads(str(cm.exception))["message"],
                         'tokenreviews.authentication.k8s.io is forbidden: User "system:serviceaccount:vault:other" '
                         'cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the '
                         'cluster scope')
        self.stop_ok(srv)

    def test_vault_in_a_pod_sends_its_own_token(self):
        """disable_local_ca_jwt=false and no token_reviewer_jwt: Vault sends
        its pod's token (for the API server's audience), so its own service
        account is the caller to allow."""
        srv = self.start()
        local = self.sa_token("vault", "vault", [KUBE_AUDIENCE])
        vault = VaultKubernetesAuth(srv.url, self.ca_pem, disable_local_ca_jwt=False, local_jwt=local)
        self.assertEqual(vault.login("vault", self.pod_token())["namespace"], "payments")
        # without either, Vault sends the token that logs in, which is no
        # caller's: its audience is Vault's, not a caller audience
        bare = VaultKubernetesAuth(srv.url, self.ca_pem, disable_local_ca_jwt=True)
        with self.assertRaises(VaultError) as cm:
            bare.login("vault", self.pod_token())
        self.assertEqual(str(cm.exception), VAULT_UNAUTHORIZED)
        self.stop_ok(srv)

    def test_vault_trusts_only_kubernetes_ca_cert(self):
        srv = self.start()
        other_ca = H.make_ca(self.tmp, name="other-ca")
        vault = VaultKubernetesAuth(srv.url, H.read_bytes(other_ca[0]).decode(),
                                    token_reviewer_jwt=self.sa_token("vault", "vault-auth", [KUBE_AUDIENCE]))
        with self.assertRaises(ssl.SSLCertVerificationError):
            vault.login("vault", self.pod_token())
        # and the host name it was given
        vault = VaultKubernetesAuth("https://localhost:%d" % srv.review_port, self.ca_pem,
                                    token_reviewer_jwt=self.sa_token("vault", "vault-auth", [KUBE_AUDIENCE]))
        self.assertEqual(vault.login("vault", self.pod_token())["name"], "api")
        self.stop_ok(srv)


class MutualTLS(TLSReviewBase):

    def setUp(self):
        super().setUp()
        self.client_ca = H.make_ca(self.tmp, name="client-ca")
        self.vault_cert = H.make_client_cert(self.tmp, self.client_ca, "/O=example/CN=vault", name="vault")
        self.other_cert = H.make_client_cert(self.tmp, self.client_ca, "/O=example/CN=other", name="other")
        self.foreign_ca = H.make_ca(self.tmp, name="foreign-ca")
        self.foreign_cert = H.make_client_cert(self.tmp, self.foreign_ca, "/O=example/CN=vault", name="foreign")
        self.subject = H.cert_subject_rfc4514(self.vault_cert[0])

    def test_client_certificates(self):
        self.assertEqual(self.subject, "CN=vault,O=example")
        log = os.path.join(self.tmp, "access.log")
        srv = self.start(callers=(self.subject, REVIEWER), client_ca=self.client_ca[0],
                         extra=("--access-log", log))
        pod = self.pod_token()
        reviewer = self.sa_token("vault", "vault-auth", [KUBE_AUDIENCE])
        cert_args = lambda c: ("--cert", c[0], "--key", c[1])  # noqa: E731

        st, doc, rc = self.curl_review(srv, pod, *cert_args(self.vault_cert))
        self.assertEqual((rc, st, doc["status"]["authenticated"]), (0, 201, True), doc)
        st, doc, rc = self.curl_review(srv, pod, *cert_args(self.other_cert))
        self.assertEqual((rc, st), (0, 403), doc)
        self.assertIn('User "CN=other,O=example" cannot create resource', doc["message"])
        # a certificate the client CA did not issue: no TLS session at all
        st, doc, rc = self.curl_review(srv, pod, *cert_args(self.foreign_cert))
        self.assertNotEqual(rc, 0)
        self.assertEqual(st, 0)
        # no certificate: a bearer token still authenticates the caller
        st, doc, rc = self.curl_review(srv, pod, "-H", "Authorization: Bearer " + reviewer)
        self.assertEqual((st, doc["status"]["authenticated"]), (201, True), doc)
        st, doc, rc = self.curl_review(srv, pod)
        self.assertEqual((st, doc["reason"]), (401, "Unauthorized"), doc)
        # a certificate is who calls, whatever the bearer token says (as
        # kube-apiserver's x509 authenticator comes before its token ones)
        st, doc, rc = self.curl_review(srv, pod, "-H", "Authorization: Bearer not-a-token", *cert_args(self.vault_cert))
        self.assertEqual(st, 201, doc)
        st, doc, rc = self.curl_review(srv, pod, "-H", "Authorization: Bearer " + reviewer, *cert_args(self.other_cert))
        self.assertEqual(st, 403, doc)

        lines = H.wait_until(lambda: [json.loads(x) for x in H.read_bytes(log).splitlines()]
                             if os.path.exists(log) and len(H.read_bytes(log).splitlines()) >= 6 else None, 5)
        self.assertEqual(sorted((x["status"], x.get("caller")) for x in lines),
                         sorted([(201, "CN=vault,O=example"), (403, "CN=other,O=example"), (201, REVIEWER),
                                 (401, None), (201, "CN=vault,O=example"), (403, "CN=other,O=example")]))
        self.stop_ok(srv)

    def test_certificate_without_subject(self):
        """A certificate with an empty subject (its names in the
        subjectAltName only) names no caller: it counts as no certificate,
        so the bearer token decides, as kube-apiserver's x509 authenticator
        passes a certificate without a CN on to the token authenticators.
        (The sanitizer build used to abort on it.)"""
        nameless = H.make_client_cert_x509(self.tmp, self.client_ca, "nameless", san=("vault.example",))
        self.assertEqual(H.cert_subject_rfc4514(nameless[0]), "")
        log = os.path.join(self.tmp, "access.log")
        srv = self.start(callers=(self.subject, REVIEWER), client_ca=self.client_ca[0],
                         extra=("--access-log", log))
        pod = self.pod_token()
        reviewer = self.sa_token("vault", "vault-auth", [KUBE_AUDIENCE])
        cert_args = ("--cert", nameless[0], "--key", nameless[1])

        st, doc, rc = self.curl_review(srv, pod, *cert_args)
        self.assertEqual((rc, st, doc["reason"]), (0, 401, "Unauthorized"), doc)
        st, doc, rc = self.curl_review(srv, pod, "-H", "Authorization: Bearer " + reviewer, *cert_args)
        self.assertEqual((rc, st, doc["status"]["authenticated"]), (0, 201, True), doc)
        st, doc, rc = self.curl_review(srv, pod, "-H", "Authorization: Bearer " + reviewer, "--cert",
                                       self.other_cert[0], "--key", self.other_cert[1])
        self.assertEqual((rc, st), (0, 403), doc)
        lines = H.wait_until(lambda: [json.loads(x) for x in H.read_bytes(log).splitlines()]
                             if os.path.exists(log) and len(H.read_bytes(log).splitlines()) >= 3 else None, 5)
        self.assertEqual(sorted((x["status"], x.get("caller", "")) for x in lines),
                         [(201, REVIEWER), (401, ""), (403, "CN=other,O=example")])
        self.stop_ok(srv)

    def test_client_ca_reloaded_on_change(self):
        ca_file = os.path.join(self.tmp, "clients.pem")
        shutil.copy(self.client_ca[0], ca_file)
        srv = self.start(callers=(self.subject,), client_ca=ca_file, extra=("--key-reload-interval", "1s"))
        pod = self.pod_token()
        self.assertEqual(self.curl_review(srv, pod, "--cert", self.vault_cert[0], "--key", self.vault_cert[1])[0], 201)
        # the operator swaps the client CA: the old client's handshake fails,
        # a certificate of the new CA is accepted
        H.atomic_write(ca_file, H.read_bytes(self.foreign_ca[0]))
        ok = H.wait_until(lambda: self.curl_review(srv, pod, "--cert", self.foreign_cert[0], "--key",
                                                   self.foreign_cert[1])[0] == 201, 10)
        self.assertTrue(ok, srv.stderr())
        self.assertNotEqual(self.curl_review(srv, pod, "--cert", self.vault_cert[0], "--key",
                                             self.vault_cert[1])[2], 0)
        self.stop_ok(srv)


class SessionLifetime(TLSReviewBase):
    """A client certificate authenticates for as long as it is valid and its
    CA is in --token-review-client-ca-file, not for as long as a TLS session
    or a connection lasts: past its notAfter, or once the CA file no longer
    holds its CA, a TLS 1.3 session is not resumed (a full handshake, which
    the certificate fails) and a connection kept open is answered as a
    caller without credentials."""

    def setUp(self):
        super().setUp()
        self.client_ca = H.make_ca(self.tmp, name="client-ca")
        self.ca_file = os.path.join(self.tmp, "clients.pem")
        shutil.copy(self.client_ca[0], self.ca_file)
        self.caller = "CN=vault,O=example"
        self.srv = self.start(callers=(self.caller,), client_ca=self.ca_file,
                              extra=("--key-reload-interval", "1s", "--request-timeout", "5m"))
        self.pod = self.pod_token()

    def client(self, cert, version=ssl.TLSVersion.TLSv1_3):
        """A client presenting cert, as one process of a caller: sessions
        of one SSLContext can be resumed with it."""
        ctx = ssl.create_default_context(cafile=self.ca[0])
        ctx.minimum_version = ctx.maximum_version = version
        ctx.load_cert_chain(cert[0], cert[1])
        return ctx

    def connect(self, ctx, session=None):
        """A kept-alive HTTP/1.1 connection over TLS, resuming session when
        given one; OSError (ssl.SSLError among them) when refused."""
        raw = socket.create_connection(("127.0.0.1", self.srv.review_port), timeout=H.SOCK_TIMEOUT)
        try:
            s = ctx.wrap_socket(raw, server_hostname="127.0.0.1", session=session)
        except Exception:
            raw.close()
            raise
        c = http.client.HTTPConnection("127.0.0.1", self.srv.review_port, timeout=H.SOCK_TIMEOUT)
        c.sock = s
        return c

    def review_on(self, c):
        """One review on connection c: (status, parsed body). The response
        read, the session tickets sent before it have been taken in too."""
        c.request("POST", H.TOKENREVIEW_PATH, body=json.dumps(H.review_body(self.pod)),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read())

    def resume(self, ctx, session):
        """A review on a new connection offering session: (status, reused,
        the connection's session), or None when the server refused the
        connection (TLS alert, reset or close before any answer)."""
        try:
            c = self.connect(ctx, session)
        except OSError:
            return None
        try:
            st, _ = self.review_on(c)
            return st, c.sock.session_reused, c.sock.session
        except (OSError, http.client.HTTPException, ValueError):
            return None
        finally:
            c.close()

    def assert_not_the_caller(self, got, what):
        """got (of resume) is not the allowed caller's answer: the
        connection refused, or a full handshake answered 401."""
        if got is not None:
            self.assertEqual((got[0], got[1]), (401, False), what)

    def assert_unauthorized(self, c, what):
        st, doc = self.review_on(c)
        self.assertEqual((st, doc["reason"]), (401, "Unauthorized"), what)

    def session(self, ctx):
        """A session made by a review on a new connection, then resumed by
        another: the resumed connection's session."""
        first = self.connect(ctx)
        self.assertEqual(self.review_on(first)[0], 201)
        session = first.sock.session
        first.close()
        self.assertTrue(session.has_ticket)
        again = self.resume(ctx, session)
        self.assertIsNotNone(again)
        self.assertEqual(again[:2], (201, True))
        return again[2]

    def short_lived(self):
        """A certificate of the caller that expires a few seconds from now,
        a TLS 1.3 and a TLS 1.2 session made with it and resumed once, and a
        connection kept open, all before it expires: (the two clients and
        their sessions, the kept connection, notAfter). On a machine too
        slow to do that in time the lifetime grows."""
        for lifetime in (6, 20, 60):
            cert = H.make_client_cert_x509(self.tmp, self.client_ca, "short-%d" % lifetime,
                                           subject=[("O", "example"), ("CN", "vault")],
                                           not_after=time.time() + lifetime)
            clients = [self.client(cert, v) for v in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2)]
            try:
                sessions = [(ctx, self.session(ctx)) for ctx in clients]
                kept = self.connect(clients[0])
                self.addCleanup(kept.close)
                self.assertEqual(self.review_on(kept)[0], 201)
            except AssertionError:
                # refused because the certificate expired meanwhile: too
                # slow a machine for this lifetime, not a failure
                if time.time() < cert[2] - 1:
                    raise
                continue
            if time.time() < cert[2] - 1:
                return sessions, kept, cert[2]
            kept.close()
        self.fail("could not make a session before the certificate expired")

    def test_expired_certificate_ends_its_sessions(self):
        sessions, kept, not_after = self.short_lived()
        # the event: the certificate has expired (to the server's second too)
        self.assertTrue(H.wait_until(lambda: time.time() >= not_after + 1, 120, interval=0.1))

        for ctx, session in sessions:
            with self.subTest(version=ctx.maximum_version.name):
                got = self.resume(ctx, session)
                self.assert_not_the_caller(got, "a session of an expired certificate resumed")
                # no new ticket either: had the refused connection got one,
                # it would not be resumed as the caller either
                if got is not None and got[2] is not None and got[2].has_ticket:
                    self.assert_not_the_caller(self.resume(ctx, got[2]), "a ticket given to an expired certificate")
                # a fresh handshake with it fails, as before
                self.assertIsNone(self.resume(ctx, None))
        # the connection opened before the expiry answers as to nobody
        self.assert_unauthorized(kept, "a connection kept open past the certificate's expiry")
        kept.close()
        samples = H.scrape_metrics(self.srv.admin_port)
        self.assertGreaterEqual(H.metric(samples, "oidc_token_review_requests_total", outcome="unauthenticated"), 1)
        self.stop_ok(self.srv)

    def test_client_ca_change_ends_its_sessions(self):
        cert = H.make_client_cert(self.tmp, self.client_ca, "/O=example/CN=vault", name="vault")
        ctx = self.client(cert)
        session = self.session(ctx)
        kept = self.connect(ctx)
        self.addCleanup(kept.close)
        self.assertEqual(self.review_on(kept)[0], 201)

        # the operator replaces the client CA; once the server took the new
        # file in (a certificate of the new CA is accepted), the old CA's
        # caller is nobody, on its open connection too
        foreign_ca = H.make_ca(self.tmp, name="foreign-ca")
        foreign = self.client(H.make_client_cert(self.tmp, foreign_ca, "/O=example/CN=vault", name="foreign"))
        H.atomic_write(self.ca_file, H.read_bytes(foreign_ca[0]))
        self.assertGreaterEqual(H.wait_for_log(self.srv, r"TokenReview TLS certificate loaded from", 2, 20), 2,
                                self.srv.stderr())
        self.assertTrue(H.wait_until(lambda: (self.resume(foreign, None) or (0,))[0] == 201, 20),
                        self.srv.stderr())
        self.assert_not_the_caller(self.resume(ctx, session), "a session of a CA no longer trusted resumed")
        self.assertIsNone(self.resume(ctx, None))
        # a connection kept open: the worker serving it may take the new CA
        # a moment after the one that answered the new certificate
        self.assertTrue(H.wait_until(lambda: self.review_on(kept)[0] == 401, 20),
                        "a connection kept open across a client CA change still answered as the caller")
        self.assert_unauthorized(kept, "a connection kept open across a client CA change")
        kept.close()
        self.stop_ok(self.srv)


class Listener(TLSReviewBase):

    def test_tls_only(self):
        srv = self.start()
        self.assertIn("listening on https://127.0.0.1:%d" % srv.review_port, srv.stderr())
        self.assertEqual(H.count_log(srv, "token-review-insecure-http"), 0)
        # plain HTTP gets no HTTP answer
        with socket.create_connection(("127.0.0.1", srv.review_port), timeout=H.SOCK_TIMEOUT) as s:
            s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" % H.TOKENREVIEW_PATH.encode())
            try:
                data = s.recv(4096)
            except ConnectionResetError:
                data = b""
        self.assertFalse(data.startswith(b"HTTP/"), data)
        # HTTP/1.1 only: h2 is not offered
        with H.tls_connect(srv.review_port, self.ca[0], alpn=("h2", "http/1.1")) as s:
            self.assertEqual(s.selected_alpn_protocol(), "http/1.1")
        # the certificate's expiry is exported
        samples = H.scrape_metrics(srv.admin_port)
        self.assertEqual(H.metric(samples, "oidc_token_review_tls_certificate_expiry_timestamp_seconds"),
                         H.cert_not_after(self.cert))
        self.assertIsNone(H.metric(samples, "oidc_tls_certificate_expiry_timestamp_seconds"))
        self.stop_ok(srv)

    def test_certificate_reloaded_on_change(self):
        cert, tkey = os.path.join(self.tmp, "tr.crt"), os.path.join(self.tmp, "tr.key")
        shutil.copy(self.cert, cert)
        shutil.copy(self.tkey, tkey)
        srv = self.start(cert=cert, tkey=tkey, extra=("--key-reload-interval", "1s"))
        self.assertEqual(H.tls_peer_fingerprint(srv.review_port, self.ca[0]), H.cert_fingerprint(self.cert))
        new_cert, new_key = H.make_server_cert(self.tmp, self.ca, H.TLS_SAN, name="review2")
        # a half-written pair (the key of the old one) is refused and counted
        H.atomic_write(cert, H.read_bytes(new_cert))
        self.assertGreaterEqual(H.wait_for_log(srv, r"TokenReview TLS certificate reload failed, keeping the "
                                                    r"current one: --token-review-tls-private-key-file", 1, 10), 1,
                                srv.stderr())
        self.assertEqual(H.tls_peer_fingerprint(srv.review_port, self.ca[0]), H.cert_fingerprint(self.cert))
        samples = H.scrape_metrics(srv.admin_port)
        self.assertGreaterEqual(H.metric(samples, "oidc_reload_failures_total", source="token_review_tls"), 1)
        self.assertEqual(H.metric(samples, "oidc_reload_failures_total", source="tls"), 0)
        H.atomic_write(tkey, H.read_bytes(new_key))
        ok = H.wait_until(lambda: H.tls_peer_fingerprint(srv.review_port, self.ca[0]) == H.cert_fingerprint(new_cert),
                          10, interval=0.1)
        self.assertTrue(ok, srv.stderr())
        reviewer = self.sa_token("vault", "vault-auth", [KUBE_AUDIENCE])
        vault = VaultKubernetesAuth(srv.url, self.ca_pem, token_reviewer_jwt=reviewer)
        self.assertEqual(vault.login("vault", self.pod_token())["name"], "api")
        self.stop_ok(srv)

    def test_broken_files_refuse_the_start(self):
        other_cert, other_key = H.make_server_cert(self.tmp, self.ca, H.TLS_SAN, name="other")
        base = ["serve", "--service-account-issuer", ISSUER, "--service-account-key-file", self.rsa.pub,
                "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--enable-token-review",
                "--token-review-listen", "127.0.0.1:0", "--token-review-allowed-callers", REVIEWER]
        cases = [
            ([self.cert, os.path.join(self.tmp, "missing.key")], [],
             "--token-review-tls-private-key-file " + os.path.join(self.tmp, "missing.key")),
            ([self.cert, other_key], [], "--token-review-tls-private-key-file %s: " % other_key),
            ([self.cert, self.tkey], ["--token-review-client-ca-file", self.tkey],
             "--token-review-client-ca-file %s: no PEM certificate in it" % self.tkey),
        ]
        for (crt, key), extra, message in cases:
            with self.subTest(message=message):
                rc, out, err = H.run_bin(base + ["--token-review-tls-cert-file", crt,
                                                 "--token-review-tls-private-key-file", key] + extra, timeout=30)
                self.assertNotEqual(rc, 0, err)
                self.assertIn("TokenReview TLS certificate unusable: " + message, err)
                self.assertNotIn("listening on", err)


if __name__ == "__main__":
    unittest.main()
