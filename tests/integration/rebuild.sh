#!/usr/bin/env bash
# rebuild.sh — `freshet rebuild` end to end (ctest label integration).
#
# A faulty feed (duplicates, events late by 300 s, out-of-order, future and
# malformed events) is ingested part way and processed. Then, checked by
# DuckDB (tests/interop/rebuild_check.mjs):
#   1. rebuild under the same policy reproduces silver, late_arrivals and
#      gold exactly, leaves bronze and dlq alone, and rewrites the
#      processor checkpoint byte for byte identical;
#   2. a rebuild stopped before its commit (--crash-after files), or by
#      SIGKILL at random moments, leaves the four tables all old or all new;
#      one stopped after its commit (--crash-after commit) leaves the
#      checkpoint as it was, which the processor refuses under the new
#      lateness; a rerun finishes, removes the stopped attempts' files, and
#      equals a control rebuild (tables, and the checkpoint byte for byte);
#   3. with process.lateness_s=600 the feed's late events move from
#      late_arrivals into silver, and gold_edits_per_minute equals DuckDB's
#      recomputation from the rebuilt silver under the rebuild's watermark;
#      after bronze is compacted into one file out of log order, a rebuild
#      through a 1 MiB buffer (sorted run files) gives the same tables and
#      checkpoint;
#   4. the processor then continues (the rest of the stream is ingested)
#      and commits new epochs, and the lake equals one processed from
#      scratch under lateness 600.
# Loopback only. Usage: rebuild.sh [SEED]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SEED=${1:-3}
COUNT=9000
if [ ! -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ]; then
    echo "skip: tests/interop/node_modules missing (run scripts/setup.sh --test)"; exit 77
