"""fr_testlib.py — what the Python integration tests share (damage.py,
damage_peers.py, disk_full.py, disk_full_live.py, hostile_memory.py): starting a freshet
process that prints "listening URL", stopping one, removing the work
directory, and the failure summary that ends a test.

Invariants: every process started here binds 127.0.0.1 (the callers pass
--listen 127.0.0.1:0 or a loopback URL); a stop is bounded (SIGTERM, then
SIGKILL after the timeout). KEEP=1 in the environment keeps the work
directory for a post-mortem. No threads.
"""
import os
import shutil
import signal
import subprocess
import sys


def start_listening(cmd, what, **popen):
    """Start cmd with its stdout piped and read it up to the "listening URL"
    line freshet prints once it accepts. Returns (process, the URL as
    printed); without that line the process is killed and AssertionError
    raised."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, **popen)
    url = None
    for line in proc.stdout:
        if line.startswith("listening"):
            url = line.split()[1]
            break
    if url is None:
        proc.kill()
        proc.wait()
        raise AssertionError(f"{what} did not start")
    return proc, url


def synthetic_events(binary, path, seed, count, *extra):
    """Write count synthetic events (feed --dump, seed, from 2026-11-01,
    8 events/s of event time, 3% duplicates, 1% late; extra: more feed
    options) to path as NDJSON."""
    with open(path, "wb") as f:
        subprocess.run([binary, "feed", "--dump", "--synthetic", "--seed", str(seed), "--count", str(count),
                        "--start", "2026-11-01T00:00:00Z", "--event-rate", "8", "--dup-rate", "0.03",
                        "--late-rate", "0.01", *extra], stdout=f, check=True)


def first_lines(src, dst, n):
    """Copy the first n lines of src to dst."""
    with open(src, "rb") as s, open(dst, "wb") as d:
        for i, line in enumerate(s):
            if i == n:
                break
            d.write(line)


def port_of(url):
    """The port of http://127.0.0.1:PORT[/...]."""
    return int(url.split("/")[2].rsplit(":", 1)[1])


def stop(proc, timeout=30):
    """SIGTERM, then SIGKILL if it has not exited within timeout seconds."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def remove_work(work):
    """Remove the test's work directory, unless KEEP=1 (then say where)."""
    if os.environ.get("KEEP") == "1":
        print("kept", work)
    else:
        shutil.rmtree(work, ignore_errors=True)


def exit_on_failures(failures, what):
    """If any check failed: list them under "N <what> failed:" and exit 1."""
    if failures:
        print(f"{len(failures)} {what} failed:")
        for f in failures:
            print("  " + f)
        sys.exit(1)
