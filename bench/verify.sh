#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Token-verification benchmark for oidc-discovery.
#
# What it measures (the issue's goals in brackets):
#   - in-process verifications/s on one core (taskset) of an RS256 (RSA 2048)
#     and an ES256 service-account token, through `oidc-discovery verify
#     --repeat N`, uncached (--no-cache: base64url decode, JSON parse,
#     SHA-256, signature check and claim checks every time) and cached;
#   - `openssl speed rsa2048 ecdsap256` verify/s on the same core in the same
#     run, and the ratios
#         RS256 uncached / openssl rsa2048 verify    [>= 0.85]
#         ES256 uncached / openssl ecdsap256 verify  [>= 0.85]
#         RS256 cached   / openssl rsa2048 verify    [>= 15x]
#     (openssl speed verifies a precomputed digest with a reused context, so
#     the ratio charges the product for everything around the signature);
#   - TokenReview requests/s over HTTP (server: --threads 1 on that core;
#     wrk: -t1 on the other cores; the caller's bearer token, allowed and
#     answered from the cache after the first request, with every request)
#     with one token (cache hits) and with more distinct tokens than the
#     server's per-thread cache holds (4096, FIFO), sent round-robin, so that
#     every request is a cache miss;
#   - the cost of a failed caller check against that of a failed review
#     (refusing an unauthenticated caller must cost no more): requests
#     with a forged caller token (401) against requests by the allowed caller
#     with a forged token to review (201, not authenticated). A forged token
#     is never cached, so each request of either costs one RSA signature
#     check that fails. Compared per server CPU-second:
#         failed caller / failed review  [>= 1.00]
#   - the same for a forged caller token without a kid while the server
#     publishes VERIFY_EXTRA_RSA_KEYS (16) more RS256 keys: kube-apiserver
#     would try every key of the alg, so without a bound a kid-less token
#     costs an attacker's target 17 signature checks; the README promises a
#     refused caller costs one at most:
#         failed kid-less caller / failed caller  [>= 1.00]
#
# Rates are per CPU-second. `openssl speed` divides by its user CPU time
# (unless -elapsed), so the product's rate is N / (user + system CPU time of
# the verify process), not the wall-clock rate `verify --repeat` prints: on a
# core shared with other work the wall-clock rate drops and the comparison
# would be unfair. The wall-clock rate is shown too, with the CPU share
# (CPU time / wall time); a share well below 100% means the core was shared.
# For HTTP the server's CPU share during the run is shown: below ~95% the
# server was not the bottleneck (wrk, or a shared core, was).
#
# The measurements alternate (openssl, product, openssl, product, ...) for
# ROUNDS rounds; the table gives every round and the median (for the ratios:
# the median of the per-round ratios, each against that round's openssl).
#
# Usage: bench/verify.sh [ROUNDS=2]
# Environment: VERIFY_CORE (default: the last CPU this shell may use),
# VERIFY_N_RSA (60000), VERIFY_N_EC (20000), VERIFY_N_CACHED (2000000),
# VERIFY_OPENSSL_SECONDS (3), VERIFY_WRK_SECONDS (5), VERIFY_WRK_CONNS (16),
# VERIFY_DISTINCT_TOKENS (4500), VERIFY_KEEP=1 keeps the work directory,
# OIDC_BIN (default build/oidc-discovery).
# Everything runs on 127.0.0.1; with the defaults it takes about 2 minutes
# on an idle 2-core machine. Exits 1 when a tool is missing, a token does not
# verify, a TokenReview response is not 201 authenticated, or the server
# dies; a missed goal is reported in the table (MISS) but does not change the
# exit status.
set -euo pipefail

