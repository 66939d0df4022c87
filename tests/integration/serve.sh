#!/usr/bin/env bash
# serve.sh — freshet serve against a real pipeline (ctest label integration).
#
# feed + ingest + process + serve, run by hand on loopback ports. Checks the
# documents the dashboard reads (status, live, tables, the event stream), a
# Parquet file of the lake through /lake/ with a range request, and the
# point of the stats files: SIGKILL the processor and /metrics and
# /api/v1/status keep answering, with ingest's figures still moving and the
# processor shown down; SIGKILL serve and a new serve answers with the same
# figures (nothing lives in serve).
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-serve.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
fail() { echo "FAIL: $*"; for f in *.log; do echo "--- $f"; tail -5 "$f"; done; echo "0 passed, 1 failed"; exit 1; }
common=(--data "$work/data" --set process.trigger_ms=200)

"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 3 --rate 300 --dup-rate 0.02 \
    --malformed-rate 0.01 >feed.out 2>feed.log &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || fail "feed did not start"
"$BIN" "${common[@]}" ingest --source "$url" 2>ingest.log & pids+=($!)
"$BIN" "${common[@]}" process 2>process.log & proc_pid=$!; pids+=($proc_pid)
start_serve() {
    "$BIN" "${common[@]}" serve --listen 127.0.0.1:0 >serve.out 2>>serve.log & serve_pid=$!
    pids+=($serve_pid)
    for _ in $(seq 100); do grep -q '^listening' serve.out 2>/dev/null && break; sleep 0.1; done
    base=$(awk '/^listening/ {print $2; exit}' serve.out)
    base=${base%/}
    [ -n "$base" ] || fail "serve did not start"
}
start_serve
jq() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
metric() { curl -sf "$base/metrics" | awk -v m="$1" '$1 == m {v = $2} END {print v}'; }

# Wait for a few epochs.
for _ in $(seq 150); do
    e=$(metric freshet_process_epochs_total || true)
    [ -n "$e" ] && [ "${e%.*}" -ge 3 ] && break
    sleep 0.2
done
[ -n "${e:-}" ] && [ "${e%.*}" -ge 3 ] || fail "no epochs reported in /metrics"
ok=0

# On embedded defaults the processor opens none of the optional libraries
# (docs/adr/0027): their pages are not in its RSS. serve has opened
# libmicrohttpd and ingest libcurl, which shows the probe sees them.
mapped() { grep -qF "/$2" "/proc/$1/maps"; }
for lib in libcurl.so libmicrohttpd.so librdkafka.so libgnutls.so libsnappy.so libcrypto.so; do
    if mapped "$proc_pid" "$lib"; then fail "freshet process on embedded defaults maps $lib"; fi
done
mapped "$serve_pid" libmicrohttpd.so || fail "serve does not map libmicrohttpd (probe broken?)"
mapped "${pids[1]}" libcurl.so || fail "ingest does not map libcurl (probe broken?)"
ok=$((ok + 1))

status=$(curl -sf "$base/api/v1/status")
[ "$(echo "$status" | jq 'd["stages"]["ingest"]["up"] and d["stages"]["process"]["up"]')" = True ] ||
    fail "status: stages not up: $status"
[ "$(echo "$status" | jq 'd["stages"]["process"]["metrics"]["process_records_total"]["silver"] > 0')" = True ] ||
    fail "status: no silver records"
ok=$((ok + 1))

live=$(curl -sf "$base/api/v1/live")
[ "$(echo "$live" | jq 'd["up"] and len(d["view"]["wikis"]) > 0 and d["view"]["epoch"] >= 0')" = True ] ||
    fail "live: no view: ${live:0:300}"
# Enrichment is off here: no stats/topics.json, so "topics" is there and null.
[ "$(echo "$live" | jq '"topics" in d and d["topics"] is None')" = True ] ||
    fail "live: topics is not null with enrichment off: ${live:0:300}"
ok=$((ok + 1))

# The event stream pushes status and live frames.
timeout 3 curl -sN "$base/api/v1/stream" >stream.txt || true
[ "$(grep -c '^event: status' stream.txt)" -ge 2 ] && [ "$(grep -c '^event: live' stream.txt)" -ge 2 ] ||
    fail "stream: fewer than two frames in 3 s"
ok=$((ok + 1))

# A Parquet file of silver through /lake/, whole and by range.
file=$(curl -sf "$base/api/v1/tables" |
    jq '[t for t in d["tables"] if t["name"] == "silver_recentchange"][0]["files"][0]["url"]')
[ -n "$file" ] && [ "$file" != None ] || fail "tables: no silver file"
[ "$(curl -sf -r 0-3 "$base$file")" = PAR1 ] || fail "range 0-3 of $file is not PAR1"
size=$(curl -sfI "$base$file" | awk 'tolower($1) == "content-length:" {print $2+0}')
[ "$(curl -sf -r "$((size - 4))-" "$base$file")" = PAR1 ] || fail "the last 4 bytes of $file are not PAR1"
[ "$(curl -s -o /dev/null -w '%{http_code}' --path-as-is "$base/lake/../stats/ingest.stats")" = 400 ] ||
    fail "/lake/../ was not refused"
ok=$((ok + 1))

# SIGKILL the processor: serve keeps answering with ingest's figures.
before=$(metric freshet_ingest_events_received_total)
kill -9 "$proc_pid"; wait "$proc_pid" 2>/dev/null || true
sleep 1.5
[ "$(metric 'freshet_stage_up{stage="process"}')" = 0 ] || fail "process still shown up after SIGKILL"
[ "$(metric 'freshet_stage_up{stage="ingest"}')" = 1 ] || fail "ingest shown down"
after=$(metric freshet_ingest_events_received_total)
[ "${after%.*}" -gt "${before%.*}" ] || fail "ingest figures stopped moving ($before -> $after)"
[ -n "$(metric freshet_process_epochs_total)" ] || fail "the dead processor's last figures are gone"
status=$(curl -sf "$base/api/v1/status")
[ "$(echo "$status" | jq 'd["stages"]["ingest"]["up"] and not d["stages"]["process"]["up"]')" = True ] ||
    fail "status after the kill: $status"
ok=$((ok + 1))

# SIGKILL serve: a new one shows the same figures.
kill -9 "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
start_serve
[ "$(metric 'freshet_stage_up{stage="ingest"}')" = 1 ] || fail "a restarted serve does not see ingest"
ok=$((ok + 1))
echo "$ok passed, 0 failed"
