# SPDX-License-Identifier: Apache-2.0
"""Shared helpers for the end-to-end tests of oidc-discovery.

Everything here talks only to loopback addresses, bounds every wait, and uses
the Python standard library plus the `openssl` command-line tool (keys are
generated at run time in a temporary directory; the expected documents are
built independently of the server from the DER encodings openssl prints).

Environment:
  OIDC_BIN       path to the oidc-discovery binary (default: <repo>/build/oidc-discovery)
  OIDC_NODE_DIR  tests/node (default: <repo>/tests/node)
  OIDC_VALGRIND  1: run every server and command under valgrind's memcheck;
                 a test fails when memcheck reports an error or a definite or
                 indirect leak (scripts/valgrind-e2e.sh)

The helpers live in modules by role; this module re-exports every public
name of them, so tests need only `import oidc_harness as H`:
  harness_env     paths, OIDC_* settings, SLOW and the timeouts, small utilities
  harness_http    HTTP and TLS clients, raw sockets, admin/metrics, a static HTTPS server
  harness_proc    the binary run once or as a Server, memcheck, log waits, node, chromium
  harness_keys    keys (openssl CLI, DER, JWK), JWS/JWT helpers, minted tokens, certificates
  harness_review  the TokenReview caller and requests
  harness_cases   expected documents, ServerTestCase and its variants, status page parsing
Module-level settings (BIN, VALGRIND, SLOW, the timeouts) are read once at
import and never rebound: assigning H.BIN would not reach the harness
modules, which read harness_env's.
"""

# The standard modules the harness always exported (tests use H.os, H.re, ...).
import base64  # noqa: F401
import email.utils  # noqa: F401
import hashlib  # noqa: F401
import http.client  # noqa: F401
import json  # noqa: F401
import os  # noqa: F401
import random  # noqa: F401
import re  # noqa: F401
import shutil  # noqa: F401
import signal  # noqa: F401
import socket  # noqa: F401
import subprocess  # noqa: F401
import tempfile  # noqa: F401
import time  # noqa: F401
import unittest  # noqa: F401

from harness_env import *  # noqa: F401,F403
from harness_http import *  # noqa: F401,F403
from harness_proc import *  # noqa: F401,F403
from harness_keys import *  # noqa: F401,F403
from harness_review import *  # noqa: F401,F403
from harness_cases import *  # noqa: F401,F403
