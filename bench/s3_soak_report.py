#!/usr/bin/env python3
"""s3_soak_report.py — the Markdown summary of one bench/s3_soak.sh run
(issue 31), read from its OUT directory: live data files per table over time
(s3soak-files.tsv), commit ms of the first against the last 1,000 epochs
(s3soak-epochs.tsv), the processor's S3 requests per epoch, split by method
and object kind (s3soak-stats.json, the fault proxy's counts), maintenance
rounds (s3soak-maintenance.log) and the peak RSS of each process
(s3soak-rss.tsv). Reads files only; prints to stdout.
usage: s3_soak_report.py OUT [WINDOW]"""
import json
import os
import re
import sys

out = sys.argv[1]
window = int(sys.argv[2]) if len(sys.argv) > 2 else 1000


def path(name):
    return os.path.join(out, name)


def pct(xs, q):
    """Nearest-rank percentile (q in 0..1) of a non-empty list."""
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(-(-q * len(xs) // 1)) - 1))
    return xs[k]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


machine = open(path("s3soak-machine.txt")).read().strip().splitlines()
epochs = [tuple(int(v) for v in l.split()) for l in open(path("s3soak-epochs.tsv")) if l.strip()]
n = len(epochs)
print("# S3 soak (issue 31)\n")
for l in machine:
    print("- " + l)
print()
if n == 0:
    print("no epoch committed")
    sys.exit(1)
span_s = (epochs[-1][0] - epochs[0][0]) / 1000
records = sum(e[2] for e in epochs)
print(f"{n:,} epochs committed (numbers {epochs[0][1]}..{epochs[-1][1]}) in {span_s:,.0f} s "
      f"({n / span_s if span_s else 0:.2f} epochs/s), {records:,} records "
      f"({records / n:.0f} per epoch)\n")

# ---- live files over time
rows = []
for l in open(path("s3soak-files.tsv")):
    f = l.split()
    if len(f) < 5:
        continue
    tables = dict(kv.split("=", 1) for kv in f[4:])
    rows.append((int(f[0]), int(f[1]), f[2], int(f[3]), tables))
if rows:
    names = sorted(rows[-1][4])
    short = {x: x.replace("_recentchange", "").replace("gold_", "g_") for x in names}
    print("## Live data files / snapshots kept per table over time\n")
    print("Each cell: live data files / snapshots kept. req/epoch: the processor's S3 requests "
          "per epoch since the previous sample.\n")
    print("| s | epoch | load1 | req/epoch | " + " | ".join(short[x] for x in names) + " |")
    print("|---:|---:|---:|---:|" + "---:|" * len(names))
    prev_e, prev_r = -1, 0
    for s, e, load, r, t in rows:
        rate = f"{(r - prev_r) / (e - prev_e):.1f}" if e > prev_e else "-"
        prev_e, prev_r = e, r
        print(f"| {s} | {e} | {load} | {rate} | " + " | ".join(t.get(x, "-") for x in names) + " |")
    print()

# ---- commit ms, first against last window (halves when the run was short)
if n < 2 * window and n >= 200:
    print(f"only {n:,} epochs: the first and last {n // 2:,} are compared instead of {window:,}\n")
    window = n // 2
if n >= 2 * window:
    first = [e[4] for e in epochs[:window]]
    last = [e[4] for e in epochs[-window:]]
    print(f"## Commit ms, first {window:,} against last {window:,} epochs\n")
    print("| epochs | median | p90 | p99 | max | mean |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, xs in ((f"{epochs[0][1]}..{epochs[window - 1][1]}", first),
                      (f"{epochs[-window][1]}..{epochs[-1][1]}", last)):
        print(f"| {label} | {median(xs):g} | {pct(xs, .9)} | {pct(xs, .99)} | {max(xs)} | "
              f"{sum(xs) / len(xs):.1f} |")
    rm = median(last) / median(first) if median(first) else float("inf")
    r99 = pct(last, .99) / pct(first, .99) if pct(first, .99) else float("inf")
    verdict = "within" if rm <= 1.5 and r99 <= 1.5 else "NOT within"
    print(f"\nratio last/first: median {rm:.2f}x, p99 {r99:.2f}x: {verdict} the 1.5x target\n")
    # the same per decile of the run, to see a trend rather than two ends
    print("commit ms median / p99 by tenth of the run: " + ", ".join(
        f"{median(c):g}/{pct(c, .99)}" for c in
        ([e[4] for e in epochs[i * n // 10:(i + 1) * n // 10]] for i in range(10)) if c) + "\n")
else:
    print(f"fewer than {2 * window} epochs: no first/last comparison\n")

# ---- S3 requests
st = json.load(open(path("s3soak-stats.json")))
req = st["requests"]
print("## S3 requests of the processor (counted by the proxy)\n")
print(f"{req:,} requests for {n:,} epochs: **{req / n:.1f} per epoch**; "
      f"{st.get('bytes_up', 0) / n / 1024:.0f} KiB up and {st.get('bytes_down', 0) / n / 1024:.0f} KiB "
      f"down per epoch; moto took {st.get('upstream_ms', 0) / req:.1f} ms per request on average "
      f"({st.get('upstream_ms', 0) / n:.0f} ms per epoch, measured at the proxy); "
      f"faults injected: {sum(st['faults'].values())}\n")
print("| method | requests | per epoch |")
print("|---|---:|---:|")
for m, c in sorted(st.get("methods", {}).items(), key=lambda kv: -kv[1]):
    print(f"| {m} | {c:,} | {c / n:.2f} |")
print("\n| method, object | requests | per epoch | share |")
print("|---|---:|---:|---:|")
for m, c in sorted(st.get("kinds", {}).items(), key=lambda kv: -kv[1]):
    print(f"| {m} | {c:,} | {c / n:.2f} | {100 * c / req:.1f} % |")
print()

# ---- maintenance rounds
pat = re.compile(r"maintenance: (\d+) files \((\d+) KiB\) compacted into (\d+), live files (\d+) -> (\d+), "
                 r"(\d+) snapshots expired, (\d+) files deleted, (\d+) orphans removed(.*) in (\d+) ms")
ms = [pat.search(l) for l in open(path("s3soak-maintenance.log"))]
ms = [m for m in ms if m]
if ms:
    dur = [int(m[10]) for m in ms]
    print(f"## Maintenance\n\n{len(ms)} rounds: {sum(int(m[1]) for m in ms):,} files compacted into "
          f"{sum(int(m[3]) for m in ms):,}, {sum(int(m[6]) for m in ms):,} snapshots expired, "
          f"{sum(int(m[7]) for m in ms):,} files deleted, {sum(int(m[8]) for m in ms):,} orphans removed "
          f"({sum(1 for m in ms if 'not looked' not in m[9])} rounds looked for orphans); "
          f"a round took median {median(dur):g} ms, max {max(dur)} ms; live files after the last round: "
          f"{ms[-1][5]}; the rounds took {sum(dur) / 1000:,.0f} s of the {span_s:,.0f} s between the first "
          f"and the last epoch ({100 * sum(dur) / 1000 / span_s:.0f} %), in which no epoch was cut\n")
    # the epoch after a round carries the records that arrived during it
    after = {}
    for i, e in enumerate(epochs[:-1]):
        if (e[1] + 1) % 100 == 0:
            after[epochs[i + 1][1]] = epochs[i + 1]
    if after:
        recs = [e[2] for e in after.values()]
        com = [e[4] for e in after.values()]
        print(f"the epochs right after a round: median {median(recs):,.0f} records (max {max(recs):,}), "
              f"commit median {median(com):g} ms (max {max(com)} ms); all epochs: median "
              f"{median([e[2] for e in epochs]):,.0f} records\n")
problems = open(path("s3soak-problems.log")).read().splitlines()
print(f"warnings and errors in the processor's log: {len(problems)}"
      + ("" if not problems else "; first: `" + problems[0][:200] + "`") + "\n")

# ---- peak RSS
rss = [l.split() for l in open(path("s3soak-rss.tsv")) if l.strip()]
if rss:
    last = rss[-1]
    print("## Peak RSS (VmHWM)\n")
    print("| process | peak RSS MB |")
    print("|---|---:|")
    for i, name in enumerate(("freshet process", "freshet ingest", "freshet feed", "moto (S3 server)",
                              "fault proxy (counting)"), 1):
        print(f"| {name} | {int(last[i]) / 1024:.1f} |")
    print()
