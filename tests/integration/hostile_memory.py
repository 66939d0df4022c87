#!/usr/bin/env python3
"""hostile_memory.py — bounded memory under hostile peers (issue 34 item 4).

Hostile SSE sources for `freshet ingest` (a server on 127.0.0.1 here):
  endless-line  a `data:` line that never ends (200 MiB, then the close)
  comment       a 100 MiB comment line, then valid events
  huge-id       an `id:` of 100 MiB in an event, then valid events
  trickle       valid events, one byte a second (for TRICKLE_S seconds)
Hostile HTTP clients of `freshet serve`:
  slow-headers  300 connections that send a request line and then one
                header byte every half second for five seconds, never
                finishing; then they stop, and serve must close every one
                (serve.timeout_s=3: libmicrohttpd's inactivity timeout)
  huge-headers  40 connections that each send 16 MiB of header lines
  many-streams  300 clients of /api/v1/stream that never read

Each case records the peak RSS of the freshet process (VmHWM from
/proc/PID/status: a peak, not a timing), which must stay under the bound
stated in BOUNDS_KIB (the ASan build's figures; the release build's are in
docs/BENCHMARKS.md, measured with bench/hostile_memory.sh). Afterwards
the process must still work: ingest lands the valid events that follow
(comment, huge-id), serve answers /metrics. (A comment is a line
of the event block it is in: the comment here ends its own block, as a
keep-alive does; inside an event's block it makes that event oversize.) Every case ends by
itself. Usage: hostile_memory.py [--json OUT] [CASE...]
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from fr_testlib import exit_on_failures, port_of, remove_work, start_listening, stop

BIN = os.environ.get("FR_BINARY") or sys.exit("FR_BINARY must point at the freshet binary")
MIB = 1 << 20
TRICKLE_S = 8
# Peak RSS bounds, KiB. The ASan build's baseline is ~30-60 MiB (shadow
# memory, quarantine); the caps under test are ingest.max_event_bytes
# (1 MiB), serve.request_max_bytes (32 KiB), serve.max_connections (256)
# and serve.max_streams (64). A buffered 100 MiB line would show as >100 MiB.
BOUNDS_KIB = {"endless-line": 96 * 1024, "comment": 96 * 1024, "huge-id": 96 * 1024,
              "trickle": 96 * 1024, "slow-headers": 128 * 1024, "huge-headers": 128 * 1024,
              "many-streams": 128 * 1024}
failures, figures = [], {}


def hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def check(case, pid, extra_ok=True, why=""):
    peak = hwm_kib(pid)
    figures[case] = peak
    ok = 0 < peak <= BOUNDS_KIB[case] and extra_ok
    msg = f"{case}: peak RSS {peak // 1024} MiB (bound {BOUNDS_KIB[case] // 1024} MiB){why}"
    print(("ok   " if ok else "FAIL ") + msg, flush=True)
    if not ok:
        failures.append(msg)


# ---- hostile SSE sources ----------------------------------------------------

def valid_events(n):
    out = subprocess.run([BIN, "feed", "--dump", "--synthetic", "--seed", "3", "--count", str(n),
                          "--start", "2026-11-01T00:00:00Z"], capture_output=True, check=True)
    return [l for l in out.stdout.decode().splitlines() if l.strip()]


def sse_server(mode, events, done):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve_one(conn):
        try:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n")
            chunk = b"x" * MIB
            if mode == "endless-line":
                conn.sendall(b"data: ")
                for _ in range(200):
                    conn.sendall(chunk)
            elif mode in ("comment", "huge-id"):
                conn.sendall(b":" if mode == "comment" else b"id: ")
                for _ in range(100):
                    conn.sendall(chunk)
                conn.sendall(b"\n\n" if mode == "comment" else b"\nevent: message\ndata: " +
                             events[0].encode() + b"\n\n")
                for i, ev in enumerate(events[1:], 1):
                    conn.sendall(f"id: [{{\"topic\":\"t\",\"partition\":0,\"offset\":{i}}}]\n"
                                 f"event: message\ndata: {ev}\n\n".encode())
                done.wait(60)
            elif mode == "trickle":
                body = "".join(f"event: message\ndata: {ev}\n\n" for ev in events).encode()
                for i in range(len(body)):
                    if done.is_set():
                        break
                    conn.sendall(body[i:i + 1])
                    time.sleep(1)
        except OSError:
            pass
        finally:
            conn.close()

    def loop():
        srv.settimeout(0.2)
        while not done.is_set():
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=serve_one, args=(conn,), daemon=True).start()
        srv.close()

    threading.Thread(target=loop, daemon=True).start()
    return srv.getsockname()[1]


def log_end(data):
    out = subprocess.run([BIN, "--data", data, "log", "list", "--json"], capture_output=True, text=True)
    try:
        return sum(p["end_offset"] for p in json.loads(out.stdout))
    except (ValueError, KeyError, TypeError):
        return 0


def sse_case(work, mode, events):
    done = threading.Event()
    port = sse_server(mode, events, done)
    data = os.path.join(work, "sse-" + mode)
    errlog = open(os.path.join(work, f"ingest-{mode}.log"), "w")
    ing = subprocess.Popen([BIN, "--data", data, "--set", "ingest.stall_timeout_s=30",
                            "--set", "ingest.backoff_min_ms=50", "--set", "ingest.backoff_max_ms=200",
                            "ingest", "--source", f"http://127.0.0.1:{port}/v2/stream/recentchange"],
                           stderr=errlog)
    want_events = mode in ("comment", "huge-id")
    deadline = time.monotonic() + (TRICKLE_S if mode == "trickle" else 120)
    landed = 0
    while time.monotonic() < deadline and ing.poll() is None:
        if want_events:
            landed = log_end(data)
            if landed >= len(events) - 1:
                break
        elif mode == "endless-line":
            text = open(os.path.join(work, f"ingest-{mode}.log")).read()
            if "oversize" in text or "too big" in text or "larger than" in text or "reconnect" in text:
                time.sleep(1)  # let it read more of the line after the cap
                break
        time.sleep(0.3)
    alive = ing.poll() is None
    if alive:
        check(mode, ing.pid, not want_events or landed >= len(events) - 1,
              f"; the valid events after it: {landed} landed" if want_events else "")
        ing.send_signal(signal.SIGTERM)
        ing.wait(timeout=30)
    else:
        failures.append(f"{mode}: ingest exited with {ing.returncode}")
        print(f"FAIL {mode}: ingest exited with {ing.returncode}")
    done.set()
    errlog.close()


# ---- hostile clients of serve -------------------------------------------------

CLOSE_WAIT_S = 60  # a bound for the test, far above serve.timeout_s=3 (twice: the backlog)


def closed_by_server(socks, bound_s):
    """Wait (at most bound_s in all) until the server closes each socket:
    recv gives EOF or a reset. Returns (closed, still open)."""
    deadline = time.monotonic() + bound_s
    closed = 0
    for s in socks:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            s.settimeout(min(left, 5))
            try:
                if s.recv(4096) == b"":
                    closed += 1
                    break
            except socket.timeout:
                continue
            except OSError:  # reset by the server: closed too
                closed += 1
                break
    return closed, len(socks) - closed

def serve_case(work, mode, data, base_port, pid):
    socks = []
    stop = threading.Event()
    try:
        if mode == "slow-headers":
            for _ in range(300):
                try:
                    s = socket.create_connection(("127.0.0.1", base_port), timeout=5)
                    s.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
                    socks.append(s)
                except OSError:
                    pass
            for _ in range(10):  # five seconds of one byte each per connection
                for s in list(socks):
                    try:
                        s.sendall(b"a")
                    except OSError:
                        socks.remove(s)
                time.sleep(0.5)
            # Then they stop, headers still unfinished: serve closes each one
            # after serve.timeout_s (3 s here) without progress. Bounded wait.
            closed, still_open = closed_by_server(socks, CLOSE_WAIT_S)
            ok = still_open == 0 and closed > 0
            msg = (f"slow-headers: serve closed {closed} of {closed + still_open} connections "
                   f"that stopped sending mid-headers (serve.timeout_s=3, waited at most {CLOSE_WAIT_S} s)")
            print(("ok   " if ok else "FAIL ") + msg, flush=True)
            if not ok:
                failures.append(msg)
        elif mode == "huge-headers":
            def one():
                try:
                    s = socket.create_connection(("127.0.0.1", base_port), timeout=10)
                    s.sendall(b"GET /metrics HTTP/1.1\r\n")
                    line = b"X-Big: " + b"y" * 8000 + b"\r\n"
                    for _ in range(16 * MIB // len(line)):
                        s.sendall(line)
                except OSError:
                    pass  # the server closed on us: what it should do
            ts = [threading.Thread(target=one) for _ in range(40)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(60)
        elif mode == "many-streams":
            for _ in range(300):
                try:
                    s = socket.create_connection(("127.0.0.1", base_port), timeout=5)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    s.sendall(b"GET /api/v1/stream HTTP/1.1\r\nHost: x\r\n\r\n")
                    socks.append(s)
                except OSError:
                    pass
            time.sleep(5)  # pushes once a second into clients that never read
        # Still serving: a fresh client gets its answer.
        ok = False
        try:
            s = socket.create_connection(("127.0.0.1", base_port), timeout=10)
            s.settimeout(10)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            ok = s.recv(64).startswith(b"HTTP/1.1 200")
            s.close()
        except OSError:
            pass
        check(mode, pid, ok, "" if ok else "; then /metrics did not answer 200")
    finally:
        stop.set()
        for s in socks:
            s.close()


def main():
    args = sys.argv[1:]
    out_json = None
    if args[:1] == ["--json"]:
        out_json, args = args[1], args[2:]
    cases = args or list(BOUNDS_KIB)
    work = tempfile.mkdtemp(prefix="fr-hostile.")
    try:
        # The cap itself: its largest allowed value (64 MiB, past the log's
        # default 8 MiB write buffer) must still open the log.
        cap = subprocess.Popen([BIN, "--data", os.path.join(work, "cap"), "--set",
                                "ingest.max_event_bytes=67108864", "ingest", "--source",
                                "http://127.0.0.1:9/v2/stream/recentchange"],
                               stderr=subprocess.PIPE, text=True)
        opened = False
        for line in cap.stderr:
            if "into topic" in line or "error" in line:
                opened = "into topic" in line
                break
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=30)
        print(("ok   " if opened else "FAIL ") + "ingest.max_event_bytes=64 MiB opens the log")
        if not opened:
            failures.append("ingest.max_event_bytes=64 MiB does not open the log")
        events = valid_events(20)
        for mode in ("endless-line", "comment", "huge-id", "trickle"):
            if mode in cases:
                sse_case(work, mode, events)
        serve_modes = [m for m in ("slow-headers", "huge-headers", "many-streams") if m in cases]
        for mode in serve_modes:  # a fresh serve per case: its peak is the case's
            data = os.path.join(work, "serve")
            os.makedirs(data, exist_ok=True)
            srv, url = start_listening([BIN, "--data", data, "--set", "serve.timeout_s=3", "serve", "--listen",
                                        "127.0.0.1:0"], "serve", stderr=subprocess.DEVNULL)
            try:
                serve_case(work, mode, data, port_of(url), srv.pid)
            finally:
                stop(srv)
    finally:
        remove_work(work)
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"peak_rss_kib": figures, "bounds_kib": BOUNDS_KIB}, f, indent=1)
    exit_on_failures(failures, "hostile-peer memory checks")
    print("every hostile peer: freshet's peak RSS stayed under its bound and it kept working")


if __name__ == "__main__":
    main()
