#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The external signer on etcd under faults: Sign latency at a steady
1,000 calls/s while the keys rotate and the rotator, the etcd leader and
an etcd member are killed, side by side with a peer (the same signer on
one directory, no etcd, the same rotation periods) under its own 1,000/s
in the same run, so both see the same machine; how many writes etcd
commits per rotation; and how long a rotation's write to etcd takes to
reach the last signer's JWKS.

  bench/signer_etcd.py [SECONDS=30] [--json=FILE]
  environment: SIGNER_ETCD_FIFO (10 as root, else 0): the SCHED_FIFO
  priority of the signers and of the load generators, both sides alike;
  0 for SIGNER_ETCD_NICE (-10 as root, else 0) instead

A three-member etcd cluster (Debian's etcd-server, TLS with client
certificates: tests/e2e/harness_etcd.py) and three signers with their own
--signing-key-dir (ec-p256, --publish-ahead 2s, --rotation-period 3s,
--etcd-lease-ttl 2s), and the peer. Two bench/sign_bench (gRPC's C core,
about 12% of a core each at 1,000/s: its CPU is printed) run open loop at
1,000/s for SECONDS, one against signer b (a follower at the start), one
against the peer, while at a quarter of the run the rotator is killed
(kill -9), at half the etcd leader, at three quarters another etcd member
(restarted after 3 s each; one member runs all along).

Printed for both: p50, p99, p99.9 and max and their ratio; the signer
thread's run-queue wait (schedstat: runnable, waiting for a core: on a
loaded machine this, not the server, makes the tail) and its futex calls
(strace -f --seccomp-bpf -e futex -k, so only futex calls stop the
process: an uncontended lock never enters the kernel, so each is a lock
the signer thread waited for or handed to a waiter, printed with its
stack). For etcd: the raft entries committed during the run
(etcd_server_proposals_committed_total of /metrics) and the puts one
member applied, per rotation and per 1,000 Sign; the rotations; the
propagation times (from the rotator's log line of a new key to the last
follower's log line of it: the log's millisecond clock, one machine).
--json writes the figures for bench/report.py. Exits 1 when something
does not start or a call fails.
"""

import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import harness_etcd as E  # noqa: E402
import oidc_harness as H  # noqa: E402

LOADGEN = os.path.join(H.BUILD_DIR, "sign_bench")
# The signers and the load generators run at this nice (both sides alike;
# etcd at the default), so that the tail measured is the server's rather
# than the other work on a shared machine: the run-queue wait row shows
# what is left of that. Lowering it needs root; 0 leaves it alone.
# Root runs them SCHED_FIFO (chrt -f) instead: then they run before any
# other work of the machine (they use a few percent of a core each, and
# the kernel keeps 5% of each second for the rest), which shows what the
# servers do without that work; with nice -10 the signer thread still
# waited 90 to 150 ms per second for a core at a load average of 8.
NICE = int(os.environ.get("SIGNER_ETCD_NICE", "-10" if os.geteuid() == 0 else "0"))
FIFO = int(os.environ.get("SIGNER_ETCD_FIFO", "10" if os.geteuid() == 0 else "0"))
NICE_ARGV = ["chrt", "-f", str(FIFO)] if FIFO else ["nice", "-n", str(NICE)] if NICE else []
PRIORITY = "SCHED_FIFO %d" % FIFO if FIFO else "nice %d" % NICE
PERIODS = ["--signing-key-type", "ec-p256", "--max-age", "1s", "--publish-ahead", "2s", "--rotation-period", "3s",
           "--max-token-lifetime", "3s", "--allow-short-token-lifetime", "--token-leeway", "0",
           "--key-reload-interval", "1s", "--external-signer-threads", "1", "--threads", "1",
           "--listen", "127.0.0.1:0", "--admin-listen", "none", "--shutdown-grace", "0s"]
TIME_RX = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:(\d\d\.\d{3}))Z")


def log_time(line):
    """Seconds of the log line's timestamp (within the day)."""
    m = re.match(r"^\d{4}-\d\d-\d\dT(\d\d):(\d\d):(\d\d\.\d{3})Z", line)
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)) if m else None


