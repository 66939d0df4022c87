#!/usr/bin/env python3
"""damage_peers.py — the hostile-peer rows of the damage table (docs/DAMAGE.md).

S3: moto's server on 127.0.0.1 behind tests/integration/s3_fault_proxy.py.
A lake is processed into the bucket (three epochs, a SQLite catalog on
local disk), then every GET of one kind of object (table metadata, Avro
manifests and lists, Parquet data) is answered with 500s, garbage, a short
read (the connection cut half way), a short or a long body (a wrong
length), and freshet verify / tables / process --once / compact run.

REST: a hostile catalog on 127.0.0.1 (below) in front of `freshet serve`'s
/iceberg: it forwards, then answers with garbage, with every top-level
value of the JSON turned into the wrong type, or with a huge body
(1 GiB announced, streamed until the client hangs up).

Each run is checked as in damage.py: the documented exit code, the peer
named in the output, no sanitizer report, no hang, peak RSS under the
bound. Usage: damage_peers.py [s3|rest]...   (FR_BINARY: the freshet binary)
"""
import http.client
import http.server
import json
import os
import random
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import damage  # noqa: E402  (run, ingest_file, failures)
from fr_testlib import exit_on_failures, port_of, remove_work, start_listening, synthetic_events  # noqa: E402

BIN = damage.BIN
HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port}")


def make_log(work, data):
    ev = os.path.join(work, "ev.ndjson")
    synthetic_events(BIN, ev, 9, 2000, "--malformed-rate", "0.01", "--malformed-kinds", "truncated,missing_wiki")
    damage.ingest_file(work, data, ev)


# ---- S3 ---------------------------------------------------------------------

S3_FAULTS = [  # (mode, object kind matched by the proxy's match=, commands)
    ("500", ".metadata.json", ["tables", "verify"]),
    ("500", ".parquet", ["verify", "compact"]),
    ("garbage", ".metadata.json", ["tables", "verify", "process"]),
    ("garbage", ".avro", ["tables", "verify", "compact"]),
    ("garbage", ".parquet", ["verify", "compact"]),
    ("cut", ".avro", ["tables", "verify"]),
    ("cut", ".parquet", ["verify"]),
    ("short", ".metadata.json", ["tables", "verify"]),
    ("short", ".avro", ["tables", "verify"]),
    ("short", ".parquet", ["verify", "compact"]),
    ("long", ".avro", ["tables", "verify"]),
    ("long", ".parquet", ["verify", "compact"]),
]
ARGS = {"tables": ["tables"], "verify": ["verify"], "process": ["process", "--once"],
        "compact": ["compact", "--min-inputs", "2", "--no-expire", "--no-orphans"]}