ROUNDS=${1:-2}
REPO=$(cd "$(dirname "$0")/.." && pwd)
BIN=${OIDC_BIN:-$REPO/build/oidc-discovery}
FIX=$REPO/tests/fixtures
N_RSA=${VERIFY_N_RSA:-60000}
N_EC=${VERIFY_N_EC:-20000}
N_CACHED=${VERIFY_N_CACHED:-2000000}
OSSL_SECONDS=${VERIFY_OPENSSL_SECONDS:-3}
WRK_SECONDS=${VERIFY_WRK_SECONDS:-5}
WRK_CONNS=${VERIFY_WRK_CONNS:-16}
N_DISTINCT=${VERIFY_DISTINCT_TOKENS:-4500}
N_EXTRA_RSA=${VERIFY_EXTRA_RSA_KEYS:-16}
ISSUER=https://bench.example
AUD=bench
CACHE_SIZE=4096 # TOKENREVIEW_CACHE_SIZE in server/http/handler_tokenreview.c

. "$REPO/bench/lib.sh"

bench_require wrk openssl taskset python3
bench_binary "$BIN"
if [ "$N_DISTINCT" -le "$CACHE_SIZE" ]; then
    echo "verify.sh: VERIFY_DISTINCT_TOKENS must exceed the server's cache ($CACHE_SIZE) for all misses" >&2
    exit 1
fi

# One core for the measured process, the others (if any) for wrk.
bench_cores "${VERIFY_CORE:-}"
PIN=(taskset -c "$CORE")
TICK=$(getconf CLK_TCK)

