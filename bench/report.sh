#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates docs/BENCHMARKS.md and docs/benchmarks-connections.svg in one
# go: builds the release binary, runs the serving benchmark against nginx
# (bench/http_bench.py), the verification benchmark against openssl speed
# (bench/verify.sh), the cost of tokens without kid (bench/kidless.sh;
# set BASE_BIN to an older build to compare) and the external signer against
# openssl speed (bench/signer.sh), the bound-object check against the same
# server without it (bench/bound.py) and with 10,000 pods
# (bench/bound_fleet.py), the external signer on a three-member etcd
# cluster through rotations and faults beside the same signer on one
# directory (bench/signer_etcd.py; Debian's etcd-server and strace), a
# fleet of 10,000 issuers against one (bench/fleet.py), and renders them.
# About 16 minutes on 2 cores; needs nginx-light, wrk, nghttp2-client and
# gnuplot-nox, which it installs when missing (Debian). Extra arguments go
# to bench/http_bench.py.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh

mapfile -t missing < <(bench_missing nginx wrk h2load gnuplot)
if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi
bench_require nginx wrk h2load gnuplot
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target oidc-discovery sign_bench >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 bench/http_bench.py --json "$work/http.json" "$@"
bench/verify.sh 2 >"$work/verify.txt"
bench/kidless.sh 3 >"$work/kidless.txt"
bench/signer.sh 3 >"$work/signer.txt"
python3 bench/bound.py 3 >"$work/bound.txt"
python3 bench/bound_fleet.py >"$work/bound_fleet.txt"
python3 bench/signer_etcd.py 30 --json="$work/signer_etcd.json" >"$work/signer_etcd.txt"
python3 bench/fleet.py >"$work/fleet.md"
python3 bench/report.py --http "$work/http.json" --verify "$work/verify.txt" --kidless "$work/kidless.txt" \
    --signer "$work/signer.txt" --bound "$work/bound.txt" --bound-fleet "$work/bound_fleet.txt" \
    --signer-etcd "$work/signer_etcd.txt" --signer-etcd-json "$work/signer_etcd.json" \
    --fleet "$work/fleet.md" --out docs/BENCHMARKS.md --plot-data "$work/sweep.dat"
gnuplot -e "datafile='$work/sweep.dat'; outfile='docs/benchmarks-connections.svg'" bench/connections.gp
echo "wrote docs/BENCHMARKS.md and docs/benchmarks-connections.svg"
