#!/usr/bin/env bash
# group_dlq.sh — `freshet dlq replay` on a consumer group's lake (ADR 0067,
# docs/DLQ.md "A consumer group's lake"): over the embedded log with 2
# partitions, shards and the finalizer (`--once` each) build lake G with
# process.max_event_bytes=4096 from a stream with oversize (6,000-byte) and
# truncated events, so the dlq holds oversize and not_json rows. Then
#
#   1. right after the group ran, the replay refuses (a shard committed
#      less than --quiet-s ago) and writes nothing;
#   2. with max_event_bytes 1 MiB the replay lands every oversize dead
#      letter, shard by shard, each shard's as its next epoch; the truncated
#      ones stay; the shards' epochs carry freshet.dlq-replay;
#   3. the finalizer consumes those epochs: gold_edits_per_minute then
#      equals its recomputation from silver (verify), and a replay run
#      again lands nothing (exactly once);
#   4. the group continues over the rest of the stream from the replay's
#      checkpoints; verify passes;
#   5. a shard given its checkpoint from before the replay refuses, naming
#      the replay, and commits nothing;
#   6. (with moto) lake R: the warehouse in moto's S3 server, the catalog
#      behind `freshet serve` (REST), the checkpoints' copies in the bucket:
#      the same replay lands every oversize dead letter through the REST
#      epoch commits, and verify passes after the finalizer.
#
# Loopback only. Usage: group_dlq.sh [SEED]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SEED=${1:-7}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
COUNT=6000
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-gdlq.XXXXXX")
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

er=10
start=$(date -u -d "-$((COUNT / er + 60)) sec" +%Y-%m-%dT%H:%M:%SZ)
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count "$COUNT" --rate 4000 \
    --stall-every 4000 --stall-ms 60000 --event-rate "$er" --start "$start" --dup-rate 0.02 \
    --malformed-rate 0.03 --malformed-kinds truncated,oversize --oversize-bytes 6000 \
    >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { cat feed.log; fail "feed did not start"; }
