# SPDX-License-Identifier: Apache-2.0
"""The e2e harness's keys and tokens: key pairs made with the openssl CLI
and every encoding of them the tests need (Key, KeyFactory), a minimal DER
reader to build the expected JWKs independently of the server, JWS/JWT
helpers and tokens minted by the binary, PyJWT's availability, and a test
CA with server and client certificates."""

import base64
import hashlib
import json
import os
import re
import subprocess
import time

from harness_env import b64url, read_bytes, int_to_min_bytes, ensure_system_modules
from harness_proc import run_bin

__all__ = ["der_read", "der_children", "der_int", "OID_RSA", "OID_EC", "CURVES", "OPENSSL_CURVE", "parse_spki",
           "parse_private_pkcs8", "pem_body", "openssl", "Key", "KeyFactory", "ensure_pyjwt", "pyjwt_problem",
           "b64url_decode", "jwt_parts", "jws_compact", "kube_claims", "mint_token", "make_ca", "make_server_cert",
           "make_client_cert", "make_client_cert_x509", "cert_subject_rfc4514", "TLS_SAN", "cert_der",
           "cert_fingerprint", "cert_not_after"]


# --------------------------------------------------------------------------
# a minimal DER reader (enough for SPKI, PKCS#8, PKCS#1 and SEC1)

def der_read(buf, pos=0):
    """Returns (tag, content_bytes, next_pos)."""
    tag = buf[pos]
    pos += 1
    length = buf[pos]
    pos += 1
    if length & 0x80:
        nbytes = length & 0x7f
        length = int.from_bytes(buf[pos:pos + nbytes], "big")
        pos += nbytes
    return tag, buf[pos:pos + length], pos + length


def der_children(content):
    out = []
    pos = 0
    while pos < len(content):
        tag, val, pos = der_read(content, pos)
        out.append((tag, val))
    return out


def der_int(val: bytes) -> int:
    return int.from_bytes(val, "big", signed=False)


OID_RSA = bytes.fromhex("2a864886f70d010101")
OID_EC = bytes.fromhex("2a8648ce3d0201")
CURVES = {
    bytes.fromhex("2a8648ce3d030107"): ("P-256", "ES256", 32),
    bytes.fromhex("2b81040022"): ("P-384", "ES384", 48),
    bytes.fromhex("2b81040023"): ("P-521", "ES512", 66),
}
OPENSSL_CURVE = {"P-256": "P-256", "P-384": "P-384", "P-521": "P-521"}


def parse_spki(der):
    """Returns dict describing the public key in a DER SubjectPublicKeyInfo."""
    tag, seq, _ = der_read(der)
    assert tag == 0x30
    (t1, algid), (t2, bits) = der_children(seq)
    assert t1 == 0x30 and t2 == 0x03
    alg_children = der_children(algid)
    oid = alg_children[0][1]
    key_bytes = bits[1:]  # skip "unused bits" byte
    if oid == OID_RSA:
        _, rsaseq, _ = der_read(key_bytes)
        (_, n), (_, e) = der_children(rsaseq)
        return {"kty": "RSA", "n": der_int(n), "e": der_int(e), "alg": "RS256"}
    if oid == OID_EC:
        crv, alg, size = CURVES[alg_children[1][1]]
        assert key_bytes[0] == 4 and len(key_bytes) == 1 + 2 * size
        return {"kty": "EC", "crv": crv, "alg": alg, "size": size,
                "x": key_bytes[1:1 + size], "y": key_bytes[1 + size:]}
    raise ValueError("unsupported SPKI algorithm")


def parse_private_pkcs8(der):
    """Returns the list of private integers (as big-endian minimal bytes) of
    a DER PKCS#8 PrivateKeyInfo: d,p,q,dp,dq,qi for RSA; the scalar for EC."""
    _, seq, _ = der_read(der)
    children = der_children(seq)
    algid = der_children(children[1][1])
    inner = children[2][1]
    _, iseq, _ = der_read(inner)
    ic = der_children(iseq)
    if algid[0][1] == OID_RSA:
        # version, n, e, d, p, q, dp, dq, qi
        return {name: int_to_min_bytes(der_int(ic[i][1]))
                for i, name in zip(range(3, 9), ("d", "p", "q", "dp", "dq", "qi"))}
    if algid[0][1] == OID_EC:
        return {"d": ic[1][1]}
    raise ValueError("unsupported PKCS#8 algorithm")


# --------------------------------------------------------------------------
# key generation with the openssl CLI

def pem_body(pem: bytes, label: str) -> bytes:
    """The DER bytes of the first PEM block with the given label."""
    m = re.search(rb"-----BEGIN " + label.encode() + rb"-----\r?\n(.*?)-----END " + label.encode() + rb"-----",
                  pem, re.S)
    if not m:
        raise ValueError("no %s block" % label)
    return base64.b64decode(b"".join(m.group(1).split()))


