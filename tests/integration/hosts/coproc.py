#!/usr/bin/env python3
"""Configurable --host-process co-process for the tests.

usage: coproc.py [--sync GROUP]... [--mode MODE] [--marker FILE] [--big N]

Serves:  echo.f / sync.f (returns its argument array), echo.fail / sync.fail (answers with
{"error": "co-process says no"}), echo.big / sync.big (returns a string of N 'x', default 3000),
echo.slow and sync.slow (answer after 5 s).
MODE:    ok (default) | exit (exits at once, prints nothing) | garbage-first (first line is not
         a declaration) | garbage-mid (declares, then answers the first call with garbage) |
         silent (never declares, sleeps) | die-mid (declares, exits on the first call)
--marker FILE: append one line per request received (to prove what reached the host).
"""
import json
import sys
import threading
import time


def main():
    args = sys.argv[1:]
    sync, mode, marker, big = [], "ok", None, 3000
    while args:
        a = args.pop(0)
        if a == "--sync":
            sync.append(args.pop(0))
        elif a == "--mode":
            mode = args.pop(0)
        elif a == "--marker":
            marker = args.pop(0)
        elif a == "--big":
            big = int(args.pop(0))
    out = sys.stdout
    if mode == "exit":
        return 0
    if mode == "garbage-first":
        out.write("hello, I am not JSON\n")
        out.flush()
        for _ in sys.stdin:
            pass
        return 0
    if mode == "silent":
        time.sleep(30)
        return 0
    fns = ["echo.f", "echo.fail", "echo.big", "echo.slow", "sync.f", "sync.fail", "sync.big", "sync.slow"]
    out.write(json.dumps({"functions": fns, "sync": sync}) + "\n")
    out.flush()
    lock = threading.Lock()

    def answer(obj):
        with lock:
            out.write(json.dumps(obj) + "\n")
            out.flush()

    for line in sys.stdin:
        req = json.loads(line)
        if marker:
            with open(marker, "a") as f:
                f.write(req["function"] + "\n")
        if mode == "garbage-mid":
            with lock:
                out.write("}}} garbage {{{\n")
                out.flush()
            continue
        if mode == "die-mid":
            return 3
        fn = req["function"].split(".", 1)[1]
        if fn == "f":
            answer({"id": req["id"], "result": req["args"]})
        elif fn == "fail":
            answer({"id": req["id"], "error": "co-process says no"})
        elif fn == "big":
            answer({"id": req["id"], "result": "x" * big})
        elif fn == "slow":
            def later(i=req["id"]):
                time.sleep(5)
                answer({"id": i, "result": "slow"})
            threading.Thread(target=later, daemon=True).start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
