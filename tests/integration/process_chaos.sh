#!/usr/bin/env bash
# process_chaos.sh — the processor's exactly-once proof (ctest label chaos).
#
# `freshet feed` serves a stream with duplicates, late, out-of-order, future
# and malformed events, disconnects and an overlap on resume; ingest and
# process run against it while this script SIGKILLs the processor (and now
# and then ingest) KILLS times at random moments, epochs kept small so that
# many kills land inside a commit. Then, against the feed's ground truth
# and against a control run of the same log with no kills (checked by
# DuckDB in tests/interop/chaos_check.mjs):
#   nothing lost, nothing duplicated, dlq == the injected malformed and
#   future records by reason, late_arrivals == the late events, every gold
#   table equal to the control run's, and gold_edits_per_minute equal to
#   DuckDB SQL over the silver Parquet files.
# Loopback only. Usage: process_chaos.sh [SEED] [KILLS] [COUNT]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SEED=${1:-5}
KILLS=${2:-24}
COUNT=${3:-30000}
RATE=${FR_CHAOS_RATE:-1500}
if [ ! -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ]; then
    echo "skip: tests/interop/node_modules missing (run scripts/setup.sh --test)"; exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-chaos.XXXXXX")
feed_pid=""; ing_pid=""; proc_pid=""
cleanup() {
    for p in $proc_pid $ing_pid; do kill -9 "$p" 2>/dev/null || true; done
    [ -n "$feed_pid" ] && kill -TERM "$feed_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
RANDOM=$SEED

# Event time runs at 30 events/s (about 11 minutes for 20,000 events, so many
# windows settle), served at RATE events/s, starting as long ago as the
# stream spans plus a minute, so that no ordinary event is ahead of its
# ingest time; future events (+1 h) are, as long as the span stays under
# 50 minutes (the gate allows 10 minutes ahead).
span=$((COUNT / 30 + 60))
[ "$span" -lt 3000 ] || { echo "COUNT too large: the event-time span must stay under 50 minutes"; exit 2; }
start=$(date -u -d "-$span sec" +%Y-%m-%dT%H:%M:%SZ)
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count "$COUNT" --rate "$RATE" \
    --event-rate 30 --start "$start" \
    --disconnect-every 1700 --overlap 25 --dup-rate 0.02 --late-rate 0.01 --late-ms 300000 \
    --ooo-rate 0.05 --ooo-ms 5000 --future-rate 0.003 --malformed-rate 0.01 \
    --malformed-kinds truncated,missing_meta_id,missing_meta_dt,missing_wiki,missing_type,namespace_string,bot_string,meta_dt_not_date,meta_id_not_uuid,type_invalid \
    --canary-rate 0.001 --truth truth.json >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { echo "feed did not start"; cat feed.log; exit 1; }

common=(--data "$work/data" --set ingest.backoff_min_ms=50 --set ingest.backoff_max_ms=300
        --set process.trigger_ms=150 --set process.epoch_max_records=700)
start_ingest() { "$BIN" "${common[@]}" ingest --source "$url" 2>>ingest.log & ing_pid=$!; }
start_process() { "$BIN" "${common[@]}" process 2>>process.log & proc_pid=$!; }
log_end() {
    "$BIN" --data "$work/data" log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0
}

start_ingest
kills=0; ingest_kills=0
while [ "$kills" -lt "$KILLS" ]; do
    start_process
    sleep "0.$(printf '%03d' $((100 + RANDOM % 600)))"
    kill -9 "$proc_pid" 2>/dev/null || true
    wait "$proc_pid" 2>/dev/null || true
    proc_pid=""
    kills=$((kills + 1))
    if [ $((RANDOM % 4)) = 0 ]; then
        kill -9 "$ing_pid" 2>/dev/null || true; wait "$ing_pid" 2>/dev/null || true
        ingest_kills=$((ingest_kills + 1))
        start_ingest
    fi
done

# Let ingest reach the end of the stream, then let process drain the log.
prev=-1; still=0
for _ in $(seq 1200); do
    sleep 0.5
    end=$(log_end)
    if [ "$end" = "$prev" ]; then still=$((still + 1)); else still=0; fi
    prev=$end
    [ "$still" -ge 6 ] && break
done
kill -TERM "$ing_pid"; wait "$ing_pid" || { echo "ingest did not stop cleanly"; exit 1; }
ing_pid=""
kill -TERM "$feed_pid"; wait "$feed_pid" || true
feed_pid=""
"$BIN" "${common[@]}" process --once 2>>process.log || {
    echo "FAIL: the final process --once failed:"; tail -5 process.log; exit 1; }

# Control run: the same log, processed once with no kills, in epochs that
# take the decode-ahead path (the killed runs' 700-record epochs are decoded
# inline), so the comparison also checks that the two paths agree.
mkdir -p control
cp -r data/log control/log
"$BIN" --data "$work/control" --set process.epoch_max_records=5000 --set process.decode_ahead_records=1000 process --once 2>control.log || {
    echo "FAIL: the control run failed:"; tail -5 control.log; exit 1; }

"$BIN" --data "$work/data" tables --json --files > chaos_tables.json
"$BIN" --data "$work/control" tables --json --files > control_tables.json
replays=$(grep -c 'replaying planned epoch' process.log || true)
rebuilt=$(grep -c 'already in the lake' process.log || true)
echo "kills: $kills of process, $ingest_kills of ingest; restarts that replayed a planned epoch: $replays, of which already committed (state rebuilt, not recommitted): $rebuilt"
"$BIN" --data "$work/data" verify > verify.out 2>&1 || { echo "FAIL: freshet verify on the chaos lake:"; tail -12 verify.out; exit 1; }
tail -1 verify.out | sed 's/^/freshet verify on the chaos lake: /'
node "$SRC/tests/interop/chaos_check.mjs" truth.json chaos_tables.json control_tables.json "$(log_end)"
