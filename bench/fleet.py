#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A fleet of N issuers (serve --issuers-dir, default 10,000, two P-256 keys
each, one host, one path per issuer as EKS lays them out) side by side with
the same server serving one issuer of that fleet:

- requests per server CPU-second for a JWKS GET (wrk; the fleet's requests
  spread over every issuer at random, the peer's at its one issuer; both
  servers pinned to one core, wrk to the other; rounds alternate the two);
- RSS of each once started, and the fleet's allowance: the peer's RSS plus
  the bytes of every issuer's two documents plus 4 KiB per issuer;
- start-up: exec to the last issuer's JWKS answering 200, the server on
  every CPU (then pinned to one for the rest);
- one changed file: the time from its rename into the directory to the new
  document being served (p50, p99 over CHANGES changes), and every other
  issuer's ETags the same afterwards.

Prints a markdown section for docs/BENCHMARKS.md on standard output (its
table, then the run's log; bench/report.py takes it with --fleet) and the
same log on standard error as it goes. Usage: bench/fleet.py [--issuers N]
[--rounds R] [--duration S] [--changes C]. Needs wrk, taskset and python3's
cryptography; everything is local (127.0.0.1).
"""

import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("OIDC_BIN", os.path.join(REPO, "build", "oidc-discovery"))
HOST = "oidc.bench.example"
JWKS = "/openid/v1/jwks"
DISCOVERY = "/.well-known/openid-configuration"
CLK_TCK = os.sysconf("SC_CLK_TCK")


LOG = []


def log(*a):
    line = " ".join(str(x) for x in a)
    LOG.append(line)
    print("[%s]" % time.strftime("%H:%M:%S"), line, file=sys.stderr, flush=True)


def section(rows, log_lines, n):
    """The section of docs/BENCHMARKS.md: what was measured, the table, the
    run's log."""
    out = ["## A fleet on one endpoint (`bench/fleet.py`)", "",
           "`serve --issuers-dir` with %s issuer files (two P-256 keys each, each issuer's keys in a directory "
           "of its own, one host and a path per issuer) side by side with the same binary serving one issuer of "
           "that fleet (`--issuers-dir` with that one file), each started on every CPU and then pinned to one core "
           "with one worker thread, wrk (one thread, 32 connections, a Lua script picking a path per request: among 2,000 issuers at "
           "random for the fleet, the one issuer for the peer) on the other, rounds alternating the two; "
           "requests per server CPU-second are the best round of each. RSS is read once both have started; the "
           "allowance is the peer's RSS plus the bytes of every issuer's two documents plus 4 KiB per issuer. "
           "Start-up is exec to the last issuer's JWKS answering 200. A change is one issuer file renamed into "
           "the directory with another max-age, timed until that max-age is served; afterwards every other "
           "issuer's two documents are fetched again and compared (ETag and length). The log gives the command, "
           "the machine's load average before and after (the machine is shared: start-up and change latency are "
           "wall times, and go up with the load; requests per CPU-second and RSS do not), and the server CPU "
           "seconds of start-up. What start-up and memory cost, from profiles of this code: a key is read, its "
           "kid derived and its SPKI stored without OpenSSL's decoder and encoder contexts for a named-curve EC "
           "key (its SPKI is a fixed per-curve prefix and its point); the removal guard copies published keys "
           "rather than re-deriving them; kids are allocated to their length (a 43-character kid used to take "
           "a 1 KiB buffer three times per key). What else a fleet holds per issuer (from the code, not measured): its "
           "reloader, two key sets and a history, OpenSSL's key objects and its status entry; and a change is "
           "a pass that stats every issuer file and key file and rebuilds the status page's table." % format(n, ","), "",
           "| target | ours | peer | ratio | goal | |", "|---|---|---|---|---|---|"]
    out += rows
    out += ["", "```"] + log_lines + ["```", ""]
    return "\n".join(out)


def pub_pem():
    key = ec.generate_private_key(ec.SECP256R1())
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def write_issuer(d, keys, i, extra=None):
    doc = {"service-account-issuer": "https://%s/id/%d" % (HOST, i),
           "service-account-key-file": [os.path.join(keys, str(i), k + ".pub") for k in "ab"]}
    doc.update(extra or {})
    tmp = os.path.join(d, ".tmp-%d.json" % i)
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, os.path.join(d, "i%d.json" % i))


