#!/usr/bin/env bash
# hostile_memory.sh — peak RSS of freshet under hostile peers (issue 34
# item 4), with the release build: runs tests/integration/hostile_memory.py
# (every case: SSE sources for ingest, HTTP clients of serve) and prints
# the peak RSS per case. The figures go in docs/BENCHMARKS.md and
# docs/DAMAGE.md. Usage: bench/hostile_memory.sh [FRESHET_BINARY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export FR_BINARY=${1:-$here/build/release/freshet}
[ -x "$FR_BINARY" ] || { echo "no binary at $FR_BINARY (make release)"; exit 1; }
out=$(mktemp "${TMPDIR:-/tmp}/fr-hostile-mem.XXXXXX.json")
trap 'rm -f "$out"' EXIT
nice -n 19 python3 "$here/tests/integration/hostile_memory.py" --json "$out"
python3 - "$out" "$FR_BINARY" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"\npeak RSS ({sys.argv[2]}):")
print("| case | peak RSS (MiB) | test bound, ASan build (MiB) |")
print("|---|---:|---:|")
for k, v in d["peak_rss_kib"].items():
    print(f"| {k} | {v / 1024:.1f} | {d['bounds_kib'][k] // 1024} |")
PY
