# SPDX-License-Identifier: Apache-2.0
"""The e2e harness's test cases and assertions: the documents a server
must serve (built independently of it), ServerTestCase and its TLS,
fixture-key and sanitizer variants, waiting for a published key set, and
parsing the admin status page."""

import json
import os
import re
import shutil
import signal
import tempfile
import time
import unittest

from harness_env import SLOW, DISCOVERY, JWKS, require_binary, wait_until, FIXTURES
from harness_http import IMF_FIXDATE, parse_http_date, one
from harness_proc import memcheck_problems, Server
from harness_keys import Key, KeyFactory, pyjwt_problem, make_ca, make_server_cert, TLS_SAN

__all__ = ["json_str", "expected_discovery", "default_jwks_uri", "expected_jwks", "ServerTestCase", "PUBLISH_SETTLE",
           "wait_for_jwks", "FixtureKeysTestCase", "TLSServerTestCase", "SANITIZER_ERROR", "SanitizerCheck",
           "html_tables", "html_rows", "RFC3339", "parse_rfc3339", "SharedSetUpCase"]


# --------------------------------------------------------------------------
# the documents a server must serve

def json_str(s: str) -> str:
    """A JSON string literal as Go's encoding/json writes it for plain ASCII
    URLs (the tests only use such values)."""
    assert all(0x20 <= ord(c) < 0x7f and c not in '<>&' for c in s), s
    return json.dumps(s)


def expected_discovery(issuer, jwks_uri, algs):
    return ('{"issuer":%s,"jwks_uri":%s,"response_types_supported":["id_token"],'
            '"subject_types_supported":["public"],'
            '"id_token_signing_alg_values_supported":[%s]}'
            % (json_str(issuer), json_str(jwks_uri),
               ",".join(json_str(a) for a in sorted(set(algs))))).encode()


def default_jwks_uri(issuer):
    return issuer.rstrip("/") + "/openid/v1/jwks"


def expected_jwks(keys):
    return ('{"keys":[' + ",".join(k.jwk_json for k in keys) + "]}").encode()


# Each worker thread takes a new key set from its own message queue: once
# one thread serves it, the others do within moments (longer under memcheck,
# which runs one thread at a time).
PUBLISH_SETTLE = 0.05 * SLOW


def wait_for_jwks(server, keys, timeout=3.0):
    """Polls the JWKS until it is exactly expected_jwks(keys), then waits
    PUBLISH_SETTLE so that every thread serves it; returns (status, headers,
    body) of the last response."""
    want = expected_jwks(keys)
    last = [None]

    def check():
        last[0] = server.get(JWKS)
        return last[0][0] == 200 and last[0][2] == want
    if wait_until(check, timeout):
        time.sleep(PUBLISH_SETTLE)
    return last[0]


# --------------------------------------------------------------------------
# base test cases

class ServerTestCase(unittest.TestCase):
    """Gives each test a temporary directory, a KeyFactory and a way to
    start servers that are always killed in teardown."""

    def setUp(self):
        require_binary(self)
        self.tmp = tempfile.mkdtemp(prefix="oidc-e2e-")
        self.keys = KeyFactory(self.tmp)
        self._servers = []

    def tearDown(self):
        problems = [p for s in self._servers for p in s.cleanup()]
        shutil.rmtree(self.tmp, ignore_errors=True)
        if problems:
            self.fail("\n\n".join(problems))

    def start_server(self, args, **kw):
        s = Server(args, **kw)
        self._servers.append(s)
        s.start()
        return s

    def stop_ok(self, server, sig=signal.SIGTERM):
        rc = server.stop(sig)
        self.assertEqual(rc, 0, "server exit status after %s was %r; stderr:\n%s\n%s"
                         % (signal.Signals(sig).name, rc, server.stderr(),
                            "\n".join(memcheck_problems(server.errdir))))

    # assertions shared by several files -------------------------------
    def assert_doc(self, status, headers, body, expected_body, content_type,
                   max_age=3600, cors=True, method="GET"):
        self.assertEqual(status, 200, body)
        self.assertEqual(one(headers, "content-type"), content_type)
        self.assertEqual(one(headers, "cache-control"), "public, max-age=%d" % max_age)
        self.assertEqual(int(one(headers, "content-length")), len(expected_body))
        self.assertNotIn("transfer-encoding", headers)
        etag = one(headers, "etag")
        self.assertRegex(etag, r'^"[\x21\x23-\x7e]*"$', "ETag must be strong")
        lm = one(headers, "last-modified")
        self.assertRegex(lm, IMF_FIXDATE)
        self.assertLessEqual(parse_http_date(lm), time.time() + 2, "Last-Modified in the future")
        if cors:
            self.assertEqual(one(headers, "access-control-allow-origin"), "*")
        else:
            self.assertNotIn("access-control-allow-origin", headers)
        if method == "GET":
            self.assertEqual(body, expected_body)
        else:
            self.assertEqual(body, b"")
        return etag, lm

    def check_both(self, server, issuer, keys, jwks_uri=None, content_type="application/jwk-set+json",
                   max_age=3600, cors=True):
        jwks_uri = jwks_uri or default_jwks_uri(issuer)
        st, h, b = server.get(DISCOVERY)
        self.assert_doc(st, h, b, expected_discovery(issuer, jwks_uri, [k.alg for k in keys]),
                        "application/json", max_age, cors)
        st, h, b = server.get(JWKS)
        self.assert_doc(st, h, b, expected_jwks(keys), content_type, max_age, cors)
        return b


