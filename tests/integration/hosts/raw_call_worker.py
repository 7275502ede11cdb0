#!/usr/bin/env python3
"""A compromised worker (test only): instead of running the guest, it sends the run's source
text, byte for byte, as the argument array of one CALL to the first host function, then ends
the run with what the host answered as its value ({"value": V} or {"throw": message}). So a
test chooses exactly the bytes a hostile worker puts on the wire (valid JSON, any whitespace).
Speaks the frame protocol of docs/protocol.md on fd 3."""
import json
import socket
import struct
import sys

s = socket.socket(fileno=3)


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


frame(19, bytes([0]))  # READY (not jailed: the test runs with --unsafe-no-jail)
t, run = read_frame()
# RUN: 12 limits, seed, clock (u64 each), u8 flags, str filename, u32 n, n x (str name, u8),
# str source
off = 14 * 8 + 1
flen = struct.unpack_from("<I", run, off)[0]
off += 4 + flen
n = struct.unpack_from("<I", run, off)[0]
off += 4
for i in range(n):
    ln = struct.unpack_from("<I", run, off)[0]
    off += 4 + ln + 1
slen = struct.unpack_from("<I", run, off)[0]
source = run[off + 4:off + 4 + slen]
frame(16, u32(1) + u32(0) + st(source))  # CALL 1 to function 0 with the source as arguments
t, body = read_frame()
while t != 2:  # skip anything but the ANSWER
    t, body = read_frame()
kind = body[4]
plen = struct.unpack_from("<I", body, 13)[0]
payload = body[17:17 + plen].decode()
answer = {"value": json.loads(payload) if payload else None} if kind == 0 else {"throw": payload}
value = json.dumps(answer).encode()
frame(18, u32(0) + st(value) + st(b"") + st(b"") + st(b"") + struct.pack("<QQ", 0, 0) + u32(1))
