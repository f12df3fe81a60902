#!/bin/sh
# make-manpage.sh BIN OUT: writes the oidc-discovery(1) man page to OUT from
# what `BIN --help` and `BIN --version` print, so the page can never drift
# from the flags the binary takes. Plain roff, no generator needed; the
# build runs it (add_custom_command in CMakeLists.txt).
set -eu

if [ "$#" -ne 2 ]; then
    echo "usage: $0 BIN OUT" >&2
    exit 2
fi
bin=$1
out=$2

# roff treats '\' as an escape, a leading '.' or "'" as a request, and '-'
# as a hyphen; flags must stay minus signs so they can be copied.
roff_escape() {
    sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

version=$("$bin" --version | sed -e 's/^oidc-discovery //')
help=$("$bin" --help)

tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
{
    printf '.TH OIDC\\-DISCOVERY 1 "" "oidc-discovery %s" "User Commands"\n' "$version"
    printf '.nh\n'
    printf '.SH NAME\n'
    printf 'oidc\\-discovery \\- publish Kubernetes service\\-account signing keys as OIDC discovery and JWKS\n'
    printf '.SH SYNOPSIS\n'
    printf '.B oidc\\-discovery\n'
    printf '[\\fIserve\\fR|\\fIdev\\fR|\\fIkeys\\fR|\\fIverify\\fR|\\fItoken\\fR|\\fIexport\\fR] [\\fIflags\\fR]\n'
    printf '.SH DESCRIPTION\n'
    printf 'Serves /.well\\-known/openid\\-configuration and /openid/v1/jwks byte for byte as\n'
    printf 'kube\\-apiserver would, from the cluster'"'"'s service\\-account key files, for relying\n'
    printf 'parties that verify service\\-account tokens without reaching the cluster.\n'
    printf 'The text below is what\n.B oidc\\-discovery \\-\\-help\nprints.\n'
    printf '.PP\n.nf\n'
    printf '%s\n' "$help" | roff_escape
    printf '.fi\n'
    printf '.SH EXIT STATUS\n'
    printf '.TP\n0\nSuccess (for serve: stopped by SIGTERM or SIGINT).\n'
    printf '.TP\n1\nA runtime failure, such as a listener that cannot be opened or a file that cannot be\n'
    printf 'written; for verify, a token that is not valid.\n'
    printf '.TP\n2\nA bad flag, config file or key file.\n'
    printf '.SH SEE ALSO\n'
    printf '.BR kube\\-apiserver (1),\n.BR systemd.exec (5),\n.BR systemd.service (5)\n'
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
