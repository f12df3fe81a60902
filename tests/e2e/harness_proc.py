# SPDX-License-Identifier: Apache-2.0
"""The e2e harness's processes: the binary run once or as a Server (with
the ports its listeners log), memcheck's wrapping and reports under
OIDC_VALGRIND=1, waits on the server's log, files changed under a running
server the way the kubelet does, and the other programs tests run (node,
chromium)."""

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from harness_env import (BIN, NODE_DIR, VALGRIND, VALGRIND_SUPP, SLOW, SOCK_TIMEOUT, START_TIMEOUT, STOP_TIMEOUT,
                         RUN_TIMEOUT, read_bytes, wait_until)
from harness_http import do_request, wait_accepting

__all__ = ["MEMCHECK_EXIT", "MEMCHECK_SUMMARY", "memcheck_argv", "memcheck_problems", "run_once", "LISTENING",
           "LISTEN_FLAGS", "Server", "rss_kib", "atomic_write", "secret_dir_create", "secret_dir_swap", "count_log",
           "wait_for_log", "sighup_and_wait", "run_bin", "NODE_TIMEOUT", "node_problem", "run_node", "CHROMIUM",
           "CHROMIUM_FLAGS", "require_chromium", "chromium_argv", "chromium_start", "chromium_stop", "chromium_output",
           "chromium_run"]


# --------------------------------------------------------------------------
# memcheck (OIDC_VALGRIND=1) and one-shot runs of the binary

MEMCHECK_EXIT = 99  # memcheck's exit status when it found something
MEMCHECK_SUMMARY = re.compile(r"^==\d+== ERROR SUMMARY: (\d+) errors", re.M)


def memcheck_argv(argv, logdir):
    """argv itself, or under OIDC_VALGRIND=1 argv run by memcheck with one
    log per process in logdir. Only argv that starts the binary itself is
    wrapped: a test that runs it under another tool (strace) is left alone."""
    if not VALGRIND or argv[0] != BIN:
        return list(argv)
    return ["valgrind", "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=definite,indirect",
            "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=%d" % MEMCHECK_EXIT,
            "--num-callers=40", "--suppressions=" + VALGRIND_SUPP,
            "--log-file=" + os.path.join(logdir, "memcheck.%p.log")] + list(argv)


def memcheck_problems(logdir):
    """What memcheck reported for the processes that logged in logdir: a
    list of reports, empty when every one ended with zero errors (or none ran
    under memcheck). A log without its final summary means the process was
    killed before memcheck could check it, which is reported too."""
    problems = []
    for name in sorted(os.listdir(logdir)) if os.path.isdir(logdir) else ():
        if not (name.startswith("memcheck.") and name.endswith(".log")):
            continue
        with open(os.path.join(logdir, name), errors="replace") as f:
            text = re.sub(r"(?m)^==\d+== \n", "", f.read())
        m = MEMCHECK_SUMMARY.search(text)
        if m is None:
            problems.append("memcheck never finished (the process was killed); its log:\n" + text[-4000:])
        elif int(m.group(1)) != 0:
            problems.append("memcheck reported %s errors:\n%s" % (m.group(1), text[-16000:]))
    return problems


