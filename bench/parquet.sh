#!/usr/bin/env bash
# parquet.sh — freshet's Parquet writer and reader against DuckDB, in one run,
# on the same rows: a realistic silver table of Wikimedia events built from
# the recorded sample (bench/bench_parquet.c), zstd level 3 on both sides.
#
#   bench/parquet.sh [ROWS [REPEAT]]   default 1000000 rows, 5 runs per phase
#
# Builds the release preset if bench_parquet is missing, runs bench_parquet
# (per-value API, batch API, per-value API with the compression thread)
# under /usr/bin/time -v, then DuckDB
# (bench/parquet_duckdb.mjs, through @duckdb/node-api from tests/interop),
# and prints a table of seconds, rows/s, MB/s, file size and peak memory
# with the ratios. Output files go to bench/out/parquet (git-ignored).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rows=${1:-1000000}
repeat=${2:-5}
build=${FR_BENCH_BUILD:-$root/build/release}
shared=${FR_SHARED_DIR:-$root/../shared}
sample=$shared/data/wikimedia/gokulportfolio-sample_events.jsonl
out=$root/bench/out/parquet

if [ ! -f "$sample" ]; then
    echo "parquet.sh: recorded events not found at $sample (set FR_SHARED_DIR)" >&2
    exit 1
fi
if [ ! -x "$build/bench_parquet" ]; then
    (cd "$root" && cmake --preset release >/dev/null && cmake --build "$build" --target bench_parquet)
fi
mkdir -p "$out"
rm -f "$out"/*.parquet "$out"/*.txt

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
# per-value API, batch API, per-value API with the compression thread
for run in row:0 batch:0 row:1; do
    api=${run%:*} workers=${run#*:} name=freshet_${api}_w${run#*:}
    extra=()
    [ "$run" = row:0 ] && extra=(--ndjson)
    /usr/bin/time -v "$build/bench_parquet" --sample "$sample" --rows "$rows" --out "$out" \
        --codec zstd --level 3 --api "$api" --workers "$workers" --repeat "$repeat" "${extra[@]}" \
        >"$out/$name.txt" 2>"$out/$name.err"
    grep -E 'Maximum resident' "$out/$name.err" | sed "s/^\s*/  ($name, whole process) /"
done
/usr/bin/time -v node "$root/bench/parquet_duckdb.mjs" "$out" "$repeat" 2>"$out/duckdb.err"
grep -E 'Maximum resident' "$out/duckdb.err" | sed 's/^\s*/  (DuckDB whole process) /'