class Signer:
    def __init__(self, work, name, extra):
        self.name, self.dir = name, os.path.join(work, name)
        self.sock = os.path.join(work, name + ".sock")
        self.log = os.path.join(work, name + ".log")
        self.argv = NICE_ARGV + [H.BIN, "serve", "--service-account-issuer", "https://bench.example", "--signing-key-dir",
                     self.dir, "--external-signer-listen", "unix:" + self.sock] + PERIODS + extra
        self.proc = None

    def start(self):
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen(self.argv, stderr=err, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if os.path.exists(self.sock) and subprocess.run([LOADGEN, "unix:" + self.sock, "throughput", "0.2", "1"],
                                                            capture_output=True).returncode == 0:
                return
            time.sleep(0.1)
        raise SystemExit("%s did not start:\n%s" % (self.name, open(self.log).read()[-3000:]))

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


class Load:
    """sign_bench's open-loop run at 1,000/s against one signer, started
    now; result() waits for it: {p50, p99, p999, max (ms), calls, cpu_s:
    the load generator's own CPU seconds (its cost, on the machine it
    measures)}."""

    def __init__(self, sock, seconds):
        self.seconds = seconds
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(NICE_ARGV + [LOADGEN, "unix:" + sock, "rate", str(seconds), "1000"], stdout=self.out,
                                     stderr=self.err)

    def result(self):
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = status
        self.out.seek(0)
        self.err.seek(0)
        if status != 0:
            raise SystemExit("sign_bench failed: %s" % self.err.read().decode(errors="replace"))
        f = self.out.read().decode().split()
        v = {f[i]: f[i + 1] for i in range(0, len(f) - 1, 2)}
        return {"p50": float(v["p50_ms"]), "p99": float(v["p99_ms"]), "p999": float(v["p999_ms"]),
                "max": float(v["max_ms"]), "calls": int(v["calls"]), "cpu_s": usage.ru_utime + usage.ru_stime}


class Threads:
    """Per-thread figures of a signer process between start() and stop():
    the busiest thread (the signer thread under Sign load: the only one
    that runs per call) with its run-queue wait (schedstat: runnable but
    not running, i.e. waiting for a core) and, through strace (futex only,
    filtered in the kernel with seccomp-bpf so other calls run untraced),
    the futex calls each thread made: an uncontended pthread mutex never
    enters the kernel, so a futex call on the signer thread is a lock it
    waited for (or a lock it released to a waiter)."""

    def __init__(self, pid, work, name):
        self.pid, self.trace = pid, os.path.join(work, name + ".futex")
        self.strace = None

    def _tasks(self):
        out = {}
        for tid in os.listdir("/proc/%d/task" % self.pid):
            try:
                with open("/proc/%d/task/%s/stat" % (self.pid, tid)) as f:
                    st = f.read().rsplit(")", 1)[1].split()
                with open("/proc/%d/task/%s/schedstat" % (self.pid, tid)) as f:
                    ss = f.read().split()
                out[int(tid)] = (int(st[11]) + int(st[12]), int(ss[1]))
            except OSError:
                pass
        return out

    def start(self):
        self.t0 = self._tasks()
        if shutil.which("strace"):
            self.strace = subprocess.Popen(["strace", "-qq", "-f", "--seccomp-bpf", "-e", "trace=futex", "-k", "-o",
                                            self.trace, "-p", str(self.pid)], stderr=subprocess.DEVNULL)
            time.sleep(0.5)  # attached to every thread

    def stop(self, seconds):
        t1 = self._tasks()
        if self.strace is not None:
            self.strace.send_signal(signal.SIGINT)
            self.strace.wait()
        cpu = {t: t1[t][0] - self.t0.get(t, (0, 0))[0] for t in t1}
        busiest = max(cpu, key=cpu.get)
        futex, lines = None, []
        if self.strace is not None and os.path.exists(self.trace):
            futex = {}
            with open(self.trace, errors="replace") as f:
                mine = False
                for line in f:
                    tid = line.split(None, 1)[0] if line.strip() else ""
                    if tid.isdigit():
                        futex[int(tid)] = futex.get(int(tid), 0) + 1
                        mine = int(tid) == busiest
                    if mine and len(lines) < 60:
                        lines.append(line.rstrip())  # the call and its stack (-k)
        wait = t1[busiest][1] - self.t0.get(busiest, (0, 0))[1]
        hz = os.sysconf("SC_CLK_TCK")
        return {"signer_tid": busiest, "runq_wait_ms_per_s": wait / 1e6 / seconds,
                "signer_cpu_ms_per_s": 1000.0 * cpu[busiest] / hz / seconds,
                "other_cpu_ms_per_s": 1000.0 * sum(c for t, c in cpu.items() if t != busiest) / hz / seconds,
                "signer_futex": None if futex is None else futex.get(busiest, 0),
                "other_futex": None if futex is None else sum(n for t, n in futex.items() if t != busiest),
                "signer_futex_lines": lines}


def etcd_metrics(cluster, i):
    """{name: value} of the unlabelled samples of member i's /metrics
    (its client port, the cluster's client certificate), or None."""
    ctx = ssl.create_default_context(cafile=cluster.ca)
    ctx.load_cert_chain(cluster.cert, cluster.key)
    try:
        with urllib.request.urlopen(cluster.url(i) + "/metrics", context=ctx, timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2 and not line.startswith("#") and "{" not in f[0]:
            out[f[0]] = float(f[1])
    return out


def rotator(signers):
    """The signer whose log says it rotates last, among those alive."""
    best, at = None, -1
    for s in signers:
        if s.proc.poll() is not None:
            continue
        for line in s.text().splitlines():
            if "rotates the keys" in line:
                t = log_time(line)
                if t is not None and t > at:
                    best, at = s, t
    return best


def propagation(signers):
    """For each kid a rotator generated: seconds from that log line to the
    last live follower's line that published it."""
    made, seen = {}, {}
    for s in signers:
        for line in s.text().splitlines():
            m = re.search(r"next kid=(\S+) \(", line)
            if m and "generated and published" in line:
                made[m.group(1)] = (log_time(line), s.name)
            m = re.search(r"key kid=(\S+) added from", line)
            if m:
                seen.setdefault(m.group(1), {}).setdefault(s.name, log_time(line))
    times = []
    for kid, (t0, who) in made.items():
        others = {n: t for n, t in seen.get(kid, {}).items() if n != who}
        if len(others) >= 1:
            times.append(max(others.values()) - t0)
    return sorted(times)


def made_kids(signers):
    """The kids a rotator has generated so far, by the signers' logs."""
    return set(re.findall(r"next kid=(\S+) \([^\n]*generated and published", "".join(s.text() for s in signers)))


def writes(m0, m1):
    """etcd's writes between two readings of every member's metrics:
    raft entries committed (etcd_server_proposals_committed_total is the
    committed index, the same on every member, so a restarted member does
    not reset it) and the puts one member applied that ran all along
    (etcd_mvcc_put_total counts from the member's start)."""
    both = [i for i in m0 if m0[i] and m1.get(i)]
    if not both:
        return None
    i = both[0]
    return {"proposals": m1[i]["etcd_server_proposals_committed_total"] -
            m0[i]["etcd_server_proposals_committed_total"],
            "puts": m1[i].get("etcd_mvcc_put_total", 0) - m0[i].get("etcd_mvcc_put_total", 0),
            "deletes": m1[i].get("etcd_mvcc_delete_total", 0) - m0[i].get("etcd_mvcc_delete_total", 0),
            "member": "m%d" % i}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--json=")]
    out_json = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--json=")), None)
    seconds = int(args[0]) if args else 30
    if not os.access(LOADGEN, os.X_OK):
        subprocess.run(["cmake", "--build", H.BUILD_DIR, "-j2", "--target", "sign_bench"], check=True,
                       stdout=subprocess.DEVNULL)
    work = tempfile.mkdtemp(prefix="oidc-signer-etcd-bench-")
    cluster = E.EtcdCluster()
    signers = []
    try:
        seal = os.path.join(work, "seal.key")
        with open(seal, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        os.chmod(seal, 0o600)
        etcd = ["--etcd-servers", cluster.servers, "--etcd-cafile", cluster.ca, "--etcd-certfile", cluster.cert,
                "--etcd-keyfile", cluster.key, "--signing-key-encryption-key-file", seal, "--etcd-lease-ttl", "2s"]
        for n in "abc":
            s = Signer(work, n, etcd)
            s.start()
            signers.append(s)
        peer = Signer(work, "peer", [])
        peer.start()
        time.sleep(2)
        faults, stopped = [], []

        def inject():
            q = seconds / 4
            time.sleep(q)
            r = rotator(signers)
            if r is not None and r.name != "b":
                r.kill()
                faults.append("rotator %s killed (kill -9) at %.0fs" % (r.name, q))
            time.sleep(q)
            leader = cluster.leader()
            if leader is not None:
                cluster.stop_member(leader)
                stopped.append(leader)
                faults.append("etcd leader m%d killed at %.0fs" % (leader, 2 * q))
                time.sleep(3)
                cluster.start_member(leader)
            time.sleep(max(0, q - 3))
            now = cluster.leader()
            member = next(i for i in range(3) if i not in stopped and i != now)
            cluster.stop_member(member)
            stopped.append(member)
            faults.append("etcd member m%d killed at %.0fs" % (member, 3 * q))
            time.sleep(3)
            cluster.start_member(member)

        m0 = {i: etcd_metrics(cluster, i) for i in range(3)}
        kids0 = made_kids(signers)
        load0 = os.getloadavg()[0]
        threads = {"etcd": Threads(signers[1].proc.pid, work, "b"), "peer": Threads(peer.proc.pid, work, "peer")}
        for t in threads.values():
            t.start()
        t = threading.Thread(target=inject, daemon=True)
        loads = {"etcd": Load(signers[1].sock, seconds), "peer": Load(peer.sock, seconds)}
        t.start()
        res = {k: l.result() for k, l in loads.items()}
        for k, th in threads.items():
            res[k].update(th.stop(seconds))
        t.join()
        load1 = os.getloadavg()[0]
        m1 = {i: etcd_metrics(cluster, i) for i in range(3)}
        m0 = {i: m for i, m in m0.items() if i not in stopped}
        kids = len(made_kids(signers) - kids0)
        prop = propagation(signers)
        for s in signers:
            s.kill()
        signers.append(peer)
    finally:
        for s in signers:
            s.kill()
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)

    w = writes(m0, m1)
    on_etcd, alone = res["etcd"], res["peer"]
    print("\n== external signer on etcd (3 signers, 3 etcd members) beside one directory, ec-p256, 1,000 Sign/s "
          "each, one run ==")
    print("faults during the run: " + "; ".join(faults))
    print("machine: %d cpus, load average %.1f at the start, %.1f at the end; signers and load generators at "
          "%s" % (os.cpu_count(), load0, load1, PRIORITY))
    print("%-50s%12s%12s%12s" % ("", "on etcd", "one dir", "ratio"))
    for k in ("p50", "p99", "p999", "max"):
        print("%-50s%12.3f%12.3f%12.2f" % ("Sign %s ms" % k, on_etcd[k], alone[k], on_etcd[k] / alone[k]))
    print("%-50s%12d%12d" % ("calls", on_etcd["calls"], alone["calls"]))
    print("%-50s%12.1f%12.1f" % ("signer thread run-queue wait, ms per s", on_etcd["runq_wait_ms_per_s"],
                                 alone["runq_wait_ms_per_s"]))
    print("%-50s%12.1f%12.1f" % ("signer thread CPU, ms per s", on_etcd["signer_cpu_ms_per_s"],
                                 alone["signer_cpu_ms_per_s"]))
    print("%-50s%12.1f%12.1f" % ("the process's other threads' CPU, ms per s", on_etcd["other_cpu_ms_per_s"],
                                 alone["other_cpu_ms_per_s"]))
    if on_etcd["signer_futex"] is not None:
        print("%-50s%12d%12d" % ("signer thread futex calls (lock waits)", on_etcd["signer_futex"],
                                 alone["signer_futex"]))
        print("%-50s%12d%12d" % ("other threads' futex calls", on_etcd["other_futex"], alone["other_futex"]))
        for line in on_etcd["signer_futex_lines"]:
            print("  on etcd, signer thread: " + line)
    print("%-50s%12.1f%12.1f" % ("load generator CPU, % of a core", 100 * on_etcd["cpu_s"] / seconds,
                                 100 * alone["cpu_s"] / seconds))
    print("%-50s%12d" % ("next keys generated during the run", kids))
    if w:
        print("%-50s%12d   (raft entries: puts, txns, leases, elections)" % ("etcd writes committed", w["proposals"]))
        print("%-50s%12d   (member %s, which ran all along)" % ("etcd puts applied", w["puts"], w["member"]))
        if kids:
            print("%-50s%12.1f" % ("  etcd writes per rotation", w["proposals"] / kids))
        print("%-50s%12.2f" % ("  etcd writes per 1,000 Sign", 1000 * w["proposals"] / on_etcd["calls"]))
    p99 = None
    if prop:
        p99 = prop[min(len(prop) - 1, int(0.99 * len(prop)))]
        print("%-50s%12.3f   (goal <= 1 s; %d rotations, max %.3f)" % ("rotation write -> last follower, p99 s",
                                                                       p99, len(prop), prop[-1]))
    print("goal: Sign p99 < 2 ms on etcd: %s" % ("PASS" if on_etcd["p99"] < 2 else "MISS"))
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"seconds": seconds, "faults": faults, "load": [load0, load1], "cpus": os.cpu_count(),
                       "etcd": on_etcd, "peer": alone, "kids": kids, "writes": w, "propagation": prop,
                       "propagation_p99": p99, "priority": PRIORITY, "command": "".join("%s=%s " % (k, os.environ[k]) for k in ("SIGNER_ETCD_FIFO", "SIGNER_ETCD_NICE")
                                          if k in os.environ) + "python3 bench/signer_etcd.py %d" % seconds}, f, indent=1)


if __name__ == "__main__":
    main()
