#!/usr/bin/env python3
"""rss_sample.py — sample a process's resident set size from /proc until it
exits: one line "unix_ms rss_kb" per sample. Reads only /proc/PID/status.
usage: rss_sample.py PID OUT [INTERVAL_S]"""
import sys
import time

pid, out = sys.argv[1], sys.argv[2]
interval = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
with open(out, "w") as f:
    while True:
        try:
            with open(f"/proc/{pid}/status") as st:
                rss = next(int(l.split()[1]) for l in st if l.startswith("VmRSS:"))
        except (FileNotFoundError, ProcessLookupError, StopIteration):
            break
        f.write(f"{int(time.time() * 1000)} {rss}\n")
        f.flush()
        time.sleep(interval)
