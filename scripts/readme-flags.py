#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""readme-flags.py BIN README.md [--check]: writes README's flag tables
between the markers <!-- flags:begin --> and <!-- flags:end --> from what
`BIN help all` prints (every flag of every command, written from the option
table in config/options.c), so that README can never list a flag, a
default or a range the binary does not have. With --check it writes
nothing and exits 1, showing the difference, when README's tables are not
the generated ones (tests/docs/test_docs.py runs it so).

`help all` is laid out in two columns, as scripts/make-manpage.sh reads it:
a flag two spaces in, its description at column 35 (continued there; a
name that reaches that column stands alone on its line), group titles flush
left and ending in ':'. A description ends with "(default ...)" or
"(required ...)", then what the flag needs or excludes (". Needs --a")
and ". Commands: ...".
"""

import difflib
import re
import subprocess
import sys

BEGIN = "<!-- flags:begin -->"
END = "<!-- flags:end -->"
COLUMN = 34


def entries(help_text):
    """Yields (group title, flag, description) for every flag, in help's
    order; the commands at the top are no flags and are left out."""
    group, tag, desc = None, None, ""
    for line in help_text.split("\n") + [""]:
        if line.startswith(" " * COLUMN) and tag:
            desc = (desc + " " + line.strip()).strip()
            continue
        if tag and group:
            yield group, tag, desc
        tag, desc = None, ""
        if line.endswith(":") and not line.startswith(" "):
            group = None if line == "Commands:" else line[:-1]
        elif line.startswith("  ") and line[2] != " ":
            if len(line) > COLUMN and line[COLUMN - 1] == " ":
                tag, desc = line[:COLUMN].strip(), line[COLUMN:].strip()
            else:
                tag = line.strip()


def split_description(desc):
    """(meaning, default, commands) of a description: the last
    parenthesis before ". Commands:" (and ". Needs ...", ". Not with ...",
    which stay in the meaning) holds the default or "required"."""
    meaning, _, commands = desc.rpartition(". Commands: ")
    meaning, relations = re.match(r"(.*?)((?:\. (?:Needs|Not with) [^.]*)*)$", meaning).groups()
    default = ""
    if meaning.endswith(")"):
        depth = 0
        for i in range(len(meaning) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(meaning[i], 0)
            if depth == 0:
                break
        inner = meaning[i + 1:-1]
        if inner.startswith(("default", "required")):
            default = inner.removeprefix("default: ").removeprefix("default ")
            meaning = meaning[:i].rstrip()
    return meaning + relations, default, commands


def cell(text):
    """Text for a table cell: a pipe would end the cell."""
    return text.replace("|", "\\|")


def tables(help_text):
    """The markdown of every flag, one table per group of the help."""
    out, current = [], None
    for group, tag, desc in entries(help_text):
        if group != current:
            out += ["", f"**{group}**", "", "| flag | default | commands | meaning |", "|---|---|---|---|"]
            current = group
        meaning, default, commands = split_description(desc)
        flags = " / ".join(f"`{cell(t.strip())}`" for t in tag.split(", "))
        out.append(f"| {flags} | {cell(default)} | {cell(commands)} | {cell(meaning)} |")
    return "\n".join(out[1:])


def replaced(readme, generated):
    """README's text with the generated tables between the markers."""
    head, begin, rest = readme.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"README has no {BEGIN} ... {END}")
    return f"{head}{BEGIN}\n{generated}\n{END}{tail}"


def main(argv):
    if len(argv) not in (3, 4) or (len(argv) == 4 and argv[3] != "--check"):
        print(__doc__.split("\n")[0], file=sys.stderr)
        return 2
    bin_path, readme_path, check = argv[1], argv[2], len(argv) == 4
    help_text = subprocess.run([bin_path, "help", "all"], capture_output=True, text=True, check=True,
                               timeout=60).stdout
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read()
    want = replaced(readme, tables(help_text))
    if not check:
        if want != readme:
            with open(readme_path, "w", encoding="utf-8") as f:
                f.write(want)
        return 0
    if want == readme:
        return 0
    sys.stdout.writelines(difflib.unified_diff(readme.splitlines(True), want.splitlines(True), "README.md",
                                               "generated"))
    print(f"README's flag tables differ from `help all`: run {argv[0]} {bin_path} {readme_path}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
