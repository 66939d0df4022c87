#!/usr/bin/env bash
# process_shards.sh — shards and the finalizer over the embedded log
# (docs/SCALEOUT.md), without Kafka:
#   1. a 3-partition log whose partition 2 stays empty: shards 0 and 1 and
#      the finalizer run; gold stays empty, because the quiet partition's
#      shard has no watermark and the frontier is the minimum over all;
#   2. shard 2 runs with process.idle_timeout_s=1: it commits idle epochs
#      (no records) that raise its watermark; the finalizer then emits gold,
#      and `freshet verify` passes on the lake (scale-out cut);
#   3. the shards' lake against the same log processed by one `freshet
#      process`: bronze, late_arrivals and dlq hold the same rows, silver
#      the same meta_ids (lateness is judged per partition in one mode and
#      against the minimum in the other: the synthetic feed's late events
#      are late under both rules);
#   4. a finalizer SIGKILLed in the middle of its epochs, then run to the
#      end: verify's recomputation of gold from silver still holds;
#   4b. a partition added to the running pipeline: its new shard starts at
#      gold's frontier (its older events are late); verify still passes;
#   5. with moto installed, the shards and the finalizer once more with the
#      warehouse in an S3 bucket on loopback: verify passes.
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
command -v node >/dev/null || { echo "skip: node missing"; exit 77; }
[ -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ] ||
    { echo "skip: @duckdb/node-api not installed (scripts/setup.sh --test)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-shards.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"

flags=(--synthetic --seed 8 --count 4000 --start 2026-11-01T00:00:00Z --event-rate 20
       --dup-rate 0.02 --malformed-rate 0.01 --late-rate 0.01 --ooo-rate 0.02)
"$BIN" feed --listen 127.0.0.1:0 --rate 4000 "${flags[@]}" >feed.out 2>feed.log &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
D=(--data "$work/data" --set process.epoch_max_records=400 --set process.trigger_ms=100)
log_end() { "$BIN" "${D[@]}" log list --json | python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))'; }
"$BIN" "${D[@]}" --set log.partitions=2 ingest --source "$url" 2>ingest.log &
ing=$!; pids+=($ing)
prev=-1
for _ in $(seq 120); do
    sleep 0.5; end=$(log_end)
    [ "$end" = "$prev" ] && [ "$end" -gt 3000 ] && break
    prev=$end
done
kill -TERM "$ing"; wait "$ing" || true
# A third partition that never gets a record (ingest opens it, writes none).
"$BIN" "${D[@]}" --set log.partitions=3 ingest --source http://127.0.0.1:9/none 2>ingest2.log &
ing=$!; pids+=($ing)
for _ in $(seq 50); do [ -d data/log/recentchange/2 ] && break; sleep 0.1; done
kill -TERM "$ing"; wait "$ing" || true
[ -d data/log/recentchange/2 ] || { echo "FAIL: partition 2 was not created"; exit 1; }
cp -r data/log single_log

gold_rows() {
    "$BIN" "${D[@]}" tables --json | python3 -c '
import json,sys
t = {x["name"]: x.get("records") or 0 for x in json.load(sys.stdin)["tables"]}
print(t.get("gold_edits_per_minute", 0), t.get("gold_top_pages", 0))'
}
for p in 0 1; do "$BIN" "${D[@]}" process --partition $p --once 2>>shards.log; done
"$BIN" "${D[@]}" process --finalize --once 2>>final.log
read -r epm top < <(gold_rows)
echo "before shard 2 ran: gold rows $epm + $top"
[ "$epm" = 0 ] && [ "$top" = 0 ] ||
    { echo "FAIL: gold was emitted while partition 2's shard had no watermark"; exit 1; }

"$BIN" "${D[@]}" --set process.idle_timeout_s=1 process --partition 2 2>>shard2.log &
s2=$!; pids+=($s2)
for _ in $(seq 100); do grep -q 'epoch 0: 0 records' shard2.log && break; sleep 0.1; done
kill -TERM "$s2"; wait "$s2" || { echo "FAIL: shard 2 did not exit cleanly"; tail -n 5 shard2.log; exit 1; }
grep -q 'epoch 0: 0 records' shard2.log || { echo "FAIL: no idle epoch"; tail -n 5 shard2.log; exit 1; }
echo "shard 2: $(grep -c ': 0 records' shard2.log) idle epoch(s)"