def openssl(*args, input=None):
    r = subprocess.run(["openssl", *args], input=input, capture_output=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
    return r.stdout


class Key:
    """A freshly generated key pair with every encoding the tests need.

    Attributes: priv (PKCS#8 PEM path), pub (PKIX PEM path), spki (DER bytes),
    kid, alg, kty, jwk (dict), jwk_json (exact expected bytes as str),
    secrets (dict name -> bytes of private integers)."""

    def __init__(self, dirpath, name, priv_path):
        self.dir = dirpath
        self.name = name
        self.priv = priv_path
        self.pub = os.path.join(dirpath, name + ".pub")
        openssl("pkey", "-in", self.priv, "-pubout", "-out", self.pub)
        self.spki = openssl("pkey", "-in", self.priv, "-pubout", "-outform", "DER")
        # the documented check: sha256 over the DER SPKI, base64url, no padding
        self.kid = b64url(hashlib.sha256(self.spki).digest())
        info = parse_spki(self.spki)
        self.kty = info["kty"]
        self.alg = info["alg"]
        if self.kty == "RSA":
            n = b64url(int_to_min_bytes(info["n"]))
            e = b64url(int_to_min_bytes(info["e"]))
            self.jwk = {"use": "sig", "kty": "RSA", "kid": self.kid, "alg": "RS256", "n": n, "e": e}
            self.jwk_json = ('{"use":"sig","kty":"RSA","kid":"%s","alg":"RS256","n":"%s","e":"%s"}'
                             % (self.kid, n, e))
        else:
            x = b64url(info["x"])
            y = b64url(info["y"])
            self.x_raw, self.y_raw = info["x"], info["y"]
            self.crv = info["crv"]
            self.jwk = {"use": "sig", "kty": "EC", "kid": self.kid, "crv": info["crv"],
                        "alg": info["alg"], "x": x, "y": y}
            self.jwk_json = ('{"use":"sig","kty":"EC","kid":"%s","crv":"%s","alg":"%s","x":"%s","y":"%s"}'
                             % (self.kid, info["crv"], info["alg"], x, y))
        self.secrets = parse_private_pkcs8(pem_body(read_bytes(self.priv), "PRIVATE KEY"))

    # other encodings of the same key ---------------------------------
    def pkcs1(self):
        """RSA: 'RSA PRIVATE KEY' (PKCS#1) PEM path."""
        path = os.path.join(self.dir, self.name + ".pkcs1.pem")
        openssl("rsa", "-in", self.priv, "-traditional", "-out", path)
        assert b"BEGIN RSA PRIVATE KEY" in read_bytes(path)
        return path

    def sec1(self, with_params=False):
        """EC: 'EC PRIVATE KEY' (SEC1) PEM path, optionally preceded by an
        'EC PARAMETERS' block (as `openssl ecparam -genkey` writes)."""
        path = os.path.join(self.dir, self.name + (".sec1p.pem" if with_params else ".sec1.pem"))
        body = openssl("ec", "-in", self.priv)
        if with_params:
            params = openssl("ecparam", "-name", {"P-256": "prime256v1", "P-384": "secp384r1",
                                                  "P-521": "secp521r1"}[self.crv])
            body = params + body
        with open(path, "wb") as f:
            f.write(body)
        assert b"BEGIN EC PRIVATE KEY" in body
        return path

    def certificate(self, ca=False):
        """A self-signed certificate for the key: a leaf (CA:FALSE), or with
        ca=True a CA certificate (CA:TRUE, what `openssl req -x509` makes
        by default), which the server refuses as a key source."""
        path = os.path.join(self.dir, self.name + (".ca.crt" if ca else ".crt"))
        openssl("req", "-x509", "-new", "-key", self.priv, "-subj", "/CN=oidc-e2e", "-days", "1",
                "-addext", "basicConstraints=critical,CA:%s" % ("TRUE" if ca else "FALSE"), "-out", path)
        return path


class KeyFactory:
    def __init__(self, dirpath):
        self.dir = dirpath
        self.count = 0

    def _name(self, prefix):
        self.count += 1
        return "%s%d" % (prefix, self.count)

    def rsa(self, bits=2048, pubexp=None):
        name = self._name("rsa")
        path = os.path.join(self.dir, name + ".key")
        args = ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:%d" % bits]
        if pubexp is not None:
            args += ["-pkeyopt", "rsa_keygen_pubexp:%d" % pubexp]
        openssl(*args, "-out", path)
        return Key(self.dir, name, path)

    def ec(self, curve="P-256"):
        name = self._name("ec")
        path = os.path.join(self.dir, name + ".key")
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:" + curve,
                "-pkeyopt", "ec_param_enc:named_curve", "-out", path)
        return Key(self.dir, name, path)

    def ec_with_short_coordinate(self, curve="P-256", tries=3000):
        """An EC key whose x or y has a leading zero byte (so that padding to
        the curve size matters). Returns None if none was found in time."""
        deadline = time.monotonic() + 20
        for _ in range(tries):
            if time.monotonic() > deadline:
                return None
            path = os.path.join(self.dir, "short.key")
            openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:" + curve,
                    "-pkeyopt", "ec_param_enc:named_curve", "-out", path)
            der = openssl("pkey", "-in", path, "-pubout", "-outform", "DER")
            info = parse_spki(der)
            if info["x"][0] == 0 or info["y"][0] == 0:
                name = self._name("ecshort")
                final = os.path.join(self.dir, name + ".key")
                os.rename(path, final)
                return Key(self.dir, name, final)
        return None

    def ed25519(self):
        name = self._name("ed")
        path = os.path.join(self.dir, name + ".key")
        openssl("genpkey", "-algorithm", "ED25519", "-out", path)
        pub = os.path.join(self.dir, name + ".pub")
        openssl("pkey", "-in", path, "-pubout", "-out", pub)
        return path, pub

    def concat(self, name, *paths):
        out = os.path.join(self.dir, name)
        with open(out, "wb") as f:
            for p in paths:
                f.write(read_bytes(p))
        return out

    def write(self, name, data: bytes):
        out = os.path.join(self.dir, name)
        with open(out, "wb") as f:
            f.write(data)
        return out


