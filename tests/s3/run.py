"""s3.client: starts s3rver (a temporary directory, a free port) and fake_s3.py, runs the C test
against both, then checks that the canary secret of every mount left no trace: not in any
request fake_s3.py received (line and headers), not in anything the test printed (which prints
every error message it got).
  python3 run.py TEST_BINARY NODE NODE_MODULES
"""
import os
import socket
import subprocess
import sys
import tempfile

CANARY = 'CANARY-s3-secret-7f3a9c1e5b'


def start(argv, cwd):
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, text=True)
    line = p.stdout.readline().strip()
    if not line.isdigit():
        p.kill()
        sys.exit(f'run.py: {argv[-3]} did not start (printed {line!r})')
    return p, int(line)


def main():
    binary, node, modules = sys.argv[1:4]
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix='airlock-s3-') as tmp:
        log = os.path.join(tmp, 'fake.log')
        # s3rver makes its continuation tokens with DES, which OpenSSL 3 keeps in its legacy
        # provider: without it, every listing past the first page answers HTTP 500
        s3rver, s3rver_port = start([node, '--openssl-legacy-provider',
                                     os.path.join(here, 's3rver.js'), modules,
                                     os.path.join(tmp, 'data')], tmp)
        fake, fake_port = start([sys.executable, os.path.join(here, 'fake_s3.py'), CANARY, log],
                                tmp)
        with socket.socket() as s:  # a port nobody listens on
            s.bind(('127.0.0.1', 0))
            closed_port = s.getsockname()[1]
        env = dict(os.environ,
                   S3RVER_ENDPOINT=f'http://127.0.0.1:{s3rver_port}',
                   FAKE_S3_ENDPOINT=f'http://127.0.0.1:{fake_port}/',
                   CLOSED_ENDPOINT=f'http://127.0.0.1:{closed_port}',
                   S3_CANARY=CANARY)
        try:
            test = subprocess.run([binary], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, errors='replace')
        finally:
            for p in (s3rver, fake):
                p.stdin.close()
                p.kill()
                p.wait()
        sys.stdout.write(test.stdout)
        with open(log, encoding='utf-8', errors='replace') as f:
            sent = f.read()
        if 'Authorization: AWS4-HMAC-SHA256' not in sent:
            sys.exit('run.py: fake_s3.py saw no signed request')
        for where, text in (('a request fake_s3.py received', sent), ('the test output', test.stdout)):
            if CANARY in text:
                sys.exit(f'run.py: FAILED: the canary secret is in {where}')
        print('run.py: the canary secret is in no request and no message')
        return test.returncode


sys.exit(main())
