#!/usr/bin/env bash
# group_maint.sh — a single-process `freshet rebuild` never writes beside
# the scale-out pipelines (ADR 0045, docs/SCALEOUT.md): over the embedded
# log with 2 partitions (loopback only),
#
#   A. a single-process lake; a rebuild is paused (SIGSTOP) after its start
#      checks, a shard (`process --partition 0`, another pipeline lock, as
#      on another machine) commits to the same tables meanwhile, then the
#      rebuild resumes: its commit is refused inside the catalog's
#      compare-and-swap, naming the shard's pipeline, and silver keeps the
#      shard's rows (no rebuild snapshot lands).
#   (On a group's lake both commands run, with the group stopped:
#   tests/integration/group_rebuild.sh and group_dlq.sh, ADR 0066, 0067.)
#
# Usage: group_maint.sh [SEED] [COUNT]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SEED=${1:-11}
COUNT=${2:-20000}
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-gmaint.XXXXXX")
feed_pid=""; ing_pid=""; rb_pid=""
cleanup() {
    [ -n "$rb_pid" ] && { kill -CONT "$rb_pid" 2>/dev/null; kill -9 "$rb_pid" 2>/dev/null; } || true
    [ -n "$ing_pid" ] && kill -9 "$ing_pid" 2>/dev/null || true
    [ -n "$feed_pid" ] && kill -TERM "$feed_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

# One log for both lakes: COUNT synthetic events (duplicates, malformed,
# late) in 2 partitions of lake A's embedded log (a/log), copied to B.
"$BIN" feed --listen 127.0.0.1:0 --rate 20000 --synthetic --seed "$SEED" --count "$COUNT" \
    --start 2026-11-01T00:00:00Z --event-rate 20 --dup-rate 0.02 --malformed-rate 0.01 \
    --late-rate 0.01 >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { echo "feed did not start"; cat feed.log; exit 1; }
lg=(--set log.partitions=2)
"$BIN" --data "$work/a" "${lg[@]}" ingest --source "$url" 2>ingest.log &
ing_pid=$!
log_end() {
    "$BIN" --data "$work/a" "${lg[@]}" log list --json 2>>list.log |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo -1
}
prev=-1; still=0
for _ in $(seq 240); do
    sleep 0.5
    end=$(log_end)
    if [ "$end" = "$prev" ] && [ "$end" -gt 0 ]; then still=$((still + 1)); else still=0; fi
    prev=$end
    [ "$still" -ge 4 ] && break
done
[ "$(log_end)" -gt 0 ] || { tail -5 ingest.log list.log; fail "nothing reached the log"; }
kill -TERM "$ing_pid"; wait "$ing_pid" || fail "ingest did not exit cleanly"
ing_pid=""
kill -TERM "$feed_pid"; wait "$feed_pid" || true
feed_pid=""
echo "log: $(log_end) records in 2 partitions"
snapshots_with() {  # how many snapshots of table $2 in lake $1 carry summary key $3
    python3 - "$@" <<'PY'
import glob, json, os, sys
lake, table, key = sys.argv[1:4]
meta = glob.glob(os.path.join(lake, "lake/warehouse/wiki", table, "metadata/*.metadata.json"))
newest = max(meta, key=os.path.getmtime)
snaps = json.load(open(newest)).get("snapshots", [])
print(sum(1 for s in snaps if key in s.get("summary", {})))
PY
}

# A. A rebuild paused past its start checks; a shard commits meanwhile.
a=(--data "$work/a" "${lg[@]}")
"$BIN" "${a[@]}" process --once 2>process-a.log || fail "process --once"
"$BIN" "${a[@]}" rebuild >rebuild-a.out 2>rebuild-a.log &
rb_pid=$!
for _ in $(seq 3000); do
    grep -q 'bronze rows in' rebuild-a.log 2>/dev/null && break
    kill -0 "$rb_pid" 2>/dev/null || break
    sleep 0.01
done
kill -STOP "$rb_pid" 2>/dev/null || true
grep -q 'bronze rows in' rebuild-a.log || fail "the rebuild did not start its replay"
[ "$(snapshots_with a silver_recentchange freshet.rebuild)" = 0 ] ||
    fail "the rebuild committed before it could be paused: nothing shown (a larger COUNT)"
echo "rebuild paused after its start checks (pid $rb_pid)"
"$BIN" "${a[@]}" process --partition 0 --once 2>shard-a.log || fail "the shard of partition 0"
echo "a shard of partition 0 committed $(snapshots_with a silver_recentchange freshet.pipeline-id) epoch(s) to silver meanwhile (pipelines freshet and freshet-p0)"
kill -CONT "$rb_pid"
rc=0; wait "$rb_pid" || rc=$?
rb_pid=""
[ "$rc" = 1 ] || { cat rebuild-a.log; fail "the resumed rebuild exited $rc, not 1 (refused)"; }
grep -q "rebuild: error: the lake is a consumer group's now (pipeline freshet-p0, " rebuild-a.log ||
    { cat rebuild-a.log; fail "the rebuild's refusal does not name the shard's pipeline"; }
[ "$(snapshots_with a silver_recentchange freshet.rebuild)" = 0 ] || fail "the rebuild's overwrite landed beside the shard"
echo "the resumed rebuild was refused inside the compare-and-swap; no rebuild snapshot landed"

echo "PASS: a single-process rebuild never writes beside a scale-out pipeline"
