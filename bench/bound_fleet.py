#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The API server's load from --token-review-check-bound-objects with a
fleet: PODS distinct pods (PODS_PER_SA to a service account, as a
Deployment's replicas share one), each pod's token reviewed once a second,
over HTTP, for TTLS windows of the cache's TTL after the first (cold) one.

The goal: the API server sees at most one request per object per TTL. The
bench counts, from the API server's access log, the requests for every
object, and reports the most any object got within any window of one TTL
(sliding: every request starts one), and the mean per object per TTL; also
the reviews' p50 / p99 latency and the reviews per server CPU-second
(utime + stime of the whole process, the lookup threads and their TLS
handshakes included, from /proc/PID/stat).

The stand-in API server is nginx (one process): the objects are files
under /api/v1/... in kube's JSON shape (as tests/e2e/apiserver_standin.py
answers them), next to the discovery document and JWKS the server mirrors,
served over TLS (a P-256 certificate from a CA made for the run) only to
the bearer token the server is given, every request logged with its time.
The Python stand-in of the tests answers a few hundred TLS requests a
second, and a fleet's refreshes need thousands.

The load generator is wrk (-t1, bench/bound_fleet.lua) over CONNS
keep-alive connections, sending a review every 1/PODS s on one schedule,
the tokens in turn; the tokens (RS256, kube's claims, each bound to its
pod and service account) are minted once with python's cryptography.

Usage: bench/bound_fleet.py [--pods 10000] [--pods-per-sa 100] [--ttl 2]
                           [--ttls 3] [--conns 64]
Environment: OIDC_BIN (build/oidc-discovery).
Everything is on 127.0.0.1. Exits 1 when a tool is missing or a review is
not answered 201 authenticated.
"""

import argparse
import base64
import bisect
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

sys.dont_write_bytecode = True  # leave no __pycache__ in tests/
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OIDC_BIN", os.path.join(REPO, "build", "oidc-discovery"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import oidc_harness as h  # noqa: E402
from apiserver_standin import kube_discovery, object_path, KINDS  # noqa: E402

ISSUER = "https://bench.example"
AUD = "bench"
NS = "bench"
CALLER = "system:serviceaccount:bench:caller"
API_TOKEN = "bench-token"
W = 50  # label width, as bench/bound.py prints (bench/report.py reads it)

NGINX_CONF = """\
worker_processes 1;
master_process off;
daemon off;
worker_rlimit_nofile 4096;
error_log {root}/nginx-error.log warn;
pid {root}/nginx.pid;
events {{ worker_connections 2048; }}
http {{
  log_format t '$msec $status $uri';
  access_log {root}/access.log t buffer=256k flush=1s;
  server_tokens off;
  keepalive_timeout 60s;
  keepalive_requests 100000000;
  types {{ }}
  default_type application/json;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.2 TLSv1.3;
    root {docroot};
    if ($http_authorization != "Bearer {token}") {{ return 401; }}
    location / {{ add_header Cache-Control "public, max-age=3600"; }}
  }}
}}
"""


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def api_object(kind, ns, name, uid):
    """The object as kube answers a GET of it (metadata enough for the check)."""
    meta = {"name": name, "uid": uid, "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"}
    if ns is not None:
        meta["namespace"] = ns
    return json.dumps({"kind": KINDS[kind], "apiVersion": "v1", "metadata": meta}).encode()


def fleet(docroot, pods, per_sa):
    """Writes the service accounts and pods; returns [(sa, sa_uid, pod, pod_uid)]."""
    out, sa, sa_uid = [], None, None
    for i in range(pods):
        if i % per_sa == 0:
            sa, sa_uid = "sa-%d" % (i // per_sa), str(uuid.uuid4())
            write(docroot + object_path("serviceaccounts", NS, sa), api_object("serviceaccounts", NS, sa, sa_uid))
        pod, pod_uid = "pod-%d" % i, str(uuid.uuid4())
        write(docroot + object_path("pods", NS, pod), api_object("pods", NS, pod, pod_uid))
        out.append((sa, sa_uid, pod, pod_uid))
    return out


def mint_all(key, members):
    """One token per pod: kube's claims (from `oidc-discovery token`, once)
    with each pod's names and uids, signed RS256 with python's cryptography."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding

    sa, sa_uid, pod, pod_uid = members[0]
    head, body, _ = h.mint_token(key.priv, ISSUER, audiences=(AUD,), namespace=NS, sa=sa, sa_uid=sa_uid,
                                 pod=(pod, pod_uid)).split(".")
    claims = json.loads(h.b64url_decode(body))
    with open(key.priv, "rb") as f:
        priv = serialization.load_pem_private_key(f.read(), None)
    tokens = []
    for sa, sa_uid, pod, pod_uid in members:
        kube = claims["kubernetes.io"]
        kube["serviceaccount"] = {"name": sa, "uid": sa_uid}
        kube["pod"] = {"name": pod, "uid": pod_uid}
        claims["sub"] = "system:serviceaccount:%s:%s" % (NS, sa)
        claims["jti"] = str(uuid.uuid4())
        signing = head + "." + h.b64url(json.dumps(claims, separators=(",", ":")).encode())
        sig = priv.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
        tokens.append(signing + "." + h.b64url(sig))
    return tokens


