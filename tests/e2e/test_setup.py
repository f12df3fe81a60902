# SPDX-License-Identifier: Apache-2.0
"""scripts/setup.sh on a machine where another apt holds apt's locks (a
fresh VM running apt-daily or unattended-upgrades): it waits for them,
bounded by OIDC_APT_LOCK_WAIT, instead of failing at once.

`apt-get update` is Debian's real one, pointed by APT_CONFIG at a private
package-list directory with no sources, whose lock the test holds with a
POSIX record lock (fcntl, as apt takes it; flock(2) locks would not meet
apt's). `apt-get install` is a stand-in that records its arguments and
answers the first two calls as apt does while another apt holds the
download cache's lock; `dpkg-query` says every package is missing, so the
script runs both. Nothing is installed and no system lock is touched.
"""

import fcntl
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import oidc_harness as H

SETUP = os.path.join(H.REPO, "scripts", "setup.sh")
REAL_APT_GET = shutil.which("apt-get")

APT_GET_SHIM = """#!/bin/sh
echo "$*" >> "$SHIM_LOG"
case " $* " in *" update "*) exec "$REAL_APT_GET" "$@" ;; esac
n=$(cat "$SHIM_COUNT" 2>/dev/null || echo 0)
echo $((n + 1)) > "$SHIM_COUNT"
if [ "$n" -lt 2 ]; then
    echo "E: Could not get lock /var/cache/apt/archives/lock. It is held by process 1 (apt-get)" >&2
    exit 100
fi
"""


class AptLocks(unittest.TestCase):

    def setUp(self):
        if REAL_APT_GET is None:
            self.fail("apt-get not found: scripts/setup.sh is for Debian")
        self.tmp = tempfile.mkdtemp(prefix="oidc-setup-")
        self.repo = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(self.repo, "scripts"))
        shutil.copy(SETUP, os.path.join(self.repo, "scripts", "setup.sh"))
        shims = os.path.join(self.tmp, "bin")
        os.mkdir(shims)
        for name, text in (("apt-get", APT_GET_SHIM), ("dpkg-query", "#!/bin/sh\nexit 1\n"),
                           ("sudo", '#!/bin/sh\nexec "$@"\n')):
            path = os.path.join(shims, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        apt = os.path.join(self.tmp, "apt")
        for d in ("lists/partial", "parts", "cache/archives/partial"):
            os.makedirs(os.path.join(apt, d))
        self.lists_lock = os.path.join(apt, "lists", "lock")
        conf = os.path.join(self.tmp, "apt.conf")
        with open(conf, "w") as f:
            f.write('Dir::State::Lists "%s/lists/";\nDir::Etc::SourceList "/dev/null";\n'
                    'Dir::Etc::SourceParts "%s/parts/";\nDir::Cache "%s/cache/";\n' % (apt, apt, apt))
        self.log = os.path.join(self.tmp, "apt-get.log")
        self.env = dict(os.environ, PATH=shims + os.pathsep + os.environ.get("PATH", ""), APT_CONFIG=conf,
                        REAL_APT_GET=REAL_APT_GET, SHIM_LOG=self.log, SHIM_COUNT=os.path.join(self.tmp, "count"))
        self.held = None

    def tearDown(self):
        self.release()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def hold_lists_lock(self, seconds=None):
        """Takes the package lists' lock as another apt would; releases it
        after seconds (or at teardown)."""
        self.held = os.open(self.lists_lock, os.O_RDWR | os.O_CREAT, 0o640)
        fcntl.lockf(self.held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if seconds is not None:
            timer = threading.Timer(seconds, self.release)
            timer.daemon = True
            timer.start()

    def release(self):
        fd, self.held = self.held, None
        if fd is not None:
            os.close(fd)

    def run_setup(self, wait, timeout=120):
        env = dict(self.env, OIDC_APT_LOCK_WAIT=str(wait))
        t0 = time.monotonic()
        r = subprocess.run(["bash", os.path.join(self.repo, "scripts", "setup.sh")], env=env, capture_output=True,
                           text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return r, time.monotonic() - t0

    def calls(self):
        with open(self.log) as f:
            return [line.split() for line in f]

    def test_waits_for_the_locks(self):
        self.hold_lists_lock(seconds=3)
        r, took = self.run_setup(wait=60)
        self.assertEqual(r.returncode, 0, "stdout:\n%s\nstderr:\n%s" % (r.stdout, r.stderr))
        self.assertGreaterEqual(took, 2.5, "it did not wait for the lock")
        self.assertIn("another apt holds a lock; waiting up to 60s", r.stdout)
        calls = self.calls()
        updates = [c for c in calls if "update" in c]
        installs = [c for c in calls if "install" in c]
        self.assertGreaterEqual(len(updates), 2, calls)
        self.assertEqual(len(installs), 3, "install is tried again while the cache's lock is held: %r" % calls)
        for c in calls:
            self.assertEqual(c[:2], ["-o", "DPkg::Lock::Timeout=60"], "dpkg's locks are waited for by apt: %r" % c)

    def test_gives_up_after_the_bound(self):
        self.hold_lists_lock()
        r, took = self.run_setup(wait=3, timeout=60)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("Could not get lock", r.stderr)
        self.assertIn("lists/lock", r.stderr)
        self.assertLess(took, 30, "the wait is bounded by OIDC_APT_LOCK_WAIT")
        self.assertFalse([c for c in self.calls() if "install" in c], "nothing is installed without the lists")

    def test_other_failures_are_not_retried(self):
        os.remove(os.path.join(self.tmp, "bin", "apt-get"))
        with open(os.path.join(self.tmp, "bin", "apt-get"), "w") as f:
            f.write('#!/bin/sh\necho "$*" >> "$SHIM_LOG"\necho "E: Unable to locate package nope" >&2\nexit 100\n')
        os.chmod(os.path.join(self.tmp, "bin", "apt-get"), 0o755)
        r, took = self.run_setup(wait=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Unable to locate package", r.stderr)
        self.assertEqual(len(self.calls()), 1, "a failure other than a held lock ends the script")


if __name__ == "__main__":
    unittest.main()
