#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Key-rotation driver for bench/rotation.sh.

  rotation.py prepare WORKDIR N
      Generates N+1 EC P-256 keys with the openssl CLI, writes the N+1 valid
      JWKS bodies (one per line, line i = {"keys":[jwk of key i]}) to
      WORKDIR/valid.txt, computed independently of the server by
      tests/e2e/oidc_harness.py, and lays out the key directory like a Kubernetes
      Secret volume: ..v000/sa.pub, ..data -> ..v000, sa.pub -> ..data/sa.pub
      (in WORKDIR/volume/sa: the server also watches the parent directory,
      which therefore holds nothing else).

  rotation.py rotate WORKDIR PORT N SPACING_MS RESULT_JSON
      Performs N rotations the way the kubelet's atomic writer does (new
      ..vNNN directory, ..data_tmp symlink, rename over ..data, remove the
      old directory), one every SPACING_MS. After each rename it polls the
      JWKS as fast as it can on its own keep-alive connection until the body
      is the new set, and records the swap->served time (a swap not served
      within 5 s is a timeout). Between swaps it keeps polling gently and
      counts "regressions": a body other than the newest set after the newest
      set was served (the published set must never go back). Writes the
      figures to RESULT_JSON.
"""

import concurrent.futures
import http.client
import json
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in tests/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import oidc_harness as h  # noqa: E402

JWKS = "/openid/v1/jwks"
SERVE_TIMEOUT = 5.0   # a swap whose set is not served within this is a timeout
GLOBAL_BUDGET = 75.0  # stop rotating after this many seconds, whatever N is


def prepare(workdir, n):
    keydir = os.path.join(workdir, "keys")
    os.makedirs(keydir)

    def make(i):
        name = "k%03d" % i
        priv = os.path.join(keydir, name + ".key")
        h.openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                  "-pkeyopt", "ec_param_enc:named_curve", "-out", priv)
        return h.Key(keydir, name, priv)

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        keys = list(pool.map(make, range(n + 1)))
    with open(os.path.join(workdir, "valid.txt"), "wb") as f:
        for k in keys:
            f.write(h.expected_jwks([k]) + b"\n")
    sa = os.path.join(workdir, "volume", "sa")
    os.makedirs(os.path.join(sa, "..v000"))
    shutil.copyfile(keys[0].pub, os.path.join(sa, "..v000", "sa.pub"))
    os.symlink("..v000", os.path.join(sa, "..data"))
    os.symlink("..data/sa.pub", os.path.join(sa, "sa.pub"))


def percentile(sorted_vals, p):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_vals:
        return None
    rank = max(1, -(-len(sorted_vals) * p // 100))  # ceil(n*p/100)
    return sorted_vals[int(rank) - 1]


class ServerGone(Exception):
    """Connection refused: the server is not listening any more."""


def rotate(workdir, port, n, spacing_ms, result_path):
    with open(os.path.join(workdir, "valid.txt"), "rb") as f:
        bodies = f.read().split(b"\n")[:n + 1]
    valid = set(bodies)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=h.SOCK_TIMEOUT)
    stats = {"latencies_ms": [], "swaps": [], "timeouts": 0, "non200": 0, "invalid": 0,
             "regressions": 0, "polls": 0, "reconnects": 0, "rotations": 0,
             "aborted": False, "server_gone": False}

    def get():
        """One GET on the keep-alive connection: the body, or None."""
        stats["polls"] += 1
        try:
            conn.request("GET", JWKS)
            r = conn.getresponse()
            body = r.read()
        except ConnectionRefusedError:
            raise ServerGone()
        except (OSError, http.client.HTTPException):
            stats["reconnects"] += 1  # the server closed the connection; reopened next time
            conn.close()
            return None
        if r.status != 200:
            stats["non200"] += 1
            return None
        if body not in valid:
            stats["invalid"] += 1
        return body

    if get() != bodies[0]:
        sys.exit("rotation.py: the server does not serve the initial set")
    try:
        run_swaps(os.path.join(workdir, "volume", "sa"), os.path.join(workdir, "keys"), n, spacing_ms,
                  bodies, get, stats)
    except ServerGone:
        stats["server_gone"] = True
    conn.close()

    lat = sorted(stats["latencies_ms"])
    stats.update({"served": len(lat), "p50_ms": percentile(lat, 50), "p99_ms": percentile(lat, 99),
                  "max_ms": lat[-1] if lat else None, "min_ms": lat[0] if lat else None})
    with open(result_path, "w") as f:
        json.dump(stats, f)


def run_swaps(sa, keydir, n, spacing_ms, bodies, get, stats):
    start = time.monotonic()
    next_swap = start + spacing_ms / 1000.0
    served = True  # the newest set has been served (False after a timeout)
    for i in range(1, n + 1):
        # between swaps: the newest set must stay served (poll every ~2 ms)
        while time.monotonic() < next_swap:
            body = get()
            if served and body is not None and body != bodies[i - 1]:
                stats["regressions"] += 1
            time.sleep(0.002)
        if time.monotonic() - start > GLOBAL_BUDGET:
            stats["aborted"] = True
            return
        # the kubelet's atomic writer: new dir, ..data_tmp, rename, remove old
        new = "..v%03d" % i
        os.mkdir(os.path.join(sa, new))
        shutil.copyfile(os.path.join(keydir, "k%03d.pub" % i), os.path.join(sa, new, "sa.pub"))
        os.symlink(new, os.path.join(sa, "..data_tmp"))
        t0 = time.monotonic()
        os.replace(os.path.join(sa, "..data_tmp"), os.path.join(sa, "..data"))
        shutil.rmtree(os.path.join(sa, "..v%03d" % (i - 1)))
        stats["rotations"] += 1
        # swap -> served: poll as fast as possible
        while True:
            body = get()
            now = time.monotonic()
            if body == bodies[i]:
                ms = (now - t0) * 1000.0
                stats["latencies_ms"].append(ms)
                stats["swaps"].append([i, round(time.time(), 3), round(ms, 1)])
                served = True
                break
            if now - t0 > SERVE_TIMEOUT:
                stats["timeouts"] += 1
                served = False
                break
        next_swap = max(next_swap + spacing_ms / 1000.0, time.monotonic())


def main(argv):
    if len(argv) == 3 and argv[0] == "prepare":
        prepare(argv[1], int(argv[2]))
    elif len(argv) == 6 and argv[0] == "rotate":
        rotate(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), argv[5])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
