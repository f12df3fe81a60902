#!/usr/bin/env bash
# Builds oidc-discovery and runs every test (criterion unit tests and the
# end-to-end tests against the real binary), twice: a release build, then a
# build with AddressSanitizer and UndefinedBehaviorSanitizer; then runs each
# libFuzzer target for a minute. The release build also runs the end-to-end
# tests of the long-running server under valgrind's memcheck (ctest label
# valgrind; scripts/valgrind-e2e.sh runs all of them that way).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

jobs=$(nproc)
run_suite() {
    local dir=$1; shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
    ctest --test-dir "$dir" --output-on-failure -j "$jobs"
}

echo "== release build"
run_suite build
echo "== ASan + UBSan build"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run_suite build-asan -DOIDC_SANITIZE=ON
echo "== fuzzing, 60 s per target"
fuzz/run.sh 60

# Everything above stops the script on the first failure, so reaching this
# line means every suite passed; say so in the form CI reads.
count() { ctest --test-dir "$1" -N | sed -n 's/^Total Tests: //p'; }
targets=$(ls fuzz/fuzz_*.c | wc -l)
echo "$(( $(count build) + $(count build-asan) + targets )) passed, 0 failed"
