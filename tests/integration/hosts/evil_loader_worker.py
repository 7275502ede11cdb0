#!/usr/bin/env python3
"""A compromised worker (test only): instead of running the guest, it calls the module loader's
hidden load function directly with names resolve would refuse (NAMES), and returns what the
host answered to each as the run's value. The host must refuse them: load re-checks every name
itself. Speaks the frame protocol of docs/protocol.md on fd 3 (fake_worker.py)."""
import json

import fake_worker as w

NAMES = ["/outside.mjs", "/../secret.txt", "/inside.mjs"]

names, _ = w.start()
load = names.index("#modules.load")
answers = [list(w.call(cid, load, json.dumps([name]).encode())) for cid, name in enumerate(NAMES, 1)]
w.done(answers, len(NAMES))
