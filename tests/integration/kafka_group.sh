#!/usr/bin/env bash
# kafka_group.sh — the scale-out mode (docs/SCALEOUT.md) against librdkafka's
# mock cluster in its own process (kafka_mock: the topic recentchange with 6
# partitions, loopback only):
#
#   freshet feed --synthetic (duplicates, malformed, late, out of order)
#     -> freshet ingest into Kafka (6 partitions)
#     -> `freshet process --group` instances in one consumer group: two at
#        first, a third joining while epochs are in flight (a rebalance), the
#        first SIGKILLed (its shards die with it; the group hands its
#        partitions to the others after the session timeout; a partition
#        leader moves and Fetch requests fail meanwhile), shard
#        children SIGKILLed at random (their instance restarts them), a
#        fourth joining; then every instance stopped with SIGTERM
#   -> `freshet verify` passes on the lake (scale-out cut: every shard's
#      epochs and the finalizer's), and every table equals, row for row
#      (DuckDB, tests/interop/lake_compare.mjs), a control lake built from
#      the same Kafka topic by each shard once and the finalizer once, with
#      no group and no kills.
#
# With MODE "enrich" (ctest integration_kafka_group_enrich; ADR 0046) every
# run enriches against `freshet feed`'s API fixture, the group's against a
# faulty one (slow, 30 % of requests 503): the shards are drained with
# --once before the last finalize (their last lookups), and the comparison
# with the control covers silver_topics, gold_top_topics and dlq_lookups;
# DuckDB checks gold_top_topics against silver_topics and one outcome per
# enrichable edit (tests/interop/topics_check.mjs). The two-owner phase is
# skipped then: its owners keep separate checkpoint directories, and the
# enrichment state is not shared between them (docs/SCALEOUT.md).
#
# Usage: kafka_group.sh KAFKA_MOCK [SEED] [COUNT] [MODE]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
MOCK=${1:?usage: kafka_group.sh KAFKA_MOCK [SEED] [COUNT] [MODE]}
SEED=${2:-21}
COUNT=${3:-6000}
MODE=${4:-plain}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$MOCK" ] || { echo "skip: $MOCK is not built"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
command -v node >/dev/null || { echo "skip: node missing"; exit 77; }
[ -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ] ||
    { echo "skip: @duckdb/node-api not installed (scripts/setup.sh --test)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-group.XXXXXX")
