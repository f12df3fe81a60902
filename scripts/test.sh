#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds oidc-discovery and runs every test (criterion unit tests and the
# end-to-end tests against the real binary), twice: a release build, then a
# build with AddressSanitizer and UndefinedBehaviorSanitizer; then runs each
# libFuzzer target for a minute. The release build also runs the end-to-end
# tests of the long-running server under valgrind's memcheck (ctest label
# valgrind; scripts/valgrind-e2e.sh runs all of them that way).
#
# Every stage runs even when an earlier one failed, so that one failure does
# not hide the others; the last line is "N passed, N failed" (the form CI
# reads), after the names of the failures. Exits 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1

jobs=$(nproc)
logs=$(mktemp -d "${TMPDIR:-/tmp}/oidc-test.XXXXXX")
passed=0 failed=0 failures=()

# Records a stage's tests: total passed and the names of the failed ones.
count() {
    local total=$1; shift
    passed=$((passed + total - $#)) failed=$((failed + $#))
    failures+=("$@")
}

# Builds dir with the extra cmake arguments and runs its ctest suite. A
# build that fails counts every test of the suite as failed under one name.
run_suite() {
    local dir=$1 name=$2; shift 2
    local log=$logs/$name.log
    if ! cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null || ! cmake --build "$dir" -j "$jobs"; then
        count 1 "$name: build"
        return
    fi
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" 2>&1 | tee "$log"
    local total
    total=$(ctest --test-dir "$dir" -N | sed -n 's/^Total Tests: //p')
    mapfile -t bad < <(sed -n '/^The following tests FAILED:/,$s/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p' "$log")
    count "${total:-0}" "${bad[@]/#/$name: }"
}

echo "== release build"
run_suite build release
echo "== ASan + UBSan build"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run_suite build-asan asan -DOIDC_SANITIZE=ON
echo "== fuzzing, 60 s per target"
fuzz/run.sh 60 2>&1 | tee "$logs/fuzz.log"
fuzz_rc=${PIPESTATUS[0]}
targets=$(ls fuzz/fuzz_*.c | wc -l)
mapfile -t bad < <(sed -n 's/^\(fuzz_[a-z0-9_]*\) .* FAILED.*/fuzz: \1/p' "$logs/fuzz.log")
[ "$fuzz_rc" -eq 0 ] || [ ${#bad[@]} -gt 0 ] || bad=("fuzz: run.sh")
count "$targets" "${bad[@]}"

rm -rf "$logs"
if [ ${#failures[@]} -gt 0 ]; then
    echo "== failed:"
    printf '   %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
