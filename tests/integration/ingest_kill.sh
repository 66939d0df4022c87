#!/usr/bin/env bash
# ingest_kill.sh — feed → ingest with forced disconnects, stalls, duplicates
# and malformed events, while the test SIGKILLs ingest at random moments
# (KILLS times, default 25). Then, against the feed's own record of the
# stream (`feed --dump`, the same deterministic positions it served):
#   - every non-canary event the feed sent is in the log at least once (no gap),
#   - no canary is in the log,
#   - the log is readable end to end (CRCs hold after every kill),
# and the overlap (events stored more than once) is counted and reported.
# Loopback only. Usage: ingest_kill.sh [SEED] [KILLS]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SEED=${1:-7}
KILLS=${2:-25}
COUNT=${FR_KILL_COUNT:-12000}
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-kill.XXXXXX")
feed_pid=""; ing_pid=""
cleanup() {
    [ -n "$ing_pid" ] && kill -9 "$ing_pid" 2>/dev/null || true
    [ -n "$feed_pid" ] && kill -TERM "$feed_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
RANDOM=$SEED

feed_flags=(--synthetic --seed "$SEED" --count "$COUNT" --start 2026-11-01T00:00:00Z --event-rate 1500
    --disconnect-every 900 --stall-every 2500 --stall-ms 1500
    --dup-rate 0.01 --malformed-rate 0.01
    --malformed-kinds truncated,missing_meta_id,missing_meta_dt,missing_wiki,missing_type,namespace_string,bot_string,meta_dt_not_date,meta_id_not_uuid,type_invalid
    --canary-rate 0.002 --late-rate 0.01 --ooo-rate 0.05)
"$BIN" feed --listen 127.0.0.1:0 --rate 1500 "${feed_flags[@]}" --truth truth.json >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { echo "feed did not start"; cat feed.log; exit 1; }
ingest=("$BIN" --data "$work/data" --set ingest.backoff_min_ms=50 --set ingest.backoff_max_ms=400
        --set ingest.stall_timeout_s=1 --set ingest.status_interval_s=1 ingest --source "$url")

for i in $(seq "$KILLS"); do
    "${ingest[@]}" 2>>ingest.log &
    ing_pid=$!
    # Sleep 50..800 ms, then SIGKILL: inside appends, flushes, reconnects and stalls.
    sleep "0.$(printf '%03d' $((50 + RANDOM % 750)))"
    kill -9 "$ing_pid" 2>/dev/null || true
    wait "$ing_pid" 2>/dev/null || true
    ing_pid=""
done

# Let a last ingest catch up with the end of the stream.
"${ingest[@]}" 2>>ingest.log &
ing_pid=$!
prev=-1; still=0
for _ in $(seq 600); do
    sleep 0.5
    end=$("$BIN" --data "$work/data" log list --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(p["end_offset"] for p in (d if isinstance(d,list) else d.get("partitions",[]))))')
    if [ "$end" = "$prev" ]; then still=$((still + 1)); else still=0; fi
    prev=$end
    [ "$still" -ge 6 ] && break
done
kill -TERM "$ing_pid"; wait "$ing_pid" || { echo "ingest did not exit cleanly on SIGTERM"; exit 1; }
ing_pid=""
kill -TERM "$feed_pid"; wait "$feed_pid" || { echo "feed did not exit cleanly"; cat feed.log; exit 1; }
feed_pid=""

"$BIN" feed --dump "${feed_flags[@]}" > sent.ndjson
"$BIN" --data "$work/data" log dump --topic recentchange > log.ndjson

python3 - "$KILLS" "$COUNT" <<'PY'
import json, sys, collections
kills, count = int(sys.argv[1]), int(sys.argv[2])
truth = json.load(open("truth.json"))
def key(obj):
    return obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, ensure_ascii=False)
def load(text):
    try:
        return json.loads(text)
    except ValueError:
        return text
sent = collections.Counter(); canaries = set(); positions = 0
with open("sent.ndjson", encoding="utf-8", errors="surrogateescape") as f:
    for line in f:
        line = line.rstrip("\n")
        positions += 1
        obj = load(line)
        if isinstance(obj, dict) and isinstance(obj.get("meta"), dict) and obj["meta"].get("domain") == "canary":
            canaries.add(key(obj)); continue
        sent[key(obj)] += 1
logged = collections.Counter(); records = 0
with open("log.ndjson", encoding="utf-8") as f:
    for line in f:
        rec = json.loads(line)
        records += 1
        assert "sse_id" in rec["headers"], "record without sse_id header"
        p = rec["payload"]
        logged[key(load(p) if isinstance(p, str) else p)] += 1
missing = [k for k, n in sent.items() if logged[k] < n]
extra = sum(max(0, logged[k] - n) for k, n in sent.items())
canary_in_log = [k for k in canaries if logged[k]]
expected = sum(sent.values())
overlap = records - expected
conns = len(truth["connections"])
print(f"positions {positions}, non-canary {expected}, canaries {positions - expected}, "
      f"connections {conns}, log records {records}, stored more than once {extra}, kills {kills}")
ok = True
if positions != count or truth["positions_sent"] != count:
    ok = False; print(f"the feed sent {truth['positions_sent']} of {count} positions")
if missing:
    ok = False; print(f"GAP: {len(missing)} events the feed sent are not in the log, e.g. {missing[0][:200]}")
if canary_in_log:
    ok = False; print(f"{len(canary_in_log)} canary events are in the log")
unknown = sum(n for k, n in logged.items() if k not in sent)
if unknown:
    ok = False; print(f"the log holds {unknown} records the feed never sent")
print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
sys.exit(0 if ok else 1)
PY
grep 'canaries dropped' ingest.log | tail -1 | sed 's/^.*ingest: info: /ingest (last run): /'
