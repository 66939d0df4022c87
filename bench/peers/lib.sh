# lib.sh — helpers shared by bench/peers.sh and the scripts in bench/peers/
# (sourced, never run). They drive the `freshet` binary named by $BIN and
# write everything under the caller's scratch directory; nothing here talks
# to anything but 127.0.0.1.
#
#   fr_gen OUT SEED COUNT KIND    the generator: `freshet feed --dump` with
#                                 the rates of a realistic or a clean stream
#   fr_import_file NDJSON DATA    `ingest --file` into DATA's log (the way to
#                                 load a file, issue 32); prints "wall_s cpu_s rss_kb records"
#   fr_ingest_file NDJSON DATA    the old path: feed --file --close-at-end +
#                                 ingest over loopback SSE into DATA's log;
#                                 prints "wall_s cpu_s rss_kb records"
#   fr_timev LOG                  "wall_s cpu_s rss_kb" from a `time -v` log
#   fr_log_end DATA               records in DATA's log (all partitions)

# The scripts cd into their scratch directories: a relative BIN (e.g.
# build/release/freshet) would then name nothing there, and the live run's
# processor would fail to start with no more than a missing /proc entry.
if [[ "${BIN:-}" == */* ]]; then
    BIN=$(realpath "$BIN")
fi

# Event time of position 0 for every generated stream: fixed and in the
# past, so the files are reproducible and no event is "future" for ingest.
FR_GEN_START=${FR_GEN_START:-2026-11-01T00:00:00Z}

# The generator. Both kinds keep freshet feed's calibrated content (107
# wikis, 15 scripts, real field sets) and its default canary rate (1 in
# 10,000; ingest drops canaries). Malformed records use every kind except
# `oversize` (1.1 MB records that ingest discards before the log: they
# would only add ~100 MB of bytes no engine keeps).
#   realistic: 2 % duplicates (within 1,000 positions), 0.5 % late
#              (uniform 1 s .. 15 min behind), 1 % out of order (<= 5 s),
#              0.1 % malformed.
#   clean:     the same minus late events: out-of-order shifts stay within
#              the 2-minute lateness and duplicates within 25 s, so batch
#              and streaming semantics agree (no row is late).
FR_MALFORMED_KINDS=truncated,missing_meta_id,missing_meta_dt,missing_wiki,missing_type,namespace_string,bot_string,meta_dt_not_date,meta_id_not_uuid,type_invalid
fr_gen() {
    local out=$1 seed=$2 count=$3 kind=$4
    local faults=(--dup-rate 0.02 --ooo-rate 0.01 --malformed-rate 0.001
                  --malformed-kinds "$FR_MALFORMED_KINDS")
    if [ "$kind" = realistic ]; then
        faults+=(--late-rate 0.005 --late-random --late-ms 900000)
    fi
    "$BIN" feed --dump --synthetic --seed "$seed" --count "$count" --start "$FR_GEN_START" \
        --event-rate 40 "${faults[@]}" >"$out"
}

fr_log_end() {
    "$BIN" --data "$1" log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null ||
        echo 0
}

fr_timev() {
    awk -F': ' '
        /Elapsed \(wall clock\)/ { n = split($2, a, ":"); w = (n == 3) ? a[1]*3600 + a[2]*60 + a[3] : a[1]*60 + a[2] }
        /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident set size/ { r = $2 }
        END { printf "%.2f %.2f %d\n", w, u + s, r }' "$1"
}

# Import NDJSON into DATA's log with `freshet ingest --file`: wall, CPU and
# peak RSS of the whole command (it exits once every record is durable).
fr_import_file() {
    local file=$1 data=$2 tag=${3:-import}
    /usr/bin/time -v -o "$tag.time" "$BIN" --data "$data" ingest --file "$file" 2>"$tag.log" ||
        { echo "fr_import_file: $(tail -3 "$tag.log")" >&2; return 1; }
    read -r w cpu rss < <(fr_timev "$tag.time")
    echo "$w $cpu $rss $(fr_log_end "$data")"
}

# Ingest NDJSON into DATA's log through the SSE path (feed over loopback).
# Wall time runs from ingest's start until it has the stream's last event;
# CPU and peak RSS are ingest's own (GNU time), the feed excluded.
fr_ingest_file() {
    local file=$1 data=$2 tag=${3:-ingest}
    "$BIN" feed --listen 127.0.0.1:0 --file "$file" --close-at-end >"$tag.feed.out" 2>"$tag.feed.log" &
    local feed=$!
    local url=""
    # Up to 5 minutes: the feed reads the whole file before it listens, and
    # a loaded machine made 30 s too short (the soak of 2026-12-02).
    for _ in $(seq 3000); do
        url=$(awk '/^listening/ {print $2; exit}' "$tag.feed.out" 2>/dev/null)
        [ -n "$url" ] && break
        sleep 0.1
    done
    if [ -z "$url" ]; then
        echo "fr_ingest_file: the feed did not listen within 5 minutes" >&2
        kill "$feed" 2>/dev/null || true
        return 1
    fi
    local t0 t1 n ended
    t0=$(date +%s.%N)
    /usr/bin/time -v -o "$tag.time" "$BIN" --data "$data" --set ingest.stall_timeout_s=5 \
        ingest --source "$url" 2>"$tag.log" &
    local timer=$!
    while :; do
        ended=$(sed -n 's/.*stream ended after \([0-9]*\) events (closed by server).*/\1/p' "$tag.log" 2>/dev/null | head -1)
        [ -n "$ended" ] && break
        kill -0 "$timer" 2>/dev/null || { echo "ingest died: $(tail -3 "$tag.log")" >&2; return 1; }
        sleep 0.05
    done
    # The wall time ends at ingest's own timestamp of the stream's end (all
    # events received; appended and made durable by the group commit within
    # log.fsync_interval_ms, 50 ms). `ended` counts canaries too (ingest
    # drops them), so the log is complete once its end stops moving.
    t1=$(date -d "$(grep -m1 'stream ended after' "$tag.log" | cut -d' ' -f1)" +%s.%N)
    local prev=-1 same=0
    while [ "$same" -lt 3 ]; do
        n=$(fr_log_end "$data")
        if [ "$n" = "$prev" ]; then same=$((same + 1)); else same=0; prev=$n; fi
        sleep 0.1
    done
    kill -TERM "$(pgrep -P "$timer")" 2>/dev/null || true
    wait "$timer" || true
    kill -TERM "$feed" 2>/dev/null || true
    wait "$feed" 2>/dev/null || true
    read -r _ cpu rss < <(fr_timev "$tag.time")
    echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') $cpu $rss $n"
}
