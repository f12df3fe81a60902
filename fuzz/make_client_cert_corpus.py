#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes fuzz/corpus/fuzz_client_cert/: client certificates (DER) whose
subjects take tls_subject down each of its ways: an empty subject with the
names in a critical subjectAltName (which once crashed the sanitizer
build), an ordinary one, a multi-valued RDN, values that RFC 4514 escapes
(comma, plus, quote, backslash, angle brackets, semicolon, a leading '#'
and space, a trailing space), UTF-8, a control character, an attribute
type OpenSSL has no name for (printed as #hex), and one attribute with an
empty value. Made with Debian's python3-cryptography, self-signed.

    /usr/bin/python3 fuzz/make_client_cert_corpus.py
"""
import datetime
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID, ObjectIdentifier

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_client_cert")
KEY = ec.generate_private_key(ec.SECP256R1())
CN, O, UID = NameOID.COMMON_NAME, NameOID.ORGANIZATION_NAME, NameOID.USER_ID


def rdn(*pairs):
    return x509.RelativeDistinguishedName([x509.NameAttribute(oid, value) for oid, value in pairs])


SUBJECTS = {
    "empty-subject-san": [],
    "plain": [rdn((O, "example")), rdn((CN, "vault"))],
    "multi-valued-rdn": [rdn((O, "example")), rdn((CN, "vault"), (UID, "42"))],
    "escapes": [rdn((CN, '# a,b+c"d\\e<f>g;h '))],
    "utf8": [rdn((O, "Exämple Ünïcode")), rdn((CN, "ヴォールト"))],
    "control": [rdn((CN, "va\x01ult\x7f"))],
    "unknown-type": [rdn((ObjectIdentifier("1.3.6.1.4.1.99999.1"), "opaque"))],
    "empty-value": [rdn((O, ""))],
}


def certificate(rdns):
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    name = x509.Name(rdns)
    b = (x509.CertificateBuilder().subject_name(name).issuer_name(x509.Name([rdn((CN, "fuzz CA"))]))
         .public_key(KEY.public_key()).serial_number(1).not_valid_before(now)
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.SubjectAlternativeName([x509.DNSName("vault.example")]), critical=not rdns))
    return b.sign(KEY, hashes.SHA256()).public_bytes(serialization.Encoding.DER)


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, rdns in SUBJECTS.items():
        with open(os.path.join(OUT, name + ".der"), "wb") as f:
            f.write(certificate(rdns))


if __name__ == "__main__":
    main()