# --------------------------------------------------------------------------
# JWS/JWT helpers, PyJWT, and tokens minted by the binary

def ensure_pyjwt():
    """Makes `import jwt` and `import cryptography` work: CI installs them
    as Debian packages (python3-jwt, python3-cryptography) for the system
    interpreter, while cmake may have picked another python3 (pyenv, venv);
    see ensure_system_modules."""
    ensure_system_modules("jwt", "cryptography")


def pyjwt_problem():
    try:
        import jwt  # noqa: F401
        import cryptography  # noqa: F401
    except ImportError as e:
        return ("PyJWT / cryptography not importable (%s); install Debian's python3-jwt and "
                "python3-cryptography (scripts/setup.sh)" % e)
    return None


def b64url_decode(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def jwt_parts(token: str):
    """(header dict, payload dict, signature bytes) of a compact JWS, no checks."""
    h, p, s = token.split(".")
    return json.loads(b64url_decode(h)), json.loads(b64url_decode(p)), b64url_decode(s)


def jws_compact(header, payload, sign=None):
    """Builds a compact JWS from dicts (or bytes, taken as already-serialized
    JSON); sign(signing_input_bytes) -> signature bytes (None: empty)."""
    def enc(v):
        if isinstance(v, (bytes, bytearray)):
            return b64url(bytes(v))
        return b64url(json.dumps(v, separators=(",", ":")).encode())
    signing_input = enc(header) + "." + enc(payload)
    sig = sign(signing_input.encode("ascii")) if sign else b""
    return signing_input + "." + b64url(sig)


def kube_claims(issuer, audiences, namespace="default", sa="default", sa_uid="sa-uid-0001",
                pod=None, node=None, now=None, lifetime=3600, jti="11111111-2222-4333-8444-555555555555"):
    """A bound service-account token payload shaped as kube-apiserver issues
    it (docs/compatibility.md §4). pod/node: (name, uid) tuples or None."""
    now = int(time.time()) if now is None else int(now)
    k8s = {"namespace": namespace}
    if node:
        k8s["node"] = {"name": node[0], "uid": node[1]}
    if pod:
        k8s["pod"] = {"name": pod[0], "uid": pod[1]}
    k8s["serviceaccount"] = {"name": sa, "uid": sa_uid}
    return {"aud": list(audiences), "exp": now + lifetime, "iat": now, "iss": issuer, "jti": jti,
            "kubernetes.io": k8s, "nbf": now, "sub": "system:serviceaccount:%s:%s" % (namespace, sa)}


def mint_token(signing_key, issuer, audiences=(), namespace="default", sa="default", sa_uid="sa-uid-0001",
               pod=None, node=None, duration=None, extra=()):
    """A token from `oidc-discovery token`; returns the compact JWS string."""
    args = ["token", "--signing-key-file", signing_key, "--issuer", issuer,
            "--namespace", namespace, "--service-account", sa, "--service-account-uid", sa_uid]
    for a in audiences:
        args += ["--audience", a]
    if pod:
        args += ["--pod-name", pod[0], "--pod-uid", pod[1]]
    if node:
        args += ["--node-name", node[0], "--node-uid", node[1]]
    if duration:
        args += ["--duration", duration]
    args += list(extra)
    rc, out, err = run_bin(args)
    if rc != 0:
        raise AssertionError("oidc-discovery token failed (%r): %s" % (rc, err))
    token = out.strip()
    if token.count(".") != 2 or "\n" in token:
        raise AssertionError("oidc-discovery token printed %r" % out)
    return token


# --------------------------------------------------------------------------
# TLS: a test CA, server and client certificates

def make_ca(dirpath, name="ca"):
    """A self-signed CA (EC P-256) for one test: returns (cert path, key path)."""
    key = os.path.join(dirpath, name + ".key")
    crt = os.path.join(dirpath, name + ".crt")
    openssl("req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", crt, "-subj", "/CN=oidc-e2e test CA %s" % name, "-days", "2",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return crt, key


def make_server_cert(dirpath, ca, san, name="server", usage="serverAuth"):
    """A server certificate signed by ca (cert, key) for the subjectAltName
    san (e.g. "IP:127.0.0.1" or "DNS:other.example"), with the
    extendedKeyUsage usage ("serverAuth,clientAuth" for an etcd member,
    whose gateway dials its own gRPC port with it): (cert path, key path)."""
    key = os.path.join(dirpath, name + ".key")
    csr = os.path.join(dirpath, name + ".csr")
    crt = os.path.join(dirpath, name + ".crt")
    ext = os.path.join(dirpath, name + ".ext")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", "/CN=oidc-e2e %s" % name)
    with open(ext, "w") as f:
        f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=%s\n" % (san, usage))
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
            "-out", crt, "-days", "1", "-extfile", ext)
    return crt, key


def make_client_cert(dirpath, ca, subject, name="client"):
    """A client certificate (extendedKeyUsage clientAuth) signed by ca
    (cert, key) for subject in openssl's "/O=example/CN=vault" form:
    (cert path, key path)."""
    key = os.path.join(dirpath, name + ".key")
    csr = os.path.join(dirpath, name + ".csr")
    crt = os.path.join(dirpath, name + ".crt")
    ext = os.path.join(dirpath, name + ".ext")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", subject)
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
            "-out", crt, "-days", "1", "-extfile", ext)
    return crt, key


