"""An S3 look-alike on a free loopback port for what s3rver cannot show (tests/s3/run.py).

s3rver checks the access key id but never a SigV4 signature; this server checks every one,
computed here independently of libcurl (the canonical request of AWS's documentation: the path
as sent, the query sorted and encoded, the signed headers, the SHA-256 of the body, which must
also equal x-amz-content-sha256). The bucket of a request chooses how it behaves:

  signed    a small S3 in memory: PUT, GET (Range), HEAD, DELETE, ListObjectsV2 with pages of
            2 keys and continuation tokens holding '+', '/' and '='; 403 SignatureDoesNotMatch
            for a signature that does not verify
  stall     reads the request, never answers
  fail      HTTP 500 with an S3 error document
  garbage   HTTP 200 whose body is not XML (a listing) or a body cut mid-answer (an object)
  endless   a listing truncated without a continuation token, then one with a token forever

Every request line and header goes to LOG, so run.py can check that no secret ever left.
  python3 fake_s3.py SECRET LOG   (prints the port on stdout)
"""
import base64
import hashlib
import hmac
import http.server
import sys
import threading
import time
import urllib.parse
from xml.sax.saxutils import escape

SECRET = sys.argv[1]
LOG = open(sys.argv[2], 'a', buffering=1)
OBJECTS = {}
LOCK = threading.Lock()
PAGE = 2


def uri_encode(s, keep_slash):
    return urllib.parse.quote(s, safe='-_.~' + ('/' if keep_slash else ''))


def signature_ok(method, raw_path, headers, body):
    auth = headers.get('authorization', '')
    if not auth.startswith('AWS4-HMAC-SHA256 '):
        return False
    parts = dict(p.strip().split('=', 1) for p in auth[len('AWS4-HMAC-SHA256 '):].split(','))
    scope = parts['Credential'].split('/', 1)[1]
    date, region, service, _ = scope.split('/')
    signed = parts['SignedHeaders'].split(';')
    if 'x-amz-content-sha256' not in signed or 'host' not in signed:
        return False
    path, _, query = raw_path.partition('?')
    pairs = []
    for item in query.split('&') if query else []:
        k, _, v = item.partition('=')
        pairs.append((uri_encode(urllib.parse.unquote(k), False),
                      uri_encode(urllib.parse.unquote(v), False)))
    pairs.sort()
    payload = hashlib.sha256(body).hexdigest()
    if headers.get('x-amz-content-sha256') != payload:
        return False
    canonical = '\n'.join([
        method, path, '&'.join(k + '=' + v for k, v in pairs),
        ''.join(h + ':' + ' '.join(headers.get(h, '').strip().split()) + '\n' for h in signed),
        ';'.join(signed), payload])
    to_sign = '\n'.join(['AWS4-HMAC-SHA256', headers.get('x-amz-date', ''), scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = ('AWS4' + SECRET).encode()
    for m in (date, region, service, 'aws4_request'):
        key = hmac.new(key, m.encode(), hashlib.sha256).digest()
    want = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, parts['Signature'])


def error_xml(code):
    return f'<?xml version="1.0"?><Error><Code>{code}</Code><Message>m</Message></Error>'.encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def answer(self, status, body=b'', headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def handle_any(self):
        n = int(self.headers.get('content-length') or 0)
        body = self.rfile.read(n)
        headers = {k.lower(): v for k, v in self.headers.items()}
        LOG.write(f'{self.command} {self.path}\n')
        for k, v in self.headers.items():
            LOG.write(f'{k}: {v}\n')
        path, _, query = self.path.partition('?')
        segments = path.split('/', 2)
        bucket = segments[1]
        key = urllib.parse.unquote(segments[2]) if len(segments) > 2 else None
        params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        if bucket == 'stall':
            time.sleep(120)
            return
        if bucket == 'fail':
            return self.answer(500, error_xml('InternalError'))
        if bucket == 'garbage':
            if key is None:
                return self.answer(200, b'<ListBucketResult><Contents><Key>a</Key></Oops>')
            self.send_response(200)
            self.send_header('Content-Length', '1000')
            self.end_headers()
            self.wfile.write(b'only a part')
            self.wfile.flush()
            self.close_connection = True
            return
        if bucket == 'endless':
            token = params.get('continuation-token')
            if token is None and params.get('prefix', '') == 'notoken/':
                return self.answer(200, b'<ListBucketResult><IsTruncated>true</IsTruncated>'
                                   b'</ListBucketResult>')
            return self.answer(200, ('<ListBucketResult><IsTruncated>true</IsTruncated>'
                                     f'<NextContinuationToken>t{time.time()}'
                                     '</NextContinuationToken></ListBucketResult>').encode())
        if bucket != 'signed':
            return self.answer(404, error_xml('NoSuchBucket'))
        if not signature_ok(self.command, self.path, headers, body):
            LOG.write('SIGNATURE MISMATCH\n')
            return self.answer(403, error_xml('SignatureDoesNotMatch'))
        with LOCK:
            if key is None:
                return self.list(params)
            if self.command == 'PUT':
                OBJECTS[key] = body
                return self.answer(200)
            if self.command == 'DELETE':
                OBJECTS.pop(key, None)
                return self.answer(204)
            if key not in OBJECTS:
                return self.answer(404, error_xml('NoSuchKey') if self.command == 'GET' else b'')
            data = OBJECTS[key]
            rng = headers.get('range')
            if self.command == 'GET' and rng:
                first, _, last = rng[len('bytes='):].partition('-')
                first = int(first)
                last = min(int(last) if last else len(data) - 1, len(data) - 1)
                if first >= len(data):
                    return self.answer(416, error_xml('InvalidRange'))
                return self.answer(206, data[first:last + 1])
            return self.answer(200, data)

    def list(self, params):
        prefix = params.get('prefix', '')
        delimiter = params.get('delimiter', '')
        items = []
        for k in sorted(OBJECTS):
            if not k.startswith(prefix):
                continue
            rest = k[len(prefix):]
            if delimiter and delimiter in rest:
                p = prefix + rest[:rest.index(delimiter) + 1]
                if not items or items[-1] != ('p', p):
                    items.append(('p', p))
            else:
                items.append(('k', k))
        start = 0
        if 'continuation-token' in params:
            start = int(base64.b64decode(params['continuation-token'])[4:])
        page = items[start:start + PAGE]
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">']
        for kind, k in page:
            if kind == 'k':
                out.append(f'<Contents><Key>{escape(k)}</Key><Size>{len(OBJECTS[k])}</Size>'
                           '</Contents>')
            else:
                out.append(f'<CommonPrefixes><Prefix>{escape(k)}</Prefix></CommonPrefixes>')
        if start + PAGE < len(items):
            # '+', '/' and '=' in every token: it must be encoded in the signed query
            token = base64.b64encode(b'\xfb\xff\xbf+' + str(start + PAGE).encode()).decode()
            out.append('<IsTruncated>true</IsTruncated>')
            out.append(f'<NextContinuationToken>{escape(token)}</NextContinuationToken>')
        else:
            out.append('<IsTruncated>false</IsTruncated>')
        out.append('</ListBucketResult>')
        return self.answer(200, ''.join(out).encode())

    do_GET = do_PUT = do_HEAD = do_DELETE = handle_any


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


server = Server(('127.0.0.1', 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
