#!/usr/bin/env bash
# s3_soak.sh — the S3 maintenance soak (issue 31): a live feed
# (`freshet feed --synthetic --rate RATE`) -> `freshet ingest` ->
# `freshet process` with process.trigger_ms=TRIGGER_MS (100) and its
# warehouse in a bucket of moto's S3 server (lake.warehouse=s3://soak/wh),
# maintenance as shipped (every process.maintain_every_epochs = 100 epochs
# the processor compacts, expires, and every orphans_after_s / 2 removes
# orphans), until the processor has committed EPOCHS (10,000) epochs or
# MAX_S seconds have passed. Two settings differ from the defaults, so that
# what maintenance does shows within the run:
#   maintenance.expire_after_s = EXPIRE_S (60; shipped 900): at 10 epochs
#     per second 900 s would be 9,000 snapshots per table, more than the run
#     makes, and nothing would expire;
#   maintenance.orphans_after_s = 600 (the smallest allowed; shipped 3600):
#     the orphan listing then runs every 300 s.
# The processor reaches moto THROUGH tests/integration/s3_fault_proxy.py
# (no fault rule set): its /__stats counts exactly the processor's S3
# requests, by method and object kind. Everything else this script does
# (the bucket, sampling the tables) goes straight to moto, uncounted.
# The data directories (log, checkpoint, catalog.db) live under $TMPDIR,
# /dev/shm by default as in bench/peers.sh; moto keeps the bucket in its
# own memory.
# Every SAMPLE_S (60) seconds: `freshet tables --json` (direct to moto) ->
# OUT/s3soak-files.tsv "elapsed_s epoch load1 requests then per table
# name=live_files/snapshots_kept"; peak RSS (VmHWM) of the processor,
# ingest, feed, moto and the proxy -> OUT/s3soak-rss.tsv; the proxy's counts
# -> OUT/s3soak-stats-over-time.jsonl. moto's, the proxy's and the feed's
# logs are kept gzipped in OUT whatever happens (moto's lists every request).
# At the end: OUT/s3soak-epochs.tsv ("unix_ms epoch records batch_ms
# commit_ms") from the processor's info lines, OUT/s3soak-maintenance.log,
# OUT/s3soak-stats.json (the proxy's counts), OUT/s3soak-process.log.gz (its
# whole log), OUT/s3soak-machine.txt and
# OUT/s3soak-report.md (bench/s3_soak_report.py: live files over time,
# commit ms first vs last 1,000 epochs, requests per epoch, peak RSS).
# Needs python3 moto (scripts/setup.sh --test). Loopback only.
# usage: BIN=build/release/freshet bench/s3_soak.sh [OUT] [EPOCHS] [MAX_S] [RATE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export BIN=${BIN:-${FR_BUILD_DIR:-$root/build/release}/freshet}
. "$here/peers/lib.sh"
OUT=${1:-$here/out/s3soak}; EPOCHS=${2:-10000}; MAX_S=${3:-3600}; RATE=${4:-1000}
TRIGGER_MS=${TRIGGER_MS:-100}; EXPIRE_S=${EXPIRE_S:-60}; SAMPLE_S=${SAMPLE_S:-60}
export TMPDIR=${TMPDIR:-/dev/shm}
[ -x "$BIN" ] || { echo "s3_soak: no freshet binary at $BIN (make release)" >&2; exit 1; }
python3 -c 'import moto.server' 2>/dev/null || { echo "s3_soak: python3 moto is not installed" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
tmp=$(mktemp -d "$TMPDIR/frbench-s3soak.XXXXXX")
pids=()
# the peers' logs are kept, whatever happens: moto's lists every request
keep_logs() {
    for f in moto proxy feed; do
        [ -f "$tmp/$f.log" ] && gzip -c "$tmp/$f.log" >"$OUT/s3soak-$f.log.gz"
    done
    return 0
}
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; keep_logs; rm -rf "$tmp"' EXIT
cd "$tmp"

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
wait_port() {
    for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
    echo "s3_soak: nothing listens on 127.0.0.1:$1" >&2
    exit 1
}
hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "machine: $(nproc) cores, $(awk '/model name/ {sub(/.*: /, ""); print; exit}' /proc/cpuinfo)," \
         "$(free -g | awk '/Mem:/ {print $2}') GiB, $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "freshet: $BIN, tree $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet -- src 2>/dev/null || echo ' (+ uncommitted src changes)')"
    echo "moto: $(python3 -c 'import moto; print(moto.__version__)'), data dirs under $TMPDIR"
    echo "settings: epochs $EPOCHS, max $MAX_S s, feed $RATE ev/s, process.trigger_ms=$TRIGGER_MS," \
         "maintenance.expire_after_s=$EXPIRE_S, maintenance.orphans_after_s=600, the rest as shipped"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/s3soak-machine.txt"

moto_port=$(free_port)
python3 -m moto.server -H 127.0.0.1 -p "$moto_port" >moto.log 2>&1 &
moto=$!
pids+=("$moto")
proxy_port=$(free_port)
python3 "$root/tests/integration/s3_fault_proxy.py" "$proxy_port" "$moto_port" >proxy.log 2>&1 &
proxy=$!
pids+=("$proxy")
wait_port "$moto_port"
wait_port "$proxy_port"
M=http://127.0.0.1:$moto_port
P=http://127.0.0.1:$proxy_port
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing-secret-value
unset AWS_SESSION_TOKEN
curl -sf -X PUT "$M/soak" >/dev/null || { echo "s3_soak: cannot create the bucket" >&2; exit 1; }

