# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the bench scripts (. "$(dirname "$0")/lib.sh"), never run: the
# checks each makes before it starts, so that a missing tool or binary is
# reported the same way whichever script found it.

BENCH_NAME=$(basename "$0")

# bench_package TOOL: the Debian package that installs TOOL, where the two
# names differ.
bench_package() {
    case "$1" in
    nginx) echo nginx-light ;;
    h2load) echo nghttp2-client ;;
    gnuplot) echo gnuplot-nox ;;
    taskset) echo util-linux ;;
    *) echo "$1" ;;
    esac
}

# bench_missing TOOL...: prints the Debian package of each TOOL that is not
# on PATH, one a line; nothing when all are there.
bench_missing() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || bench_package "$tool"
    done
}

# bench_require TOOL...: exits 1 unless every TOOL is on PATH, naming the
# missing ones and the Debian packages that install them.
bench_require() {
    local tool tools='' packages
    for tool in "$@"; do
        command -v "$tool" >/dev/null || tools+=" $tool"
    done
    [ -z "$tools" ] && return 0
    # shellcheck disable=SC2086 # one word a tool
    packages=$(bench_missing $tools | tr '\n' ' ')
    echo "$BENCH_NAME: needs${tools}; on Debian: apt-get install -y ${packages% }" >&2
    exit 1
}

# bench_binary PATH...: exits 1 unless every PATH is an executable (the
# server binary, a base build to compare with), saying how to build it.
bench_binary() {
    local bin
    for bin in "$@"; do
        [ -x "$bin" ] && continue
        echo "$BENCH_NAME: $bin not found; build it: cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo &&" \
            "cmake --build build -j2" >&2
        exit 1
    done
}

# bench_cores [CPU]: sets CORE, the one CPU the measured process is pinned
# to (CPU, or the last one this shell may use), and OTHERS, the rest of
# them as a taskset list for the load generator (CORE itself when it is
# the only one).
bench_cores() {
    CORE=${1:-$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')}
    # shellcheck disable=SC2034 # read by the scripts that source this
    OTHERS=$(python3 -c 'import os,sys; c=sorted(os.sched_getaffinity(0)-{int(sys.argv[1])}); print(",".join(map(str,c)) or sys.argv[1])' "$CORE")
}
