#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Serving benchmark: oidc-discovery against nginx serving the same bytes.

Both servers run on one core (SERVER_CPU) with one thread/process, the load
generator on another (LOAD_CPU), and every measurement alternates A B A B so
that drift on a shared machine hits both alike. For each run the server's CPU
time is read from /proc/PID/stat before and after, because on a 2-core machine
the load generator saturates before either server does: requests per server
CPU-second is the comparison that means something, requests/s and latency are
shown beside it.

Scenarios (each against byte-identical documents written by our `export`):
  - HTTP/1.1 GET of the JWKS with a 2-key and a 100-key set, and of the
    discovery document (wrk -t1 -c64);
  - the same JWKS GET with If-None-Match of the current ETag (the 304 path);
  - HTTP/2 over TLS 1.3 with the same certificate (h2load -t1 -c4 -m16: 64
    streams over 4 connections), 200 and 304;
  - a sweep over connection counts 1 ... 256 (the plot);
  - footprint: RSS idle, RSS with 10,000 idle keep-alive connections, time
    from exec to the first 200.

Writes a JSON file of every figure (--json) that bench/report.py turns into
docs/BENCHMARKS.md. Needs nginx (nginx-light), wrk, h2load (nghttp2-client),
openssl and taskset; everything listens on 127.0.0.1 only.
"""
import argparse
import json
import os
import re
import resource
import selectors
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ISSUER = "https://bench.example"
JWKS = "/openid/v1/jwks"
DISCOVERY = "/.well-known/openid-configuration"
JWKS_TYPE = "application/jwk-set+json"
MAX_AGE = 3600
TICK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cpu_seconds(pid):
    """utime + stime of pid, in seconds (fields 14 and 15 of /proc/PID/stat,
    counted after the parenthesised command name, which may hold spaces)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def pinned(cpu):
    return lambda: os.sched_setaffinity(0, {cpu})


