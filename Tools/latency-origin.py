#!/usr/bin/env python3
"""A local image origin with a fixed latency, for the shared tier's tests and measurements.

usage: latency-origin.py FIXTURES_DIR [--latency-ms MS] [--port PORT]

Listens on 127.0.0.1 (port 0: any free one) and prints "port N" once it listens.
- GET /<anything>/<name>  answers FIXTURES_DIR/<name> (the last path segment; a query is ignored),
  after sleeping MS milliseconds, with Cache-Control: max-age=86400 and an ETag;
  404 when there is no such file.
- GET /_count             answers the number of image requests so far (not delayed, not counted).
Many requests are served at once (one thread each), so the latency is per request, not a queue.
"""
import http.server, os, sys, threading, time, argparse, hashlib

parser = argparse.ArgumentParser()
parser.add_argument("fixtures")
parser.add_argument("--latency-ms", type=float, default=20.0)
parser.add_argument("--port", type=int, default=0)
args = parser.parse_args()

lock = threading.Lock()
count = 0
files = {}
for name in os.listdir(args.fixtures):
    path = os.path.join(args.fixtures, name)
    if os.path.isfile(path):
        with open(path, "rb") as f:
            data = f.read()
        files[name] = (data, '"%s"' % hashlib.sha256(data).hexdigest()[:16])

TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        global count
        path = self.path.split("?", 1)[0]
        if path == "/_count":
            with lock:
                body = str(count).encode()
            return self.answer(200, body, "text/plain")
        with lock:
            count += 1
        time.sleep(args.latency_ms / 1000.0)
        name = path.rsplit("/", 1)[-1]
        if name not in files:
            return self.answer(404, b"not found", "text/plain")
        data, etag = files[name]
        if self.headers.get("If-None-Match") == etag:
            return self.answer(304, b"", None, etag)
        self.answer(200, data, TYPES.get(name.rsplit(".", 1)[-1].lower(), "application/octet-stream"), etag)

    def answer(self, status, body, content_type, etag=None):
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        if etag:
            self.send_header("ETag", etag)
            self.send_header("Cache-Control", "max-age=86400")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer.request_queue_size = 256
server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
print("port", server.server_address[1], flush=True)
server.serve_forever()
