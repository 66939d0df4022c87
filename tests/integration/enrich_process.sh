#!/usr/bin/env bash
# enrich_process.sh — the enrichment stage of `freshet process` end to end
# (issue 9; ctest label integration, the kill loop also chaos).
#
# One synthetic stream (duplicates, late events) is ingested once; copies of
# its log are processed with enrichment against `freshet feed`'s MediaWiki
# API fixture on 127.0.0.1. Checked by DuckDB (tests/interop/topics_check.mjs):
#   1. control (healthy API): gold_top_topics equals DuckDB's recomputation
#      from silver_topics; every enrichable edit has exactly one outcome;
#   2. faulty API (every answer 100 ms late, half the requests 503, two
#      attempts per lookup, a pending table of 200 edits): the six core
#      tables equal the control's and each epoch committed the same records
#      (lookups never held the stream back); failed and backlog lookups are
#      in dlq_lookups; nothing lost or answered twice; `freshet verify`
#      passes;
#      the same pending table with enrich.backlog_wait_ms dead-letters
#      nothing and equals the control;
#   3. `freshet dlq replay --lookups` against a healthy API lands every
#      settled dead letter exactly once (a second replay lands nothing), and
#      silver_topics and gold_top_topics then equal the control's;
#   4. SIGKILLs of the processor while lookups are outstanding (slow API
#      with 429s and maxlag errors),
#      then a drain: nothing lost or counted twice, tables equal the
#      control's;
#   5. a healthy run SIGKILLed once its label counters show committed
#      labelled edits, then drained: the counters equal the lake's rows.
# Labels (issue 33) ride along: each run's resolved edits carry the
# fixture's label in their wiki's content language, else English, else a
# reason (topics_check.mjs labels), gold_top_topics' labels are part of the
# recomputation, and the label columns are compared with the control's; the
# processor's label counters (process_enrich_labels_total, through `freshet
# status --json`) equal DuckDB's count of label_why in silver_topics (and of
# the label round's dead letters) in the control, the faulty run and after
# the kills (topics_check.mjs labelcounts).
# Loopback only. Usage: enrich_process.sh [SEED] [KILLS]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SEED=${1:-11}
KILLS=${2:-8}
COUNT=6000
if [ ! -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ]; then
    echo "skip: tests/interop/node_modules missing (run scripts/setup.sh --test)"; exit 77
