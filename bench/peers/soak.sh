#!/usr/bin/env bash
# soak.sh — the hour-three soak, compressed (issue 7): EPOCHS epochs of 10
# records each (a day at one epoch per second is 86,400) run as fast as the
# processor goes, over a log of EPOCHS x 10 realistic events, copied for
# each of these runs (SOAK_RUNS, default "shipped raw"):
#   shipped: the processor as shipped: every process.maintain_every_epochs
#           (100) epochs it compacts its small files and expires snapshots
#           itself; maintenance.expire_after_s=0 and retain_last=50 stand in
#           for the 15 minutes of snapshots a 1-per-second day keeps (at
#           this speed 15 minutes would be ~50,000 epochs); to the end, or
#           MAX_S;
#   raw:    the processor with its maintenance off
#           (process.maintain_every_epochs=0), for RAW_S seconds: what
#           happens when nothing expires or compacts (commit cost grows with
#           history);
#   maint:  the same while a sidecar runs `freshet compact` (compaction,
#           expiry keeping 50 snapshots, orphan removal) every MAINT_S
#           seconds beside it, as docs/adr/0006 allows;
#   paused: every MAINT_EPOCHS epochs the processor is stopped (SIGSTOP),
#           `freshet compact` runs, and it continues (SIGCONT): what the
#           commit cost is when expiry keeps up, as if the processor expired
#           its own snapshots; the epochs in flight at a pause are left out
#           of the figures (OUT/soak-paused-pauses.tsv names them).
# maint and paused stop after MAX_S seconds when the epochs are not done.
# The data directories live under $TMPDIR: bench/peers.sh points it at
# /dev/shm so that the shared virtual disk's fsync latency (6 to 90 ms per
# commit while other jobs ran) does not hide the growth being measured; the
# figures are then CPU and syscall cost. The raw run's last 30 s are
# profiled with perf (FR_PERF=0: not) into OUT/perf-soak-*.txt.
# Writes OUT/soak-RUN-{epochs,rss}.tsv, OUT/soak-RUN-compact.log and
# OUT/soak-RUN.summary, which report.py and plot.py read; with SOAK_VERBOSE=1
# the processor runs with -v and its per-epoch split of the commit time
# ("epoch N commit us: ...") goes to OUT/soak-RUN-commit.log. Every 5 s
# OUT/soak-RUN-files.tsv gets "unix_ms catalog_wal_bytes bronze_metadata_files
# newest_bronze_metadata_bytes load1": the sizes a commit's cost could
# follow, and the machine's 1-minute load average (the engineers sharing it).
# usage: BIN=build/release/freshet bench/peers/soak.sh OUT [EPOCHS] [MAINT_S] [RAW_S] [MAX_S] [MAINT_EPOCHS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
OUT=$(realpath "$1"); EPOCHS=${2:-86400}; MAINT_S=${3:-30}; RAW_S=${4:-300}; MAX_S=${5:-1800}
MAINT_EPOCHS=${6:-500}
mkdir -p "$OUT"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-soak.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"

# Ingest drops the generator's canaries (1 in 10,000, lib.sh): generate
# enough more that the log holds EPOCHS x 10 records (the run of 2026-12-01
# had 77 too few and stopped at 86,394 epochs).
events=$((EPOCHS * 10 + EPOCHS * 10 / 5000 + 10))
fr_gen ev.ndjson 21 "$events" realistic
read -r iw _ _ records < <(fr_ingest_file ev.ndjson base soak-ingest)
rm -f ev.ndjson
echo "soak: $records records in the log (ingest ${iw} s); $EPOCHS epochs of 10 records"

