#!/usr/bin/env bash
# scaleout_reference.sh — the reference build's topology end to end, on real
# protocol peers, all on 127.0.0.1 (issue 31, docs/SCALEOUT.md):
#
#   librdkafka's mock cluster in its own process (kafka_mock: 3 brokers,
#   topic recentchange with 6 partitions) <- freshet ingest <- freshet feed
#   moto's S3 server: the warehouse (s3://lake/wh)
#   freshet serve: the Iceberg REST catalog (lake.catalog_uri), its SQLite
#   catalog over the same S3 warehouse
#   three `freshet process --group` instances with enrichment on (against the
#   feed's MediaWiki-API fixture answering 503s), committing through REST,
#   maintaining the tables (compaction, expiry, orphans) in the bucket
#
# While epochs flow: at least KILLS (default 20) SIGKILLs of instances, shard
# children and the finalizer child, and one SIGSTOP of an instance for
# longer than the group's session timeout (a zombie: the group moves its
# partitions; after SIGCONT it must not land anything twice). Then drain,
# and:
#   - at least 1,000 epochs were committed (shards' and the finalizer's;
#     the group runs on, committing idle epochs, until it has);
#   - before the instances stop, the dashboard of a serve on the group's
#     data directory (up since the start), in Chromium, shows every shard and
#     the finalizer up with epochs, the group's silver total, charts with the
#     run's history and the group's trending topics
#     (tests/browser/group_look.mjs);
#   - `freshet verify` passes (over the bucket, through serve's catalog);
#   - every table, downloaded from the bucket, equals row for row (DuckDB) a
#     control built from the same topic on the embedded catalog and a local
#     warehouse by each shard once and the finalizer once (the scale-out
#     mode's own semantics: each partition has its own watermark,
#     docs/SCALEOUT.md), and gold_top_topics equals its recomputation;
#   - every table's live data files stay under LIVE_BOUND (the finalizer's
#     own maintenance in the bucket; without it bronze alone would hold one
#     file per shard epoch).
#
# Usage: scaleout_reference.sh KAFKA_MOCK S3_TOOL [SEED] [COUNT]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
MOCK=${1:?usage: scaleout_reference.sh KAFKA_MOCK S3_TOOL [SEED] [COUNT]}
TOOL=${2:?usage: scaleout_reference.sh KAFKA_MOCK S3_TOOL [SEED] [COUNT]}
SEED=${3:-31}
COUNT=${4:-5000}
KILLS=${KILLS:-20}
EPOCHS_MIN=${EPOCHS_MIN:-1000}
LIVE_BOUND=${LIVE_BOUND:-20}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$MOCK" ] || { echo "skip: $MOCK is not built"; exit 77; }
python3 -c 'import moto.server' 2>/dev/null || { echo "skip: python3 moto is not installed"; exit 77; }
command -v node >/dev/null || { echo "skip: node missing"; exit 77; }
[ -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ] ||
    { echo "skip: @duckdb/node-api not installed (scripts/setup.sh --test)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-reference.XXXXXX")
mock_pid=""; members=(); pids=()
cleanup() {
    for p in "${members[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    [ -n "$mock_pid" ] && kill -TERM "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/member*.log "$work"/serve.log; do [ -f "$f" ] && { echo "== $f"; tail -8 "$f"; }; done; exit 1; }
cd "$work"
RANDOM=$SEED
url_of() { for _ in $(seq 150); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done
           awk '/^listening/ {print $2; exit}' "$1"; }

