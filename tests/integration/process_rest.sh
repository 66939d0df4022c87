#!/usr/bin/env bash
# process_rest.sh — `freshet process` committing every epoch through an
# Iceberg REST catalog (lake.catalog_uri; issue 8), over 127.0.0.1 only.
#
# `freshet serve` answers /iceberg over a lake's SQLite catalog; the
# processor shares that lake's warehouse and commits through a fault proxy
# (tests/integration/rest_fault_proxy.py) in front of it, which answers 500
# to a commit the catalog applied, 500 to one it never saw, and closes the
# connection after another was applied. Then:
#   1. every fault was met and resolved by the epoch marker: nothing lost,
#      nothing committed twice; `freshet verify` passes; the six tables
#      equal a control run's (embedded SQLite catalog, the same log),
#      checked by DuckDB (tests/interop/lake_compare.mjs);
#   2. SIGKILLs of the processor between and inside REST commits, then a
#      drain: verify passes and the tables still equal the control's;
#   3. the scale-out mode (a shard and the finalizer, docs/SCALEOUT.md)
#      through the REST catalog, each SIGKILLed once: verify passes and the
#      tables equal the same roles run on the embedded catalog.
# Skips (77) when node or the npm packages are missing.
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SEED=${1:-23}
command -v node >/dev/null 2>&1 || { echo "skip: node is not installed (scripts/setup.sh --test)"; exit 77; }
[ -f "$SRC/tests/interop/node_modules/@duckdb/node-api/package.json" ] ||
    { echo "skip: @duckdb/node-api is not installed in tests/interop (scripts/setup.sh --test)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-prest.XXXXXX")
pids=""
cleanup() {
    for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "== $f"; tail -15 "$f"; done; exit 1; }
cd "$work"
RANDOM=$SEED
token=prest-$$-$RANDOM
url_of() { for _ in $(seq 100); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done
           awk '/^listening/ {print $2; exit}' "$1"; }

# ---- a log (duplicates, late and malformed events; windows that close)
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count 5000 --rate 4000 \
    --start 2026-11-01T00:00:00Z --event-rate 10 --dup-rate 0.02 --late-rate 0.01 \
    --late-ms 300000 --malformed-rate 0.01 >feed.out 2>feed.log & pids="$pids $!"
url=$(url_of feed.out)
[ -n "$url" ] || fail "feed did not start"
"$BIN" --data base ingest --source "$url" 2>ingest.log & ing=$!
prev=-1; still=0
for _ in $(seq 300); do
    sleep 0.2
    end=$("$BIN" --data base log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0)
    if [ "$end" = "$prev" ] && [ "$end" -gt 0 ]; then still=$((still + 1)); else still=0; fi
    prev=$end
    [ "$still" -ge 5 ] && break
done
kill -TERM "$ing"; wait "$ing" || fail "ingest did not stop cleanly"
echo "log: $end records"

# ---- the control: the embedded catalog
mkdir ctl; cp -a base/log ctl/
"$BIN" --data ctl --set process.epoch_max_records=400 process --once 2>ctl.log || fail "control run"
"$BIN" --data ctl tables --json --files >ctl.json

# ---- 1. through serve's REST catalog, behind the fault proxy
mkdir rest; cp -a base/log rest/
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data rest serve --listen 127.0.0.1:0 >serve.out 2>serve.log &
pids="$pids $!"
base=$(url_of serve.out); base=${base%/}
[ -n "$base" ] || fail "serve did not start"
python3 "$SRC/tests/integration/rest_fault_proxy.py" "$base" "2:forward-500,4:drop-500,6:forward-close" \
    >proxy.out 2>proxy.log & proxy=$!; pids="$pids $proxy"
purl=$(url_of proxy.out)
[ -n "$purl" ] || fail "proxy did not start"
rest() { FRESHET_LAKE_CATALOG_TOKEN=$token "$BIN" --data rest \
         --set "lake.catalog_uri=$1/iceberg" --set process.epoch_max_records=400 "${@:2}"; }
