#!/usr/bin/env bash
# live_rss.sh — steady-state live RSS of `freshet process` (issue 5, item 12).
#
# For each binary given, one chain `freshet feed --synthetic --rate RATE`
# -> `freshet ingest` -> `freshet process` (1 s trigger) runs on its own data
# directory; all chains run at once, so every binary sees the same window
# and the same machine load (feed and ingest are always the first binary's:
# only the processor differs). Each processor's VmRSS, RssAnon and RssFile
# (/proc/PID/status) are sampled every 0.5 s for SECS seconds, and the
# median (max) of each 30 s block is printed. The 2-minute dedup horizon
# (process.lateness_s) fills at about 120 s, so the last block of a run of
# at least 150 s is the steady state. At the end the five largest mappings
# by Rss (/proc/PID/smaps) of each processor are printed.
#
# usage: bench/live_rss.sh [SECS] [RATE] [BIN...]
#        (defaults: 150 s, 1,000 events/s, $FR_BUILD_DIR/freshet with
#        FR_BUILD_DIR=build/release)
# Only loopback addresses are used; every process started is stopped by pid.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SECS=${1:-150}; RATE=${2:-1000}
shift $(($# < 2 ? $# : 2))
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("${FR_BUILD_DIR:-$here/../build/release}/freshet")
abs=()
for b in "${bins[@]}"; do
    [ -x "$b" ] || { echo "live_rss.sh: $b is not an executable" >&2; exit 2; }
    abs+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")")
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-rss.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"
FEED=${abs[0]}

feed_url() { for _ in $(seq 100); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done; awk '/^listening/ {print $2; exit}' "$1"; }

procs=()
for i in "${!abs[@]}"; do
    "$FEED" feed --listen 127.0.0.1:0 --synthetic --seed 4 --rate "$RATE" >"feed$i.out" 2>"feed$i.log" &
    pids+=($!)
    url=$(feed_url "feed$i.out")
    "$FEED" --data "d$i" ingest --source "$url" 2>"ingest$i.log" &
    pids+=($!)
    "${abs[$i]}" --data "d$i" --set process.trigger_ms=1000 process 2>"process$i.log" &
    pids+=($!)
    procs+=($!)
done

date +%s.%N >t0.txt
python3 - "$SECS" "${procs[@]}" >samples.txt <<'PY'
import sys, time
secs, pids = float(sys.argv[1]), sys.argv[2:]
t0 = time.monotonic()
while time.monotonic() - t0 < secs:
    t = time.monotonic() - t0
    for i, pid in enumerate(pids):
        try:
            with open(f"/proc/{pid}/status") as st:
                f = {l.split(":")[0]: int(l.split()[1]) for l in st if l.startswith(("VmRSS", "RssAnon", "RssFile"))}
            print(f"{i} {t:.2f} {f['VmRSS']} {f['RssAnon']} {f['RssFile']}", flush=True)
        except (FileNotFoundError, ProcessLookupError, KeyError, ValueError):
            pass
    time.sleep(0.5)
PY

for i in "${!procs[@]}"; do
    awk '/^Size:/ {size=$2} /^Rss:/ {print $2, size, name} /^[0-9a-f]+-[0-9a-f]+ / {name=($6 == "" ? "[anon]" : $6)}' \
        "/proc/${procs[$i]}/smaps" 2>/dev/null | sort -rn | head -5 >"maps$i.txt" || true
    kill -TERM "${procs[$i]}" 2>/dev/null || true
done
for p in "${procs[@]}"; do wait "$p" 2>/dev/null || true; done

echo "live at $RATE events/s, trigger 1000 ms, ${SECS} s, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - samples.txt "${abs[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
bins = sys.argv[2:]
def mb(kb): return kb / 1024
blocks = sorted({int(float(r[1]) // 30) for r in rows})
head = " | ".join(f"{b * 30}-{b * 30 + 30} s" for b in blocks)
print(f"VmRSS median (max) MB per 30 s block; RssAnon median MB in the last block")
print(f"| processor | {head} | RssAnon last |")
for i, name in enumerate(bins):
    mine = [r for r in rows if int(r[0]) == i]
    cells = []
    for b in blocks:
        v = [int(r[2]) for r in mine if int(float(r[1]) // 30) == b]
        cells.append(f"{mb(statistics.median(v)):.1f} ({mb(max(v)):.1f})" if v else "-")
    last = [int(r[3]) for r in mine if int(float(r[1]) // 30) == blocks[-1]]
    anon = f"{mb(statistics.median(last)):.1f}" if last else "-"
    print(f"| {name} | {' | '.join(cells)} | {anon} |")
PY
for i in "${!abs[@]}"; do
    echo "${abs[$i]}: largest mappings at the end (Rss kB, Size kB, name):"
    sed 's/^/  /' "maps$i.txt"
    grep -c 'epoch .* records' "process$i.log" | sed 's/^/  epochs committed: /'
    grep -o 'dedup [0-9]* keys' "process$i.log" | tail -1 | sed 's/^/  at the end: /'
    python3 - "process$i.log" <<'PY'
import re, sys
pairs = [tuple(map(int, m)) for m in re.findall(r"batch (\d+) ms, commit (\d+) ms", open(sys.argv[1]).read())]
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0
b = [x for x, _ in pairs]; c = [y for _, y in pairs]
print(f"  batch p50 {pct(b, .5)} ms, p99 {pct(b, .99)} ms; commit p50 {pct(c, .5)} ms, p99 {pct(c, .99)} ms")
PY
    # when its own compaction rounds ran (s since sampling began), to tell
    # the blocks that hold one
    python3 - "process$i.log" "$(cat t0.txt)" <<'PY'
import datetime, re, sys
t0 = float(sys.argv[2])
rounds = []
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)Z .*maintenance: (\d+) files \((\d+) KiB\).* in (\d+) ms", line)
    if m:
        end = datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp() - t0
        rounds.append(f"{end - int(m.group(4)) / 1000:.0f}-{end:.0f} s ({m.group(2)} files, {int(m.group(3)) // 1024} MiB)")
print("  compaction rounds: " + (", ".join(rounds) if rounds else "none"))
PY
done