fi
command -v node >/dev/null || { echo "skip: node is not installed"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-enrich.XXXXXX")
pids=""
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
RANDOM=$SEED
check() { node "$SRC/tests/interop/topics_check.mjs" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

# feed NAME FLAGS...: start a feed; its base URL (http://127.0.0.1:PORT) in
# $url. Not in a subshell, so that cleanup knows its pid.
feed() {
    local name=$1; shift
    "$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" "$@" >"$name.out" 2>"$name.log" &
    pids="$pids $!"
    for _ in $(seq 100); do grep -q '^listening' "$name.out" 2>/dev/null && break; sleep 0.1; done
    url=$(awk '/^listening/ {print $2; exit}' "$name.out" | sed 's#/v2/stream/recentchange##')
}
tables() { "$BIN" --data "$1" tables --json --files >"$1.json"; }
enrich() { # enrich API: the settings every run shares
    echo "--set enrich.enabled=1 --set enrich.api_url=$1/api/{wiki}/w/api.php \
          --set enrich.rate_per_s=0 --set enrich.backoff_min_ms=20 --set enrich.backoff_max_ms=200 \
          --set process.epoch_max_records=1000"
}

# Event time at 4 events/s (25 minutes, so windows settle), ending two
# minutes ago; served fast.
er=4
start=$(date -u -d "-$((COUNT / er + 120)) sec" +%Y-%m-%dT%H:%M:%SZ)
feed stream --count "$COUNT" --rate 3000 --event-rate "$er" --start "$start" \
    --dup-rate 0.02 --late-rate 0.01 --late-ms 300000
base=$url
[ -n "$base" ] || { cat stream.log; fail "feed did not start"; }
"$BIN" --data base ingest --source "$base/v2/stream/recentchange" 2>ingest.log & ing=$!
prev=-1
for _ in $(seq 300); do
    sleep 0.2
    end=$("$BIN" --data base log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0)
    [ "$end" -ge "$COUNT" ] && [ "$end" = "$prev" ] && break
    prev=$end
done
kill -TERM "$ing"; wait "$ing" || fail "ingest did not stop cleanly"
echo "ingested $end records"
copy() { mkdir -p "$1"; cp -a base/log "$1/"; }

# 1. control: a healthy API
copy ctl
# shellcheck disable=SC2046
"$BIN" --data ctl $(enrich "$base") process --once 2>ctl.log || { tail ctl.log; fail "control run"; }
tables ctl
check oracle ctl.json
check partition ctl.json
check labels ctl.json "$base" --all-cases
"$BIN" --data ctl status --json >ctl-status.json
check labelcounts ctl.json ctl-status.json

# 2. faulty: slow, half the requests fail, a small pending table
feed badapi --count 1 --api-latency-ms 100 --api-error-rate 0.5
bad=$url
copy faulty
# shellcheck disable=SC2046
"$BIN" --data faulty $(enrich "$bad") --set enrich.max_attempts=2 --set enrich.pending_max=200 \
    process --once 2>faulty.log || { tail faulty.log; fail "faulty run"; }
tables faulty
check core ctl.json faulty.json
check partition faulty.json
check oracle faulty.json
check has faulty.json lookup_failed 1
check has faulty.json backlog 1
check labels faulty.json "$base"
"$BIN" --data faulty status --json >faulty-status.json
check labelcounts faulty.json faulty-status.json
"$BIN" --data faulty verify >verify.out 2>&1 || { cat verify.out; fail "verify on the faulty lake"; }
grep -Eq "enrichment: [1-9][0-9]* waiting" faulty.log || fail "no epoch committed while lookups were outstanding"

# 2b. the same small pending table, allowed to wait for room (backfill mode):
# nothing dead-lettered, everything equal to the control
copy waiting
# shellcheck disable=SC2046
"$BIN" --data waiting $(enrich "$base") --set enrich.pending_max=200 \
    --set enrich.backlog_wait_ms=600000 process --once 2>waiting.log || { tail waiting.log; fail "waiting run"; }
tables waiting
check partition waiting.json
check same ctl.json waiting.json --all
python3 - waiting.json <<'PY' || fail "the waiting run dead-lettered edits"
import json, sys
t = {x["name"]: x for x in json.load(open(sys.argv[1]))["tables"]}
n = sum(f.get("records", 0) for f in t["dlq_lookups"].get("data_files") or [])
print(f"dlq_lookups rows with backlog_wait_ms: {n}")
sys.exit(1 if n else 0)
PY

# 3. replay once the API is healthy: exactly once, then equal to the control
# shellcheck disable=SC2046
"$BIN" --data faulty $(enrich "$base") dlq replay --lookups | tee replay1.out
grep -Eq "looked up again: [1-9]" replay1.out || fail "the replay landed nothing"
# the plain command replays lookups too when the pipeline enriches
# shellcheck disable=SC2046
"$BIN" --data faulty $(enrich "$base") dlq replay | tee replay2.out
grep -q "^lookup replay: 0 failed lookups to replay" replay2.out || fail "a second replay found more"
"$BIN" --data faulty dlq list >list.out
grep -Eq "^dlq_lookups: [1-9][0-9]* failed lookups, [1-9][0-9]* of them replayed" list.out ||
    { cat list.out; fail "dlq list does not show the replayed lookups"; }
tables faulty
check replayed faulty.json
check partition faulty.json
check oracle faulty.json
check labels faulty.json "$base"
check same ctl.json faulty.json

# 4. kills while lookups are outstanding (every answer 300 ms late, 10 % of
# requests 429 and 10 % maxlag, each with Retry-After: 1)
feed slowapi --count 1 --api-latency-ms 300 --api-429-rate 0.1 --api-maxlag 0.1
slow=$url
copy chaos
outstanding=0
for k in $(seq "$KILLS"); do
    # shellcheck disable=SC2046
    "$BIN" --data chaos $(enrich "$slow") --set enrich.max_attempts=30 --set process.trigger_ms=200 \
        process 2>>chaos.log & p=$!
    sleep "$(python3 -c "import random; random.seed($SEED * 100 + $k); print(round(random.uniform(0.5, 2.5), 2))")"
    if python3 -c 'import json,sys; sys.exit(0 if json.load(open("chaos/stats/topics.json"))["counts"]["pending"] > 0 else 1)' 2>/dev/null; then
        outstanding=$((outstanding + 1))
    fi
    kill -9 "$p"; wait "$p" 2>/dev/null || true
done
echo "$KILLS kills, $outstanding with lookups outstanding"
[ "$outstanding" -ge 1 ] || fail "no kill landed while lookups were outstanding"
# shellcheck disable=SC2046
"$BIN" --data chaos $(enrich "$base") process --once 2>>chaos.log || { tail chaos.log; fail "drain"; }
tables chaos
check partition chaos.json
check oracle chaos.json
check labels chaos.json "$base"
"$BIN" --data chaos status --json >chaos-status.json
check labelcounts chaos.json chaos-status.json # exactly once across the kills
check core ctl.json chaos.json --any-epochs # kills cut epochs elsewhere
check same ctl.json chaos.json --all
"$BIN" --data chaos verify >verify2.out 2>&1 || { cat verify2.out; fail "verify after the kills"; }

# 5. the label counters across a SIGKILL after labelled rows were committed
# (the slow API above may commit none before its kills): a healthy run is
# killed once its counters show labelled edits, then drained; the counters
# still equal the lake's rows (saved with the enrichment state, never
# counted twice nor lost)
copy relabel
# shellcheck disable=SC2046
"$BIN" --data relabel $(enrich "$base") --set process.trigger_ms=200 \
    --set process.epoch_max_records=200 process 2>relabel.log & p=$!; pids="$pids $p"
committed=0
for _ in $(seq 300); do
    sleep 0.2
    "$BIN" --data relabel status --json >relabel-status.json 2>/dev/null || continue
    if python3 -c 'import json,sys; sys.exit(0 if json.load(open("relabel-status.json"))["labels"]["labelled"] > 0 else 1)'; then
        committed=1; break
    fi
done
kill -9 "$p"; wait "$p" 2>/dev/null || true
[ "$committed" = 1 ] || fail "no labelled edit was committed before the kill"
# shellcheck disable=SC2046
"$BIN" --data relabel $(enrich "$base") process --once 2>>relabel.log || { tail relabel.log; fail "drain after the kill"; }
grep -q "resuming after epoch" relabel.log || fail "the drain did not resume from a checkpoint"
tables relabel
"$BIN" --data relabel status --json >relabel-status.json
check labelcounts relabel.json relabel-status.json
echo "PASS enrich_process"
