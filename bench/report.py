#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Renders docs/BENCHMARKS.md from the figures of bench/http_bench.py (JSON)
and the outputs of bench/verify.sh, bench/kidless.sh, bench/signer.sh, bench/bound.py,
bench/bound_fleet.py, bench/signer_etcd.py (its text and its --json) and bench/fleet.py,
and writes the data file the plot (bench/connections.gp) reads. Run by
bench/report.sh; not by hand."""
import argparse
import json
import os
import re
import statistics
import time

MIB = 1024


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def fmt_rate(x):
    return f"{x:,.0f}"


def fmt_ratio(x):
    return f"{x:.2f}×"


def verdict(ok):
    return "met" if ok else "**missed**"


def verify_rows(text, title="\n== token verification"):
    """Median column of each row of verify.sh's table (or signer.sh's, whose
    title is given), by row label. The table is fixed-width: a 50-column
    label, then one 12-column cell per round, then the median."""
    rounds = len(re.findall(r"run \d+", text.split(title, 1)[-1].splitlines()[1]))
    rows = {}
    for line in text.splitlines():
        label = line[:50].strip()
        if label and len(line) > 50 + 12 * rounds:
            rows[label] = line[50 + 12 * rounds:50 + 12 * (rounds + 1)].strip()
    return rows


def bound_fleet_rows(text):
    """bench/bound_fleet.py's figures by row label (a 50-column label, a
    12-column value), and its title's pod count and TTL."""
    rows = {line[:50].strip(): line[50:62].strip() for line in text.splitlines() if len(line) > 50}
    m = re.search(r"fleet: ([\d,]+) pods reviewed once a second each, TTL (\d+)s", text)
    rows["pods"], rows["ttl"] = m.group(1), m.group(2)
    return rows


def number(cell):
    return float(cell.rstrip("*x").replace(",", ""))


def signer_etcd_rows(d):
    """The Targets rows of bench/signer_etcd.py's figures (its --json): the
    etcd signer's Sign p99 beside the one-directory peer's of the same run,
    the rotation's propagation, etcd's writes per rotation."""
    e, p, w = d["etcd"], d["peer"], d["writes"]
    rows = [f"| external signer on etcd (3 signers, 3 etcd members; rotations, the rotator, the etcd leader and an "
            f"etcd member killed): Sign p99 at a steady 1,000 calls/s (vs one directory, the same run) | "
            f"{e['p99']:.2f} ms | {p['p99']:.2f} ms | {fmt_ratio(e['p99'] / p['p99'])} | < 2 ms | "
            f"{verdict(e['p99'] < 2)} |"]
    if d.get("propagation_p99") is not None:
        rows.append(f"| external signer on etcd: a rotation's write to the last follower publishing it, p99 of "
                    f"{len(d['propagation'])} | {d['propagation_p99']:.3f} s | | | ≤ 1 s | "
                    f"{verdict(d['propagation_p99'] <= 1)} |")
    if w:
        per = f"{w['proposals'] / d['kids']:.1f}" if d["kids"] else "–"
        rows.append(f"| external signer on etcd: etcd writes per rotation ({w['proposals']:.0f} raft entries for "
                    f"{d['kids']} rotations and {e['calls']:,} Sign: {1000 * w['proposals'] / e['calls']:.2f} per "
                    f"1,000 Sign) | {per} | | | none per Sign | {verdict(w['proposals'] < e['calls'] / 100)} |")
    return rows


