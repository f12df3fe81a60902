#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The suite's proof of steadiness: runs scripts/test.sh RUNS times in a row
# (5 unless given) while another CPU-bound job (a busy loop on one core)
# runs beside it, and stops at the first run that fails. Prints each run's
# last line and wall time; exits 1 when a run failed.
#
#   scripts/soak.sh [RUNS]
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/soak.sh [RUNS]" >&2; exit 2; }

sh -c 'while :; do :; done' &
hog=$!
trap 'kill "$hog" 2>/dev/null' EXIT

log=$(mktemp "${TMPDIR:-/tmp}/oidc-soak.XXXXXX")
for i in $(seq "$runs"); do
    start=$SECONDS
    scripts/test.sh >"$log" 2>&1
    rc=$?
    echo "run $i of $runs: $(tail -1 "$log") in $((SECONDS - start)) s (beside a busy loop)"
    if [ "$rc" -ne 0 ]; then
        echo "run $i failed; its output: $log"
        exit 1
    fi
done
rm -f "$log"
echo "$runs runs in a row passed"
