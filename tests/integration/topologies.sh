#!/usr/bin/env bash
# topologies.sh — every lake command on every topology (issue 31; the
# table "Which command works where" in docs/TOPOLOGIES.md, ADR 0044).
#
# One small faulty stream (duplicates, late events, truncated and oversize
# records) is ingested once into the embedded log and once into Kafka
# (librdkafka's mock cluster in its own process), and processed into six
# lakes, over 127.0.0.1 only:
#   local    embedded log, local warehouse, SQLite catalog (the control)
#   kafka    Kafka log
#   s3       warehouse in moto's S3 server (s3://lake/s3)
#   rest     REST catalog: `freshet serve` over the same data directory
#   s3rest   S3 warehouse and REST catalog (a serve of its own data
#            directory, with the same lake.warehouse); the client's data
#            directory is separate
#   ksr      Kafka log, S3 warehouse and REST catalog
# In each cell, every command either works — and its answer is checked:
# verify passes, `tables --json` and `status --json` row counts equal the control's (whose own
# counts DuckDB reads from its files; the REST lake, built from the same
# embedded log, is compared row for row; Kafka's records carry other
# append times), `dlq list` totals, `log list` ends, `log dump` records, `serve`'s
# /metrics and /api/v1/tables, `dlq replay` lands the same dead letters
# as the control's, `rebuild` keeps verify passing — or it refuses at
# once: exit 2, a message naming the missing capability's setting, nothing
# written. No command's output mentions "No such file" or a local path of
# a remote lake, and no client of a REST catalog creates a catalog.db.
# Usage: topologies.sh KAFKA_MOCK. Exit 77 when moto, node's DuckDB or the
# mock are missing.
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
MOCK=${1:?usage: topologies.sh KAFKA_MOCK}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
[ -x "$MOCK" ] || { echo "skip: $MOCK is not built"; exit 77; }
MOCK=$(cd "$(dirname "$MOCK")" && pwd)/$(basename "$MOCK")
python3 -c 'import moto.server' 2>/dev/null || { echo "skip: python3 moto is not installed"; exit 77; }
command -v node >/dev/null || { echo "skip: node is not installed"; exit 77; }
[ -d "$src/tests/interop/node_modules/@duckdb/node-api" ] ||
    { echo "skip: tests/interop/node_modules missing (scripts/setup.sh --test)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-topo.XXXXXX")
