"""The worker side of the frame protocol (docs/protocol.md) for the tests' compromised workers:
each speaks on fd 3 through these functions instead of running a guest."""
import json
import socket
import struct
import sys

s = socket.socket(fileno=3)

READY, CALL, DONE, ANSWER = 19, 16, 18, 2


def frame(t, body):
    s.sendall(struct.pack("<I", len(body) + 1) + bytes([t]) + body)


def read_frame():
    def exact(n):
        b = b""
        while len(b) < n:
            chunk = s.recv(n - len(b))
            if not chunk:
                sys.exit(1)
            b += chunk
        return b
    n = struct.unpack("<I", exact(4))[0]
    body = exact(n)
    return body[0], body[1:]


def u32(v):
    return struct.pack("<I", v)


def st(b):
    return u32(len(b)) + b


def start():
    """Sends READY (not jailed: the tests run with --unsafe-no-jail) and reads the RUN frame:
    returns the host functions' names, in their index order, and the source."""
    frame(READY, bytes([0]))
    _, run = read_frame()
    # RUN: 12 limits, seed, clock (u64 each), u8 flags, str filename, u32 n,
    # n x (str name, u8), u64 file-arguments cap, str source
    off = 14 * 8 + 1
    off += 4 + struct.unpack_from("<I", run, off)[0]
    n = struct.unpack_from("<I", run, off)[0]
    off += 4
    names = []
    for _ in range(n):
        ln = struct.unpack_from("<I", run, off)[0]
        names.append(run[off + 4:off + 4 + ln].decode())
        off += 4 + ln + 1
    off += 8
    slen = struct.unpack_from("<I", run, off)[0]
    return names, run[off + 4:off + 4 + slen]


def call(cid, fn, args_bytes):
    """Sends CALL cid to function index fn with these argument bytes, as they are, and waits
    for its ANSWER: returns ("value", V) or ("throw", message)."""
    frame(CALL, u32(cid) + u32(fn) + st(args_bytes) + u32(0))  # line 0: not known
    t, body = read_frame()
    while t != ANSWER:  # skip anything but the ANSWER
        t, body = read_frame()
    kind = body[4]
    plen = struct.unpack_from("<I", body, 13)[0]
    payload = body[17:17 + plen].decode()
    if kind == 0:
        return "value", json.loads(payload) if payload else None
    return "throw", payload


def done(value, calls):
    """Ends the run completed with `value` (any JSON-able Python value)."""
    v = json.dumps(value).encode()
    frame(DONE, u32(0) + st(v) + st(b"") + st(b"") + st(b"") + struct.pack("<QQ", 0, 0) +
          u32(calls))