class Report:
    def __init__(self, figures, verify_text, kidless_text, signer_text, bound_text, bound_fleet_text, signer_etcd_text,
                 signer_etcd, fleet_text=""):
        self.f = figures
        self.signer_etcd_text = signer_etcd_text
        self.signer_etcd = signer_etcd
        self.verify_text = verify_text
        self.kidless_text = kidless_text
        self.signer_text = signer_text
        self.bound_text = bound_text
        self.fleet_text = fleet_text  # bench/fleet.py's section, as it wrote it
        self.verify = verify_rows(verify_text)
        self.signer = verify_rows(signer_text, "\n== external signer")
        self.bound = verify_rows(bound_text, "\n== TokenReview with")
        self.bound_fleet_text = bound_fleet_text
        self.bound_fleet = bound_fleet_rows(bound_fleet_text)
        self.lines = []

    def out(self, line=""):
        self.lines.append(line)

    def scenario(self, name, peer):
        return self.f["scenarios"][name]["runs"][peer]

    def summary(self):
        """Each target of the performance issue with both sides' figures."""
        h1_ours, h1_ng = self.scenario("jwks-2", "ours"), self.scenario("jwks-2", "nginx")
        h2_ours, h2_ng = self.scenario("h2-jwks-2", "ours"), self.scenario("h2-jwks-2", "nginx")
        c_ours, c_ours_h2 = self.scenario("jwks-2-304", "ours"), self.scenario("h2-jwks-2-304", "ours")
        fp, fpn = self.f["footprint"]["ours"], self.f["footprint"]["nginx"]
        rows = []

        # ratio: when the table's rounds pair ours with the peer's (signer.sh
        # alternates them within a round), the median of the rounds' ratios,
        # as that table gives it: a ratio of the two medians can pair a fast
        # round of one with a slow round of the other.
        def ratio_row(what, ours, peer, goal, higher=True, ratio=None):
            r = ours / peer if ratio is None else ratio
            rows.append((what, ours, peer, fmt_ratio(r), goal, verdict(r >= goal if higher else r <= goal)))

        ratio_row("HTTP/1.1 JWKS GET, requests per server CPU-second (vs nginx)", median(h1_ours, "per_cpu_s"),
                  median(h1_ng, "per_cpu_s"), 1.08)
        ratio_row("HTTP/1.1 JWKS GET, requests/s (vs nginx)", median(h1_ours, "rps"), median(h1_ng, "rps"), 1.0)
        ratio_row("HTTP/1.1 JWKS GET, p99 latency ms (vs nginx; lower is better)", median(h1_ours, "p99_ms"),
                  median(h1_ng, "p99_ms"), 1.0, higher=False)
        ratio_row("HTTP/2 + TLS JWKS GET, requests per server CPU-second (vs nginx)", median(h2_ours, "per_cpu_s"),
                  median(h2_ng, "per_cpu_s"), 1.3)
        ratio_row("HTTP/1.1 304 path per CPU-second (vs our own 200 path)", median(c_ours, "per_cpu_s"),
                  median(h1_ours, "per_cpu_s"), 1.0)
        ratio_row("HTTP/2 + TLS 304 path per CPU-second (vs our own 200 path)", median(c_ours_h2, "per_cpu_s"),
                  median(h2_ours, "per_cpu_s"), 1.0)
        for label, base, goal in (("RS256 uncached verifications/s (per CPU-s)", "openssl speed rsa2048 verify/s (per CPU-s)", 0.85),
                                  ("ES256 uncached verifications/s (per CPU-s)", "openssl speed ecdsap256 verify/s (per CPU-s)", 0.85),
                                  ("RS256 cached verifications/s (per CPU-s)", "openssl speed rsa2048 verify/s (per CPU-s)", 15)):
            ratio_row(f"{label.replace(' (per CPU-s)', '')} (vs `{base.replace(' (per CPU-s)', '')}`)",
                      number(self.verify[label]), number(self.verify[base]), goal)
        for key, alg in (("rsa-2048", "rsa2048"), ("ec-p256", "ecdsap256")):
            ratio_row(f"external signer: Sign calls per server CPU-second, {key}, 64 in flight "
                      f"(vs `openssl speed {alg} sign/s`)",
                      number(self.signer[f"Sign calls per server CPU-s ({key})"]),
                      number(self.signer[f"openssl speed {alg} sign/s (per CPU-s)"]), 0.8,
                      ratio=number(self.signer[f"ratio Sign / openssl sign ({key})"]))
        ratio_row("TokenReview: a failed caller check (401) per server CPU-second (vs a failed review)",
                  number(self.verify["TokenReview req per server CPU-s, failed caller"]),
                  number(self.verify["TokenReview req per server CPU-s, failed review"]), 1.0)
        ratio_row("TokenReview: a failed kid-less caller check (401) per server CPU-second (vs a failed caller with "
                  "a kid), 17 RS256 keys published",
                  number(self.verify["TokenReview req per server CPU-s, kid-less 401"]),
                  number(self.verify["TokenReview req per server CPU-s, failed caller"]), 1.0)
        ratio_row("TokenReview of a live pod's token with --token-review-check-bound-objects, cache warm, per server "
                  "CPU-second (vs without the check)",
                  number(self.bound["req per server CPU-s, with the check"]),
                  number(self.bound["req per server CPU-s, without"]), 0.9,
                  ratio=number(self.bound["ratio with / without, per CPU-s"]))
        self.out("## Targets")
        self.out()
        self.out("| target | ours | peer | ratio | goal | |")
        self.out("|---|---:|---:|---:|---:|---|")
        for what, ours, peer, ratio, goal, ok in rows:
            cell = (lambda x: f"{x:.2f}" if x < 100 else fmt_rate(x))
            op = "≤" if "lower is better" in what else "≥"
            self.out(f"| {what} | {cell(ours)} | {cell(peer)} | {ratio} | {op} {goal}× | {ok} |")
        limits = (("RSS idle", fp["rss_idle_kib"] / MIB, fpn["rss_idle_kib"] / MIB, "MiB", 16),
                  (f"RSS per idle keep-alive connection ({fp['conns']:,} open)", fp["per_conn_bytes"] / 1024,
                   fpn["per_conn_bytes"] / 1024, "KiB", 8),
                  ("exec to first 200 (median)", fp["exec_to_200_median_ms"], fpn["exec_to_200_median_ms"], "ms", 50))
        for what, ours, peer, unit, goal in limits:
            self.out(f"| {what} | {ours:.2f} {unit} | {peer:.2f} {unit} (nginx) | | < {goal} {unit} | "
                     f"{verdict(ours < goal)} |")
        for key in ("rsa-2048", "ec-p256"):
            p99 = number(self.signer[f"Sign p99 ms at 1,000/s ({key})"])
            self.out(f"| external signer: Sign p99 latency at a steady 1,000 calls/s, {key} | {p99:.2f} ms | | | "
                     f"< 2 ms | {verdict(p99 < 2)} |")
        fleet = f"{self.bound_fleet['pods']} pods' tokens reviewed once a second each, TTL {self.bound_fleet['ttl']}s"
        most = number(self.bound_fleet["API requests per object per TTL, most"])
        self.out(f"| TokenReview with --token-review-check-bound-objects, {fleet}: most API server requests for one "
                 f"object within one TTL | {most:.0f} | | | ≤ 1 | {verdict(most <= 1)} |")
        rate = number(self.bound_fleet["reviews per pod per second (1 offered)"])
        self.out(f"| the same: reviews answered per pod per second (1 offered) | {rate:.2f} | | | ≥ 0.95 | "
                 f"{verdict(rate >= 0.95)} |")
        for row in signer_etcd_rows(self.signer_etcd):
            self.out(row)
        self.out()
        self.out("A ratio is our median over the peer's, except the external signer's Sign rows: there each round "
                 "alternates the server and `openssl speed`, and the ratio is the median of the rounds' ratios, as "
                 "in its table below.")
        self.out()

    def scenarios(self):
        self.out("## Every serving figure")
        self.out()
        self.out(f"Medians of {self.f['args']['rounds']} rounds; the rounds alternate ours, nginx, ours, nginx. "
                 "HTTP/1.1 rows are `wrk`, HTTP/2 rows `h2load` (which reports a mean and a maximum, "
                 "not percentiles).")
        self.out()
        self.out("| scenario | server | requests/s | p50 / mean ms | p99 / max ms | requests per CPU-s | "
                 "ratio per CPU-s | every round (req per CPU-s) |")
        self.out("|---|---|---:|---:|---:|---:|---:|---|")
        names = {"jwks-2": "JWKS, 2 keys", "jwks-100": "JWKS, 100 keys", "discovery": "discovery document",
                 "jwks-2-304": "JWKS, If-None-Match → 304", "h2-jwks-2": "HTTP/2 + TLS JWKS",
                 "h2-jwks-2-304": "HTTP/2 + TLS JWKS, If-None-Match → 304"}
        for name, s in self.f["scenarios"].items():
            base = median(s["runs"]["nginx"], "per_cpu_s")
            for peer, runs in s["runs"].items():
                lo, hi = ("p50_ms", "p99_ms") if s["protocol"] == "http1" else ("mean_ms", "max_ms")
                ratio = fmt_ratio(median(runs, "per_cpu_s") / base) if peer == "ours" else ""
                every = ", ".join(fmt_rate(r["per_cpu_s"]) for r in runs)
                self.out(f"| {names[name]} | {peer} | {fmt_rate(median(runs, 'rps'))} | {median(runs, lo):.2f} | "
                         f"{median(runs, hi):.2f} | {fmt_rate(median(runs, 'per_cpu_s'))} | {ratio} | {every} |")
        self.out()
        self.out("Bodies served (byte-identical for both servers, checked before measuring): " +
                 ", ".join(f"{k}: {v:,} bytes" for k, v in self.f["bodies"].items()) + ".")
        self.out()

    def sweep(self):
        self.out("## Against connection count")
        self.out()
        self.out("![requests/s and requests per CPU-second against wrk connections](benchmarks-connections.svg)")
        self.out()
        self.out("| connections | ours req/s | nginx req/s | ours req per CPU-s | nginx req per CPU-s | ratio per CPU-s |")
        self.out("|---:|---:|---:|---:|---:|---:|")
        for row in self.f["sweep"]:
            o, n = row["ours"], row["nginx"]
            self.out(f"| {row['conns']} | {fmt_rate(o['rps'])} | {fmt_rate(n['rps'])} | {fmt_rate(o['per_cpu_s'])} | "
                     f"{fmt_rate(n['per_cpu_s'])} | {fmt_ratio(o['per_cpu_s'] / n['per_cpu_s'])} |")
        self.out()

    def footprint(self):
        self.out("## Footprint")
        self.out()
        self.out("| | ours | nginx |")
        self.out("|---|---:|---:|")
        fp = self.f["footprint"]
        rows = (("RSS idle (after one request)", lambda x: f"{x['rss_idle_kib']:,} KiB"),
                (f"RSS with {fp['ours']['conns']:,} idle keep-alive connections", lambda x: f"{x['rss_conns_kib']:,} KiB"),
                ("RSS per idle connection", lambda x: f"{x['per_conn_bytes']:,.0f} bytes"),
                ("exec to first 200, median", lambda x: f"{x['exec_to_200_median_ms']:.1f} ms"),
                ("exec to first 200, every start", lambda x: ", ".join(f"{v:.1f}" for v in x["exec_to_200_ms"]) + " ms"))
        for label, cell in rows:
            self.out(f"| {label} | {cell(fp['ours'])} | {cell(fp['nginx'])} |")
        self.out()
        self.out("nginx preallocates its connection array (`worker_connections 30000`), so its idle RSS includes "
                 "what ours allocates per connection.")
        self.out()

    def machine_and_commands(self):
        v, a, c = self.f["versions"], self.f["args"], self.f["commands"]
        work = self.f["workdir"]
        self.out("## Machine and commands")
        self.out()
        self.out(f"- Machine: {v['cpus']} × {v['cpu']}, Linux {v['kernel']}; shared with other work, so every "
                 "comparison is a ratio from one run.")
        self.out(f"- Versions: {v['ours']}; {v['nginx']}; {v['wrk']}; {v['h2load']}; {v['openssl']}.")
        self.out(f"- Servers pinned to CPU {a['server_cpu']}, the load generator to CPU {a['load_cpu']}. "
                 "CPU time is utime + stime of the server process from `/proc/PID/stat`, read before and after "
                 "each run.")
        self.out("- Regenerate everything here (about 8 minutes): `bench/report.sh`. The serving figures alone: "
                 "`python3 bench/http_bench.py --json out.json`; the verification figures alone: `bench/verify.sh 2`; "
                 "tokens without kid: `bench/kidless.sh 3`; the external signer: `bench/signer.sh 3`; the "
                 "bound-object check: `bench/bound.py 3`; with a fleet: `python3 bench/bound_fleet.py`; the external "
                 "signer on etcd: `python3 bench/signer_etcd.py 30`.")
        self.out()
        self.out("```")
        self.out(f"# ours (2 keys; plain HTTP/1.1 and TLS)\n{portable(c['ours'].replace(work, '$WORK'))}")
        self.out(f"# ours (100 keys)\n{portable(c['ours_100'].replace(work, '$WORK'))}")
        self.out(f"# nginx\n{portable(c['nginx'].replace(work, '$WORK'))}")
        self.out(f"# load\n{c['wrk']}\n{c['h2load']}")
        self.out("```")
        self.out()
        self.out("<details><summary>nginx.conf</summary>")
        self.out()
        self.out("```nginx")
        self.out(c["nginx_conf"].replace(work, "$WORK").rstrip())
        self.out("```")
        self.out("</details>")
        self.out()

    def verification(self):
        self.out("## Token verification (`bench/verify.sh 2`)")
        self.out()
        self.out("```")
        self.out(self.verify_text.rstrip())
        self.out("```")
        self.out()

    def kidless(self):
        self.out("## Tokens without kid (`bench/kidless.sh 3`)")
        self.out()
        self.out("A token under review without kid is checked against the keys of its algorithm, at most 16 of "
                 "them (`TOKEN_KIDLESS_MAX_KEYS`); a bad one costs that many signature checks. That is what this "
                 "script measures, through `verify`: a review, which the TokenReview endpoint makes only for an "
                 "authenticated, allowed caller. A caller's own token without kid (checked before the caller is "
                 "known) is checked only when one key of its algorithm is published and refused before any "
                 "signature check otherwise, so a refused caller costs one signature check at most: "
                 "`bench/verify.sh` measures that path (the failed kid-less caller rows above, 17 RS256 keys "
                 "published). With `BASE_BIN` set to an older build the script measures both side by side.")
        self.out()
        self.out("```")
        self.out(self.kidless_text.rstrip())
        self.out("```")
        self.out()

    def bound_section(self):
        self.out("## TokenReview with bound-object checks (`bench/bound.py 3`)")
        self.out()
        self.out("Two servers the same but for `--token-review-check-bound-objects`, side by side on one core, "
                 "both mirroring a stand-in API server (`tests/e2e/apiserver_standin.py`) that also keeps the "
                 "service account and pod the reviewed token is bound to; the cache is warm, so a review costs "
                 "a lookup in the process's object cache (a mutex, a hash) on top of the verification cache's "
                 "answer, and the pod is looked up again about once per TTL (10s).")
        self.out()
        self.out("```")
        self.out(self.bound_text.rstrip())
        self.out("```")
        self.out()

    def bound_fleet_section(self):
        self.out("## TokenReview bound-object checks with a fleet (`bench/bound_fleet.py`)")
        self.out()
        self.out("What the API server sees when many pods' tokens are reviewed: every pod's token reviewed once a "
                 "second over HTTP (wrk on one schedule, keep-alive connections, tokens minted once), against a "
                 "stand-in API server that is nginx serving the pods and service accounts as files in kube's JSON "
                 "shape over TLS, its access log counting the requests per object. The goal is at most one request "
                 "per object per TTL; the table also says whether the server kept up (reviews answered per pod "
                 "per second), the reviews' latency and their cost per server CPU-second, lookups included. The "
                 "lookups run on 4 threads, each keeping its connection to the API server, one request at a time: "
                 "how many objects a TTL can refresh is about 4 over a lookup's round trip, which on a machine "
                 "shared with other work (see the load average) is far from the CPU's limit.")
        self.out()
        self.out("```")
        self.out(self.bound_fleet_text.rstrip())
        self.out("```")
        self.out()

    def signer_section(self):
        self.out("## External signer (`bench/signer.sh 3`)")
        self.out()
        self.out("kube-apiserver's `Sign` calls over the Unix socket (gRPC on nghttp2), the server on one core with "
                 "one signer thread, against `openssl speed` signing with the same key type on that core, the two "
                 "measured in alternating one-second slices (five of each per round; each rate is its slices' total "
                 "over their CPU time, because this machine's speed drifts by up to 30% between two-second "
                 "windows); and the latency of calls made on a fixed schedule at 1,000/s, timed from when each was "
                 "due. The load generator is `bench/sign_bench` (a client on gRPC's C core). Throughput is measured "
                 "with 64 calls in flight, as when calls queue at the server's capacity (kube-apiserver sends every "
                 "concurrent Sign on one connection); with 8 in flight each read brings about 4 calls and each "
                 "answer needs its own send, and that ratio is in the table too. Why the transport is nghttp2 "
                 "and not gRPC's C core: measured the same way, a server on gRPC's core spent about 22 µs per "
                 "call around a 37 µs ES256 signature (its completion queue, combiner, allocations and threads), "
                 "0.6× `openssl speed`; on nghttp2 the call's part outside the signature is 6 to 9 µs (reading "
                 "and sending about 2 with 8 in flight, nghttp2 about 2.5, the SHA-256 of the claims about 1).")
        self.out()
        self.out("```")
        self.out(self.signer_text.rstrip())
        self.out("```")
        self.out()

    def render(self):
        self.out("# Benchmarks")
        self.out()
        self.out(f"Generated by `bench/report.sh` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
                 "do not edit by hand. Peer for serving: nginx (Debian `nginx-light`, one process) serving "
                 "the same bytes with the same Cache-Control and CORS headers; peer for verification: "
                 "`openssl speed`.")
        self.out()
        self.summary()
        self.scenarios()
        self.sweep()
        self.footprint()
        self.verification()
        self.kidless()
        self.bound_section()
        self.bound_fleet_section()
        self.signer_section()
        self.lines += signer_etcd_section(self.signer_etcd_text, self.signer_etcd)
        if self.fleet_text:
            self.out(self.fleet_text.rstrip())
            self.out()
        self.machine_and_commands()
        return "\n".join(self.lines) + "\n"


