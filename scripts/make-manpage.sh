#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make-manpage.sh BIN OUT: writes the oidc-discovery(1) man page to OUT from
# what `BIN help all` (every command and flag, written from the option
# table) and `BIN --version` print, so the page can never drift from the
# flags the binary takes. Plain roff, no generator needed; the build runs it
# (add_custom_command in CMakeLists.txt).
#
# The help is laid out in two columns: a command or flag two spaces in,
# its description at column 34 (continued there), group titles flush left
# and ending in ':'. Each entry becomes a .TP paragraph that man fills to
# the reader's terminal, each group an .SS section.
set -eu

if [ "$#" -ne 2 ]; then
    echo "usage: $0 BIN OUT" >&2
    exit 2
fi
bin=$1
out=$2

# "oidc-discovery 0.1.0 (commit 0123456789ab, built 2026-01-31)"
version_line=$("$bin" --version)
version=$(printf '%s\n' "$version_line" | awk '{ print $2 }')
built=$(printf '%s\n' "$version_line" | sed -n 's/.*built \([0-9-]*\)).*/\1/p')
help=$("$bin" help all)
# The commands as the binary lists them, so that the synopsis names each one.
commands=$("$bin" help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p' | grep -vx help |
    sed 's/.*/\\fI&\\fR/' | paste -sd '|')

# roff treats '\' as an escape, a leading '.' or "'" as a request, and '-'
# as a hyphen; flags must stay minus signs so they can be copied.
to_roff() {
    awk '
    function esc(s) {
        gsub(/\\/, "\\e", s)
        gsub(/-/, "\\-", s)
        sub(/^[.'\'']/, "\\\\\\&&", s)
        return s
    }
    function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
    function flush() {
        if (tag != "") {
            print ".TP"
            print "\\fB" esc(tag) "\\fR"
            print esc(desc)
        }
        tag = ""
        desc = ""
    }
    /^Usage:/ { next }
    /^$/ { flush(); next }
    /^Commands:$/ { flush(); print ".SH COMMANDS"; next }
    /^[^ ].*:$/ {
        flush()
        if (!options) { print ".SH OPTIONS"; options = 1 }
        print ".SS " esc(substr($0, 1, length($0) - 1))
        next
    }
    /^                                  / { desc = trim(desc " " trim($0)); next }
    /^  [^ ]/ {
        # a name that reaches column 34 stands alone on its line
        flush()
        if (substr($0, 34, 1) == " ") { tag = trim(substr($0, 1, 34)); desc = trim(substr($0, 35)) }
        else { tag = trim($0) }
        next
    }
    { flush(); print ".PP"; print esc($0) }
    END { flush() }
    '
}

tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
{
    printf '.TH OIDC\\-DISCOVERY 1 "%s" "oidc-discovery %s" "User Commands"\n' "$built" "$version"
    printf '.nh\n'
    printf '.SH NAME\n'
    printf 'oidc\\-discovery \\- publish Kubernetes service\\-account signing keys as OIDC discovery and JWKS\n'
    printf '.SH SYNOPSIS\n'
    printf '.B oidc\\-discovery\n'
    printf '[%s] [\\fIflags\\fR]\n' "$commands"
    printf '.br\n.B oidc\\-discovery help\n[\\fICOMMAND\\fR|\\fIall\\fR]\n'
    printf '.SH DESCRIPTION\n'
    printf 'Serves /.well\\-known/openid\\-configuration and /openid/v1/jwks byte for byte as\n'
    printf 'kube\\-apiserver would, from the cluster'"'"'s service\\-account key files, for relying\n'
    printf 'parties that verify service\\-account tokens without reaching the cluster.\n'
    printf '.PP\nThe commands and options below are what\n.B oidc\\-discovery help all\nprints;\n'
    printf '.B oidc\\-discovery help\n\\fICOMMAND\\fR (or \\fICOMMAND\\fR \\fB\\-\\-help\\fR) lists the flags of one command.\n'
    printf '%s\n' "$help" | to_roff
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
