#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What hostile HTTP/2 clients cost the server (h2o 2.2.5 from Debian 12).

  bench/h2_hostile.py [--quick] [--only NAME[,NAME...]] [--json FILE]

For each pattern of tests/e2e/h2_attacks.py, starts a fresh server with
--threads 1 --http2 (plain and TLS listeners, --http2-idle-timeout 3s so
that connections outliving the idle timeout show), runs the attacker in a
child process and, meanwhile, samples the server's CPU time and memory
(/proc/PID/stat, VmRSS) every 100 ms and probes it four times a second with
a well-behaved client, alternately HTTP/1.1 on the plain listener and
HTTP/2 over TLS, each on a fresh connection. Prints per pattern: what the
attacker sent and its CPU time, the server's CPU time (per attacker request
where that means something, next to the cost of a normal GET measured with
h2load), its memory before, at the peak and after the attacker left, and
how the probes fared. An attacker that drives the server past --rss-cap MiB
(default 1536) is told to stop, and killed if the server goes on past twice
that while it works through what it has already received (then only the
server's side is reported: "read" counts what the attacker got through).

Also checks the default (no --http2): ALPN h2 refused, h2c preface refused.
Run with the system python (python3-h2); the machine is shared and noisy,
so the per-request figures are ratios to the normal GET measured in the
same run. Needs h2load (nghttp2-client) for the baselines.
"""

import argparse
import collections
import json
import multiprocessing
import os
import queue as queue_module
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in tests/
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import h2_attacks as A  # noqa: E402
import oidc_harness as H  # noqa: E402

BIN = os.environ.get("OIDC_BIN") or os.path.join(REPO, "build", "oidc-discovery")
KEY = os.path.join(REPO, "tests", "fixtures", "ec256.pub")
MIB = 1024

# name -> (attack function, full parameters, --quick parameters, unit the server CPU is divided by)
PATTERNS = {
    "rapid_reset": (A.rapid_reset, {"seconds": 10}, {"seconds": 3}, "streams"),
    "held_streams": (A.held_streams, {"connections": 50, "streams": 1000, "seconds": 8},
                     {"connections": 10, "streams": 300, "seconds": 4}, None),
    "hpack_bomb": (A.held_streams, {"connections": 4, "streams": 100, "seconds": 3, "block": ("bomb", 400000)},
                   {"connections": 1, "streams": 20, "seconds": 2, "block": ("bomb", 400000)}, None),
    "many_literals": (A.held_streams, {"connections": 4, "streams": 100, "seconds": 3,
                                       "block": ("literals", 400000)},
                      {"connections": 1, "streams": 20, "seconds": 2, "block": ("literals", 400000)}, None),
    "big_value": (A.held_streams, {"connections": 4, "streams": 100, "seconds": 3, "block": ("value", 400000)},
                  {"connections": 1, "streams": 20, "seconds": 2, "block": ("value", 400000)}, None),
    "continuation_empty": (A.continuation_flood, {"seconds": 10, "frame_len": 0},
                           {"seconds": 3, "frame_len": 0}, "frames"),
    "continuation_full": (A.continuation_flood, {"seconds": 5, "frame_len": 16384},
                          {"seconds": 2, "frame_len": 16384}, "frames"),
    "continuation_hold": (A.continuation_hold, {"connections": 200, "fill_bytes": 400000, "seconds": 8},
                          {"connections": 20, "fill_bytes": 400000, "seconds": 4}, None),
    "table_churn": (A.table_churn, {"seconds": 10}, {"seconds": 3}, "requests"),
    "slow_read": (A.slow_read, {"connections": 50, "streams": 100, "seconds": 8},
                  {"connections": 10, "streams": 100, "seconds": 4}, None),
    "ping_flood": (A.ping_flood, {"seconds": 5}, {"seconds": 2}, "pings"),
    # HTTP/1.1 counterparts, on the plain listener, for comparison
    "h1_slowloris": (A.h1_slowloris, {"connections": 200, "fill_bytes": 400000, "seconds": 14},
                     {"connections": 20, "fill_bytes": 400000, "seconds": 12}, None),
    "h1_pipeline_noread": (A.h1_pipeline_noread, {"connections": 50, "requests": 10000, "seconds": 8},
                           {"connections": 10, "requests": 10000, "seconds": 4}, None),
}
BLOCKS = {"bomb": A.hpack_bomb_block, "literals": A.many_literals_block, "value": A.big_value_block}

# The work directory and the test CA's files.
Setup = collections.namedtuple("Setup", "tmp cafile cert key")


class ServerProc:
    """The server under test, on fresh ports."""

    def __init__(self, setup, extra):
        self.port, self.tls_port, self.admin = H.free_port(), H.free_port(), H.free_port()
        self.log = open(os.path.join(setup.tmp, "server-%d.log" % self.port), "wb")
        self.target = A.Target("127.0.0.1", self.port, self.tls_port, setup.cafile)
        self.proc = subprocess.Popen(
            [BIN, "serve", "--service-account-issuer", "https://issuer.example", "--service-account-key-file", KEY,
             "--listen", "127.0.0.1:%d" % self.port, "--tls-listen", "127.0.0.1:%d" % self.tls_port,
             "--tls-cert-file", setup.cert, "--tls-private-key-file", setup.key,
             "--admin-listen", "127.0.0.1:%d" % self.admin, "--threads", "1", "--shutdown-grace", "0s", *extra],
            stdout=self.log, stderr=self.log)
        if not (H.wait_accepting(self.port) and H.wait_accepting(self.tls_port)):
            self.stop()
            raise SystemExit("server did not start; see %s" % self.log.name)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


class Sampler(threading.Thread):
    """Samples the server's memory every 100 ms; when its RSS passes the
    cap, tells the attacker to stop (attacks that can grow memory take a
    stop event) and kills it if the server goes on past twice the cap."""

    def __init__(self, pid, cap_kib, stop, attacker):
        super().__init__(daemon=True)
        self.pid, self.cap, self.stop, self.attacker = pid, cap_kib, stop, attacker
        self.peak_rss, self.done = 0, threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                _, rss, _ = A.proc_stats(self.pid)
            except OSError:
                return
            self.peak_rss = max(self.peak_rss, rss)
            if rss > self.cap:
                self.stop.set()
            if rss > self.cap * 2 and self.attacker.is_alive():
                self.attacker.kill()
            time.sleep(0.1)


class Prober(threading.Thread):
    """A well-behaved client: a GET four times a second, alternately
    HTTP/1.1 (plain) and HTTP/2 (TLS), each on a fresh connection."""

    def __init__(self, target):
        super().__init__(daemon=True)
        self.target, self.results, self.done = target, {"h1": [], "h2": []}, threading.Event()

    def run(self):
        kinds = [("h1", A.http1_get), ("h2", A.h2_get)]
        i = 0
        while not self.done.is_set():
            name, fn = kinds[i % 2]
            self.results[name].append(A.timed(fn, self.target))
            i += 1
            self.done.wait(0.25)

    def summary(self):
        out = {}
        for name, rs in self.results.items():
            lat = sorted(t for ok, t, _ in rs if ok)
            out[name] = {"ok": sum(1 for ok, _, _ in rs if ok), "total": len(rs),
                         "p50_ms": round(statistics.median(lat) * 1000, 1) if lat else None,
                         "max_ms": round(max(t for _, t, _ in rs) * 1000, 1) if rs else None,
                         "failures": sorted({str(d) for ok, _, d in rs if not ok})[:3]}
        return out


def attacker_main(name, params, target, stop, queue):
    """Child process: runs one attack, reports its result and CPU time."""
    fn, _, _, _ = PATTERNS[name]
    params = dict(params)
    if "block" in params:
        kind, size = params.pop("block")
        params.update(block_for=BLOCKS[kind](size), stop=stop)
    t0 = time.process_time()
    result = fn(target, **params)
    result["attacker_cpu_s"] = round(time.process_time() - t0, 2)
    queue.put(result)


def run_attacker(name, params, target, sampler_for):
    """Runs the attack in a child process, watched by the Sampler that
    sampler_for(stop event, child) makes. Returns (result or None, whether
    it was stopped at the cap, seconds, the sampler)."""
    queue, stop = multiprocessing.Queue(), multiprocessing.Event()
    child = multiprocessing.Process(target=attacker_main, args=(name, params, target, stop, queue))
    sampler = sampler_for(stop, child)
    sampler.start()
    t0 = time.monotonic()
    child.start()
    result, deadline = None, time.monotonic() + params.get("seconds", 10) + 120
    while result is None and time.monotonic() < deadline:
        try:
            result = queue.get(timeout=0.5)
        except queue_module.Empty:
            if not child.is_alive():
                break  # killed past twice the cap: no result
    child.join(5)
    if child.is_alive():
        child.kill()
        child.join()
    return result, stop.is_set(), time.monotonic() - t0, sampler


def run_pattern(name, params, unit, setup, cap_kib):
    """One pattern against a fresh server; returns the report."""
    srv = ServerProc(setup, ["--http2", "--http2-idle-timeout", "3s"])
    pid = srv.proc.pid
    time.sleep(0.3)
    cpu0, rss0, _ = A.proc_stats(pid)
    read0 = A.proc_bytes_read(pid)
    prober = Prober(srv.target)
    prober.start()
    result, capped, elapsed, sampler = run_attacker(name, params, srv.target,
                                                    lambda stop, child: Sampler(pid, cap_kib, stop, child))
    alive = srv.alive()
    cpu1, rss1, _ = A.proc_stats(pid) if alive else (None, None, None)
    read = A.proc_bytes_read(pid) - read0 if alive else None
    time.sleep(1.0)  # the attacker's sockets are closed: does the memory come back?
    for thread in (prober, sampler):
        thread.done.set()
        thread.join()
    alive = srv.alive()
    rss_after = A.proc_stats(pid)[1] if alive else None
    rc = srv.stop()

    def mib(kib):
        return round(kib / MIB, 1) if kib else None

    report = {"pattern": name, "params": dict(params), "attack": result, "stopped_at_rss_cap": capped,
              "elapsed_s": round(elapsed, 1), "server_alive": alive, "server_exit": rc,
              "server_cpu_s": round(cpu1 - cpu0, 2) if cpu1 is not None else None,
              "server_read_mib": round(read / MIB / MIB, 1) if read is not None else None,
              "rss_mib": {"start": mib(rss0), "peak": mib(sampler.peak_rss), "at_end": mib(rss1),
                          "1s_later": mib(rss_after)},
              "probes": prober.summary()}
    if unit and result and result.get(unit) and cpu1 is not None:
        report["server_us_per_" + unit.rstrip("s")] = round((cpu1 - cpu0) * 1e6 / result[unit], 2)
    return report


def baseline(setup, n):
    """Server CPU per normal GET: h2load over TLS (h2, 10 streams at a
    time) and over plain HTTP/1.1."""
    if shutil.which("h2load") is None:
        return {"error": "h2load not found (apt-get install nghttp2-client)"}
    srv = ServerProc(setup, ["--http2"])
    out = {}
    try:
        for label, argv in (("h2_tls", ["-c", "1", "-m", "10", "https://127.0.0.1:%d%s" % (srv.tls_port, A.JWKS)]),
                            ("h1_plain", ["--h1", "-c", "1", "-m", "1",
                                          "http://127.0.0.1:%d%s" % (srv.port, A.JWKS)])):
            cpu0 = A.proc_stats(srv.proc.pid)[0]
            r = subprocess.run(["h2load", "-n", str(n), *argv], capture_output=True, text=True, timeout=300)
            cpu1 = A.proc_stats(srv.proc.pid)[0]
            ok = re.search(r"status codes: (\d+) 2xx", r.stdout)
            out[label] = {"requests": n, "2xx": int(ok.group(1)) if ok else None,
                          "server_us_per_request": round((cpu1 - cpu0) * 1e6 / n, 2)}
    finally:
        srv.stop()
    return out


def default_is_http1(setup):
    """Without --http2: what a client offering h2 gets, on both listeners."""
    srv = ServerProc(setup, [])
    target = srv.target
    try:
        with H.tls_connect(srv.tls_port, target.cafile, alpn=["h2", "http/1.1"]) as s:
            alpn = s.selected_alpn_protocol()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
            s.sendall(A.PREFACE + A.settings())
            answer = s.recv(200).split(b"\r\n", 1)[0].decode("latin-1")
        return {"tls_alpn_offering_h2_and_http1.1": alpn, "h2c_preface_answer": answer,
                "h1_probe": A.timed(A.http1_get, target)[2]}
    finally:
        srv.stop()


def fmt(report):
    a = report["attack"] or {}
    p = report["probes"]
    per = [k for k in report if k.startswith("server_us_per_")]
    lines = ["== %s %s" % (report["pattern"], json.dumps(report["params"])),
             "   attacker: %s" % json.dumps({k: v for k, v in a.items() if k not in ("frames_received",)}),
             "   server: read %s MiB, cpu %ss%s; RSS MiB start %s, peak %s%s, at end %s, 1 s later %s; alive %s" % (
                 report["server_read_mib"], report["server_cpu_s"],
                 "".join(", %s us/%s" % (report[k], k[len("server_us_per_"):]) for k in per),
                 report["rss_mib"]["start"], report["rss_mib"]["peak"],
                 " (attacker stopped at the cap)" if report["stopped_at_rss_cap"] else "",
                 report["rss_mib"]["at_end"], report["rss_mib"]["1s_later"], report["server_alive"]),
             "   probes: " + "; ".join("%s %d/%d ok, p50 %s ms, max %s ms%s" % (
                 k, v["ok"], v["total"], v["p50_ms"], v["max_ms"],
                 (" " + str(v["failures"])) if v["failures"] else "") for k, v in p.items())]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller and shorter attacks")
    ap.add_argument("--only", help="comma-separated pattern names: " + ", ".join(PATTERNS))
    ap.add_argument("--rss-cap", type=int, default=1536, help="MiB of server RSS at which an attacker is stopped")
    ap.add_argument("--baseline-requests", type=int, default=20000)
    ap.add_argument("--json", help="also write every figure to this file")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(PATTERNS)
    for n in names:
        if n not in PATTERNS:
            ap.error("unknown pattern %s" % n)
    if not os.access(BIN, os.X_OK):
        raise SystemExit("%s missing: cmake -S . -B build && cmake --build build" % BIN)
    problem = H.modules_problem("h2")
    if problem:
        raise SystemExit(problem + " (python3-h2, with /usr/bin/python3)")

    tmp = tempfile.mkdtemp(prefix="oidc-h2-hostile-")
    try:
        ca = H.make_ca(tmp)
        setup = Setup(tmp, ca[0], *H.make_server_cert(tmp, ca, H.TLS_SAN))
        out = {"default": default_is_http1(setup)}
        print("default (no --http2):", json.dumps(out["default"]), flush=True)
        out["baseline"] = baseline(setup, args.baseline_requests)
        print("normal GET:", json.dumps(out["baseline"]), flush=True)
        out["patterns"] = []
        for name in names:
            _, full, quick, unit = PATTERNS[name]
            report = run_pattern(name, quick if args.quick else full, unit, setup, args.rss_cap * MIB)
            out["patterns"].append(report)
            print(fmt(report), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
