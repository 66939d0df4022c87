#!/usr/bin/env bash
# process_replay.sh — deterministic regression tests for the processor's
# restart paths (a crash between the catalog commit and the checkpoint, and
# a lost offsets WAL), which the chaos test only reaches by chance:
#   A: the checkpoint is gone, the WAL is intact;
#   B: the checkpoint and the WAL are both gone;
#   C: the checkpoint is one epoch behind the lake (commit landed, checkpoint not).
# In each case `process --once` must rebuild its state from the epochs'
# recorded ranges, commit nothing twice, and go on with new epochs; the lake
# must equal a control lake built once from the same log.
set -euo pipefail
BIN=${FR_BINARY:?}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
[ -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ] || { echo "skip: tests/interop/node_modules missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-replay.XXXXXX")
feed_pid=""
trap '[ -n "$feed_pid" ] && kill -TERM "$feed_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
start=$(date -u -d '-20 min' +%Y-%m-%dT%H:%M:%SZ)

# One log of 3,000 events with duplicates, late and malformed records,
# ingested in two phases: a copy of the log is kept after the first ~1,500.
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 21 --count 3000 --event-rate 5 --start "$start" \
    --rate 600 --dup-rate 0.02 --late-rate 0.01 --late-ms 300000 --malformed-rate 0.01 \
    --close-at-end >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
count() { "$BIN" --data "$1" log list --json | python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0; }
ingest_until() {  # ingest_until N: run ingest until the log holds at least N records
    "$BIN" --data full --set ingest.stall_timeout_s=1 ingest --source "$url" 2>>ingest.log &
    local ing=$!
    for _ in $(seq 600); do [ "$(count full)" -ge "$1" ] && break; sleep 0.1; done
    kill -TERM "$ing"; wait "$ing" || true
}
ingest_until 1500
cp -r full/log phase1
ingest_until 2990
kill -TERM "$feed_pid"; wait "$feed_pid" || true; feed_pid=""
echo "log: $(count full) records; a copy kept after the first phase"

mkdir control && cp -r full/log control/log
"$BIN" --data control --set process.epoch_max_records=100000 process --once 2>control.log
"$BIN" --data control tables --json --files > control.json

status=0
for scenario in A B; do
    d=lake$scenario
    mkdir "$d" && cp -r phase1 "$d/log"
    run() { "$BIN" --data "$d" --set process.epoch_max_records=400 process --once 2>>"$d.log"; }
    run
    ck="$d/process/freshet"
    case $scenario in
        A) rm "$ck/checkpoint" ;;                    # commit landed, checkpoint lost
        B) rm "$ck/checkpoint" "$ck/offsets.wal" ;;  # and the offsets WAL too
    esac
    rm -rf "$d/log" && cp -r full/log "$d/log"       # the log has grown meanwhile
    run || { echo "FAIL $scenario: process --once failed"; tail -3 "$d.log"; status=1; continue; }
    echo "scenario $scenario: $(grep -c 'already in the lake' "$d.log") epochs recognised as committed, not recommitted"
    "$BIN" --data "$d" tables --json --files > "$d.json"
    node "$SRC/tests/interop/lake_compare.mjs" "$d.json" control.json | sed "s/^/  $scenario: /" || status=1
done
[ "$status" = 0 ] && echo "2 passed, 0 failed" || echo "scenarios failed"
exit $status
