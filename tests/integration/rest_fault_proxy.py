#!/usr/bin/env python3
"""rest_fault_proxy.py -- an HTTP proxy on 127.0.0.1 in front of an Iceberg
REST catalog (`freshet serve`'s /iceberg) that injects the faults a commit
can meet, for tests/integration/process_rest.sh.

Every request is forwarded unchanged, except the commits named in --plan:
commits are POSTs to .../transactions/commit or .../tables/<name>, counted
from 1 in arrival order; "N:ACTION" applies ACTION to the N-th:

  forward-500    forward it (the catalog applies it), answer 500 instead
                 of the catalog's answer: the client cannot know it landed
  drop-500       do not forward it, answer 500: it did not land
  forward-close  forward it, then close the connection without an answer

Prints "listening http://127.0.0.1:PORT" once bound, and on SIGTERM the
faults it injected, one "injected N ACTION" line each, to stdout.

usage: rest_fault_proxy.py UPSTREAM_BASE PLAN   (e.g. http://127.0.0.1:8787 "2:forward-500,5:drop-500")
"""
import http.client
import http.server
import re
import signal
import sys
import threading
import urllib.parse

UPSTREAM = urllib.parse.urlsplit(sys.argv[1])
PLAN = {}
for item in filter(None, (sys.argv[2] if len(sys.argv) > 2 else "").split(",")):
    n, action = item.split(":")
    assert action in ("forward-500", "drop-500", "forward-close"), action
    PLAN[int(n)] = action
COMMIT = re.compile(r"/v1/.*(/transactions/commit|/namespaces/[^/]+/tables/[^/]+)$")
lock = threading.Lock()
commits = 0
injected = []


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def forward(self, body):
        conn = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, resp.getheaders(), data

    def answer(self, status, headers, data):
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        global commits
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        action = None
        if self.command == "POST" and COMMIT.search(urllib.parse.urlsplit(self.path).path):
            with lock:
                commits += 1
                action = PLAN.get(commits)
                if action:
                    injected.append((commits, action))
        err = (b'{"error":{"message":"injected by rest_fault_proxy","type":"ServerError",'
               b'"code":500}}')
        if action == "drop-500":
            self.answer(500, [("Content-Type", "application/json")], err)
            return
        status, headers, data = self.forward(body)
        if action == "forward-500":
            self.answer(500, [("Content-Type", "application/json")], err)
        elif action == "forward-close":
            self.close_connection = True
            self.connection.shutdown(2)
        else:
            self.answer(status, headers, data)

    do_GET = do_POST = do_DELETE = do_HEAD = handle_any


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)


def stop(*_):
    for n, action in injected:
        print(f"injected {n} {action}", flush=True)
    threading.Thread(target=server.shutdown).start()


signal.signal(signal.SIGTERM, stop)
print(f"listening http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
