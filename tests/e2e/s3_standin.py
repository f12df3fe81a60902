#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An S3 stand-in for the tests: path-style GET and PUT of objects, every
request's AWS Signature Version 4 recomputed with botocore (Debian's
python3-botocore, the AWS SDK's own signer) and refused with 403 when it
does not match, S3's conditional writes (If-Match on the ETag, If-None-Match:
*) answered with 412, and objects kept in memory with their Content-Type,
Cache-Control, x-amz-meta-* metadata, ETag (the body's MD5, as S3 gives for
a single-part upload) and Last-Modified.

What it checks of a request, as S3 does:
  - Authorization: AWS4-HMAC-SHA256 with a known access key, the stand-in's
    region and service s3, and a signature equal to botocore's over the
    headers the request names as signed;
  - host, x-amz-date and x-amz-content-sha256 signed, and every x-amz-*
    header of the request among the signed ones;
  - x-amz-content-sha256 equal to the SHA-256 of the body;
  - x-amz-date within 15 minutes of now;
  - x-amz-security-token equal to the session token, when one is set.

Used by tests/e2e/test_bucket_s3.py in-process (S3Standin), and runnable on
its own for the guide (docs/bucket-publishing.md):

  python3 tests/e2e/s3_standin.py --port 9000 --bucket oidc \
      --access-key AKIDEXAMPLE --secret-key SECRET