class FixtureKeysTestCase(ServerTestCase):
    """ServerTestCase for tests that check tokens with PyJWT too: fails when
    PyJWT is missing, and has the committed fixture keys (PKCS#8 private;
    their public keys are what a server of the test publishes) as self.rsa
    and self.ec."""

    def setUp(self):
        super().setUp()
        problem = pyjwt_problem()
        if problem:
            self.fail(problem)
        self.rsa = Key(self.tmp, "fixrsa", os.path.join(FIXTURES, "rsa2048.pkcs8.key"))
        self.ec = Key(self.tmp, "fixec", os.path.join(FIXTURES, "ec256.pkcs8.key"))


class TLSServerTestCase(ServerTestCase):
    """ServerTestCase with a test CA and a way to start a server that also
    listens with TLS on a known port (server.tls_port)."""

    def setUp(self):
        super().setUp()
        self.ca = make_ca(self.tmp)
        self.ca_cert = self.ca[0]

    def new_cert(self, name, san=TLS_SAN):
        return make_server_cert(self.tmp, self.ca, san, name=name)

    def start_tls_server(self, args, cert, key, tls_port=None, **kw):
        """Starts a server that also listens with TLS on tls_port (by
        default the kernel's choice): server.tls_port."""
        srv = self.start_server(list(args) + ["--tls-listen", "127.0.0.1:%d" % (tls_port or 0),
                                              "--tls-cert-file", cert, "--tls-private-key-file", key], **kw)
        srv.tls_port = srv.port_of("--tls-listen")
        return srv


SANITIZER_ERROR = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error: |WARNING: ThreadSanitizer")


class SanitizerCheck:
    """Mixin for a ServerTestCase (list it first): at teardown, fails the
    test when a server it started printed an AddressSanitizer,
    LeakSanitizer or UBSan report (the -DOIDC_SANITIZE=ON build)."""

    def tearDown(self):
        for s in getattr(self, "_servers", []):
            if s.proc is not None and s.proc.poll() is None:
                s.stop()  # SIGTERM, so that LeakSanitizer runs at exit
        reports = [(s.argv, s.stderr()) for s in getattr(self, "_servers", [])
                   if SANITIZER_ERROR.search(s.stderr())]
        super().tearDown()
        if reports:
            argv, err = reports[0]
            self.fail("sanitizer report from %r:\n%s" % (argv, err[-6000:]))


# --------------------------------------------------------------------------
# the admin listener's status page (/)

def html_tables(text):
    """The tables of an HTML page, parsed with the standard library's
    parser: {table id: [[cell text, ...] per row]}; tables without an id
    are listed under the title of the <h2> before them."""
    import html.parser

    class Tables(html.parser.HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.tables, self.rows, self.cell, self.heading, self.h2 = {}, None, None, None, None

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.rows = self.tables.setdefault(dict(attrs).get("id") or self.h2 or "", [])
            elif tag == "tr" and self.rows is not None:
                self.rows.append([])
            elif tag in ("td", "th") and self.rows is not None:
                self.cell = ""
            elif tag == "h2":
                self.heading = ""

        def handle_endtag(self, tag):
            if tag == "table":
                self.rows = None
            elif tag in ("td", "th") and self.cell is not None:
                self.rows[-1].append(self.cell)
                self.cell = None
            elif tag == "h2" and self.heading is not None:
                self.h2, self.heading = self.heading, None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data
            if self.heading is not None:
                self.heading += data

    p = Tables()
    p.feed(text)
    p.close()
    return p.tables


def html_rows(tables, table_id):
    """{first cell: second cell} of a two-column table (documents, reload,
    counters and the added sections)."""
    return {r[0]: r[1] for r in tables.get(table_id, []) if len(r) == 2}


# A time as the status page and `keys` show it.
RFC3339 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"


def parse_rfc3339(text):
    """Unix seconds of a time of RFC3339's form."""
    import calendar
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


class SharedSetUpCase(unittest.TestCase):
    """A test class whose cases share one set-up made once for the class
    (servers, stand-ins), as the fleet's tests do to keep the suite fast.
    A subclass sets TMP_PREFIX and defines _start(cls), which registers each
    server it makes in cls.servers (before starting it) and anything else
    to stop in cls.cleanups. tearDownClass, also run when _start fails,
    stops the servers, each of which must exit 0 on SIGTERM (so an ASan
    leak report fails the class), then runs the cleanups and removes
    cls.tmp."""

    TMP_PREFIX = "oidc-e2e-shared-"

    @classmethod
    def setUpClass(cls):
        require_binary(cls)
        cls.tmp = tempfile.mkdtemp(prefix=cls.TMP_PREFIX)
        cls.servers, cls.cleanups = [], []
        try:
            cls._start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _start(cls):
        raise NotImplementedError

    @classmethod
    def tearDownClass(cls):
        problems = ["%r exited %r on SIGTERM:\n%s" % (s.argv, rc, s.stderr()[-3000:])
                    for s in cls.servers if s.proc is not None for rc in [s.stop()] if rc != 0]
        problems += [p for s in cls.servers for p in s.cleanup()]
        for stop in reversed(cls.cleanups):
            stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if problems:
            raise AssertionError("\n\n".join(problems))