# ---- the peers ---------------------------------------------------------------
# shellcheck source=kafka_lib.sh
. "$SRC/tests/integration/kafka_lib.sh"
mock_start "$MOCK" --brokers 3 --partitions 6 --replication 3
# shellcheck source=s3_lib.sh
. "$SRC/tests/integration/s3_lib.sh"
moto_start
curl -sf -X PUT "$E/lake" >/dev/null || fail "cannot create the bucket"
s3=(--set lake.warehouse=s3://lake/wh --set "s3.endpoint=$E" --set s3.max_attempts=6)
token=ref-$$-$RANDOM
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data "$work/catalog" "${s3[@]}" serve --listen 127.0.0.1:0 \
    >serve.out 2>serve.log & pids+=($!)
cat_url=$(url_of serve.out); cat_url=${cat_url%/}
[ -n "$cat_url" ] || fail "serve did not start"
# the MediaWiki-API fixture: every third answer a 503, 40 ms each
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count 1 --api-latency-ms 40 \
    --api-error-rate 0.3 >api.out 2>api.log & pids+=($!)
api=$(url_of api.out | sed 's#/v2/stream/recentchange##')
[ -n "$api" ] || fail "the API fixture did not start"
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 7 --count 1 >goodapi.out 2>goodapi.log & pids+=($!)
goodapi=$(url_of goodapi.out | sed 's#/v2/stream/recentchange##')
enrich() { echo --set enrich.enabled=1 --set "enrich.api_url=$1/api/{wiki}/w/api.php" --set enrich.rate_per_s=0 \
    --set enrich.backoff_min_ms=20 --set enrich.backoff_max_ms=200 --set enrich.max_attempts=30; }

kafka=(--set log.backend=kafka --set "kafka.brokers=$brokers" --set log.partitions=6)
export FRESHET_LAKE_CATALOG_TOKEN=$token
# shellcheck disable=SC2207
group=(--data "$work/inst" "${kafka[@]}" "${s3[@]}" --set "lake.catalog_uri=$cat_url/iceberg"
       --set process.trigger_ms=100 --set process.epoch_max_records=10 --set kafka.session_timeout_ms=3000
       --set process.idle_timeout_s=0 --set process.maintain_every_epochs=10
       --set up.restart_min_ms=200 $(enrich "$api"))

# ---- the topic ---------------------------------------------------------------
"$BIN" feed --listen 127.0.0.1:0 --rate 3000 --synthetic --seed "$SEED" --count "$COUNT" \
    --start 2026-11-01T00:00:00Z --event-rate 20 --dup-rate 0.02 --malformed-rate 0.01 \
    --late-rate 0.01 --ooo-rate 0.05 >feed.out 2>feed.log & feed=$!
url=$(url_of feed.out)
[ -n "$url" ] || fail "feed did not start"
log_end() { log_total "${group[@]}"; }
"$BIN" "${group[@]}" ingest --source "$url" 2>ingest.log & ing=$!
log_settle 300
kill -TERM "$ing"; wait "$ing" || fail "ingest did not exit cleanly"
kill -TERM "$feed"; wait "$feed" || true
total=$(log_end)
echo "log: $total records in 6 partitions"

# ---- the group, under kills --------------------------------------------------
nmember=0
member() {
    nmember=$((nmember + 1))
    "$BIN" "${group[@]}" process --group 2>>"member$nmember.log" &
    members+=($!)
}
alive() { local out=(); for p in "${members[@]}"; do kill -0 "$p" 2>/dev/null && out+=("$p"); done; members=("${out[@]}"); }
ref_verify() { "$BIN" --data "$work/catalog" "${s3[@]}" "$@"; }
consumed() {
    ref_verify verify --json 2>/dev/null |
        python3 -c 'import json,sys; d = json.load(sys.stdin); print(d.get("consumed", d["cut"].get("consumed")))' 2>/dev/null || echo -1
}
member; member; member
# the dashboard: a serve on the group's data directory from the start, so
# its chart history (ADR 0054) holds the run when Chromium opens it below
"$BIN" "${group[@]}" serve --listen 127.0.0.1:0 >dash.out 2>dash.log & dash=$!; pids+=($dash)
dash_url=$(url_of dash.out)
[ -n "$dash_url" ] || fail "the dashboard's serve did not start"
sleep 4
kills=0; kinds=""
stopped=0
for round in $(seq 200); do
    [ "$kills" -ge "$KILLS" ] && [ "$stopped" = 1 ] && break
    sleep "$(python3 -c "import random; random.seed($SEED * 1000 + $round); print(round(random.uniform(0.8, 2.5), 2))")"
    alive
    if [ "$stopped" = 0 ] && [ "$kills" -ge $((KILLS / 2)) ] && [ "${#members[@]}" -ge 2 ]; then
        # the zombie: an instance and its children paused past the session timeout
        z=${members[0]}
        kill -STOP "$z" $(pgrep -P "$z") 2>/dev/null || true
        echo "instance $z and its children SIGSTOPped"
        sleep 6
        kill -CONT "$z" $(pgrep -P "$z") 2>/dev/null || true
        echo "instance $z continued"
        stopped=1
        continue
    fi
    # one in four an instance (its children die with it), else a shard or
    # the finalizer (whichever instance runs it)
    pick=$((RANDOM % 4))
    kids=$(for p in "${members[@]}"; do ps -o pid=,args= --ppid "$p" 2>/dev/null || true; done)
    if [ "$pick" = 0 ]; then
        child=""
    elif [ "$pick" = 1 ]; then
        child=$(echo "$kids" | awk '/--finalize/ {print $1}' | head -1 || true)
    else
        child=$(echo "$kids" | awk '/--partition/ {print $1}' | shuf -n 1 --random-source=<(yes "$round") || true)
    fi
    if [ -n "$child" ]; then
        if kill -9 "$child" 2>/dev/null; then
            kills=$((kills + 1))
            kinds="$kinds $(echo "$kids" | awk -v c="$child" '$1 == c {print ($0 ~ /--finalize/) ? "finalizer" : "shard"}')"
        fi
    elif [ "$pick" = 0 ]; then
        inst=${members[$((RANDOM % ${#members[@]}))]}
        if kill -9 "$inst" 2>/dev/null; then kills=$((kills + 1)); kinds="$kinds instance"; fi
        wait "$inst" 2>/dev/null || true
        member
    fi
done
echo "SIGKILLs: $kills ($(echo "$kinds" | tr ' ' '\n' | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}'))"
[ "$kills" -ge "$KILLS" ] || fail "only $kills SIGKILLs"
[ "$stopped" = 1 ] || fail "the zombie phase did not run"
alive
while [ "${#members[@]}" -lt 3 ]; do member; alive; done

# ---- drain: the whole log consumed, and at least EPOCHS_MIN epochs ----------
# (an idle shard commits an empty epoch every trigger: the lake's snapshots
# and maintenance go on after the log is consumed)
member_epochs() { cat member*.log | grep -Ec '(process|finalize): info: epoch [0-9]+: ' || true; }
done_=0
for _ in $(seq 600); do # verify reads the whole bucket: not every second
    sleep 3
    if [ "$(member_epochs)" -ge "$EPOCHS_MIN" ] && [ "$(consumed)" = "$total" ]; then done_=1; break; fi
done
[ "$done_" = 1 ] || fail "the group did not consume the log with $EPOCHS_MIN epochs (consumed $(consumed) of $total, $(member_epochs) epochs)"

# ---- the group's dashboard in Chromium, while it still runs ------------------
# (every member up, idle; the open topics window holds resolved edits)
look_rc=0
node "$SRC/tests/browser/group_look.mjs" --url "${dash_url%/}/" --partitions 6 --wait-s 180 --topics \
    --out "${FR_BUILD_DIR:-$work}/browser-artifacts-reference" || look_rc=$?
[ "$look_rc" = 0 ] || [ "$look_rc" = 77 ] || fail "the group's dashboard in Chromium"
kill -TERM "$dash"; wait "$dash" || fail "the dashboard's serve did not exit cleanly"
sleep 3
for p in "${members[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${members[@]}"; do wait "$p" || fail "an instance did not exit cleanly on SIGTERM"; done
members=()
# lookups still out when the instances stopped: each shard answers them; then
# the finalizer catches up (what an instance does when it runs on)
for p in 0 1 2 3 4 5; do
    "$BIN" "${group[@]}" process --partition "$p" --once 2>>drain.log || fail "drain of shard $p: $(tail -3 drain.log)"
done
"$BIN" "${group[@]}" process --finalize --once 2>>drain.log || fail "the last finalize: $(tail -3 drain.log)"

# ---- what landed -------------------------------------------------------------
epochs=$(cat member*.log drain.log | grep -Ec '(process|finalize): info: epoch [0-9]+: ' || true)
fenced=$(cat member*.log | grep -Ec 'already committed by another owner|EEXIST' || true)
echo "epochs committed: $epochs (commits fenced as another owner's: $fenced)"
[ "$epochs" -ge "$EPOCHS_MIN" ] || fail "only $epochs epochs were committed (want at least $EPOCHS_MIN)"
ref_verify verify >verify.out 2>&1 || { cat verify.out; fail "freshet verify"; }
tail -1 verify.out | sed 's/^/freshet verify: /'
grep -Eq "^gold_topics_recomputed +PASS" verify.out || { cat verify.out; fail "verify did not check gold_top_topics"; }
ref_verify tables --json --files >group.json || fail "freshet tables over the bucket"
python3 - "$LIVE_BOUND" <<'PY' || fail "live data files over the bound"
import json, sys
bound = int(sys.argv[1])
t = json.load(open("group.json"))["tables"]
for x in t:
    n = len(x.get("data_files") or [])
    print(f"  {x['name']:24} {n:4} live data files")
    assert n <= bound, f"{x['name']}: {n} live files > {bound}"
PY
maint=$(cat member*.log drain.log | grep -Ec 'info: maintenance: [0-9]+ files' || true)
echo "maintenance rounds in the bucket: $maint"
[ "$maint" -gt 0 ] || fail "no maintenance round ran"
s3_download "$TOOL" group.json catalog/lake/warehouse lake wh bucket group-local.json ||
    fail "downloading the bucket's data files"

# ---- the control: the same topic, each shard once and the finalizer once ----
# shellcheck disable=SC2207
ctl=(--data "$work/control" "${kafka[@]}" --set process.epoch_max_records=5000 --set process.idle_timeout_s=0
     $(enrich "$goodapi"))
for p in 0 1 2 3 4 5; do
    "$BIN" "${ctl[@]}" process --partition "$p" --once 2>>control.log || fail "control shard $p: $(tail -3 control.log)"
done
"$BIN" "${ctl[@]}" process --finalize --once 2>>control.log || fail "control finalize"
"$BIN" "${ctl[@]}" tables --json --files >control.json
node "$SRC/tests/interop/lake_compare.mjs" group-local.json control.json || fail "the group's lake differs from the control"
node "$SRC/tests/interop/topics_check.mjs" oracle group-local.json || fail "gold_top_topics differs from its recomputation"
python3 - <<'PY' || fail "a table the comparison relies on is empty"
import json
t = {x["name"]: x for x in json.load(open("group-local.json"))["tables"]}
for n in ["gold_edits_per_minute", "gold_top_pages", "late_arrivals", "dlq", "silver_recentchange",
          "silver_topics", "gold_top_topics"]:
    assert (t[n].get("records") or 0) > 0, f"{n} is empty: the test would not show anything"
PY
echo "PASS: the reference topology ($epochs epochs, $kills SIGKILLs, one zombie) = control, verify passes"
