#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes fuzz/corpus/fuzz_extsigner/: what a client sends to the external
signer after the HTTP/2 connection preface (the target sends the preface
itself), made with Debian's python3-h2 as the client. Each seed is one
conversation: calls of every method and API version, and the requests the
transport refuses (405, 415, unknown method, compressed or badly framed
message, expired and malformed grpc-timeout, a request too large in two
DATA frames), plus PING, WINDOW_UPDATE, RST_STREAM and trailers from the
client.

    /usr/bin/python3 fuzz/make_extsigner_corpus.py
"""
import base64
import os

import h2.config
import h2.connection

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_extsigner")
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY = b"\x00\x00\x00\x00\x00"


def framed(message, flag=0):
    return bytes([flag]) + len(message).to_bytes(4, "big") + message


def sign_request(claims):
    # SignJWTRequest { string claims = 1; } (fewer than 128 bytes here)
    return b"\x0a" + bytes([len(claims)]) + claims


CLAIMS = base64.urlsafe_b64encode(b'{"iss":"https://fuzz.example","sub":"system:serviceaccount:ns:sa"}').rstrip(b"=")


def conversation(*calls, extra=None):
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    c.initiate_connection()
    for path, body, headers in calls:
        sid = c.get_next_available_stream_id()
        hdrs = [(b":method", b"POST"), (b":scheme", b"http"), (b":path", path), (b":authority", b"localhost"),
                (b"content-type", b"application/grpc"), (b"te", b"trailers")]
        given = dict(headers)
        hdrs = [(n, given.pop(n, v)) for n, v in hdrs] + list(given.items())
        c.send_headers(sid, hdrs, end_stream=body is None)
        for i, chunk in enumerate(body or []):
            c.send_data(sid, chunk, end_stream=i == len(body) - 1)
        if extra:
            extra(c, sid)
    data = c.data_to_send()
    assert data.startswith(PREFACE)
    return data[len(PREFACE):]


def call(method, body, headers=(), api=b"v1alpha1"):
    return (b"/" + api + b".ExternalJWTSigner/" + method, body, headers)


SEEDS = {
    "metadata": conversation(call(b"Metadata", [EMPTY])),
    "fetch-keys-v1": conversation(call(b"FetchKeys", [EMPTY], api=b"v1")),
    "sign": conversation(call(b"Sign", [framed(sign_request(CLAIMS))])),
    "sign-split-and-timeout": conversation(call(b"Sign", [framed(sign_request(CLAIMS))[:7],
                                                          framed(sign_request(CLAIMS))[7:]],
                                                [(b"grpc-timeout", b"5S")])),
    "sign-bad-claims": conversation(call(b"Sign", [framed(sign_request(b"abc="))], api=b"v1")),
    "three-calls": conversation(call(b"Metadata", [EMPTY]), call(b"Sign", [framed(sign_request(CLAIMS))]),
                                call(b"FetchKeys", [EMPTY])),
    "unknown-method": conversation(call(b"Verify", [EMPTY])),
    "get": conversation((b"/v1alpha1.ExternalJWTSigner/Metadata", None, [(b":method", b"GET")])),
    "json": conversation(call(b"Metadata", [EMPTY], [(b"content-type", b"application/json")])),
    "expired": conversation(call(b"Metadata", [EMPTY], [(b"grpc-timeout", b"0n")])),
    "bad-timeout": conversation(call(b"Metadata", [EMPTY], [(b"grpc-timeout", b"12x")])),
    "compressed": conversation(call(b"Metadata", [framed(b"", flag=1)], [(b"grpc-encoding", b"gzip")])),
    "bad-frame": conversation(call(b"Metadata", [b"\x00\x00\x00\x00\x09abc"])),
    "two-messages": conversation(call(b"Metadata", [EMPTY + EMPTY])),
    "too-large": conversation(call(b"Sign", [framed(sign_request(b"x" * 100)) + b"y" * 700, b"z" * 600])),
    "ping-window-reset": conversation(call(b"Metadata", [EMPTY]), extra=lambda c, sid: (
        c.ping(b"12345678"), c.increment_flow_control_window(1000), c.reset_stream(sid))),
}


def trailers_seed():
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    c.initiate_connection()
    c.send_headers(1, [(b":method", b"POST"), (b":scheme", b"http"), (b":path", b"/v1.ExternalJWTSigner/Metadata"),
                       (b":authority", b"localhost"), (b"content-type", b"application/grpc+proto")])
    c.send_data(1, EMPTY)
    c.send_headers(1, [(b"x-trailer", b"1")], end_stream=True)
    return c.data_to_send()[len(PREFACE):]


SEEDS["client-trailers"] = trailers_seed()

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print("%d seeds in %s" % (len(SEEDS), OUT))
