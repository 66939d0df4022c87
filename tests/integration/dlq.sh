#!/usr/bin/env bash
# dlq.sh — `freshet dlq list` and `freshet dlq replay` end to end (ctest
# label integration).
#
# A faulty feed (duplicates, late events, events an hour in the future,
# truncated JSON, records without wiki, and 6,000-byte records) is ingested
# part way and processed with process.max_event_bytes=4096, so the dlq
# holds future_event, oversize, not_json and missing_wiki rows. Then,
# checked by DuckDB (tests/interop/dlq_check.mjs):
#   1. dlq list names the injected kinds, and its counts (--json) agree
#      with the dlq table;
#   2. a replay under unchanged rules, and a dry run under the new rules,
#      change nothing;
#   3. under the new rules (max_event_bytes 1 MiB, max_future_s 7200) the
#      oversize rows are replayed while SIGKILL interrupts at random
#      moments, and the future_event rows through every step a crash can
#      stop at (--crash-after files, staged, commit), each followed by a
#      rerun; then a replay of everything lands nothing more;
#   4. every oversize and future_event dead letter landed exactly once, no
#      other did, each where its outcome says, and bronze == consumed - dlq
#      + dlq_replays; dlq list reports the replayed counts;
#   5. the processor then continues with the rest of the stream, and the
#      same holds, with silver still free of repeated meta_ids.
# Loopback only. Usage: dlq.sh [SEED]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SEED=${1:-5}
COUNT=6000
if [ ! -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ]; then
    echo "skip: tests/interop/node_modules missing (run scripts/setup.sh --test)"; exit 77
