#!/usr/bin/env bash
# process.sh — the processor's two figures (issue 5):
#   backfill: N events (default 1,000,000) already in the log, to all six
#     tables committed, in events/s, with peak RSS;
#   live: `freshet feed` at RATE events/s (default 1,000) for SECS seconds
#     (default 60) through ingest and process with a 1-second trigger:
#     freshness (log entry to committed in the lake) p50/p99/max, batch
#     duration against the trigger, steady RSS of the processor.
# usage: bench/process.sh [N] [RATE] [SECS]      (FR_BUILD_DIR=build/release)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=${FR_BUILD_DIR:-$here/../build/release}/freshet
N=${1:-1000000}; RATE=${2:-1000}; SECS=${3:-60}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-proc.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"

feed_url() { for _ in $(seq 100); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done; awk '/^listening/ {print $2; exit}' "$1"; }

# ---- backfill
start=$(date -u -d '-12 hours' +%Y-%m-%dT%H:%M:%SZ)
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 3 --count "$N" --event-rate 40 --start "$start" \
    --dup-rate 0.01 --late-rate 0.005 --malformed-rate 0.005 --close-at-end >feed1.out 2>feed1.log &
pids+=($!)
url=$(feed_url feed1.out)
"$BIN" --data bf --set ingest.stall_timeout_s=2 ingest --source "$url" 2>ingest1.log &
ing=$!
while :; do
    sleep 1
    end=$("$BIN" --data bf log list --json | python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0)
    [ "$end" -ge $((N * 98 / 100)) ] && sleep 2 && break
done
kill -TERM "$ing"; wait "$ing" || true
records=$("$BIN" --data bf log list --json | python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))')
log_bytes=$("$BIN" --data bf log list --json | python3 -c 'import json,sys; print(sum(p["bytes"] for p in json.load(sys.stdin)))')
/usr/bin/time -v "$BIN" --data bf --set process.epoch_max_records=100000 process --once 2>backfill.log
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' backfill.log)
secs=$(echo "$wall" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' backfill.log)
cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u + s}' backfill.log)
echo "backfill: $records log records ($((log_bytes / 1000000)) MB) to six tables in ${secs} s:" \
     "$(awk -v r="$records" -v s="$secs" 'BEGIN{printf "%.0f", r / s}') events/s," \
     "CPU ${cpu} s, peak RSS $((rss / 1024)) MB"

# ---- live
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 4 --rate "$RATE" >feed2.out 2>feed2.log &
pids+=($!)
url=$(feed_url feed2.out)
"$BIN" --data live ingest --source "$url" 2>ingest2.log &
pids+=($!)
"$BIN" --data live --set process.trigger_ms=1000 process 2>process2.log &
proc=$!
pids+=($proc)
sleep "$SECS"
rss_live=$(awk '/VmRSS/ {print $2}' /proc/$proc/status)
kill -TERM "$proc"; wait "$proc" || true
"$BIN" --data live tables --json --files > live_tables.json
echo "live at $RATE events/s, trigger 1000 ms, ${SECS} s: processor RSS $((rss_live / 1024)) MB"
python3 - process2.log <<'PY'
import re, sys
pairs = [tuple(map(int, m)) for m in re.findall(r"batch (\d+) ms, commit (\d+) ms", open(sys.argv[1]).read())]
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))]
b = [x for x, _ in pairs]; c = [y for _, y in pairs]
print(f"  {len(pairs)} epochs: batch p50 {pct(b, .5)} ms, p99 {pct(b, .99)} ms, max {max(b)} ms;"
      f" commit p50 {pct(c, .5)} ms, p99 {pct(c, .99)} ms (trigger 1000 ms)")
PY
[ -d "$here/node_modules/@duckdb/node-api" ] ||
    (cd "$here" && npm install --no-audit --no-fund --loglevel=error && touch node_modules)
node "$here/peers/freshness.mjs" live_tables.json /dev/null |
    awk '{printf "  freshness over %d rows: p50 %d ms, p99 %d ms, max %d ms\n", $1, $2, $3, $4}'
