#!/usr/bin/env bash
# soak.sh — the hour-three soak, compressed (issue 7): EPOCHS epochs of 10
# records each (a day at one epoch per second is 86,400) run as fast as the
# processor goes, over a log of EPOCHS x 10 realistic events. Two runs over
# copies of the same log:
#   maint: `freshet process --once` with process.epoch_max_records=10 while a
#          sidecar runs `freshet compact` every MAINT_S seconds (compaction,
#          snapshot expiry keeping 50, orphan removal) — the processor itself
#          runs no expiry, so this is what an operator must add;
#   raw:   the processor alone, as shipped, for RAW_S seconds (its commit cost
#          grows with history, so a full day would not finish; see the report).
# The maint run stops after MAX_S seconds if the epochs are not done by then
# (the summary says how many ran). The data directories live under $TMPDIR:
# bench/peers.sh points it at /dev/shm so that the shared virtual disk's
# fsync latency (6 to 90 ms per commit while other jobs ran) does not hide
# the growth being measured; the figures are then CPU and syscall cost.
# Writes OUT/soak-{maint,raw}-{epochs,rss}.tsv and OUT/soak-*.summary, which
# bench/peers/report.py turns into the table and bench/peers/plot.py plots.
# The raw run's last 30 s are profiled with perf (FR_PERF=0: not) into
# OUT/perf-soak-*.txt. SOAK_RUNS chooses the runs (default "raw maint").
# usage: BIN=build/release/freshet bench/peers/soak.sh OUT [EPOCHS] [MAINT_S] [RAW_S] [MAX_S]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
OUT=$(realpath "$1"); EPOCHS=${2:-86400}; MAINT_S=${3:-30}; RAW_S=${4:-300}; MAX_S=${5:-1800}
mkdir -p "$OUT"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-soak.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"

events=$((EPOCHS * 10 + 10))
fr_gen ev.ndjson 21 "$events" realistic
read -r iw _ _ records < <(fr_ingest_file ev.ndjson maint soak-ingest)
rm -f ev.ndjson
mkdir -p raw && cp -a maint/log raw/log
echo "soak: $records records in the log (ingest ${iw} s); $EPOCHS epochs of 10 records"

run() { # run NAME SECONDS(0 = to the end) MAINT(0/1)
    local name=$1 secs=$2 maint=$3
    "$BIN" --data "$name" --set process.epoch_max_records=10 process --once 2>"$name.process.log" &
    local proc=$!
    pids+=("$proc")
    python3 "$here/rss_sample.py" "$proc" "$OUT/soak-$name-rss.tsv" 1 &
    local sampler=$!
    local t0=$SECONDS next=$MAINT_S profiled=0
    : >"$OUT/soak-$name-compact.log"
    while kill -0 "$proc" 2>/dev/null; do
        sleep 1
        # The last 30 s of the raw run under perf: where the growing time goes.
        if [ "$maint" = 0 ] && [ "$profiled" = 0 ] && [ "${FR_PERF:-1}" = 1 ] && command -v perf >/dev/null &&
           [ "$secs" -ge 60 ] && [ $((SECONDS - t0)) -ge $((secs - 30)) ]; then
            profiled=1
            perf record -q -g -p "$proc" -o perf-soak.data -- sleep 25 >/dev/null 2>&1 &
        fi
        if [ "$secs" -gt 0 ] && [ $((SECONDS - t0)) -ge "$secs" ]; then
            kill -TERM "$proc"
            break
        fi
        if [ "$maint" = 1 ] && [ $((SECONDS - t0)) -ge "$next" ]; then
            next=$((SECONDS - t0 + MAINT_S))
            { echo "# $(date -u +%FT%T.%3NZ)"
              /usr/bin/time -f 'compact wall %e s cpu %U+%S s rss %M KB' "$BIN" --data "$name" compact \
                  --expire-older-than 30 --retain-last 50 --orphans-older-than 120 2>&1 || true
            } >>"$OUT/soak-$name-compact.log"
        fi
    done
    wait "$proc" || echo "soak: $name processor exited $?" >&2
    wait "$sampler" || true
    # "unix_ms epoch batch_ms commit_ms dedup_keys" per epoch
    python3 - "$name.process.log" >"$OUT/soak-$name-epochs.tsv" <<'PY'
import re, sys, datetime
pat = re.compile(r"^(\S+) \S+ process: info: epoch (\d+): .*batch (\d+) ms, commit (\d+) ms;.*dedup (\d+) keys")
for line in open(sys.argv[1]):
    m = pat.match(line)
    if m:
        t = datetime.datetime.strptime(m[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        print(int(t.timestamp() * 1000), m[2], m[3], m[4], m[5])
PY
    local md=$name/lake/warehouse/wiki/bronze_recentchange/metadata
    echo "$name: $(wc -l <"$OUT/soak-$name-epochs.tsv") epochs;" \
         "bronze metadata dir $(ls "$md" | wc -l) files, newest metadata.json $(ls -t "$md"/*.metadata.json | head -1 | xargs stat -c %s) B;" \
         "lake $(du -sm "$name/lake" | cut -f1) MB" | tee "$OUT/soak-$name.summary"
}
for r in ${SOAK_RUNS:-raw maint}; do
    case $r in
    raw) run raw "$RAW_S" 0 ;;
    maint) run maint "$MAX_S" 1 ;;
    esac
done
if [ -f perf-soak.data ]; then
    wait # the perf recorder
    perf report -i perf-soak.data --stdio --no-children --sort symbol --percent-limit 0.7 -g none 2>/dev/null |
        grep -v '^$' >"$OUT/perf-soak-flat.txt" || true
    perf report -i perf-soak.data --stdio --children --sort symbol --percent-limit 3 -g none 2>/dev/null |
        grep -v '^$' >"$OUT/perf-soak-children.txt" || true
fi
