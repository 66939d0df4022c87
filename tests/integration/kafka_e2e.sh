#!/usr/bin/env bash
# kafka_e2e.sh — the whole path on Kafka (log.backend=kafka), against
# librdkafka's mock cluster in its own process (kafka_mock: 3 brokers, the
# topic recentchange with 3 partitions, replication 3, loopback only):
#
#   freshet feed --synthetic (disconnects, duplicates, malformed, canaries)
#     -> freshet ingest, SIGKILLed KILLS times at random moments, while the
#        mock moves a partition leader, fails Produce requests and takes a
#        broker down and up again
#     -> every non-canary event the feed sent is in Kafka exactly once after
#        dedup on the SSE id (sse_id header), no canary, nothing unknown
#        (ground truth: `freshet feed --dump`, as ingest_kill.sh does)
#   freshet process --once from Kafka into the lake, SIGKILLed twice mid-run
#     (and Fetch errors injected), then run to the end
#     -> `freshet verify` passes; bronze holds one row per Kafka record.
#
# Usage: kafka_e2e.sh KAFKA_MOCK [SEED] [KILLS] [COUNT]. Keep COUNT small:
# each mock partition keeps at most 5 MiB / 100,000 messages.
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
MOCK=${1:?usage: kafka_e2e.sh KAFKA_MOCK [SEED] [KILLS] [COUNT]}
SEED=${2:-11}
KILLS=${3:-6}
COUNT=${4:-3000}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$MOCK" ] || { echo "skip: $MOCK is not built"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-kafka.XXXXXX")
mock_pid=""; feed_pid=""; ing_pid=""; proc_pid=""
cleanup() {
    for p in $proc_pid $ing_pid; do kill -9 "$p" 2>/dev/null || true; done
    [ -n "$feed_pid" ] && kill -TERM "$feed_pid" 2>/dev/null || true
    [ -n "$mock_pid" ] && kill -TERM "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
RANDOM=$SEED

# shellcheck source=kafka_lib.sh
. "$here/kafka_lib.sh"
mock_start "$MOCK" --brokers 3 --partitions 3 --replication 3

feed_flags=(--synthetic --seed "$SEED" --count "$COUNT" --start 2026-11-01T00:00:00Z --event-rate 600
    --disconnect-every 700 --dup-rate 0.01 --malformed-rate 0.01
    --malformed-kinds truncated,missing_meta_id,missing_wiki,type_invalid
    --canary-rate 0.002 --late-rate 0.01 --ooo-rate 0.05)
"$BIN" feed --listen 127.0.0.1:0 --rate 600 "${feed_flags[@]}" --truth truth.json >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { echo "feed did not start"; cat feed.log; exit 1; }

common=(--data "$work/data" --set log.backend=kafka --set "kafka.brokers=$brokers"
        --set log.partitions=3 --set kafka.message_timeout_ms=20000
        --set process.trigger_ms=150 --set process.epoch_max_records=500)
ingest=("$BIN" "${common[@]}" --set ingest.backoff_min_ms=50 --set ingest.backoff_max_ms=400
        --set ingest.status_interval_s=1 ingest --source "$url")
log_end() {
    "$BIN" "${common[@]}" log list --json 2>>list.log |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo -1
}

for i in $(seq "$KILLS"); do
    case $i in
        2) mock leader 0 2 ;;
        3) mock produce-errors 4 NOT_ENOUGH_REPLICAS REQUEST_TIMED_OUT ;;
        4) mock leader 1 3; mock leader 2 3 ;;
    esac
    "${ingest[@]}" 2>>ingest.log &
    ing_pid=$!
    if [ "$i" = 5 ]; then
        # broker 3 (now leading partitions 1 and 2) disappears for a while
        sleep 0.5; mock down 3; sleep 1.5; mock up 3
    fi
    # 300..1800 ms, then SIGKILL: inside appends, flushes, reconnects.
    sleep "$((RANDOM % 2)).$(printf '%03d' $((300 + RANDOM % 500)))"
    kill -9 "$ing_pid" 2>/dev/null || true
    wait "$ing_pid" 2>/dev/null || true
    ing_pid=""
done

# A last ingest catches up with the end of the stream.
"${ingest[@]}" 2>>ingest.log &
ing_pid=$!
prev=-1; still=0
for _ in $(seq 240); do
    sleep 0.5
    end=$(log_end)
    if [ "$end" = "$prev" ]; then still=$((still + 1)); else still=0; fi
    prev=$end
    [ "$still" -ge 6 ] && break
done
kill -TERM "$ing_pid"; wait "$ing_pid" || { echo "FAIL: ingest did not exit cleanly on SIGTERM"; tail -5 ingest.log; exit 1; }
ing_pid=""
kill -TERM "$feed_pid"; wait "$feed_pid" || { echo "feed did not exit cleanly"; cat feed.log; exit 1; }
feed_pid=""

"$BIN" feed --dump "${feed_flags[@]}" > sent.ndjson
: > log.ndjson
for p in 0 1 2; do
    "$BIN" "${common[@]}" log dump --topic recentchange --partition "$p" >> log.ndjson
