#!/usr/bin/env bash
# batch.sh — the same job three ways (issue 7), timed side by side with the
# physical limits of the input, ROUNDS rounds (engines alternating):
#   freshet: import the NDJSON into the log with `ingest --file` (timed on
#            its own; the old path, feed --file + ingest over loopback SSE,
#            timed beside it as ingest_sse), then `freshet process --once`
#            (the processing figure) into all six tables;
#   duckdb:  bench/peers/job_duckdb.mjs;   polars: bench/peers/job_polars.mjs;
#   limits:  `cat FILE > /dev/null` (page-cached: the file was just read, so
#            this is memory bandwidth, not the disk) and `zstd -1 -T2`; and
#            `zstd -1 -T1`, to show what the second vCPU adds in each round.
# Then the equality check on a second, clean dataset (no late events; see
# lib.sh), where batch and streaming semantics agree, and the same check on
# the timed (realistic) dataset for information. Then one more freshet
# processing run under `perf record -g` (not timed).
# Writes OUT/batch.tsv ("round engine phase wall_s cpu_s rss_kb"),
# OUT/batch-steps.txt, OUT/check-{clean,realistic}.txt, OUT/perf-*.txt,
# OUT/input.txt.
# usage: BIN=build/release/freshet bench/peers/batch.sh OUT [N] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
OUT=$(realpath "$1"); N=${2:-1000000}; ROUNDS=${3:-3}
mkdir -p "$OUT"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-batch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

t0=$SECONDS
fr_gen realistic.ndjson 7 "$N" realistic
fr_gen clean.ndjson 8 "$N" clean
{
    echo "generated $N events twice in $((SECONDS - t0)) s (freshet feed --dump --synthetic)"
    for f in realistic clean; do
        echo "$f.ndjson: $(stat -c %s $f.ndjson) bytes, $(wc -l <$f.ndjson) lines, sha256 $(sha256sum $f.ndjson | cut -c1-16)…," \
             "canaries $(grep -c '"domain":"canary"' $f.ndjson || true)"
    done
} | tee "$OUT/input.txt"
IN=realistic.ndjson

tsv=$OUT/batch.tsv
: >"$tsv"
: >"$OUT/batch-steps.txt"
row() { echo "$1 $2 $3 $4" >>"$tsv"; }
timed() { # timed ROUND ENGINE PHASE CMD... : time -v a command, record it
    local r=$1 e=$2 p=$3
    shift 3
    # Every timed step starts with nothing waiting to be written back (the
    # inputs just generated, the previous engine's outputs), so no engine's
    # fsyncs queue behind another step's writes.
    sync
    /usr/bin/time -v -o t.log "$@" >>"$OUT/batch-steps.txt" 2>"$e.$p.err" ||
        { echo "batch: $e $p failed:" >&2; tail -5 "$e.$p.err" >&2; return 1; }
    row "$r" "$e" "$p" "$(fr_timev t.log)"
}
fresh_lake() { rm -rf "$1/lake" "$1/process" "$1/stats"; }
# Read files twice, untimed, so that the step after starts on a warm page
# cache. Every step that reads the input (or, for freshet, its log) is
# preceded by this: this guest drops page-cache pages under the peers'
# memory use (2026-12-05: round 2's `cat` limit took 4.97 s instead of
# 0.22 s, and `zstd -1 -T2` read from the disk), and a cold read would
# flatter or handicap whichever engine met it.
warm() { # FILE or DIR...
    local i
    for i in 1 2; do find "$@" -type f -exec cat {} + >/dev/null; done
}

for r in $(seq "$ROUNDS"); do
    echo "round $r: $(uptime | sed 's/.*load/load/')"
    warm "$IN"
    timed "$r" limit cat sh -c "cat $IN > /dev/null"
    warm "$IN"
    timed "$r" limit zstd1T2 sh -c "zstd -q -1 -T2 -c $IN > /dev/null"
    # The same on one thread: what a second vCPU adds to compression in
    # this round (this guest's second vCPU gives anywhere from nothing to
    # ~1.9x over time; docs/BENCHMARKS.md, issue 5's session-15 section
    # and issue 7's session-19 runs).
    warm "$IN"
    timed "$r" limit zstd1T1 sh -c "zstd -q -1 -T1 -c $IN > /dev/null"
    # The import: `ingest --file` (issue 32); the old SSE path beside it.
    rm -rf fr
    warm "$IN"
    read -r w c m _ < <(fr_ingest_file "$IN" fr ingest-sse)
    row "$r" freshet ingest_sse "$w $c $m"
    rm -rf fr
    warm "$IN"
    sync
    read -r w c m _ < <(fr_import_file "$IN" fr ingest)
    row "$r" freshet ingest "$w $c $m"
    echo "freshet round $r:" >>"$OUT/batch-steps.txt"
    warm fr/log
    timed "$r" freshet process "$BIN" --data fr process --once
    grep -c "epoch .*records" freshet.process.err >>"$OUT/batch-steps.txt" || true
    warm "$IN"
    timed "$r" duckdb job node "$here/job_duckdb.mjs" "$IN" out-duckdb
    warm "$IN"
    timed "$r" polars job node "$here/job_polars.mjs" "$IN" out-polars
done
"$BIN" --data fr tables --json --files >tables-realistic.json
node "$here/check.mjs" tables-realistic.json duckdb=out-duckdb polars=out-polars | tee "$OUT/check-realistic.txt"

# The equality check on the clean dataset.
rm -rf frc
fr_import_file clean.ndjson frc ingest-clean >/dev/null
"$BIN" --data frc process --once 2>process-clean.log
"$BIN" --data frc tables --json --files >tables-clean.json
node "$here/job_duckdb.mjs" clean.ndjson out-duckdb-clean >/dev/null
node "$here/job_polars.mjs" clean.ndjson out-polars-clean >/dev/null
node "$here/check.mjs" tables-clean.json duckdb=out-duckdb-clean polars=out-polars-clean | tee "$OUT/check-clean.txt"

# Profile: the processor once more over the realistic log, under perf.
if command -v perf >/dev/null && [ "${FR_PERF:-1}" = 1 ]; then
    fresh_lake fr
    # DWARF call graphs: the release build keeps no frame pointers. Sampled
    # at 499 Hz so that the stacks of a 1M-event run stay a few hundred MB.
    perf record -q --call-graph dwarf,16384 -F 499 -o perf.data "$BIN" --data fr process --once >/dev/null 2>&1
    perf report -i perf.data --stdio --no-children --sort symbol --percent-limit 0.5 -g none 2>/dev/null |
        grep -E '^ +[0-9.]+%' >"$OUT/perf-flat.txt" || true
    perf report -i perf.data --stdio --children --sort symbol --percent-limit 2 -g none 2>/dev/null |
        grep -E '^ +[0-9.]+% +[0-9.]+%' >"$OUT/perf-children.txt" || true
    perf report -i perf.data --stdio --no-children --sort dso 2>/dev/null | grep -E '^ +[0-9.]+%' >"$OUT/perf-dso.txt" || true
fi
