#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# External signer benchmark: kube-apiserver's Sign calls over the Unix
# socket, against `openssl speed` signing with the same key type.
#
# What it measures, for rsa-2048 (the default, RS256) and ec-p256 (ES256),
# the issue's goals in brackets:
#   - Sign calls per second over the socket, the server pinned to one core
#     (taskset) with one signer thread, the load generator (bench/sign_bench,
#     a client on gRPC's C core; its header says why not Python) on the
#     other core, IN_FLIGHT (64) calls in flight; per server CPU-second:
#     the calls over the utime + stime of the whole server process, so a
#     core shared with other work does not skew the ratio. Throughput is
#     what the server does when calls queue: kube-apiserver sends every
#     concurrent Sign (each pod start, each token refresh) on its one
#     connection, so at capacity many are waiting. The client's window
#     sets how many calls one read brings: with 8 in flight a read brought
#     about 4 and each answer needed its own send (0.25 reads and 0.25
#     sends per call), with 64 about 25 (0.04 each; perf stat's
#     syscalls:sys_enter_read and _sendto on the server), and those
#     syscalls were about 5% of an ES256 call (perf). The ratio with 8 in
#     flight is shown too, beside the goal's;
#   - `openssl speed -seconds 1 rsa2048|ecdsap256` signatures on the same
#     core (per user CPU-second, as openssl counts), and
#         Sign calls per server CPU-s / openssl sign/s   [>= 0.8]
#     (openssl signs a precomputed digest with a reused context; a Sign call
#     also hashes the claims, encodes the signature, and goes through gRPC).
#     The two are measured in alternating one-second slices, SLICES of
#     each per round, and each rate is its slices' total over their total
#     CPU time: this machine's speed changes by up to 30% from one
#     two-second window to the next (openssl alone, measured), which one
#     5-second run of each compared unevenly;
#   - latency at a steady 1,000 Sign calls/s, open loop (sign_bench rate:
#     each call is due on a fixed schedule and timed from when it was due):
#     p50 and p99                                          [p99 < 2 ms]
#
# The slices alternate (openssl, the server at IN_FLIGHT, the server at 8,
# openssl, ...), and the rounds repeat them (and the latency run) for
# ROUNDS rounds; the table gives every round and the median.
#
# Usage: bench/signer.sh [ROUNDS=3]
# Environment: SIGNER_CORE (default: the last CPU this shell may use),
# SIGNER_SLICES (5: one-second slices of each, openssl and the server, per
# round and key type), SIGNER_IN_FLIGHT (64: calls in flight for the
# throughput goal), SIGNER_RATE_SECONDS (10: each run at 1,000/s),
# OIDC_BIN (default build/oidc-discovery; sign_bench is built in build/
# when missing). Everything runs on a Unix socket in a temporary directory;
# about 4 minutes with the defaults. Exits 1 when a tool is missing, the server
# does not start, or a call fails; a missed goal shows in the table (MISS)
# but does not change the exit status.
set -euo pipefail

ROUNDS=${1:-3}
REPO=$(cd "$(dirname "$0")/.." && pwd)
BIN=${OIDC_BIN:-$REPO/build/oidc-discovery}
LOADGEN=$REPO/build/sign_bench
SLICES=${SIGNER_SLICES:-5}
SECONDS_R=${SIGNER_RATE_SECONDS:-10}
IN_FLIGHT=${SIGNER_IN_FLIGHT:-64}

. "$REPO/bench/lib.sh"

bench_require openssl taskset python3 cmake
bench_binary "$BIN"
if [ ! -x "$LOADGEN" ]; then
    cmake -S "$REPO" -B "$REPO/build" >/dev/null
    cmake --build "$REPO/build" -j2 --target sign_bench >/dev/null
fi

bench_cores "${SIGNER_CORE:-}"
TICK=$(getconf CLK_TCK)
WORK=$(mktemp -d /tmp/oidc-signer-bench.XXXXXX)
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
log() { echo "[$(date +%T)] $*" >&2; }
RESULTS=$WORK/results
: >"$RESULTS"