fi
command -v node >/dev/null || { echo "skip: node is not installed"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-dlq.XXXXXX")
feed_pid=""; ing_pid=""; bg_pid=""
cleanup() {
    for p in $bg_pid $ing_pid; do kill -9 "$p" 2>/dev/null || true; done
    [ -n "$feed_pid" ] && kill -TERM "$feed_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
RANDOM=$SEED
check() { node "$SRC/tests/interop/dlq_check.mjs" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
ck=data/process/freshet/checkpoint
old=(--set process.max_event_bytes=4096)
new=(--set process.max_event_bytes=1048576 --set process.max_future_s=7200)
snapshots() { # the current snapshot id of every table that has one, one line
    "$BIN" --data data tables --json |
        python3 -c 'import json,sys; print(" ".join("%s=%s" % (t["name"], t["current_snapshot_id"]) for t in json.load(sys.stdin)["tables"] if t["current_snapshot_id"] != -1))'
}
log_end() {
    "$BIN" --data data log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0
}

er=20
start=$(date -u -d "-$((COUNT / er + 60)) sec" +%Y-%m-%dT%H:%M:%SZ)
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count "$COUNT" --rate 2000 \
    --event-rate "$er" --start "$start" --dup-rate 0.02 --late-rate 0.01 --late-ms 300000 \
    --future-rate 0.01 --malformed-rate 0.02 --malformed-kinds truncated,missing_wiki,oversize \
    --oversize-bytes 6000 >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { cat feed.log; fail "feed did not start"; }
ingest_until() { # ingest_until MIN_RECORDS: then stop ingest
    "$BIN" --data data ingest --source "$url" 2>>ingest.log & ing_pid=$!
    prev=-1; still=0
    for _ in $(seq 600); do
        sleep 0.1
        end=$(log_end)
        [ "$end" -ge "$1" ] && break
        if [ "$end" = "$prev" ]; then still=$((still + 1)); else still=0; fi
        prev=$end
        [ "$still" -ge 10 ] && break
    done
    kill -TERM "$ing_pid"; wait "$ing_pid" || fail "ingest did not stop cleanly"
    ing_pid=""
}

ingest_until 4000
"$BIN" --data data "${old[@]}" process --once 2>process.log || fail "process --once"
echo "lake: $(log_end) log records"

# 1. dlq list: the injected kinds, counts that agree with the table.
"$BIN" --data data dlq list --samples 2 >list.txt || fail "dlq list"
head -8 list.txt
for r in future_event oversize not_json missing_wiki; do
    grep -Eq "^  $r +[1-9]" list.txt || fail "dlq list does not show $r"
done
grep -q 'record is 6000 bytes, cap 4096' list.txt || fail "no oversize sample with its detail"
"$BIN" --data data dlq list --json --samples 3 >list.json
"$BIN" --data data tables --json --files >t0.json
check list list.json t0.json

# 2. Unchanged rules, then a dry run: nothing moves.
s0=$(snapshots); cp "$ck" ck.0
"$BIN" --data data "${old[@]}" dlq replay >replay0.out 2>replay.log || fail "replay under the old rules"
grep -q 'landed 0:' replay0.out || { cat replay0.out; fail "a replay under unchanged rules landed records"; }
"$BIN" --data data "${new[@]}" dlq replay --dry-run >dry.out 2>>replay.log || fail "dry run"
cat dry.out
grep -Eq 'landed [1-9]' dry.out || fail "the dry run would land nothing"
[ "$(snapshots)" = "$s0" ] || fail "a replay that landed nothing, or a dry run, moved a table"
cmp -s "$ck" ck.0 || fail "a replay that landed nothing, or a dry run, moved the checkpoint"
echo "PASS unchanged rules and a dry run move nothing"

# 3a. The oversize rows, with SIGKILLs at random moments (a replay takes
# tens of milliseconds, so the kills come within its first 60), until one
# attempt finishes by itself; then a rerun.
midway=0
for i in $(seq 12); do
    "$BIN" --data data "${new[@]}" dlq replay --reason oversize >/dev/null 2>>replay.log & bg_pid=$!
    t="0.0$(printf '%02d' $((RANDOM % 60)))"
    sleep "$t"
    kill -9 "$bg_pid" 2>/dev/null || true
    set +e; wait "$bg_pid" 2>/dev/null; rc=$?; set -e
    bg_pid=""
    state=$(ls data/process/freshet/dlq-replay 2>/dev/null | tr '\n' ' ' || true)
    [ -n "$state" ] && midway=$((midway + 1))
    echo "SIGKILL $i after $t s: exit $rc, left: ${state:-nothing}"
    [ "$rc" = 0 ] && break
done
echo "kills that left a replay in flight: $midway"
"$BIN" --data data "${new[@]}" dlq replay --reason oversize >replay-oversize.out 2>>replay.log ||
    fail "rerun after the kills"
cat replay-oversize.out

# 3b. The future_event rows, stopped at every step, each time run again.
s1=$(snapshots); cp "$ck" ck.1
for step in files staged; do
    set +e
    "$BIN" --data data "${new[@]}" dlq replay --reason future_event --crash-after "$step" >/dev/null 2>>replay.log
    rc=$?
    set -e
    [ "$rc" = 3 ] || fail "--crash-after $step exited $rc"
    [ -f data/process/freshet/dlq-replay/intent ] || fail "no intent after --crash-after $step"
    [ "$(snapshots)" = "$s1" ] || fail "a replay stopped at $step moved a table"
    cmp -s "$ck" ck.1 || fail "a replay stopped at $step moved the checkpoint"
    echo "PASS stopped after $step: no table moved"
done
set +e
"$BIN" --data data "${new[@]}" dlq replay --reason future_event --crash-after commit >/dev/null 2>>replay.log
rc=$?
set -e
[ "$rc" = 3 ] || fail "--crash-after commit exited $rc"
[ "$(snapshots)" != "$s1" ] || fail "--crash-after commit: the commit did not land"
cmp -s "$ck" ck.1 || fail "--crash-after commit: the checkpoint moved before the install"
echo "PASS stopped after the commit: tables moved, the checkpoint not yet"
grep -c 'stopped before its commit: undone' replay.log >/dev/null || fail "no crashed attempt was undone"
"$BIN" --data data "${new[@]}" dlq replay >replay-all.out 2>>replay.log || fail "rerun after commit"
cat replay-all.out
grep -q 'had landed: its checkpoint is now installed' replay.log ||
    fail "the rerun did not install the landed replay's checkpoint"
cmp -s "$ck" ck.1 && fail "the rerun left the old checkpoint"
grep -q 'landed 0:' replay-all.out || fail "the rerun landed records a second time"
s2=$(snapshots)
"$BIN" --data data "${new[@]}" dlq replay >replay-again.out 2>>replay.log || fail "second replay"
grep -q 'landed 0:' replay-again.out || fail "the second replay landed records"
[ "$(snapshots)" = "$s2" ] || fail "a replay with nothing to land moved a table"
echo "PASS a second replay lands nothing"
if ls data/lake/warehouse/wiki/*/data | grep -q -- '-replay-.*\.tmp\.'; then
    fail "temporary files of killed replays remain"
fi

# 4. Exactly once, by DuckDB.
"$BIN" --data data tables --json --files >t1.json
check exact t1.json "$(log_end)" oversize,future_event
"$BIN" --data data dlq list --json >list1.json
check list list1.json t1.json

# 5. The processor continues with the rest of the stream.
ingest_until "$COUNT"
kill -TERM "$feed_pid"; wait "$feed_pid" || true
feed_pid=""
"$BIN" --data data "${new[@]}" process --once 2>>process.log || fail "process after the replays"
grep -q 'epoch' process.log || fail "no epoch committed after the replays"
"$BIN" --data data tables --json --files >t2.json
check exact t2.json "$(log_end)" oversize,future_event
echo "dlq: all checks passed ($(log_end) log records)"
