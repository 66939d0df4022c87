#!/usr/bin/env bash
# scaleout.sh — the scale-out mode (issue 8, item 7; docs/SCALEOUT.md):
# throughput and freshness with 1, 2 and 3 `freshet process --group`
# instances over a 6-partition topic in librdkafka's mock cluster (its own
# process, loopback), next to one `freshet process` over the same topic and
# over the embedded log.
#
#   live: `freshet feed` at RATE events/s for SECS seconds -> ingest (Kafka,
#     6 partitions) -> N instances from the start, 1 s trigger: freshness of
#     silver (log entry to committed) p50/p99/max, from the lake itself
#     (bench/peers/freshness.mjs), and of gold (the finalizer's lag).
#   backfill: the topic the live run left, processed again from the start
#     into a fresh lake by N instances: events/s over the span from the
#     first to the last shard commit (the group's join, ~3 s, excluded).
#
# The mock keeps at most 5 MiB per partition, so the inputs are small
# (RATE x SECS <= ~18,000 events); figures are for comparison in one run.
# usage: bench/scaleout.sh [RATE] [SECS]      (FR_BUILD_DIR=build/release)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${FR_BUILD_DIR:-$here/../build/release}
BIN=$BUILD/freshet
MOCK=$BUILD/kafka_mock
RATE=${1:-1000}; SECS=${2:-15}
[ -x "$MOCK" ] || { echo "build kafka_mock first: cmake --build $BUILD --target kafka_mock"; exit 1; }
[ -d "$here/node_modules/@duckdb/node-api" ] ||
    (cd "$here" && npm install --no-audit --no-fund --loglevel=error && touch node_modules)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-scale.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; [ "${KEEP:-0}" = 1 ] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
cd "$tmp"
feed_url() { for _ in $(seq 100); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done; awk '/^listening/ {print $2; exit}' "$1"; }

# Sum of bronze + dlq rows in a lake (= records consumed).
consumed() {
    "$BIN" --data "$1" tables --json 2>/dev/null | python3 -c '
import json, sys
t = {x["name"]: x.get("records") or 0 for x in json.load(sys.stdin)["tables"]}
print(t.get("bronze_recentchange", 0) + t.get("dlq", 0))' 2>/dev/null || echo 0
}
# events/s from the first to the last bronze commit, and the gold lag.
span() {
    "$BIN" --data "$1" tables --json --files > "$1.json"
    python3 - "$1.json" "$2" <<'PY'
import json, sys
t = {x["name"]: x for x in json.load(open(sys.argv[1]))["tables"]}
ts = sorted(s["timestamp_ms"] for s in t["bronze_recentchange"]["snapshots"])
n = int(sys.argv[2])
secs = max((ts[-1] - ts[0]) / 1000, 1e-3)
print(f"{n / secs:.0f} events/s ({n} records, first to last commit {secs:.2f} s)")
PY
}
# Gold's lag: at each finalizer commit, the wall clock minus its frontier.
gold_lag() {
    python3 - "$1" <<'PY'
import json, sys
t = {x["name"]: x for x in json.load(open(sys.argv[1]))["tables"]}
lags = sorted(s["timestamp_ms"] - int(s["summary"]["freshet.watermark-us"]) / 1000
              for s in t["gold_edits_per_minute"]["snapshots"]
              if s.get("summary", {}).get("freshet.pipeline-id", "").endswith("-gold")
              and int(s["summary"].get("freshet.watermark-us", "-1")) > 0)
if not lags:
    print("gold: no frontier yet"); sys.exit()
p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))] / 1000
print(f"gold frontier behind the wall clock at each finalizer commit: p50 {p(.5):.1f} s, "
      f"p99 {p(.99):.1f} s ({len(lags)} commits; >= process.lateness_s = 120 s by design)")
PY
}
fresh() {
    node "$here/peers/freshness.mjs" "$1.json" /dev/null |
        awk '{printf "silver freshness p50 %d ms, p99 %d ms, max %d ms", $2, $3, $4}'
}

mkfifo ctl
"$MOCK" --brokers 1 --partitions 6 --fifo ctl >mock.out 2>mock.log &
pids+=($!)
for _ in $(seq 100); do [ -s mock.out ] && break; sleep 0.1; done
brokers=$(head -1 mock.out)
kafka=(--set log.backend=kafka --set "kafka.brokers=$brokers" --set log.partitions=6
       --set kafka.session_timeout_ms=3000 --set process.trigger_ms=1000 --set process.idle_timeout_s=5)

run_group() {  # N DATA: N instances until the lake holds TOTAL records
    local n=$1 data=$2 ms=()
    for i in $(seq "$n"); do
        "$BIN" --data "$data" "${kafka[@]}" process --group 2>>"$data-member$i.log" &
        ms+=($!); pids+=($!)
    done
    echo "${ms[@]}" > "$data.members"
}
stop_group() {
    for p in $(cat "$1.members"); do kill -TERM "$p" 2>/dev/null || true; done
    for p in $(cat "$1.members"); do wait "$p" 2>/dev/null || true; done
}
wait_for() {  # DATA TOTAL
    for _ in $(seq 600); do [ "$(consumed "$1")" -ge "$2" ] && return 0; sleep 0.5; done
    echo "timeout: $1 consumed $(consumed "$1") of $2"; return 1
}

