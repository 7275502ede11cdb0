#!/usr/bin/env python3
"""airlockd as an operator runs it (integration.tls):

  - SIGHUP re-reads what can change under a running server and never stops it: each thing
    re-read says so in one line, and the server goes on answering;
  - --tls-cert/--tls-key (or tls_cert/tls_key in the config file) serve HTTPS: the listening
    line says https://, a client holding the CA verifies the certificate (curl --cacert), one
    that does not trust it refuses it, and plain HTTP on the port gets no answer;
  - a certificate that cannot be used (not PEM, missing, a key that is not its own, one without
    the other) is refused at start, naming the file and why;
  - SIGHUP re-reads the certificate: new connections get the new one while an open connection
    keeps its own, and a bad one (not PEM, the wrong key) is logged and the one in use stays.

The certificates are made here with the openssl command (a CA and the server's, for
127.0.0.1).

usage: test_tls.py --airlockd PATH [-k SUBSTRING]

Every wait is bounded by a deadline many times what it needs (ts.HANG); no verdict depends on
how fast the machine is.
"""
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
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


def openssl(*args):
    r = subprocess.run(["openssl"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    check(r.returncode == 0, "openssl %s: %s" % (" ".join(args), r.stderr.decode()[-500:]))


def make_ca(d, name="ca"):
    """A CA in d: (its certificate, its key)."""
    pem, key = os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", pem, "-subj", "/CN=airlock test CA", "-days", "2")
    return pem, key


def make_cert(d, name, ca):
    """A certificate for 127.0.0.1 signed by ca, in d: (its PEM file, its key's PEM file)."""
    pem, key, csr = (os.path.join(d, name + ext) for ext in (".pem", ".key", ".csr"))
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            key, "-out", csr, "-subj", "/CN=" + name)
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-set_serial",
            str(int.from_bytes(os.urandom(8), "big")), "-out", pem, "-days", "1", "-extfile", ext)
    return pem, key


class TlsServer(Server):
    """airlockd started with args, its listening line https:// (Server waits for http://)."""

    def __init__(self, data_dir, args):
        self.data_dir = data_dir
        self.log_path = os.path.join(os.path.dirname(data_dir), "stderr-%d.log" % time.monotonic_ns())
        self.log = open(self.log_path, "wb")
        env = dict(os.environ)
        env.pop("AIRLOCK_BOOTSTRAP_KEY", None)
        self.proc = subprocess.Popen([ts.AIRLOCKD, "--listen", "127.0.0.1:0", "--data-dir",
                                      data_dir] + args, stdout=subprocess.DEVNULL,
                                     stderr=self.log, env=env)
        self.port = None
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline:
            m = re.search(r"^airlockd: listening on (https?)://127\.0\.0\.1:(\d+)$", self.stderr(),
                          re.M)
            if m:
                self.scheme, self.port = m.group(1), int(m.group(2))
                return
            if self.proc.poll() is not None:
                return
            time.sleep(0.02)
        self.kill()
        raise ts.Fail("airlockd did not print its listening line within %d s" % HANG)

    def connection(self, cafile):
        ctx = ssl.create_default_context(cafile=cafile)
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=HANG, context=ctx)

    def get(self, conn, path, key=None):
        conn.request("GET", path, headers={"Authorization": "Bearer " + key} if key else {})
        r = conn.getresponse()
        return r.status, r.read()


def peer_cert(port, cafile):
    """The DER certificate a new connection to port is served."""
    ctx = ssl.create_default_context(cafile=cafile)
    with socket.create_connection(("127.0.0.1", port), timeout=HANG) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return s.getpeercert(binary_form=True)


def der(pem):
    with open(pem) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


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


def t_https_with_the_given_certificate(tmp):
    ca = make_ca(tmp)
    cert, key = make_cert(tmp, "server", ca)
    s = TlsServer(os.path.join(tmp, "var"), ["--tls-cert", cert, "--tls-key", key])
    try:
        check(s.port and s.scheme == "https", "the listening line: %s" % s.stderr()[-1000:])
        check("airlockd: TLS certificate %s, valid until " % cert in s.stderr(),
              "the certificate in use is not named: %s" % s.stderr()[-1000:])
        url = "https://127.0.0.1:%d/healthz" % s.port
        r = subprocess.run(["curl", "-sS", "--cacert", ca[0], url], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=HANG)
        check(r.returncode == 0 and json.loads(r.stdout) == {"status": "ok"},
              "curl --cacert: %d %r %r" % (r.returncode, r.stdout, r.stderr))
        # a client trusting another CA refuses the certificate (60: the peer is not verified)
        stranger = make_ca(tmp, "stranger")
        r = subprocess.run(["curl", "-sS", "--cacert", stranger[0], url], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=HANG)
        check(r.returncode == 60 and not r.stdout, "an untrusted certificate was taken: %r" % r)
        conn = s.connection(ca[0])
        st, body = s.get(conn, "/v1/departments", s.admin_key())
        check(st == 200 and isinstance(json.loads(body), list), "%d %r" % (st, body))
        conn.close()
        # plain HTTP on the TLS port: no HTTP answer, whatever comes back
        with socket.create_connection(("127.0.0.1", s.port), timeout=HANG) as c:
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            try:
                while True:
                    chunk = c.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
        check(not data.startswith(b"HTTP/") and b'"status"' not in data,
              "plain HTTP was answered on the TLS port: %r" % data[:200])
        check(s.stop() == 0, "airlockd did not stop cleanly")
    finally:
        s.kill()


