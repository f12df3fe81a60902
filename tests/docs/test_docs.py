#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the commands of the operator guides in docs/, so the guides cannot rot.

Every fenced block opened with ```sh runnable in docs/*.md is executed. The
runnable blocks of one page run in order in ONE bash process (like a reader
pasting them into one terminal: variables, `$!` and `%1` carry over), with
`set -euo pipefail`, in a fresh temporary working directory that holds
`keys/sa.key` and `keys/sa.pub` (a throwaway RSA 2048 pair, the convention
docs/README.md describes). `oidc-discovery` resolves to $OIDC_BIN through a
shim directory put first on PATH, and $OIDC_SOURCE_DIR names the repository,
for the test stand-ins a guide may start (tests/e2e/s3_standin.py).

Isolation and bounds:
  - the whole run happens in a private network namespace (`unshare -rn`, or
    `unshare -n` as root) when the kernel allows it, so the 127.0.0.1:8080 /
    :9090 ports the guides use never meet another test's; otherwise it runs on
    the host loopback and says so;
  - one block may run for at most BLOCK_TIMEOUT seconds;
  - after each page the page's process group (the servers its blocks started
    in the background included) is terminated, then killed.

Other checks:
  - every relative link between the pages (and to files of the repository)
    resolves, anchors included;
  - plain ```sh blocks (not executed) must not call `oidc-discovery`: every
    command of ours that the guides show is a runnable one.

A failure names the page, the block, the line in the page, and shows the
block's output and the tail of the *.log files in its working directory.

Environment: OIDC_BIN (default <repo>/build/oidc-discovery), DOCS_KEEP=1 keeps
the working directories, DOCS_ONLY=page.md runs one page.
"""

import fcntl
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DOCS = os.path.join(REPO, "docs")
BIN = os.environ.get("OIDC_BIN") or os.path.join(REPO, "build", "oidc-discovery")

BLOCK_TIMEOUT = 60.0
NETNS_MARK = "OIDC_DOCS_NETNS"

FENCE_RE = re.compile(r"^(\s*)(```+|~~~+)\s*([^`]*)$")
LINK_RE = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
OURS_RE = re.compile(r"(^|[\s;&|(`$])oidc-discovery(\s|$)")


# --------------------------------------------------------------------------
# defaults quoted in prose

def readme_flags():
    """scripts/readme-flags.py, which reads `help all`, as a module."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("readme_flags", os.path.join(REPO, "scripts", "readme-flags.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# "`--flag` (default X", "`--flag`, default X", "`--flag X` (the default)"
# and "`--flag` (10 s)",
# in prose (a sentence may wrap: lines are joined first).
DEFAULT_AFTER_RE = re.compile(r"`--([a-z0-9-]+)`\)?,? \(?default:? ([^,;()]+?)(?=[,;)]|\. |\.$)")
DEFAULT_VALUE_RE = re.compile(r"`--([a-z0-9-]+) ([^`]+)` \(the default\)")
DEFAULT_AMOUNT_RE = re.compile(r"`--([a-z0-9-]+)` \((\d+ ?(?:s|m|h|d|KiB|MiB|GiB|%)?)\)")