def start_nginx(work, docroot, cert, key):
    port = h.free_port()
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(root=work, port=port, cert=cert, key=key, docroot=docroot, token=API_TOKEN))
    proc = subprocess.Popen(["nginx", "-c", conf, "-p", work], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not h.wait_until(lambda: port_open(port), 10):
        proc.kill()
        raise SystemExit("bound_fleet.py: nginx did not start: %s" % proc.stderr.read().decode()[-2000:])
    return proc, port, conf


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def requests_per_object(log, since, until):
    """{object path: sorted request times} of the object GETs in [since, until]."""
    per = {}
    with open(log) as f:
        for line in f:
            t, status, uri = line.split(" ", 2)
            uri = uri.strip()
            if uri.startswith("/api/v1/") and since <= float(t) <= until:
                if status != "200":
                    raise SystemExit("bound_fleet.py: the API server answered %s for %s" % (status, uri))
                per.setdefault(uri, []).append(float(t))
    for times in per.values():
        times.sort()
    return per


def most_in_a_window(times, ttl):
    """The most requests within any window of ttl seconds (half-open)."""
    best = 0
    for i, t in enumerate(times):
        best = max(best, bisect.bisect_left(times, t + ttl, i) - i)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--pods-per-sa", type=int, default=100)
    ap.add_argument("--ttl", type=int, default=2, help="--token-review-bound-object-cache-ttl, seconds")
    ap.add_argument("--ttls", type=int, default=3, help="TTL windows measured after the first")
    ap.add_argument("--conns", type=int, default=64)
    args = ap.parse_args()
    for tool in ("wrk", "nginx", "openssl"):
        if shutil.which(tool) is None:
            raise SystemExit("bound_fleet.py: needs %s" % tool)
    if not os.access(os.environ["OIDC_BIN"], os.X_OK):
        raise SystemExit("bound_fleet.py: %s not found; build it first" % os.environ["OIDC_BIN"])

    work = tempfile.mkdtemp(prefix="oidc-bound-fleet.")
    nginx, srv = None, None
    try:
        docroot = os.path.join(work, "root")
        ca = h.make_ca(work, "apiserver-ca")
        cert, tkey = h.make_server_cert(work, ca, h.TLS_SAN, "apiserver")
        key = h.KeyFactory(work).rsa()
        write(docroot + h.DISCOVERY, kube_discovery(ISSUER, [key]))
        write(docroot + h.JWKS, h.expected_jwks([key]))
        members = fleet(docroot, args.pods, args.pods_per_sa)
        print("[%s] minting %d tokens" % (time.strftime("%T"), len(members)), file=sys.stderr)
        tokens_file, bearer_file, api_token = (os.path.join(work, n) for n in ("tokens", "bearer", "api-token"))
        with open(tokens_file, "w") as f:
            f.write("\n".join(mint_all(key, members)) + "\n")
        with open(bearer_file, "w") as f:
            f.write(h.mint_token(key.priv, ISSUER, audiences=(AUD,), namespace=NS, sa="caller",
                                 sa_uid="caller-uid") + "\n")
        h.atomic_write(api_token, (API_TOKEN + "\n").encode())
        nginx, port, conf = start_nginx(work, docroot, cert, tkey)

        srv = h.Server(["--service-account-issuer", ISSUER, "--upstream", "https://127.0.0.1:%d" % port,
                        "--upstream-ca-file", ca[0], "--upstream-token-file", api_token, "--enable-token-review",
                        "--token-review-listen", "127.0.0.1:0", "--token-review-insecure-http",
                        "--token-review-allowed-callers", CALLER, "--api-audiences", AUD,
                        "--token-review-caller-audiences", AUD, "--threads", "1",
                        "--token-review-check-bound-objects",
                        "--token-review-bound-object-cache-ttl", "%ds" % args.ttl]).start()
        review_port = srv.port_of("--token-review-listen")
        if not h.wait_until(lambda: h.admin_get(srv.admin_port, "/readyz")[0] == 200, 10):
            raise SystemExit("bound_fleet.py: the server did not become ready:\n" + srv.stderr()[-2000:])

        seconds = args.ttl * (args.ttls + 1)
        url = "http://127.0.0.1:%d%s" % (review_port, h.TOKENREVIEW_PATH)
        cmd = ["wrk", "-t1", "-c%d" % args.conns, "-d%ds" % seconds, "--timeout", "10s", "-s",
               os.path.join(REPO, "bench", "bound_fleet.lua"), url, "--", tokens_file, bearer_file,
               str(args.pods)]
        print("[%s] %d reviews/s for %d s" % (time.strftime("%T"), args.pods, seconds), file=sys.stderr)
        before = h.scrape_metrics(srv.admin_port)
        t0, c0, n0 = time.time(), cpu_seconds(srv.proc.pid), cpu_seconds(nginx.pid)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60).stdout
        t1, c1, n1 = time.time(), cpu_seconds(srv.proc.pid), cpu_seconds(nginx.pid)
        after = h.scrape_metrics(srv.admin_port)
        m = re.search(r"^bad=(\d+) total=(\d+) tokens=\d+ p50_us=(\d+) p99_us=(\d+) max_us=(\d+)", out, re.M)
        if not m or m.group(1) != "0":
            raise SystemExit("bound_fleet.py: the reviews failed:\n%s\n%s" % (out, srv.stderr()[-2000:]))
        total, p50, p99, worst = (int(m.group(i)) for i in range(2, 6))
        # let nginx flush its log (flush=1s), then stop it
        time.sleep(1.5)
        nginx.send_signal(signal.SIGQUIT)
        nginx.wait(timeout=10)
        per = requests_per_object(os.path.join(work, "access.log"), t0, t1 + 1)
    finally:
        if srv is not None:
            srv.cleanup()
        if nginx is not None and nginx.poll() is None:
            nginx.kill()
            nginx.wait()
        shutil.rmtree(work, ignore_errors=True)

    def metric(samples, name):
        return h.metric(samples, name) or 0

    hits = metric(after, "oidc_token_review_bound_cache_hits_total") - \
        metric(before, "oidc_token_review_bound_cache_hits_total")
    misses = metric(after, "oidc_token_review_bound_cache_misses_total") - \
        metric(before, "oidc_token_review_bound_cache_misses_total")
    elapsed = t1 - t0
    objects = args.pods + (args.pods + args.pods_per_sa - 1) // args.pods_per_sa
    reqs = sum(len(t) for t in per.values())
    most = max((most_in_a_window(t, args.ttl) for t in per.values()), default=0)
    mean = reqs / objects / (elapsed / args.ttl)
    print("\n== TokenReview bound-object fleet: {:,} pods reviewed once a second each, TTL {}s ==".format(
        args.pods, args.ttl))
    for label, value, goal in (
            ("API requests per object per TTL, most", "%d" % most, "<= 1 %s" % ("PASS" if most <= 1 else "MISS")),
            ("API requests per object per TTL, mean", "%.2f" % mean, ""),
            ("objects looked up (of %d)" % objects, "{:,}".format(len(per)), ""),
            ("API requests", "{:,}".format(reqs), ""),
            ("reviews", "{:,}".format(total), ""),
            ("reviews per pod per second (1 offered)", "%.2f" % (total / args.pods / elapsed),
             ">= 0.95 %s" % ("PASS" if total / args.pods / elapsed >= 0.95 else "MISS")),
            ("API requests per second", "{:,.0f}".format(reqs / elapsed), ""),
            ("review p50 ms", "%.2f" % (p50 / 1000), ""),
            ("review p99 ms", "%.2f" % (p99 / 1000), ""),
            ("review max ms", "%.2f" % (worst / 1000), ""),
            ("reviews per server CPU-s", "{:,.0f}".format(total / (c1 - c0)) if c1 > c0 else "-", ""),
            ("server CPU share", "%.0f%%" % (100 * (c1 - c0) / elapsed), ""),
            ("stand-in API server (nginx) CPU share", "%.0f%%" % (100 * (n1 - n0) / elapsed), ""),
            ("machine load average (1 min, 2 CPUs)", "%.1f" % os.getloadavg()[0], ""),
            ("bound-object cache hit ratio", "%.4f" % (hits / (hits + misses)) if hits + misses else "-", "")):
        print("%-*s%12s  %s" % (W, label, value, goal))
    print("(%s s of reviews, %d pods to a service account; the first TTL is the cold start, every object to look "
          "up once; RS256 tokens, each a full signature check: more distinct tokens than the verification "
          "cache holds; server --threads 1 and its lookup threads, nginx and wrk -t1 -c%d unpinned)"
          % ("%.0f" % elapsed, args.pods_per_sa, args.conns))
    print("\n== commands ==")
    for line in (" ".join(srv.argv), " ".join(cmd), "nginx -c nginx.conf (bench/bound_fleet.py's NGINX_CONF)"):
        print("  " + line.replace(work, "$WORK").replace(REPO + "/", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