def t_tls_from_the_config_file(tmp):
    ca = make_ca(tmp)
    cert, key = make_cert(tmp, "server", ca)
    config = os.path.join(tmp, "airlockd.json")
    with open(config, "w") as f:
        json.dump({"tls_cert": cert, "tls_key": key}, f)
    s = TlsServer(os.path.join(tmp, "var"), ["--config", config])
    try:
        check(s.port and s.scheme == "https", "the listening line: %s" % s.stderr()[-1000:])
        check(peer_cert(s.port, ca[0]) == der(cert), "not the configured certificate")
    finally:
        s.kill()


def t_bad_certificate_refused_at_start(tmp):
    ca = make_ca(tmp)
    cert, key = make_cert(tmp, "server", ca)
    _, other_key = make_cert(tmp, "other", ca)
    garbage = os.path.join(tmp, "garbage.pem")
    with open(garbage, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    cases = [
        (["--tls-cert", garbage, "--tls-key", key], 1, garbage),
        (["--tls-cert", os.path.join(tmp, "missing.pem"), "--tls-key", key], 1,
         "cannot read TLS certificate %s" % os.path.join(tmp, "missing.pem")),
        (["--tls-cert", cert, "--tls-key", other_key], 1, "do not match"),
        (["--tls-cert", cert], 2, "needs its key"),
        (["--tls-key", key], 2, "needs its key"),
    ]
    for args, want, text in cases:
        s = TlsServer(os.path.join(tmp, "var"), args)
        try:
            rc = s.proc.wait(timeout=HANG)
            check(s.port is None and rc == want and text in s.stderr(),
                  "%r: exit %d, want %d with %r: %s" % (args, rc, want, text, s.stderr()[-800:]))
        finally:
            s.kill()


def t_certificate_rotated_on_sighup(tmp):
    ca = make_ca(tmp)
    first = make_cert(tmp, "first", ca)
    second = make_cert(tmp, "second", ca)
    cert, key = os.path.join(tmp, "live.pem"), os.path.join(tmp, "live.key")

    def install(pair):
        for src, dst in zip(pair, (cert, key)):
            with open(src, "rb") as f, open(dst + ".tmp", "wb") as g:
                g.write(f.read())
            os.replace(dst + ".tmp", dst)

    install(first)
    s = TlsServer(os.path.join(tmp, "var"), ["--tls-cert", cert, "--tls-key", key])
    try:
        check(s.scheme == "https", "the listening line: %s" % s.stderr()[-1000:])
        k = s.admin_key()
        check(peer_cert(s.port, ca[0]) == der(first[0]), "not the first certificate")
        kept = s.connection(ca[0])  # open before the rotation, kept alive across it
        check(s.get(kept, "/healthz")[0] == 200, "the kept connection")
        install(second)
        s.proc.send_signal(signal.SIGHUP)
        said(s, "airlockd: SIGHUP: TLS certificate re-read: %s, valid until" % cert)
        check(peer_cert(s.port, ca[0]) == der(second[0]), "SIGHUP: the new certificate not served")
        check(kept.sock.getpeercert(binary_form=True) == der(first[0]), "the kept connection")
        st, body = s.get(kept, "/v1/departments", k)
        check(st == 200, "the connection open across the rotation: %d %r" % (st, body))
        kept.close()
        # a certificate that is not PEM, then the wrong key: logged, the one in use stays
        with open(cert, "w") as f:
            f.write("not a certificate\n")
        s.proc.send_signal(signal.SIGHUP)
        said(s, "airlockd: SIGHUP: TLS certificate not re-read, the one in use stays: "
                "TLS certificate %s with key %s: " % (cert, key))
        check(peer_cert(s.port, ca[0]) == der(second[0]), "a bad certificate replaced the good")
        install((first[0], second[1]))
        s.proc.send_signal(signal.SIGHUP)
        log = said(s, "airlockd: SIGHUP: TLS certificate not re-read", 2)
        check("do not match" in log.split("not re-read")[-1], "the mismatch unsaid: %s" % log[-600:])
        check(peer_cert(s.port, ca[0]) == der(second[0]), "a mismatched pair replaced the good")
        # and a good pair again is taken
        install(first)
        s.proc.send_signal(signal.SIGHUP)
        said(s, "airlockd: SIGHUP: TLS certificate re-read: ", 2)
        check(peer_cert(s.port, ca[0]) == der(first[0]), "the third certificate not served")
        check(s.stop() == 0, "airlockd did not stop cleanly")
    finally:
        s.kill()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-tls-", need_cli=False)


if __name__ == "__main__":
    sys.exit(main())
