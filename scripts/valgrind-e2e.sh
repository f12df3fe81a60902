#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every end-to-end test with each server and command under valgrind's
# memcheck; a memory error or a definite or indirect leak fails the test
# (tests/valgrind.supp lists the few libh2o leaks at thread exit). The
# release suite of scripts/test.sh runs only the tests of the long-running
# server this way. Builds RelWithDebInfo, as shipped, in build-valgrind/.
# Arguments go to ctest, e.g. -R rotation.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed; run scripts/setup.sh" >&2; exit 1; }

dir=build-valgrind
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOIDC_VALGRIND_E2E=all >/dev/null
cmake --build "$dir" -j "$(nproc)"
ctest --test-dir "$dir" -L valgrind --output-on-failure -j "$(nproc)" "$@"
