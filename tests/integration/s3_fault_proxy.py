#!/usr/bin/env python3
"""s3_fault_proxy.py — a fault-injecting HTTP proxy in front of moto (tests only).

Listens on 127.0.0.1:<port> and forwards every request, byte for byte, to the
upstream S3 server on 127.0.0.1, except the ones a fault rule picks:

  PUT/GET /__fault?mode=M&count=N[&method=PUT][&match=substr]
      the next N requests (optionally only with that method and a path or
      query containing substr) get fault M:
        503    answer 503 with an S3 <Error><Code>SlowDown</Code> body
        500    answer 500 InternalError
        403    answer 403 AccessDenied (a refused credential: not retried)
        stall  read the request, then send nothing for 30 s
        drop   read the request, then close the connection without answering
        cut    forward, then send the status line, headers and half of the body
        garbage  forward, then answer the status and headers with random bytes
               of the same length as the body (seeded by the request count)
        short  forward, then answer a complete response with the first half of
               the body (Content-Length says half: a wrong length, not a cut)
        long   forward, then answer a complete response with the body and as
               many bytes again (Content-Length says so)
      count=-1 means every matching request until cleared.
  GET /__clear    remove the rule
  GET /__stats    JSON: requests seen, faults injected, by mode; also the
                  requests by method ("methods": {"GET": n, ...}), by
                  method and object kind ("kinds": {"GET parquet": n, ...};
                  kinds: list, metadata.json, avro, parquet, multipart,
                  batch-delete, other) and the bytes of request and answer bodies
                  ("bytes_up", "bytes_down") and the milliseconds spent waiting
                  for the upstream ("upstream_ms"; faulted requests excluded)

Only loopback addresses are used. Usage: s3_fault_proxy.py LISTEN_PORT UPSTREAM_PORT
"""
import http.client
import http.server
import json
import random
import socketserver
import sys
import threading
import time
import urllib.parse

UPSTREAM = ("127.0.0.1", int(sys.argv[2]))
LOCK = threading.Lock()
RULE = {"mode": None, "count": 0, "method": None, "match": None}
STATS = {"requests": 0, "faults": {}, "methods": {}, "kinds": {}, "bytes_up": 0, "bytes_down": 0,
         "upstream_ms": 0.0}

ERROR_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
    "<Message>{msg}</Message><RequestId>fault-proxy</RequestId></Error>"
)


def kind_of(method, path):
    """What a request is about, for the per-kind counts of /__stats."""
    u = urllib.parse.urlparse(path)
    q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
    if "uploads" in q or "uploadId" in q:
        return "multipart"
    if "delete" in q:
        return "batch-delete"
    if method == "GET" and ("list-type" in q or u.path.count("/") < 2 or u.path.endswith("/")):
        return "list"
    for suffix in ("metadata.json", "avro", "parquet"):
        if u.path.endswith(suffix):
            return suffix
    return "other"


def count_bytes(up, down, ms):
    with LOCK:
        STATS["bytes_up"] += up
        STATS["bytes_down"] += down
        STATS["upstream_ms"] += ms


def take_fault(method, path):
    with LOCK:
        STATS["requests"] += 1
        STATS["methods"][method] = STATS["methods"].get(method, 0) + 1
        k = method + " " + kind_of(method, path)
        STATS["kinds"][k] = STATS["kinds"].get(k, 0) + 1
        mode = RULE["mode"]
        if not mode or RULE["count"] == 0:
            return None
        if RULE["method"] and RULE["method"] != method:
            return None
        if RULE["match"] and RULE["match"] not in path:
            return None
        if RULE["count"] > 0:
            RULE["count"] -= 1
        STATS["faults"][mode] = STATS["faults"].get(mode, 0) + 1
        return mode


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body, ctype="application/xml"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":  # a HEAD answer has no body on the wire
            self.wfile.write(data)

    def control(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path == "/__fault":
            with LOCK:
                RULE["mode"] = q["mode"][0]
                RULE["count"] = int(q.get("count", ["1"])[0])
                RULE["method"] = q.get("method", [None])[0]
                RULE["match"] = q.get("match", [None])[0]
            self.reply(200, "ok\n", "text/plain")
        elif u.path == "/__clear":
            with LOCK:
                RULE["mode"] = None
                RULE["count"] = 0
            self.reply(200, "ok\n", "text/plain")
        else:
            with LOCK:
                body = json.dumps(STATS)
            self.reply(200, body + "\n", "application/json")

    def handle_any(self):
        if self.path.startswith("/__"):
            self.control()
            return
        n = int(self.headers.get("Content-Length", "0") or "0")
        body = self.rfile.read(n) if n else b""
        mode = take_fault(self.command, self.path)
        if mode in ("503", "500", "403"):
            code = {"503": "SlowDown", "500": "InternalError", "403": "AccessDenied"}[mode]
            self.reply(int(mode), ERROR_BODY.format(code=code, msg="injected by the fault proxy"))
            return
        if mode == "stall":
            time.sleep(30)
            self.close_connection = True
            return
        if mode == "drop":
            self.close_connection = True
            return
        t0 = time.monotonic()
        conn = http.client.HTTPConnection(*UPSTREAM, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        count_bytes(len(body), len(data), (time.monotonic() - t0) * 1000)
        if mode == "cut" and len(data) > 1:
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            conn.close()
            return
        if mode in ("garbage", "short", "long") and self.command != "HEAD":
            if mode == "garbage":
                data = random.Random(STATS["requests"]).randbytes(len(data))
            elif mode == "short":
                data = data[: len(data) // 2]
            else:
                data = data + random.Random(STATS["requests"]).randbytes(len(data) or 16)
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(k, v)
        if self.command == "HEAD":  # the object's size, not this empty body's
            self.send_header("Content-Length", resp.getheader("Content-Length", "0"))
        else:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    srv = Server(("127.0.0.1", int(sys.argv[1])), Handler)
    srv.serve_forever()
