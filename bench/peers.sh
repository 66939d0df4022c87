#!/usr/bin/env bash
# peers.sh — issue 7: freshet against DuckDB and Polars on the same job, the
# physical limits of the input, live freshness and the compressed
# hour-three soak; then the tables (OUT/report.md) and the plots
# (docs/img/bench-*.png) that docs/BENCHMARKS.md shows. `make bench-peers`.
#   batch:  bench/peers/batch.sh   N events (default 1,000,000), ROUNDS rounds
#   live:   bench/peers/live.sh    1,000 and 10,000 ev/s x 1 s and 5 s triggers
#   soak:   bench/peers/soak.sh    86,400 epochs of 10 records (capped in time)
# Stages can be chosen: bench/peers.sh [batch] [live] [soak] [report]
# (default: all four). Environment: FR_BUILD_DIR (build/release), OUT
# (bench/out/peers), IMG (docs/img), N, ROUNDS (3), LIVE_SECS (40), SOAK_EPOCHS (86400),
# SOAK_RAW_S (300), SOAK_MAX_S (1800), SOAK_RUNS (shipped raw; also maint paused). Takes
# about 90 minutes on 2 cores, most of it the soak.
# Installs what it needs on first use: bench/package.json's npm packages
# (DuckDB, Polars) and Debian's python3-matplotlib for the plots.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export BIN=${BIN:-${FR_BUILD_DIR:-$root/build/release}/freshet}
OUT=${OUT:-$here/out/peers}; IMG=${IMG:-$root/docs/img}
N=${N:-1000000}; ROUNDS=${ROUNDS:-3}; LIVE_SECS=${LIVE_SECS:-40}
SOAK_EPOCHS=${SOAK_EPOCHS:-86400}; SOAK_RAW_S=${SOAK_RAW_S:-300}; SOAK_MAX_S=${SOAK_MAX_S:-1800}
stages=${*:-batch live soak report}
mkdir -p "$OUT"

[ -x "$BIN" ] || { echo "peers: no freshet binary at $BIN (make release)" >&2; exit 1; }
if [ ! -d "$here/node_modules/nodejs-polars-linux-x64-gnu" ] || [ "$here/package.json" -nt "$here/node_modules" ]; then
    echo "peers: npm install (bench/package.json)"
    # nodejs-polars-linux-x64-gnu declares node >= 22 but runs on 20: it is
    # listed explicitly so npm does not skip it as an optional dependency.
    (cd "$here" && npm install --no-audit --no-fund --loglevel=error && touch node_modules)
fi
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    echo "peers: installing python3-matplotlib (Debian)"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-matplotlib
fi

{
    echo "== stages: $stages"
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "machine: $(nproc) cores, $(awk '/model name/ {sub(/.*: /, ""); print; exit}' /proc/cpuinfo)," \
         "$(free -g | awk '/Mem:/ {print $2}') GiB, $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "freshet: $BIN, tree $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet -- src 2>/dev/null || echo ' (+ uncommitted src changes)')"
    echo "node $(node --version), duckdb $(node -p "require('$here/node_modules/@duckdb/node-api/package.json').version")," \
         "nodejs-polars $(node -p "require('$here/node_modules/nodejs-polars/package.json').version"), $(zstd --version | head -1)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$OUT/machine.txt"

for s in $stages; do
    echo "== $s ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
    case $s in
    batch) bash "$here/peers/batch.sh" "$OUT" "$N" "$ROUNDS" ;;
    live) bash "$here/peers/live.sh" "$OUT" "$LIVE_SECS" "$ROUNDS" ;;
    # The soak's data directories go to /dev/shm (see soak.sh's header).
    soak) TMPDIR=/dev/shm bash "$here/peers/soak.sh" "$OUT" "$SOAK_EPOCHS" 30 "$SOAK_RAW_S" "$SOAK_MAX_S" ;;
    report)
        python3 "$here/peers/report.py" "$OUT" "$N" >"$OUT/report.md"
        /usr/bin/python3 "$here/peers/plot.py" "$OUT" "$IMG" "$N"
        cat "$OUT/report.md" ;;
    *) echo "peers: unknown stage $s" >&2; exit 2 ;;
    esac
done