def quoted_defaults(path):
    """Yields (line number, flag, the default quoted) for the prose of a
    page, leaving out code blocks and tables (README's are generated)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    in_fence, text, starts = False, "", []
    for no, line in enumerate(lines, 1):
        if FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or line.lstrip().startswith("|"):
            continue
        starts.append((len(text), no))
        text += line.strip() + " "
    for regex in (DEFAULT_AFTER_RE, DEFAULT_VALUE_RE, DEFAULT_AMOUNT_RE):
        for m in regex.finditer(text):
            no = max(n for at, n in starts if at <= m.start())
            yield no, m.group(1), m.group(2).strip()


DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def same_default(quoted, binary):
    """Whether a default quoted in prose says what the binary's does: the
    same words (backticks aside; what help adds after ";", like dev's own,
    left out), or the same duration or size ("5 s" and 5s, 3600 and 1h,
    16 MiB and 16777216)."""
    def plain(s):
        return re.sub(r"\s+", " ", s.replace("`", "").replace("**", "")).strip().lower()

    def number(s):
        m = re.fullmatch(r"(\d+) ?(s|m|h|d|kib|mib|gib|bytes|%)?", plain(s))
        if not m:
            return None
        unit = m.group(2) or ""
        scale = {"kib": 1024, "mib": 1 << 20, "gib": 1 << 30, "bytes": 1, "%": 1}.get(unit) or DURATION_UNITS[unit]
        return int(m.group(1)) * scale

    a, b = plain(quoted), plain(binary).split(";")[0]
    return a == b or (number(a) is not None and number(a) == number(b))


# --------------------------------------------------------------------------
# markdown

def pages():
    names = sorted(n for n in os.listdir(DOCS) if n.endswith(".md"))
    only = os.environ.get("DOCS_ONLY")
    return [n for n in names if not only or n == only]


def fenced_blocks(path):
    """Yields (info, first_body_line_number, [body lines]) per fenced block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        body, start = [], i + 2
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                      and lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i >= len(lines):
            raise AssertionError(f"{path}:{start - 1}: unterminated code fence")
        i += 1
        yield info, start, body


def runnable(info):
    words = info.split()
    return len(words) >= 2 and words[0] == "sh" and "runnable" in words[1:]


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"`|\*\*|__", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, seen, in_fence = set(), {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE_RE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path):
    """Yields (line number, target) for every markdown link outside code."""
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if FENCE_RE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            for m in LINK_RE.finditer(re.sub(r"`[^`]*`", "", line)):
                yield no, m.group(1)


# --------------------------------------------------------------------------
# isolation

def bring_up_loopback():
    SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, ifr))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))


def reexec_in_netns():
    """Re-runs this file in a private network namespace when possible."""
    if os.environ.get(NETNS_MARK) or not shutil.which("unshare"):
        return
    env = dict(os.environ, **{NETNS_MARK: "1"})
    for flags in (["-rn"], ["-n"]):
        probe = subprocess.run(["unshare", *flags, "true"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=10)
        if probe.returncode == 0:
            sys.stdout.flush()
            os.execvpe("unshare", ["unshare", *flags, "--", sys.executable, os.path.abspath(__file__),
                                   *sys.argv[1:]], env)


def in_private_netns():
    return os.environ.get(NETNS_MARK) == "1"


def kill_group(pgid):
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


# --------------------------------------------------------------------------
# running one page

def prepare_workdir(workdir, shim):
    os.makedirs(os.path.join(workdir, "keys"))
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", "keys/sa.key"], cwd=workdir, check=True, capture_output=True, timeout=60)
    subprocess.run(["openssl", "pkey", "-in", "keys/sa.key", "-pubout", "-out", "keys/sa.pub"],
                   cwd=workdir, check=True, capture_output=True, timeout=60)


def build_script(blocks, marker):
    """One bash script: a marker write before each block; returns the script
    and a map from script line to (block index, page line)."""
    out = ["set -euo pipefail"]
    where = {}
    for n, (_, start, body) in enumerate(blocks):
        out.append(f"printf '%s\\n' {n} > {marker}")
        for k, line in enumerate(body):
            out.append(line)
            where[len(out)] = (n, start + k)
    out.append(f"printf '%s\\n' done > {marker}")
    return "\n".join(out) + "\n", where


def tail(path, limit=40):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-limit:])