def run_once(args, timeout=None, input=None, env=None):
    """Runs the binary to completion (for --help, bad flags, ...), with
    optional bytes on standard input and variables added to the
    environment. Returns (returncode, stdout, stderr) as str. A process
    still alive at the timeout (RUN_TIMEOUT, or the given seconds stretched
    by SLOW) is killed and reported as returncode None. Under
    OIDC_VALGRIND=1 a memcheck report raises AssertionError."""
    timeout = RUN_TIMEOUT if timeout is None else timeout * SLOW
    logdir = tempfile.mkdtemp(prefix="oidc-e2e-memcheck-")
    try:
        p = subprocess.Popen(memcheck_argv([BIN, *args], logdir),
                             stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=dict(os.environ, **env) if env else None)
        try:
            out, err = p.communicate(input, timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate(timeout=5)
            rc = None
        problems = memcheck_problems(logdir) if rc is not None else []
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
    if problems:
        raise AssertionError("%r: %s" % (args, "\n".join(problems)))
    return rc, out.decode(errors="replace"), err.decode(errors="replace")


# --------------------------------------------------------------------------
# the binary as a server

# "listening on URL (N threads): WHAT" ("1 thread"), one line per address, in the
# order of the flags; text or JSON log lines alike.
LISTENING = re.compile(r"listening on (?:(https?)://(?:\[[^\]]*\]|[^:/\s]+):(\d+)|unix:\S+) \(\d+ threads?\): "
                       r"(/livez|POST |[a-z])")
LISTEN_FLAGS = ("--listen", "--tls-listen", "--token-review-listen", "--admin-listen")


class Server:
    """The binary running as a server.

    args: arguments after the program name. Unless listen=False, the
    harness appends `--listen HOST:PORT`, port 0 unless given (the kernel
    chooses), and unless args name one, `--admin-listen 127.0.0.1:0`. Once
    started, the port every listener got is read from its "listening on"
    log line: port (the first --listen), admin_port, and port_of(flag, i)
    for the i-th address of any listen flag. With listen=False the caller
    passes its own --listen (or a config file) and may set port/host;
    port is then that of the first TCP --listen address."""

    def __init__(self, args, listen=True, host="127.0.0.1", port=None, command="serve"):
        self.host = host
        self.port = port
        self.listen = listen
        self.admin_port = None
        self.ports = {}  # listen flag -> the ports of its addresses, in order (None: a Unix socket)
        argv = [BIN] + ([command] if command else []) + list(args)
        if listen:
            h = "[%s]" % host if ":" in host else host
            argv += ["--listen", "%s:%d" % (h, port or 0)]
        # Parallel tests must not fight over the default admin port, and a
        # test's SIGTERM should not wait for the production drain grace.
        if "--admin-listen" not in argv:
            argv += ["--admin-listen", "127.0.0.1:0"]
        if "--shutdown-grace" not in argv:
            argv += ["--shutdown-grace", "0s"]
        # Under memcheck on a loaded machine a TLS handshake alone can take
        # longer than the 5 s --handshake-timeout allows; tests of that
        # timeout give their own.
        if VALGRIND and command in ("serve", "dev") and "--handshake-timeout" not in argv:
            argv += ["--handshake-timeout", "1m"]
        self.argv = argv
        self.errdir = tempfile.mkdtemp(prefix="oidc-e2e-stderr-")
        self.errpath = os.path.join(self.errdir, "stderr.log")
        self.outpath = os.path.join(self.errdir, "stdout.log")
        self.proc = None
        self.returncode = None

    # lifecycle --------------------------------------------------------
    def start(self):
        """Starts the server and waits until every listener has logged the
        port it got and the public one accepts connections."""
        self._err = open(self.errpath, "wb")
        self._out = open(self.outpath, "wb")
        self.proc = subprocess.Popen(memcheck_argv(self.argv, self.errdir), stdin=subprocess.DEVNULL,
                                     stdout=self._out, stderr=self._err)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("server exited with status %s before accepting connections;"
                                     " argv=%r stderr:\n%s" % (self.proc.returncode, self.argv, self.stderr()))
            if self._read_ports() and (self.port is None or wait_accepting(self.port, self.host, 0)):
                return self
            time.sleep(0.05)
        self.kill()
        raise AssertionError("server did not log its listeners and accept connections within %.0fs; argv=%r "
                             "stderr:\n%s" % (START_TIMEOUT, self.argv, self.stderr()))

    def _expected_listeners(self):
        """How many addresses the command line names (a config file may
        add more), and whether one is the admin listener's."""
        n, admin = 0, False
        for i, a in enumerate(self.argv[:-1]):
            if a in LISTEN_FLAGS and self.argv[i + 1] != "none":
                n += 1
                admin = admin or a == "--admin-listen"
        return n, admin

    def _read_ports(self):
        """Reads the listeners' ports from the log into self.ports; True
        once all of them are there. The admin listener's line is written
        last, so once it is there, every line is."""
        ports = {}
        for m in LISTENING.finditer(self.stderr()):
            scheme, port, what = m.groups()
            flag = ("--admin-listen" if what == "/livez" else "--token-review-listen" if what == "POST "
                    else "--tls-listen" if scheme == "https" else "--listen")
            ports.setdefault(flag, []).append(int(port) if port else None)
        n, admin = self._expected_listeners()
        if sum(len(v) for v in ports.values()) < n or (admin and "--admin-listen" not in ports):
            return False
        self.ports = ports
        tcp = [p for p in ports.get("--listen", []) if p is not None]
        if self.port is None and tcp:
            # the harness's own --listen comes after the caller's
            self.port = tcp[-1] if self.listen else tcp[0]
        self.admin_port = ports.get("--admin-listen", [None])[0]
        return True

    def port_of(self, flag, index=0):
        """The port the index-th address of flag got (e.g. --tls-listen)."""
        return self.ports[flag][index]

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Sends sig and waits; returns the exit status (None if it had to
        be killed)."""
        if self.proc is None:
            return self.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
                self.returncode = None
                self._close_files()
                self.proc = None
                return None
        self.returncode = self.proc.returncode
        self._close_files()
        self.proc = None
        return self.returncode

    def kill(self):
        """Ends the server now: SIGKILL; under memcheck SIGTERM first, so
        that memcheck gets to check the exit for leaks."""
        if VALGRIND:
            self.stop()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            self.returncode = self.proc.returncode
        self._close_files()
        self.proc = None

    def _close_files(self):
        for f in (getattr(self, "_err", None), getattr(self, "_out", None)):
            if f is not None and not f.closed:
                f.close()

    def cleanup(self):
        """Ends the server and removes its files; returns memcheck's
        reports on it (see memcheck_problems)."""
        self.kill()
        problems = memcheck_problems(self.errdir)
        shutil.rmtree(self.errdir, ignore_errors=True)
        return problems

    def stderr(self):
        try:
            with open(self.errpath, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    # HTTP -------------------------------------------------------------
    def conn(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=SOCK_TIMEOUT)

    def request(self, method, path, headers=None, body=None):
        """One request on a fresh connection: (status, headers, body).
        headers: dict of lower-case name -> list of values."""
        c = self.conn()
        try:
            return do_request(c, method, path, headers, body)
        finally:
            c.close()

    def get(self, path, headers=None):
        return self.request("GET", path, headers)

    def url(self, path):
        h = "[%s]" % self.host if ":" in self.host else self.host
        return "http://%s:%d%s" % (h, self.port, path)

    def raw_socket(self):
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(SOCK_TIMEOUT)
        s.connect((self.host, self.port))
        return s


def rss_kib(pid):
    """The VmRSS of process pid, in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/%d/status" % pid)


# --------------------------------------------------------------------------
# files changing under a running server (key rotation)

def atomic_write(path, data: bytes):
    """Writes data beside path and renames it over path (one inotify
    IN_MOVED_TO, never a torn file)."""
    tmp = os.path.join(os.path.dirname(path) or ".", ".tmp-" + os.path.basename(path))
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def secret_dir_create(path, files, stamp="..2026_01"):
    """Lays out a directory as the kubelet does for a Secret volume:
    path/<stamp>/<name> regular files, path/..data -> <stamp>, and
    path/<name> -> ..data/<name>. files: dict name -> bytes."""
    os.makedirs(os.path.join(path, stamp))
    for name, data in files.items():
        with open(os.path.join(path, stamp, name), "wb") as f:
            f.write(data)
    os.symlink(stamp, os.path.join(path, "..data"))
    for name in files:
        os.symlink(os.path.join("..data", name), os.path.join(path, name))
    return path


def secret_dir_swap(path, files, stamp):
    """Rotates a Secret volume the kubelet's way: writes a new <stamp>
    directory, points ..data_tmp at it, renames ..data_tmp over ..data,
    fixes the user-visible symlinks and removes the previous <stamp>."""
    old = os.readlink(os.path.join(path, "..data"))
    os.makedirs(os.path.join(path, stamp))
    for name, data in files.items():
        with open(os.path.join(path, stamp, name), "wb") as f:
            f.write(data)
    tmp = os.path.join(path, "..data_tmp")
    os.symlink(stamp, tmp)
    os.replace(tmp, os.path.join(path, "..data"))
    for name in files:
        link = os.path.join(path, name)
        if not os.path.islink(link):
            os.symlink(os.path.join("..data", name), link)
    for name in os.listdir(path):
        link = os.path.join(path, name)
        if not name.startswith(".") and name not in files and os.path.islink(link):
            os.unlink(link)
    shutil.rmtree(os.path.join(path, old), ignore_errors=True)


# --------------------------------------------------------------------------
# waiting on the server's log

def count_log(server, pattern):
    """How many lines of the server's stderr match the regex pattern."""
    rx = re.compile(pattern)
    return sum(1 for line in server.stderr().splitlines() if rx.search(line))


def wait_for_log(server, pattern, count=1, timeout=3.0):
    """Waits until at least count stderr lines match pattern; returns the
    number found (fewer on timeout)."""
    wait_until(lambda: count_log(server, pattern) >= count, timeout)
    return count_log(server, pattern)


def sighup_and_wait(server, timeout=3.0, settle=0.3):
    """Sends SIGHUP and waits until the server has logged it, then a little
    longer for the reload that follows the log line in the same loop turn."""
    n = count_log(server, r"SIGHUP: reloading keys")
    server.proc.send_signal(signal.SIGHUP)
    got = wait_for_log(server, r"SIGHUP: reloading keys", n + 1, timeout)
    time.sleep(settle * SLOW)
    return got >= n + 1


def run_bin(args, input=None, timeout=None):
    """Like run_once, with bytes or str on standard input (empty when None)."""
    if isinstance(input, str):
        input = input.encode()
    return run_once(args, timeout, b"" if input is None else input)


# --------------------------------------------------------------------------
# other programs: node (panva/jose) and a headless chromium

NODE_TIMEOUT = 30


def node_problem(*scripts):
    """None when node, the given scripts and node_modules/jose are there;
    else what is missing (the tests fail with it, they do not skip)."""
    if shutil.which("node") is None:
        return "`node` is not on PATH; install Node.js 18 or 20 (scripts/setup.sh)"
    for s in scripts:
        if not os.path.isfile(os.path.join(NODE_DIR, s)):
            return "missing %s" % os.path.join(NODE_DIR, s)
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "jose")):
        return "%s/node_modules/jose is missing; run `npm ci` in %s" % (NODE_DIR, NODE_DIR)
    return None


