"""airlockd (from $AIRLOCKD) on a free port in a fresh directory with the shop connector of
tests/integration/hosts/shop_connector.py, department finance and its people, set up through
airlock.Client itself."""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import airlock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOP = os.path.join(ROOT, "tests", "integration", "hosts", "shop_connector.py")
SECRET = "shop-signing-secret-0123456789"
HANG = 15


class World:
    def __init__(self, tmp):
        airlockd = os.environ.get("AIRLOCKD")
        if not airlockd:
            raise RuntimeError("set AIRLOCKD to the airlockd binary")
        self.shop = subprocess.Popen([sys.executable, SHOP, SECRET], stdout=subprocess.PIPE)
        self.shop_url = "http://127.0.0.1:%d/" % int(self.shop.stdout.readline())
        self.dir = os.path.join(str(tmp), "var")
        self.log_path = os.path.join(str(tmp), "airlockd.log")
        env = dict(os.environ)
        env.pop("AIRLOCK_BOOTSTRAP_KEY", None)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([airlockd, "--listen", "127.0.0.1:0", "--data-dir",
                                      self.dir], stdout=subprocess.DEVNULL, stderr=self.log,
                                     env=env)
        deadline = time.monotonic() + HANG
        port = None
        while port is None:
            with open(self.log_path, "rb") as f:
                m = re.search(rb"^airlockd: listening on http://127\.0\.0\.1:(\d+)$", f.read(),
                              re.M)
            if m:
                port = int(m.group(1))
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("airlockd did not start: %s" % open(self.log_path).read())
            else:
                time.sleep(0.02)
        self.url = "http://127.0.0.1:%d" % port
        with open(os.path.join(self.dir, "admin.key")) as f:
            self.admin = airlock.Client(self.url, f.read().strip())
        self.admin.create_department("finance")
        self.keys = {}
        for name, role in (("alice", "author"), ("bob", "approver"), ("carol", "approver"),
                           ("agent-7", "agent"), ("eve", "auditor")):
            self.keys[name] = self.admin.create_principal(name)["key"]
            self.admin.grant_role(name, role, "finance" if role != "auditor" else "*")
        self.admin.create_connector(
            name="shop", department="finance", url=self.shop_url, signing_secret=SECRET,
            timeout_ms=30000, functions={"orders": {"description": "orders by status"},
                                         "refund": {"sensitive": True}, "fail": {}, "slow": {}})

    def client(self, name):
        return airlock.Client(self.url, self.keys[name])

    def shop_calls(self):
        with urllib.request.urlopen(self.shop_url + "calls", timeout=HANG) as r:
            return json.loads(r.read())

    def close(self):
        for p in (getattr(self, "proc", None), self.shop):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(timeout=HANG)
        if getattr(self, "log", None):
            self.log.close()
