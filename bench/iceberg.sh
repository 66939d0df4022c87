#!/usr/bin/env bash
# iceberg.sh — commit 1 against commit 10,000 (with snapshot expiry and
# manifest merging on) and compaction's files and bytes before and after.
set -euo pipefail
"${FR_BUILD_DIR:?}/bench_iceberg" "${FR_ICE_COMMITS:-10000}" "${FR_ICE_SMALL:-500}" "${FR_ICE_ROWS:-2000}"
