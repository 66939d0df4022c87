#!/usr/bin/env bash
# log.sh — the embedded log's durable append bandwidth against the disk's:
# `dd if=/dev/zero bs=1M count=N conv=fsync` and bench_log (1 KiB records,
# group commit every 4 MiB or 10 ms) write the same volume to the same
# temporary directory, alternately, three times each; the best of each is
# compared (target: log >= 70% of dd).
#   usage: bench/log.sh [MiB]      (default 512; FR_BUILD_DIR=build/release)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${FR_BUILD_DIR:-$here/../build/release}
mib=${1:-512}
bench="$build/bench_log"
[ -x "$bench" ] || { echo "log.sh: $bench not built (cmake --preset release && cmake --build build/release)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

best_dd=0
best_log=0
for round in 1 2 3; do
    # "536870912 bytes (537 MB, 512 MiB) copied, 1.40654 s, 382 MB/s"
    line=$(dd if=/dev/zero of="$tmp/dd" bs=1M count="$mib" conv=fsync 2>&1 | tail -1)
    rm -f "$tmp/dd"
    dd_mb=$(echo "$line" | awk '{printf "%.1f", $1 / $(NF-3) / 1e6}')
    log_line=$("$bench" "$mib" 1024 "$tmp" | tail -1)
    log_mb=$(echo "$log_line" | sed -n 's/.*disk_mb_s=\([0-9.]*\).*/\1/p')
    echo "round $round: dd $dd_mb MB/s, log $log_mb MB/s ($log_line)"
    best_dd=$(awk -v a="$best_dd" -v b="$dd_mb" 'BEGIN{print (b > a) ? b : a}')
    best_log=$(awk -v a="$best_log" -v b="$log_mb" 'BEGIN{print (b > a) ? b : a}')
done
echo "dd conv=fsync        $best_dd MB/s"
echo "log append (durable) $best_log MB/s"
awk -v l="$best_log" -v d="$best_dd" 'BEGIN{printf "ratio log/dd         %.2f (target >= 0.70)\n", l / d}'