echo "scale-out over 6 partitions (mock cluster), live at $RATE events/s for $SECS s, $(nproc) cores"
for n in ${ROUNDS-1 2 3}; do
    # live: a fresh topic per round
    echo "topic t$n 6 1" > ctl; sleep 0.3
    kt=(--set "kafka.topic=t$n")
    "$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$n" --rate "$RATE" --count $((RATE * SECS)) \
        --close-at-end >"feed$n.out" 2>"feed$n.log" &
    pids+=($!)
    url=$(feed_url "feed$n.out")
    kafka+=("${kt[@]}")
    run_group "$n" "live$n"
    # the group joins (a few seconds) before the stream starts
    for _ in $(seq 100); do
        [ "$(cat live$n-member*.log 2>/dev/null | grep -c 'started the shard')" -ge 6 ] && break
        sleep 0.2
    done
    "$BIN" --data "live$n" "${kafka[@]}" ingest --source "$url" 2>"ingest$n.log" &
    ing=$!; pids+=($ing)
    sleep "$SECS"; sleep 3
    kill -TERM "$ing"; wait "$ing" || true
    total=$("$BIN" --data "live$n" "${kafka[@]}" log list --json | python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))')
    wait_for "live$n" "$total"; sleep 2
    stop_group "live$n"
    "$BIN" --data "live$n" tables --json --files > "live$n.json"
    echo "  $n instance(s), live: $(fresh "live$n"); $total records; $(gold_lag "live$n.json")"
    # backfill: the same topic again into a fresh lake
    t0=$(date +%s.%N)
    run_group "$n" "bf$n"
    wait_for "bf$n" "$total"
    t1=$(date +%s.%N)
    stop_group "bf$n"
    echo "  $n instance(s), backfill: $(span "bf$n" "$total"); drained in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}') s from the instances' start (group join and rebalances included)"
    if [ "$n" = 1 ]; then
        /usr/bin/time -f "%e %M" -o single.time "$BIN" --data single "${kafka[@]}" \
            process --once 2>single.log
        read -r secs rss < single.time
        echo "  one process (no shards), Kafka: $(awk -v r="$total" -v s="$secs" 'BEGIN{printf "%.0f", r / s}') events/s ($secs s wall incl. start and Kafka connections, peak RSS $((rss / 1024)) MB)"
    fi
    kafka=("${kafka[@]:0:${#kafka[@]}-2}")
done
# The embedded log with 6 partitions and a larger input (the mock's 5 MiB
# per partition does not cap it): one process over every partition against
# the six shards run at once (and the finalizer after them).
N=${EMB_N:-300000}
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 9 --count "$N" --event-rate 40 \
    --start "$(date -u -d '-12 hours' +%Y-%m-%dT%H:%M:%SZ)" --dup-rate 0.01 --late-rate 0.005 \
    --malformed-rate 0.005 --close-at-end >feed9.out 2>feed9.log &
pids+=($!)
url=$(feed_url feed9.out)
"$BIN" --data emb --set log.partitions=6 ingest --source "$url" 2>ingest9.log &
ing=$!; pids+=($ing)
prev=-1
for _ in $(seq 600); do
    sleep 1
    end=$("$BIN" --data emb log list --json 2>/dev/null | python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0)
    [ "$end" = "$prev" ] && [ "$end" -gt 0 ] && break
    prev=$end
done
kill -TERM "$ing"; wait "$ing" || true
n=$end
cp -al emb emb_shards
t0=$(date +%s.%N)
/usr/bin/time -f "%e %U %S %M" -o emb.time "$BIN" --data emb process --once 2>emb.log
read -r secs u sy rss < emb.time
echo "  embedded log, 6 partitions, $n records: one process $(awk -v r="$n" -v s="$secs" 'BEGIN{printf "%.0f", r / s}') events/s ($secs s wall, $(awk -v a="$u" -v b="$sy" 'BEGIN{print a + b}') CPU s, peak RSS $((rss / 1024)) MB)"
t0=$(date +%s.%N)
for p in 0 1 2 3 4 5; do
    /usr/bin/time -f "%e %U %S %M" -o "shard$p.time" "$BIN" --data emb_shards process --partition "$p" --once 2>"shard$p.log" &
    pids+=($!)
done
wait "${pids[@]: -6}"
/usr/bin/time -f "%e %U %S %M" -o final.time "$BIN" --data emb_shards process --finalize --once 2>final9.log
t1=$(date +%s.%N)
cat shard*.time final.time | awk -v n="$n" -v a="$t0" -v b="$t1" '{c += $2 + $3; m += $4} END {
    printf "  embedded log, 6 partitions, %d records: six shards at once, then the finalizer: %.0f events/s (%.1f s wall, %.1f CPU s, RSS of the seven summed %d MB)\n", n, n / (b - a), b - a, c, m / 1024 }'
grep -h "finalize: info: epoch" final9.log | tail -1 | sed 's/^.*finalize: info: /  finalizer, last epoch: /'
"$BIN" --data emb_shards verify | tail -1 | sed 's/^/  verify on the shards\x27 lake: /'
