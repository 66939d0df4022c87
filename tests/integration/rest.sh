#!/usr/bin/env bash
# rest.sh — freshet's Iceberg REST catalog end to end, over 127.0.0.1 only.
#  1. A lake: feed (duplicates, late, malformed events, a past start so the
#     gold windows close) -> ingest -> process --once; `freshet tables
#     --json` of it.
#  2. `freshet serve` with an API token; tests/interop/rest_interop.mjs
#     drives /iceberg with iceberg-js and reads the tables it serves with
#     icebird and DuckDB (see that file).
#  3. After the REST commits: `freshet tables --json` shows the table
#     iceberg-js created (schema 1 current) and the wiki tables unchanged
#     in rows and snapshots; `freshet verify` passes every check; a read of
#     /iceberg needs no token, a write without one is 403 on a server
#     without a token.
# Skips (77) when node or the npm packages are missing.
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v node >/dev/null 2>&1 || { echo "skip: node is not installed (scripts/setup.sh --test)"; exit 77; }
for pkg in iceberg-js icebird @duckdb/node-api; do
    [ -f "$SRC/tests/interop/node_modules/$pkg/package.json" ] ||
        { echo "skip: $pkg is not installed in tests/interop (scripts/setup.sh --test)"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-rest.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }
cd "$work"
data=$work/data
fr() { "$BIN" --data "$data" "$@"; }
token=rest-test-$$-$RANDOM

# ---- 1. a lake ---------------------------------------------------------
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 21 --count 4000 --rate 4000 \
    --start 2026-11-01T00:00:00Z --event-rate 20 --dup-rate 0.02 --late-rate 0.01 \
    --late-ms 300000 --malformed-rate 0.01 >feed.out 2>feed.log & pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || fail "feed did not start"
"$BIN" --data "$data" ingest --source "$url" >/dev/null 2>ingest.log & ing=$!; pids+=($ing)
prev=-1; still=0
for _ in $(seq 200); do
    sleep 0.2
    end=$(fr log list --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(p["end_offset"] for p in (d if isinstance(d,list) else d.get("partitions",[]))))' 2>/dev/null || echo 0)
    if [ "$end" = "$prev" ] && [ "$end" -gt 0 ]; then still=$((still + 1)); else still=0; fi
    prev=$end
    [ "$still" -ge 5 ] && break
done
kill -TERM "$ing"; wait "$ing" 2>/dev/null || true
fr process --once 2>process.log || fail "process --once"
fr tables --json >before.json || fail "freshet tables --json"
python3 - <<'PY' || fail "the lake is not what the test needs"
import json
t = {x["name"]: x for x in json.load(open("before.json"))["tables"] if x["namespace"] == "wiki"}
assert len(t) == 6, sorted(t)
for n in ("bronze_recentchange", "silver_recentchange", "gold_edits_per_minute", "dlq"):
    assert t[n]["records"] > 0, (n, t[n]["records"])
PY
echo "lake: $prev log records; $(python3 -c 'import json; print(", ".join("%s %d" % (t["name"], t["records"]) for t in json.load(open("before.json"))["tables"]))')"

# ---- 2. serve + iceberg-js / icebird -----------------------------------
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data "$data" serve --listen 127.0.0.1:0 >serve.out 2>serve.log &
srv=$!; pids+=($srv)
for _ in $(seq 100); do grep -q '^listening' serve.out 2>/dev/null && break; sleep 0.1; done
base=$(awk '/^listening/ {print $2; exit}' serve.out); base=${base%/}
[ -n "$base" ] || fail "serve did not start"
node "$SRC/tests/interop/rest_interop.mjs" "$base" "$token" before.json "$data/lake/warehouse" \
    changes.json || fail "rest_interop.mjs"
# reads are open, writes need the token
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/iceberg/v1/namespaces")
[ "$code" = 200 ] || fail "GET namespaces without a token: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{"namespace":["x"]}' "$base/iceberg/v1/namespaces")
[ "$code" = 401 ] || fail "POST without a token: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" \
    --data-binary @<(head -c 1100000 /dev/zero | tr '\0' ' ') "$base/iceberg/v1/namespaces")
[ "$code" = 413 ] || fail "an oversized body: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" \
    -d '{"namespace":' "$base/iceberg/v1/namespaces")
[ "$code" = 400 ] || fail "bad JSON: $code"
kill -TERM "$srv"; wait "$srv" 2>/dev/null || true
"$BIN" --data "$data" serve --listen 127.0.0.1:0 >serve2.out 2>serve2.log & srv=$!; pids+=($srv)
for _ in $(seq 100); do grep -q '^listening' serve2.out 2>/dev/null && break; sleep 0.1; done
base2=$(awk '/^listening/ {print $2; exit}' serve2.out); base2=${base2%/}
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{"namespace":["x"]}' "$base2/iceberg/v1/namespaces")
[ "$code" = 403 ] || fail "POST on a server without a token: $code"
kill -TERM "$srv"; wait "$srv" 2>/dev/null || true

# ---- 3. the lake after the REST commits --------------------------------
fr tables >after.txt || fail "freshet tables after the REST commits"
fr tables --json >after.json || fail "freshet tables --json after the REST commits"
python3 - <<'PY' || fail "freshet tables after the REST commits"
import json
before = {(t["namespace"], t["name"]): t for t in json.load(open("before.json"))["tables"]}
after = {(t["namespace"], t["name"]): t for t in json.load(open("after.json"))["tables"]}
changes = json.load(open("changes.json"))
c = changes["created"]
ev = after.get((c["namespace"], c["name"]))
assert ev, "the table iceberg-js created is not listed"
assert ev["metadata_file"] == c["location"], (ev["metadata_file"], c["location"])
assert ev["current_snapshot_id"] == -1 and ev["records"] == 0
assert ("rest_tmp", "gone") not in after, "the dropped table is still listed"
for k, b in before.items():
    a = after[k]
    for f in ("current_snapshot_id", "records", "files", "bytes", "sequence_number"):
        assert a[f] == b[f], (k, f, b[f], a[f])
    assert [s["snapshot_id"] for s in a["snapshots"]] == [s["snapshot_id"] for s in b["snapshots"]], k
tagged = ("wiki", c["tagged"])
assert after[tagged]["metadata_file"] == c["tagged_location"], "the tagged table's catalog row"
assert after[tagged]["metadata_file"] != before[tagged]["metadata_file"], "the tag commits did not move it"
print("tables after REST commits: %d tables, wiki rows and snapshots unchanged" % len(after))
PY
fr verify >verify.txt || { cat verify.txt; fail "freshet verify after the REST commits"; }
[ "$(grep -c ' PASS ' verify.txt)" = 11 ] || { cat verify.txt; fail "expected 11 PASS lines"; }
tail -1 verify.txt
echo "1 passed, 0 failed"
