#!/usr/bin/env bash
# enrich_process.sh — the enrichment stage inside `freshet process` (issue 9,
# docs/BENCHMARKS.md "Enrichment in the processor"), against `freshet feed`'s
# API fixture on 127.0.0.1, each figure next to the processor without
# enrichment in the same run:
#   backfill: N events already in the log (default 200,000), processed with
#     enrichment off, on with the cache off (every key is a request: cold),
#     on with the default cache (warming over the run), and the same with
#     enrich.backlog_wait_ms (the backfill waits for the API instead of
#     dead-lettering what the pending table cannot hold): events/s, CPU,
#     peak RSS, API requests per 1,000 events, cache hit rate, outcomes;
#   live: `freshet feed` at RATE events/s (default 1,000) for SECS seconds
#     (default 40), 1-second trigger, enrichment off / on with a healthy API /
#     on with an API 100 times slower (2 s per answer) failing half its
#     requests: freshness of silver (log entry to committed) p50/p99/max,
#     processor RSS and CPU (of one core, after the first 5 s), outcomes.
# usage: bench/enrich_process.sh [N] [RATE] [SECS]   (FR_BUILD_DIR=build/release)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=${FR_BUILD_DIR:-$here/../build/release}/freshet
N=${1:-200000}; RATE=${2:-1000}; SECS=${3:-40}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-enrich.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"
[ -d "$here/node_modules/@duckdb/node-api" ] ||
    (cd "$here" && npm install --no-audit --no-fund --loglevel=error && touch node_modules)

feed() { # feed NAME FLAGS...: start a feed, its http://127.0.0.1:PORT in $furl (no subshell: cleanup needs the pid)
    local name=$1; shift
    "$BIN" feed --listen 127.0.0.1:0 --synthetic "$@" >"$name.out" 2>"$name.log" &
    pids+=($!)
    for _ in $(seq 100); do grep -q '^listening' "$name.out" 2>/dev/null && break; sleep 0.1; done
    furl=$(awk '/^listening/ {print $2; exit}' "$name.out" | sed 's#/v2/stream/recentchange##')
}
log_end() { "$BIN" --data "$1" log list --json | python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0; }
enrich() { echo "--set enrich.enabled=1 --set enrich.api_url=$1/api/{wiki}/w/api.php --set enrich.rate_per_s=0"; }
counts() { # counts DATA: resolved no_item failed backlog requests hits misses
    python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["counts"]; print(c["resolved"], c["no_item"], c["failed"], c["backlog"], c["requests"], c["cache_hits"], c["cache_misses"])' "$1/stats/topics.json"
}

# ---- backfill
start=$(date -u -d '-12 hours' +%Y-%m-%dT%H:%M:%SZ)
feed stream --seed 3 --count "$N" --event-rate 40 --start "$start" --dup-rate 0.01 \
    --late-rate 0.005 --malformed-rate 0.005 --close-at-end
api=$furl
"$BIN" --data base --set ingest.stall_timeout_s=2 ingest --source "$api/v2/stream/recentchange" 2>ingest.log &
ing=$!
while :; do
    sleep 1
    [ "$(log_end base)" -ge $((N * 98 / 100)) ] && sleep 2 && break
done
kill -TERM "$ing"; wait "$ing" || true
records=$(log_end base)
echo "backfill: $records log records; fixture API without latency, token bucket off"
printf '  %-28s %9s %11s %7s %8s %10s %9s\n' run seconds events/s CPU_s RSS_MB calls/1k hit_rate
backfill() { # backfill NAME SETTINGS...
    local name=$1; shift
    rm -rf "$name"; mkdir "$name"; cp -al base/log "$name/"
    # shellcheck disable=SC2068
    /usr/bin/time -v "$BIN" --data "$name" --set process.epoch_max_records=100000 $@ process --once 2>"$name.log"
    local wall secs rss cpu
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$name.log")
    secs=$(echo "$wall" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$name.log")
    cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u + s}' "$name.log")
    local calls="-" hit="-"
    if [ -f "$name/stats/topics.json" ]; then
        read -r _ _ _ _ req hits misses < <(counts "$name")
        calls=$(awk -v r="$req" -v n="$records" 'BEGIN{printf "%.1f", r * 1000 / n}')
        hit=$(awk -v h="$hits" -v m="$misses" 'BEGIN{ if (h + m) printf "%.1f%%", 100 * h / (h + m); else print "-" }')
    fi
    printf '  %-28s %9s %11s %7s %8s %10s %9s\n' "$name" "$secs" \
        "$(awk -v r="$records" -v s="$secs" 'BEGIN{printf "%.0f", r / s}')" "$cpu" "$((rss / 1024))" "$calls" "$hit"
}
# shellcheck disable=SC2046
{
    backfill off
    backfill on_cache_off $(enrich "$api") --set enrich.cache_entries=0
    backfill on_cache_on $(enrich "$api")
    backfill on_cache_on_wait $(enrich "$api") --set enrich.backlog_wait_ms=600000
}
for r in on_cache_off on_cache_on on_cache_on_wait; do
    read -r res noi fai blg _ _ _ < <(counts "$r")
    echo "  outcomes ($r): $res resolved, $noi no item, $fai failed, $blg backlog"
done

# ---- live
feed slowapi --seed 5 --count 1 --api-latency-ms 2000 --api-error-rate 0.5
slow=$furl
live() { # live NAME API [SETTINGS...]: API off, self (the stream's own feed) or a URL
    local name=$1 mode=$2; shift 2
    feed "live_$name" --seed 4 --rate "$RATE"
    local url=$furl
    local extra=""
    case $mode in
        off) ;;
        self) extra=$(enrich "$url") ;;
        *) extra=$(enrich "$mode") ;;
    esac
    name=live_$name
    "$BIN" --data "$name" ingest --source "$url/v2/stream/recentchange" 2>"$name.ingest.log" &
    local ing=$!
    # shellcheck disable=SC2068,SC2086
    "$BIN" --data "$name" --set process.trigger_ms=1000 $extra $@ process 2>"$name.log" &
    local proc=$!
    sleep 5
    local c0 c1
    c0=$(awk '{print $14 + $15}' "/proc/$proc/stat")
    sleep $((SECS - 5))
    c1=$(awk '{print $14 + $15}' "/proc/$proc/stat")
    local rss
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$proc/status")
    kill -TERM "$proc"; wait "$proc" || true
    kill -TERM "$ing"; wait "$ing" || true
    "$BIN" --data "$name" tables --json --files >"$name.json"
    local f
    f=$(node "$here/peers/freshness.mjs" "$name.json" /dev/null)
    local out="-"
    if [ -f "$name/stats/topics.json" ]; then
        read -r res noi fai blg req _ _ < <(counts "$name")
        out="$res resolved, $noi no item, $fai failed, $blg backlog, $req requests"
    fi
    local cpu
    cpu=$(awk -v a="$c0" -v b="$c1" -v s="$((SECS - 5))" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f", 100 * (b - a) / hz / s}')
    echo "$f" | awk -v n="$name" -v r="$((rss / 1024))" -v o="$out" -v c="$cpu" \
        '{printf "  %-16s freshness over %d rows: p50 %d ms, p99 %d ms, max %d ms; RSS %d MB; CPU %s %%; %s\n", n, $1, $2, $3, $4, r, c, o}'
}
echo "live at $RATE events/s, trigger 1000 ms, ${SECS} s each"
live off off
live healthy self
live slow_failing "$slow" --set enrich.max_attempts=3
