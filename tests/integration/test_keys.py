#!/usr/bin/env python3
"""airlockd's own keys and backups (docs/operations.md "Key rotation", "Backup and restore"):
`airlockd keys rotate continuation|audit|secret` on a stopped data directory, and
`airlockd backup` of a running one restored in another directory.

A running airlockd takes keys rotated elsewhere on SIGHUP: a key staged first (`--prepare`) is
taken by every node before the rotation that puts it in use, so a cluster rotates its keys one
node at a time while it serves.

usage: test_keys.py --airlockd PATH --cli PATH [-k SUBSTRING]

Each test makes a run wait for a person (the shop's sensitive refund) before the keys change or
the copy is taken, and decides it afterwards: the continuation it waits with was signed, and the
connector secret it calls with (and a webhook's signing secret) was sealed, under the keys of
before.
"""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
import test_webhooks as twh  # noqa: E402
from test_server import Fail, check, db_rows  # noqa: E402

HOOK_SECRET = "the-webhook-secret-of-before"


def airlockd(*args, env=None):
    e = dict(os.environ)
    for k in ("AIRLOCK_CONTINUATION_KEY", "AIRLOCK_AUDIT_KEY", "AIRLOCK_SECRET_KEY"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run([ts.AIRLOCKD] + list(args), capture_output=True, text=True, env=e,
                       timeout=ts.HANG * 4)
    return p.returncode, p.stdout, p.stderr


def rotate(w, what, want=0):
    args = ["keys", "rotate", what, "--data-dir", w.dir]
    if ts.PG:
        args += ["--database", ts.pg_url(w.dir)]
    rc, out, err = airlockd(*args)
    check(rc == want, "keys rotate %s: exit %d, want %d: %s %s" % (what, rc, want, out, err))
    return out + err


def key_lines(d, name):
    with open(os.path.join(d, name)) as f:
        return f.read().split()


def waiting_refund(w, amount):
    """A run of the template `refund` waiting for its approval: (run id, approval id)."""
    st, doc = w.run({"template": "refund", "input": {"amount": amount}}, want=202)
    check(doc["status"] == "awaiting_approval" and len(doc["approvals"]) == 1, "%r" % doc)
    return doc["id"], doc["approvals"][0]


def approve_completes(w, run_id, apr, amount):
    w.ok("POST", "/v1/approvals/%s/approve" % apr, {"comment": "yes"}, w.keys["bob"])
    doc = w.until(run_id, ("completed", "failed", "cancelled"))
    check(doc["status"] == "completed" and doc["value"] == {
        "first": "o-1", "refund": {"refunded": "o-1", "amount": amount}}, "resumed: %r" % doc)


def verifies(w):
    v = w.ok("GET", "/v1/audit/verify", None, w.admin)
    check(v["ok"], "the audit log does not verify: %r" % v)


def restart(w, data_dir=None):
    w.s.stop()
    w.s = ts.Server(data_dir or w.dir)
    check(w.s.port, "airlockd did not start: " + w.s.stderr())


def public_key(w):
    m = re.findall(r"^airlockd: audit public key ([0-9a-f]{64})$", w.s.stderr(), re.M)
    check(m, "no public key printed: " + w.s.stderr())
    return m[-1]


def export_verify(w, *args):
    """`airlock audit export | airlock audit verify - --json ARGS`: (exit status, its JSON)."""
    env = dict(os.environ, AIRLOCK_URL="http://127.0.0.1:%d" % w.s.port, AIRLOCK_KEY=w.admin)
    exp = subprocess.run([ts.CLI, "audit", "export"], capture_output=True, env=env,
                         timeout=ts.HANG * 4)
    check(exp.returncode == 0, "audit export: %r" % exp.stderr)
    ver = subprocess.run([ts.CLI, "audit", "verify", "-", "--json"] + list(args),
                         input=exp.stdout, capture_output=True, timeout=ts.HANG * 4)
    return ver.returncode, json.loads(ver.stdout or b"null")


def t_rotate_refused_while_airlockd_runs(tmp):
    """The data directory of a running airlockd is locked: a rotation is refused, nothing
    changes, and a second airlockd on the same directory does not start."""
    w = tr.World(tmp)
    try:
        before = {n: key_lines(w.dir, n) for n in ("continuation.key", "secret.key", "audit.key")}
        for what in ("continuation", "audit", "secret"):
            out = rotate(w, what, want=1)
            check("in use by a running airlockd" in out, "refusal: %r" % out)
        check(before == {n: key_lines(w.dir, n) for n in before}, "a key changed")
        check(not [n for n in os.listdir(w.dir) if n.endswith(".next")], "a next key was left")
        if not ts.PG:
            other = ts.Server(w.dir, args=["--listen", "127.0.0.1:0", "--data-dir", w.dir])
            check(other.proc.wait(timeout=ts.HANG) != 0 and
                  "another process holds the data directory" in other.stderr(),
                  "a second airlockd on one data directory: %s" % other.stderr())
        _, out, err = airlockd("keys", "rotate", "everything", "--data-dir", w.dir)
        check("continuation, audit or secret" in err, err)
        rc, out, err = airlockd("keys", "rotate", "secret", "--data-dir", w.dir,
                                env={"AIRLOCK_SECRET_KEY": "ab" * 32})
        check(rc == 2 and "AIRLOCK_SECRET_KEY" in err, "%d %s" % (rc, err))
    finally:
        w.close()


def t_rotate_every_key_waiting_runs_resume_and_the_audit_follows_the_chain(tmp):
    """Runs waiting with continuations of the old key, a connector secret and a webhook's
    signing secret sealed under the old secret key, checkpoints signed with the old audit key;
    airlockd stopped, the three keys rotated, started again: the waiting runs resume and call the
    connector, the webhook's events are still signed with its secret, new runs wait and resume
    under the new keys, /v1/audit/verify and `airlock audit verify` follow the chain of audit
    keys from the old public key to the new one."""
    w = tr.World(tmp)
    receiver = twh.Receiver()
    try:
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        w.ok("POST", "/v1/webhooks", {"url": receiver.url + "/ok", "events": ["approval.decided"],
                                      "department": "finance", "signing_secret": HOOK_SECRET},
             w.admin, 201)
        old_pub = public_key(w)
        first = waiting_refund(w, 3)
        second = waiting_refund(w, 4)
        sealed = db_rows(w.dir, "SELECT signing_secret, headers FROM connectors")
        hook_sealed = db_rows(w.dir, "SELECT secret FROM webhooks")
        cont = key_lines(w.dir, "continuation.key")
        w.s.stop()
        out = rotate(w, "continuation")
        check("1 older key still verifies" in out, out)
        check(key_lines(w.dir, "continuation.key")[1:] == cont, "the old key is not kept")
        out = rotate(w, "secret")
        # the shop's secret and headers, the webhook's secret
        check("3 sealed values sealed again" in out, out)
        check(db_rows(w.dir, "SELECT signing_secret, headers FROM connectors") != sealed,
              "the connector's secrets were not sealed again")
        check(db_rows(w.dir, "SELECT secret FROM webhooks") != hook_sealed,
              "the webhook's secret was not sealed again")
        out = rotate(w, "audit")
        check("announced in the log" in out and old_pub in out, out)
        restart(w)
        new_pub = public_key(w)
        check(new_pub != old_pub, "the audit key did not change")
        verifies(w)
        approve_completes(w, first[0], first[1], 3)
        # the webhook made before the rotation still signs with the secret it was given
        receiver.until("/ok", lambda g: first[1] in [e["data"]["approval"] for e in g],
                       "the first approval's decision")
        for headers, body in receiver.posts("/ok"):
            check(twh.signed(headers, body, HOOK_SECRET),
                  "a decision after the rotation is not signed with the webhook's secret")
        third = waiting_refund(w, 5)
        approve_completes(w, third[0], third[1], 5)
        # a second rotation of the continuation key: both older keys still verify
        w.s.stop()
        out = rotate(w, "continuation")
        check("2 older keys still verify" in out, out)
        restart(w)
        approve_completes(w, second[0], second[1], 4)
        verifies(w)
        rc, doc = export_verify(w, "--public-key", old_pub)
        check(rc == 0 and doc["ok"] and doc["keys"] == 2 and doc["public_key"] == new_pub,
              "verify from the old key: %r" % doc)
        # the chain starts at the old key: the new one pinned alone is not where it starts
        rc, doc = export_verify(w, "--public-key", new_pub)
        check(rc == 1 and doc["fault"] == "checkpoint key not the expected key", "%r" % doc)
        # the announcement in the log, signed with the old key
        ann = [r for r in ts.audit_rows(w.dir, "audit.checkpoint")
               if "next_public_key" in r["details"]]
        check(len(ann) == 1 and ann[0]["details"]["public_key"] == old_pub and
              ann[0]["details"]["next_public_key"] == new_pub, "announcement: %r" % ann)
    finally:
        receiver.stop()
        w.close()


def export_lines(w):
    env = dict(os.environ, AIRLOCK_URL="http://127.0.0.1:%d" % w.s.port, AIRLOCK_KEY=w.admin)
    exp = subprocess.run([ts.CLI, "audit", "export"], capture_output=True, env=env,
                         timeout=ts.HANG * 4)
    check(exp.returncode == 0, "audit export: %r" % exp.stderr)
    return [json.loads(line) for line in exp.stdout.decode().splitlines()]


def verify_records(tmp, recs, *args):
    path = os.path.join(tmp, "export-%d.jsonl" % len(os.listdir(tmp)))
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n")
    p = subprocess.run([ts.CLI, "audit", "verify", path, "--json"] + list(args),
                       capture_output=True, timeout=ts.HANG * 4)
    return p.returncode, json.loads(p.stdout or b"null")


def rehash(rec):
    """rec's hash made again over its content (RFC 8785 for these plain records)."""
    import hashlib
    body = {k: v for k, v in rec.items() if k != "hash"}
    canon = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    rec["hash"] = hashlib.sha256((rec["prev"] + canon).encode()).hexdigest()


def t_key_not_announced_by_the_key_before_fails_verification(tmp):
    """An announcement whose signature is not the old key's (altered, or naming another next
    key) fails `airlock audit verify`; a checkpoint signed with a key nothing announced (an
    audit.key swapped in by hand) fails it as well as airlockd's own /v1/audit/verify."""
    w = tr.World(tmp)
    try:
        old_pub = public_key(w)
        w.s.stop()
        rotate(w, "audit")
        restart(w)
        recs = export_lines(w)
        (i,) = [k for k, r in enumerate(recs) if "next_public_key" in r["details"]]
        rc, doc = verify_records(tmp, recs, "--public-key", old_pub)
        check(rc == 0 and doc["ok"], "the export as it is: %r" % doc)
        for member, value in (("signature", None), ("next_public_key", "ab" * 32)):
            bad = [dict(r) for r in recs[:i + 1]]
            d = dict(bad[i]["details"])
            d[member] = value or (("1" if d[member][0] == "0" else "0") + d[member][1:])
            bad[i]["details"] = d
            rehash(bad[i])
            rc, doc = verify_records(tmp, bad, "--public-key", old_pub, "--allow-unsealed")
            check(rc == 1 and doc["fault"] == "bad checkpoint signature" and
                  doc["seq"] == recs[i]["seq"], "%s altered: %r" % (member, doc))
        # a key nobody announced signs the next seal
        w.s.stop()
        with open(os.path.join(w.dir, "audit.key"), "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        restart(w)
        w.ok("POST", "/v1/departments", {"name": "sales"}, w.admin, 201)  # a record to seal
        recs = export_lines(w)
        rc, doc = verify_records(tmp, recs, "--public-key", old_pub)
        check(rc == 1 and doc["fault"] == "checkpoint key not the expected key" and
              doc["seq"] == recs[-1]["seq"], "unannounced key: %r" % doc)
        v = w.ok("GET", "/v1/audit/verify", None, w.admin)
        check(not v["ok"] and "key" in v["reason"], "airlockd's verify: %r" % v)
    finally:
        w.close()


def t_two_nodes_rotate_every_key(tmp):
    """PostgreSQL, two nodes with data directories of their own on one database: both stopped,
    the keys rotated once against the database from node A's directory, the key files copied to
    node B's, both started: a run that waited under the old keys is approved on B and completes,
    a new one waits on A and completes on B, both nodes' audit verifies."""
    if not ts.PG:
        print("     (PostgreSQL only: nodes share a database)")
        return
    w = tr.World(tmp)
    dir_b = os.path.join(tmp, "var-b")
    ts.PG_DATABASES[os.path.abspath(dir_b)] = ts.pg_url(w.dir)
    os.makedirs(dir_b, mode=0o700)
    names = ("continuation.key", "audit.key", "secret.key")
    b = None
    try:
        for name in names:
            shutil.copy2(os.path.join(w.dir, name), os.path.join(dir_b, name))
        b = ts.Server(dir_b)
        check(b.port, "node B did not start: " + b.stderr())
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        run_id, apr = waiting_refund(w, 6)
        old_pub = public_key(w)
        b.stop()
        w.s.stop()
        for what in ("continuation", "audit", "secret"):
            rotate(w, what)
        for name in names:
            shutil.copy2(os.path.join(w.dir, name), os.path.join(dir_b, name))
        w.s = ts.Server(w.dir)
        b = ts.Server(dir_b)
        check(w.s.port and b.port, "a node did not start: %s %s" % (w.s.stderr(), b.stderr()))
        node_a = w.s
        w.s = b
        approve_completes(w, run_id, apr, 6)
        w.s = node_a
        run2, apr2 = waiting_refund(w, 8)
        w.s = b
        approve_completes(w, run2, apr2, 8)
        for node in (node_a, b):
            w.s = node
            verifies(w)
        w.s = node_a
        rc, doc = export_verify(w, "--public-key", old_pub)
        check(rc == 0 and doc["keys"] == 2 and doc["public_key"] != old_pub, "%r" % doc)
    finally:
        if b:
            b.kill()
        w.close()


def t_backup_of_a_running_server_restores_elsewhere(tmp):
    """A run waiting for approval, `airlockd backup` while airlockd runs (and writes: another
    run completes meanwhile), the server stopped, a new airlockd on a copy of the backup in
    another directory: its audit verifies and the waiting run, approved there, completes."""
    if ts.PG:
        print("     (not run on PostgreSQL: pg_dump backs it up)")
        return
    w = tr.World(tmp)
    dest = os.path.join(tmp, "backup")
    try:
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        run_id, apr = waiting_refund(w, 9)
        rc, out, err = airlockd("backup", "--data-dir", w.dir, dest)
        check(rc == 0, "backup: %d %s %s" % (rc, out, err))
        for name in ("airlock.db", "admin.key", "audit.key", "secret.key", "continuation.key"):
            path = os.path.join(dest, name)
            check(os.path.exists(path) and os.stat(path).st_mode & 0o077 == 0,
                  "%s missing or readable by others" % name)
        rc, out, err = airlockd("backup", "--data-dir", w.dir, dest)
        check(rc == 1 and "new directory" in err, "a backup over another: %d %s" % (rc, err))
        w.s.stop()
        # "another machine": the copy moved to a directory of its own
        restored = os.path.join(tmp, "restored", "var")
        shutil.copytree(dest, restored)
        w.s = ts.Server(restored)
        check(w.s.port, "airlockd did not start on the restored copy: " + w.s.stderr())
        check("chain is broken" not in w.s.stderr() and "cut" not in w.s.stderr(),
              w.s.stderr())
        verifies(w)
        approve_completes(w, run_id, apr, 9)
        verifies(w)
        rc, out, err = airlockd("backup", "--data-dir", restored, os.path.join(tmp, "b2"),
                                "--database", "postgres://x/y")
        check(rc == 2 and "pg_dump" in err, "backup with --database: %d %s" % (rc, err))
    finally:
        w.close()


def key_id(hex_key):
    """The id airlockd's log names a key by (keys.h)."""
    return hashlib.sha256(b"airlock-key-id\n" + bytes.fromhex(hex_key)).hexdigest()[:8]


def reload(server, line, count=1):
    """SIGHUP, then airlockd's log until it holds `line` `count` times."""
    server.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + ts.HANG
    while time.monotonic() < deadline:
        log = server.stderr()
        if log.count(line) >= count:
            return log
        check(server.proc.poll() is None, "airlockd exited: %s" % log[-2000:])
        time.sleep(0.02)
    raise Fail("airlockd did not log %r: %s" % (line, server.stderr()[-3000:]))


def write_key(d, name, hex_key):
    with open(os.path.join(d, name), "w") as f:
        f.write(hex_key + "\n")


def copy_keys(src, dest, names):
    for name in names:
        shutil.copy2(os.path.join(src, name), os.path.join(dest, name))


def scratch_rotate(scratch, what, database=None, prepare=False, want=0):
    args = ["keys", "rotate", what, "--data-dir", scratch]
    args += ["--database", database] if database else []
    args += ["--prepare"] if prepare else []
    rc, out, err = airlockd(*args)
    check(rc == want, "keys rotate %s: exit %d, want %d: %s %s" % (what, rc, want, out, err))
    return out + err


def t_sighup_takes_a_continuation_key_rotated_on_a_copy(tmp):
    """The continuation key rotated on a copy of the key file while airlockd serves, the file
    copied back and SIGHUP sent: a run that waited under the old key resumes, a run that waits
    after the reload is signed with the new key (it resumes after a restart with the new key
    alone), and a key file that does not parse on SIGHUP leaves the keys in use."""
    w = tr.World(tmp)
    scratch = os.path.join(tmp, "rotation")
    os.makedirs(scratch, mode=0o700)
    try:
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        before = waiting_refund(w, 3)
        old = key_lines(w.dir, "continuation.key")
        copy_keys(w.dir, scratch, ["continuation.key"])
        scratch_rotate(scratch, "continuation")
        copy_keys(scratch, w.dir, ["continuation.key"])
        new = key_lines(w.dir, "continuation.key")
        check(new[1:] == old and new[0] != old[0], "rotated file: %r" % new)
        reload(w.s, "airlockd: SIGHUP: continuation key re-read: key %s, 1 older key verifies" %
               key_id(new[0]))
        approve_completes(w, before[0], before[1], 3)
        after = waiting_refund(w, 4)
        # a key file that is not a key: the keys in use stay, and say why
        write_key(w.dir, "continuation.key", "not a key")
        reload(w.s, "airlockd: SIGHUP: continuation key not re-read, the one in use stays")
        probe = waiting_refund(w, 6)
        # the new key alone: what waited after the reload was signed with it
        write_key(w.dir, "continuation.key", new[0])
        restart(w)
        approve_completes(w, after[0], after[1], 4)
        approve_completes(w, probe[0], probe[1], 6)
        verifies(w)
    finally:
        w.close()


def t_two_nodes_rotate_every_key_while_they_serve(tmp):
    """PostgreSQL, two nodes serving throughout. Each key is staged on a copy of the key files
    (--prepare), the staged keys copied to both nodes and SIGHUP sent; the keys rotated against
    the database from the copy; the rotated files given to node A alone and A reloaded. With the
    cluster mixed, a run waiting under A's new continuation key resumes on B, which opens the
    connector secret sealed again under the new secret key and signs the log's seal with the
    staged audit key (its own is the old one); a run that waited under the old keys resumes on A.
    A node holding neither the log's new audit key nor its staged copy signs nothing: its export
    is refused and the log still verifies. B given the rotated files and reloaded: the chain of
    keys verifies from the old public key."""
    if not ts.PG:
        print("     (PostgreSQL only: nodes share a database)")
        return
    w = tr.World(tmp)
    dir_b = os.path.join(tmp, "var-b")
    scratch = os.path.join(tmp, "rotation")
    ts.PG_DATABASES[os.path.abspath(dir_b)] = ts.pg_url(w.dir)
    os.makedirs(dir_b, mode=0o700)
    os.makedirs(scratch, mode=0o700)
    url = ts.pg_url(w.dir)
    names = ("continuation.key", "audit.key", "secret.key")
    staged = tuple(n + ".next" for n in names)
    node_a = w.s
    b = None
    try:
        copy_keys(w.dir, dir_b, names)
        b = ts.Server(dir_b)
        check(b.port, "node B did not start: " + b.stderr())
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        old_run = waiting_refund(w, 6)
        old_pub = public_key(w)
        sealed = db_rows(w.dir, "SELECT signing_secret, headers FROM connectors")
        # 1. stage every key on a copy of the key files; both nodes take the staged keys
        copy_keys(w.dir, scratch, names)
        for what in ("continuation", "audit", "secret"):
            out = scratch_rotate(scratch, what, prepare=True)
            check("staged" in out and "SIGHUP" in out, out)
        check(db_rows(w.dir, "SELECT signing_secret, headers FROM connectors") == sealed,
              "--prepare changed the database")
        check(key_lines(scratch, "continuation.key") == key_lines(w.dir, "continuation.key"),
              "--prepare changed the key in use")
        next_cont = key_lines(scratch, "continuation.key.next")[0]
        for node, d in ((node_a, w.dir), (b, dir_b)):
            copy_keys(scratch, d, staged)
            reload(node, "next key %s staged" % key_id(next_cont))
            check("secret key re-read" in node.stderr() and "audit key re-read" in
                  node.stderr(), node.stderr()[-2000:])
        # 2. the rotations, against the database, from the copy
        for what in ("continuation", "audit", "secret"):
            out = scratch_rotate(scratch, what, database=url)
            check("taking up" in out, out)
        check(db_rows(w.dir, "SELECT signing_secret, headers FROM connectors") != sealed,
              "the connector's secrets were not sealed again")
        check(len(key_lines(scratch, "secret.key")) == 2, "the old secret key is not kept")
        # 3. node A takes the rotated files; B still holds the old keys and the staged ones
        copy_keys(scratch, w.dir, names)
        for name in staged:
            os.remove(os.path.join(w.dir, name))
        reload(node_a, "continuation key re-read: key %s, 1 older key verifies" % key_id(next_cont))
        w.s = node_a
        new_run = waiting_refund(w, 7)  # its continuation signed with the new key, on A
        w.s = b
        approve_completes(w, new_run[0], new_run[1], 7)  # B verifies it, opens the secret
        rc, doc = export_verify(w, "--public-key", old_pub)  # B seals with the staged key
        check(rc == 0 and doc["ok"] and doc["keys"] == 2, "verify after B's seal: %r" % doc)
        w.s = node_a
        approve_completes(w, old_run[0], old_run[1], 6)
        # 4. a node with neither the log's key nor its staged copy signs nothing
        for name in staged:
            os.remove(os.path.join(dir_b, name))
        reload(b, "audit key re-read: public key %s" % old_pub, count=2)
        w.s = b
        for path in ("/v1/audit/export", "/v1/audit/verify"):
            st, doc, _ = b.request("GET", path, None, key=w.admin)
            check(st == 500 and "which this server does not hold" in doc["error"]["message"],
                  "%s on a node on the old audit key: %d %r" % (path, st, doc))
        w.s = node_a
        verifies(w)
        w.s = b
        # 5. B takes the rotated files: the whole cluster is on the new keys
        copy_keys(scratch, dir_b, names)
        reload(b, "continuation key re-read: key %s, 1 older key verifies" % key_id(next_cont), count=1)
        run3 = waiting_refund(w, 8)
        w.s = node_a
        approve_completes(w, run3[0], run3[1], 8)
        for node in (node_a, b):
            w.s = node
            verifies(w)
            rc, doc = export_verify(w, "--public-key", old_pub)
            check(rc == 0 and doc["ok"] and doc["keys"] == 2 and doc["public_key"] != old_pub,
                  "verify from the old key: %r" % doc)
    finally:
        w.s = node_a
        if b:
            b.kill()
        w.close()


def audit_rotated_behind(w):
    """airlockd stopped, its audit key rotated, and the key before put back in audit.key (a node
    not given the rotated file): (the old public key, the new key)."""
    old_pub = public_key(w)
    old_seed = key_lines(w.dir, "audit.key")[0]
    w.s.stop()
    rotate(w, "audit")
    new_seed = key_lines(w.dir, "audit.key")[0]
    write_key(w.dir, "audit.key", old_seed)
    return old_pub, new_seed


def announcements(w):
    return [r for r in ts.audit_rows(w.dir, "audit.checkpoint") if "next_public_key" in r["details"]]


def t_a_rotation_run_again_announces_once(tmp):
    """A rotation of the audit key cut short after its transaction (audit.key still the old key,
    audit.key.next the new one) and records appended meanwhile by an airlockd started on it: run
    again, it takes up the staged key and announces nothing twice; the log verifies from the
    old key. A NAME.next that is the key in use already (a finished rotation's leftover) is
    removed and a new key made: no key twice in a file, no announcement of a key to itself."""
    w = tr.World(tmp)
    try:
        old_pub, new_seed = audit_rotated_behind(w)
        # with the new key staged: the state a crash between the commit and the file's
        # replacement leaves
        write_key(w.dir, "audit.key.next", new_seed)
        restart(w)
        w.ok("POST", "/v1/departments", {"name": "sales"}, w.admin, 201)  # records after it
        verifies(w)
        w.s.stop()
        out = rotate(w, "audit")
        check("taking up" in out and "announced in the log" not in out, out)
        check(key_lines(w.dir, "audit.key") == [new_seed], "audit.key: %r" % key_lines(
            w.dir, "audit.key"))
        check(len(announcements(w)) == 1, "announced twice: %r" % announcements(w))
        restart(w)
        verifies(w)
        rc, doc = export_verify(w, "--public-key", old_pub)
        check(rc == 0 and doc["keys"] == 2, "%r" % doc)
        # a leftover NAME.next equal to the key in use
        w.s.stop()
        for name in ("audit.key", "continuation.key"):
            shutil.copy2(os.path.join(w.dir, name), os.path.join(w.dir, name + ".next"))
        cont = key_lines(w.dir, "continuation.key")
        out = rotate(w, "continuation")
        check("was a key in use already" in out, out)
        lines = key_lines(w.dir, "continuation.key")
        check(len(lines) == len(cont) + 1 and lines[1:] == cont and lines[0] not in cont,
              "continuation.key after a leftover: %r" % lines)
        out = rotate(w, "audit")
        check("was a key in use already" in out and "announced in the log" in out, out)
        check(len(announcements(w)) == 2, "%r" % announcements(w))
        restart(w)
        verifies(w)
        rc, doc = export_verify(w, "--public-key", old_pub)
        check(rc == 0 and doc["keys"] == 3, "%r" % doc)
    finally:
        w.close()


def t_a_node_behind_on_the_audit_key_serves_signs_nothing_and_catches_up(tmp):
    """airlockd started with the audit key the log has announced a successor of (a node not yet
    given the rotated audit.key, no key staged; a rotation from its directory is refused): it
    starts and says why it signs nothing; its
    export and verify answer 500 naming the log's key, a run still completes, and nothing it
    appended breaks the chain. Given the key and reloaded, it signs again and the log verifies
    from the old key."""
    w = tr.World(tmp)
    try:
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        old_pub, new_seed = audit_rotated_behind(w)
        # an announcement from a key the log has left would break its chain: refused
        out = rotate(w, "audit", want=1)
        check("not with this directory's audit.key" in out and len(announcements(w)) == 1, out)
        restart(w)
        check("which this server does not hold" in w.s.stderr(), w.s.stderr()[-2000:])
        for path in ("/v1/audit/export", "/v1/audit/verify", "/v1/audit/checkpoint"):
            st, doc, _ = w.s.request("GET", path, None, key=w.admin)
            check(st == 500 and "does not hold" in doc["error"]["message"],
                  "%s on a node behind: %d %r" % (path, st, doc))
        run_id, apr = waiting_refund(w, 5)
        approve_completes(w, run_id, apr, 5)
        write_key(w.dir, "audit.key", new_seed)
        reload(w.s, "airlockd: SIGHUP: audit key re-read: public key ")
        verifies(w)
        rc, doc = export_verify(w, "--public-key", old_pub)
        check(rc == 0 and doc["ok"] and doc["keys"] == 2, "%r" % doc)
    finally:
        w.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-keys-")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Fail as e:
        print("FAIL " + str(e))
        sys.exit(1)
