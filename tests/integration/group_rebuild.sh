#!/usr/bin/env bash
# group_rebuild.sh — `freshet rebuild` on a consumer group's lake (ADR 0066,
# docs/REBUILD.md "A consumer group's lake"): over the embedded log with 2
# partitions, shards (`process --partition N --once`) and the finalizer
# (`process --finalize --once`) build lake G from two thirds of a synthetic
# stream (duplicates, late, out-of-order, malformed events); then
#
#   1. right after the group ran, rebuild refuses (a member committed less
#      than --quiet-s ago): the group must be stopped;
#   2. under the same policy, the rebuilt tables equal the group's own, row
#      for row (DuckDB): the per-partition recomputation and gold's are the
#      group's; likewise on lake I, whose shards ran past the log's end and
#      committed idle epochs that raised their watermarks (and gold's
#      frontier): the rebuild raises them where the idle epochs did;
#   3. under lateness 60 s (more late arrivals): a rebuild stopped right
#      after its fences (--crash-after fence) leaves the tables as they were
#      and a shard started then refuses (its checkpoint predates the
#      rebuild); run again, the rebuild lands, and every table equals a
#      control lake C built by shards and a finalizer with lateness 60 s
#      from the start; `freshet verify` passes;
#   4. the rest of the stream: the group continues from the rebuilt
#      checkpoints, C likewise; every table still equals C's, verify passes;
#   5. a shard given its checkpoint from before the rebuild refuses, names
#      the rebuild, and commits nothing;
#   6. with S3_TOOL (and moto): lake R keeps its warehouse in moto's S3
#      server, its catalog behind `freshet serve` (REST) and its checkpoints'
#      copies in the bucket (process.checkpoint_uri). The group runs with
#      lateness 120 s over the whole log, the rebuild with 60 s: every table,
#      downloaded from the bucket, equals C's row for row; verify passes; a
#      shard on a machine without its checkpoint directory takes the
#      rebuilt checkpoint from the bucket, and refuses once that copy is gone.
#
# Loopback only. Usage: group_rebuild.sh [SEED] [S3_TOOL]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SEED=${1:-5}
TOOL=${2:-}
COUNT=8000
if [ ! -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ]; then
    echo "skip: tests/interop/node_modules missing (run scripts/setup.sh --test)"; exit 77
fi
command -v node >/dev/null || { echo "skip: node is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-grebuild.XXXXXX")
feed_pid=""; ing_pid=""; pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    [ -n "$ing_pid" ] && kill -9 "$ing_pid" 2>/dev/null || true
    [ -n "$feed_pid" ] && kill -TERM "$feed_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

# Event time at 10 events/s, ending a minute ago; late events 5 minutes
# late. The first connection pauses after 5,000 events.
er=10
start=$(date -u -d "-$((COUNT / er + 60)) sec" +%Y-%m-%dT%H:%M:%SZ)
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count "$COUNT" --rate 4000 \
    --stall-every 5000 --stall-ms 60000 \
    --event-rate "$er" --start "$start" --dup-rate 0.02 --late-rate 0.02 --late-ms 300000 \
    --ooo-rate 0.05 --ooo-ms 90000 --malformed-rate 0.01 >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { cat feed.log; fail "feed did not start"; }
