#!/usr/bin/env bash
# backfill_ab.sh — two (or more) freshet builds backfilling the same log,
# alternating, as in docs/BENCHMARKS.md "2026-12-02: bronze on the
# decode-ahead thread". The log is the issue-7 realistic set (bench/peers/
# lib.sh's fr_gen and fr_ingest_file: N events through SSE into the log),
# made once in WORK and hard-linked into a fresh data directory per run.
#   bash bench/backfill_ab.sh [BIN_A [BIN_B ...]]   (none: the release build)
# Environment: N (1000000), ROUNDS (3), WORK (bench/out/backfill_ab),
# SETS (extra --set arguments for every run, e.g. "process.epoch_max_records=100000"),
# CALLGRIND=1: also valgrind callgrind per thread over the first 100,000
# records (instructions; deterministic), one run per binary.
# SCHED=1: also one run per binary under perf's scheduler tracepoints, and
# where its idle vCPU time went (bench/sched_idle.py).
# Prints one line per run: wall, CPU, peak RSS, epochs, commit time, load average.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# No binary given (bench/run.sh, `make bench`): the release build alone.
[ $# -ge 1 ] || set -- "${FR_BUILD_DIR:-$here/../build/release}/freshet"
N=${N:-1000000}; ROUNDS=${ROUNDS:-3}; WORK=${WORK:-$here/out/backfill_ab}
bins=()
for b in "$@"; do bins+=("$(realpath "$b")"); done
export BIN=${bins[0]}
. "$here/peers/lib.sh"
mkdir -p "$WORK"; cd "$WORK"
sets=(); for s in ${SETS:-}; do sets+=(--set "$s"); done

make_log() { # $1: data dir, $2: events
    [ -d "$1/log" ] && return 0
    fr_gen "$1.ndjson" 7 "$2" realistic
    fr_ingest_file "$1.ndjson" "$1" "$1-ingest" >/dev/null
    rm -f "$1.ndjson"
}
make_log base "$N"

run() { # $1: binary
    local d; d=$(mktemp -d "$WORK/run.XXXX")
    cp -al base/log "$d/log"
    /usr/bin/time -v -o "$d/time" "$1" --data "$d" "${sets[@]}" process --once 2>"$d/p.log" >/dev/null
    read -r w c m < <(fr_timev "$d/time")
    # commit: the sum over the run's epochs of the processor's "commit N ms"
    printf "%-40s wall %6.2f s  cpu %6.2f s  rss %4d MB  epochs %s  commit %s ms  load %s\n" \
        "$1" "$w" "$c" $((m / 1024)) "$(grep -c 'process: info: epoch' "$d/p.log")" \
        "$(grep -o 'commit [0-9]* ms' "$d/p.log" | awk '{s += $2} END {print s + 0}')" \
        "$(cut -d' ' -f1 /proc/loadavg)"
    rm -rf "$d"
}
for r in $(seq "$ROUNDS"); do
    for b in "${bins[@]}"; do run "$b"; done
done

if [ "${CALLGRIND:-0}" = 1 ]; then
    make_log small 100000
    for b in "${bins[@]}"; do
        d=$(mktemp -d "$WORK/cg.XXXX"); cp -al small/log "$d/log"
        valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$d/cg.out" \
            "$b" --data "$d" "${sets[@]}" process --once >/dev/null 2>"$d/p.log"
        echo "$b (instructions per thread, callgrind):"
        for f in "$d"/cg.out-*; do echo "  $(basename "$f") $(grep -m1 '^summary' "$f")"; done
        rm -rf "$d"
    done
fi

if [ "${SCHED:-0}" = 1 ]; then
    for b in "${bins[@]}"; do
        d=$(mktemp -d "$WORK/sched.XXXX"); cp -al base/log "$d/log"
        perf record -q -e sched:sched_switch -e sched:sched_wakeup -o "$d/sched.data" \
            "$b" --data "$d" "${sets[@]}" process --once >/dev/null 2>"$d/p.log"
        perf script -i "$d/sched.data" -F cpu,time,event,trace 2>/dev/null >"$d/sched.txt"
        echo "$b (scheduler trace):"
        python3 "$here/sched_idle.py" "$d/sched.txt" "$(basename "$b" | cut -c1-15)"
        rm -rf "$d"
    done
fi
