# SPDX-License-Identifier: Apache-2.0
"""The e2e harness's etcd: a real three-member etcd cluster (Debian's
etcd-server, /usr/bin/etcd) on 127.0.0.1, with TLS and client-certificate
auth on its client port (certificates made by the test), members on random
free ports, data directories in a temporary directory of its own, started
once per test file and killed at the end (also on failure), plus a small
client of etcd's v3 JSON gateway for the tests' own reads and writes.

    cluster = EtcdCluster()          # started, healthy
    cluster.servers                  # "https://127.0.0.1:P1,..." for --etcd-servers
    cluster.ca, cluster.cert, cluster.key
    cluster.range_prefix("/oidc-discovery/")  -> {key: value bytes}
    cluster.stop_member(i); cluster.start_member(i)
    cluster.close()
"""

import base64
import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time

from harness_env import SLOW, free_port, wait_until
from harness_keys import make_ca, make_client_cert_x509, make_server_cert

__all__ = ["ETCD_BIN", "EtcdCluster", "etcd_problem"]

ETCD_BIN = "/usr/bin/etcd"
MEMBERS = 3
START_TIMEOUT = 30  # seconds for a member (or the cluster) to be healthy


def etcd_problem():
    """None when etcd can run here; else why (the test then fails, naming
    the package scripts/setup.sh installs)."""
    if not os.access(ETCD_BIN, os.X_OK):
        return "%s not found: install Debian's etcd-server (scripts/setup.sh)" % ETCD_BIN
    return None


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


def prefix_end(prefix: bytes) -> bytes:
    """etcd's range_end for every key under prefix."""
    p = bytearray(prefix)
    while p and p[-1] == 0xFF:
        p.pop()
    p[-1] += 1
    return bytes(p)