def make_client_cert_x509(dirpath, ca, name, subject=(), san=(), not_after=None):
    """A client certificate signed by ca, built with `cryptography` for what
    `openssl x509 -req` cannot make: a notAfter to the second (not_after, a
    Unix time; default a day from now) and an empty subject. subject is a
    list of (attribute, value) pairs such as [("O", "example"), ("CN",
    "vault")], most general first; san lists DNS names, critical when the
    subject is empty (RFC 5280 4.2.1.6). Needs ensure_pyjwt() (which makes
    `cryptography` importable). Returns (cert path, key path, notAfter)."""
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    utc = datetime.timezone.utc
    now = int(time.time())
    not_after = int(not_after if not_after is not None else now + 86400)
    ca_cert = x509.load_pem_x509_certificate(read_bytes(ca[0]))
    ca_key = serialization.load_pem_private_key(read_bytes(ca[1]), None)
    key = ec.generate_private_key(ec.SECP256R1())
    names = {"CN": NameOID.COMMON_NAME, "O": NameOID.ORGANIZATION_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME}
    b = (x509.CertificateBuilder()
         .subject_name(x509.Name([x509.NameAttribute(names[k], v) for k, v in subject]))
         .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(datetime.datetime.fromtimestamp(now - 60, utc))
         .not_valid_after(datetime.datetime.fromtimestamp(not_after, utc))
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
         .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if san:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(d) for d in san]), critical=not subject)
    cert = b.sign(ca_key, hashes.SHA256())
    crt, keyfile = os.path.join(dirpath, name + ".crt"), os.path.join(dirpath, name + ".key")
    with open(crt, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(keyfile, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return crt, keyfile, not_after


def cert_subject_rfc4514(path):
    """The subject of a PEM certificate as `openssl x509 -nameopt RFC2253`
    prints it: what --token-review-allowed-callers names it by."""
    out = openssl("x509", "-in", path, "-noout", "-subject", "-nameopt", "RFC2253").decode().strip()
    return out.split("=", 1)[1]


TLS_SAN = "IP:127.0.0.1,DNS:localhost"


def cert_der(path) -> bytes:
    return pem_body(read_bytes(path), "CERTIFICATE")


def cert_fingerprint(path) -> str:
    """sha256 hex of the DER of the first certificate in a PEM file."""
    return hashlib.sha256(cert_der(path)).hexdigest()


def cert_not_after(path) -> int:
    """notAfter of a PEM certificate as a Unix time."""
    import ssl
    out = openssl("x509", "-in", path, "-noout", "-enddate").decode().strip()
    return int(ssl.cert_time_to_seconds(out.split("=", 1)[1]))