rest "$purl" process --once 2>rest1.log || fail "process through the REST catalog"
kill -TERM "$proxy"; wait "$proxy" || true
cat proxy.out
for f in "2 forward-500" "4 drop-500" "6 forward-close"; do
    grep -q "^injected $f" proxy.out || fail "fault $f was not injected"
done
grep -q "REST commit attempt" rest1.log || fail "the processor never saw a failed commit"
"$BIN" --data rest verify >verify1.out 2>&1 || { cat verify1.out; fail "verify after the REST faults"; }
"$BIN" --data rest tables --json --files >rest1.json
python3 - rest1.json <<'PY' || fail "the REST lake's snapshots are not one per epoch"
import json, sys
t = {x["name"]: x for x in json.load(open(sys.argv[1]))["tables"]}
epochs = [s["summary"].get("freshet.epoch") for s in t["bronze_recentchange"]["snapshots"]]
epochs = [int(e) for e in epochs if e is not None]
assert epochs == sorted(set(epochs)), f"an epoch committed twice or out of order: {epochs}"
assert epochs == list(range(len(epochs))), f"a hole in the epochs: {epochs}"
print(f"bronze: epochs 0..{epochs[-1]}, each once")
PY
node "$SRC/tests/interop/lake_compare.mjs" ctl.json rest1.json || fail "the REST lake differs from the control"

# ---- 2. kills, then a drain (straight to serve)
mkdir rest2; cp -a base/log rest2/
kill -TERM $pids 2>/dev/null || true; wait 2>/dev/null || true; pids=""
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data rest2 serve --listen 127.0.0.1:0 >serve2.out 2>serve2.log &
pids="$pids $!"
base2=$(url_of serve2.out); base2=${base2%/}
# (the processor maintains its tables through the REST catalog every 3 epochs)
rest2() { FRESHET_LAKE_CATALOG_TOKEN=$token "$BIN" --data rest2 \
          --set "lake.catalog_uri=$base2/iceberg" --set process.epoch_max_records=150 \
          --set process.maintain_every_epochs=3 "$@"; }
for k in 1 2 3 4 5 6; do
    FRESHET_LAKE_CATALOG_TOKEN=$token "$BIN" --data rest2 --set "lake.catalog_uri=$base2/iceberg" \
        --set process.epoch_max_records=150 --set process.maintain_every_epochs=3 process 2>>rest2.log & p=$!
    sleep "$(python3 -c "import random; random.seed($SEED * 10 + $k); print(round(random.uniform(0.3, 1.5), 2))")"
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
done
grep -q "resuming after epoch" rest2.log || fail "no restart resumed from a checkpoint"
rest2 process --once 2>>rest2.log || fail "drain through the REST catalog"
"$BIN" --data rest2 verify >verify2.out 2>&1 || { cat verify2.out; fail "verify after the kills"; }
"$BIN" --data rest2 tables --json --files >rest2.json
node "$SRC/tests/interop/lake_compare.mjs" ctl.json rest2.json || fail "the REST lake after kills differs from the control"
merged=$(awk '/process: info: maintenance: [0-9]+ files/ {s += $6} END {print s + 0}' rest2.log)
[ "$merged" -gt 0 ] || fail "the processor compacted nothing through the REST catalog"
python3 - rest2.json ctl.json <<'PY' || fail "the REST lake was not compacted"
import json, sys
r = {x["name"]: x for x in json.load(open(sys.argv[1]))["tables"]}
c = {x["name"]: x for x in json.load(open(sys.argv[2]))["tables"]}
rb, cb = r["bronze_recentchange"]["data_files"], c["bronze_recentchange"]["data_files"]
assert any("/compacted-" in f["local_path"] for f in rb), "no compacted bronze file"
assert len(rb) < len(cb), (len(rb), len(cb))
print(f"bronze behind REST: {len(rb)} live files, the control {len(cb)}")
PY
echo "PASS the processor compacted $merged files through the REST catalog"
# freshet compact through the REST catalog: merge, expire to one snapshot
# (and the lineage to the last marker), orphans of the killed runs removed
rest2 compact --json --orphans-older-than 0 --expire-older-than 0 --retain-last 1 >compact.json 2>compact.err ||
    { cat compact.err; fail "freshet compact through the REST catalog"; }
