#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds every libFuzzer target in fuzz/ and runs each for SECONDS on a copy
# of its seed corpus (fuzz/corpus/<target>/), so the checked-in corpora stay
# small. Prints executions, coverage and crashes per target; exits 1 when
# any target crashed (or leaked, or hit a sanitizer report or a timeout).
#
#   fuzz/run.sh SECONDS [TARGET...]
#
# Builds and scratch space go to ${TMPDIR:-/tmp}/oidc-fuzz (OIDC_FUZZ_WORK
# overrides). Nothing is installed here.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: fuzz/run.sh SECONDS [fuzz_pem|fuzz_token|fuzz_jwks|fuzz_config|fuzz_tokenreview|fuzz_http|fuzz_doctor|fuzz_extsigner|fuzz_client_cert ...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
secs=$1; shift
[[ $secs =~ ^[0-9]+$ ]] && [ "$secs" -gt 0 ] || usage
all_targets=(fuzz_pem fuzz_token fuzz_jwks fuzz_config fuzz_tokenreview fuzz_http fuzz_doctor fuzz_extsigner
             fuzz_client_cert)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

CC=${CC:-}
if [ -z "$CC" ]; then
    if command -v clang-14 >/dev/null; then CC=clang-14
    elif command -v clang >/dev/null; then CC=clang
    else
        echo "fuzz/run.sh: clang not found; install it with:" >&2
        echo "    apt-get install -y clang-14 libclang-rt-14-dev" >&2
        exit 1
    fi
fi
for pc in libcrypto libssl libcurl yajl libh2o-evloop libnghttp2 libprotobuf-c; do
    pkg-config --exists "$pc" || { echo "fuzz/run.sh: pkg-config cannot find $pc (run scripts/setup.sh)" >&2; exit 1; }
done

work=${OIDC_FUZZ_WORK:-${TMPDIR:-/tmp}/oidc-fuzz}
bin=$work/bin obj=$work/obj
mkdir -p "$bin" "$obj"

# The product sources the targets link: the h2o-free layers' libraries,
# read from CMakeLists.txt so that the two cannot drift (core: util/ to
# diag/; runtime: server/obs/ and server/reload/); fuzz_http also links the
# runtime, the server's h2o sites, their handlers and the worker;
# fuzz_extsigner the runtime, the signer's connection and calls, and the
# messages protoc-c generates here; fuzz_client_cert server/tls/tls.c (which
# needs libh2o-evloop for ALPN).
lib_srcs() { sed -n "/^add_library($1 /,/^)/s/^ *\([a-z0-9_/]*\.c\)$/\1/p" CMakeLists.txt; }
core_srcs=() runtime_srcs=()
for l in oidcutil oidckeys oidcconfig oidcjose oidcpublish oidcpush oidcdiag; do core_srcs+=($(lib_srcs $l)); done
for l in oidcobs oidcreload; do runtime_srcs+=($(lib_srcs $l)); done
[ ${#core_srcs[@]} -gt 10 ] && [ ${#runtime_srcs[@]} -gt 3 ] ||
    { echo "fuzz/run.sh: cannot read the layers' sources from CMakeLists.txt" >&2; exit 2; }
http_srcs=(server/http/site.c server/http/handler_docs.c server/http/http_framing.c server/http/handler_tokenreview.c
           server/http/handler_admin.c server/http/request_log.c server/conn/worker.c server/conn/connbudget.c
           server/conn/peer_progress.c server/tls/tls.c)
command -v protoc-c >/dev/null || { echo "fuzz/run.sh: protoc-c not found (run scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$work/proto"
protoc-c -Iproto -I/usr/include --c_out="$work/proto" externaljwt.proto google/protobuf/timestamp.proto
extsigner_srcs=(server/extsigner/grpc_conn.c server/extsigner/service.c "$work/proto/externaljwt.pb-c.c"
                "$work/proto/google/protobuf/timestamp.pb-c.c")
version=$(cat VERSION)
cflags=(-g -O1 -std=c11 -D_GNU_SOURCE -DH2O_USE_LIBUV=0 -DOIDC_VERSION=\"$version\" -I. -I"$work/proto"
        $(pkg-config --cflags libcrypto libcurl yajl libh2o-evloop libnghttp2 libprotobuf-c))
libs=($(pkg-config --libs libcrypto libssl libcurl yajl) -lpthread -lm)
http_libs=($(pkg-config --libs libh2o-evloop libssl))
extsigner_libs=($(pkg-config --libs libnghttp2 libprotobuf-c))
san=address,undefined

echo "== building with $CC into $bin"
objs=() http_objs=() runtime_objs=() extsigner_objs=()
pids=()
for src in "${core_srcs[@]}" "${http_srcs[@]}" "${runtime_srcs[@]}" "${extsigner_srcs[@]}"; do
    o=$obj/$(echo "${src#$work/}" | sed 's/\.c$//' | tr / _).o
    case " ${http_srcs[*]} " in *" $src "*) http_objs+=("$o") ;; esac
    case " ${runtime_srcs[*]} " in *" $src "*) runtime_objs+=("$o") ;; esac
    case " ${extsigner_srcs[*]} " in *" $src "*) extsigner_objs+=("$o") ;; esac
    case " ${core_srcs[*]} " in *" $src "*) objs+=("$o") ;; esac
    "$CC" "${cflags[@]}" -fsanitize=fuzzer-no-link,$san -c "$src" -o "$o" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
