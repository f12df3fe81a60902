#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds oidc-discovery and runs every test (criterion unit tests and the
# end-to-end tests against the real binary) in a release build and in a
# build with AddressSanitizer and UndefinedBehaviorSanitizer, the end-to-end
# tests of the long-running server once more under valgrind's memcheck
# (ctest label valgrind; scripts/valgrind-e2e.sh runs all of them that way),
# and each libFuzzer target for OIDC_FUZZ_SECONDS (20) seconds.
#
# The stages run side by side, not one after another: the end-to-end tests
# spend most of their time waiting on the server (timeouts, rotation
# schedules, valgrind's slower server), not on the CPU, so the release
# suite, the ASan build and its suite, and the fuzzers share two cores with
# little loss. Each stage writes its own log, printed when the stage ends.
#
# Every stage runs even when another failed, so that one failure does not
# hide the others; the last line is "N passed, N failed" (the form CI
# reads), after the names of the failures. Exits 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1

cores=$(nproc)
fuzz_seconds=${OIDC_FUZZ_SECONDS:-20}
logs=$(mktemp -d "${TMPDIR:-/tmp}/oidc-test.XXXXXX")
trap 'rm -rf "$logs"' EXIT
started=$SECONDS

# Builds dir with the extra cmake arguments, then runs its ctest suite with
# the given number of tests at a time, and writes the stage's result to
# $logs/NAME.result: the number of tests, then the failed ones' names. A
# build that fails counts as one failed test named after the stage.
run_suite() {
    local dir=$1 name=$2 parallel=$3; shift 3
    local log=$logs/$name.log
    if ! cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$log" 2>&1 ||
       ! cmake --build "$dir" -j "$cores" >>"$log" 2>&1; then
        printf '1\n%s: build\n' "$name" >"$logs/$name.result"
        return
    fi
    ctest --test-dir "$dir" --output-on-failure -j "$parallel" >>"$log" 2>&1
    local total
    total=$(ctest --test-dir "$dir" -N | sed -n 's/^Total Tests: //p')
    { echo "${total:-0}"
      sed -n '/^The following tests FAILED:/,$s/^[[:space:]]*[0-9]* - \([^ ]*\) .*/'"$name"': \1/p' "$log"
    } >"$logs/$name.result"
}

# Runs every fuzz target, one at a time (the other core is the test
# suites'), and writes the stage's result like run_suite.
run_fuzz() {
    local log=$logs/fuzz.log
    jobs=1 OIDC_FUZZ_WORK=$logs/fuzz-work fuzz/run.sh "$fuzz_seconds" >"$log" 2>&1
    local rc=$? bad
    bad=$(sed -n 's/^\(fuzz_[a-z0-9_]*\) .* FAILED.*/fuzz: \1/p' "$log")
    [ "$rc" -eq 0 ] || [ -n "$bad" ] || bad="fuzz: run.sh"
    { ls fuzz/fuzz_*.c | wc -l; [ -z "$bad" ] || echo "$bad"; } >"$logs/fuzz.result"
}

# Prints a finished stage's log under its title, with its wall time.
show() {
    local name=$1 title=$2
    echo "== $title (done after $((SECONDS - started)) s)"
    cat "$logs/$name.log"
}

# The release build comes first: the ASan build would only slow it down,
# and every stage needs the machine's tools (setup) it checks.
echo "== release build"
if ! cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || ! cmake --build build -j "$cores"; then
    printf '1\nrelease: build\n' >"$logs/release.result"
else
    run_suite build release $((cores * 3)) &
    release=$!
fi
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run_suite build-asan asan $((cores * 2)) -DOIDC_SANITIZE=ON &
asan=$!
run_fuzz &
fuzz=$!
echo "== running the release suite, the ASan/UBSan build and suite, and ${fuzz_seconds} s of fuzzing per target side by side"

wait "$fuzz"; show fuzz "fuzzing, ${fuzz_seconds} s per target"
[ -z "${release:-}" ] || { wait "$release"; show release "release suite (unit, end-to-end, valgrind)"; }
wait "$asan"; show asan "ASan + UBSan build and suite"

passed=0 failed=0 failures=()
for name in release asan fuzz; do
    mapfile -t result <"$logs/$name.result"
    total=${result[0]:-0} bad=("${result[@]:1}")
    passed=$((passed + total - ${#bad[@]})) failed=$((failed + ${#bad[@]}))
    failures+=("${bad[@]}")
done
echo "== all stages done after $((SECONDS - started)) s"
if [ ${#failures[@]} -gt 0 ]; then
    echo "== failed:"
    printf '   %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
