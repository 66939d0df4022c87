#!/usr/bin/env bash
# enrich_moved.sh — a shard with enrichment that moves to machines without
# its checkpoint directory (issue 31, ADR 0064; ctest
# integration_enrich_moved, labels integration and chaos). All on 127.0.0.1:
#
#   librdkafka's mock cluster in its own process (topic recentchange, 2
#   partitions) <- freshet ingest <- freshet feed (synthetic, duplicates
#   and late events)
#   moto's S3 server: the warehouse (s3://lake/wh) and the checkpoint
#   copies (process.checkpoint_uri = s3://lake/ck, every 4 epochs)
#   freshet serve: the Iceberg REST catalog over that warehouse
#   the MediaWiki-API fixture of freshet feed, slow (150 ms) and answering
#   30 % 503s, so lookups are pending across epochs
#
# Shard 1 runs once. Shard 0 runs on "machine" 1, is SIGKILLed after a few
# epochs while lookups are pending, then starts on machine 2 with an empty
# data directory (no checkpoint directory, no enrichment state files: only
# the bucket), is SIGKILLed again, and so on for ROUNDS machines; the last
# one drains (--once), then the finalizer. Then:
#   - the moved shard resumed from the bucket: the checkpoint copy and the
#     enrichment state of the lake's newest epoch were taken from it;
#   - `freshet verify` passes (through serve's catalog, over the bucket);
#   - every enrichable edit has exactly one outcome (silver_topics or
#     dlq_lookups, no meta_id twice), and silver_topics, gold_top_topics and
#     the core tables, downloaded from the bucket, equal a control built
#     from the same topic by each shard once and the finalizer once against
#     a healthy API, row for row (DuckDB, tests/interop/topics_check.mjs).
# Without the state copies the moved shard refuses to go on (it cannot know
# which lookups were pending), and the test fails at that step.
#
# Usage: enrich_moved.sh KAFKA_MOCK S3_TOOL [SEED] [COUNT] [ROUNDS]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
MOCK=${1:?usage: enrich_moved.sh KAFKA_MOCK S3_TOOL [SEED] [COUNT] [ROUNDS]}
TOOL=${2:?usage: enrich_moved.sh KAFKA_MOCK S3_TOOL [SEED] [COUNT] [ROUNDS]}
SEED=${3:-37}
COUNT=${4:-3000}
ROUNDS=${5:-4}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$MOCK" ] || { echo "skip: $MOCK is not built"; exit 77; }
python3 -c 'import moto.server' 2>/dev/null || { echo "skip: python3 moto is not installed"; exit 77; }
command -v node >/dev/null || { echo "skip: node missing"; exit 77; }
[ -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ] ||
    { echo "skip: @duckdb/node-api not installed (scripts/setup.sh --test)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-enrich-moved.XXXXXX")
