#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the OCI image of oidc-discovery with buildah, FROM scratch, out of
# a build tree, and writes it as an OCI archive:
#
#   scripts/build-image.sh [BUILD_DIR [ARCHIVE]]
#
# BUILD_DIR: a configured and built tree (default: build); ARCHIVE: where
# the archive goes (default: BUILD_DIR/oidc-discovery-VERSION.oci.tar).
# The image is tagged REPOSITORY:VERSION (IMAGE_REPOSITORY, by default the
# Helm chart's image.repository; VERSION from the VERSION file, the chart's
# appVersion), which the archive carries as its name. Load or push it with
#
#   podman load -i ARCHIVE
#   skopeo copy oci-archive:ARCHIVE docker://REGISTRY/oidc-discovery:VERSION
#
# The image holds the binary (`cmake --install --component runtime`,
# stripped), exactly the shared libraries it loads (ldd's list, the
# dynamic loader with it), the CA certificates, /etc/passwd and /etc/group
# naming the user it runs as (65532, as the chart's pods run) and
# /etc/hosts for localhost: no shell, no package manager, nothing else.
# Entrypoint /usr/bin/oidc-discovery, `--help` as its default arguments (it
# serves nothing unconfigured).
#
# Needs root (buildah on this host's storage driver vfs, in a storage of
# its own that is removed afterwards: nothing is left in the host's image
# store). Prints the archive's path, size and the image's digest.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
version=$(cat VERSION)
archive=${2:-$build/oidc-discovery-$version.oci.tar}
repository=${IMAGE_REPOSITORY:-ghcr.io/oidc-discovery/oidc-discovery}
licenses=${IMAGE_LICENSES:-Apache-2.0}
source_url=${IMAGE_SOURCE:-$(git config --get remote.origin.url 2>/dev/null || true)}
uid=65532

die() { echo "build-image: $*" >&2; exit 1; }
command -v buildah >/dev/null || die "buildah is not installed (scripts/setup.sh installs it)"
[ "$(id -u)" = 0 ] || die "run as root (buildah with the vfs storage driver)"
[ -x "$build/oidc-discovery" ] || die "$build/oidc-discovery is not built (cmake --build $build)"

work=$(mktemp -d "${TMPDIR:-/tmp}/oidc-image.XXXXXX")
storage=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
ctr=
cleanup() {
    [ -z "$ctr" ] || buildah "${storage[@]}" rm "$ctr" >/dev/null 2>&1 || true
    # vfs layers may hold read-only directories
    chmod -R u+w "$work" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
root=$work/root

# The program: what `cmake --install` puts in the runtime component, under
# /usr.
DESTDIR=$root cmake --install "$build" --component runtime --prefix /usr --strip >/dev/null
bin=$root/usr/bin/oidc-discovery
[ -x "$bin" ] || die "cmake --install left no binary under $root/usr"

# Copies a host file into the root at the same path, its directory made
# first: through the real file for a library (a soname is a symlink on the
# host), with the name it is loaded by linked to it.
add_file() {
    local path=$1 real
    real=$(realpath "$path")
    mkdir -p "$root$(dirname "$real")"
    cp --preserve=mode "$real" "$root$real"
    local loaded
    loaded=$(realpath "$(dirname "$path")")/$(basename "$path")
    if [ "$loaded" != "$real" ] && [ ! -e "$root$loaded" ]; then
        mkdir -p "$root$(dirname "$loaded")"
        ln -s "$(realpath --relative-to="$(dirname "$loaded")" "$real")" "$root$loaded"
    fi
}

# The libraries: ldd of the binary, each a path; the loader (PT_INTERP,
# /lib64/ld-linux-x86-64.so.2 on amd64) has no "=>".
libs=$(ldd "$build/oidc-discovery" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
[ -n "$libs" ] || die "ldd named no libraries"
for lib in $libs; do
    add_file "$lib"
done
# Debian 12 merges / into /usr: the loader path in the binary and the
# library directories ldd names go through these links.
for link in /lib /lib64; do
    if [ -L "$link" ]; then
        ln -s "$(readlink "$link")" "$root$link"
    fi
done

# CA certificates (libcurl's default bundle, for --upstream and buckets),
# the user and localhost.
add_file /etc/ssl/certs/ca-certificates.crt
printf 'root:x:0:0:root:/root:/sbin/nologin\noidc-discovery:x:%d:%d:oidc-discovery:/nonexistent:/sbin/nologin\n' \
    "$uid" "$uid" > "$root/etc/passwd"
printf 'root:x:0:\noidc-discovery:x:%d:\n' "$uid" > "$root/etc/group"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/hosts"

# The image: one layer, the root above.
commit=$("$build/oidc-discovery" --version | sed -n 's/.*(commit \([^,]*\),.*/\1/p')
created=$(date -u ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"} +%Y-%m-%dT%H:%M:%SZ)
ctr=$(buildah "${storage[@]}" from --name "oidc-image-$$" scratch)
buildah "${storage[@]}" copy --quiet "$ctr" "$root" / >/dev/null
labels=(--label "org.opencontainers.image.title=oidc-discovery"
        --label "org.opencontainers.image.description=OIDC discovery and JWKS for Kubernetes service-account tokens"
        --label "org.opencontainers.image.version=$version"
        --label "org.opencontainers.image.revision=$commit"
        --label "org.opencontainers.image.created=$created"
        --label "org.opencontainers.image.licenses=$licenses")
[ -z "$source_url" ] || labels+=(--label "org.opencontainers.image.source=$source_url")
buildah "${storage[@]}" config "${labels[@]}" \
    --entrypoint '["/usr/bin/oidc-discovery"]' --cmd '["--help"]' \
    --user "$uid:$uid" --workingdir / --port 8080/tcp --port 9090/tcp \
    --env PATH=/usr/bin --os linux --arch "$(dpkg --print-architecture 2>/dev/null || uname -m)" \
    --created-by "scripts/build-image.sh" "$ctr"
image=$repository:$version
# SOURCE_DATE_EPOCH, when set, dates the image and its files: the same
# build tree gives the same digest.
buildah "${storage[@]}" commit --quiet --format oci --rm ${SOURCE_DATE_EPOCH:+--timestamp "$SOURCE_DATE_EPOCH"} \
    "$ctr" "$image" >/dev/null
ctr=
mkdir -p "$(dirname "$archive")"
rm -f "$archive"
buildah "${storage[@]}" push --quiet "$image" "oci-archive:$archive:$image"

digest=$(tar -xOf "$archive" index.json | sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p' | head -1)
echo "image:   $image"
echo "archive: $archive ($(du -h "$archive" | cut -f1), $(stat -c %s "$archive") bytes)"
echo "digest:  $digest"