mock_pid=""; feed_pid=""; ing_pid=""; api_pids=""; members=()
cleanup() {
    for p in "${members[@]}" $ing_pid $api_pids; do kill -9 "$p" 2>/dev/null || true; done
    [ -n "$feed_pid" ] && kill -TERM "$feed_pid" 2>/dev/null || true
    [ -n "$mock_pid" ] && kill -TERM "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
RANDOM=$SEED

# shellcheck source=kafka_lib.sh
. "$SRC/tests/integration/kafka_lib.sh"
mock_start "$MOCK" --brokers 3 --partitions 6 --replication 3

# Five minutes of event time (20 events/s of event time), sent in a few seconds.
feed_flags=(--synthetic --seed "$SEED" --count "$COUNT" --start 2026-11-01T00:00:00Z --event-rate 20
    --dup-rate 0.02 --malformed-rate 0.01 --late-rate 0.01 --ooo-rate 0.05)
"$BIN" feed --listen 127.0.0.1:0 --rate 2000 "${feed_flags[@]}" >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { echo "feed did not start"; cat feed.log; exit 1; }

kafka=(--set log.backend=kafka --set "kafka.brokers=$brokers" --set log.partitions=6)
# api NAME FLAGS...: an API fixture (a feed of one event); its
# enrichment settings in $enrich_opts
api() {
    local name=$1; shift
    "$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count 1 "$@" >"$name.out" 2>"$name.log" &
    api_pids="$api_pids $!"
    for _ in $(seq 100); do grep -q '^listening' "$name.out" 2>/dev/null && break; sleep 0.1; done
    local u
    u=$(awk '/^listening/ {print $2; exit}' "$name.out" | sed 's#/v2/stream/recentchange##')
    [ -n "$u" ] || { echo "FAIL: API fixture $name did not start"; cat "$name.log"; exit 1; }
    enrich_opts=(--set enrich.enabled=1 --set "enrich.api_url=$u/api/{wiki}/w/api.php"
                 --set enrich.rate_per_s=0 --set enrich.backoff_min_ms=20
                 --set enrich.backoff_max_ms=200 --set enrich.max_attempts=30)
}
group_enrich=() ctl_enrich=()
if [ "$MODE" = enrich ]; then
    api badapi --api-latency-ms 50 --api-error-rate 0.3
    group_enrich=("${enrich_opts[@]}")
    api goodapi
    ctl_enrich=("${enrich_opts[@]}")
fi
common=(--data "$work/data" "${kafka[@]}" --set process.trigger_ms=200
        --set process.epoch_max_records=100 --set kafka.session_timeout_ms=3000
        --set process.idle_timeout_s=0 --set process.maintain_every_epochs=15
        --set up.restart_min_ms=200 "${group_enrich[@]}")
log_end() { log_total "${common[@]}"; }
"$BIN" "${common[@]}" ingest --source "$url" 2>ingest.log &
ing_pid=$!
log_settle 240
kill -TERM "$ing_pid"; wait "$ing_pid" || { echo "FAIL: ingest did not exit cleanly"; tail -5 ingest.log; exit 1; }
ing_pid=""
kill -TERM "$feed_pid"; wait "$feed_pid" || true
feed_pid=""
total=$(log_end)
echo "log: $total records in 6 partitions"

member() {  # start one instance of the group
    "$BIN" "${common[@]}" process --group 2>>"member$1.log" &
    members+=($!)
    echo "instance $1 started (pid $!)"
}
consumed() {
    "$BIN" "${common[@]}" verify --json 2>/dev/null |
        python3 -c 'import json,sys; d = json.load(sys.stdin); print(d.get("consumed", d["cut"].get("consumed")))' 2>/dev/null || echo -1
}
# A zombie: two owners of partition 0's shard at once (separate checkpoint
# directories, as on two machines with nothing shared but the catalog).
# Whichever commits an epoch first wins; the other's commit of that epoch
# finds the marker (FR_EEXIST) and it stops: no epoch lands twice.
for z in a b; do
    [ "$MODE" = enrich ] && break
    "$BIN" "${common[@]}" --set "process.checkpoint_dir=$work/ck-$z" process --partition 0 2>>"zombie-$z.log" &
    members+=($!)
done
sleep 2
for p in "${members[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${members[@]}"; do wait "$p" 2>/dev/null || true; done
members=()
fenced=$(cat zombie-*.log | grep -c 'already committed by another owner' || true)
replayed=$(cat zombie-*.log | grep -c 'already in the lake: state rebuilt' || true)
echo "two owners of shard 0: commits refused by the epoch marker: $fenced; epochs the later one found committed and replayed: $replayed"
[ "$MODE" = enrich ] || [ "$((fenced + replayed))" -ge 1 ] || { echo "FAIL: the two owners of one shard never met each other's epochs"; tail -n 5 zombie-*.log; exit 1; }
if grep -h 'error' zombie-*.log | grep -v 'already committed by another owner'; then
    echo "FAIL: an owner of shard 0 failed otherwise"; exit 1
fi

member 1; member 2
sleep "1.$((RANDOM % 9))"
member 3                                  # a rebalance while epochs are in flight
mock leader 1 2                           # a partition leader moves
mock fetch-errors 3 NOT_LEADER_FOR_PARTITION
sleep "1.$((RANDOM % 9))"
kill -9 "${members[0]}"; echo "instance 1 SIGKILLed"
mock clear
wait "${members[0]}" 2>/dev/null || true
kills=0
for _ in 1 2 3; do
    sleep "0.$((RANDOM % 9))"
    victim=$(pgrep -P "${members[1]}" | shuf -n 1 --random-source=<(yes "$SEED") || true)
    if [ -n "$victim" ]; then kill -9 "$victim" 2>/dev/null && kills=$((kills + 1)); fi
done
echo "shard children SIGKILLed: $kills"
member 4
done_=0
for _ in $(seq 240); do
    sleep 0.5
    if [ "$(consumed)" = "$total" ]; then done_=1; break; fi
done
[ "$done_" = 1 ] || { echo "FAIL: the shards did not consume the log (consumed $(consumed) of $total)"; tail -n 5 member*.log; exit 1; }
sleep 2  # the finalizer's last rounds
for p in "${members[@]:1}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${members[@]:1}"; do
    wait "$p" || { echo "FAIL: an instance did not exit cleanly on SIGTERM"; tail -n 5 member*.log; exit 1; }
done
members=()
assigned=$(cat member*.log | grep -c 'group: assigned' || true)
started=$(cat member*.log | grep -c 'started the shard' || true)
zombies=$(cat member*.log | grep -c 'commit failed: .*EEXIST\|already in the lake' || true)
echo "assignments: $assigned, shard starts: $started, epochs found already committed on restart or conflict: $zombies"
[ "$assigned" -ge 4 ] || { echo "FAIL: expected at least 4 assignments (rebalances), saw $assigned"; exit 1; }
if [ "$MODE" = enrich ]; then
    # Lookups still out when the instances stopped: each shard answers them.
    for p in 0 1 2 3 4 5; do
        "$BIN" "${common[@]}" process --partition "$p" --once 2>>drain.log || { echo "FAIL: drain of shard $p"; tail -5 drain.log; exit 1; }
    done
fi
# The finalizer catches up with whatever the shards committed last.
"$BIN" "${common[@]}" process --finalize --once 2>>final.log || { echo "FAIL: the last finalize failed"; tail -5 final.log; exit 1; }

"$BIN" "${common[@]}" verify > verify.out 2>&1 || { echo "FAIL: freshet verify:"; cat verify.out; exit 1; }
head -1 verify.out
tail -1 verify.out | sed 's/^/freshet verify: /'

# Control: the same topic, each shard once and the finalizer once.
ctl=(--data "$work/control" "${kafka[@]}" --set process.epoch_max_records=5000 --set process.idle_timeout_s=0
     "${ctl_enrich[@]}")
for p in 0 1 2 3 4 5; do
    "$BIN" "${ctl[@]}" process --partition "$p" --once 2>>control.log || { echo "FAIL: control shard $p"; tail -5 control.log; exit 1; }
done
"$BIN" "${ctl[@]}" process --finalize --once 2>>control.log || { echo "FAIL: control finalize"; tail -5 control.log; exit 1; }
"$BIN" "${ctl[@]}" verify > control_verify.out 2>&1 || { echo "FAIL: verify on the control lake"; cat control_verify.out; exit 1; }
"$BIN" "${common[@]}" tables --json --files > group_tables.json
"$BIN" "${ctl[@]}" tables --json --files > control_tables.json
node "$SRC/tests/interop/lake_compare.mjs" group_tables.json control_tables.json
if [ "$MODE" = enrich ]; then
    for l in group_tables.json control_tables.json; do
        node "$SRC/tests/interop/topics_check.mjs" oracle "$l"
        node "$SRC/tests/interop/topics_check.mjs" partition "$l"
    done
    grep -Eq "^gold_topics_recomputed +PASS .*expected_rows=[1-9]" verify.out ||
        { cat verify.out; echo "FAIL: verify did not check gold_top_topics"; exit 1; }
    python3 - <<'PY'
import json
t = {x["name"]: x for x in json.load(open("group_tables.json"))["tables"]}
for n in ["silver_topics", "gold_top_topics"]:
    assert (t[n].get("records") or 0) > 0, f"{n} is empty: the test would not show anything"
PY
    curl -s "$(awk '/^listening/ {print $2; exit}' badapi.out | sed 's#/v2/stream/recentchange##')/api/counters" |
        python3 -c 'import json,sys; c = json.load(sys.stdin); print("faulty API:", c["requests"], "requests,", c["err_5xx"], "503s"); sys.exit(0 if c["err_5xx"] > 0 else 1)' ||
        { echo "FAIL: the faulty API served no error"; exit 1; }
fi
python3 - <<'PY'
import json
t = {x["name"]: x for x in json.load(open("group_tables.json"))["tables"]}
for n in ["gold_edits_per_minute", "gold_top_pages", "late_arrivals", "dlq", "silver_recentchange"]:
    assert (t[n].get("records") or 0) > 0, f"{n} is empty: the test would not show anything"
PY
echo "PASS: scale-out group = control, verify passes"
