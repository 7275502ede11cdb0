#!/usr/bin/env python3
"""A compromised worker (test only): it makes call 1 to the first host function and, once it is
answered, sends call 1 again, the way a worker replaying an answered call to have it carried out
twice would. Speaks the frame protocol of docs/protocol.md on fd 3 (fake_worker.py)."""
import fake_worker as w

w.start()
w.call(1, 0, b"[1]")
w.call(1, 0, b"[2]")  # the host ends the run: reading its answer exits
w.done({"value": "the second call was answered"}, 2)