pids=()
cleanup() {
    # serve_catalog runs in $(...), a subshell: its pids come from a file
    [ -f "$work/bg.pids" ] && while read -r p; do pids+=("$p"); done <"$work/bg.pids"
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
wait_port() {
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
    fail "nothing listens on 127.0.0.1:$1"
}
url_of() { for _ in $(seq 100); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done
           awk '/^listening/ {print $2; exit}' "$1"; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# ---- peers: moto, the Kafka mock -------------------------------------------
moto_port=$(free_port)
python3 -m moto.server -H 127.0.0.1 -p "$moto_port" >moto.log 2>&1 &
pids+=($!)
wait_port "$moto_port"
E=http://127.0.0.1:$moto_port
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing-secret-value
unset AWS_SESSION_TOKEN
curl -sf -X PUT "$E/lake" >/dev/null || fail "cannot create the bucket"
# shellcheck source=kafka_lib.sh
. "$here/kafka_lib.sh"
mock_start "$MOCK" --brokers 1 --partitions 1 --replication 1
pids+=("$mock_pid")
token=topo-$$
export FRESHET_SERVE_API_TOKEN=$token FRESHET_LAKE_CATALOG_TOKEN=$token

# ---- the stream: ingested into the embedded log and into Kafka -------------
start=$(date -u -d "-600 sec" +%Y-%m-%dT%H:%M:%SZ)
"$BIN" feed --dump --synthetic --seed 31 --count 1200 --start "$start" --event-rate 4 \
    --dup-rate 0.03 --late-rate 0.02 --late-ms 300000 --malformed-rate 0.03 \
    --malformed-kinds truncated,missing_wiki,oversize --oversize-bytes 6000 >events.ndjson
ingest_into() { # ingest_into LOGFILE FRESHET_ARGS...: the whole stream
    local logf=$1; shift
    "$BIN" feed --listen 127.0.0.1:0 --file events.ndjson --close-at-end >"$logf.feed" 2>&1 &
    local feed=$!
    local url; url=$(url_of "$logf.feed")
    [ -n "$url" ] || fail "feed did not start"
    "$BIN" "$@" --set ingest.stall_timeout_s=5 ingest --source "$url" 2>"$logf" & local ing=$!
    for _ in $(seq 600); do grep -q 'stream ended after' "$logf" && break; sleep 0.1; done
    grep -q 'stream ended after' "$logf" || fail "ingest ($logf) did not see the stream's end"
    sleep 0.5 # the group commit
    kill -TERM "$ing"; wait "$ing" || true
    kill -TERM "$feed"; wait "$feed" 2>/dev/null || true
}
K=(--set log.backend=kafka --set "kafka.brokers=$brokers" --set log.partitions=1)
ingest_into ingest-embedded.log --data local
ingest_into ingest-kafka.log --data kafka "${K[@]}"

# ---- the REST catalogs: serve over its own data directory ------------------
serve_catalog() { # serve_catalog NAME FRESHET_ARGS...: prints its /iceberg URI
    "$BIN" "${@:2}" serve --listen 127.0.0.1:0 >"serve-$1.out" 2>"serve-$1.log" &
    echo $! >>"$work/bg.pids" # called in $(...): the parent's pids never sees it
    local u; u=$(url_of "serve-$1.out")
    [ -n "$u" ] || fail "serve ($1) did not start"
    echo "${u%/}/iceberg"
}
S3() { echo --set "lake.warehouse=s3://lake/$1" --set "s3.endpoint=$E"; }
# shellcheck disable=SC2046
R1=$(serve_catalog rest --data rest)
# shellcheck disable=SC2046
R2=$(serve_catalog s3rest --data cat-s3rest $(S3 s3rest))
# shellcheck disable=SC2046
R3=$(serve_catalog ksr --data cat-ksr $(S3 ksr))
for d in s3 rest s3rest; do mkdir -p "$d"; cp -a local/log "$d/"; done

# The cells: name -> the global options of every command run in it.
declare -A A
A[local]="--data local"
A[kafka]="--data kafka ${K[*]}"
A[s3]="--data s3 $(S3 s3)"
A[rest]="--data rest --set lake.catalog_uri=$R1"
A[s3rest]="--data s3rest $(S3 s3rest) --set lake.catalog_uri=$R2"
A[ksr]="--data ksr ${K[*]} $(S3 ksr) --set lake.catalog_uri=$R3"
cells=(local kafka s3 rest s3rest ksr)
is_rest() { [[ "${A[$1]}" == *catalog_uri* ]]; }
is_s3() { [[ "${A[$1]}" == *s3://* ]]; }
remote_dir() { # the local warehouse path that must never be named for cell $1
    echo "$work/$1/lake/warehouse"
}

# run CELL TAG COMMAND...: out in CELL.TAG.out / .err, exit status in $rc;
# X holds more global options for the next commands
X=()
run() {
    local cell=$1 tag=$2; shift 2
    # shellcheck disable=SC2086
    set +e; "$BIN" ${A[$cell]} ${X[@]+"${X[@]}"} "$@" >"$cell.$tag.out" 2>"$cell.$tag.err"; rc=$?; set -e
    # nothing about a file that is not there, nor a local path of a remote lake
    if grep -qi "no such file" "$cell.$tag.out" "$cell.$tag.err"; then
        cat "$cell.$tag.err"; fail "$cell: $* said 'No such file'"
    fi
    if is_s3 "$cell" && grep -q "$(remote_dir "$cell")" "$cell.$tag.out" "$cell.$tag.err"; then
        cat "$cell.$tag.err"; fail "$cell: $* named a local warehouse path of an S3 lake"
    fi
    if is_rest "$cell" && [ "$cell" != rest ] && [ -e "$cell/lake/catalog.db" ]; then
        fail "$cell: $* created $cell/lake/catalog.db beside its REST catalog"
    fi
    return 0
}
works() { # works CELL TAG COMMAND...: must exit 0
    run "$@"
    [ "$rc" = 0 ] || { cat "$1.$2.err"; fail "$1: ${*:3} ($2) exited $rc"; }
    results+=("$1 $2: works")
}
refuses() { # refuses CELL TAG SETTING COMMAND...: exit 2 naming SETTING, at once
    local cell=$1 tag=$2 setting=$3; shift 3
    local before; before=$(find "$cell" -newer events.ndjson -type f 2>/dev/null | sort | md5sum)
    run "$cell" "$tag" "$@"
    [ "$rc" = 2 ] || { cat "$cell.$tag.err"; fail "$cell: $* exited $rc, not 2 (a refusal)"; }
    grep -q "not yet supported with .*($setting=" "$cell.$tag.err" ||
        { cat "$cell.$tag.err"; fail "$cell: $*'s refusal does not name $setting"; }
    [ "$(find "$cell" -newer events.ndjson -type f 2>/dev/null | sort | md5sum)" = "$before" ] ||
        fail "$cell: $* wrote files before refusing"
    results+=("$cell $tag: refused ($setting)")
}
results=()

# ---- before any lake: over REST the commands say so, and create nothing ---
run s3rest verify0 verify
[ "$rc" = 1 ] && grep -q "no lake at $R2" s3rest.verify0.err ||
    { cat s3rest.verify0.err; fail "s3rest: verify before any lake did not say there is none"; }
works s3rest tables0 tables --json
[ "$(json s3rest.tables0.out 'len(d["tables"])')" = 0 ] && [ "$(json s3rest.tables0.out 'd["catalog"]')" = "$R2" ] ||
    fail "s3rest: tables before any lake: $(cat s3rest.tables0.out)"

works s3rest status0 status --json
[ "$(json s3rest.status0.out 'd["tables"] in ([], None) and not d["stages"]["process"]["present"]')" = True ] ||
    fail "s3rest: status before any lake: $(cat s3rest.status0.out)"

# ---- process every cell ----------------------------------------------------
X=(--set process.epoch_max_records=300 --set process.max_event_bytes=4096)
for c in "${cells[@]}"; do
    works "$c" process process --once
done
X=()
[ ! -e s3rest/lake/catalog.db ] && [ ! -e ksr/lake/catalog.db ] ||
    fail "a processor committing through REST created a local catalog.db"

# ---- the control's counts, read by DuckDB from its files -------------------
"$BIN" --data local tables --json --files >control.json
node "$src/tests/interop/lake_counts.mjs" control.json || fail "DuckDB disagrees with the control's tables --json"
counts() { json "$1" '" ".join("%s=%d" % (t["name"], t["records"]) for t in d["tables"])'; }
control_counts=$(counts control.json)
echo "control: $control_counts"
[[ "$control_counts" == *dlq=[1-9]* ]] || fail "the control's dlq is empty: nothing to list or replay"

# ---- the read-only commands, every cell -------------------------------------
for c in "${cells[@]}"; do
    works "$c" logl log list --json
    [ "$(json "$c.logl.out" 'sum(p["end_offset"] - p["earliest_offset"] for p in d)')" = \
      "$(json local.logl.out 'sum(p["end_offset"] - p["earliest_offset"] for p in d)')" ] ||
        fail "$c: log list holds another number of records than the control's log"
    works "$c" logd log dump --topic recentchange --partition 0 --count 5
    [ "$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)))' "$c.logd.out")" = 5 ] ||
        fail "$c: log dump --count 5 did not print 5 JSON records"
    works "$c" tables tables --json --files
    [ "$(counts "$c.tables.out")" = "$control_counts" ] ||
        fail "$c: tables --json counts $(counts "$c.tables.out"), the control $control_counts"
    if is_rest "$c"; then
        [ "$(json "$c.tables.out" 'd["catalog"]')" = "${A[$c]##*catalog_uri=}" ] ||
            fail "$c: tables --json does not name the REST catalog"
    fi
    works "$c" status status --json # the stages have stopped: one read, no wait
    [ "$(json "$c.status.out" '" ".join(sorted("%s=%d" % (t["name"], t["rows"]) for t in d["tables"]))')" = \
      "$(json control.json '" ".join(sorted("%s=%d" % (t["name"], t["records"]) for t in d["tables"]))')" ] ||
        fail "$c: status --json rows $(cat "$c.status.out"), the control $control_counts"
    works "$c" verify verify --json
    [ "$(json "$c.verify.out" 'd["ok"]')" = True ] || fail "$c: verify did not pass"
    works "$c" dlql dlq list --json
    [ "$(json "$c.dlql.out" 'd["total"]')" = "$(json local.dlql.out 'd["total"]')" ] ||
        fail "$c: dlq list total differs from the control's"
    if [ "$c" = rest ]; then # the same log, files on local disk: row for row
        node "$src/tests/interop/lake_compare.mjs" control.json "$c.tables.out" >"$c.compare" ||
            { cat "$c.compare"; fail "$c: the tables differ from the control's (DuckDB)"; }
    fi
done

# The rest cell shares serve's data directory, so its catalog.db is there:
# no command of that cell may open it (strace, where it runs; LeakSanitizer
# does not run under ptrace).
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
    for cmd in "tables --json" "verify" "dlq list"; do
        # shellcheck disable=SC2086
        ASAN_OPTIONS=detect_leaks=0 strace -f -e trace=open,openat -o strace.out \
            "$BIN" ${A[rest]} $cmd >/dev/null 2>&1 ||
            fail "rest: $cmd under strace"
        ! grep -q 'catalog\.db' strace.out || fail "rest: $cmd opened the local catalog.db"
    done
    results+=("rest: tables, verify and dlq list open no catalog.db (strace)")
else
    echo "note: no strace here: the rest cell's catalog.db check is skipped"
fi

# ---- serve ------------------------------------------------------------------
for c in "${cells[@]}"; do
    # shellcheck disable=SC2086
    "$BIN" ${A[$c]} serve --listen 127.0.0.1:0 >"$c.serve.out" 2>"$c.serve.err" & sp=$!
    u=$(url_of "$c.serve.out"); u=${u%/}
    [ -n "$u" ] || { kill "$sp"; fail "$c: serve did not start"; }
    code=$(curl -s -o "$c.metrics" -w '%{http_code}' "$u/metrics")
    [ "$code" = 200 ] && grep -q '^freshet_' "$c.metrics" || { kill "$sp"; fail "$c: /metrics answered $code"; }
    code=$(curl -s -o "$c.api" -w '%{http_code}' "$u/api/v1/tables")
    [ "$code" = 200 ] || { kill "$sp"; cat "$c.api"; fail "$c: /api/v1/tables answered $code"; }
    [ "$(json "$c.api" '" ".join("%s=%d" % (t["name"], t["records"]) for t in d["tables"])')" = \
      "$control_counts" ] || { kill "$sp"; fail "$c: /api/v1/tables counts differ from the control's"; }
    # every file has a URL under /lake/ (a bucket's passed through, ADR 0043),
    # and the first one answers with as many bytes as the listing says
    urls=$(json "$c.api" 'len([f for t in d["tables"] for f in t["files"] if f["url"]])')
    files=$(json "$c.api" 'len([f for t in d["tables"] for f in t["files"]])')
    [ "$urls" -gt 0 ] && [ "$urls" = "$files" ] ||
        { kill "$sp"; fail "$c: /api/v1/tables gave $urls /lake/ file URLs for $files files"; }
    first=$(json "$c.api" '[f for t in d["tables"] for f in t["files"]][0]["url"]')
    want=$(json "$c.api" '[f for t in d["tables"] for f in t["files"]][0]["bytes"]')
    got=$(curl -sf "$u$first" | wc -c)
    [ "$got" = "$want" ] || { kill "$sp"; fail "$c: $first gave $got bytes, the listing says $want"; }
    if is_rest "$c"; then
        code=$(curl -s -o "$c.ice" -w '%{http_code}' "$u/iceberg/v1/config")
        [ "$code" = 501 ] && grep -q 'lake.catalog_uri' "$c.ice" ||
            { kill "$sp"; fail "$c: /iceberg answered $code, not a 501 naming lake.catalog_uri"; }
        results+=("$c serve: works (its own /iceberg: 501, lake.catalog_uri)")
    else
        results+=("$c serve: works")
    fi
    grep -qi "no such file" "$c.api" && { kill "$sp"; fail "$c: /api/v1/tables said 'No such file'"; }
    kill -TERM "$sp"; wait "$sp" || fail "$c: serve did not stop cleanly"
done

# ---- the commands that write: dlq replay, rebuild, compact ------------------
# In the rest cell the first attempts go through rest_fault_proxy.py: the
# replay's commit is applied but answered 500 (unknown outcome: it stops
# with its files and intent kept; the rerun finds its id landed and only
# installs its checkpoint), the rebuild's is answered 500 without reaching
# the catalog (the rerun finds no id, removes the files, rebuilds again).
with_proxy() { # with_proxy PLAN CELL TAG COMMAND...: through a fault proxy
    local plan=$1 cell=$2; shift 2
    python3 "$here/rest_fault_proxy.py" "${R1%/iceberg}" "$plan" >"proxy.$1.out" 2>&1 & local pp=$!
    local pu; pu=$(url_of "proxy.$1.out")
    [ -n "$pu" ] || fail "the fault proxy did not start"
    local saved=${A[$cell]}
    A[$cell]="${saved/$R1/$pu/iceberg}"
    run "$cell" "$@"
    A[$cell]=$saved
    kill -TERM "$pp"; wait "$pp" || true
    grep -q "^injected 1 " "proxy.$1.out" || fail "$cell: the proxy injected nothing for $*"
}
X=(--set process.max_event_bytes=1048576)
for c in "${cells[@]}"; do
    if [ "$c" = rest ]; then
        with_proxy 1:forward-500 rest replay0 dlq replay
        [ "$rc" = 1 ] && grep -q "outcome is unknown" rest.replay0.err ||
            { cat rest.replay0.err; fail "rest: a replay whose commit answer was lost did not stop as unknown"; }
        [ -e rest/process/freshet/dlq-replay/intent ] || fail "rest: the unknown replay's intent is gone"
    fi
    works "$c" replay dlq replay
    if [ "$c" = rest ]; then
        grep -q "had landed: its checkpoint is now installed" rest.replay.err ||
            { cat rest.replay.err; fail "rest: the rerun did not finish the replay that landed"; }
        with_proxy 1:drop-500 rest rebuild0 rebuild
        [ "$rc" = 1 ] && grep -q "outcome is unknown" rest.rebuild0.err ||
            { cat rest.rebuild0.err; fail "rest: a rebuild whose commit was answered 500 did not stop as unknown"; }
    fi
    works "$c" rebuild rebuild
    if [ "$c" = rest ]; then
        grep -q "crashed before its commit: removed its [1-9]" rest.rebuild.err ||
            { cat rest.rebuild.err; fail "rest: the rerun did not undo the rebuild that never landed"; }
    fi
    works "$c" verify2 verify --json
    [ "$(json "$c.verify2.out" 'd["ok"]')" = True ] || fail "$c: verify after replay and rebuild"
    works "$c" tables2 tables --json
    [ "$(counts "$c.tables2.out")" = "$(counts local.tables2.out)" ] ||
        fail "$c: after replay and rebuild: $(counts "$c.tables2.out"), the control $(counts local.tables2.out)"
    # compact on every lake (ADR 0040): merges, expires, removes orphans;
    # verify passes and the row counts are the control's after it
    works "$c" compact compact --json --expire-older-than 0 --orphans-older-than 0
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tables"]; assert t and sum(x["files_after"] for x in t) <= sum(x["files_before"] for x in t), t' \
        "$c.compact.out" || fail "$c: compact's report: $(head -c 400 "$c.compact.out")"
    works "$c" verify3 verify --json
    [ "$(json "$c.verify3.out" 'd["ok"]')" = True ] || fail "$c: verify after compact"
    works "$c" tables3 tables --json
    [ "$(counts "$c.tables3.out")" = "$(counts local.tables2.out)" ] ||
        fail "$c: after compact: $(counts "$c.tables3.out"), the control $(counts local.tables2.out)"
    # the lookup replay on every lake, REST catalogs included (this stream
    # was not enriched: nothing to replay; enrich_replay_rest.sh lands some)
    works "$c" lookups dlq replay --lookups
    grep -q "^lookup replay: 0 failed lookups to replay" "$c.lookups.out" ||
        { cat "$c.lookups.out" "$c.lookups.err"; fail "$c: dlq replay --lookups"; }
done
[[ "$(counts local.tables2.out)" == *dlq_replays=[1-9]* ]] || fail "the control's replay landed nothing"

printf '%s\n' "${results[@]}"
echo "PASS topologies: ${#results[@]} cells"
