#!/usr/bin/env bash
# enrich_shards.sh — enrichment in the scale-out mode (docs/ENRICH.md
# "Scale-out", ADR 0046; ctest integration_enrich_shards, labels integration
# and chaos). Shards (`process --partition N`) look up their own partition's
# edits against `freshet feed`'s MediaWiki-API fixture on 127.0.0.1; the
# finalizer (`process --finalize`) computes gold_top_topics from the shards'
# silver_topics at the minimum of the topics frontiers they publish.
#
# One synthetic stream (duplicates, late events) in a 3-partition log:
#   1. control: each shard once, then the finalizer, against a healthy API;
#   2. chaos: the same log, the API slow (80 ms per answer), 30 % of its
#      requests 503, 5 % 429 and 5 % maxlag; the three shards and the finalizer run
#      side by side while SIGKILLs hit a shard or the finalizer in turn
#      (each is killed at least once, one kill of each lands while it is
#      running), then everything is drained (--once);
# checked on both lakes by DuckDB (tests/interop/topics_check.mjs):
# gold_top_topics equals its recomputation from silver_topics up to the
# finalizer's topics frontier, every enrichable edit has exactly one outcome
# (no loss, no double), the chaos lake's core tables, silver_topics and
# gold_top_topics equal the control's row for row, and `freshet verify`
# passes (its gold_topics_recomputed check included). Labels (issue 33):
# the shards' resolved edits carry the fixture's labels (content language,
# else English, else a reason), the finalizer's gold_top_topics rows carry
# the label of their top wiki's edits (part of the recomputation), and both
# equal the control's after the kills.
# Loopback only. Usage: enrich_shards.sh [SEED] [KILLS]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SEED=${1:-23}
KILLS=${2:-6}
COUNT=4000
if [ ! -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ]; then
    echo "skip: tests/interop/node_modules missing (run scripts/setup.sh --test)"; exit 77