Loopback only; it stops with its process (or S3Standin.stop()).
"""

import argparse
import calendar
import email.utils
import hashlib
import http.server
import re
import threading
import time
import urllib.parse

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AUTH_RE = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                     r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$")
SKEW = 15 * 60
BODY_MAX = 1 << 20


def error_xml(code, message):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>'
            % (code, message)).encode()


class S3Standin:
    """The server and its objects. objects: (bucket, key) -> dict with
    body, content_type, cache_control, meta (lowercase name after
    x-amz-meta- -> value), etag, last_modified. log: (method, path,
    status) of every request, in order."""

    def __init__(self, access_key, secret_key, region="us-east-1", token=None, buckets=("oidc",), port=0,
                 list_bucket=True):
        self.credentials = {access_key: secret_key}
        # without s3:ListBucket, S3 answers a GET of a missing key with 403
        # AccessDenied rather than 404 NoSuchKey
        self.list_bucket = list_bucket
        self.region = region
        self.token = token
        self.buckets = set(buckets)
        self.objects = {}
        self.log = []
        self.lock = threading.Lock()
        standin = self

        class Handler(Request):
            pass
        Handler.standin = standin
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = None

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        if self.thread:
            self.thread.join(5)

    # direct access, as someone with the console would have -------------
    def get(self, bucket, key):
        with self.lock:
            o = self.objects.get((bucket, key))
            return dict(o) if o else None

    def put(self, bucket, key, body, content_type="binary/octet-stream", cache_control=None, meta=None):
        with self.lock:
            self.objects[(bucket, key)] = {
                "body": body, "content_type": content_type, "cache_control": cache_control,
                "meta": dict(meta or {}), "etag": '"%s"' % hashlib.md5(body).hexdigest(),
                "last_modified": email.utils.formatdate(time.time(), usegmt=True)}

    def delete(self, bucket, key):
        with self.lock:
            self.objects.pop((bucket, key), None)

    def writes(self):
        with self.lock:
            return [e for e in self.log if e[0] == "PUT" and e[2] == 200]

    def refusals(self, status):
        with self.lock:
            return [e for e in self.log if e[2] == status]


class Request(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # answers Expect: 100-continue, keeps connections
    standin = None

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body=b"", headers=None):
        # Logged before the answer leaves: once the client has it, it may
        # send its next request on another connection, whose thread would
        # otherwise log first and misorder the record.
        with self.standin.lock:
            self.standin.log.append((self.command, self.path, status))
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def refuse(self, status, code, message):
        self.answer(status, error_xml(code, message), {"Content-Type": "application/xml"})

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > BODY_MAX:
            raise ValueError("body too large")
        return self.rfile.read(n) if n else b""

    def check_signature(self, body):
        """None when the request is signed as S3 requires, else (status,
        code, message)."""
        s = self.standin
        m = AUTH_RE.match(self.headers.get("Authorization", ""))
        if not m:
            return 403, "AccessDenied", "no AWS4-HMAC-SHA256 Authorization"
        key_id, date, region, service, signed, signature = m.groups()
        if key_id not in s.credentials:
            return 403, "InvalidAccessKeyId", "unknown access key"
        if region != s.region or service != "s3":
            return 400, "AuthorizationHeaderMalformed", "scope %s/%s, expected %s/s3" % (region, service, s.region)
        names = signed.split(";")
        present = {k.lower() for k in self.headers.keys()}
        for need in ("host", "x-amz-date", "x-amz-content-sha256"):
            if need not in names:
                return 403, "AccessDenied", "%s is not signed" % need
        for name in present:
            if name.startswith("x-amz-") and name not in names:
                return 403, "AccessDenied", "%s is not signed" % name
        if any(n not in present for n in names):
            return 403, "AccessDenied", "a signed header is missing"
        amz_date = self.headers["x-amz-date"]
        try:
            t = calendar.timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
        except ValueError:
            return 403, "AccessDenied", "bad x-amz-date"
        if abs(time.time() - t) > SKEW or amz_date[:8] != date:
            return 403, "RequestTimeTooSkewed", "x-amz-date too far from now"
        if self.headers["x-amz-content-sha256"] != hashlib.sha256(body).hexdigest():
            return 400, "XAmzContentSHA256Mismatch", "x-amz-content-sha256 is not the body's"
        if s.token is not None and self.headers.get("x-amz-security-token") != s.token:
            return 403, "InvalidToken", "wrong session token"
        req = AWSRequest(method=self.command, url="http://%s%s" % (self.headers["host"], self.path),
                         headers={n: self.headers[n] for n in names}, data=body)
        req.context["timestamp"] = amz_date
        auth = S3SigV4Auth(Credentials(key_id, s.credentials[key_id], s.token), "s3", s.region)
        expected = auth.signature(auth.string_to_sign(req, auth.canonical_request(req)), req)
        if expected != signature:
            return 403, "SignatureDoesNotMatch", "The request signature we calculated does not match"
        return None

    def target(self):
        path = urllib.parse.urlsplit(self.path).path
        bucket, _, key = path.lstrip("/").partition("/")
        return bucket, urllib.parse.unquote(key)

    def handle_any(self):
        try:
            body = self.read_body()
        except ValueError:
            return self.refuse(400, "EntityTooLarge", "body too large")
        problem = self.check_signature(body)
        if problem:
            return self.refuse(*problem)
        bucket, key = self.target()
        if bucket not in self.standin.buckets:
            return self.refuse(404, "NoSuchBucket", "The specified bucket does not exist")
        if not key:
            return self.refuse(400, "InvalidRequest", "no key")
        if self.command == "GET":
            return self.get_object(bucket, key)
        return self.put_object(bucket, key, body)

    def get_object(self, bucket, key):
        o = self.standin.get(bucket, key)
        if o is None and not self.standin.list_bucket:
            return self.refuse(403, "AccessDenied", "Access Denied")
        if o is None:
            return self.refuse(404, "NoSuchKey", "The specified key does not exist.")
        headers = {"ETag": o["etag"], "Content-Type": o["content_type"], "Last-Modified": o["last_modified"]}
        if o["cache_control"] is not None:
            headers["Cache-Control"] = o["cache_control"]
        for name, value in o["meta"].items():
            headers["x-amz-meta-" + name] = value
        self.answer(200, o["body"], headers)

    def put_object(self, bucket, key, body):
        s = self.standin
        with s.lock:
            o = s.objects.get((bucket, key))
            if_match, if_none = self.headers.get("If-Match"), self.headers.get("If-None-Match")
            if (if_match is not None and (o is None or o["etag"] != if_match)) or \
                    (if_none == "*" and o is not None):
                conflict = True
            else:
                conflict = False
                meta = {k.lower()[len("x-amz-meta-"):]: v for k, v in self.headers.items()
                        if k.lower().startswith("x-amz-meta-")}
                o = {"body": body, "content_type": self.headers.get("Content-Type", "binary/octet-stream"),
                     "cache_control": self.headers.get("Cache-Control"), "meta": meta,
                     "etag": '"%s"' % hashlib.md5(body).hexdigest(),
                     "last_modified": email.utils.formatdate(time.time(), usegmt=True)}
                s.objects[(bucket, key)] = o
        if conflict:
            return self.refuse(412, "PreconditionFailed", "At least one of the preconditions you specified did not hold")
        self.answer(200, b"", {"ETag": o["etag"]})

    def do_GET(self):
        self.handle_any()

    def do_PUT(self):
        self.handle_any()


def main():
    ap = argparse.ArgumentParser(description="S3 stand-in for tests and the guide (loopback only)")
    ap.add_argument("--port", type=int, default=9000)
    ap.add_argument("--bucket", action="append", default=[])
    ap.add_argument("--access-key", required=True)
    ap.add_argument("--secret-key", required=True)
    ap.add_argument("--region", default="us-east-1")
    a = ap.parse_args()
    s = S3Standin(a.access_key, a.secret_key, a.region, buckets=a.bucket or ["oidc"], port=a.port)
    print("S3 stand-in on %s, buckets %s" % (s.endpoint, ", ".join(sorted(s.buckets))), flush=True)
    try:
        s.server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