# openssl_slice TYPE: one second of openssl speed signing on the core:
# "SIGNATURES CPU_SECONDS", from its "Doing ...: N ... in 1.00s" line.
openssl_slice() {
    local alg
    alg=$([ "$1" = rsa-2048 ] && echo rsa2048 || echo ecdsap256)
    taskset -c "$CORE" openssl speed -seconds 1 "$alg" 2>&1 >/dev/null |
        awk '/^Doing .*(private rsa|sign ecdsa)/ { n = $(NF-6); s = $NF; sub(/s$/, "", s); print n, s }'
}

# server_slice IN_FLIGHT: one second of Sign load with IN_FLIGHT calls in
# flight: "CALLS CPU_SECONDS WALL_SECONDS".
server_slice() {
    local t0 t1 w0 w1 out=$WORK/bench
    t0=$(server_ticks) w0=$(date +%s.%N)
    taskset -c "$OTHERS" "$LOADGEN" "unix:$WORK/signer.sock" throughput 1 "$1" >"$out"
    t1=$(server_ticks) w1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v hz="$TICK" -v w0="$w0" -v w1="$w1" \
        '/^throughput/ { printf "%d %.3f %.3f\n", $5, (b - a) / hz, w1 - w0 }' "$out"
}

# throughput TYPE ROUND: SLICES alternating slices of openssl and of the
# running server; each rate is its total over its CPU time.
throughput() {
    local i
    : >"$WORK/slices"
    for i in $(seq "$SLICES"); do
        echo "openssl $(openssl_slice "$1")" >>"$WORK/slices"
        echo "server $(server_slice "$IN_FLIGHT")" >>"$WORK/slices"
        echo "shallow $(server_slice 8)" >>"$WORK/slices"
    done
    awk -v t="$1" -v r="$2" '
        $1 == "openssl" { on += $2; os += $3 }
        $1 == "server" { n += $2; cpu += $3; wall += $4 }
        $1 == "shallow" { n8 += $2; cpu8 += $3 }
        END { printf "openssl_%s %s %.1f\ncpu_%s %s %.1f\nwall_%s %s %.1f\nshare_%s %s %.4f\ncpu8_%s %s %.1f\n",
              t, r, on / os, t, r, n / cpu, t, r, n / wall, t, r, cpu / wall, t, r, n8 / cpu8 }' \
        "$WORK/slices" >>"$RESULTS"
}

