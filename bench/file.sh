#!/usr/bin/env bash
# file.sh — issue 32's targets for loading a recorded file, timed side by
# side in one run on the same N-event file (bench/peers' generator):
#   disk:      dd conv=fsync of as many bytes as the import writes to the
#              log (the disk's fsync'd sequential write bandwidth; as
#              bench/log.sh measures it)
#   import:    freshet ingest --file FILE (the log's bytes / wall time,
#              target >= 70 % of dd)
#   sse:       the old path, feed --file + ingest over loopback SSE
#              (lib.sh's fr_ingest_file), for comparison
#   process:   freshet process --once over the imported log
#   backfill:  freshet backfill FILE on an empty data directory: file -> all
#              six tables (target: >= 4x faster than DuckDB); pipelined (the
#              default) and --sequential (backfill_seq)
#   duckdb:    bench/peers/job_duckdb.mjs on the same file
# Every step: wall, CPU and peak RSS from GNU time (target RSS <= 128 MB
# for freshet's steps). The page cache is warmed before each step that
# reads the input, as batch.sh does; `sync` before each timed step.
# Writes OUT/file.tsv ("round step wall_s cpu_s rss_kb") and prints a summary.
# usage: BIN=build/release/freshet bench/file.sh [OUT] [N] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export BIN=${BIN:-${FR_BUILD_DIR:-$root/build/release}/freshet}
. "$here/peers/lib.sh"
OUT=$(realpath -m "${1:-$here/out/file}"); N=${2:-1000000}; ROUNDS=${3:-2}
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "file.sh: no freshet binary at $BIN" >&2; exit 1; }
[ -d "$here/node_modules/@duckdb/node-api" ] ||
    (cd "$here" && npm install --no-audit --no-fund --loglevel=error)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-file.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

fr_gen in.ndjson 7 "$N" realistic
IN=$tmp/in.ndjson
in_bytes=$(stat -c %s "$IN")
{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "freshet: $BIN, tree $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "input: $N events, $in_bytes bytes ($(wc -l <"$IN") lines)"
} | tee "$OUT/machine.txt"

tsv=$OUT/file.tsv
: >"$tsv"
warm() { local i; for i in 1 2; do find "$@" -type f -exec cat {} + >/dev/null; done; }
timed() { # timed ROUND STEP CMD...
    local r=$1 s=$2
    shift 2
    sync
    /usr/bin/time -v -o t.log "$@" >"$s.out" 2>"$s.err" ||
        { echo "file.sh: $s failed:" >&2; tail -5 "$s.err" >&2; return 1; }
    echo "$r $s $(fr_timev t.log)" | tee -a "$tsv"
}
log_bytes() { "$BIN" --data "$1" log list --json | python3 -c 'import json,sys; print(sum(p["bytes"] for p in json.load(sys.stdin)))'; }

for r in $(seq "$ROUNDS"); do
    echo "round $r: load $(cut -d' ' -f1-3 /proc/loadavg)"
    rm -rf fr bf
    warm "$IN"
    timed "$r" import "$BIN" --data fr ingest --file "$IN"
    lb=$(log_bytes fr)
    mib=$(( (lb + 1048575) / 1048576 ))
    sync
    line=$(dd if=/dev/zero of=dd.out bs=1M count="$mib" conv=fsync 2>&1 | tail -1)
    rm -f dd.out
    echo "$r dd $(echo "$line" | awk '{printf "%.3f", $(NF-3)}') 0 0" | tee -a "$tsv"
    echo "$r log_bytes $lb 0 0" >>"$tsv"
    warm fr/log
    timed "$r" process "$BIN" --data fr process --once
    rm -rf fr
    warm "$IN"
    timed "$r" backfill "$BIN" --data bf backfill "$IN"
    rm -rf bf
    warm "$IN"
    timed "$r" backfill_seq "$BIN" --data bf backfill --sequential "$IN"
    warm "$IN"
    timed "$r" duckdb node "$here/peers/job_duckdb.mjs" "$IN" out-duckdb
    rm -rf out-duckdb bf
    if [ "$r" = 1 ]; then
        rm -rf sse
        warm "$IN"
        read -r w c m _ < <(fr_ingest_file "$IN" sse sse)
        echo "$r sse $w $c $m" | tee -a "$tsv"
        rm -rf sse
    fi
done

python3 - "$tsv" "$in_bytes" <<'PY' | tee "$OUT/summary.txt"
import sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, step, w, c, m = line.split()
    rows[step].append((float(w), float(c), int(m)))
in_bytes = int(sys.argv[2])
def best(step):
    return min(rows[step], key=lambda x: x[0]) if rows.get(step) else None
def peak(step):
    return max(x[2] for x in rows[step]) / 1024 if rows.get(step) else 0
lb = rows["log_bytes"][0][0]
print(f"| step | best wall (s) | all rounds (s) | CPU (s) | peak RSS (MB) |")
print(f"|---|---|---|---|---|")
for s in ["import", "process", "backfill", "backfill_seq", "duckdb", "sse", "dd"]:
    if rows.get(s):
        b = best(s)
        print(f"| {s} | {b[0]:.2f} | {' / '.join(f'{x[0]:.2f}' for x in rows[s])} | {b[1]:.2f} | {peak(s):.0f} |")
# ratios per round (same round's dd and duckdb)
n = len(rows["import"])
for i in range(n):
    imp, dd, bf, dk = rows["import"][i][0], rows["dd"][i][0], rows["backfill"][i][0], rows["duckdb"][i][0]
    print(f"round {i+1}: import {lb/imp/1e6:.0f} MB/s into the log ({in_bytes/imp/1e6:.0f} MB/s of input) vs dd conv=fsync "
          f"{lb/dd/1e6:.0f} MB/s: {dd/imp*100:.0f} % (target >= 70 %); backfill {bf:.2f} s vs DuckDB {dk:.2f} s: "
          f"{dk/bf:.2f}x (target >= 4x)")
PY
