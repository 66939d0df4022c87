#!/usr/bin/env bash
# rest_evolve.sh — a REST-catalog lake created before issue 33's label
# columns gets them by schema evolution through the catalog (ADR 0059).
#
# `freshet serve` holds the lake; rest_old_tool creates silver_topics and
# gold_top_topics through its REST API with the old schemas (11 and 7
# columns) and commits one silver_topics file written without the label
# columns. Then `freshet process` with enrichment (against `freshet feed`'s
# MediaWiki-API fixture) commits through the REST catalog:
#   1. before: the catalog's schemas lack the label columns;
#   2. after: the processor logged the columns it added, the catalog's
#      current schemas have them with field ids 12-14 and 8, the old file
#      reads them as null and the new files carry labels, read by field id
#      by DuckDB (tests/interop/rest_evolve_check.mjs);
#   3. a second processor run adds nothing (one evolution, two schemas).
# Loopback only. Usage: rest_evolve.sh REST_OLD_TOOL [SEED]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TOOL=${1:?usage: rest_evolve.sh REST_OLD_TOOL [SEED]}
SEED=${2:-7}
COUNT=2000
command -v node >/dev/null 2>&1 || { echo "skip: node is not installed"; exit 77; }
[ -f "$SRC/tests/interop/node_modules/@duckdb/node-api/package.json" ] ||
    { echo "skip: @duckdb/node-api is not installed in tests/interop (scripts/setup.sh --test)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-revolve.XXXXXX")
pids=""
cleanup() {
    for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "== $f"; tail -15 "$f"; done; exit 1; }
cd "$work"
token=revolve-$$-$SEED
url_of() { for _ in $(seq 100); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done
           awk '/^listening/ {print $2; exit}' "$1"; }

# ---- a log whose windows settle, and the API fixture (the feed serves both)
er=4
start=$(date -u -d "-$((COUNT / er + 120)) sec" +%Y-%m-%dT%H:%M:%SZ)
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count "$COUNT" --rate 3000 \
    --event-rate "$er" --start "$start" >feed.out 2>feed.log & pids="$pids $!"
url=$(url_of feed.out)
[ -n "$url" ] || fail "feed did not start"
api=${url%/v2/stream/recentchange}
"$BIN" --data lake ingest --source "$url" 2>ingest.log & ing=$!
prev=-1
for _ in $(seq 300); do
    sleep 0.2
    end=$("$BIN" --data lake log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0)
    [ "$end" -ge "$COUNT" ] && [ "$end" = "$prev" ] && break
    prev=$end
done
kill -TERM "$ing"; wait "$ing" || fail "ingest did not stop cleanly"
echo "log: $end records"

# ---- the lake behind serve's REST catalog, with the old schemas
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data lake serve --listen 127.0.0.1:0 >serve.out 2>serve.log &
pids="$pids $!"
base=$(url_of serve.out); base=${base%/}
[ -n "$base" ] || fail "serve did not start"
FRESHET_LAKE_CATALOG_TOKEN=$token "$TOOL" lake "$base/iceberg" >tool.out 2>tool.log ||
    fail "rest_old_tool: $(cat tool.log)"
schema() { # TABLE: the current schema's columns as the catalog answers, "id:name ..."
    curl -sf "$base/iceberg/v1/namespaces/wiki/tables/$1" | python3 -c '
import json, sys
m = json.load(sys.stdin)["metadata"]
s = [x for x in m["schemas"] if x["schema-id"] == m["current-schema-id"]][0]
print(len(m["schemas"]), " ".join("%d:%s" % (f["id"], f["name"]) for f in s["fields"]))'
}
before=$(schema silver_topics)
echo "before: silver_topics $before"
case "$before" in *label*) fail "the old table already has a label column" ;; esac
case "$(schema gold_top_topics)" in *label*) fail "the old gold table already has a label" ;; esac

# ---- 2. the processor evolves the tables through the catalog and writes labels
proc() { FRESHET_LAKE_CATALOG_TOKEN=$token "$BIN" --data lake --set "lake.catalog_uri=$base/iceberg" \
         --set enrich.enabled=1 --set "enrich.api_url=$api/api/{wiki}/w/api.php" \
         --set enrich.rate_per_s=0 --set process.epoch_max_records=500 process --once; }
proc 2>process1.log || fail "process through the REST catalog"
for c in "silver_topics: added column label (field id 12)" \
         "silver_topics: added column label_lang (field id 13)" \
         "silver_topics: added column label_why (field id 14)" \
         "gold_top_topics: added column label (field id 8)"; do
    grep -q "$c" process1.log || fail "the processor did not log: $c"
done
"$BIN" --data lake verify >verify.out 2>&1 || { cat verify.out; fail "verify of the evolved lake"; }
grep -E "gold_topics_recomputed" verify.out | head -1
"$BIN" --data lake tables --json --files >tables1.json
node "$SRC/tests/interop/rest_evolve_check.mjs" "$base" tables1.json || fail "the evolved lake (rest_evolve_check)"

# ---- 3. again: nothing to add
proc 2>process2.log || fail "second process run"
grep -q "added column" process2.log && fail "the second run added columns again"
[ "$(schema silver_topics | cut -d' ' -f1)" = 2 ] || fail "silver_topics has more than two schemas"
[ "$(schema gold_top_topics | cut -d' ' -f1)" = 2 ] || fail "gold_top_topics has more than two schemas"
echo "PASS rest_evolve"
