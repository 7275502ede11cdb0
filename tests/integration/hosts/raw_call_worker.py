#!/usr/bin/env python3
"""A compromised worker (test only): instead of running the guest, it sends the run's source
text, byte for byte, as the argument array of one CALL to the first host function, then ends
the run with what the host answered as its value ({"value": V} or {"throw": message}). So a
test chooses exactly the bytes a hostile worker puts on the wire (valid JSON, any whitespace).
Speaks the frame protocol of docs/protocol.md on fd 3 (fake_worker.py)."""
import fake_worker as w

_, source = w.start()
kind, payload = w.call(1, 0, source)
w.done({"value": payload} if kind == "value" else {"throw": payload}, 1)
