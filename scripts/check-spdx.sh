#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file of the repository states its licence in its first lines
# with an SPDX identifier, so that a file copied out of the tree still says
# what it may be used under. With --fix, adds the line where it is missing
# (after a shebang), in the comment syntax of the file's language.
#
#   scripts/check-spdx.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
SPDX="SPDX-License-Identifier: Apache-2.0"
fix=${1:-}

# The comment a file's language writes the line in, or nothing for files
# that are not source (data, fixtures, documents).
comment_for() {
    case $1 in
    *.c | *.h | *.proto) echo "/* $SPDX */" ;;
    *.mjs | *.js) echo "// $SPDX" ;;
    *.lua) echo "-- $SPDX" ;;
    *.py | *.sh | *.gp | CMakeLists.txt | *.cmake | *.service | .ci/run | scripts/* | fuzz/run.sh) echo "# $SPDX" ;;
    esac
}

missing=0
while IFS= read -r f; do
    line=$(comment_for "$f")
    [ -n "$line" ] || continue
    head -n 3 "$f" | grep -qF "$SPDX" && continue
    if [ "$fix" = --fix ]; then
        if head -n 1 "$f" | grep -q '^#!'; then
            sed -i "1a $line" "$f"
        else
            sed -i "1i $line" "$f"
        fi
    else
        echo "$f: no \"$SPDX\" in its first lines" >&2
        missing=$((missing + 1))
    fi
done < <(git ls-files | grep -v '^tests/fixtures/\|^fuzz/corpus/\|node_modules/')
[ "$missing" -eq 0 ] || { echo "check-spdx: $missing file(s) without a licence line (scripts/check-spdx.sh --fix adds it)" >&2; exit 1; }
