#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Key-rotation benchmark for oidc-discovery.
#
# What it measures: whether relying parties ever see a wrong JWKS while the
# service-account keys rotate, and how quickly a rotation becomes visible.
# The server watches a Kubernetes-Secret-style key directory; this script
# keeps keep-alive GET load on /openid/v1/jwks with wrk (2 connections per
# core) while bench/rotation.py rotates the directory ROTATIONS times by
# "..data" symlink swaps (as the kubelet does), and reports
#   - non-200 responses under load                      (must be 0)
#   - bodies that are not exactly one of the valid sets (must be 0)
#   - swap -> new set served, p50/p99/max               (goal: p99 < 100 ms)
# The valid sets are computed independently of the server by
# tests/e2e/oidc_harness.py from keys generated with the openssl CLI.
#
# Usage: bench/rotation.sh [ROTATIONS=100] [SPACING_MS=150]
# ROTATION_KEEP=1 keeps the work directory (keys, server log, wrk output).
# Everything runs on 127.0.0.1 and takes well under 2 minutes. Exits 1 when a
# response was non-200 or invalid, a new set was never served (timeout), or
# the server died or did not exit 0 on SIGTERM.
set -euo pipefail

ROTATIONS=${1:-100}
SPACING_MS=${2:-150}
REPO=$(cd "$(dirname "$0")/.." && pwd)
BIN=${OIDC_BIN:-$REPO/build/oidc-discovery}
CORES=$(nproc)

. "$REPO/bench/lib.sh"

bench_require wrk python3 openssl
if [ ! -x "$BIN" ]; then
    echo "rotation.sh: building $BIN" >&2
    (cd "$REPO" && cmake -S . -B build >/dev/null && cmake --build build -j"$CORES" >/dev/null)
fi
bench_binary "$BIN"

WORK=$(mktemp -d /tmp/oidc-rotation.XXXXXX)
SERVER_PID='' WRK_PID=''
cleanup() {
    for pid in $WRK_PID $SERVER_PID; do kill "$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do  # up to 5 s, then SIGKILL
        alive=; for pid in $WRK_PID $SERVER_PID; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ -z "$alive" ] && break; sleep 0.1
    done
    for pid in $WRK_PID $SERVER_PID; do kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    if [ -n "${ROTATION_KEEP:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "generating $((ROTATIONS + 1)) EC P-256 keys..." >&2
python3 "$REPO/bench/rotation.py" prepare "$WORK" "$ROTATIONS"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT/openid/v1/jwks"
SERVER_CMD=("$BIN" serve --service-account-issuer https://bench.example --service-account-key-file "$WORK/volume/sa"
            --listen "127.0.0.1:$PORT" --threads "$CORES")
"${SERVER_CMD[@]}" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
    (: <>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done

# wrk runs until the rotations are done, then gets SIGINT (it prints its
# report on SIGINT); -d is only an upper bound.
WRK_CMD=(wrk -t"$CORES" -c"$((2 * CORES))" -d100s --latency -s "$REPO/bench/rotation_check.lua" "$URL"
         -- "$WORK/valid.txt")
"${WRK_CMD[@]}" >"$WORK/wrk.txt" 2>&1 &
WRK_PID=$!
sleep 1  # let the load settle before the first swap
python3 "$REPO/bench/rotation.py" rotate "$WORK" "$PORT" "$ROTATIONS" "$SPACING_MS" "$WORK/result.json"
kill -INT "$WRK_PID"
wait "$WRK_PID" || true
WRK_PID=
# the server must have survived the run and must shut down cleanly (exit 0)
if kill -0 "$SERVER_PID" 2>/dev/null; then
    when="after SIGTERM at the end"
    kill -TERM "$SERVER_PID"
    for _ in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$SERVER_PID" 2>/dev/null && { when="still running 10 s after SIGTERM; killed"; kill -KILL "$SERVER_PID"; }
else
    when="DIED during the run"
fi
status=0; wait "$SERVER_PID" 2>/dev/null || status=$?
SERVER_PID=
server="exit status $status $when"
[ "$status" -gt 128 ] && server="$server (signal $(kill -l $((status - 128))))"
[ "$status" = 0 ] && server="clean exit $when"

cat "$WORK/wrk.txt"
read -r non200 invalid total < <(sed -n 's/^non200=\([0-9]*\) invalid=\([0-9]*\) total=\([0-9]*\)$/\1 \2 \3/p' "$WORK/wrk.txt") || true
rps=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/wrk.txt")
published=$(grep -c 'published key set generation' "$WORK/server.log" || true)
failed=$(grep -c 'key reload failed' "$WORK/server.log" || true)

python3 - "$WORK/result.json" "$non200" "$invalid" "$total" "$rps" "$published" "$failed" "$server" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
non200, invalid, total, rps, published, failed, server = sys.argv[2:]
ms = lambda v: "-" if v is None else "%.1f" % v
print("\n== key rotation under load ==")
print("rotations          %d%s%s" % (r["rotations"], " (ABORTED: time budget)" if r["aborted"] else "",
                                    " (STOPPED: connection refused, server gone)" if r["server_gone"] else ""))
print("wrk responses      %s (%s requests/s)" % (total, rps))
print("wrk non-200        %s" % non200)
print("wrk invalid bodies %s" % invalid)
print("swap -> served     p50 %s ms, p99 %s ms, max %s ms (min %s ms; %d served, %d timeouts > 5 s)"
      % (ms(r["p50_ms"]), ms(r["p99_ms"]), ms(r["max_ms"]), ms(r["min_ms"]), r["served"], r["timeouts"]))
print("goal p99 < 100 ms  %s" % ("met" if r["p99_ms"] is not None and r["p99_ms"] < 100 else "NOT met"))
print("poller             %d requests: %d non-200, %d invalid, %d regressions, %d reconnects"
      % (r["polls"], r["non200"], r["invalid"], r["regressions"], r["reconnects"]))
print("slowest swaps      " + ", ".join("#%d %.1f ms" % (s[0], s[2]) for s in sorted(r["swaps"], key=lambda s: -s[2])[:3]))
print("server state       %s; log: %s key sets published (initial + rotations), %s failed reloads"
      % (server, published, failed))
EOF
echo "server             ${SERVER_CMD[*]}"
echo "load               ${WRK_CMD[*]}"
echo "rotations          bench/rotation.py rotate $WORK $PORT $ROTATIONS $SPACING_MS (one swap per ${SPACING_MS} ms)"

fail=0
[ "${non200:-x}" = 0 ] && [ "${invalid:-x}" = 0 ] && [ "$status" = 0 ] || fail=1
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(1 if r["timeouts"] or r["non200"] or r["invalid"] or r["aborted"] or r["server_gone"] else 0)' "$WORK/result.json" || fail=1
if [ "$fail" != 0 ]; then
    echo "FAIL; server log, last lines other than info:"; grep -v '^[-0-9T:.]*Z info ' "$WORK/server.log" | tail -n 20
    exit 1
fi
echo "OK"
