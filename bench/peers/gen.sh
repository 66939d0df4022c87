#!/usr/bin/env bash
# gen.sh — write N events as NDJSON with freshet feed's generator (its
# calibrated content, docs/FEED.md) and the fault rates of lib.sh's fr_gen:
#   realistic: 2 % duplicates, 0.5 % late (1 s .. 15 min), 1 % out of order
#              (<= 5 s), 0.1 % malformed (every kind but oversize), canaries
#   clean:     the same without late events (batch = streaming semantics)
# usage: BIN=build/release/freshet bench/peers/gen.sh OUT.ndjson N [realistic|clean] [SEED]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-${FR_BUILD_DIR:-$here/../../build/release}/freshet}
. "$here/lib.sh"
fr_gen "$1" "${4:-7}" "$2" "${3:-realistic}"