for t in "${targets[@]}"; do
    [ -f "fuzz/$t.c" ] || { echo "fuzz/run.sh: no target fuzz/$t.c" >&2; exit 2; }
    extra=()
    [ "$t" != fuzz_http ] || extra=("${http_objs[@]}" "${runtime_objs[@]}" "${http_libs[@]}")
    [ "$t" != fuzz_extsigner ] || extra=("${extsigner_objs[@]}" "${runtime_objs[@]}" "${extsigner_libs[@]}")
    [ "$t" != fuzz_client_cert ] || extra=("$obj/server_tls_tls.o" "${http_libs[@]}")
    "$CC" "${cflags[@]}" -fsanitize=fuzzer,$san "fuzz/$t.c" "${objs[@]}" "${extra[@]}" "${libs[@]}" -o "$bin/$t"
done

export OIDC_FUZZ_FIXTURES=$PWD/tests/fixtures
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
# libh2o's own leaks at exit (fuzz_http); see the file.
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

run_one() {
    local t=$1 dir=$work/run/$1
    rm -rf "$dir"
    mkdir -p "$dir/corpus" "$dir/artifacts"
    if [ -d "fuzz/corpus/$t" ]; then cp -r "fuzz/corpus/$t/." "$dir/corpus/"; fi
    local dict=()
    case $t in
    fuzz_jwks|fuzz_config|fuzz_tokenreview|fuzz_token|fuzz_doctor) dict=(-dict=fuzz/dict/json.dict) ;;
    fuzz_http) dict=(-dict=fuzz/dict/http.dict) ;;
    esac
    "$bin/$t" "${dict[@]}" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1
}

echo "== fuzzing ${targets[*]} for ${secs}s each (${jobs:=$(nproc)} at a time); logs in $work/run/<target>/log"
declare -A rc
running=()
for t in "${targets[@]}"; do
    run_one "$t" & running+=("$!:$t")
    if [ ${#running[@]} -ge "$jobs" ]; then
        p=${running[0]}; running=("${running[@]:1}")
        set +e; wait "${p%%:*}"; rc[${p#*:}]=$?; set -e
    fi
done
for p in "${running[@]}"; do set +e; wait "${p%%:*}"; rc[${p#*:}]=$?; set -e; done

failed=0
printf '%-18s %14s %8s %8s %s\n' target executions cov ft result
for t in "${targets[@]}"; do
    log=$work/run/$t/log
    execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
    [ -n "$execs" ] || execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\)/\1/p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | grep -E 'cov: ' | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    arts=$(find "$work/run/$t/artifacts" -type f | sort)
    if [ "${rc[$t]}" -eq 0 ] && [ -z "$arts" ]; then
        result=ok
    else
        result="FAILED (exit ${rc[$t]})"
        failed=1
    fi
    printf '%-18s %14s %8s %8s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$result"
    for a in $arts; do
        echo "    crash input: $a"
    done
    if [ "$result" != ok ]; then
        grep -E 'ERROR: |SUMMARY: |runtime error:' "$log" | head -5 | sed 's/^/    /'
        echo "    log: $log"
    fi
done
exit $failed