# the live feed (lib.sh's realistic faults, without the late events: the
# synthetic live feed's event time follows the wall clock)
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 31 --rate "$RATE" \
    --dup-rate 0.02 --ooo-rate 0.01 --malformed-rate 0.001 \
    --malformed-kinds "$FR_MALFORMED_KINDS" >feed.out 2>feed.log &
feed=$!
pids+=("$feed")
url=""
for _ in $(seq 300); do
    url=$(awk '/^listening/ {print $2; exit}' feed.out 2>/dev/null)
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { echo "s3_soak: the feed did not listen" >&2; exit 1; }
"$BIN" --data d ingest --source "$url" 2>ingest.log &
ing=$!
pids+=("$ing")

lake=(--set lake.warehouse=s3://soak/wh)
"$BIN" --data d "${lake[@]}" --set "s3.endpoint=$P" --set process.trigger_ms="$TRIGGER_MS" \
    --set maintenance.expire_after_s="$EXPIRE_S" --set maintenance.orphans_after_s=600 \
    process 2>process.log &
proc=$!
pids+=("$proc")

declare -A peak=([process]=0 [ingest]=0 [feed]=0 [moto]=0 [proxy]=0)
sample_rss() {
    local k v
    for k in process ingest feed moto proxy; do
        case $k in
        process) v=$(hwm "$proc") ;; ingest) v=$(hwm "$ing") ;; feed) v=$(hwm "$feed") ;;
        moto) v=$(hwm "$moto") ;; proxy) v=$(hwm "$proxy") ;;
        esac
        [ "${v:-0}" -gt "${peak[$k]}" ] && peak[$k]=$v
    done
    echo "$((SECONDS - t0)) ${peak[process]} ${peak[ingest]} ${peak[feed]} ${peak[moto]} ${peak[proxy]}" \
        >>"$OUT/s3soak-rss.tsv"
}
last_epoch() { { tail -c 4000 process.log | grep -o 'info: epoch [0-9]*:' || true; } | tail -1 | tr -dc 0-9; }
sample_tables() { # the live data files and kept snapshots of every table, straight from moto
    local e
    e=$(last_epoch)
    "$BIN" --data d "${lake[@]}" --set "s3.endpoint=$M" tables --json >tables.json 2>tables.err || {
        echo "s3_soak: freshet tables failed: $(tail -1 tables.err)" >&2
        return 0
    }
    curl -sf "$P/__stats" >stats.json || echo '{"requests": 0}' >stats.json
    { printf '{"elapsed_s": %d, "epoch": %d, "stats": ' "$((SECONDS - t0))" "${e:-0}"; cat stats.json; echo '}'; } |
        tr -d '\n' >>"$OUT/s3soak-stats-over-time.jsonl"
    echo >>"$OUT/s3soak-stats-over-time.jsonl"
    python3 - "$((SECONDS - t0))" "${e:-0}" "$(cut -d' ' -f1 /proc/loadavg)" \
        "$(python3 -c 'import json,sys; print(json.load(open("stats.json"))["requests"])')" \
        <<'PY' >>"$OUT/s3soak-files.tsv"
import json, sys
t = json.load(open("tables.json"))["tables"]
cols = ["%s=%d/%d" % (x["name"], x["files"], len(x["snapshots"])) for x in sorted(t, key=lambda x: x["name"])]
print(" ".join(sys.argv[1:5] + cols))
PY
}

: >"$OUT/s3soak-files.tsv"
: >"$OUT/s3soak-stats-over-time.jsonl"
: >"$OUT/s3soak-rss.tsv"
t0=$SECONDS
sampled=$t0
stop=""
while :; do
    sleep 1
    kill -0 "$proc" 2>/dev/null || { stop="the processor exited"; break; }
    e=$(last_epoch)
    # epochs are numbered from 0: epoch EPOCHS - 1 is the EPOCHS-th
    if [ -n "$e" ] && [ "$e" -ge $((EPOCHS - 1)) ]; then stop="$EPOCHS epochs"; break; fi
    if [ $((SECONDS - t0)) -ge "$MAX_S" ]; then stop="MAX_S = $MAX_S s"; break; fi
    if [ $((SECONDS - sampled)) -ge "$SAMPLE_S" ]; then
        sampled=$SECONDS
        sample_rss
        sample_tables
    fi
done
sample_rss
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/s3soak-machine.txt"
echo "stopped at: $stop after $((SECONDS - t0)) s" | tee -a "$OUT/s3soak-machine.txt"
# SIGTERM: the processor finishes its epoch in flight and exits
kill -TERM "$proc" 2>/dev/null || true
wait "$proc" || echo "s3_soak: the processor exited $?" | tee -a "$OUT/s3soak-machine.txt" >&2
kill -TERM "$ing" "$feed" 2>/dev/null || true
wait "$ing" "$feed" 2>/dev/null || true
sample_tables
curl -sf "$P/__stats" >"$OUT/s3soak-stats.json"
python3 - process.log >"$OUT/s3soak-epochs.tsv" <<'PY'
import re, sys, datetime
pat = re.compile(r"^(\S+) \S+ process: info: epoch (\d+): (\d+) records: .*batch (\d+) ms, commit (\d+) ms;")
for line in open(sys.argv[1]):
    m = pat.match(line)
    if m:
        t = datetime.datetime.strptime(m[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        print(int(t.timestamp() * 1000), m[2], m[3], m[4], m[5])
PY
grep ' process: info: maintenance:' process.log >"$OUT/s3soak-maintenance.log" || true
grep -E ' (warn|error): ' process.log >"$OUT/s3soak-problems.log" || true
cp ingest.log "$OUT/s3soak-ingest.log"
gzip -c process.log >"$OUT/s3soak-process.log.gz"
python3 "$here/s3_soak_report.py" "$OUT" | tee "$OUT/s3soak-report.md"
