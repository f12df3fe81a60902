#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The layers of docs/ARCHITECTURE.md, checked: a folder includes only from
# itself, from folders of a lower layer, and from other folders of its own
# layer as long as that makes no cycle. With --libs, also the link: no
# layer's library needs a symbol that only a library of a higher layer
# defines (a call upward), which the static libraries' order alone would
# not always catch (an object pulled in for another reason hides it).
#
#   scripts/check-layers.sh [--libs FOLDER=LIBRARY.a ...]
#
# ctest runs it with every layer's library (tests/CMakeLists.txt). Prints
# each violation and exits 1 when there is any.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each folder's layer, lowest first. server/'s folders: what the status
# page and the reload thread need is below the h2o glue (tls/: contexts
# and their reloading; conn/: listeners, workers, connection budgets;
# http/: the sites), and the process (server/ itself) is above all of
# them. A new folder must be given its place here.
layers='
util 1
keys 2
config 3
jose 4
publish 5
push 6
diag 6
server/obs 7
server/reload 8
server/tls 9
server/conn 10
server/http 11
server/extsigner 11
server 12
cli 13
'
folders=$(awk 'NF == 2 { print $1 }' <<<"$layers")

# Every project include as "FROM TO FILE", one a line: TO is the included
# header's folder; a header named without a folder is in FROM itself
# (server/extsigner's own, the generated build_info.h).
edges() {
    local f
    for f in $(find $(sed 's#/.*##' <<<"$folders" | sort -u) -name '*.[ch]' | sort); do
        sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
            awk -v from="$(dirname "$f")" -v file="$f" '{
                to = $0; if (index(to, "/") == 0) to = from; else sub("/[^/]*$", "", to)
                print from, to, file }'
    done
}

# The include rules over edges() (layers first on stdin).
check_includes() {
    awk '
    NR == FNR { if (NF == 2) rank[$1] = $2; next }
    {
        from = $1; to = $2
        if (!(from in rank)) { print $3 ": folder " from " has no layer in scripts/check-layers.sh"; bad = 1; next }
        if (!(to in rank)) { print $3 ": includes from " to ", which has no layer"; bad = 1; next }
        if (rank[to] > rank[from]) {
            print $3 ": includes from " to " (layer " rank[to] "), above " from " (layer " rank[from] ")"; bad = 1
        } else if (from != to && rank[to] == rank[from]) {
            same[from, to] = $3
        }
    }
    END {
        # Folders of one layer may use each other one way only.
        for (k in same) {
            split(k, p, SUBSEP)
            if ((p[2], p[1]) in same && p[1] < p[2]) {
                print "cycle: " p[1] " and " p[2] " include each other (" same[k] ", " same[p[2], p[1]] ")"; bad = 1
            }
        }
        exit bad
    }' <(echo "$layers") -
}

# The link rule: every undefined symbol of a layer's library that a
# library of a higher layer defines. Arguments: FOLDER=LIBRARY.a pairs.
check_links() {
    local pair folder lib bad=0
    local defs
    defs=$(mktemp)
    trap 'rm -f "$defs"' RETURN
    for pair in "$@"; do
        folder=${pair%%=*} lib=${pair#*=}
        nm --defined-only -g "$lib" 2>/dev/null | awk -v f="$folder" 'NF == 3 && $2 ~ /[TDBRVWC]/ { print $3, f }'
    done | sort -u >"$defs"
    for pair in "$@"; do
        folder=${pair%%=*} lib=${pair#*=}
        nm -u -g "$lib" 2>/dev/null | awk '$1 == "U" { print $2 }' | sort -u |
            awk -v from="$folder" '
            FILENAME == ARGV[1] { if (NF == 2) rank[$1] = $2; next }
            FILENAME == ARGV[2] { def[$1] = def[$1] " " $2; next }
            ($1 in def) {
                n = split(def[$1], where, " "); ok = 0
                for (i = 1; i <= n; i++) if (rank[where[i]] <= rank[from]) ok = 1
                if (!ok) { print from ": calls " $1 ", defined above it in" def[$1]; bad = 1 }
            }
            END { exit bad }' <(echo "$layers") "$defs" - || bad=1
    done
    return $bad
}

status=0
edges | check_includes || status=1
if [ "${1:-}" = --libs ]; then
    shift
    check_links "$@" || status=1
fi
[ $status -eq 0 ] || echo "check-layers: the layers of docs/ARCHITECTURE.md are broken (see above)" >&2
exit $status
