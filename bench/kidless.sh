#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What an unauthenticated caller can make one token cost: a token without a
# kid is tried against the keys of its algorithm (kube-apiserver tries them
# all), one with a kid against that key only.
#
# With KEYS P-256 public keys configured (100 by default: the most AWS STS
# takes of one type), it measures the CPU time of one verification of
#   - a bad ES256 token with a kid (a valid kid, a wrong signature),
#   - the same token without its kid (so a signature check per key tried),
#   - a good ES256 token without a kid, signed by the first key,
# through `oidc-discovery verify --repeat N --no-cache`, pinned to one core
# (taskset), and reports the ratio bad kid-less / bad with kid: how much
# more work a kid-less token buys an attacker. With BASE_BIN set (e.g. a
# build of an older commit) the same runs are made with it too, alternating
# BIN and BASE_BIN in each round, so the two figures come from one run.
#
# Usage: bench/kidless.sh [ROUNDS=3]
# Environment: OIDC_BIN (default build/oidc-discovery), BASE_BIN (none),
# KIDLESS_KEYS (100), KIDLESS_N_KID (4000), KIDLESS_N_NOKID (400),
# KIDLESS_CORE (the last CPU this shell may use).
# Everything is local; about 30 s per binary with the defaults. Exits 1
# when a tool is missing or a token is not refused (or accepted) for the
# expected reason.
set -euo pipefail

ROUNDS=${1:-3}
REPO=$(cd "$(dirname "$0")/.." && pwd)
BIN=${OIDC_BIN:-$REPO/build/oidc-discovery}
BASE=${BASE_BIN:-}
NKEYS=${KIDLESS_KEYS:-100}
N_KID=${KIDLESS_N_KID:-4000}
N_NOKID=${KIDLESS_N_NOKID:-400}
ISSUER=https://bench.example
AUD=bench

. "$REPO/bench/lib.sh"

bench_require openssl taskset python3
bench_binary "$BIN" ${BASE:+"$BASE"}

bench_cores "${KIDLESS_CORE:-}"
WORK=$(mktemp -d /tmp/oidc-kidless-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
log() { echo "[$(date +%T)] $*" >&2; }

log "generating $NKEYS P-256 keys"
mkdir "$WORK/keys"
for i in $(seq -w 0 $((NKEYS - 1))); do
    openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null |
        openssl pkcs8 -topk8 -nocrypt -out "$WORK/k$i.key"
    openssl pkey -in "$WORK/k$i.key" -pubout -out "$WORK/keys/k$i.pub"
done
FIRST=$(ls "$WORK" | grep -m1 '\.key$')

"$BIN" token --signing-key-file "$WORK/$FIRST" --issuer "$ISSUER" --audience "$AUD" --namespace ns \
    --service-account sa --service-account-uid u1 --duration 1h >"$WORK/good_kid.jwt"
# The same token without its kid, re-signed by the same key (openssl dgst
# writes DER; JWS wants r || s), and both with the last byte of s changed
# (r and s stay in range, so each costs a full signature check).
python3 - "$WORK" "$WORK/$FIRST" <<'EOF'
import base64, json, subprocess, sys
work, key = sys.argv[1:]
b64d = lambda s: base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
b64e = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()

def der_to_raw(der):  # SEQUENCE { INTEGER r, INTEGER s }; P-256 lengths fit one byte
    out, i = b"", 2
    for _ in range(2):
        n = der[i + 1]
        out += der[i + 2:i + 2 + n].lstrip(b"\0").rjust(32, b"\0")
        i += 2 + n
    return out

h, p, _ = open(work + "/good_kid.jwt").read().strip().split(".")
nokid = b64e(json.dumps({"alg": json.loads(b64d(h))["alg"]}, separators=(",", ":")).encode())
der = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=(nokid + "." + p).encode(),
                     capture_output=True, check=True).stdout
good = der_to_raw(der)
bad = bytearray(good)
bad[-1] ^= 1
for name, tok in (("good_nokid", (nokid, p, good)), ("bad_kid", (h, p, bad)), ("bad_nokid", (nokid, p, bad))):
    open("%s/%s.jwt" % (work, name), "w").write(".".join((tok[0], tok[1], b64e(bytes(tok[2])))) + "\n")
EOF

# measure BIN TOKEN N EXPECT: appends "CPU-seconds per verification" to
# stdout after checking the verdict (EXPECT: ok, or the error's name).
measure() {
    local out=$WORK/out err=$WORK/err t=$WORK/time rc=0
    { time taskset -c "$CORE" "$1" verify --token-file "$WORK/$2.jwt" --service-account-key-file "$WORK/keys" \
        --service-account-issuer "$ISSUER" --api-audiences "$AUD" --repeat "$3" --no-cache >"$out" 2>"$err"; } \
        2>"$t" || rc=$?
    if [ "$4" = ok ]; then
        [ "$rc" = 0 ] && grep -q '"authenticated":true' "$out" || { cat "$out" "$err" >&2; exit 1; }
    else
        [ "$rc" = 1 ] && grep -q "invalid token ($4)" "$err" || { echo "$1 $2: want $4" >&2; cat "$err" >&2; exit 1; }
    fi
    awk -v n="$3" '{ printf "%.9f\n", ($2 + $3) / n }' "$t"
}

TIMEFORMAT='%3R %3U %3S'
RESULTS=$WORK/results
: >"$RESULTS"
for r in $(seq "$ROUNDS"); do
    for b in "$BIN" ${BASE:+"$BASE"}; do
        tag=new
        [ "$b" = "$BIN" ] || tag=base
        log "round $r: $tag"
        echo "$tag bad_kid $r $(measure "$b" bad_kid "$N_KID" signature)" >>"$RESULTS"
        echo "$tag bad_nokid $r $(measure "$b" bad_nokid "$N_NOKID" unknown_kid)" >>"$RESULTS"
        echo "$tag good_nokid $r $(measure "$b" good_nokid "$N_KID" ok)" >>"$RESULTS"
    done
done

python3 - "$RESULTS" "$NKEYS" "$CORE" "$BIN" "$BASE" <<'EOF'
import statistics, sys
path, nkeys, core, new, base = sys.argv[1:]
v = {}
for line in open(path):
    tag, m, r, x = line.split()
    v.setdefault((tag, m), []).append(float(x))
tags = [("new", "OIDC_BIN")] + ([("base", "BASE_BIN")] if base else [])
print("== kid-less ES256 tokens, %s P-256 keys, cpu %s (median of %d rounds, CPU time) ==" %
      (nkeys, core, len(v[("new", "bad_kid")])))
print("%-10s %16s %16s %16s %10s" % ("binary", "bad, kid (us)", "bad, no kid (us)", "good, no kid (us)", "ratio"))
for tag, name in tags:
    kid, nokid, good = (statistics.median(v[(tag, m)]) * 1e6 for m in ("bad_kid", "bad_nokid", "good_nokid"))
    print("%-10s %16.1f %16.1f %16.1f %9.1fx" % (name, kid, nokid, good, nokid / kid))
print("(ratio = CPU per bad kid-less token / CPU per bad token with a kid; the good kid-less token is\n"
      " signed by the first key)")
EOF
echo
echo "== command =="
echo "  taskset -c $CORE BIN verify --token-file TOKEN --service-account-key-file DIR_OF_${NKEYS}_P256_KEYS" \
     "--service-account-issuer $ISSUER --api-audiences $AUD --repeat N --no-cache"
echo "  N: $N_KID (bad with kid, good kid-less), $N_NOKID (bad kid-less); OIDC_BIN: $BIN${BASE:+; BASE_BIN: $BASE}"
