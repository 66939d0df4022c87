#!/usr/bin/env bash
# process_s3.sh — `freshet process` with its warehouse in an S3 bucket
# (lake.warehouse = s3://lake/wh) on moto's S3 server on 127.0.0.1, behind
# the fault proxy (s3_fault_proxy.py). Over one log (a faulty synthetic
# stream: duplicates, late, malformed events):
#   1. the processor is SIGKILLed after a few epochs;
#   2. while every PUT answers 503 the next epoch fails and the checkpoint
#      does not move; then while only the commit's metadata PUTs fail, the
#      epoch's data files land in the bucket and its commit fails; once the
#      fault clears the replay writes that epoch again (under new names, not
#      over the failed attempt's files) and the run goes to the end;
#   3. every table's files, downloaded from the bucket, hold exactly the rows
#      of a control lake processed from the same log on local disk
#      (tests/interop/lake_compare.mjs, DuckDB: EXCEPT ALL both ways; bronze
#      positions unique), and no data file was written locally;
#   4. `freshet verify` passes over the bucket (ranged GETs);
#   5. `dlq list` over the bucket agrees with the control's, `dlq replay` and
#      `rebuild` run on it (no data file written locally) and verify passes.
# Usage: process_s3.sh path/to/s3_tool (downloads objects, signed).
# Exit 77 when moto or the npm readers are absent.
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
TOOL=${1:?usage: process_s3.sh S3_TOOL}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
python3 -c 'import moto.server' 2>/dev/null || { echo "skip: python3 moto is not installed"; exit 77; }
[ -d "$src/tests/interop/node_modules/@duckdb/node-api" ] ||
    { echo "skip: tests/interop/node_modules missing (scripts/setup.sh --test)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-process-s3.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=s3_lib.sh
. "$here/s3_lib.sh"
moto_start proxy
curl -sf -X PUT "$E/lake" >/dev/null || fail "cannot create the bucket"

# ---- the log: a faulty stream, ingested to its end -------------------------
"$BIN" feed --dump --synthetic --seed 5 --count 4000 --start 2026-11-01T00:00:00Z --event-rate 20 \
    --dup-rate 0.03 --late-rate 0.01 --late-ms 300000 --malformed-rate 0.01 \
    --malformed-kinds truncated,missing_wiki,namespace_string,type_invalid >events.ndjson
"$BIN" feed --listen 127.0.0.1:0 --file events.ndjson --close-at-end >feed.out 2>feed.log &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || fail "feed did not start"
"$BIN" --data log --set ingest.stall_timeout_s=5 ingest --source "$url" 2>ingest.log &
ing=$!
for _ in $(seq 600); do grep -q 'stream ended after' ingest.log && break; sleep 0.1; done
grep -q 'stream ended after' ingest.log || fail "ingest did not see the stream's end"
sleep 0.5 # the group commit (log.fsync_interval_ms)
kill -TERM "$ing"; wait "$ing" || true
mkdir ctl s3d && cp -a log/log ctl/log && cp -a log/log s3d/log

# ---- control: the same log on local disk -----------------------------------
"$BIN" --data ctl --set process.epoch_max_records=400 process --once 2>ctl.log ||
    fail "control run: $(tail -3 ctl.log)"

s3set=(--data s3d --set lake.warehouse=s3://lake/wh --set "s3.endpoint=$P" --set s3.max_attempts=2
       --set s3.retry_budget_ms=2000 --set process.epoch_max_records=400)
fr3() { "$BIN" "${s3set[@]}" "$@"; }
ck=s3d/process/freshet/checkpoint

# ---- 1. SIGKILL after a few epochs ------------------------------------------
# (not through fr3: $! must be the freshet process, not a subshell)
"$BIN" "${s3set[@]}" process --once 2>run1.log &
p1=$!
for _ in $(seq 600); do grep -q 'info: epoch 2:' run1.log && break; kill -0 "$p1" 2>/dev/null || break; sleep 0.05; done
kill -KILL "$p1" 2>/dev/null || true
wait "$p1" 2>/dev/null || true
[ -e "$ck" ] || fail "no checkpoint after the first epochs: $(tail -3 run1.log)"
echo "PASS killed after $(grep -c 'info: epoch' run1.log) epochs"

# ---- 2. the bucket refuses every PUT: the epoch fails, the checkpoint stays -
cp "$ck" ck.before
curl -sf "$P/__fault?mode=503&count=-1&method=PUT" >/dev/null || fail "cannot set the fault rule"
if fr3 process --once 2>outage.log; then fail "process succeeded while every PUT failed"; fi
grep -q 'FR_EUNAVAILABLE' outage.log || fail "the outage did not fail on S3: $(tail -3 outage.log)"
cmp -s "$ck" ck.before || fail "the checkpoint moved during the outage"
echo "PASS S3 outage: the epoch failed ($(grep -m1 'error' outage.log | cut -c1-160)), the checkpoint did not move"
curl -sf "$P/__clear" >/dev/null

# ---- 2b. the commit fails after the epoch's data files are in the bucket -----
parquet_keys() { # data files in the bucket, failed attempts' included
    curl -sf "$E/lake?list-type=2&prefix=wh/&max-keys=1000" | grep -o '<Key>[^<]*\.parquet</Key>' | wc -l
}
before=$(parquet_keys)
curl -sf "$P/__fault?mode=503&count=-1&method=PUT&match=/metadata/" >/dev/null ||
    fail "cannot set the fault rule"
if fr3 process --once 2>commitfail.log; then fail "process succeeded while its commits failed"; fi
grep -q 'commit failed' commitfail.log || fail "the epoch did not fail in its commit: $(tail -3 commitfail.log)"
cmp -s "$ck" ck.before || fail "the checkpoint moved when the commit failed"
after=$(parquet_keys)
[ "$after" -gt "$before" ] || fail "the failed attempt left no data file in the bucket ($before, then $after)"
echo "PASS commit refused: the epoch failed after $((after - before)) data files landed, the checkpoint did not move"
curl -sf "$P/__clear" >/dev/null

# ---- then to the end of the log, maintaining the bucket's tables -------------
# every 2 epochs the processor compacts on S3 (inputs read with ranged GETs,
# outputs uploaded) and expires snapshots
fr3 --set process.maintain_every_epochs=2 process --once 2>run2.log ||
    fail "the run after the outage: $(tail -3 run2.log)"
echo "PASS finished with $(grep -c 'info: epoch' run2.log) more epochs"
merged=$(awk '/info: maintenance: [0-9]+ files/ {s += $6} END {print s + 0}' run2.log)
[ "$merged" -gt 0 ] || fail "the processor's maintenance compacted nothing on S3: $(grep -m3 'maintenance' run2.log)"
echo "PASS the processor compacted $merged files in the bucket ($(grep -c 'info: maintenance:' run2.log) rounds)"

# ---- 3. the bucket's tables equal the control's ------------------------------
"$BIN" --data ctl tables --json --files >ctl.json
fr3 tables --json --files >s3.json || fail "freshet tables over the bucket"
n_local=$(find s3d/lake -name '*.parquet' | wc -l)
[ "$n_local" = 0 ] || fail "$n_local data files were written to local disk"
python3 - <<'PY' || fail "the bucket's tables were not compacted"
import json
t = {x["name"]: x for x in json.load(open("s3.json"))["tables"]}
c = {x["name"]: x for x in json.load(open("ctl.json"))["tables"]}
b = t["bronze_recentchange"]
assert any("/compacted-" in f["path"] for f in b["data_files"]), "no compacted bronze file"
assert len(b["data_files"]) < len(c["bronze_recentchange"]["data_files"]), \
    (len(b["data_files"]), len(c["bronze_recentchange"]["data_files"]))
print("bronze: %d live files in the bucket, %d in the control" %
      (len(b["data_files"]), len(c["bronze_recentchange"]["data_files"])))
PY
s3_download "$TOOL" s3.json s3d/lake/warehouse lake wh bucket s3-local.json ||
    fail "downloading the bucket's data files"
python3 - <<'PY' || fail "tables --json names a bucket's file by a local path"
import json
t = json.load(open("s3.json"))
assert t["warehouse"].startswith("s3://lake/wh"), t["warehouse"]
for tab in t["tables"]:
    for f in tab.get("data_files") or []:
        assert f["local_path"] is None, f  # no local path names a file of the bucket
        assert f["path"].startswith("s3://lake/wh/"), f["path"]
PY
(cd "$src/tests/interop" && node lake_compare.mjs "$work/ctl.json" "$work/s3-local.json") ||
    fail "the bucket's tables differ from the control lake"
echo "PASS the bucket's six tables equal the control lake's"

# ---- 4. freshet verify over the bucket (data files read with ranged GETs) -----
fr3 verify >verify.out 2>&1 || { cat verify.out; fail "freshet verify over the bucket"; }
grep -q "^verify: 0 of [1-9][0-9]* checks failed" verify.out || { cat verify.out; fail "verify printed no result"; }
echo "PASS freshet verify over the bucket: $(tail -1 verify.out)"

# ---- 5. dlq list, dlq replay and rebuild over the bucket ---------------------
fr3 dlq list >dlq.out 2>dlq.err || { cat dlq.err; fail "dlq list over the bucket"; }
"$BIN" --data ctl dlq list >dlq-ctl.out 2>/dev/null || fail "dlq list of the control"
[ "$(head -1 dlq.out)" = "$(head -1 dlq-ctl.out)" ] ||
    fail "dlq list over the bucket says \"$(head -1 dlq.out)\", the control \"$(head -1 dlq-ctl.out)\""
grep -Eq "^dlq: [1-9][0-9]* dead letters" dlq.out || fail "no dead letters listed: $(head -1 dlq.out)"
echo "PASS dlq list over the bucket: $(head -1 dlq.out)"
fr3 dlq replay >replay.out 2>replay.err || { cat replay.err; fail "dlq replay over the bucket"; }
echo "PASS dlq replay over the bucket: $(head -1 replay.out)"
fr3 rebuild >rebuild.out 2>rebuild.err || { cat rebuild.err; fail "rebuild over the bucket"; }
fr3 tables --json >after.json
python3 - <<'PY' || fail "the rebuild did not land on the bucket's tables"
import json
t = {x["name"]: x for x in json.load(open("after.json"))["tables"]}
s = t["silver_recentchange"]["snapshots"][-1]["summary"]
assert "freshet.rebuild" in s, s
print("silver's newest snapshot is the rebuild's:", s["freshet.rebuild"])
PY
n_local=$(find s3d/lake -name '*.parquet' | wc -l)
[ "$n_local" = 0 ] || fail "the rebuild wrote $n_local data files to local disk"
fr3 verify >verify2.out 2>&1 || { cat verify2.out; fail "freshet verify after the rebuild over the bucket"; }
echo "PASS rebuild over the bucket, then $(tail -1 verify2.out)"

# ---- 6. freshet compact over the bucket: merge, expire, and the orphans -----
# The failed attempts of step 2 left data files no snapshot names. Young
# orphans stay (a commit in flight writes before it is named); with the age
# rule at 0 they go, and no live file does. The tables' rows are the same
# before and after (downloaded both times, compared with DuckDB).
download() { s3_download "$TOOL" "$1" s3d/lake/warehouse lake wh "$2" "$3"; }
count_live() { python3 -c '
import json, sys
print(sum(len(t.get("data_files") or []) for t in json.load(open(sys.argv[1]))["tables"]))' "$1"; }
fr3 tables --json --files >pre.json
download pre.json pre pre-local.json || fail "downloading the bucket's data files before compact"
fr3 compact --json >compact1.json 2>compact1.err || { cat compact1.err; fail "freshet compact over the bucket"; }
python3 - <<'PY' || fail "freshet compact over the bucket: $(cat compact1.json)"
import json
t = json.load(open("compact1.json"))["tables"]
assert sum(x["orphans"] for x in t) > 0, "no orphan seen"
assert sum(x["orphans_removed"] for x in t) == 0, "a young orphan was removed"
assert sum(x["groups"] for x in t) > 0, "nothing compacted"
print("compact: %d groups merged, %d young orphans kept" %
      (sum(x["groups"] for x in t), sum(x["orphans"] for x in t)))
PY
fr3 compact --json --orphans-older-than 0 --expire-older-than 0 --retain-last 1 >compact2.json 2>compact2.err ||
    { cat compact2.err; fail "freshet compact --orphans-older-than 0 over the bucket"; }
fr3 compact --json --no-compact --no-expire --orphans-older-than 0 --dry-run >compact3.json 2>&1 ||
    fail "freshet compact --dry-run over the bucket: $(cat compact3.json)"
python3 - <<'PY' || fail "orphans over the bucket: $(cat compact2.json) then $(cat compact3.json)"
import json
t1 = json.load(open("compact1.json"))["tables"]
t2 = json.load(open("compact2.json"))["tables"]
t3 = json.load(open("compact3.json"))["tables"]
kept = sum(x["orphans"] for x in t1)
removed = sum(x["orphans_removed"] for x in t2)
assert removed >= kept, (removed, kept)
assert sum(x["snapshots_expired"] for x in t2) > 0, "nothing expired"
assert sum(x["orphans"] for x in t3) == 0, "orphans left: %s" % t3
print("orphans removed: %d (%d bytes); none left" %
      (removed, sum(x["orphan_bytes_removed"] for x in t2)))
PY
fr3 tables --json --files >post.json
live=$(count_live post.json)
[ "$live" -lt "$(count_live pre.json)" ] || fail "compact left $live live files of $(count_live pre.json)"
download post.json post post-local.json || fail "downloading the bucket's data files after compact"
(cd "$src/tests/interop" && node lake_compare.mjs "$work/pre-local.json" "$work/post-local.json") ||
    fail "freshet compact changed the bucket's tables' rows"
fr3 verify >verify3.out 2>&1 || { cat verify3.out; fail "freshet verify after freshet compact over the bucket"; }
echo "PASS freshet compact over the bucket: $(count_live pre.json) -> $live live files, every orphan removed, rows unchanged, $(tail -1 verify3.out)"