def signer_etcd_section(text, d):
    """The section of bench/signer_etcd.py: what it does, the machine's
    load during the run, its output."""
    return [f"## External signer on etcd (`{d['command']}`)", "",
            "Three signers, each with its own `--signing-key-dir`, on a three-member etcd cluster (Debian's "
            "etcd-server 3.4, TLS with client certificates), ec-p256 keys rotating every 3 s (`--publish-ahead 2s`, "
            "`--etcd-lease-ttl 2s`), and the peer: the same signer on one directory, no etcd, the same periods. "
            "Two `bench/sign_bench` run open loop at 1,000 Sign/s each for "
            f"{d['seconds']} s, one against a follower of the etcd signers, one against the peer, in the same run "
            "(so both see the same machine), while the rotator, the etcd leader and another etcd member are killed "
            "in turn. The signer thread's run-queue wait (time runnable but waiting for a core) says how much of "
            "the tail is the machine; its futex calls (strace, futex only, with stacks) are every lock it waited "
            "for: an uncontended lock never enters the kernel. etcd's writes are the raft entries committed "
            "during the run (`etcd_server_proposals_committed_total` on `/metrics`).", "",
            f"Machine load at the time: load average {d['load'][0]:.1f} at the start and {d['load'][1]:.1f} at "
            f"the end on {d['cpus']} CPUs (other engineers' builds and tests shared the machine), so the absolute "
            "latencies are the machine's as much as the server's; the ratio to the peer of the same run is the "
            f"comparison. The signers and load generators ran at {d['priority']} (both sides alike).", "",
            "What the futex count found, and what was fixed: the signer thread's only lock waits were in `free()` "
            "of a key state the slot had replaced (memory the reload thread allocated: its malloc arena's lock, "
            "held by the reload pass; 3 to 5 per 20 s run), then, with that fixed, in OpenSSL 3.0's primary random "
            "generator, whose lock each ECDSA nonce takes and so do the etcd thread's TLS handshakes and the "
            "reload thread's key generation (9 in 30 s). The slot now frees replaced states on the reload thread, "
            "and ES256 keys sign in an OpenSSL library context of their own: none since. Before the fixes, with "
            "the nice of the machine's other work and a load average of 13 to 22, p99 was 53 to 128 ms on etcd "
            "against 25 to 152 ms for the peer in the same runs (0.84× to 2.9×); a p99 above 2 ms is then the "
            f"machine's: the signer thread still waited {d['etcd']['runq_wait_ms_per_s']:.0f} ms per second for a "
            f"core here (the peer's {d['peer']['runq_wait_ms_per_s']:.0f}), and a Sign cost "
            f"{d['etcd']['signer_cpu_ms_per_s']:.0f} µs of CPU where `bench/signer.sh` measures about 30 on a "
            "quiet core.", "",
            "```", text.rstrip(), "```", ""]