fi
command -v node >/dev/null || { echo "skip: node is not installed"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-enrich-shards.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
check() { node "$SRC/tests/interop/topics_check.mjs" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

# feed NAME FLAGS...: start a feed; its base URL in $url.
feed() {
    local name=$1; shift
    "$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" "$@" >"$name.out" 2>"$name.log" &
    pids+=($!)
    for _ in $(seq 100); do grep -q '^listening' "$name.out" 2>/dev/null && break; sleep 0.1; done
    url=$(awk '/^listening/ {print $2; exit}' "$name.out" | sed 's#/v2/stream/recentchange##')
    [ -n "$url" ] || { cat "$name.log"; fail "feed $name did not start"; }
}
# Settings every run shares. No idle epochs (they would raise a shard's
# watermark by the wall clock, which differs between runs).
opts() {
    echo "--set log.partitions=3 --set process.idle_timeout_s=0 --set process.epoch_max_records=300 \
          --set enrich.enabled=1 --set enrich.api_url=$1/api/{wiki}/w/api.php \
          --set enrich.rate_per_s=0 --set enrich.backoff_min_ms=20 --set enrich.backoff_max_ms=200 \
          --set enrich.max_attempts=30"
}
tables() { "$BIN" --data "$1" tables --json --files >"$1.json"; }

# 3 events/s of event time (22 minutes: windows settle), served fast.
feed stream --count "$COUNT" --rate 3000 --event-rate 3 --start 2026-11-02T10:00:00Z \
    --dup-rate 0.02 --late-rate 0.01 --late-ms 300000
base=$url
"$BIN" --data base --set log.partitions=3 ingest --source "$base/v2/stream/recentchange" \
    2>ingest.log &
ing=$!
prev=-1
for _ in $(seq 300); do
    sleep 0.2
    end=$("$BIN" --data base log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0)
    [ "$end" -ge "$COUNT" ] && [ "$end" = "$prev" ] && break
    prev=$end
done
kill -TERM "$ing"; wait "$ing" || fail "ingest did not stop cleanly"
echo "ingested $end records into 3 partitions"
copy() { mkdir -p "$1"; cp -a base/log "$1/"; }

# 1. control: a healthy API, each role once
copy ctl
for p in 0 1 2; do
    # shellcheck disable=SC2046
    "$BIN" --data ctl $(opts "$base") process --partition $p --once 2>>ctl.log ||
        { tail ctl.log; fail "control shard $p"; }
done
# shellcheck disable=SC2046
"$BIN" --data ctl $(opts "$base") process --finalize --once 2>>ctl.log ||
    { tail ctl.log; fail "control finalizer"; }
tables ctl
check oracle ctl.json
check partition ctl.json
check labels ctl.json "$base" --all-cases
"$BIN" --data ctl verify >verify-ctl.out 2>&1 || { cat verify-ctl.out; fail "verify on the control lake"; }
grep -Eq "^gold_topics_recomputed +PASS .*expected_rows=[1-9]" verify-ctl.out ||
    { cat verify-ctl.out; fail "verify did not check gold_top_topics"; }

# 2. chaos: a faulty API, the roles side by side, SIGKILLs
feed badapi --count 1 --api-latency-ms 80 --api-error-rate 0.3 --api-429-rate 0.05 --api-maxlag 0.05
bad=$url
copy chaos
declare -A role_pid=()
start_role() { # start_role 0|1|2|final
    local args=(--partition "$1")
    [ "$1" = final ] && args=(--finalize)
    # shellcheck disable=SC2046
    "$BIN" --data chaos $(opts "$bad") --set process.trigger_ms=150 process "${args[@]}" \
        2>>"chaos-$1.log" &
    role_pid[$1]=$!
    pids+=($!)
}
for r in 0 1 2 final; do start_role $r; done
killed_shard=0 killed_final=0
for k in $(seq "$KILLS"); do
    sleep "$(python3 -c "import random; random.seed($SEED * 100 + $k); print(round(random.uniform(0.8, 2.5), 2))")"
    # odd rounds a shard (in turn), even rounds the finalizer
    if [ $((k % 2)) = 1 ]; then r=$(((k / 2) % 3)); else r=final; fi
    p=${role_pid[$r]}
    if kill -0 "$p" 2>/dev/null; then
        kill -9 "$p"
        if [ "$r" = final ]; then killed_final=$((killed_final + 1)); else killed_shard=$((killed_shard + 1)); fi
    fi
    wait "$p" 2>/dev/null || true
    start_role $r
done
echo "$KILLS kill rounds: $killed_shard shard(s) and $killed_final finalizer(s) SIGKILLed while running"
if [ "$killed_shard" -lt 1 ] || [ "$killed_final" -lt 1 ]; then fail "a role was not killed while running"; fi
for r in 0 1 2 final; do
    kill -TERM "${role_pid[$r]}" 2>/dev/null || true
    wait "${role_pid[$r]}" 2>/dev/null || true
done
# drain: each shard until its log and lookups are done, then the finalizer
for p in 0 1 2; do
    # shellcheck disable=SC2046
    "$BIN" --data chaos $(opts "$bad") process --partition $p --once 2>>chaos-$p.log ||
        { tail chaos-$p.log; fail "drain of shard $p"; }
done
# shellcheck disable=SC2046
"$BIN" --data chaos $(opts "$bad") process --finalize --once 2>>chaos-final.log ||
    { tail chaos-final.log; fail "drain of the finalizer"; }
# shards committed epochs while lookups were still out (the case the
# topics frontier exists for)
grep -Eq "enrichment: [1-9][0-9]* waiting" chaos-0.log chaos-1.log chaos-2.log ||
    fail "no shard epoch committed while lookups were outstanding"
tables chaos
check oracle chaos.json
check partition chaos.json
check labels chaos.json "$base"
# the shards' label counters, summed over the group, exactly once across the kills
"$BIN" --data chaos status --json >chaos-status.json
check labelcounts chaos.json chaos-status.json
check core ctl.json chaos.json --any-epochs # kills cut epochs elsewhere
check same ctl.json chaos.json --all
"$BIN" --data chaos verify >verify-chaos.out 2>&1 || { cat verify-chaos.out; fail "verify after the kills"; }
grep -Eq "^gold_topics_recomputed +PASS .*expected_rows=[1-9]" verify-chaos.out ||
    { cat verify-chaos.out; fail "verify did not check gold_top_topics"; }
# the faults were real: the fixture answered errors
curl -s "$bad/api/counters" >counters.json
python3 - counters.json <<'PY' || fail "the faulty API served no error"
import json, sys
c = json.load(open(sys.argv[1]))
print("faulty API:", {k: c.get(k) for k in ("requests", "err_5xx", "err_429")})
sys.exit(0 if c.get("err_5xx", 0) > 0 else 1)
PY
echo "PASS enrich_shards"
