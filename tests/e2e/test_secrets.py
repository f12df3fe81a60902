# SPDX-License-Identifier: Apache-2.0
"""End-to-end: no credential reaches any output channel.

Every way the server holds a credential for a request it makes (an Azure
SAS token in the URL's query string, an Azure account key for SharedKey,
from a file and from AZURE_STORAGE_KEY, S3 keys and a session token from
the environment, a bearer token file for --upstream) is used against a
store and an upstream that refuse (HTTP 403/401, echoing the request they
got, query string and Authorization included), that never answer (a
socket that is never accepted from: the request times out) and that are
absent (nothing listening). Then every channel is searched for every
secret: `publish`'s and `keys --publish-to`'s output, `serve`'s text and
JSON logs, the admin status page, /metrics and /readyz. A URL is still
shown, with the names of its query parameters, so a failure stays
readable."""

import base64
import concurrent.futures
import http.server
import os
import secrets
import socket
import ssl
import threading
import unittest
import urllib.parse

import oidc_harness as H

ISSUER = "https://oidc.example.com/cluster-1"
ACCOUNT = "devstoreaccount1"
AZ_TARGET = "azblob://%s/oidc/cluster-1" % ACCOUNT
S3_TARGET = "s3://oidc/cluster-1"
WAIT = 40.0 * H.SLOW  # a request to the silent store times out after 10 s, and is tried again


def secret_text(n):
    """A credential-like string that appears nowhere by chance."""
    return "S3CR3T" + secrets.token_hex(n)


class Secrets:
    """One value of every credential kind, and each form it could leak in."""

    def __init__(self):
        self.sig = base64.b64encode(secrets.token_bytes(32)).decode()
        self.sas = ("sv=2021-08-06&ss=b&srt=co&sp=rwdlac&se=2030-01-01T00:00:00Z&spr=https,http&sig=" +
                    urllib.parse.quote(self.sig, safe=""))
        self.account_key = base64.b64encode(secrets.token_bytes(64)).decode()
        self.aws_secret = secret_text(20)
        self.aws_session = secret_text(60)
        self.bearer = secret_text(40)

    def forms(self):
        return {"SAS query": self.sas, "SAS sig": self.sig, "SAS sig, encoded": urllib.parse.quote(self.sig, safe=""),
                "account key": self.account_key, "S3 secret key": self.aws_secret,
                "S3 session token": self.aws_session, "bearer token": self.bearer}


class Refuser(http.server.BaseHTTPRequestHandler):
    """Refuses every request, with a body that echoes what it got (request
    target and header fields), as a careless store might."""

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        echo = ("%s %s\n%s" % (self.command, self.path, self.headers)).encode()
        status = 401 if self.path.startswith("/.well-known") or self.path.startswith("/openid") else 403
        body = b"<?xml version=\"1.0\"?><Error><Code>AuthenticationFailed</Code><Message>" + echo + \
               b"</Message></Error>"
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = answer

    def log_message(self, *a):
        pass


