#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What --token-review-check-bound-objects costs a TokenReview, cache warm.

Two servers side by side, the same but for the flag, both mirroring the
keys of a stand-in API server (tests/e2e/apiserver_standin.py, which also
keeps the service account and the pod the reviewed token is bound to), each
with --threads 1 and every thread pinned to one core; wrk (-t1, on the other
cores, bench/verify_tokenreview.lua) posts TokenReviews of one live pod's
token with the allowed caller's bearer token, WRK_SECONDS per run, the two
servers alternating within each round. The figure is requests per server
CPU-second (utime + stime of the whole process, lookup threads included,
from /proc/PID/stat), and the goal the ratio with / without >= 0.9. With
the default TTL (10s) a run of a few seconds sees the pod looked up again
about once per TTL: the table says how many requests the API server got per
object per TTL (at most one is the goal).

Usage: bench/bound.py [ROUNDS=3]
Environment: BOUND_CORE (the last CPU this process may use), BOUND_WRK_SECONDS
(5), BOUND_WRK_CONNS (16), OIDC_BIN (build/oidc-discovery).
Everything is on 127.0.0.1; about 45 s with the defaults. Exits 1 when a
tool is missing or a review is not answered 201 authenticated.
"""

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in tests/
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OIDC_BIN", os.path.join(REPO, "build", "oidc-discovery"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import oidc_harness as h  # noqa: E402
from apiserver_standin import StandInAPIServer  # noqa: E402

ISSUER = "https://bench.example"
AUD = "bench"
NS = "bench"
TTL = 10  # the flag's default
CALLER = "system:serviceaccount:bench:caller"
W = 50  # label width, as bench/verify.sh prints (bench/report.py reads it)


def pin(pid, core):
    """Pins every thread of pid (the lookup threads too) to core."""
    for tid in os.listdir("/proc/%d/task" % pid):
        os.sched_setaffinity(int(tid), {core})


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(api, token_file, key, check, core):
    args = ["--service-account-issuer", ISSUER, "--upstream", api.url, "--upstream-ca-file", api.ca_file,
            "--upstream-token-file", token_file, "--enable-token-review", "--token-review-listen", "127.0.0.1:0",
            "--token-review-insecure-http", "--token-review-allowed-callers", CALLER, "--api-audiences", AUD,
            "--token-review-caller-audiences", AUD, "--threads", "1"]
    if check:
        args.append("--token-review-check-bound-objects")
    srv = h.Server(args).start()
    srv.review_port = srv.port_of("--token-review-listen")
    if not h.wait_until(lambda: h.admin_get(srv.admin_port, "/readyz")[0] == 200, 10):
        raise SystemExit("bound.py: a server did not become ready:\n" + srv.stderr()[-2000:])
    pin(srv.proc.pid, core)
    return srv


def run_wrk(srv, others, seconds, conns, tokens, bearer):
    url = "http://127.0.0.1:%d%s" % (srv.review_port, h.TOKENREVIEW_PATH)
    cmd = ["taskset", "-c", others, "wrk", "-t1", "-c%d" % conns, "-d%ds" % seconds, "-s",
           os.path.join(REPO, "bench", "verify_tokenreview.lua"), url, "--", tokens, bearer, "authenticated"]
    c0, w0 = cpu_seconds(srv.proc.pid), time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30).stdout
    c1, w1 = cpu_seconds(srv.proc.pid), time.monotonic()
    rps = re.search(r"^Requests/sec:\s*([0-9.]+)", out, re.M)
    bad = re.search(r"^bad=(\d+) total=", out, re.M)
    if not rps or not bad or bad.group(1) != "0":
        raise SystemExit("bound.py: the TokenReview run failed:\n%s\n%s" % (out, srv.stderr()[-2000:]))
    share = (c1 - c0) / (w1 - w0)
    return float(rps.group(1)), share, " ".join(cmd)


def fmt(x, kind):
    if kind == "ratio":
        return "%.2f" % x
    if kind == "pct":
        return "%.0f%%" % (100 * x)
    if kind == "frac":
        return "%.2f" % x
    return "{:,.0f}".format(x)


def row(label, xs, kind="rate", goal=None, lower=False):
    med = statistics.median(xs)
    g = ""
    if goal is not None:
        ok = med <= goal if lower else med >= goal
        g = "%s %.2f %s" % ("<=" if lower else ">=", goal, "PASS" if ok else "MISS")
    print("%-*s" % (W, label) + "".join("%12s" % fmt(x, kind) for x in xs) + "%12s  %s" % (fmt(med, kind), g))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    seconds = int(os.environ.get("BOUND_WRK_SECONDS", "5"))
    conns = int(os.environ.get("BOUND_WRK_CONNS", "16"))
    cpus = sorted(os.sched_getaffinity(0))
    core = int(os.environ.get("BOUND_CORE", cpus[-1]))
    others = ",".join(str(c) for c in cpus if c != core) or str(core)
    for tool in ("wrk", "taskset", "openssl"):
        if shutil.which(tool) is None:
            raise SystemExit("bound.py: needs %s" % tool)
    if not os.access(os.environ["OIDC_BIN"], os.X_OK):
        raise SystemExit("bound.py: %s not found; build it first" % os.environ["OIDC_BIN"])

    work = tempfile.mkdtemp(prefix="oidc-bound-bench.")
    servers, api = [], None
    try:
        api = StandInAPIServer(os.path.join(work, "api"), tokens=("bench-token",))
        api.__enter__()
        token_file = os.path.join(work, "token")
        h.atomic_write(token_file, b"bench-token\n")
        key = h.KeyFactory(work).rsa()
        api.set_documents(ISSUER, [key])
        sa_uid = api.create("serviceaccounts", NS, "web")
        pod_uid = api.create("pods", NS, "web-0")
        tokens, bearer = os.path.join(work, "tokens"), os.path.join(work, "bearer")
        with open(tokens, "w") as f:
            f.write(h.mint_token(key.priv, ISSUER, audiences=(AUD,), namespace=NS, sa="web", sa_uid=sa_uid,
                                 pod=("web-0", pod_uid)) + "\n")
        with open(bearer, "w") as f:
            f.write(h.mint_token(key.priv, ISSUER, audiences=(AUD,), namespace=NS, sa="caller",
                                 sa_uid="caller-uid") + "\n")
        with_check = start_server(api, token_file, key, True, core)
        servers.append(with_check)
        without = start_server(api, token_file, key, False, core)
        servers.append(without)
        figures = {"with": [], "without": [], "share_with": [], "share_without": [], "rps_with": [],
                   "rps_without": []}
        commands = []
        pod_before, t0 = api.object_requests("pods", NS, "web-0"), time.monotonic()
        for r in range(rounds):
            for name, srv in (("with", with_check), ("without", without)):
                print("[%s] round %d: %s the check" % (time.strftime("%T"), r + 1, name), file=sys.stderr)
                rps, share, cmd = run_wrk(srv, others, seconds, conns, tokens, bearer)
                figures["rps_" + name].append(rps)
                figures["share_" + name].append(share)
                figures[name].append(rps / share if share > 0 else float("nan"))
                if r == 0:
                    commands.append(cmd)
        elapsed = time.monotonic() - t0
        pod_lookups = api.object_requests("pods", NS, "web-0") - pod_before
    finally:
        for s in servers:
            s.cleanup()
        if api is not None:
            api.stop()
        shutil.rmtree(work, ignore_errors=True)

    ratios = [a / b for a, b in zip(figures["with"], figures["without"])]
    per_ttl = pod_lookups / (elapsed / TTL)
    head = "%-*s" % (W, "") + "".join("%12s" % ("run %d" % (r + 1)) for r in range(rounds)) + \
        "%12s  %s" % ("median", "goal")
    print("\n== TokenReview with --token-review-check-bound-objects, cache warm, on cpu %d ==" % core)
    print(head)
    print("-" * len(head))
    row("req per server CPU-s, with the check", figures["with"])
    row("req per server CPU-s, without", figures["without"])
    row("  ratio with / without, per CPU-s", ratios, "ratio", 0.9)
    row("req/s, with the check", figures["rps_with"])
    row("req/s, without", figures["rps_without"])
    row("  server CPU share, with the check", figures["share_with"], "pct")
    row("  server CPU share, without", figures["share_without"], "pct")
    print("API server requests for the pod: %d in %.0f s, %.2f per TTL (%ds; goal <= 1)"
          % (pod_lookups, elapsed, per_ttl, TTL))
    print("(one pod-bound RS256 token and the caller's bearer token, both answered from the server's caches; "
          "server --threads 1 on cpu %d, wrk -t1 -c%d on cpu %s, %d s a run, the two servers alternating)"
          % (core, conns, others, seconds))
    print("\n== commands (round 1) ==")
    for s, c in zip(servers, commands):
        for line in (" ".join(s.argv), c):
            print("  " + line.replace(work, "$WORK").replace(REPO + "/", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