fi
command -v node >/dev/null || { echo "skip: node is not installed"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-rebuild.XXXXXX")
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
check() { node "$SRC/tests/interop/rebuild_check.mjs" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
ck=data/process/freshet/checkpoint

# Event time runs at 10 events/s (15 minutes, so windows settle under a
# 10-minute lateness too), ending a minute ago; future events (+1 h) go to
# dlq. Served at 5000 events/s so ingest can be stopped part way.
er=10
start=$(date -u -d "-$((COUNT / er + 60)) sec" +%Y-%m-%dT%H:%M:%SZ)
# The first connection pauses after 6,000 events (ingest_until 6000 stops
# it there), so the lake holds two thirds of the stream however slowly
# this machine polls the log, and the run after the rebuild has the rest.
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count "$COUNT" --rate 2000 \
    --stall-every 6000 --stall-ms 60000 \
    --event-rate "$er" --start "$start" --dup-rate 0.02 --late-rate 0.01 --late-ms 300000 \
    --ooo-rate 0.05 --ooo-ms 5000 --future-rate 0.003 --malformed-rate 0.01 \
    --malformed-kinds truncated,missing_wiki,namespace_string,type_invalid >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { cat feed.log; fail "feed did not start"; }
log_end() {
    "$BIN" --data "$1" log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0
}
ingest_until() { # ingest_until MIN_RECORDS: then stop ingest
    "$BIN" --data data ingest --source "$url" 2>>ingest.log & ing_pid=$!
    prev=-1; still=0
    for _ in $(seq 600); do
        sleep 0.1
        end=$(log_end data)
        [ "$end" -ge "$1" ] && break
        if [ "$end" = "$prev" ]; then still=$((still + 1)); else still=0; fi
        prev=$end
        [ "$still" -ge 10 ] && break
    done
    kill -TERM "$ing_pid"; wait "$ing_pid" || fail "ingest did not stop cleanly"
    ing_pid=""
}
p=(--set process.epoch_max_records=700)
late600=(--set process.lateness_s=600)

# A lake of about two thirds of the stream.
ingest_until 6000
"$BIN" --data data "${p[@]}" process --once 2>process.log || fail "process --once"
echo "lake: $(log_end data) log records"
"$BIN" --data data tables --json --files >before.json
cp "$ck" ck.before

# 1. Same policy: the same tables, the same checkpoint bytes.
"$BIN" --data data rebuild >rebuild-same.out 2>rebuild.log || { cat rebuild.log; fail "rebuild"; }
cat rebuild-same.out
cmp -s "$ck" ck.before || fail "the checkpoint changed under an unchanged policy"
echo "PASS checkpoint rewritten byte for byte identical"
"$BIN" --data data tables --json --files >same.json
check same before.json same.json --marked

# The control: the same log processed the same way (a lake's catalog holds
# absolute locations, so it is rebuilt, not copied), then rebuilt under
# lateness 600 without interruptions.
mkdir control
cp -r data/log control/log
"$BIN" --data control "${p[@]}" process --once 2>control.log || fail "control process"
"$BIN" --data control "${late600[@]}" rebuild >/dev/null 2>>rebuild.log || fail "control rebuild"
"$BIN" --data control tables --json --files >control.json

# 2a. Stopped after writing its files, before the commit: the old tables.
set +e
"$BIN" --data data "${late600[@]}" rebuild --crash-after files >/dev/null 2>>rebuild.log
rc=$?
set -e
[ "$rc" = 3 ] || fail "--crash-after files exited $rc"
crashed=$(cat data/process/freshet/rebuild.intent)
ls data/lake/warehouse/wiki/silver_recentchange/data | grep -q -- "-rebuild-$crashed-" ||
    fail "the stopped rebuild left no files to clean up"
"$BIN" --data data tables --json --files >crash-files.json
cmp -s "$ck" ck.before || fail "a rebuild stopped before its commit changed the checkpoint"

# 2b. SIGKILL at random moments: all old or all new, never a mix.
kills=()
for i in 1 2 3 4 5; do
    "$BIN" --data data "${late600[@]}" rebuild >/dev/null 2>>rebuild.log & bg_pid=$!
    t="0.$(printf '%03d' $((RANDOM % 350)))"
    sleep "$t"
    kill -9 "$bg_pid" 2>/dev/null || true
    wait "$bg_pid" 2>/dev/null || true
    bg_pid=""
    echo "SIGKILL $i after $t s"
    "$BIN" --data data tables --json --files >kill$i.json
    kills+=(kill$i.json)
done
check either before.json control.json crash-files.json "${kills[@]}" | tee either.out
grep -q 'crash-files.json: derived tables all old or all new: old snapshot' either.out ||
    fail "a rebuild stopped before its commit changed the tables"

# 2c. Stopped after the commit, before the checkpoint (under yet another
# lateness, 900 s): the new tables, the checkpoint as it was, which the
# processor refuses under the new lateness.
cp "$ck" ck.pre
set +e
"$BIN" --data data --set process.lateness_s=900 rebuild --crash-after commit >/dev/null 2>>rebuild.log
rc=$?
set -e
[ "$rc" = 3 ] || fail "--crash-after commit exited $rc"
"$BIN" --data data tables --json --files >crash-commit.json
landed=$(python3 -c 'import json; t=json.load(open("crash-commit.json")); print(",".join(sorted({next(s["summary"].get("freshet.rebuild-lateness-s","-") for s in x["snapshots"] if s["snapshot_id"]==x["current_snapshot_id"]) for x in t["tables"] if x["name"] in ("silver_recentchange","late_arrivals","gold_edits_per_minute","gold_top_pages")})))')
[ "$landed" = 900 ] || fail "the four tables are not all at the 900 s rebuild: $landed"
cmp -s "$ck" ck.pre || fail "a rebuild stopped before its checkpoint changed the checkpoint"
echo "PASS stopped after the commit: the four tables rebuilt, the checkpoint as it was"
if "$BIN" --data data "${p[@]}" --set process.lateness_s=900 process --once 2>refuse.log; then
    fail "the processor ran on a checkpoint saved under another lateness"
fi
grep -q 'unusable' refuse.log || { cat refuse.log; fail "the processor did not say why it refused"; }
echo "PASS the processor refuses the old checkpoint under the new lateness"

# The rerun: finishes, cleans up, equals the control.
"$BIN" --data data "${late600[@]}" rebuild >rebuild-600.out 2>>rebuild.log || fail "rerun"
cat rebuild-600.out
grep -q "rebuild $crashed crashed before its commit" rebuild.log ||
    fail "the rerun did not report the stopped attempt"
if ls data/lake/warehouse/wiki/*/data | grep -q -- "-rebuild-$crashed-"; then
    fail "files of the stopped rebuild $crashed remain"
fi
echo "PASS the stopped attempt's files are gone"
cmp -s "$ck" control/process/freshet/checkpoint || fail "the checkpoint differs from the control's"
echo "PASS checkpoint equal to the control rebuild's"
"$BIN" --data data tables --json --files >after.json
check same control.json after.json --marked

# 3. The late events moved into silver; gold follows.
check late before.json after.json 600

# 3b. Compacted bronze (one file, epochs in size order, not log order)
# through a 1 MiB buffer: sorted through run files on disk, the same
# tables and the same checkpoint.
"$BIN" --data data compact --table wiki.bronze_recentchange --no-expire --no-orphans >/dev/null ||
    fail "compact"
"$BIN" --data data tables --json --files >compacted.json
cp "$ck" ck.600
"$BIN" --data data "${late600[@]}" rebuild --memory-mb 1 >rebuild-spill.out 2>>rebuild.log ||
    fail "rebuild of compacted bronze"
grep -q 'sorted through [0-9]* run files' rebuild-spill.out || fail "the 1 MiB rebuild did not spill"
cmp -s "$ck" ck.600 || fail "the spilled rebuild left another checkpoint"
echo "PASS compacted bronze sorted through run files: the same checkpoint"
"$BIN" --data data tables --json --files >spilled.json
check same compacted.json spilled.json --marked

# 4. The processor continues under the new policy: the rest of the stream.
if "$BIN" --data data "${p[@]}" process --once 2>refuse2.log; then
    fail "the processor ran under lateness 120 on a state saved under 600"
fi
epoch_before=$(python3 -c 'import json,sys; t=json.load(open("after.json")); print(max(int(s["summary"].get("freshet.epoch", -1)) for x in t["tables"] if x["name"]=="bronze_recentchange" for s in x["snapshots"]))')
ingest_until "$COUNT"
kill -TERM "$feed_pid"; wait "$feed_pid" || true
feed_pid=""
"$BIN" --data data "${p[@]}" "${late600[@]}" process --once 2>>process.log || fail "process after rebuild"
"$BIN" --data data tables --json --files >continued.json
epoch_after=$(python3 -c 'import json,sys; t=json.load(open("continued.json")); print(max(int(s["summary"].get("freshet.epoch", -1)) for x in t["tables"] if x["name"]=="bronze_recentchange" for s in x["snapshots"]))')
[ "$epoch_after" -gt "$epoch_before" ] || fail "no new epoch after the rebuild ($epoch_before -> $epoch_after)"
echo "PASS process continued: epochs $epoch_before -> $epoch_after, $(log_end data) log records"

# The same log processed from scratch under lateness 600.
mkdir scratch
cp -r data/log scratch/log
"$BIN" --data scratch "${p[@]}" "${late600[@]}" process --once 2>scratch.log || fail "scratch run"
"$BIN" --data scratch tables --json --files >scratch.json
check equal scratch.json continued.json
echo "rebuild: all checks passed"
