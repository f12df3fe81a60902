#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Distinct RS256 tokens for bench/verify.sh's all-miss TokenReview run.

    verify_tokens.py TEMPLATE_JWT PKCS8_KEY COUNT > tokens

Takes a token minted by `oidc-discovery token` and re-signs COUNT copies of
it, each with a fresh jti (so every token, and every cache key, differs),
with the key that signed it. Same header, claims and expiry otherwise.
Exits 3 when the `cryptography` package is missing (verify.sh then mints
with the CLI instead, which is slower: a process per token).
"""
import base64
import json
import sys
import uuid

try:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding
except ImportError:
    sys.exit(3)


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def b64e(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def main():
    template, keyfile, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    header, payload, _ = open(template).read().strip().split(".")
    if json.loads(b64d(header)).get("alg") != "RS256":
        sys.exit("verify_tokens.py: the template is not RS256")
    claims = json.loads(b64d(payload))
    key = serialization.load_pem_private_key(open(keyfile, "rb").read(), password=None)
    out = []
    for _ in range(count):
        claims["jti"] = str(uuid.uuid4())
        signing_input = header + "." + b64e(json.dumps(claims, separators=(",", ":")).encode())
        sig = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        out.append(signing_input + "." + b64e(sig))
    sys.stdout.write("\n".join(out) + "\n")


main()