# The finalizer, SIGKILLed after its second epoch, then to the end: verify
# recomputes gold from silver at the frontier (a window emitted twice, or
# one missing, fails it).
"$BIN" "${D[@]}" process --finalize 2>>final.log &
fin=$!; pids+=($fin)
for _ in $(seq 200); do [ "$(grep -c 'finalize: info: epoch' final.log || true)" -ge 2 ] && break; sleep 0.02; done
kill -9 "$fin"; wait "$fin" 2>/dev/null || true
"$BIN" "${D[@]}" process --finalize --once 2>>final.log
read -r epm top < <(gold_rows)
echo "after the idle epochs: gold rows $epm + $top"
[ "$epm" -gt 0 ] && [ "$top" -gt 0 ] || { echo "FAIL: still no gold"; tail -n 5 final.log; exit 1; }
"$BIN" "${D[@]}" verify > verify.out 2>&1 || { echo "FAIL: freshet verify"; cat verify.out; exit 1; }
head -1 verify.out; tail -1 verify.out
grep -q 'replaying planned epoch\|already in the lake' final.log && echo "the finalizer replayed after its SIGKILL" || true
"$BIN" "${D[@]}" tables --json --files > shards.json

# A partition added to a running pipeline: more events of the same hours go
# to 4 partitions; the new shard 3 first commits an empty epoch that raises
# its watermark to gold's frontier, so its events in windows already
# emitted are late_arrivals, not silver (without it verify's gold check
# fails: silver rows inside emitted windows).
# (stream positions after the first feed's, so ingest's resume takes them;
# 60 % of the events 10 minutes behind the stream: inside emitted windows)
"$BIN" feed --listen 127.0.0.1:0 --rate 4000 --synthetic --seed 31 --count 1500 \
    --start 2026-11-01T00:10:00Z --event-rate 20 --late-rate 0.6 --late-ms 600000 >feed2.out 2>feed2.log &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed2.out 2>/dev/null && break; sleep 0.1; done
url2=$(awk '/^listening/ {print $2; exit}' feed2.out)
before=$(log_end)
"$BIN" "${D[@]}" --set log.partitions=4 ingest --source "$url2" 2>ingest3.log &
ing=$!; pids+=($ing)
prev=-1
for _ in $(seq 120); do
    sleep 0.5; end=$(log_end)
    [ "$end" = "$prev" ] && [ "$end" -gt $((before + 1000)) ] && break
    prev=$end
done
kill -TERM "$ing"; wait "$ing" || true
[ "$(log_end)" -gt $((before + 1000)) ] || { echo "FAIL: the second stream was not ingested"; tail -n 3 ingest3.log; exit 1; }
for p in 0 1 2; do "$BIN" "${D[@]}" process --partition $p --once 2>>shards2.log; done
"$BIN" "${D[@]}" process --partition 3 --once 2>shard3.log
grep -q 'epoch 0: 0 records' shard3.log || { echo "FAIL: shard 3 did not start with a join epoch"; tail -n 3 shard3.log; exit 1; }
"$BIN" "${D[@]}" process --finalize --once 2>>final.log
"$BIN" "${D[@]}" verify > verify4.out 2>&1 || { echo "FAIL: verify after partition 3 joined"; cat verify4.out; exit 1; }
echo "partition 3 joined: $(grep -h 'epoch 1:' shard3.log | sed 's/^.*epoch 1: //; s/;.*//'); $(tail -1 verify4.out)"

# One process over the same log.
mkdir single && mv single_log single/log
"$BIN" --data "$work/single" --set process.epoch_max_records=400 process --once 2>single.log
"$BIN" --data "$work/single" tables --json --files > single.json
SRC_INTEROP="$SRC/tests/interop" node --input-type=module - shards.json single.json <<'JS'
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const require = createRequire(process.env.SRC_INTEROP + '/package.json');
const { DuckDBInstance } = require('@duckdb/node-api');
const lakes = process.argv.slice(2).map((p) => Object.fromEntries(JSON.parse(readFileSync(p, 'utf8'))
  .tables.map((t) => [t.name, (t.data_files || []).map((f) => `'${f.local_path}'`)])));