done

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
sent = collections.Counter(); canaries = set(); positions = 0; order = []
with open("sent.ndjson", encoding="utf-8", errors="surrogateescape") as f:
    for line in f:
        line = line.rstrip("\n")
        positions += 1
        obj = load(line)
        if isinstance(obj, dict) and isinstance(obj.get("meta"), dict) and obj["meta"].get("domain") == "canary":
            canaries.add(key(obj)); continue
        sent[key(obj)] += 1
        order.append((positions, key(obj)))
# A record's identity: its SSE id and its bytes. Wikimedia-style ids are
# positions by timestamp, shared by the events of one millisecond, so the
# id alone is not unique; a re-delivery after a resume repeats both.
pairs = set(); records = 0; per_part = collections.Counter(); ids = set()
with open("log.ndjson", encoding="utf-8") as f:
    for line in f:
        rec = json.loads(line)
        records += 1
        per_part[rec["partition"]] += 1
        sid = rec["headers"].get("sse_id")
        assert sid is not None, "record without sse_id header"
        sid = json.dumps(sid, sort_keys=True)
        ids.add(sid)
        p = rec["payload"]
        pairs.add((sid, key(load(p) if isinstance(p, str) else p)))
logged = collections.Counter(k for _, k in pairs)
missing = sum(max(0, n - logged[k]) for k, n in sent.items())
extra = sum(max(0, logged[k] - n) for k, n in sent.items())
unknown = sum(n for k, n in logged.items() if k not in sent)
canary_in_log = sum(1 for k in canaries if logged[k])
expected = sum(sent.values())
print(f"positions {positions}, non-canary {expected}, Kafka records {records} "
      f"(per partition {dict(sorted(per_part.items()))}), distinct (sse id, event) {len(pairs)}, "
      f"re-stored after a resume {records - len(pairs)}, kills {kills}")
ok = True
if positions != count or truth["positions_sent"] != count:
    ok = False; print(f"the feed sent {truth['positions_sent']} of {count} positions")
if missing:
    ok = False
    # Where in the stream: at its very end, ingest was stopped before it had
    # them; anywhere else, acknowledged events were lost.
    seen = collections.Counter(); at = []
    for pos, k in order:
        seen[k] += 1
        if seen[k] > logged[k]:
            at.append(pos)
    print(f"LOST: {missing} events the feed sent are not in Kafka, at positions {at[:10]} of {positions}")
if extra: ok = False; print(f"DUPLICATED: {extra} events are in Kafka more often than sent (after dedup on sse id)")
if unknown: ok = False; print(f"{unknown} records in Kafka the feed never sent")
if canary_in_log: ok = False; print(f"{canary_in_log} canary events are in Kafka")
if len(per_part) < 3: ok = False; print("not every partition got records")
print("ingest: exactly once after dedup on sse id" if ok else "ingest: FAILED")
sys.exit(0 if ok else 1)
PY
records=$(wc -l < log.ndjson)

# Fetches failing for longer than the processor waits (NOT_LEADER_FOR_PARTITION
# on every Fetch): the epoch fails with a clear error and commits nothing.
mock fetch-errors 400 NOT_LEADER_FOR_PARTITION
if "$BIN" "${common[@]}" process --once 2>>process_fail.log; then
    echo "FAIL: process --once succeeded while no fetch could succeed"; exit 1
fi
grep -E 'not readable|kafka' process_fail.log | grep -v librdkafka | tail -2 | sed 's/^.*freshet\[[0-9]*\] /failed epoch: /'
committed=$("$BIN" "${common[@]}" tables --json | python3 -c '
import json,sys
print(sum(x.get("records") or 0 for x in json.load(sys.stdin)["tables"] if x.get("name") == "bronze_recentchange"))')
[ "$committed" = 0 ] || { echo "FAIL: the failed epoch committed $committed bronze rows"; exit 1; }
mock clear

# process from Kafka, SIGKILLed twice mid-run, Fetch errors injected once.
for k in 1 2; do
    [ "$k" = 2 ] && mock fetch-errors 3 NOT_LEADER_FOR_PARTITION
    "$BIN" "${common[@]}" process --once 2>>process.log &
    proc_pid=$!
    sleep "1.$(printf '%03d' $((RANDOM % 900)))"
    kill -9 "$proc_pid" 2>/dev/null || true
    wait "$proc_pid" 2>/dev/null || true
    proc_pid=""
done
mock clear
"$BIN" "${common[@]}" process --once 2>>process.log || {
    echo "FAIL: the final process --once failed:"; tail -5 process.log; exit 1; }
"$BIN" "${common[@]}" verify > verify.out 2>&1 || {
    echo "FAIL: freshet verify:"; tail -12 verify.out; exit 1; }
tail -1 verify.out | sed 's/^/freshet verify: /'
"$BIN" "${common[@]}" tables --json > tables.json
python3 - "$records" <<'PY'
import json, sys
records = int(sys.argv[1])
t = json.load(open("tables.json"))
tables = t if isinstance(t, list) else t.get("tables", [])
rows = {x.get("name"): x.get("rows", x.get("records")) for x in tables}
bronze, dlq = rows.get("bronze_recentchange"), rows.get("dlq")
print(f"lake: bronze {bronze}, dlq {dlq}, Kafka records {records}")
if bronze is None or dlq is None or bronze + dlq != records:
    print("FAIL: bronze + dlq rows differ from the Kafka records"); sys.exit(1)
PY
echo "1 passed, 0 failed"
