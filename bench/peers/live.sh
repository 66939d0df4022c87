#!/usr/bin/env bash
# live.sh — live freshness (issue 7): `freshet feed --synthetic --rate RATE`
# (event time tracks the wall clock) through `freshet ingest` and
# `freshet process` with process.trigger_ms = TRIGGER, for SECS seconds, at
# every RATE in RATES and TRIGGER in TRIGGERS, ROUNDS rounds. Freshness of a
# row = commit time of its silver snapshot - the time it entered the log
# (bench/peers/freshness.mjs). Also the processor's batch/commit times
# against the trigger and its RSS at the end.
# Writes OUT/live.tsv ("round rate trigger_ms rows p50 p99 max batch_p50
# batch_p99 commit_p50 commit_p99 rss_kb epochs ingested") and
# OUT/live-R-T-cdf.tsv (freshness quantiles of round 1, for the plot).
# usage: BIN=build/release/freshet bench/peers/live.sh OUT [SECS] [ROUNDS] [RATES] [TRIGGERS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
OUT=$(realpath "$1"); SECS=${2:-40}; ROUNDS=${3:-3}
RATES=${4:-1000 10000}; TRIGGERS=${5:-1000 5000}
mkdir -p "$OUT"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-live.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"
: >"$OUT/live.tsv"

for r in $(seq "$ROUNDS"); do
    for rate in $RATES; do
        for trig in $TRIGGERS; do
            d=live-$r-$rate-$trig
            rm -rf "$d"
            "$BIN" feed --listen 127.0.0.1:0 --synthetic --seed $((40 + r)) --rate "$rate" \
                --dup-rate 0.02 --ooo-rate 0.01 --malformed-rate 0.001 \
                --malformed-kinds "$FR_MALFORMED_KINDS" >"$d.feed.out" 2>"$d.feed.log" &
            feed=$!
            pids+=("$feed")
            url=""
            for _ in $(seq 100); do
                url=$(awk '/^listening/ {print $2; exit}' "$d.feed.out" 2>/dev/null)
                [ -n "$url" ] && break
                sleep 0.1
            done
            "$BIN" --data "$d" ingest --source "$url" 2>"$d.ingest.log" &
            ing=$!
            pids+=("$ing")
            "$BIN" --data "$d" --set process.trigger_ms="$trig" process 2>"$d.process.log" &
            proc=$!
            pids+=("$proc")
            sleep "$SECS"
            rss=$(awk '/VmRSS/ {print $2}' "/proc/$proc/status")
            kill -TERM "$ing" "$feed"
            wait "$ing" "$feed" || true
            kill -TERM "$proc"
            wait "$proc" || true
            "$BIN" --data "$d" tables --json --files >"$d.tables.json"
            cdf=/dev/null
            [ "$r" = 1 ] && cdf=$OUT/live-$rate-$trig-cdf.tsv
            fresh=$(node "$here/freshness.mjs" "$d.tables.json" "$cdf")
            epochs=$(python3 - "$d.process.log" <<'PY'
import re, sys
pairs = [tuple(map(int, m)) for m in re.findall(r"batch (\d+) ms, commit (\d+) ms", open(sys.argv[1]).read())]
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else -1
b = [x for x, _ in pairs]; c = [y for _, y in pairs]
print(pct(b, .5), pct(b, .99), pct(c, .5), pct(c, .99), len(pairs))
PY
)
            ingested=$(fr_log_end "$d")
            echo "$r $rate $trig $fresh ${epochs% *} $rss ${epochs##* } $ingested" | tee -a "$OUT/live.tsv"
            rm -rf "$d"
        done
    done
done