def http_get(url, headers=None, context=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5, context=context) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def wait_for_200(url, proc, deadline_s=10.0, context=None):
    """Polls url until it answers 200; returns seconds spent polling."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < deadline_s:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if http_get(url, context=context)[0] == 200:
                return time.perf_counter() - t0
        except OSError:
            time.sleep(0.001)
    raise RuntimeError(f"{url} did not answer 200 within {deadline_s} s")


class Workdir:
    """Keys, exported documents, a TLS certificate and the nginx config."""

    def __init__(self, root, binary):
        self.root = root
        self.binary = binary
        self.keys = {"2": [f"{REPO}/tests/fixtures/rsa2048.pub", f"{REPO}/tests/fixtures/ec256.pub"],
                     "100": [self._hundred_keys()]}
        self.docroot = {}
        for name, files in self.keys.items():
            self.docroot[name] = os.path.join(root, f"docs-{name}")
            args = [binary, "export", "--out", self.docroot[name], "--service-account-issuer", ISSUER,
                    "--max-age", str(MAX_AGE), "--log-level", "error"]
            for f in files:
                args += ["--service-account-key-file", f]
            subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        self.cert, self.key = os.path.join(root, "tls.crt"), os.path.join(root, "tls.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", self.key, "-out", self.cert, "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, stderr=subprocess.DEVNULL)

    def _hundred_keys(self):
        """One PEM file of 100 RSA-2048 public keys: a key set after years of
        rotation with long retention, and a 43 KB JWKS."""
        path = os.path.join(self.root, "keys100.pem")
        with open(path, "w") as out:
            for _ in range(100):
                priv = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
                                      check=True, capture_output=True).stdout
                out.write(subprocess.run(["openssl", "pkey", "-pubout"], input=priv, check=True,
                                         capture_output=True).stdout.decode())
        return path


class Server:
    """One server process pinned to a core; pid is the process serving."""

    def __init__(self, name, argv, cpu, ports):
        self.name, self.argv, self.cpu, self.ports = name, argv, cpu, ports
        self.proc = None

    def start(self):
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(self.argv, preexec_fn=pinned(self.cpu), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        # The first port is the plain HTTP one of the server's own key set.
        wait_for_200(self.url(next(iter(self.ports)), JWKS), self.proc)
        return time.perf_counter() - t0

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid

    def url(self, keyset, path, tls=False):
        port = self.ports["tls" if tls else keyset]
        return f"{'https' if tls else 'http'}://127.0.0.1:{port}{path}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ours_server(w, cpu, extra=()):
    """Our server, one thread, with HTTP/2 on (it is opt-in: docs/http2.md).
    The 100-key set gets its own process and port, since a process serves
    one key set."""
    ports = {"2": free_port(), "tls": free_port()}
    argv = [w.binary, "serve", "--threads", "1", "--listen", f"127.0.0.1:{ports['2']}",
            "--tls-listen", f"127.0.0.1:{ports['tls']}", "--tls-cert-file", w.cert, "--tls-private-key-file", w.key,
            "--http2",
            "--admin-listen", "none", "--service-account-issuer", ISSUER, "--max-age", str(MAX_AGE),
            "--shutdown-grace", "0s", "--log-level", "warn", *extra]
    for f in w.keys["2"]:
        argv += ["--service-account-key-file", f]
    return Server("oidc-discovery", argv, cpu, ports)


def ours_server_100(w, cpu):
    ports = {"100": free_port()}
    argv = [w.binary, "serve", "--threads", "1", "--listen", f"127.0.0.1:{ports['100']}", "--admin-listen", "none",
            "--service-account-issuer", ISSUER, "--max-age", str(MAX_AGE), "--shutdown-grace", "0s",
            "--log-level", "warn", "--service-account-key-file", w.keys["100"][0]]
    return Server("oidc-discovery (100 keys)", argv, cpu, ports)


NGINX_CONF = """\
worker_processes 1;
master_process off;
daemon off;
worker_rlimit_nofile 40000;
error_log {root}/nginx-error.log warn;
pid {root}/nginx.pid;
events {{ worker_connections 30000; }}
http {{
  access_log off;
  server_tokens off;
  sendfile off;
  tcp_nodelay on;
  keepalive_requests 100000000;
  keepalive_timeout 60s;
  open_file_cache max=64 inactive=600s;
  open_file_cache_valid 3600s;
  open_file_cache_errors on;
  ssl_certificate {cert};
  ssl_certificate_key {key};
  ssl_protocols TLSv1.2 TLSv1.3;
{servers}}}
"""

NGINX_SERVER = """\
  server {{
    listen 127.0.0.1:{port}{tls};
    root {docroot};
    location = {jwks} {{ default_type {jwks_type}; add_header Cache-Control "public, max-age={max_age}";
                         add_header Access-Control-Allow-Origin "*"; }}
    location = {discovery} {{ default_type application/json; add_header Cache-Control "public, max-age={max_age}";
                              add_header Access-Control-Allow-Origin "*"; }}
  }}