const db = await DuckDBInstance.create(':memory:', { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
const con = await db.connect();
const one = async (sql) => Number(Object.values((await con.runAndReadAll(sql)).getRowObjectsJson()[0])[0]);
let failed = 0;
const cmp = async (table, cols) => {
  const [a, b] = lakes.map((l) => `(SELECT ${cols} FROM read_parquet([${l[table].join(',')}]))`);
  const x = await one(`SELECT count(*) FROM (${a} EXCEPT ALL ${b})`);
  const y = await one(`SELECT count(*) FROM (${b} EXCEPT ALL ${a})`);
  const n = await one(`SELECT count(*) FROM ${a}`);
  console.log(`${x || y ? 'FAIL' : 'PASS'} ${table} (${cols}) shards = one process: ${n} rows; ${x} only in the shards', ${y} only in one process's`);
  if (x || y) failed++;
};
await cmp('bronze_recentchange', 'log_partition, log_offset, meta_id');
await cmp('silver_recentchange', 'meta_id');
await cmp('late_arrivals', 'log_partition, log_offset, meta_id');
await cmp('dlq', 'log_partition, log_offset, reason');
process.exit(failed ? 1 : 0);
JS
# 5. The same shards and finalizer with the warehouse in a bucket (moto's
#    S3 server on loopback), when moto is installed: verify passes there too.
if python3 -c 'import moto.server' 2>/dev/null; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
    python3 -m moto.server -H 127.0.0.1 -p "$port" >moto.log 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing-secret-value
    unset AWS_SESSION_TOKEN
    curl -sf -X PUT "http://127.0.0.1:$port/lake" >/dev/null || { echo "FAIL: cannot create the bucket"; exit 1; }
    mkdir s3d && cp -a single/log s3d/log
    S=(--data "$work/s3d" --set lake.warehouse=s3://lake/wh --set "s3.endpoint=http://127.0.0.1:$port"
       --set process.epoch_max_records=400 --set process.idle_timeout_s=1
       --set process.checkpoint_uri=s3://lake/ck --set process.checkpoint_upload_every_epochs=1)
    # Shard 0 stops after a few epochs; its checkpoint directory is lost (a
    # new machine); it resumes from the bucket's copy, not from epoch -1.
    "$BIN" "${S[@]}" process --partition 0 2>>s3.log &
    s0=$!; pids+=($s0)
    for _ in $(seq 200); do [ "$(grep -c 'process: info: epoch' s3.log || true)" -ge 3 ] && break; sleep 0.05; done
    kill -TERM "$s0"; wait "$s0" || true
    rm -rf s3d/process/freshet-p0
    "$BIN" "${S[@]}" process --partition 0 --once 2>s3_resume.log || { echo "FAIL: S3 shard 0 resume"; tail -n 5 s3_resume.log; exit 1; }
    grep -h 'taken from s3://lake/ck/freshet-p0/checkpoint' s3_resume.log | sed 's/^.*process: info: /shard 0 on a new machine: /'
    grep -q 'taken from s3://lake/ck/freshet-p0/checkpoint' s3_resume.log ||
        { echo "FAIL: shard 0 did not resume from the bucket's checkpoint"; tail -n 5 s3_resume.log; exit 1; }
    if grep -q 'rebuilding the operators' s3_resume.log; then
        grep -h 'rebuilding the operators' s3_resume.log | sed 's/^.*warn: /note: /'
    fi
    cat s3_resume.log >> s3.log
    "$BIN" "${S[@]}" process --partition 1 --once 2>>s3.log || { echo "FAIL: S3 shard 1"; tail -n 5 s3.log; exit 1; }
    "$BIN" "${S[@]}" process --partition 2 2>>s3.log &
    s2=$!; pids+=($s2)
    for _ in $(seq 100); do grep -q 'epoch 0: 0 records' s3.log && break; sleep 0.1; done
    kill -TERM "$s2"; wait "$s2" || true
    "$BIN" "${S[@]}" process --finalize --once 2>>s3.log || { echo "FAIL: S3 finalizer"; tail -n 5 s3.log; exit 1; }
    grep 'finalize: info: epoch' s3.log | tail -1 | grep -q 'frontier none' &&
        { echo "FAIL: over S3 the finalizer never had a frontier"; exit 1; }
    "$BIN" "${S[@]}" verify > verify_s3.out 2>&1 || { echo "FAIL: verify over S3"; cat verify_s3.out; exit 1; }
    echo "S3 warehouse: $(grep -c 'finalize: info: epoch' s3.log) finalizer epochs; $(tail -1 verify_s3.out)"
else
    echo "note: moto is not installed; the S3 phase was skipped"
fi
echo "PASS: shards, idle epochs and the finalizer"