mock_pid=""; pids=(); shard=""
cleanup() {
    [ -n "$shard" ] && kill -9 "$shard" 2>/dev/null || true
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    [ -n "$mock_pid" ] && kill -TERM "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/shard0-m*.log; do [ -f "$f" ] && { echo "== $f"; tail -6 "$f"; }; done; exit 1; }
cd "$work"
url_of() { for _ in $(seq 150); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done
           awk '/^listening/ {print $2; exit}' "$1"; }
check() { node "$SRC/tests/interop/topics_check.mjs" "$@"; }

# ---- the peers ---------------------------------------------------------------
# shellcheck source=kafka_lib.sh
. "$SRC/tests/integration/kafka_lib.sh"
mock_start "$MOCK" --brokers 1 --partitions 2
# shellcheck source=s3_lib.sh
. "$SRC/tests/integration/s3_lib.sh"
moto_start
curl -sf -X PUT "$E/lake" >/dev/null || fail "cannot create the bucket"
s3=(--set lake.warehouse=s3://lake/wh --set "s3.endpoint=$E" --set s3.max_attempts=6)
token=moved-$$-$RANDOM
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data "$work/catalog" "${s3[@]}" serve --listen 127.0.0.1:0 \
    >serve.out 2>serve.log & pids+=($!)
cat_url=$(url_of serve.out); cat_url=${cat_url%/}
[ -n "$cat_url" ] || fail "serve did not start"
export FRESHET_LAKE_CATALOG_TOKEN=$token
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count 1 --api-latency-ms 150 \
    --api-error-rate 0.3 >api.out 2>api.log & pids+=($!)
api=$(url_of api.out | sed 's#/v2/stream/recentchange##')
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 7 --count 1 >goodapi.out 2>goodapi.log & pids+=($!)
goodapi=$(url_of goodapi.out | sed 's#/v2/stream/recentchange##')
[ -n "$api" ] && [ -n "$goodapi" ] || fail "an API fixture did not start"
enrich() { echo --set enrich.enabled=1 --set "enrich.api_url=$1/api/{wiki}/w/api.php" --set enrich.rate_per_s=0 \
    --set enrich.backoff_min_ms=20 --set enrich.backoff_max_ms=200 --set enrich.max_attempts=30; }
kafka=(--set log.backend=kafka --set "kafka.brokers=$brokers" --set log.partitions=2)

# ---- the topic ---------------------------------------------------------------
"$BIN" feed --listen 127.0.0.1:0 --rate 3000 --synthetic --seed "$SEED" --count "$COUNT" \
    --start 2026-11-02T10:00:00Z --event-rate 3 --dup-rate 0.02 --late-rate 0.01 --late-ms 300000 \
    >feed.out 2>feed.log & feed=$!
url=$(url_of feed.out)
[ -n "$url" ] || fail "feed did not start"
log_end() { log_total --data "$work/ingest" "${kafka[@]}"; }
"$BIN" --data "$work/ingest" "${kafka[@]}" ingest --source "$url" 2>ingest.log & ing=$!
log_settle 300
kill -TERM "$ing"; wait "$ing" || fail "ingest did not exit cleanly"
kill -TERM "$feed"; wait "$feed" || true
total=$(log_end)
[ "$total" -ge $((COUNT * 9 / 10)) ] || fail "only $total records in the topic"
echo "log: $total records in 2 partitions"

# ---- shard 0 moves from machine to machine -----------------------------------
# machine N: its own data directory (no checkpoint directory, no state files)
# shellcheck disable=SC2207
on() { echo --data "$work/m$1" "${kafka[@]}" "${s3[@]}" --set "lake.catalog_uri=$cat_url/iceberg" \
    --set process.checkpoint_uri=s3://lake/ck --set process.checkpoint_upload_every_epochs=4 \
    --set process.trigger_ms=150 --set process.epoch_max_records=60 --set process.idle_timeout_s=0 \
    $(enrich "$api"); }
committed() { grep -Ec 'process: info: epoch [0-9]+: ' "$1" 2>/dev/null || true; }
# shellcheck disable=SC2046
"$BIN" $(on 0) process --partition 1 --once 2>shard1.log || fail "shard 1: $(tail -3 shard1.log)"
pending_kills=0
for m in $(seq 1 "$ROUNDS"); do
    # shellcheck disable=SC2046
    "$BIN" $(on "$m") process --partition 0 2>"shard0-m$m.log" & shard=$!
    # a few epochs of its own, then SIGKILL (whatever it is doing)
    want=$(( $(committed "shard0-m$m.log") + 3 + m % 3 ))
    for _ in $(seq 600); do
        [ "$(grep -Ec 'process: info: epoch [0-9]+: [0-9]+ records' "shard0-m$m.log" || true)" -ge "$want" ] && break
        kill -0 "$shard" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$shard" 2>/dev/null || fail "shard 0 on machine $m stopped by itself: $(tail -3 "shard0-m$m.log")"
    kill -9 "$shard"; wait "$shard" 2>/dev/null || true; shard=""
    last=$(grep -Eo 'enrichment: [0-9]+ waiting' "shard0-m$m.log" | tail -1 | awk '{print $2}')
    [ "${last:-0}" -gt 0 ] && pending_kills=$((pending_kills + 1))
    echo "machine $m: $(committed "shard0-m$m.log") epochs committed, SIGKILLed with ${last:-0} lookups pending at its last commit"
done
[ "$pending_kills" -ge 1 ] || fail "no kill landed while lookups were pending (the case under test)"
m=$((ROUNDS + 1))
# shellcheck disable=SC2046
"$BIN" $(on "$m") process --partition 0 --once 2>"shard0-m$m.log" ||
    fail "the drain of shard 0 on machine $m: $(tail -3 "shard0-m$m.log")"
# shellcheck disable=SC2046
"$BIN" $(on 0) process --finalize --once 2>final.log || fail "the finalizer: $(tail -3 final.log)"

# ---- what landed -------------------------------------------------------------
ref() { "$BIN" --data "$work/catalog" "${s3[@]}" "$@"; }
ref verify >verify.out 2>&1 || { cat verify.out; fail "freshet verify"; }
tail -1 verify.out | sed 's/^/freshet verify: /'
grep -Eq "^gold_topics_recomputed +PASS" verify.out || { cat verify.out; fail "verify did not check gold_top_topics"; }
ref tables --json --files >moved.json || fail "freshet tables over the bucket"
s3_download "$TOOL" moved.json catalog/lake/warehouse lake wh bucket moved-local.json ||
    fail "downloading the bucket's data files"

# ---- the control: the same topic, a healthy API, no kills --------------------
# shellcheck disable=SC2207
ctl=(--data "$work/control" "${kafka[@]}" --set process.epoch_max_records=5000 --set process.idle_timeout_s=0
     $(enrich "$goodapi"))
for p in 0 1; do
    "$BIN" "${ctl[@]}" process --partition "$p" --once 2>>control.log || fail "control shard $p: $(tail -3 control.log)"
done
"$BIN" "${ctl[@]}" process --finalize --once 2>>control.log || fail "control finalize"
"$BIN" "${ctl[@]}" tables --json --files >control.json
check partition moved-local.json || fail "an enrichable edit has no outcome or two"
check core control.json moved-local.json --any-epochs || fail "the core tables differ from the control's"
check same control.json moved-local.json --all || fail "silver_topics or gold_top_topics differ from the control's"
check oracle moved-local.json || fail "gold_top_topics differs from its recomputation"
python3 - <<'PY' || fail "a table the comparison relies on is empty"
import json
t = {x["name"]: x for x in json.load(open("moved-local.json"))["tables"]}
for n in ["silver_recentchange", "silver_topics", "gold_top_topics"]:
    print(f"  {n}: {t[n].get('records')} rows")
    assert (t[n].get("records") or 0) > 0, f"{n} is empty: the test would not show anything"
PY
# ---- how: every move took its checkpoint and state from the bucket -------------
for m in $(seq 2 $((ROUNDS + 1))); do
    grep -q 'taken from s3://lake/ck/freshet-p0/checkpoint' "shard0-m$m.log" ||
        fail "machine $m did not take shard 0's checkpoint from the bucket"
    grep -q 'enrichment state state-[0-9]*-[0-9a-f]* taken from s3://lake/' "shard0-m$m.log" ||
        fail "machine $m did not take the enrichment state from the bucket"
done
replays=$(cat shard0-m*.log | grep -c 'already in the lake: state rebuilt' || true)
echo "shard 0 on $((ROUNDS + 1)) machines: $replays epochs replayed after an older checkpoint copy"
[ "$replays" -ge 1 ] || fail "no move replayed epochs past the checkpoint copy"
# bounded: the copies of epochs before the newest checkpoint copy are deleted
copies=$(curl -sf "$E/lake?list-type=2&prefix=ck/freshet-p0/enrich/" | grep -o '<Key>[^<]*</Key>' | grep -c 'state-' || true)
echo "enrichment state copies left in the bucket for shard 0: $copies"
[ "$copies" -ge 1 ] && [ "$copies" -le 8 ] || fail "$copies state copies in the bucket (want 1 to 8)"

echo "PASS: shard 0 moved over $ROUNDS SIGKILLs to machines without its checkpoint directory; = control"