def run_node(script, *args, timeout=NODE_TIMEOUT):
    r = subprocess.run(["node", os.path.join(NODE_DIR, script), *args], cwd=NODE_DIR,
                       capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


CHROMIUM = shutil.which("chromium")

# Flags for Debian's chromium in a test: headless as root, no GPU, nothing
# fetched from outside (component updates, sync, safe browsing lists), no
# proxy from the environment.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--no-proxy-server", "--hide-scrollbars"]


def require_chromium(testcase):
    if CHROMIUM is None:
        testcase.fail("chromium not found: scripts/setup.sh installs Debian's chromium for the browser tests")


def chromium_argv(profile, *args):
    """chromium with the test flags and a profile directory of its own."""
    return [CHROMIUM, *CHROMIUM_FLAGS, "--user-data-dir=" + profile, *args]


def chromium_start(profile, *args):
    """Starts chromium in a process group of its own (it forks helpers),
    output to files in profile's parent directory."""
    out = open(os.path.join(os.path.dirname(profile), "chromium.out"), "wb")
    err = open(os.path.join(os.path.dirname(profile), "chromium.err"), "wb")
    p = subprocess.Popen(chromium_argv(profile, *args), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                         start_new_session=True)
    out.close()
    err.close()
    return p


def chromium_stop(p):
    """Ends chromium and its helpers (its process group)."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=10)


def chromium_output(profile):
    """What chromium wrote: (stdout, stderr) as str."""
    def read(name):
        try:
            return read_bytes(os.path.join(os.path.dirname(profile), name)).decode(errors="replace")
        except OSError:
            return ""
    return read("chromium.out"), read("chromium.err")


def chromium_run(profile, *args, timeout=60):
    """Runs chromium to completion (--dump-dom, --screenshot): its stdout,
    or AssertionError with its stderr when it fails or takes too long."""
    p = chromium_start(profile, *args)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        chromium_stop(p)
        raise AssertionError("chromium %r did not finish within %ds:\n%s" % (args, timeout,
                                                                            chromium_output(profile)[1][-3000:]))
    chromium_stop(p)  # helpers it left behind
    out, err = chromium_output(profile)
    if p.returncode != 0:
        raise AssertionError("chromium %r exited %d:\n%s" % (args, p.returncode, err[-3000:]))
    return out
