#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what building and testing oidc-discovery needs on Debian 12, and
# nothing that is already there. Safe to run again. Needs root (or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

packages=(build-essential cmake pkg-config openssl curl
          libh2o-dev libh2o-evloop-dev libssl-dev libcurl4-openssl-dev libyajl-dev libcriterion-dev
          python3 python3-cryptography python3-jwt python3-prometheus-client python3-h2 nghttp2-client
          python3-yaml unzip strace valgrind clang-14 libclang-rt-14-dev
          systemd python3-seccomp
          python3-botocore
          libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev python3-grpcio python3-grpc-tools
          libgrpc-dev
          etcd-server
          chromium  # the browser tests: CORS from another origin, the status page
          dpkg-dev buildah)
# dpkg-dev: cpack -G DEB computes the package's dependencies with
# dpkg-shlibdeps (tests/e2e/test_deb.py); buildah builds the OCI image
# (scripts/build-image.sh, tests/e2e/test_image.py).
# python3-botocore recomputes the S3 signatures in tests/e2e/s3_standin.py.
# libgrpc-dev: bench/sign_bench, the external signer's load generator (a
# client on gRPC's C core); python3-grpcio is the tests' client.
# etcd-server: the signers' shared store (--etcd-servers), a three-member
# cluster the tests start (tests/e2e/harness_etcd.py talks to its JSON
# gateway itself, so no etcd-client).
# Node.js runs the independent relying-party tests (panva/jose) and Azurite
# (tests/e2e/test_bucket_azure.py); keep an
# existing installation (it may not come from Debian) and add Debian's
# otherwise.
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)

# On a fresh machine another apt (apt-daily, unattended-upgrades, cloud-init)
# often holds apt's locks for a minute or more. Wait for them, at most
# OIDC_APT_LOCK_WAIT seconds: dpkg's locks through apt's own
# DPkg::Lock::Timeout; the package lists' and the download cache's locks,
# for which apt 2.6 has no timeout, by trying again while apt says a lock
# is held.
apt_lock_wait=${OIDC_APT_LOCK_WAIT:-300}
apt_get() {
    local deadline=$((SECONDS + apt_lock_wait)) out said=
    while :; do
        if out=$(as_root env LC_ALL=C DEBIAN_FRONTEND=noninteractive \
                 apt-get -o DPkg::Lock::Timeout="$apt_lock_wait" "$@" 2>&1); then
            return 0
        fi
        if ! grep -q "Could not get lock" <<<"$out" || [ "$SECONDS" -ge "$deadline" ]; then
            printf '%s\n' "$out" >&2
            return 1
        fi
        [ -n "$said" ] || echo "setup: another apt holds a lock; waiting up to ${apt_lock_wait}s (OIDC_APT_LOCK_WAIT)"
        said=1
        sleep 2
    done
}

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    apt_get update -qq
    apt_get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The node test dependencies, pinned by package-lock.json; again when the
# lock changed since the last install (npm records it in node_modules).
if [ -f tests/node/package-lock.json ] && { [ ! -f tests/node/node_modules/.package-lock.json ] ||
        [ tests/node/package-lock.json -nt tests/node/node_modules/.package-lock.json ]; }; then
    (cd tests/node && npm ci --silent --no-audit --no-fund)
fi