WORK=$(mktemp -d /tmp/oidc-verify-bench.XXXXXX)
SERVER_PID= WRK_PID=
cleanup() {
    for pid in $WRK_PID $SERVER_PID; do kill "$pid" 2>/dev/null || true; done
    for pid in $WRK_PID $SERVER_PID; do wait "$pid" 2>/dev/null || true; done
    if [ -n "${VERIFY_KEEP:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

RESULTS=$WORK/results.txt  # lines: METRIC ROUND VALUE
: >"$RESULTS"
COMMANDS=()
TIMEFORMAT='%3R %3U %3S'   # for the time keyword: wall, user, system seconds
log() { echo "[$(date +%T)] $*" >&2; }
fail() { echo "verify.sh: $1" >&2; shift; for f in "$@"; do tail -n 30 "$f" >&2; done; exit 1; }

mint() { # KEYFILE UID
    "$BIN" token --signing-key-file "$1" --issuer "$ISSUER" --audience "$AUD" --namespace ns \
        --service-account sa --service-account-uid "$2" --duration 1h
}

log "minting tokens: 1 RS256, 1 ES256, the caller's, $N_DISTINCT distinct RS256 (for the all-miss HTTP run)"
mint "$FIX/rsa2048.pkcs8.key" u1 >"$WORK/rs256.jwt"
"$BIN" token --signing-key-file "$FIX/rsa2048.pkcs8.key" --issuer "$ISSUER" --audience "$AUD" --namespace bench \
    --service-account caller --service-account-uid caller-uid --duration 1h >"$WORK/caller.jwt"
# forge JWT: the same header (kid of the served key) and payload with a
# signature of the right length that does not verify.
forge() { python3 -c 'import base64,sys; h,p,_=open(sys.argv[1]).read().split("."); print(h+"."+p+"."+base64.urlsafe_b64encode(b"\x01"*256).decode().rstrip("="))' "$1"; }
forge "$WORK/caller.jwt" >"$WORK/forged-caller.jwt"
# the same forged caller token with its kid taken out of the header
python3 -c 'import base64,json,sys
h,p,s=open(sys.argv[1]).read().strip().split(".")
hd=json.loads(base64.urlsafe_b64decode(h+"=="*(len(h)%4!=0)))
hd.pop("kid")
print(base64.urlsafe_b64encode(json.dumps(hd,separators=(",",":")).encode()).decode().rstrip("=")+"."+p+"."+s)' \
    "$WORK/forged-caller.jwt" >"$WORK/forged-caller-kidless.jwt"
log "generating $N_EXTRA_RSA more RSA 2048 public keys for the server to publish"
EXTRA_KEYS=()
for i in $(seq "$N_EXTRA_RSA"); do
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 2>/dev/null | openssl pkey -pubout -out "$WORK/extra$i.pub"
    EXTRA_KEYS+=(--service-account-key-file "$WORK/extra$i.pub")
done
forge "$WORK/rs256.jwt" >"$WORK/forged.jwt"
mint "$FIX/ec256.pkcs8.key" u1 >"$WORK/es256.jwt"
# Copies of the RS256 token re-signed with fresh jti values (bench/verify_tokens.py,
# python3-cryptography); without that package, one CLI process per token.
status=0
python3 "$REPO/bench/verify_tokens.py" "$WORK/rs256.jwt" "$FIX/rsa2048.pkcs8.key" "$N_DISTINCT" \
    >"$WORK/distinct.jwt" || status=$?
if [ "$status" = 3 ]; then
    log "python3 cryptography missing: minting $N_DISTINCT tokens with the CLI (slow)"
    export -f mint
    export BIN ISSUER AUD
    seq "$N_DISTINCT" | xargs -P "$(nproc)" -I{} bash -c 'mint "$0" "u{}"' "$FIX/rsa2048.pkcs8.key" >"$WORK/distinct.jwt"
elif [ "$status" != 0 ]; then
    fail "bench/verify_tokens.py failed"
fi
[ "$(sort -u "$WORK/distinct.jwt" | grep -c .)" = "$N_DISTINCT" ] || fail "minting $N_DISTINCT distinct tokens failed"

# verify_cmd ALG NOCACHE(0|1) N: prints the command.
verify_cmd() {
    local jwt=$WORK/rs256.jwt pub=$FIX/rsa2048.pub nc=
    if [ "$1" = ES256 ]; then jwt=$WORK/es256.jwt pub=$FIX/ec256.pub; fi
    if [ "$2" = 1 ]; then nc=" --no-cache"; fi
    echo "${PIN[*]} $BIN verify --token-file $jwt --service-account-key-file $pub" \
        "--service-account-issuer $ISSUER --api-audiences $AUD --repeat $3$nc"
}

# Both tokens must verify, or the rates would be those of a rejection.
for alg in RS256 ES256; do
    if ! $(verify_cmd "$alg" 1 1) >"$WORK/check.$alg" 2>&1 || ! grep -q '"authenticated":true' "$WORK/check.$alg"; then
        fail "the $alg token does not verify:" "$WORK/check.$alg"
    fi
done

# cpu_share TIMEFILE: prints "CPU_SECONDS SHARE" from "wall user sys".
cpu_of() { awk '{ c = $2 + $3; printf "%.6f %.4f\n", c, ($1 > 0 ? c / $1 : 0) }' "$1"; }

run_openssl() { # ROUND
    local cmd="${PIN[*]} openssl speed -seconds $OSSL_SECONDS rsa2048 ecdsap256" out=$WORK/openssl.$1 cpu share
    log "round $1: $cmd"
    { time $cmd >"$out" 2>/dev/null; } 2>"$out.time" || fail "openssl speed failed" "$out"
    awk -v r="$1" '
        /^rsa 2048 bits/                  { print "openssl_rsa", r, $NF }
        /^ *256 bits ecdsa \(nistp256\)/  { print "openssl_ec", r, $NF }' "$out" >>"$RESULTS"
    [ "$(grep -c "^openssl_.* $1 " "$RESULTS")" = 2 ] || fail "could not parse openssl speed output:" "$out"
    read -r cpu share < <(cpu_of "$out.time")
    echo "share_openssl $1 $share" >>"$RESULTS"
    if [ "$1" = 1 ]; then COMMANDS+=("$cmd"); fi
}

run_verify() { # ROUND METRIC ALG NOCACHE N
    local cmd out=$WORK/verify.$2.$1 wall cpu share
    cmd=$(verify_cmd "$3" "$4" "$5")
    log "round $1: $2"
    { time $cmd >"$out" 2>"$out.err"; } 2>"$out.time" || fail "verify failed:" "$out" "$out.err"
    wall=$(sed -n '1s/.*: \([0-9.]*\) verifications\/s.*/\1/p' "$out")
    if [ -z "$wall" ] || ! grep -q '"authenticated":true' "$out"; then
        fail "unexpected verify output:" "$out" "$out.err"
    fi
    read -r cpu share < <(cpu_of "$out.time")
    echo "$2 $1 $(awk -v n="$5" -v c="$cpu" 'BEGIN { printf "%.1f", n / c }')" >>"$RESULTS"
    echo "wall_$2 $1 $wall" >>"$RESULTS"
    echo "share_$2 $1 $share" >>"$RESULTS"
    if [ "$1" = 1 ]; then COMMANDS+=("$cmd"); fi
}

for r in $(seq "$ROUNDS"); do
    run_openssl "$r"
    run_verify "$r" rs256_uncached RS256 1 "$N_RSA"
    run_verify "$r" es256_uncached ES256 1 "$N_EC"
    run_verify "$r" rs256_cached RS256 0 "$N_CACHED"
    run_verify "$r" es256_cached ES256 0 "$N_CACHED"
done

# TokenReview over HTTP.
read -r P1 P2 < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
SERVE_CMD=("${PIN[@]}" "$BIN" serve --service-account-issuer "$ISSUER" --service-account-key-file "$FIX/rsa2048.pub"
           "${EXTRA_KEYS[@]}"
           --listen "127.0.0.1:$P1" --enable-token-review --token-review-listen "127.0.0.1:$P2"
           --token-review-insecure-http --token-review-allowed-callers system:serviceaccount:bench:caller
           --api-audiences "$AUD" --threads 1)
"${SERVE_CMD[@]}" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || fail "the server exited:" "$WORK/server.log"
    (: <>"/dev/tcp/127.0.0.1/$P2") 2>/dev/null && break
    sleep 0.1
done
COMMANDS+=("${SERVE_CMD[*]}")
URL="http://127.0.0.1:$P2/apis/authentication.k8s.io/v1/tokenreviews"

server_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }

run_wrk() { # ROUND METRIC TOKENS_FILE BEARER_FILE [EXPECT]
    local out=$WORK/wrk.$2.$1 rps bad t0 t1 w0 w1
    local cmd=(taskset -c "$OTHERS" wrk -t1 -c"$WRK_CONNS" -d"${WRK_SECONDS}s" -s "$REPO/bench/verify_tokenreview.lua"
               "$URL" -- "$3" "$4" "${5:-authenticated}")
    log "round $1: $2 (wrk ${WRK_SECONDS}s)"
    t0=$(server_ticks) w0=$(date +%s.%N)
    "${cmd[@]}" >"$out" 2>&1 &
    WRK_PID=$!
    wait "$WRK_PID" || true
    WRK_PID=
    kill -0 "$SERVER_PID" 2>/dev/null || fail "the server died (wrk output, server log):" "$out" "$WORK/server.log"
    t1=$(server_ticks) w1=$(date +%s.%N)
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
    bad=$(sed -n 's/^bad=\([0-9]*\) total=.*/\1/p' "$out")
    # A response other than the one expected (or from another process on
    # the port) makes the whole run meaningless.
    [ -n "$rps" ] && [ "${bad:-x}" = 0 ] || fail "TokenReview run failed (wrk output, server log):" "$out" "$WORK/server.log"
    echo "$2 $1 $rps" >>"$RESULTS"
    echo "share_$2 $1 $(awk -v a="$t0" -v b="$t1" -v hz="$TICK" -v w0="$w0" -v w1="$w1" 'BEGIN { printf "%.4f", (b - a) / hz / (w1 - w0) }')" >>"$RESULTS"
    if [ "$1" = 1 ]; then COMMANDS+=("${cmd[*]}"); fi
}

head -n 1 "$WORK/rs256.jwt" >"$WORK/one.jwt"
for r in $(seq "$ROUNDS"); do
    run_wrk "$r" http_cached "$WORK/one.jwt" "$WORK/caller.jwt"
    run_wrk "$r" http_distinct "$WORK/distinct.jwt" "$WORK/caller.jwt"
    run_wrk "$r" http_bad_caller "$WORK/one.jwt" "$WORK/forged-caller.jwt" unauthorized
    run_wrk "$r" http_bad_caller_kidless "$WORK/one.jwt" "$WORK/forged-caller-kidless.jwt" unauthorized
    run_wrk "$r" http_bad_review "$WORK/forged.jwt" "$WORK/caller.jwt" not-authenticated
done
kill "$SERVER_PID" 2>/dev/null || true
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=

python3 - "$RESULTS" "$ROUNDS" "$N_DISTINCT" "$CORE" "$OTHERS" "$(openssl version)" "$CACHE_SIZE" "$N_EXTRA_RSA" <<'EOF'
import math, statistics, sys
path, rounds, ndistinct, core, others, osslver, cachesize, nextra = sys.argv[1:]
R = range(1, int(rounds) + 1)
v = {}
for line in open(path):
    m, r, x = line.split()
    v.setdefault(m, {})[int(r)] = float(x)

runs = lambda m: [v[m][r] for r in R]
ratios = lambda m, base: [v[m][r] / v[base][r] for r in R]
# A round whose openssl or verify processes got less than 90% of the core
# (other work on it) is marked * and left out of the medians when at least
# one round is clean.
inproc = [m for m in v if m.startswith("share_") and "http" not in m]
# openssl speed divides by its user time, which can come out 0 (rate "inf")
# when it barely ran: such a round counts as shared too.
shared = {r: min(v[m][r] for m in inproc) < 0.9 or not all(math.isfinite(v[m][r]) for m in v) for r in R}
clean = [i for i, r in enumerate(R) if not shared[r]] or list(range(len(R)))

def fmt(x, kind):
    if not math.isfinite(x):
        return str(x)
    if kind == "ratio":
        return "%.2f" % x + ("x" if x >= 10 else "")
    if kind == "pct":
        return "%.0f%%" % (100 * x)
    return "{:,.0f}".format(x)

W = 50
head = "%-*s" % (W, "") + "".join("%12s" % ("run %d" % r) for r in R) + "%12s  %s" % ("median", "goal")
print("\n== token verification on cpu %s (%s) ==" % (core, osslver))
print(head)
print("-" * len(head))

def row(label, xs, kind="rate", goal=None, marks=True):
    med = statistics.median([xs[i] for i in clean] if marks else xs)
    g = ""
    if goal is not None:
        g = "%s %s" % ((">= %.2f" % goal) if goal < 10 else (">= %gx" % goal), "PASS" if med >= goal else "MISS")
    cells = [fmt(x, kind) + ("*" if marks and shared[r] else "") for x, r in zip(xs, R)]
    print("%-*s" % (W, label) + "".join("%12s" % c for c in cells) + "%12s  %s" % (fmt(med, kind), g))

row("RS256 uncached verifications/s (per CPU-s)", runs("rs256_uncached"))
row("openssl speed rsa2048 verify/s (per CPU-s)", runs("openssl_rsa"))
row("  ratio RS256 uncached / openssl RSA", ratios("rs256_uncached", "openssl_rsa"), "ratio", 0.85)
row("ES256 uncached verifications/s (per CPU-s)", runs("es256_uncached"))
row("openssl speed ecdsap256 verify/s (per CPU-s)", runs("openssl_ec"))
row("  ratio ES256 uncached / openssl ECDSA", ratios("es256_uncached", "openssl_ec"), "ratio", 0.85)
row("RS256 cached verifications/s (per CPU-s)", runs("rs256_cached"))
row("  ratio RS256 cached / openssl RSA", ratios("rs256_cached", "openssl_rsa"), "ratio", 15)
row("ES256 cached verifications/s (per CPU-s)", runs("es256_cached"))
row("  ratio ES256 cached / openssl ECDSA", ratios("es256_cached", "openssl_ec"), "ratio")
row("TokenReview req/s, 1 token (cache hits)", runs("http_cached"), marks=False)
row("TokenReview req/s, %s tokens (all misses)" % ndistinct, runs("http_distinct"), marks=False)
row("  ratio all-miss HTTP / openssl RSA", ratios("http_distinct", "openssl_rsa"), "ratio", marks=False)
per_cpu = lambda m: [v[m][r] / v["share_" + m][r] if v["share_" + m][r] > 0 else float("nan") for r in R]
row("TokenReview req/s, failed caller (401)", runs("http_bad_caller"), marks=False)
row("TokenReview req/s, failed review (201)", runs("http_bad_review"), marks=False)
row("  ratio failed caller / failed review, per CPU-s",
    [a / b for a, b in zip(per_cpu("http_bad_caller"), per_cpu("http_bad_review"))], "ratio", 1.0, marks=False)
row("TokenReview req/s, failed kid-less caller (401)", runs("http_bad_caller_kidless"), marks=False)
row("  ratio kid-less caller / caller, per CPU-s",
    [a / b for a, b in zip(per_cpu("http_bad_caller_kidless"), per_cpu("http_bad_caller"))], "ratio", 1.0, marks=False)

print("\nwall clock, as `verify --repeat` prints it (CPU share = CPU time / wall time):")
for m, label in (("rs256_uncached", "RS256 uncached"), ("es256_uncached", "ES256 uncached"),
                 ("rs256_cached", "RS256 cached"), ("es256_cached", "ES256 cached")):
    row("  %s verifications/s" % label, runs("wall_" + m))
    row("    CPU share", runs("share_" + m), "pct")
row("  openssl speed CPU share", runs("share_openssl"), "pct")
row("  server CPU share, TokenReview 1 token", runs("share_http_cached"), "pct", marks=False)
row("  server CPU share, TokenReview all misses", runs("share_http_distinct"), "pct", marks=False)
row("  server CPU share, failed caller", runs("share_http_bad_caller"), "pct", marks=False)
row("  server CPU share, failed kid-less caller", runs("share_http_bad_caller_kidless"), "pct", marks=False)
row("  server CPU share, failed review", runs("share_http_bad_review"), "pct", marks=False)
for m, label in (("http_cached", "1 token"), ("http_distinct", "all misses"), ("http_bad_caller", "failed caller"),
                 ("http_bad_caller_kidless", "kid-less 401"), ("http_bad_review", "failed review")):
    row("  TokenReview req per server CPU-s, %s" % label, per_cpu(m), marks=False)
if any(shared.values()):
    print("NOTE: * = cpu %s was shared with other work in that round (a process got < 90%% of it);\n"
          "      %s. Per-CPU-second rates are\n"
          "      less affected than wall-clock ones, but openssl speed divides by user time only.\n"
          "      Rerun on a quiet machine for figures to quote."
          % (core, "the medians use the clean rounds" if len(clean) < len(R) else "NO clean round: the medians use all"))
print("(HTTP: RS256, server --threads 1 on cpu %s, wrk -t1 on cpu %s; the server caches %s\n"
      " verifications per thread, FIFO, so %s round-robin tokens always miss; it publishes %s more\n"
      " RS256 keys, which a kid-less token could be tried against)" % (core, others, cachesize, ndistinct, nextra))
EOF

echo
echo "== commands (round 1; every round runs the same) =="
for c in "${COMMANDS[@]}"; do echo "  $c"; done
echo "  tokens: $BIN token --signing-key-file $FIX/{rsa2048,ec256}.pkcs8.key --issuer $ISSUER" \
     "--audience $AUD --namespace ns --service-account sa --service-account-uid uN --duration 1h"
echo "  caller: the same with --namespace bench --service-account caller; forged-*.jwt: a token's header and" \
     "payload with 256 bytes of 0x01 as its signature"
if [ -n "${VERIFY_KEEP:-}" ]; then echo "  (work directory: $WORK)"; fi
exit 0
