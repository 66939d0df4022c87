#!/usr/bin/env bash
# verify.sh — `freshet verify` end to end, over 127.0.0.1 only.
#  1. A live pipeline: feed (duplicates, late events 5 min behind,
#     malformed events, out-of-order shifts, canaries) → ingest → process
#     in short epochs; verify runs again and again beside it and must pass
#     every time (its cut must hold while epochs land).
#  2. The finished lake (plus `process --once`): verify exits 0 with every
#     check PASS, in text and in --json, and the lake really has
#     duplicates, late rows, dead letters, gold rows and several epochs.
#  3. Tampered copies of that lake (made by verify_tamper through the
#     Iceberg and Parquet APIs) each fail exactly the checks they break.
# The lake's metadata holds absolute paths, so each copy is restored at
# the same place. Usage: verify.sh VERIFY_TAMPER_BINARY
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
TAMPER=${1:?usage: verify.sh VERIFY_TAMPER_BINARY}
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-verify.XXXXXX")
feed_pid=""; ing_pid=""; proc_pid=""
cleanup() {
    for p in $proc_pid $ing_pid $feed_pid; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
data=$work/data
fr() { "$BIN" --data "$data" "$@"; }
log_end() {
    fr log list --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(p["end_offset"] for p in (d if isinstance(d,list) else d.get("partitions",[]))))'
}
consumed() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cut"]["consumed"])' "$1"; }

# ---- 1. live -------------------------------------------------------------
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 11 --count 24000 --rate 3000 \
    --start 2026-11-01T00:00:00Z --event-rate 20 --dup-rate 0.02 --dup-window 200 \
    --malformed-rate 0.01 --malformed-kinds truncated,missing_meta_id,missing_wiki,namespace_string,meta_dt_not_date,type_invalid \
    --late-rate 0.01 --late-ms 300000 --ooo-rate 0.05 --canary-rate 0.001 >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { echo "feed did not start"; cat feed.log; exit 1; }
# (not through fr(): $! must be the freshet process, not a subshell)
"$BIN" --data "$data" --set ingest.backoff_min_ms=50 --set ingest.backoff_max_ms=400 \
    ingest --source "$url" >/dev/null 2>ingest.log &
ing_pid=$!
"$BIN" --data "$data" --set process.trigger_ms=100 --set process.epoch_max_records=1000 \
    process 2>process.log &
proc_pid=$!
for _ in $(seq 100); do [ -e "$data/lake/catalog.db" ] && break; sleep 0.1; done

live=0; raced=0; prev=-1; still=0
for _ in $(seq 300); do
    if ! fr verify --json >live.json 2>live.err; then
        echo "verify failed beside the live pipeline (run $live):"
        python3 -c 'import json,sys; [print(" ", c["name"], c["status"], c["detail"]) for c in json.load(open("live.json"))["checks"] if c["status"] != "PASS"]' || cat live.json live.err
        exit 1
    fi
    live=$((live + 1))
    # a table read one snapshot back: an epoch landed while verify loaded the tables
    raced=$((raced + $(python3 -c 'import json; d=json.load(open("live.json")); print(int(any(t["snapshot_id"] != t["current_snapshot_id"] for t in d["cut"]["tables"])))')))
    end=$(log_end); got=$(consumed live.json)
    if [ "$end" = "$prev" ]; then still=$((still + 1)); else still=0; fi
    prev=$end
    [ "$still" -ge 3 ] && [ "$got" = "$end" ] && break
done
echo "verify passed $live times beside the live pipeline (log end $prev); $raced of them read a table older than its current snapshot"
[ "$live" -ge 3 ] || { echo "too few verify runs overlapped the pipeline"; exit 1; }
kill -TERM "$proc_pid"; wait "$proc_pid" || { echo "process did not exit cleanly"; exit 1; }
kill -TERM "$ing_pid"; wait "$ing_pid" || true
kill -TERM "$feed_pid"; wait "$feed_pid" || true
proc_pid=""; ing_pid=""; feed_pid=""

# ---- 2. healthy -----------------------------------------------------------
fr process --once 2>>process.log
fr verify >healthy.txt || { echo "verify failed on the healthy lake:"; cat healthy.txt; exit 1; }
cat healthy.txt
[ "$(grep -c ' PASS ' healthy.txt)" = 11 ] || { echo "expected 11 PASS lines"; exit 1; }
fr verify --json >healthy.json
python3 - <<'PY'
import json
d = json.load(open("healthy.json"))
c = {x["name"]: x for x in d["checks"]}
f = lambda name, key: c[name]["figures"][key]
assert d["ok"] and all(x["status"] == "PASS" for x in d["checks"]), "a check failed in --json"
assert len(c) == 11, sorted(c)
assert d["cut"]["epoch"] >= 3, "want several epochs"
assert f("bronze_count", "history_complete") == 1
assert f("bronze_count", "dlq_rows") > 0, "no dead letters"
assert f("late_consistent", "late_rows") > 0, "no late rows"
assert f("silver_covers_bronze", "bronze_rows") > f("silver_meta_id_unique", "silver_rows") + f("late_consistent", "late_rows"), "no duplicates"
assert f("gold_epm_recomputed", "gold_rows") > 0 and f("gold_top_recomputed", "gold_rows") > 0, "no gold"
print("healthy lake: every check passes; epochs %d, bronze %d, silver %d, late %d, dlq %d, gold %d + %d"
      % (d["cut"]["epoch"] + 1, f("silver_covers_bronze", "bronze_rows"), f("silver_meta_id_unique", "silver_rows"),
         f("late_consistent", "late_rows"), f("bronze_count", "dlq_rows"),
         f("gold_epm_recomputed", "gold_rows"), f("gold_top_recomputed", "gold_rows")))
PY

# ---- 3. tampered ----------------------------------------------------------
cp -a "$data" "$work/pristine"
fails=0
tamper() { # MODE EXPECTED-FAILING-CHECKS (exact set, comma-separated)
    rm -rf "$data"; cp -a "$work/pristine" "$data"
    "$TAMPER" "$1" "$data" >/dev/null
    set +e; fr verify --json >"tamper-$1.json" 2>"tamper-$1.err"; rc=$?; set -e
    if ! python3 - "$1" "$2" "$rc" <<'PY'; then fails=$((fails + 1)); fi
import json, sys
mode, want, rc = sys.argv[1], set(sys.argv[2].split(",")), int(sys.argv[3])
d = json.load(open(f"tamper-{mode}.json"))
failed = {c["name"] for c in d["checks"] if c["status"] == "FAIL"}
detail = {c["name"]: c["detail"] for c in d["checks"]}
ok = rc == 1 and failed == want
print(f"{'ok  ' if ok else 'FAIL'} {mode}: exit {rc}, failed {sorted(failed)}"
      + ("" if ok else f", expected {sorted(want)}"))
for name in sorted(failed):
    print(f"       {name}: {detail[name][:150]}")
sys.exit(0 if ok else 1)
PY
}
tamper drop-silver-file silver_covers_bronze,gold_epm_recomputed,gold_top_recomputed
tamper copy-bronze-file bronze_count,bronze_positions_unique
tamper same-file-twice bronze_count,bronze_positions_unique,silver_meta_id_unique,silver_covers_bronze,no_file_in_two_live_snapshots,late_consistent
tamper shared-file no_file_in_two_live_snapshots,late_consistent
tamper fake-gold gold_epm_recomputed
tamper bump-top gold_top_recomputed
tamper empty-dlq bronze_count
[ "$fails" = 0 ] || { echo "$fails tamper cases did not fail as expected"; exit 1; }
echo "all tamper cases fail the right checks"
