#!/usr/bin/env python3
"""--host-process co-process that interrupts, for the interrupt-and-resume tests.

usage: interrupt_coproc.py LOG [--sync GROUP]...

Serves echo.f (returns its argument array), ask.approve and sync.approve. Appends every request
line it receives, as received, to LOG. ask.approve / sync.approve without a "resume" member
answer {"id":N,"interrupt":{"ask":<first argument>}}; with one they return
{"resolution": <resume.resolution>, "args": <arguments>}.
"""
import json
import sys


def main():
    log, sync = sys.argv[1], []
    rest = sys.argv[2:]
    while rest:
        a = rest.pop(0)
        if a == "--sync":
            sync.append(rest.pop(0))
    out = sys.stdout
    out.write(json.dumps({"functions": ["echo.f", "ask.approve", "sync.approve"],
                          "sync": sync}) + "\n")
    out.flush()
    for line in sys.stdin:
        with open(log, "a") as f:
            f.write(line if line.endswith("\n") else line + "\n")
        req = json.loads(line)
        fn = req["function"].split(".", 1)[1]
        if fn == "f":
            ans = {"id": req["id"], "result": req["args"]}
        elif "resume" in req:
            ans = {"id": req["id"], "result": {"resolution": req["resume"]["resolution"],
                                               "args": req["args"]}}
        else:
            ans = {"id": req["id"], "interrupt": {"ask": req["args"][0] if req["args"] else None}}
        out.write(json.dumps(ans) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