"""


def nginx_server(w, cpu):
    """nginx as the issue sets it up: one process (master_process off),
    open_file_cache, the same Cache-Control and CORS headers. sendfile is off
    because for bodies this small one writev is cheaper than writev plus
    sendfile (measured: about 10% more requests per CPU-second for nginx)."""
    ports = {"2": free_port(), "100": free_port(), "tls": free_port()}
    servers = ""
    for key, tls in (("2", ""), ("100", ""), ("tls", " ssl http2")):
        docroot = w.docroot["2" if key == "tls" else key]
        servers += NGINX_SERVER.format(port=ports[key], tls=tls, docroot=docroot, jwks=JWKS, discovery=DISCOVERY,
                                       jwks_type=JWKS_TYPE, max_age=MAX_AGE)
    conf = os.path.join(w.root, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(root=w.root, cert=w.cert, key=w.key, servers=servers))
    return Server("nginx", ["nginx", "-c", conf, "-p", w.root], cpu, ports)


def parse_duration_ms(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[m.group(2)]
    return float(m.group(1)) * scale


def run_load(server, argv, url, headers):
    """Runs the load generator argv (wrk or h2load, which take headers the
    same way) against url; returns its output and the server CPU-seconds
    the run cost."""
    argv = argv + [arg for h in headers for arg in ("-H", h)] + [url]
    c0 = cpu_seconds(server.pid)
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return out, cpu_seconds(server.pid) - c0


def run_wrk(server, url, conns, secs, load_cpu, headers=()):
    """One wrk run; returns requests/s, p50/p99 in ms and requests per
    server CPU-second. Fails when any response was an error."""
    argv = ["taskset", "-c", str(load_cpu), "wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--latency"]
    out, cpu = run_load(server, argv, url, headers)
    if "Non-2xx or 3xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk saw errors against {server.name}:\n{out}")
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)$", out, re.M))
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "requests": requests,
            "p50_ms": parse_duration_ms(lat["50"]), "p99_ms": parse_duration_ms(lat["99"]), "cpu_s": cpu,
            "per_cpu_s": requests / cpu if cpu > 0 else 0.0}


def run_h2load(server, url, secs, load_cpu, headers=()):
    """One h2load run over TLS (ALPN h2): 4 connections x 16 streams."""
    argv = ["taskset", "-c", str(load_cpu), "h2load", "-t1", "-c4", "-m16", f"-D{secs}"]
    out, cpu = run_load(server, argv, url, headers)
    if "Application protocol: h2" not in out:
        raise RuntimeError(f"h2load did not negotiate h2 with {server.name}:\n{out}")
    m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", out)
    done, _, failed, errored = map(int, m.groups())
    if failed or errored or done == 0:
        raise RuntimeError(f"h2load saw failures against {server.name}:\n{out}")
    req = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", out)
    return {"rps": float(re.search(r"finished in [\d.]+s, ([\d.]+) req/s", out).group(1)), "requests": done,
            "mean_ms": parse_duration_ms(req.group(3)), "max_ms": parse_duration_ms(req.group(2)), "cpu_s": cpu,
            "per_cpu_s": done / cpu if cpu > 0 else 0.0}


def check_same_bytes(ours, nginx, keyset, path):
    """Both must send the same body with the same Content-Type and
    Cache-Control, or the comparison is meaningless."""
    a, b = http_get(ours.url(keyset, path)), http_get(nginx.url(keyset, path))
    for name in ("Content-Type", "Cache-Control", "Access-Control-Allow-Origin"):
        va = {k.lower(): v for k, v in a[1].items()}.get(name.lower())
        vb = {k.lower(): v for k, v in b[1].items()}.get(name.lower())
        if va != vb:
            raise RuntimeError(f"{path} ({keyset} keys): {name} differs: {va!r} vs {vb!r}")
    if a[0] != 200 or b[0] != 200 or a[2] != b[2]:
        raise RuntimeError(f"{path} ({keyset} keys): bodies differ or not 200")
    return len(a[2])


def etag_of(server, keyset, path, tls=False):
    ctx = ssl._create_unverified_context() if tls else None
    status, headers, _ = http_get(server.url(keyset, path, tls), context=ctx)
    etag = {k.lower(): v for k, v in headers.items()}["etag"]
    status, _, body = http_get(server.url(keyset, path, tls), {"If-None-Match": etag}, context=ctx)
    if status != 304 or body:
        raise RuntimeError(f"{server.name}: If-None-Match {etag} gave {status}")
    return etag


SCENARIOS = [
    # name, protocol, key set, path, conditional
    ("jwks-2", "http1", "2", JWKS, False),
    ("jwks-100", "http1", "100", JWKS, False),
    ("discovery", "http1", "2", DISCOVERY, False),
    ("jwks-2-304", "http1", "2", JWKS, True),
    ("h2-jwks-2", "h2", "2", JWKS, False),
    ("h2-jwks-2-304", "h2", "2", JWKS, True),
]


def measure_scenarios(peers, args):
    """Every scenario, alternating the peers, args.rounds times."""
    results = {}
    for name, proto, keyset, path, conditional in SCENARIOS:
        runs = {p: [] for p in peers}
        for rnd in range(args.rounds):
            for label, server in peers.items():
                srv = server[keyset] if proto == "http1" else server["2"]
                tls = proto == "h2"
                headers = [f"If-None-Match: {etag_of(srv, keyset, path, tls)}"] if conditional else []
                url = srv.url(keyset, path, tls)
                if tls:
                    r = run_h2load(srv, url, args.seconds, args.load_cpu, headers)
                else:
                    r = run_wrk(srv, url, args.conns, args.seconds, args.load_cpu, headers)
                runs[label].append(r)
                log(f"{name} round {rnd + 1} {label}: {r['rps']:.0f} req/s, {r['per_cpu_s']:.0f} req/CPU-s")
        results[name] = {"protocol": proto, "keys": keyset, "path": path, "conditional": conditional, "runs": runs}
    return results


def measure_sweep(peers, args):
    """req/s and req/CPU-s against wrk connection count, for the plot."""
    rows = []
    for conns in args.sweep:
        row = {"conns": conns}
        for label, server in peers.items():
            r = run_wrk(server["2"], server["2"].url("2", JWKS), conns, args.sweep_seconds, args.load_cpu)
            row[label] = {"rps": r["rps"], "per_cpu_s": r["per_cpu_s"], "p99_ms": r["p99_ms"]}
        log(f"sweep c={conns}: " + ", ".join(f"{k} {row[k]['rps']:.0f} req/s" for k in peers))
        rows.append(row)
    return rows


def open_idle_connections(port, n, request):
    """Opens n keep-alive connections, sends one request on each and reads
    its response, so every connection is an idle keep-alive connection the
    server has fully served. Returns the sockets."""
    sel = selectors.DefaultSelector()
    socks, pending = [], 0
    for i in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        sel.register(s, selectors.EVENT_WRITE, [b""])
        socks.append(s)
        pending += 1
        while pending > 256 or (i == n - 1 and pending):
            for key, ev in sel.select(timeout=10):
                s, buf = key.fileobj, key.data
                if ev & selectors.EVENT_WRITE:
                    s.send(request)
                    sel.modify(s, selectors.EVENT_READ, buf)
                    continue
                chunk = s.recv(65536)
                if not chunk:
                    raise RuntimeError("server closed an idle-test connection")
                buf[0] += chunk
                if b"\r\n\r\n" in buf[0] and len(buf[0]) >= _response_length(buf[0]):
                    sel.unregister(s)
                    pending -= 1
    sel.close()
    return socks


def _response_length(data):
    head, _, _ = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
    return len(head) + 4 + (int(m.group(1)) if m else 0)


def still_open(socks, request, sample=50):
    """Each sampled connection answers another request: none was closed."""
    for s in socks[:: max(1, len(socks) // sample)]:
        s.setblocking(True)
        s.settimeout(5)
        s.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or len(data) < _response_length(data):
            chunk = s.recv(65536)
            if not chunk:
                return False
            data += chunk
    return True


def measure_footprint(make_server, label, args):
    """RSS idle, RSS with args.idle_conns idle connections, exec to first 200."""
    starts = []
    for _ in range(args.start_runs):
        server = make_server()
        try:
            starts.append(server.start() * 1000)
        finally:
            server.stop()
    server = make_server()
    try:
        server.start()
        idle = rss_kib(server.pid)
        port = server.ports["2"]
        request = f"GET {JWKS} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        socks = open_idle_connections(port, args.idle_conns, request)
        time.sleep(0.5)
        loaded = rss_kib(server.pid)
        ok = still_open(socks, request)
        for s in socks:
            s.close()
        if not ok:
            raise RuntimeError(f"{label}: an idle connection was closed before the measurement ended")
    finally:
        server.stop()
    result = {"rss_idle_kib": idle, "rss_conns_kib": loaded, "conns": args.idle_conns,
              "per_conn_bytes": (loaded - idle) * 1024 / args.idle_conns,
              "exec_to_200_ms": starts, "exec_to_200_median_ms": statistics.median(starts)}
    log(f"footprint {label}: idle {idle} KiB, {args.idle_conns} conns {loaded} KiB, "
        f"start {result['exec_to_200_median_ms']:.1f} ms")
    return result


def versions(binary):
    def first_line(argv):
        p = subprocess.run(argv, capture_output=True, text=True)
        return (p.stdout + p.stderr).strip().splitlines()[0]

    model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": os.uname().release,
            "ours": first_line([binary, "--version"]), "nginx": first_line(["nginx", "-v"]),
            "wrk": first_line(["wrk", "-v"]), "h2load": first_line(["h2load", "--version"]),
            "openssl": first_line(["openssl", "version"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", required=True, help="where to write the figures")
    ap.add_argument("--binary", default=os.environ.get("OIDC_BIN", f"{REPO}/build/oidc-discovery"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--sweep", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8, 16, 32, 64, 128, 256])
    ap.add_argument("--sweep-seconds", type=int, default=3)
    ap.add_argument("--idle-conns", type=int, default=10000)
    ap.add_argument("--start-runs", type=int, default=5)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--load-cpu", type=int, default=0)
    args = ap.parse_args()
    for tool in ("nginx", "wrk", "h2load", "openssl", "taskset"):
        if shutil.which(tool) is None:
            sys.exit(f"http_bench.py: {tool} is missing (apt-get install nginx-light wrk nghttp2-client)")
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"http_bench.py: {args.binary} not found; build it first")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.idle_conns + 1000:
        sys.exit(f"http_bench.py: RLIMIT_NOFILE hard limit {hard} is too low for {args.idle_conns} connections")

    with tempfile.TemporaryDirectory(prefix="oidc-http-bench-") as root:
        log("generating keys, documents and certificate")
        w = Workdir(root, args.binary)
        # every connection comes from this one load generator: the share of
        # the budget one address may hold is lifted, as behind a proxy
        conn_cap = ["--max-connections", str(args.idle_conns + 1000), "--request-timeout", "60s",
                    "--connection-share-per-address", "100"]
        ours, ours100 = ours_server(w, args.server_cpu, conn_cap), ours_server_100(w, args.server_cpu)
        nginx = nginx_server(w, args.server_cpu)
        figures = {"versions": versions(args.binary), "args": vars(args), "bodies": {}, "workdir": root,
                   "commands": {"ours": " ".join(ours.argv), "ours_100": " ".join(ours100.argv),
                                "nginx": " ".join(nginx.argv), "nginx_conf": open(nginx.argv[2]).read(),
                                "wrk": f"taskset -c {args.load_cpu} wrk -t1 -c{args.conns} -d{args.seconds}s --latency URL",
                                "h2load": f"taskset -c {args.load_cpu} h2load -t1 -c4 -m16 -D{args.seconds} URL"}}
        try:
            for s in (ours, ours100, nginx):
                s.start()
            peers = {"ours": {"2": ours, "100": ours100}, "nginx": {"2": nginx, "100": nginx}}
            for keyset, path in (("2", JWKS), ("100", JWKS), ("2", DISCOVERY)):
                figures["bodies"][f"{path} ({keyset} keys)"] = check_same_bytes(peers["ours"][keyset],
                                                                                 nginx, keyset, path)
            figures["scenarios"] = measure_scenarios(peers, args)
            figures["sweep"] = measure_sweep(peers, args)
        finally:
            for s in (ours, ours100, nginx):
                s.stop()
        figures["footprint"] = {
            "ours": measure_footprint(lambda: ours_server(w, args.server_cpu, conn_cap), "ours", args),
            "nginx": measure_footprint(lambda: nginx_server(w, args.server_cpu), "nginx", args)}
    with open(args.json, "w") as f:
        json.dump(figures, f, indent=1)
    log(f"wrote {args.json}")


if __name__ == "__main__":
    main()