lg=(--set log.partitions=2)
log_end() {
    "$BIN" --data log-home "${lg[@]}" log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0
}
ingest_until() { # ingest_until MIN_RECORDS: then stop ingest
    "$BIN" --data log-home "${lg[@]}" ingest --source "$url" 2>>ingest.log & ing_pid=$!
    prev=-1; still=0
    for _ in $(seq 600); do
        sleep 0.1
        end=$(log_end)
        [ "$end" -ge "$1" ] && break
        # still: nothing new for 4 s once records flow (a loaded machine
        # can take seconds to start ingest: an empty log is not still)
        if [ "$end" = "$prev" ] && [ "$end" -gt 0 ]; then still=$((still + 1)); else still=0; fi
        prev=$end
        [ "$still" -ge 40 ] && break
    done
    kill -TERM "$ing_pid"; wait "$ing_pid" || fail "ingest did not stop cleanly"
    ing_pid=""
}
# Each lake reads its own copy of the log (a catalog holds absolute paths).
sync_log() { for l in "$@"; do mkdir -p "$l"; rm -rf "$l/log"; cp -r log-home/log "$l/log"; done; }
common=("${lg[@]}" --set process.idle_timeout_s=0 --set process.epoch_max_records=400)
late60=(--set process.lateness_s=60)
group() { # group LAKE [settings...]: each shard once, then the finalizer once
    local lake=$1; shift
    for p in 0 1; do
        "$BIN" --data "$lake" "${common[@]}" "$@" process --partition "$p" --once 2>>"$lake.log" ||
            fail "$lake: shard $p: $(tail -3 "$lake.log")"
    done
    "$BIN" --data "$lake" "${common[@]}" "$@" process --finalize --once 2>>"$lake.log" ||
        fail "$lake: finalizer: $(tail -3 "$lake.log")"
}
tables() { "$BIN" --data "$1" "${common[@]}" tables --json --files >"$2"; }
compare() { node "$SRC/tests/interop/lake_compare.mjs" "$1" "$2" | sed 's/^/  /'; }
catalog() {
    python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print(sorted(c.execute("select * from iceberg_tables").fetchall()))' "$1"
}

ingest_until 5000
sync_log g c i
echo "log: $(log_end) records in 2 partitions"
group g
tables g g0.json
cp -r g/process/freshet-p0 stale-p0

# 1. Right after the group ran: refused, nothing written.
before=$(catalog g/lake/catalog.db)
rc=0; "$BIN" --data g "${common[@]}" rebuild >r1.out 2>r1.log || rc=$?
[ "$rc" = 1 ] || { cat r1.log; fail "a rebuild right after the group committed exited $rc, not 1"; }
grep -q "rebuild: error: freshet-\(p[01]\|gold\) (epoch [0-9]*) committed [0-9.]* s ago: the group is running" r1.log ||
    { cat r1.log; fail "the refusal does not say which member committed and when"; }
[ "$(catalog g/lake/catalog.db)" = "$before" ] || fail "the refused rebuild changed the catalog"
echo "PASS 1: refused while the group may run: $(grep -o 'freshet-[a-z0-9]* (epoch [0-9]*) committed [0-9.]* s ago' r1.log)"

# 2. The same policy: the same tables.
"$BIN" --data g "${common[@]}" rebuild --quiet-s 0 >r2.out 2>r2.log || { cat r2.log; fail "rebuild, same policy"; }
cat r2.out
tables g g1.json
compare g0.json g1.json || fail "a rebuild under the same policy changed the group's tables"
echo "PASS 2: under the same policy the rebuilt tables equal the group's"

# 2b. Idle epochs: shards left running past the log's end commit empty
# epochs that raise their watermark to the wall clock minus the lateness,
# and the finalizer settles gold up to there. The rebuild raises each
# shard's watermark where its idle epochs did, so gold is the same.
shard_pids=()
for p in 0 1; do
    "$BIN" --data i "${common[@]}" --set process.idle_timeout_s=1 --set process.trigger_ms=200 \
        process --partition "$p" 2>>i.log & shard_pids+=($!)
