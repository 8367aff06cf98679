#!/usr/bin/env python3
"""The HTTP origin the loader tests talk to: 127.0.0.1, a free port, Python 3 stdlib only.

Usage: test_server.py FIXTURES_DIR PORT_FILE
Writes the port it listens on to PORT_FILE (atomically), then serves until killed. It also
exits when its parent process dies (a poll of the parent pid), so a crashed test run never
leaves it behind. (Not PR_SET_PDEATHSIG: that fires when the parent *thread* exits, and the
test runner's worker threads come and go while the server is still in use.)

Each path answers from a script the test sets with POST /_script?path=PATH, a JSON list of
response specs (one is used per request, the last one repeats). An unscripted path
/any/prefix/NAME serves the fixture NAME (200, no caching headers), or 404.

A response spec (every key optional):
  status        HTTP status (200)
  fixture       the body is this fixture file's bytes
  body_size     the body is this many 0x41 bytes (instead of a fixture)
  headers       extra response headers, e.g. {"Cache-Control": "max-age=60", "ETag": "\\"v1\\""}
  conditional   answer 304 (with `headers`, no body) when If-None-Match equals the ETag header or
                If-Modified-Since equals the Last-Modified header (true)
  delay         seconds to wait before the status line
  body_delay    seconds to wait between the headers and the body
  corrupt       flip a byte in each of several places in the middle of the body (false)
  cut           send only the first N body bytes, with a matching Content-Length
  truncate      announce the whole body's Content-Length, send N bytes, close the connection
  length_delta  announce len(body) + delta as Content-Length, send the whole body
  no_length     send no Content-Length; the body ends when the connection closes
  chunk_size    write the body in pieces of this size (64 KiB), counting bytes_sent as it goes
  chunk_delay   seconds to wait after each piece (a slow network; loopback outruns any client)

GET /_stats?path=PATH answers {"requests", "conditional", "not_modified", "bytes_sent",
"aborted", "last_headers"}; GET /_stats answers {"max_active": N} (most requests at once).
"""
import json, os, signal, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

FIXTURES = sys.argv[1]
PORT_FILE = sys.argv[2]
lock = threading.Lock()
scripts = {}   # path -> [spec]
stats = {}     # path -> counters
active = 0
max_active = 0


def path_stats(path):
    return stats.setdefault(path, {"requests": 0, "conditional": 0, "not_modified": 0, "bytes_sent": 0,
                                   "aborted": False, "last_headers": {}})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def date_time_string(self, timestamp=None):
        # A scripted Date header replaces the real one (Expires tests need both to match).
        return getattr(self, "scripted_date", None) or super().date_time_string(timestamp)

    def reply_json(self, obj, status=200):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def do_POST(self):
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        payload = self.rfile.read(length)
        if parts.path == "/_script":
            path = parse_qs(parts.query)["path"][0]
            specs = json.loads(payload)
            with lock:
                scripts[path] = specs if isinstance(specs, list) else [specs]
            return self.reply_json({"ok": True})
        self.reply_json({"error": "unknown control path"}, 404)

    def do_GET(self):
        global active, max_active
        parts = urlsplit(self.path)
        if parts.path == "/_stats":
            query = parse_qs(parts.query)
            with lock:
                if "path" in query:
                    return self.reply_json(dict(path_stats(query["path"][0])))
                return self.reply_json({"max_active": max_active})
        self.serve(self.path)

    def serve(self, path):
        with lock:
            script = scripts.get(path)
            spec = (script.pop(0) if len(script) > 1 else script[0]) if script else None
            counters = path_stats(path)
            counters["requests"] += 1
            counters["last_headers"] = {k: v for k, v in self.headers.items()}
            if self.headers.get("If-None-Match") or self.headers.get("If-Modified-Since"):
                counters["conditional"] += 1
        if spec is None:
            name = os.path.basename(urlsplit(path).path)
            spec = {"fixture": name} if name and os.path.isfile(os.path.join(FIXTURES, name)) else {"status": 404}
        # Requests count as active while they are being prepared (the delay), and stop counting
        # before the response is written: a client can only start its next download after it
        # has read this one, so a slow server thread cannot make two downloads look concurrent.
        global active, max_active
        with lock:
            active += 1
            max_active = max(max_active, active)
        try:
            time.sleep(spec.get("delay", 0))
        finally:
            with lock:
                active -= 1
        headers = dict(spec.get("headers", {}))
        self.scripted_date = headers.pop("Date", None)
        etag, modified = headers.get("ETag"), headers.get("Last-Modified")
        if spec.get("conditional", True) and (
                (etag and self.headers.get("If-None-Match") == etag)
                or (modified and self.headers.get("If-Modified-Since") == modified)):
            with lock:
                counters["not_modified"] += 1
            self.send_response(304)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            return

        status = spec.get("status", 200)
        if "fixture" in spec:
            with open(os.path.join(FIXTURES, spec["fixture"]), "rb") as f:
                body = f.read()
        elif "body_size" in spec:
            body = b"A" * spec["body_size"]
        else:
            body = b"" if status in (204, 304) else ("status %d\n" % status).encode()
        if spec.get("corrupt"):
            body = bytearray(body)
            for at in range(len(body) // 3, len(body) * 2 // 3, max(1, len(body) // 16)):
                body[at] ^= 0x5A
            body = bytes(body)
        if "cut" in spec:
            body = body[:spec["cut"]]
        announced = len(body) + spec.get("length_delta", 0)
        send = body[:spec["truncate"]] if "truncate" in spec else body

        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if not spec.get("no_length"):
            self.send_header("Content-Length", str(announced))
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.flush()
            time.sleep(spec.get("body_delay", 0))
            chunk = spec.get("chunk_size", 65536)
            for start in range(0, len(send), chunk):
                self.wfile.write(send[start:start + chunk])
                self.wfile.flush()
                with lock:
                    counters["bytes_sent"] += len(send[start:start + chunk])
                time.sleep(spec.get("chunk_delay", 0))
        except (BrokenPipeError, ConnectionResetError):
            with lock:
                counters["aborted"] = True


def watch_parent(parent):
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(0.5)


def main():
    parent = os.getppid()
    threading.Thread(target=watch_parent, args=(parent,), daemon=True).start()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    with open(PORT_FILE + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(PORT_FILE + ".tmp", PORT_FILE)
    server.serve_forever()


if __name__ == "__main__":
    main()