def make_fleet(work, n):
    keys, fleet, one = (os.path.join(work, x) for x in ("keys", "fleet", "one"))
    for d in (keys, fleet, one):
        os.mkdir(d)
    for i in range(n):
        os.mkdir(os.path.join(keys, str(i)))  # a directory per cluster, as a Secret volume each
        for k in "ab":
            with open(os.path.join(keys, str(i), k + ".pub"), "wb") as f:
                f.write(pub_pem())
        write_issuer(fleet, keys, i)
    write_issuer(one, keys, 0)
    return keys, fleet, one


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers={"Host": HOST})
        r = c.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        c.close()


class Server:
    def __init__(self, issuers_dir, core, last):
        self.port = free_port()
        self.errlog = tempfile.TemporaryFile()
        argv = [BIN, "serve", "--issuers-dir", issuers_dir, "--listen",
                "127.0.0.1:%d" % self.port, "--admin-listen", "none", "--threads", "1", "--shutdown-grace", "0s",
                "--log-level", "warn", "--key-reload-interval", "1d"]
        t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.errlog)
        deadline = t0 + 120
        while True:
            try:
                if get(self.port, "/id/%d%s" % (last, JWKS), timeout=1)[0] == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.errlog.seek(0)
                raise SystemExit("server did not start: %s" % self.errlog.read().decode(errors="replace")[-2000:])
            time.sleep(0.005)
        self.startup = time.monotonic() - t0
        self.startup_cpu = self.cpu()
        # started on every CPU (the goal is a start on two cores); measured
        # on one, every thread of it
        subprocess.run(["taskset", "-a", "-p", "-c", str(core), str(self.proc.pid)], check=True,
                       stdout=subprocess.DEVNULL)

    def cpu(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


def wrk(server, paths, core, duration, script_dir):
    script = os.path.join(script_dir, "paths.lua")
    with open(script, "w") as f:
        f.write("local paths = {%s}\n" % ",".join('"%s"' % p for p in paths))
        f.write('wrk.headers["Host"] = "%s"\n' % HOST)
        f.write("request = function() return wrk.format(nil, paths[math.random(#paths)]) end\n")
    cpu0 = server.cpu()
    out = subprocess.run(["taskset", "-c", str(core), "wrk", "-t1", "-c32", "-d%ds" % duration, "-s", script,
                          "http://127.0.0.1:%d/" % server.port], capture_output=True, text=True, check=True).stdout
    cpu = server.cpu() - cpu0
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit("wrk saw %s failed responses:\n%s" % (errors.group(1), out))
    return requests / cpu


def etags(server, n, skip):
    out = {}
    for i in range(n):
        if i == skip:
            continue
        for doc in (DISCOVERY, JWKS):
            status, headers, body = get(server.port, "/id/%d%s" % (i, doc))
            assert status == 200, (i, doc, status)
            out[(i, doc)] = (headers["etag"], len(body))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--issuers", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--changes", type=int, default=50)
    args = ap.parse_args()
    n = args.issuers
    cores = sorted(os.sched_getaffinity(0))
    core, other = cores[-1], cores[0] if len(cores) > 1 else cores[-1]
    work = tempfile.mkdtemp(prefix="oidc-fleet-bench-")
    servers = []
    try:
        log("command: bench/fleet.py %s" % " ".join(sys.argv[1:]))
        log("load average before: %.2f %.2f %.2f on %d CPUs" % (os.getloadavg() + (os.cpu_count(),)))
        log("writing %d issuers with two P-256 keys each" % n)
        keys, fleet_dir, one_dir = make_fleet(work, n)
        log("starting the fleet and the one-issuer peer")
        peer = Server(one_dir, core, 0)
        servers.append(peer)
        fleet = Server(fleet_dir, core, n - 1)
        servers.append(fleet)
        log("start-up: fleet %.2f s (%.2f server CPU-seconds), peer %.3f s (%.2f)" %
            (fleet.startup, fleet.startup_cpu, peer.startup, peer.startup_cpu))
        before = etags(fleet, n, -1)
        doc_bytes = sum(size for _, size in before.values())
        rss_fleet, rss_peer = fleet.rss_kib(), peer.rss_kib()
        allowance = rss_peer + doc_bytes / 1024 + 4 * n
        log("RSS: fleet %d KiB, peer %d KiB, documents %.0f KiB, allowance %.0f KiB" %
            (rss_fleet, rss_peer, doc_bytes / 1024, allowance))
        fleet_paths = ["/id/%d%s" % (i, JWKS) for i in random.sample(range(n), min(n, 2000))]
        ours, theirs = [], []
        for r in range(args.rounds):
            for name, server, paths, into in (("fleet", fleet, fleet_paths, ours), ("one", peer, ["/id/0" + JWKS],
                                                                                    theirs))[::1 if r % 2 == 0 else -1]:
                into.append(wrk(server, paths, other, args.duration, work))
                log("round %d %s: %.0f requests per CPU-second" % (r + 1, name, into[-1]))
        lat = []
        target = n // 2
        for k in range(args.changes):
            max_age = 60 + k
            t0 = time.monotonic()
            write_issuer(fleet_dir, keys, target, {"max-age": max_age})
            while True:
                _, headers, _ = get(fleet.port, "/id/%d%s" % (target, JWKS))
                if headers.get("cache-control") == "public, max-age=%d" % max_age:
                    break
                if time.monotonic() - t0 > 30:
                    raise SystemExit("a changed file was not served within 30 s")
            lat.append(time.monotonic() - t0)
        lat.sort()
        after = etags(fleet, n, target)
        changed = sum(1 for k, v in after.items() if before[k] != v)
        log("one changed file served: p50 %.0f ms, p99 %.0f ms; other documents changed: %d" %
            (lat[len(lat) // 2] * 1000, lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000, changed))
        log("load average after: %.2f %.2f %.2f" % os.getloadavg())
        best_ours, best_theirs = max(ours), max(theirs)
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        ratio = best_ours / best_theirs
        rows = [
            ("fleet: JWKS GET, requests per server CPU-second, %s issuers (vs the same server with one issuer)"
             % format(n, ","), "%s" % format(round(best_ours), ","), "%s" % format(round(best_theirs), ","),
             "%.2f×" % ratio, "≥ 0.95×", ratio >= 0.95),
            ("fleet: RSS with %s issuers, two keys each (vs one issuer + documents + 4 KiB per issuer)" % format(n, ","),
             "%.1f MiB" % (rss_fleet / 1024), "%.1f MiB" % (allowance / 1024), "%.2f×" % (rss_fleet / allowance),
             "≤ 1.0×", rss_fleet <= allowance),
            ("fleet: start-up to the last issuer served, %s issuers (2 cores)" % format(n, ","),
             "%.2f s" % fleet.startup, "%.3f s (one issuer)" % peer.startup, "", "< 3 s", fleet.startup < 3),
            ("fleet: one changed file served, p99 of %d, %s issuers loaded" % (len(lat), format(n, ",")),
             "%.0f ms" % (p99 * 1000), "", "", "< 1 s", p99 < 1),
            ("fleet: the other issuers' documents changed by those %d changes" % len(lat), "%d" % changed,
             "of %s" % format(len(after), ","), "", "0", changed == 0),
        ]
        print(section(["| %s | %s | %s | %s | %s | %s |" % (name, a, b, r, goal, "met" if ok else "**missed**")
                       for name, a, b, r, goal, ok in rows], LOG, n))
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