def s3_cases(work, procs):
    moto_port, proxy_port = free_port(), free_port()
    procs.append(subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(moto_port)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    wait_port(moto_port)
    procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "s3_fault_proxy.py"), str(proxy_port),
                                   str(moto_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    wait_port(proxy_port)
    E, P = f"http://127.0.0.1:{moto_port}", f"http://127.0.0.1:{proxy_port}"
    urllib.request.urlopen(urllib.request.Request(E + "/lake", method="PUT")).read()
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing-secret-value")
    os.environ.pop("AWS_SESSION_TOKEN", None)
    data = os.path.join(work, "s3d")
    make_log(work, data)
    s3 = ["--set", "lake.warehouse=s3://lake/wh", "--set", f"s3.endpoint={P}", "--set", "s3.max_attempts=2",
          "--set", "s3.retry_budget_ms=2000", "--set", "process.epoch_max_records=700"]
    damage.run(s3 + ["process", "--once"], data, 0, r"epoch 2:", label="s3 setup")
    damage.run(s3 + ["verify"], data, 0, None, label="s3 setup")
    for mode, match, cmds in S3_FAULTS:
        q = urllib.parse.urlencode({"mode": mode, "count": -1, "method": "GET", "match": match})
        urllib.request.urlopen(f"{P}/__fault?{q}").read()
        try:
            for c in cmds:
                # the peer named: the endpoint or the object's s3:// URI
                damage.run(s3 + ARGS[c], data, 1, r"s3://lake/wh/\S*|127\.0\.0\.1:%d" % proxy_port,
                           label=f"s3 {mode} on GET *{match}")
        finally:
            urllib.request.urlopen(f"{P}/__clear").read()
    damage.run(s3 + ["verify"], data, 0, None, label="s3 after the faults")


# ---- REST -------------------------------------------------------------------

def wrong_types(v):
    """Every top-level value of an object becomes another JSON type."""
    if not isinstance(v, dict):
        return {"not": "what was asked"}
    out = {}
    for k, x in v.items():
        if isinstance(x, str):
            out[k] = 12345
        elif isinstance(x, bool) or isinstance(x, (int, float)):
            out[k] = "12345"
        elif isinstance(x, list):
            out[k] = {"a": x}
        elif isinstance(x, dict):
            out[k] = [x]
        else:
            out[k] = True
    return out


class Hostile(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = None
    mode = "forward"

    def log_message(self, fmt, *args):
        pass

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        mode = Hostile.mode
        if mode == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(1 << 30))
            self.end_headers()
            chunk = b'{"metadata-location":"' + b"x" * 65000
            try:
                for _ in range((1 << 30) // len(chunk)):
                    self.wfile.write(chunk)
                    chunk = b"x" * 65536
            except OSError:
                pass
            self.close_connection = True
            return
        conn = http.client.HTTPConnection("127.0.0.1", Hostile.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        status = resp.status
        if mode == "garbage":
            data = random.Random(len(data)).randbytes(max(len(data), 64))
        elif mode == "types" and data:
            try:
                data = json.dumps(wrong_types(json.loads(data))).encode()
            except ValueError:
                pass
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = do_HEAD = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def rest_cases(work, procs):
    data = os.path.join(work, "restd")
    make_log(work, data)
    token = "damage-token"
    env = dict(os.environ, FRESHET_SERVE_API_TOKEN=token)
    serve, base = start_listening([BIN, "--data", data, "serve", "--listen", "127.0.0.1:0"], "serve",
                                  stderr=subprocess.DEVNULL, env=env)
    procs.append(serve)
    Hostile.upstream = port_of(base)
    srv = Server(("127.0.0.1", 0), Hostile)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    hport = srv.server_address[1]
    os.environ["FRESHET_LAKE_CATALOG_TOKEN"] = token
    rest = ["--set", f"lake.catalog_uri=http://127.0.0.1:{hport}/iceberg", "--set", "process.epoch_max_records=700",
            ]
    Hostile.mode = "forward"
    damage.run(rest + ["process", "--once"], data, 0, r"epoch 1:", label="rest setup")
    peer = r"127\.0\.0\.1:%d" % hport
    for mode in ("garbage", "types", "huge"):
        Hostile.mode = mode
        for c in ("tables", "verify", "process"):
            damage.run(rest + ARGS[c], data, 1, peer, label=f"rest {mode}")
    Hostile.mode = "forward"
    damage.run(rest + ["verify"], data, 0, None, label="rest after the faults")
    srv.shutdown()


def main():
    which = sys.argv[1:] or ["s3", "rest"]
    try:
        import moto  # noqa: F401
    except ImportError:
        if "s3" in which:
            print("skip: moto is not installed (scripts/setup.sh --test)")
            sys.exit(77)
    work = tempfile.mkdtemp(prefix="fr-damage-peers.")
    procs = []
    try:
        if "s3" in which:
            s3_cases(work, procs)
        if "rest" in which:
            rest_cases(work, procs)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        remove_work(work)
    exit_on_failures(damage.failures, "hostile-peer checks")
    print("every hostile peer: exit 1, the peer named, no crash, hang or RSS past the bound")


if __name__ == "__main__":
    main()
