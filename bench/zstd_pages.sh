#!/usr/bin/env bash
# zstd_pages.sh — what zstd costs per byte on each kind of column the
# processor writes, and what its parameters change (docs/BENCHMARKS.md,
# issue 5's session-14 section; ADR 0034 and 0035). Instructions are
# counted with callgrind, so the figures do not depend on the machine's
# speed. The input is N events of the issue-7 generator (bench/peers/
# lib.sh's fr_gen), split into:
#   raw      the NDJSON lines (bronze's raw column)
#   meta_id  each meta.id with a 4-byte length, as a PLAIN page holds it
#   comment  each comment, the same way
#   times    each meta.dt as 8-byte microseconds (a PLAIN INT64 page)
# bench/zstd_pages.c compresses each in independent pages (one zstd frame
# a page, as the Parquet writer does).
# usage: bash bench/zstd_pages.sh   (N=20000, PAGE=1048576; BIN as lib.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export BIN=${BIN:-${FR_BUILD_DIR:-$here/../build/release}/freshet}
N=${N:-20000}; PAGE=${PAGE:-1048576}
if ! command -v valgrind >/dev/null; then
    echo "zstd_pages.sh: skipped, valgrind is not installed (apt install valgrind)"
    exit 0
fi
. "$here/peers/lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-zstd.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/zstd_pages" "$here/zstd_pages.c" -lzstd
fr_gen "$tmp/raw" 7 "$N" realistic
python3 - "$tmp" <<'PY'
import json, struct, sys, datetime
d = sys.argv[1]
out = {k: open(f"{d}/{k}", "wb") for k in ("meta_id", "comment", "times")}
for line in open(f"{d}/raw", "rb"):
    try:
        e = json.loads(line)
        mid = e["meta"]["id"].encode()
        t = datetime.datetime.fromisoformat(e["meta"]["dt"].replace("Z", "+00:00"))
    except Exception:
        continue  # the generator's malformed records
    out["meta_id"].write(struct.pack("<I", len(mid)) + mid)
    c = e.get("comment")
    if isinstance(c, str):
        b = c.encode()
        out["comment"].write(struct.pack("<I", len(b)) + b)
    us = (t - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(microseconds=1)
    out["times"].write(struct.pack("<q", us))
PY
run() { # input page level hashlog minmatch targetlen literals
    local cg="$tmp/cg.out" r
    r=$(valgrind --tool=callgrind --callgrind-out-file="$cg" "$tmp/zstd_pages" "$tmp/$1" "${@:2}" 2>/dev/null)
    local ins bytes zbytes
    ins=$(awk '/^summary:/ {print $2}' "$cg")
    read -r bytes zbytes <<<"$r"
    awk -v i="$ins" -v b="$bytes" -v z="$zbytes" -v what="$*" \
        'BEGIN { printf "%-40s %6.2f instructions/byte  %5.3fx  (%d -> %d bytes)\n", what, i / b, b / z, b, z }'
}
echo "zstd $(zstd -V 2>/dev/null | grep -o 'v[0-9.]*' | head -1), $N events, pages of $PAGE bytes"
echo "columns: input page level hashlog minmatch targetlength literals"
for f in raw comment meta_id times; do run "$f" "$PAGE" 1 0 0 -1 0; done
echo "raw JSON, zstd's parameters:"
for p in "0 5 -1 0" "0 7 -1 0" "12 0 -1 0" "13 0 -1 0" "14 0 -1 0" "15 0 -1 0" "16 0 -1 0" "0 0 8 1"; do
    run raw "$PAGE" 1 $p
done
run raw 4194304 1 0 0 -1 0
echo "comments with the longer step:"
run comment "$PAGE" 1 0 0 8 1
echo "meta_id, the match step (targetLength t steps t + 1 bytes; literals coded):"
for t in 2 4 6 7 8 9 10 16; do run meta_id 800000 1 0 0 "$t" 1; done
run meta_id 800000 1 0 0 8 0