done
for _ in $(seq 300); do
    idle=$("$BIN" --data i "${common[@]}" tables --json 2>/dev/null | python3 -c '
import json, sys
t = {x["name"]: x for x in json.load(sys.stdin)["tables"]}
s = t["bronze_recentchange"]["snapshots"]
print(len({x["summary"].get("freshet.pipeline-id") for x in s if x["summary"].get("freshet.epoch-records") == "0"}))' 2>/dev/null || echo 0)
    [ "$idle" = 2 ] && break
    sleep 0.2
done
for pid in "${shard_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; done
[ "$idle" = 2 ] || { tail -5 i.log; fail "the running shards committed no idle epoch each"; }
"$BIN" --data i "${common[@]}" process --finalize --once 2>>i.log || fail "i: finalizer: $(tail -3 i.log)"
tables i i0.json
sleep 1
"$BIN" --data i "${common[@]}" rebuild --quiet-s 0 >r2b.out 2>r2b.log || { cat r2b.log; fail "rebuild after idle epochs"; }
grep "idle epochs kept" r2b.log | sed 's/^.*rebuild: info: /  /'
tables i i1.json
compare i0.json i1.json || fail "a rebuild after idle epochs changed the group's tables"
echo "PASS 2b: after idle epochs, under the same policy the rebuilt tables equal the group's"

# 3. Lateness 60 s: stopped after its fences, a shard refuses; then the rebuild lands.
rc=0; "$BIN" --data g "${common[@]}" "${late60[@]}" rebuild --quiet-s 0 --crash-after fence >r3a.out 2>r3a.log || rc=$?
[ "$rc" = 3 ] || { cat r3a.log; fail "--crash-after fence exited $rc, not 3"; }
tables g g2.json
compare g1.json g2.json || fail "a rebuild stopped after its fences changed the tables"
rc=0; "$BIN" --data g "${common[@]}" process --partition 0 --once >s3.out 2>s3.log || rc=$?
[ "$rc" = 1 ] || { cat s3.log; fail "a shard between the fences and the commit exited $rc, not 1"; }
grep -q "process: error: epoch [0-9]* of freshet-p0 was committed by rebuild [0-9]*" s3.log ||
    { cat s3.log; fail "the shard's refusal does not name the rebuild"; }
echo "a shard started between the rebuild's fences and its commit refused: $(grep -o 'epoch [0-9]* of freshet-p0 was committed by rebuild [0-9]*' s3.log)"
"$BIN" --data g "${common[@]}" "${late60[@]}" rebuild --quiet-s 0 >r3.out 2>r3.log || { cat r3.log; fail "rebuild, lateness 60"; }
cat r3.out
group c "${late60[@]}"
tables g g3.json
tables c c3.json
compare g3.json c3.json || fail "the rebuilt group's tables differ from the control's"
python3 - g3.json <<'PY' || fail "the rebuild under lateness 60 s moved no row to late_arrivals"
import json, sys
t = {x["name"]: x for x in json.load(open(sys.argv[1]))["tables"]}
late, gold = t["late_arrivals"]["records"], t["gold_edits_per_minute"]["records"]
print(f"  late_arrivals {late} rows, gold_edits_per_minute {gold} rows")
assert late > 0 and gold > 0
PY
"$BIN" --data g "${common[@]}" "${late60[@]}" verify >v3.out 2>&1 || { cat v3.out; fail "verify after the rebuild"; }
echo "PASS 3: rebuilt under lateness 60 s: equal to the control, verify passes ($(tail -1 v3.out))"

# 4. The rest of the stream: the group continues from the rebuilt checkpoints.
ingest_until "$COUNT"
sync_log g c
echo "log: $(log_end) records"
group g "${late60[@]}"
group c "${late60[@]}"
tables g g4.json
tables c c4.json
compare g4.json c4.json || fail "after the rest of the stream the group's tables differ from the control's"
"$BIN" --data g "${common[@]}" "${late60[@]}" verify >v4.out 2>&1 || { cat v4.out; fail "verify after the continuation"; }
echo "PASS 4: the group continued from the rebuilt checkpoints: equal to the control, verify passes"

# 5. A shard with its checkpoint from before the rebuild refuses.
before=$(catalog g/lake/catalog.db)
rm -rf g/process/freshet-p0 && cp -r stale-p0 g/process/freshet-p0
rc=0; "$BIN" --data g "${common[@]}" "${late60[@]}" process --partition 0 --once >s5.out 2>s5.log || rc=$?
[ "$rc" = 1 ] || { cat s5.log; fail "a shard with a checkpoint from before the rebuild exited $rc, not 1"; }
grep -q "was committed by rebuild [0-9]* (\`freshet rebuild\` or \`freshet dlq replay\` on the group's lake), and the checkpoint in .* is older" s5.log ||
    { cat s5.log; fail "the stale shard's refusal does not say why"; }
[ "$(catalog g/lake/catalog.db)" = "$before" ] || fail "the stale shard changed the catalog"
echo "PASS 5: a shard with a checkpoint from before the rebuild refused, nothing committed"

# 6. S3 warehouse, REST catalog, checkpoint copies in the bucket.
if [ -z "$TOOL" ] || ! python3 -c 'import moto.server' 2>/dev/null; then
    echo "PASS: freshet rebuild on a consumer group's lake (step 6 skipped: no S3_TOOL or moto)"
    exit 0
fi
url_of() { for _ in $(seq 150); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done
           awk '/^listening/ {print $2; exit}' "$1"; }
# shellcheck source=s3_lib.sh
. "$SRC/tests/integration/s3_lib.sh"
moto_start
curl -sf -X PUT "$E/lake" >/dev/null || fail "cannot create the bucket"
s3=(--set lake.warehouse=s3://lake/wh --set "s3.endpoint=$E")
token=grb-$$-$RANDOM
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data "$work/catalog" "${s3[@]}" serve --listen 127.0.0.1:0 \
    >serve.out 2>serve.log & pids+=($!)
export FRESHET_LAKE_CATALOG_TOKEN=$token
cat_url=$(url_of serve.out); cat_url=${cat_url%/}
[ -n "$cat_url" ] || fail "serve did not start"
sync_log r
rr=("${s3[@]}" --set "lake.catalog_uri=$cat_url/iceberg" --set process.checkpoint_uri=s3://lake/ck
    --set process.checkpoint_upload_every_epochs=1)
group r "${rr[@]}"
sleep 1
"$BIN" --data r "${common[@]}" "${rr[@]}" "${late60[@]}" rebuild --quiet-s 0 >r6.out 2>r6.log ||
    { cat r6.log; fail "rebuild through REST and S3"; }
"$BIN" --data r "${common[@]}" "${rr[@]}" tables --json --files >r6-bucket.json
s3_download "$TOOL" r6-bucket.json r/lake/warehouse lake wh r6-files r6.json || fail "downloading the bucket's data files"
compare r6.json c4.json || fail "the group rebuilt through REST and S3 differs from the control"
"$BIN" --data r "${common[@]}" "${rr[@]}" "${late60[@]}" verify >v6.out 2>&1 || { cat v6.out; fail "verify through REST and S3"; }
fence=$(python3 - r6-bucket.json <<'PY'
import json, sys
t = {x["name"]: x for x in json.load(open(sys.argv[1]))["tables"]}
print(max(int(s["summary"]["freshet.epoch"]) for s in t["bronze_recentchange"]["snapshots"]
          if s["summary"].get("freshet.pipeline-id") == "freshet-p0" and "freshet.rebuild" in s["summary"]))
PY
)
rm -rf r/process/freshet-p0
"$BIN" --data r "${common[@]}" "${rr[@]}" "${late60[@]}" process --partition 0 --once >s6.out 2>s6.log ||
    { cat s6.log; fail "a shard without its checkpoint directory, with the bucket's copy"; }
grep -q "checkpoint of epoch $fence taken from s3://lake/ck/freshet-p0/checkpoint" s6.log ||
    { cat s6.log; fail "the shard did not take the rebuilt checkpoint (epoch $fence) from the bucket"; }
rm -rf r/process/freshet-p0
# moto refuses an anonymous DELETE; it does not check signatures
curl -sf -X DELETE -H "Authorization: AWS4-HMAC-SHA256 Credential=testing/20261206/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00" \
    "$E/lake/ck/freshet-p0/checkpoint" >/dev/null || fail "cannot delete the bucket's copy"
rc=0; "$BIN" --data r "${common[@]}" "${rr[@]}" "${late60[@]}" process --partition 0 --once >s6b.out 2>s6b.log || rc=$?
[ "$rc" = 1 ] && grep -q "was committed by rebuild" s6b.log ||
    { cat s6b.log; fail "a shard with no checkpoint at all on a rebuilt lake exited $rc without refusing"; }
echo "PASS 6: through REST and S3: equal to the control, verify passes; the rebuilt checkpoint comes from the bucket (epoch $fence); without it the shard refuses"
echo "PASS: freshet rebuild on a consumer group's lake"
