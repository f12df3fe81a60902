# SPDX-License-Identifier: Apache-2.0
"""The e2e harness's environment: where the binary, the build tree, the
node scripts and the fixtures are, whether everything runs under valgrind's
memcheck (OIDC_VALGRIND=1) and the timeouts that stretch with it, plus small
utilities every other harness module uses (free ports, bounded waits,
re-running a test under the system python).

These values are read once at import and never rebound; the other harness
modules and oidc_harness (which tests import) take them from here."""

import base64
import os
import random
import re
import shutil
import socket
import subprocess
import time

__all__ = ["HERE", "REPO", "BIN", "BUILD_DIR", "NODE_DIR", "VALGRIND", "VALGRIND_SUPP", "SLOW", "SOCK_TIMEOUT",
           "PATIENCE", "START_TIMEOUT", "STOP_TIMEOUT", "RUN_TIMEOUT", "DISCOVERY", "JWKS", "b64url", "read_bytes", "cmake_cache",
           "int_to_min_bytes", "local_port_range", "free_port", "ipv6_loopback_available", "require_binary",
           "wait_until", "FIXTURES", "TOKENREVIEW_PATH", "SYSTEM_PYTHON", "ensure_system_modules", "modules_problem"]


HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

BIN = os.environ.get("OIDC_BIN") or os.path.join(REPO, "build", "oidc-discovery")
# The build tree BIN comes from (ctest sets it), for the tests that install
# or package it.
BUILD_DIR = os.environ.get("OIDC_BUILD_DIR") or os.path.join(REPO, "build")
NODE_DIR = os.environ.get("OIDC_NODE_DIR") or os.path.join(REPO, "tests", "node")

VALGRIND = os.environ.get("OIDC_VALGRIND") == "1"
VALGRIND_SUPP = os.path.join(REPO, "tests", "valgrind.supp")
# Memcheck runs the binary some 20 to 50 times slower; every bound on the
# server's speed stretches by this factor under it.
SLOW = 5 if VALGRIND else 1

# The bounds below are how long a test waits for an event before it gives
# up, never how long it waits when the event comes: a server that exits is
# seen at once. They are generous because scripts/test.sh runs many tests
# at a time on two cores, beside other work.
# How much longer than on an idle machine a test waits for an event (see
# wait_until): scripts/test.sh runs the stages side by side, many tests at
# a time, and must pass with another CPU-bound job on the machine.
PATIENCE = float(os.environ.get("OIDC_TEST_PATIENCE", "4"))
SOCK_TIMEOUT = 5.0 * SLOW     # every socket operation
START_TIMEOUT = 30.0 * SLOW   # server must accept connections within this
STOP_TIMEOUT = 30.0 * SLOW    # server must exit within this after a signal
RUN_TIMEOUT = 30.0 * SLOW     # one-shot invocations (--help, bad flags)

DISCOVERY = "/.well-known/openid-configuration"
JWKS = "/openid/v1/jwks"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def read_bytes(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def cmake_cache(name):
    """A value of the build directory's CMakeCache.txt."""
    with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
        m = re.search(r"^%s:[A-Z]+=(.*)$" % re.escape(name), f.read(), re.M)
    if m is None:
        raise AssertionError("%s is not in %s/CMakeCache.txt" % (name, BUILD_DIR))
    return m.group(1)


def int_to_min_bytes(n: int) -> bytes:
    if n == 0:
        return b"\x00"
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


def local_port_range():
    """The kernel's ephemeral port range: where bind(0) and the local end
    of every outgoing connection get their ports."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port(host="127.0.0.1"):
    """A port nothing was bound to a moment ago, picked at random outside
    the kernel's ephemeral range: servers started by the harness bind port
    0 (the kernel's choice, from that range) and client sockets take their
    local ports from it too, so neither can take this one. For a port
    nobody listens on, and for the few servers whose port a test must know
    before they start (an issuer URL that names it)."""
    lo, hi = local_port_range()
    ports = range(max(1024, lo - 16384), lo) if lo > 2048 else range(hi + 1, 65536)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(200):
        port = random.choice(ports)
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        return port
    raise AssertionError("no free port outside the ephemeral range on %s" % host)


def ipv6_loopback_available():
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def require_binary(testcase):
    if not (os.path.isfile(BIN) and os.access(BIN, os.X_OK)):
        testcase.fail(f"server binary not found or not executable: {BIN} (set OIDC_BIN)")
    if VALGRIND and shutil.which("valgrind") is None:
        testcase.fail("OIDC_VALGRIND=1 but valgrind is not on PATH; run scripts/setup.sh")


def wait_until(pred, timeout, interval=0.05):
    """Calls pred until it returns a truthy value or timeout seconds
    (stretched by SLOW and PATIENCE) pass; returns the last value (falsy on
    timeout). The timeout is what the event takes on an idle machine; the
    stretch costs nothing when the event comes, and keeps a loaded machine
    from failing a test whose event was only late."""
    deadline = time.monotonic() + timeout * SLOW * PATIENCE
    while True:
        value = pred()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


FIXTURES = os.environ.get("OIDC_FIXTURES") or os.path.join(REPO, "tests", "fixtures")
TOKENREVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
SYSTEM_PYTHON = "/usr/bin/python3"


def ensure_system_modules(*modules):
    """ensure_pyjwt() for any modules: when one of them cannot be imported
    here but SYSTEM_PYTHON has them all (Debian packages such as
    python3-prometheus-client), the test re-executes itself under
    SYSTEM_PYTHON. Otherwise nothing happens and the import fails later with
    a clear message (see modules_problem)."""
    import importlib
    import sys
    if modules_problem(*modules) is None:
        return
    if os.environ.get("OIDC_E2E_REEXEC") or os.path.realpath(sys.executable) == os.path.realpath(SYSTEM_PYTHON):
        return
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import " + ", ".join(modules)], capture_output=True, timeout=30)
    if probe.returncode != 0:
        return
    importlib.invalidate_caches()
    os.environ["OIDC_E2E_REEXEC"] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(sys.argv[0]), *sys.argv[1:]])


def modules_problem(*modules):
    """None when every module imports; else a message naming the first
    that does not."""
    import importlib
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            return "python module %s not importable (%s); run scripts/setup.sh" % (m, e)
    return None