class EtcdCluster:
    """Three etcd members, TLS with client-certificate auth on their client
    ports, plain HTTP between peers (all on 127.0.0.1)."""

    def __init__(self):
        problem = etcd_problem()
        if problem:
            raise AssertionError(problem)
        self.tmp = tempfile.mkdtemp(prefix="oidc-e2e-etcd-")
        self.procs = [None] * MEMBERS
        try:
            self._certificates()
            self.client_ports = [free_port() for _ in range(MEMBERS)]
            self.peer_ports = [free_port() for _ in range(MEMBERS)]
            self.initial = ",".join("m%d=http://127.0.0.1:%d" % (i, self.peer_ports[i]) for i in range(MEMBERS))
            for i in range(MEMBERS):
                self.start_member(i, wait=False)
            if not wait_until(self.healthy, START_TIMEOUT, interval=0.2):
                raise AssertionError("etcd cluster not healthy in %ds:\n%s" % (START_TIMEOUT, self.logs()))
        except BaseException:
            self.close()
            raise

    # ---- certificates -------------------------------------------------

    def _certificates(self):
        d = os.path.join(self.tmp, "pki")
        os.mkdir(d, 0o700)
        self.ca_pair = make_ca(d, "etcd-ca")
        self.ca = self.ca_pair[0]
        self.server_cert, self.server_key = make_server_cert(d, self.ca_pair, "IP:127.0.0.1,DNS:localhost",
                                                             "etcd-server", "serverAuth,clientAuth")
        self.cert, self.key, _ = make_client_cert_x509(d, self.ca_pair, "etcd-client", [("CN", "oidc-discovery")])
        self.pki = d

    def client_cert(self, name, not_after=None):
        """Another client certificate of the cluster's CA (an expired one
        with not_after in the past): (cert path, key path)."""
        crt, key, _ = make_client_cert_x509(self.pki, self.ca_pair, name, [("CN", name)], not_after=not_after)
        return crt, key

    def foreign_ca(self):
        """A CA the cluster does not trust, with a client certificate of
        its own: (ca path, cert path, key path)."""
        d = os.path.join(self.tmp, "foreign")
        os.makedirs(d, 0o700, exist_ok=True)
        ca = make_ca(d, "foreign-ca")
        crt, key, _ = make_client_cert_x509(d, ca, "foreign-client", [("CN", "foreign")])
        return ca[0], crt, key

    # ---- members -------------------------------------------------------

    @property
    def servers(self):
        return ",".join(self.url(i) for i in range(MEMBERS))

    def url(self, i):
        return "https://127.0.0.1:%d" % self.client_ports[i]

    def start_member(self, i, wait=True):
        data = os.path.join(self.tmp, "m%d" % i)
        state = "existing" if os.path.isdir(data) else "new"
        argv = [ETCD_BIN, "--name", "m%d" % i, "--data-dir", data,
                "--listen-client-urls", self.url(i), "--advertise-client-urls", self.url(i),
                "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer_ports[i],
                "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % self.peer_ports[i],
                "--initial-cluster", self.initial, "--initial-cluster-state", state,
                "--initial-cluster-token", "oidc-e2e",
                "--cert-file", self.server_cert, "--key-file", self.server_key,
                "--trusted-ca-file", self.ca, "--client-cert-auth",
                "--heartbeat-interval", "100", "--election-timeout", "1000",
                "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"]
        log = open(os.path.join(self.tmp, "m%d.log" % i), "ab")
        self.procs[i] = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        if wait and not wait_until(lambda: self.member_ok(i), START_TIMEOUT, interval=0.2):
            raise AssertionError("etcd member m%d not back in %ds:\n%s" % (i, START_TIMEOUT, self.logs()))

    def stop_member(self, i, sig=signal.SIGKILL):
        p = self.procs[i]
        if p is not None and p.poll() is None:
            p.send_signal(sig)
            p.wait(timeout=30)
        self.procs[i] = None

    def running(self):
        return [i for i in range(MEMBERS) if self.procs[i] is not None and self.procs[i].poll() is None]

    def leader(self):
        """The index of the member that leads, or None."""
        for i in self.running():
            try:
                st = self.call("/v3/maintenance/status", {}, member=i, timeout=2)
            except (OSError, AssertionError):
                continue
            hdr = st.get("header", {})
            if st.get("leader") and st.get("leader") == hdr.get("member_id"):
                return i
        return None

    def member_ok(self, i):
        try:
            self.call("/v3/kv/range", {"key": b64("health")}, member=i, timeout=2)
            return True
        except (OSError, AssertionError):
            return False

    def healthy(self):
        return any(self.member_ok(i) for i in self.running())

    def logs(self):
        out = []
        for i in range(MEMBERS):
            try:
                with open(os.path.join(self.tmp, "m%d.log" % i), errors="replace") as f:
                    out.append("--- m%d\n%s" % (i, f.read()[-3000:]))
            except OSError:
                pass
        return "\n".join(out)

    def close(self):
        for i in range(MEMBERS):
            try:
                self.stop_member(i)
            except Exception:  # noqa: BLE001 (best effort: kill them all)
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- the tests' own client ----------------------------------------

    def _context(self):
        ctx = ssl.create_default_context(cafile=self.ca)
        ctx.load_cert_chain(self.cert, self.key)
        return ctx

    def call(self, path, body, member=None, timeout=5):
        """POSTs body (JSON) to the gateway of member (default: the first
        that answers); returns the decoded answer or raises AssertionError
        with etcd's error."""
        members = [member] if member is not None else self.running()
        last = None
        for i in members:
            conn = http.client.HTTPSConnection("127.0.0.1", self.client_ports[i], context=self._context(),
                                               timeout=timeout * SLOW)
            try:
                conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
                r = conn.getresponse()
                data = r.read()
                if r.status != 200:
                    last = AssertionError("etcd %s: HTTP %d %s" % (path, r.status, data[:300]))
                    continue
                return json.loads(data)
            except OSError as e:
                last = e
            finally:
                conn.close()
        raise last if last else AssertionError("no etcd member runs")

    def range_prefix(self, prefix):
        """{key (str): value (bytes)} of every key under prefix."""
        p = prefix.encode()
        ans = self.call("/v3/kv/range", {"key": b64(p), "range_end": b64(prefix_end(p))})
        return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", ""))
                for kv in ans.get("kvs", [])}

    def put(self, key, value):
        self.call("/v3/kv/put", {"key": b64(key), "value": b64(value)})

    def delete_prefix(self, prefix):
        p = prefix.encode()
        self.call("/v3/kv/deleterange", {"key": b64(p), "range_end": b64(prefix_end(p))})