class Page:
    def __init__(self, name, shim):
        self.name = name
        self.path = os.path.join(DOCS, name)
        self.shim = shim
        self.blocks = [b for b in fenced_blocks(self.path) if runnable(b[0])]

    def run(self):
        """Returns None on success, else a failure report."""
        if not self.blocks:
            return None
        workdir = tempfile.mkdtemp(prefix="docs-" + self.name[:-3] + "-")
        marker = os.path.join(workdir, ".docs-block")
        errline = os.path.join(workdir, ".docs-errline")
        try:
            prepare_workdir(workdir, self.shim)
            script, where = build_script(self.blocks, marker)
            script = f"trap 'echo $LINENO > {errline}' ERR\n" + script
            where = {k + 1: v for k, v in where.items()}
            script_path = os.path.join(workdir, ".docs-script.sh")
            with open(script_path, "w") as f:
                f.write(script)
            env = dict(os.environ)
            env["PATH"] = self.shim + os.pathsep + env.get("PATH", "")
            env["HOME"] = workdir
            env["OIDC_SOURCE_DIR"] = REPO  # for the test stand-ins a guide may start (tests/e2e/s3_standin.py)
            out_path = os.path.join(workdir, ".docs-output")
            with open(out_path, "wb") as out:
                proc = subprocess.Popen(["bash", script_path], cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            current, started, timed_out = None, time.monotonic(), False
            try:
                while proc.poll() is None:
                    block = tail(marker, 1).strip()
                    if block != current:
                        current, started = block, time.monotonic()
                    if time.monotonic() - started > BLOCK_TIMEOUT:
                        timed_out = True
                        break
                    time.sleep(0.05)
            finally:
                kill_group(proc.pid)
                proc.wait()
            block = tail(marker, 1).strip()
            if not timed_out and proc.returncode == 0 and block == "done":
                return None
            n = int(block) if block.isdigit() else len(self.blocks) - 1
            info, start, body = self.blocks[n]
            line = start
            err = tail(errline, 1).strip()
            if err.isdigit() and int(err) in where and where[int(err)][0] == n:
                line = where[int(err)][1]
            why = (f"timed out after {BLOCK_TIMEOUT:.0f}s" if timed_out
                   else f"exit status {proc.returncode}")
            report = [f"docs/{self.name}:{line}: runnable block {n + 1} of {len(self.blocks)} "
                      f"(starting at line {start}) failed: {why}",
                      "---- block", *body,
                      "---- output of the page's blocks (tail)", tail(out_path, 60)]
            for log in sorted(os.listdir(workdir)):
                if log.endswith(".log"):
                    report += [f"---- {log} (tail)", tail(os.path.join(workdir, log), 30)]
            report.append(f"---- working directory: {workdir}")
            return "\n".join(report)
        finally:
            if not os.environ.get("DOCS_KEEP"):
                shutil.rmtree(workdir, ignore_errors=True)


class DocsTest(unittest.TestCase):
    shim = None

    @classmethod
    def setUpClass(cls):
        if in_private_netns():
            bring_up_loopback()
        cls.shim = tempfile.mkdtemp(prefix="docs-shim-")
        os.symlink(os.path.abspath(BIN), os.path.join(cls.shim, "oidc-discovery"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shim, ignore_errors=True)

    def test_pages_exist(self):
        self.assertTrue(os.path.isfile(BIN), f"no binary at {BIN} (set OIDC_BIN)")
        self.assertIn("README.md", os.listdir(DOCS))

    def test_links_resolve(self):
        problems = []
        for name in pages():
            path = os.path.join(DOCS, name)
            for no, target in links(path):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http(s), mailto: not checked (no network)
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(DOCS, file_part)) if file_part else path
                if not os.path.exists(dest):
                    problems.append(f"docs/{name}:{no}: link to missing {target}")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    problems.append(f"docs/{name}:{no}: no heading for #{anchor} in {os.path.relpath(dest, REPO)}")
        if problems:
            self.fail("\n".join(problems))

    def test_index_lists_every_page(self):
        linked = {t.partition("#")[0] for _, t in links(os.path.join(DOCS, "README.md"))}
        missing = [n for n in pages() if n != "README.md" and n not in linked]
        if missing:
            self.fail(f"docs/README.md does not link to {missing}")

    def test_repository_stands_on_its_own(self):
        """Nothing tracked cites a document outside the repository: the
        facts the project relies on live in docs/compatibility.md."""
        tracked = subprocess.run(["git", "-C", REPO, "ls-files", "-z"], capture_output=True, timeout=60)
        if tracked.returncode != 0:
            self.skipTest("not a git checkout")
        pattern = re.compile(rb"REFERENCE\.md|\.\./shared/")
        offenders = []
        for name in tracked.stdout.decode().split("\0"):
            path = os.path.join(REPO, name)
            if not name or name.startswith("fuzz/corpus/") or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                for no, line in enumerate(f, 1):
                    if pattern.search(line):
                        offenders.append(f"{name}:{no}")
        self.assertEqual(offenders, [], "cites a document outside the repository")

    def test_our_commands_are_runnable(self):
        problems = []
        for name in pages():
            for info, start, body in fenced_blocks(os.path.join(DOCS, name)):
                if runnable(info) or info.split()[:1] not in (["sh"], ["bash"], ["console"], ["shell"]):
                    continue
                for k, line in enumerate(body):
                    if OURS_RE.search(line.split("#", 1)[0]):
                        problems.append(f"docs/{name}:{start + k}: oidc-discovery in a block that is not "
                                        f"```sh runnable: {line.strip()}")
        if problems:
            self.fail("\n".join(problems))

    def test_flags_named_are_the_binarys(self):
        """The flags of the README's tables and of every oidc-discovery
        command line in the README and the guides are flags the binary
        knows (`help all` lists them all), so a renamed flag cannot linger."""
        r = subprocess.run([BIN, "help", "all"], capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        known = set(re.findall(r"(?m)^  (?:-h, )?--([a-z0-9-]+)(?:, --([a-z0-9-]+))?", r.stdout))
        known = {name for pair in known for name in pair if name}
        self.assertIn("service-account-issuer", known)
        problems = []
        for path in [os.path.join(REPO, "README.md")] + [os.path.join(DOCS, n) for n in pages()]:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
            command = False
            for no, line in enumerate(lines, 1):
                named = []
                if line.startswith("| `--"):
                    named = re.findall(r"`--([a-z0-9-]+)", line.split("|")[1])
                if OURS_RE.search(line.split("#", 1)[0]) and not line.lstrip().startswith("|"):
                    command = True
                if command:
                    named += re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", line.split("#", 1)[0])
                    command = line.rstrip().endswith("\\")
                problems += [f"{os.path.relpath(path, REPO)}:{no}: --{n} is no flag of oidc-discovery"
                             for n in named if n not in known]
        if problems:
            self.fail("\n".join(problems))

    def test_readme_flag_tables_are_generated(self):
        """README's flag tables are what scripts/readme-flags.py writes from
        `help all`: every flag, its default, range and commands, none typed
        by hand."""
        r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "readme-flags.py"), BIN,
                            os.path.join(REPO, "README.md"), "--check"],
                           capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_defaults_quoted_are_the_binarys(self):
        """A default that the README or a guide quotes in prose for a flag
        ("`--max-age` (default 1h)", "`--max-age`, default 1h", "`--max-age
        3600` (the default)", "`--max-age` (1h)") is the binary's default for it, as `help all`
        prints it: prose cannot keep a default the table has changed."""
        r = subprocess.run([BIN, "help", "all"], capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        flags = readme_flags()
        defaults = {}
        for _, tag, desc in flags.entries(r.stdout):
            default = flags.split_description(desc)[1]
            for name in re.findall(r"--([a-z0-9-]+)", tag):
                defaults[name] = default
        self.assertEqual(defaults.get("max-age"), "1h")
        problems = []
        for path in [os.path.join(REPO, "README.md")] + [os.path.join(DOCS, n) for n in pages()]:
            for no, name, quoted in quoted_defaults(path):
                if name in defaults and not same_default(quoted, defaults[name]):
                    problems.append(f"{os.path.relpath(path, REPO)}:{no}: --{name} defaults to "
                                    f"{defaults[name]!r}, not {quoted!r} (or point at README's flag tables)")
        if problems:
            self.fail("\n".join(problems))

    def test_runnable_blocks(self):
        if not in_private_netns():
            print("test_docs: no private network namespace; using the host's loopback", file=sys.stderr)
        total, failures = 0, []
        for name in pages():
            page = Page(name, self.shim)
            total += len(page.blocks)
            t0 = time.monotonic()
            failure = page.run()
            print(f"docs/{name}: {len(page.blocks)} runnable blocks, "
                  f"{'FAILED' if failure else 'ok'} ({time.monotonic() - t0:.1f}s)", file=sys.stderr)
            if failure:
                failures.append(failure)
        print(f"test_docs: {total} runnable blocks", file=sys.stderr)
        self.assertGreater(total, 0)
        if failures:
            self.fail("\n\n".join(failures))


if __name__ == "__main__":
    reexec_in_netns()
    unittest.main(verbosity=2)