python3 - <<'PY' || fail "freshet compact through the REST catalog: $(cat compact.json)"
import json
t = {x["name"]: x for x in json.load(open("compact.json"))["tables"]}
assert "bronze_recentchange" in t, sorted(t)
assert sum(x["snapshots_expired"] for x in t.values()) > 0, "nothing expired"
assert t["bronze_recentchange"]["files_after"] <= t["bronze_recentchange"]["files_before"]
print("compact through REST: %d groups, %d snapshots expired, %d orphans removed" % (
      sum(x["groups"] for x in t.values()), sum(x["snapshots_expired"] for x in t.values()),
      sum(x["orphans_removed"] for x in t.values())))
PY
rest2 compact --json --no-compact --no-expire --orphans-older-than 0 --dry-run >compact2.json ||
    fail "freshet compact --dry-run through the REST catalog"
python3 -c 'import json,sys; t=json.load(open("compact2.json"))["tables"]; assert sum(x["orphans"] for x in t) == 0, t' ||
    fail "orphans left after freshet compact through REST: $(cat compact2.json)"
"$BIN" --data rest2 verify >verify2b.out 2>&1 || { cat verify2b.out; fail "verify after freshet compact through REST"; }
"$BIN" --data rest2 tables --json --files >rest2b.json
node "$SRC/tests/interop/lake_compare.mjs" ctl.json rest2b.json || fail "after freshet compact the REST lake differs from the control"
echo "PASS freshet compact through the REST catalog: $(tail -1 verify2b.out), tables equal the control"
# ---- 3. the scale-out mode through the REST catalog: the shard of the
# log's partition and the finalizer commit through serve's catalog (each
# SIGKILLed once mid-run, then drained); verify passes and the tables equal
# a shard and a finalizer run on the embedded catalog.
mkdir rest3 ctl3; cp -a base/log rest3/; cp -a base/log ctl3/
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data rest3 serve --listen 127.0.0.1:0 >serve3.out 2>serve3.log &
pids="$pids $!"
base3=$(url_of serve3.out); base3=${base3%/}
rest3() { FRESHET_LAKE_CATALOG_TOKEN=$token "$BIN" --data rest3 \
          --set "lake.catalog_uri=$base3/iceberg" --set process.epoch_max_records=150 \
          --set process.maintain_every_epochs=2 "$@"; }
for role in "--partition 0" "--finalize"; do
    # shellcheck disable=SC2086
    FRESHET_LAKE_CATALOG_TOKEN=$token "$BIN" --data rest3 --set "lake.catalog_uri=$base3/iceberg" \
        --set process.epoch_max_records=150 process $role 2>>rest3.log & p=$!
    sleep 1.2
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    # shellcheck disable=SC2086
    rest3 process $role --once 2>>rest3.log || fail "scale-out drain through the REST catalog ($role)"
done
grep -q "finalize: info: epoch" rest3.log || fail "the finalizer committed nothing through REST"
[ "$(awk '/: info: maintenance: [0-9]+ files/ {s += $6} END {print s + 0}' rest3.log)" -gt 0 ] ||
    fail "the finalizer maintained nothing through the REST catalog"
"$BIN" --data rest3 verify >verify3.out 2>&1 || { cat verify3.out; fail "verify of the scale-out lake behind REST"; }
head -1 verify3.out
for role in "--partition 0" "--finalize"; do
    # shellcheck disable=SC2086
    "$BIN" --data ctl3 --set process.epoch_max_records=150 process $role --once 2>>ctl3.log || fail "scale-out control"
done
"$BIN" --data rest3 tables --json --files >rest3.json
"$BIN" --data ctl3 tables --json --files >ctl3.json
node "$SRC/tests/interop/lake_compare.mjs" ctl3.json rest3.json || fail "the scale-out lake behind REST differs from its control"
echo "PASS process_rest"
