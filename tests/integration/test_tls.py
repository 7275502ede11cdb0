#!/usr/bin/env python3
"""airlockd as an operator runs it (integration.tls):

  - SIGHUP re-reads what can change under a running server and never stops it: each thing
    re-read says so in one line, and the server goes on answering.

usage: test_tls.py --airlockd PATH [-k SUBSTRING]

Every wait is bounded by a deadline many times what it needs (ts.HANG); no verdict depends on
how fast the machine is.
"""
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_server as ts  # noqa: E402
from test_server import Server, check  # noqa: E402

HANG = ts.HANG


def said(s, text, count=1):
    """Waits until airlockd's log holds text count times; the log then."""
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        log = s.stderr()
        if log.count(text) >= count:
            return log
        check(s.proc.poll() is None, "airlockd exited: %s" % log[-2000:])
        time.sleep(0.02)
    raise ts.Fail("airlockd did not log %r within %d s: %s" % (text, HANG, s.stderr()[-2000:]))


def t_sighup_never_stops_the_server(tmp):
    s = Server(os.path.join(tmp, "var"))
    try:
        k = s.admin_key()
        for n in (1, 2):
            s.proc.send_signal(signal.SIGHUP)
            said(s, "airlockd: SIGHUP: ", n)
            st, doc, _ = s.request("GET", "/v1/departments", key=k)
            check(st == 200, "after SIGHUP %d: %d %r" % (n, st, doc))
        check(s.stop() == 0, "airlockd did not stop cleanly on SIGTERM after SIGHUPs")
    finally:
        s.kill()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-tls-", need_cli=False)


if __name__ == "__main__":
    sys.exit(main())