lg=(--set log.partitions=2)
base=("${lg[@]}" --set process.idle_timeout_s=0 --set process.epoch_max_records=400)
g=(--data g "${base[@]}")
strict=(--set process.max_event_bytes=4096)
loose=(--set process.max_event_bytes=1048576)
log_end() {
    "$BIN" "${g[@]}" log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0
}
ingest_until() { # ingest_until MIN_RECORDS: then stop ingest
    "$BIN" "${g[@]}" ingest --source "$url" 2>>ingest.log & ing_pid=$!
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
group() { # group LAKE_ARGS...: each shard once, then the finalizer once
    for p in 0 1; do
        "$BIN" "$@" process --partition "$p" --once 2>>group.log ||
            fail "shard $p: $(tail -3 group.log)"
    done
    "$BIN" "$@" process --finalize --once 2>>group.log || fail "finalizer: $(tail -3 group.log)"
}
catalog() {
    python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print(sorted(c.execute("select * from iceberg_tables").fetchall()))' "$1"
}
dlq_counts() { # dlq_counts LAKE_ARGS...: "<oversize> <not_json> <replayed>" from dlq list --json
    "$BIN" "$@" dlq list --json --samples 0 | python3 -c '
import json, sys
d = json.load(sys.stdin)
by = {r["reason"]: r for r in d["reasons"]}
o, n = by.get("oversize", {}), by.get("not_json", {})
print(o.get("count", 0), n.get("count", 0), sum(r.get("replayed", 0) for r in d["reasons"]))'
}

ingest_until 4000
group "${g[@]}" "${strict[@]}"
read -r oversize notjson replayed0 <<<"$(dlq_counts "${g[@]}")"
echo "lake: $(log_end) log records; dlq: $oversize oversize, $notjson not_json, $replayed0 replayed"
[ "$oversize" -gt 0 ] && [ "$notjson" -gt 0 ] && [ "$replayed0" = 0 ] || fail "the dlq does not hold what the test needs"
cp -r g/process/freshet-p0 stale-p0

# 1. Right after the group ran: refused, nothing written.
before=$(catalog g/lake/catalog.db)
rc=0; "$BIN" "${g[@]}" "${loose[@]}" dlq replay >d1.out 2>d1.log || rc=$?
[ "$rc" = 1 ] || { cat d1.log; fail "a replay right after the group committed exited $rc, not 1"; }
grep -q "dlq: error: freshet-p[01] (epoch [0-9]*) committed [0-9.]* s ago: the group is running" d1.log ||
    { cat d1.log; fail "the refusal does not say which shard committed and when"; }
[ "$(catalog g/lake/catalog.db)" = "$before" ] || fail "the refused replay changed the catalog"
echo "PASS 1: refused while the group may run"

# 2. The replay, shard by shard.
"$BIN" "${g[@]}" "${loose[@]}" dlq replay --quiet-s 0 >d2.out 2>d2.log || { cat d2.log; fail "dlq replay on the group's lake"; }
cat d2.out
[ "$(grep -c '^dlq replay [0-9]*p[01] of shard freshet-p[01]: ' d2.out)" = 2 ] || fail "not one replay per shard"
landed=$(awk '/^  landed/ {s += $2} END {print s + 0}' d2.out)
read -r _ _ replayed <<<"$(dlq_counts "${g[@]}")"
[ "$landed" = "$oversize" ] && [ "$replayed" = "$oversize" ] ||
    fail "landed $landed, dlq_replays holds $replayed, but $oversize oversize dead letters"
"$BIN" "${g[@]}" tables --json >t2.json
python3 - t2.json <<'PY' || fail "each shard's replay is not its next epoch with freshet.dlq-replay"
import json, sys
t = {x["name"]: x for x in json.load(open(sys.argv[1]))["tables"]}
marked = {}
for s in t["bronze_recentchange"]["snapshots"]:
    sm = s["summary"]
    if "freshet.dlq-replay" in sm:
        marked[sm.get("freshet.pipeline-id")] = sm.get("freshet.epoch")
print("  replay epochs:", marked)
assert set(marked) == {"freshet-p0", "freshet-p1"}, marked
PY
echo "PASS 2: $landed oversize dead letters landed, one epoch per shard; $notjson not_json stay"

# 3. The finalizer consumes them; verify; exactly once.
"$BIN" "${g[@]}" "${loose[@]}" process --finalize --once 2>>group.log || fail "finalizer after the replay"
"$BIN" "${g[@]}" "${loose[@]}" verify >v3.out 2>&1 || { cat v3.out; fail "verify after the replay"; }
"$BIN" "${g[@]}" "${loose[@]}" dlq replay --quiet-s 0 >d3.out 2>d3.log || { cat d3.log; fail "second replay"; }
again=$(awk '/^  landed/ {s += $2} END {print s + 0}' d3.out)
[ "$again" = 0 ] || { cat d3.out; fail "a second replay landed $again dead letters again"; }
echo "PASS 3: the finalizer consumed the replay epochs, verify passes ($(tail -1 v3.out)); a second replay lands nothing"

# 4. The rest of the stream, from the replay's checkpoints.
ingest_until "$COUNT"
group "${g[@]}" "${loose[@]}"
"$BIN" "${g[@]}" "${loose[@]}" verify >v4.out 2>&1 || { cat v4.out; fail "verify after the continuation"; }
echo "PASS 4: the group continued over $(log_end) records; verify passes"

# 5. A shard with its checkpoint from before the replay refuses.
before=$(catalog g/lake/catalog.db)
rm -rf g/process/freshet-p0 && cp -r stale-p0 g/process/freshet-p0
rc=0; "$BIN" "${g[@]}" "${strict[@]}" process --partition 0 --once >s5.out 2>s5.log || rc=$?
[ "$rc" = 1 ] && grep -q "was committed by dlq replay [0-9]*p0" s5.log ||
    { cat s5.log; fail "a shard with a checkpoint from before the replay exited $rc without refusing"; }
[ "$(catalog g/lake/catalog.db)" = "$before" ] || fail "the stale shard changed the catalog"
echo "PASS 5: a shard with a checkpoint from before the replay refused, nothing committed"

# 6. S3 warehouse, REST catalog, checkpoint copies in the bucket.
if ! python3 -c 'import moto.server' 2>/dev/null; then
    echo "PASS: freshet dlq replay on a consumer group's lake (step 6 skipped: moto missing)"
    exit 0
fi
url_of() { for _ in $(seq 150); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done
           awk '/^listening/ {print $2; exit}' "$1"; }
# shellcheck source=s3_lib.sh
. "$SRC/tests/integration/s3_lib.sh"
moto_start
curl -sf -X PUT "$E/lake" >/dev/null || fail "cannot create the bucket"
s3=(--set lake.warehouse=s3://lake/wh --set "s3.endpoint=$E")
token=gdlq-$$-$RANDOM
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data "$work/catalog" "${s3[@]}" serve --listen 127.0.0.1:0 \
    >serve.out 2>serve.log & pids+=($!)
export FRESHET_LAKE_CATALOG_TOKEN=$token
cat_url=$(url_of serve.out); cat_url=${cat_url%/}
[ -n "$cat_url" ] || fail "serve did not start"
mkdir -p r && cp -r g/log r/log
rr=(--data r "${base[@]}" "${s3[@]}" --set "lake.catalog_uri=$cat_url/iceberg" --set process.checkpoint_uri=s3://lake/ck
    --set process.checkpoint_upload_every_epochs=1)
group "${rr[@]}" "${strict[@]}"
sleep 1
"$BIN" "${rr[@]}" "${loose[@]}" dlq replay --quiet-s 0 >d6.out 2>d6.log || { cat d6.log; fail "dlq replay through REST and S3"; }
landed6=$(awk '/^  landed/ {s += $2} END {print s + 0}' d6.out)
read -r oversize6 _ replayed6 <<<"$(dlq_counts "${rr[@]}")"
[ "$landed6" = "$oversize6" ] && [ "$replayed6" = "$oversize6" ] && [ "$oversize6" -gt 0 ] ||
    { cat d6.out; fail "through REST: landed $landed6, replayed $replayed6, oversize $oversize6"; }
"$BIN" "${rr[@]}" "${loose[@]}" process --finalize --once 2>>group.log || fail "finalizer through REST"
"$BIN" "${rr[@]}" "${loose[@]}" verify >v6.out 2>&1 || { cat v6.out; fail "verify through REST and S3"; }
echo "PASS 6: through REST and S3: $landed6 oversize dead letters landed, verify passes"
echo "PASS: freshet dlq replay on a consumer group's lake"