server_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }
# Nanoseconds the server's threads have spent runnable but waiting for the
# core (schedstat's second field): other work on the core shows here.
server_waited() { cat /proc/"$SERVER_PID"/task/*/schedstat | awk '{ w += $2 } END { printf "%.0f\n", w }'; }

# server_run TYPE ROUND: throughput and latency of one server.
server_run() {
    local dir=$WORK/keys-$1-$2 sock=$WORK/signer.sock out=$WORK/bench q0 q1
    taskset -c "$CORE" "$BIN" serve --service-account-issuer https://bench.example --signing-key-dir "$dir" \
        --signing-key-type "$1" --external-signer-listen "unix:$sock" --external-signer-threads 1 --threads 1 \
        --listen 127.0.0.1:0 --admin-listen none --log-level warn --shutdown-grace 0s 2>"$WORK/server.log" &
    SERVER_PID=$!
    for _ in $(seq 100); do
        [ -S "$sock" ] && taskset -c "$OTHERS" "$LOADGEN" "unix:$sock" throughput 0.2 1 >/dev/null 2>&1 && break
        sleep 0.1
    done
    taskset -c "$OTHERS" "$LOADGEN" "unix:$sock" throughput 1 "$IN_FLIGHT" >/dev/null # warm up
    log "round $2: $1: $SLICES slices of openssl and of the server, alternating"
    throughput "$1" "$2"
    log "round $2: $1: latency at 1,000/s"
    q0=$(server_waited)
    taskset -c "$OTHERS" "$LOADGEN" "unix:$sock" rate "$SECONDS_R" 1000 >"$out"
    q1=$(server_waited)
    awk -v t="$1" -v r="$2" -v q0="$q0" -v q1="$q1" -v s="$SECONDS_R" '/^rate/ {
        print "p50_" t, r, $6; print "p99_" t, r, $10; printf "wait_%s %s %.2f\n", t, r, (q1 - q0) / 1e6 / s }' \
        "$out" >>"$RESULTS"
    kill "$SERVER_PID"
    wait "$SERVER_PID" || { cat "$WORK/server.log" >&2; exit 1; }
    SERVER_PID=
}

for r in $(seq "$ROUNDS"); do
    for t in rsa-2048 ec-p256; do
        server_run "$t" "$r"
    done
done

python3 - "$RESULTS" "$ROUNDS" "$CORE" "$OTHERS" "$(openssl version)" "$IN_FLIGHT" <<'EOF'
import statistics, sys
path, rounds, core, others, osslver, inflight = sys.argv[1:]
rounds = int(rounds)
v = {}
for line in open(path):
    k, r, x = line.split()
    v.setdefault(k, {})[int(r)] = float(x)
W = 50
head = "%-*s" % (W, "") + "".join("%12s" % ("run %d" % r) for r in range(1, rounds + 1)) + "%12s  goal" % "median"
print("\n== external signer on cpu %s, load on cpu %s (%s) ==" % (core, others, osslver))
print(head)
print("-" * len(head))

def row(label, cells, fmt, goal=None, ok=None):
    med = statistics.median(cells)
    g = "" if goal is None else "%s %s" % (goal, "PASS" if ok(med) else "MISS")
    print("%-*s" % (W, label) + "".join("%12s" % fmt(c) for c in cells) + "%12s  %s" % (fmt(med), g))

rate = lambda x: "{:,.0f}".format(x)
for t, alg in (("rsa-2048", "rsa2048"), ("ec-p256", "ecdsap256")):
    cpu = [v["cpu_" + t][r] for r in range(1, rounds + 1)]
    ossl = [v["openssl_" + t][r] for r in range(1, rounds + 1)]
    row("Sign calls per server CPU-s (%s)" % t, cpu, rate)
    row("openssl speed %s sign/s (per CPU-s)" % alg, ossl, rate)
    row("  ratio Sign / openssl sign (%s)" % t, [a / b for a, b in zip(cpu, ossl)], lambda x: "%.2f" % x,
        ">= 0.8", lambda m: m >= 0.8)
    row("  the same ratio, 8 calls in flight (%s)" % t,
        [v["cpu8_" + t][r] / v["openssl_" + t][r] for r in range(1, rounds + 1)], lambda x: "%.2f" % x)
    row("Sign calls/s, wall clock (%s)" % t, [v["wall_" + t][r] for r in range(1, rounds + 1)], rate)
    row("  server CPU share during the run (%s)" % t, [100 * v["share_" + t][r] for r in range(1, rounds + 1)],
        lambda x: "%.0f%%" % x)
    row("Sign p50 ms at 1,000/s (%s)" % t, [v["p50_" + t][r] for r in range(1, rounds + 1)], lambda x: "%.3f" % x)
    row("Sign p99 ms at 1,000/s (%s)" % t, [v["p99_" + t][r] for r in range(1, rounds + 1)], lambda x: "%.3f" % x,
        "< 2", lambda m: m < 2)
    row("  server run-queue wait, ms per s (%s)" % t, [v["wait_" + t][r] for r in range(1, rounds + 1)],
        lambda x: "%.1f" % x)
print("(server: --external-signer-threads 1 --threads 1, pinned to cpu %s with every thread of the process;\n"
      " load: bench/sign_bench, %s calls in flight for throughput (and 8, in slices of their own),\n"
      " open loop at 1,000/s for latency.\n"
      " A CPU share well below 100%% under throughput load, or a run-queue wait of more than a few ms per\n"
      " second at 1,000/s, means other work shared the core: the per-CPU-second rates stand, the\n"
      " latencies do not.)" % (core, inflight))
EOF
echo
echo "== commands (every round runs the same; the first and the third alternate, $SLICES times each) =="
echo "  taskset -c $CORE openssl speed -seconds 1 rsa2048   (and ecdsap256; the signatures of its 'Doing' line)"
echo "  taskset -c $CORE $BIN serve --service-account-issuer https://bench.example --signing-key-dir DIR" \
     "--signing-key-type rsa-2048|ec-p256 --external-signer-listen unix:SOCK --external-signer-threads 1 --threads 1" \
     "--listen 127.0.0.1:0 --admin-listen none --log-level warn"
echo "  taskset -c $OTHERS build/sign_bench unix:SOCK throughput 1 $IN_FLIGHT   (and: throughput 1 8)"
echo "  taskset -c $OTHERS build/sign_bench unix:SOCK rate $SECONDS_R 1000"
