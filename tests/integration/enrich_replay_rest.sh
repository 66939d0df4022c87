#!/usr/bin/env bash
# enrich_replay_rest.sh — `freshet dlq replay --lookups` through a REST
# catalog (issue 31; ctest integration_enrich_replay_rest). All on
# 127.0.0.1: `freshet serve` is the Iceberg REST catalog of a lake whose
# processor (lake.catalog_uri) enriched against a faulty API fixture
# (slow, half the requests 503, two attempts, a small pending table), so
# dlq_lookups holds failed and backlog lookups. Then, through the same REST
# catalog and a healthy API:
#   - the replay lands every settled dead letter, a second one finds none;
#   - each landed once (topics_check.mjs replayed, partition), and
#     gold_top_topics equals its recomputation from silver_topics (the
#     replay's overwrite went through the catalog with its append);
#   - silver_topics and gold_top_topics equal a control's (the same log,
#     a healthy API, the SQLite catalog), and `freshet verify` passes
#     through the REST catalog.
# Usage: enrich_replay_rest.sh [SEED]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SEED=${1:-13}
COUNT=3000
[ -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ] ||
    { echo "skip: tests/interop/node_modules missing (run scripts/setup.sh --test)"; exit 77; }
command -v node >/dev/null || { echo "skip: node is not installed"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-replay-rest.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
check() { node "$SRC/tests/interop/topics_check.mjs" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
url_of() { for _ in $(seq 150); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done
           awk '/^listening/ {print $2; exit}' "$1"; }
feed() { # feed NAME FLAGS...: its base URL in $url
    local name=$1; shift
    "$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" "$@" >"$name.out" 2>"$name.log" &
    pids+=($!)
    url=$(url_of "$name.out" | sed 's#/v2/stream/recentchange##')
    [ -n "$url" ] || { cat "$name.log"; fail "feed $name did not start"; }
}
enrich() {
    echo "--set enrich.enabled=1 --set enrich.api_url=$1/api/{wiki}/w/api.php \
          --set enrich.rate_per_s=0 --set enrich.backoff_min_ms=20 --set enrich.backoff_max_ms=200 \
          --set process.epoch_max_records=500"
}
tables() { "$BIN" --data "$1" tables --json --files >"$1.json"; }

# event time at 1.5 events/s (33 minutes) ending two minutes ago: most
# windows settle
start=$(date -u -d "-$((COUNT * 2 / 3 + 120)) sec" +%Y-%m-%dT%H:%M:%SZ)
feed stream --count "$COUNT" --rate 3000 --event-rate 1.5 --start "$start" --dup-rate 0.02 \
    --late-rate 0.01 --late-ms 300000
base=$url
"$BIN" --data base ingest --source "$base/v2/stream/recentchange" 2>ingest.log & ing=$!
prev=-1
for _ in $(seq 300); do
    sleep 0.2
    end=$("$BIN" --data base log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0)
    [ "$end" -ge $((COUNT * 9 / 10)) ] && [ "$end" = "$prev" ] && break
    prev=$end
done
kill -TERM "$ing"; wait "$ing" || fail "ingest did not stop cleanly"
echo "ingested $end records"
copy() { mkdir -p "$1"; cp -a base/log "$1/"; }

# the control: a healthy API, the SQLite catalog
copy ctl
# shellcheck disable=SC2046
"$BIN" --data ctl $(enrich "$base") process --once 2>ctl.log || { tail ctl.log; fail "control run"; }
tables ctl

# the REST lake: serve is the catalog, the processor commits through it
copy srv
token=replay-$$-$RANDOM
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data srv serve --listen 127.0.0.1:0 >serve.out 2>serve.log &
pids+=($!)
cat_url=$(url_of serve.out); cat_url=${cat_url%/}
[ -n "$cat_url" ] || { cat serve.log; fail "serve did not start"; }
export FRESHET_LAKE_CATALOG_TOKEN=$token
R=(--data srv --set "lake.catalog_uri=$cat_url/iceberg")
feed badapi --count 1 --api-latency-ms 100 --api-error-rate 0.5
bad=$url
# shellcheck disable=SC2046
"$BIN" "${R[@]}" $(enrich "$bad") --set enrich.max_attempts=2 --set enrich.pending_max=200 \
    process --once 2>faulty.log || { tail faulty.log; fail "the faulty run through REST"; }
tables srv
check has srv.json lookup_failed 1
check has srv.json backlog 1

# the replay through the REST catalog, against the healthy API
# shellcheck disable=SC2046
"$BIN" "${R[@]}" $(enrich "$base") dlq replay --lookups >replay1.out 2>replay1.err ||
    { cat replay1.out replay1.err; fail "dlq replay --lookups through REST"; }
cat replay1.out
grep -Eq "looked up again: [1-9]" replay1.out || fail "the replay landed nothing"
# shellcheck disable=SC2046
"$BIN" "${R[@]}" $(enrich "$base") dlq replay --lookups >replay2.out 2>replay2.err ||
    { cat replay2.out replay2.err; fail "the second replay through REST"; }
grep -q "^lookup replay: 0 failed lookups to replay" replay2.out ||
    { cat replay2.out; fail "a second replay found more"; }
python3 - srv/lake/catalog.db <<'PY' || fail "the replay's snapshots are not in serve's catalog"
import glob, json, sqlite3, sys
# serve's catalog (SQLite behind the REST API): the replay's snapshot is in
# silver_topics' current metadata
db = sqlite3.connect(sys.argv[1])
ok = True
for name in ("silver_topics", "gold_top_topics"):
    row = db.execute("SELECT metadata_location FROM iceberg_tables WHERE table_name = ?", (name,)).fetchone()
    meta = json.load(open(row[0].replace("file://", "")))
    ids = [s["summary"].get("freshet.lookup-replay") for s in meta.get("snapshots", [])]
    print(f"{name}: {sum(1 for i in ids if i)} snapshot(s) from a lookup replay in serve's catalog")
    ok = ok and sum(1 for i in ids if i) == 1
sys.exit(0 if ok else 1)
PY
tables srv
check replayed srv.json
check partition srv.json
check oracle srv.json
check same ctl.json srv.json
"$BIN" "${R[@]}" verify >verify.out 2>&1 || { cat verify.out; fail "verify through REST"; }
tail -1 verify.out | sed 's/^/freshet verify (REST): /'
echo "PASS: dlq replay --lookups through the REST catalog"