run() { # run NAME SECONDS(0 = to the end) MODE(shipped/raw/maint/paused)
    local name=$1 secs=$2 mode=$3 sets=()
    rm -rf "$name" && mkdir "$name" && cp -a base/log "$name/log"
    case $mode in
    shipped) sets=(--set maintenance.expire_after_s=0 --set maintenance.retain_last=50) ;;
    *) sets=(--set process.maintain_every_epochs=0) ;;
    esac
    local verbose=()
    [ "${SOAK_VERBOSE:-0}" = 1 ] && verbose=(-v)
    "$BIN" "${verbose[@]}" --data "$name" --set process.epoch_max_records=10 "${sets[@]}" process --once \
        2>"$name.process.log" &
    local proc=$!
    pids+=("$proc")
    python3 "$here/rss_sample.py" "$proc" "$OUT/soak-$name-rss.tsv" 1 &
    local sampler=$!
    local t0=$SECONDS next=$MAINT_S next_epoch=$MAINT_EPOCHS profiled=0 last
    : >"$OUT/soak-$name-compact.log"
    : >"$OUT/soak-$name-pauses.tsv"
    : >"$OUT/soak-$name-files.tsv"
    local sampled=-5 bmd=$name/lake/warehouse/wiki/bronze_recentchange/metadata
    compact() { # compact EXPIRE_OLDER_THAN_S
        { echo "# $(date -u +%FT%T.%3NZ)"
          /usr/bin/time -f 'compact wall %e s cpu %U+%S s rss %M KB' "$BIN" --data "$name" compact \
              --expire-older-than "$1" --retain-last 50 --orphans-older-than 120 2>&1 || true
        } >>"$OUT/soak-$name-compact.log"
    }
    while kill -0 "$proc" 2>/dev/null; do
        if [ "$mode" = paused ]; then sleep 0.2; else sleep 1; fi
        if [ $((SECONDS - sampled)) -ge 5 ] && [ -d "$bmd" ]; then
            sampled=$SECONDS
            echo "$(date +%s%3N) $(stat -c %s "$name/lake/catalog.db-wal" 2>/dev/null || echo 0)" \
                 "$(ls "$bmd" | wc -l) $(ls -t "$bmd"/*.metadata.json 2>/dev/null | head -1 | xargs -r stat -c %s)" \
                 "$(cut -d' ' -f1 /proc/loadavg)" \
                 >>"$OUT/soak-$name-files.tsv" || true
        fi
        # The last 30 s of the raw run under perf: where the growing time goes.
        if [ "$mode" = raw ] && [ "$profiled" = 0 ] && [ "${FR_PERF:-1}" = 1 ] && command -v perf >/dev/null &&
           [ "$secs" -ge 60 ] && [ $((SECONDS - t0)) -ge $((secs - 30)) ]; then
            profiled=1
            perf record -q --call-graph dwarf,16384 -F 499 -p "$proc" -o perf-soak.data -- sleep 25 >/dev/null 2>&1 &
        fi
        if [ "$secs" -gt 0 ] && [ $((SECONDS - t0)) -ge "$secs" ]; then
            kill -TERM "$proc"
            break
        fi
        if [ "$mode" = maint ] && [ $((SECONDS - t0)) -ge "$next" ]; then
            next=$((SECONDS - t0 + MAINT_S))
            compact 30
        fi
        if [ "$mode" = paused ]; then
            last=$(tail -c 600 "$name.process.log" | grep -o 'info: epoch [0-9]*' | tail -1 | awk '{print $3}')
            if [ -n "$last" ] && [ "$last" -ge "$next_epoch" ]; then
                next_epoch=$((last + MAINT_EPOCHS))
                kill -STOP "$proc" 2>/dev/null || break
                echo "$((last + 1))" >>"$OUT/soak-$name-pauses.tsv"
                compact 0
                kill -CONT "$proc"
            fi
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
    grep ' process: info: maintenance:' "$name.process.log" >"$OUT/soak-$name-maintenance.log" || true
    grep ' commit us: ' "$name.process.log" >"$OUT/soak-$name-commit.log" || true
    local md=$name/lake/warehouse/wiki/bronze_recentchange/metadata
    echo "$name: $(wc -l <"$OUT/soak-$name-epochs.tsv") epochs;" \
         "bronze metadata dir $(ls "$md" | wc -l) files, newest metadata.json $(ls -t "$md"/*.metadata.json | head -1 | xargs stat -c %s) B;" \
         "lake $(du -sm "$name/lake" | cut -f1) MB" | tee "$OUT/soak-$name.summary"
}
for r in ${SOAK_RUNS:-shipped raw}; do
    case $r in
    shipped) run shipped "$MAX_S" shipped ;;
    raw) run raw "$RAW_S" raw ;;
    maint) run maint "$MAX_S" maint ;;
    paused) run paused "$MAX_S" paused ;;
    esac
    rm -rf "$r"
done
if [ -f perf-soak.data ]; then
    wait # the perf recorder
    perf report -i perf-soak.data --stdio --no-children --sort symbol --percent-limit 0.5 -g none 2>/dev/null |
        grep -E '^ +[0-9.]+%' >"$OUT/perf-soak-flat.txt" || true
    perf report -i perf-soak.data --stdio --children --sort symbol --percent-limit 2 -g none 2>/dev/null |
        grep -E '^ +[0-9.]+% +[0-9.]+%' >"$OUT/perf-soak-children.txt" || true
fi
