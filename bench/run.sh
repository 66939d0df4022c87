#!/usr/bin/env bash
# run.sh — run every benchmark in bench/ against the release build and print
# the figures that docs/BENCHMARKS.md records. `make bench` calls this.
# Each bench/<name>.sh measures freshet and its peer (or the physical limit)
# in the same run and prints a ratio.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export FR_BUILD_DIR=${FR_BUILD_DIR:-$here/../build/release}
export FR_SHARED_DIR=${FR_SHARED_DIR:-$here/../../shared}
echo "# freshet benchmarks, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -m)"
for b in "$here"/*.sh; do
    [ "$(basename "$b")" = run.sh ] && continue
    echo
    echo "## $(basename "$b" .sh)"
    bash "$b"
done