def write_plot_data(figures, path):
    with open(path, "w") as f:
        f.write("# conns ours_rps nginx_rps ours_per_cpu_s nginx_per_cpu_s\n")
        for row in figures["sweep"]:
            o, n = row["ours"], row["nginx"]
            f.write(f"{row['conns']} {o['rps']:.0f} {n['rps']:.0f} {o['per_cpu_s']:.0f} {n['per_cpu_s']:.0f}\n")


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def portable(text):
    """The text without this machine's paths: the checkout's becomes
    relative, a benchmark's temporary work directory $WORK, so the report
    reads the same wherever it was made."""
    text = re.sub(r"/tmp/oidc-[A-Za-z0-9_.-]+", "$WORK", text)
    return text.replace(REPO + "/", "").replace(REPO, ".")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--http", required=True)
    ap.add_argument("--verify", required=True)
    ap.add_argument("--kidless", required=True)
    ap.add_argument("--signer", required=True)
    ap.add_argument("--bound", required=True)
    ap.add_argument("--bound-fleet", required=True)
    ap.add_argument("--signer-etcd", required=True)
    ap.add_argument("--signer-etcd-json", required=True)
    ap.add_argument("--fleet", help="bench/fleet.py's output: the fleet's section")
    ap.add_argument("--out", required=True)
    ap.add_argument("--plot-data", required=True)
    args = ap.parse_args()
    with open(args.http) as f:
        figures = json.load(f)
    with open(args.verify) as f:
        verify_text = portable(f.read())
    with open(args.kidless) as f:
        kidless_text = portable(f.read())
    with open(args.signer) as f:
        signer_text = portable(f.read())
    with open(args.bound) as f:
        bound_text = portable(f.read())
    with open(args.bound_fleet) as f:
        bound_fleet_text = portable(f.read())
    with open(args.signer_etcd) as f:
        signer_etcd_text = portable(f.read())
    with open(args.signer_etcd_json) as f:
        signer_etcd = json.load(f)
    fleet_text = ""
    if args.fleet:
        with open(args.fleet) as f:
            fleet_text = portable(f.read())
    with open(args.out, "w") as f:
        f.write(Report(figures, verify_text, kidless_text, signer_text, bound_text, bound_fleet_text, signer_etcd_text,
                       signer_etcd, fleet_text).render())
    write_plot_data(figures, args.plot_data)


if __name__ == "__main__":
    main()