class RefusingServer:
    """Refuser on a loopback port, plain or TLS."""

    def __init__(self, tls_files=None):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuser)
        self.httpd.daemon_threads = True
        if tls_files:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls_files)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class SilentServer:
    """A listening socket nobody accepts from: the kernel completes the
    handshake, no byte ever comes back, the request times out."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]

    def close(self):
        self.sock.close()


class Absent:
    """A port nothing listens on."""

    def __init__(self):
        self.port = H.free_port()

    def close(self):
        pass


class NoSecretInAnyOutput(H.ServerTestCase):

    def setUp(self):
        super().setUp()
        self.s = Secrets()
        for k in [k for k in os.environ if k.startswith("AWS_") or k == "AZURE_STORAGE_KEY"]:
            self.addCleanup(os.environ.__setitem__, k, os.environ.pop(k))
        self.rsa = self.keys.rsa()
        self.ca = H.make_ca(self.tmp)
        self.cert = H.make_server_cert(self.tmp, self.ca, "IP:127.0.0.1")
        self.sas_file = self.write("sas", "?" + self.s.sas + "\n")
        self.key_file = self.write("account.key", self.s.account_key + "\n")
        self.token_file = self.write("token", self.s.bearer + "\n")
        self.stores = {}
        for mode, make in (("refuses", lambda: RefusingServer()), ("times out", SilentServer), ("absent", Absent)):
            self.stores[mode] = make()
            self.addCleanup(self.stores[mode].close)
        self.upstreams = {}
        for mode, make in (("refuses", lambda: RefusingServer(self.cert)), ("times out", SilentServer),
                           ("absent", Absent)):
            self.upstreams[mode] = make()
            self.addCleanup(self.upstreams[mode].close)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o600)
        return path

    def aws_env(self):
        return {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLEEXAMPLE", "AWS_SECRET_ACCESS_KEY": self.s.aws_secret,
                "AWS_SESSION_TOKEN": self.s.aws_session}

    def store_args(self, mode, azure=True, s3=True):
        endpoint = "http://127.0.0.1:%d" % self.stores[mode].port
        return (["--azblob-endpoint", endpoint] if azure else []) + \
            (["--s3-endpoint", endpoint, "--s3-region", "eu-west-1"] if s3 else [])

    def doc_args(self):
        return ["--service-account-issuer", ISSUER, "--service-account-key-file", self.rsa.pub]

    def assert_no_secret(self, channel, text):
        for what, value in self.s.forms().items():
            self.assertNotIn(value, text, "%s shows the %s:\n%s" % (channel, what, text[-3000:]))

    def cli_runs(self, mode):
        """Every command that pushes or reads a target, with every
        credential kind: (label, argv, environment)."""
        no_az_key = {}
        runs = [("publish, SAS", ["publish", "--to", AZ_TARGET, "--azblob-sas-file", self.sas_file], no_az_key),
                ("publish, SharedKey file", ["publish", "--to", AZ_TARGET, "--azblob-key-file", self.key_file],
                 no_az_key),
                ("publish, AZURE_STORAGE_KEY", ["publish", "--to", AZ_TARGET], {"AZURE_STORAGE_KEY": self.s.account_key}),
                ("publish, S3", ["publish", "--to", S3_TARGET], self.aws_env()),
                ("keys --publish-to, SAS", ["keys", "--publish-to", AZ_TARGET, "--azblob-sas-file", self.sas_file],
                 no_az_key),
                ("keys --publish-to, S3", ["keys", "--publish-to", S3_TARGET], self.aws_env())]
        return [(label, argv + self.store_args(mode, azure="azblob:" in argv[2], s3="s3:" in argv[2]) +
                 self.doc_args(), env) for label, argv, env in runs]

    def run_cli(self, label, argv, env):
        rc, out, err = H.run_once(argv, timeout=WAIT * 2, env=env)
        return label, rc, out, err

    def test_cli_commands_never_print_a_credential(self):
        jobs = [(mode, run) for mode in self.stores for run in self.cli_runs(mode)]
        with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
            results = list(pool.map(lambda j: (j[0],) + self.run_cli(*j[1]), jobs))
        for mode, label, rc, out, err in results:
            channel = "%s against a store that %s" % (label, mode)
            self.assertIsNotNone(rc, "%s did not finish" % channel)
            if label.startswith("publish"):  # keys shows a target's errors in its table and exits 0
                self.assertNotEqual(rc, 0, "%s succeeded:\n%s%s" % (channel, out, err))
            self.assertIn("127.0.0.1:%d" % self.stores[mode].port, out + err, "%s names no store:\n%s%s" %
                          (channel, out, err))
            self.assert_no_secret(channel + " (stdout)", out)
            self.assert_no_secret(channel + " (stderr)", err)
        refused = [err for mode, label, rc, out, err in results if mode == "refuses" and label == "publish, SAS"][0]
        self.assertIn("?<redacted: sv, ss, srt, sp, se, spr, sig>", refused, "the SAS URL is shown without values")

    def serve_pushing(self, mode, log_format):
        """serve pushing to both kinds of store, SAS and S3 credentials."""
        args = self.doc_args() + self.store_args(mode) + [
            "--publish-to", AZ_TARGET, "--azblob-sas-file", self.sas_file, "--publish-to", S3_TARGET,
            "--publish-check-interval", "1s", "--log-format", log_format]
        os.environ.update(self.aws_env())
        try:
            return self.start_server(args)
        finally:
            for k in self.aws_env():
                os.environ.pop(k)

    def serve_mirroring(self, mode, log_format):
        """serve mirroring an upstream with a bearer token file."""
        return self.start_server([
            "--service-account-issuer", ISSUER, "--upstream", "https://127.0.0.1:%d" % self.upstreams[mode].port,
            "--upstream-ca-file", self.ca[0], "--upstream-token-file", self.token_file, "--upstream-timeout", "2s",
            "--upstream-refresh-interval", "1s", "--log-format", log_format])

    def check_server(self, srv, channel, failed, port):
        """Waits until srv has logged a failure, then searches every
        channel it has for every secret."""
        self.assertTrue(H.wait_until(lambda: failed(srv.stderr()), WAIT),
                        "%s: no failure logged:\n%s" % (channel, srv.stderr()))
        for path in ("/", "/metrics", "/readyz"):
            body = H.admin_get(srv.admin_port, path)[2].decode(errors="replace")
            self.assert_no_secret("%s: admin %s" % (channel, path), body)
        status_page = H.admin_get(srv.admin_port, "/")[2].decode(errors="replace")
        self.assertIn("127.0.0.1:%d" % port, status_page, "%s: the status page shows the error" % channel)
        self.stop_ok(srv)
        with open(srv.outpath, errors="replace") as f:
            self.assert_no_secret(channel + " (stdout)", f.read())
        self.assert_no_secret(channel + " (log)", srv.stderr())

    def test_serve_never_shows_a_credential(self):
        pushing = [(m, f, self.serve_pushing(m, f)) for m in self.stores for f in ("text", "json")]
        mirroring = [(m, f, self.serve_mirroring(m, f)) for m in self.upstreams for f in ("text", "json")]
        for mode, fmt, srv in pushing:
            self.check_server(srv, "serve --publish-to (%s log), a store that %s" % (fmt, mode),
                              lambda log: "publishing to " + AZ_TARGET in log and "publishing to " + S3_TARGET in log,
                              self.stores[mode].port)
            if mode == "refuses" and fmt == "text":
                self.assertIn("<redacted: sv, ss, srt, sp, se, spr, sig>", srv.stderr())
        for mode, fmt, srv in mirroring:
            self.check_server(srv, "serve --upstream (%s log), an upstream that %s" % (fmt, mode),
                              lambda log: "reading --upstream failed" in log, self.upstreams[mode].port)


if __name__ == "__main__":
    unittest.main()
