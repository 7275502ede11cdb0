#!/usr/bin/env python3
"""exec host that interrupts: --host 'g.fn=exec:python3 HOSTS/approve.py LOG'

Appends one JSON line per invocation to LOG: {"function", "args", "resume"} where "resume" is
the parsed AIRLOCK_RESUME (null when unset). Without AIRLOCK_RESUME it interrupts the run: it
prints the payload {"ask": <first argument>} and exits 75. With it, it returns
{"resolution": <the resolution>, "args": <its arguments>}.
"""
import json
import os
import sys


def main():
    args = json.loads(sys.stdin.read() or "[]")
    raw = os.environ.get("AIRLOCK_RESUME")
    resume = json.loads(raw) if raw is not None else None
    with open(sys.argv[1], "a") as f:
        f.write(json.dumps({"function": os.environ.get("AIRLOCK_FUNCTION"), "args": args,
                            "resume": resume}) + "\n")
    if resume is None:
        sys.stdout.write(json.dumps({"ask": args[0] if args else None}))
        return 75
    sys.stdout.write(json.dumps({"resolution": resume["resolution"], "args": args}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
