#!/usr/bin/env bash
# status.sh — `freshet status` as a person and a script use it (issue 33;
# ctest label integration). feed + ingest + process run by hand on
# loopback; status is read:
#   1. on a data directory where nothing ran: exit 0, both stages "never
#      ran here", "no lake yet"; --json says not present, rates null;
#   2. while the pipeline runs: --json has both stages up with the pids this
#      script started, events and records per second above 0, a freshness,
#      and silver, duplicate, late and dead-letter counts above 0 (the feed
#      makes all of them), and the lake's tables;
#   3. --watch in tmux (a private tmux server): the screen shows the stages
#      and the tables, fits in 45 rows, is redrawn in place (a later screen
#      has a newer time and still one header), and Ctrl-C ends it;
#   4. with the processor stopped: it shows down with the same pid, and
#      every table's rows, files and bytes equal `freshet tables --json`'s,
#      and the silver total of the stats file equals the lake's silver rows;
#   5. with everything stopped: both down, rates 0.
# The other topologies (S3, REST, Kafka) are in topologies.sh; the group in
# tests/browser/history.mjs.
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
command -v tmux >/dev/null || { echo "skip: tmux not installed (scripts/setup.sh --test)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-status.XXXXXX")
sock="fr-status-$$"
pids=()
cleanup() {
    tmux -L "$sock" kill-server 2>/dev/null || true
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
fail() { echo "FAIL: $*"; for f in *.log; do echo "--- $f"; tail -5 "$f"; done; echo "0 passed, 1 failed"; exit 1; }
passed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
D=(--data "$work/data")
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# ---- 1. nothing ran ----------------------------------------------------------
"$BIN" "${D[@]}" status >s0.txt || fail "status on an empty directory exited $?"
[ "$(grep -c 'never ran here' s0.txt)" = 2 ] && grep -q '^no lake yet' s0.txt ||
    fail "status on an empty directory: $(cat s0.txt)"
"$BIN" "${D[@]}" status --json >s0.json
[ "$(json s0.json 'not d["stages"]["ingest"]["present"] and not d["stages"]["process"]["present"] and d["tables"] is None and d["rates"]["events_per_s"] is None and d["freshness_s"] is None')" = True ] ||
    fail "status --json on an empty directory: $(cat s0.json)"
[ ! -e data/lake/catalog.db ] || fail "status created a catalog"
ok "an empty directory: both stages never ran, no lake, nothing created"

# ---- 2. running --------------------------------------------------------------
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 5 --rate 200 --dup-rate 0.03 --late-rate 0.02 \
    --late-ms 300000 --malformed-rate 0.01 >feed.out 2>feed.log &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || fail "feed did not start"
"$BIN" "${D[@]}" ingest --source "$url" 2>ingest.log & ingest_pid=$!; pids+=($ingest_pid)
"$BIN" "${D[@]}" --set process.trigger_ms=300 process 2>process.log & proc_pid=$!; pids+=($proc_pid)
for _ in $(seq 300); do
    "$BIN" "${D[@]}" status --json >s1.json 2>s1.err || fail "status --json while running exited $?"
    [ "$(json s1.json 'd["totals"]["epochs"] >= 5 and d["totals"]["late"] > 0 and d["totals"]["dlq"] > 0')" = True ] && break
    sleep 0.2
done
python3 - s1.json "$ingest_pid" "$proc_pid" <<'EOF' || fail "status --json while running: $(cat s1.json)"
import json, sys
d = json.load(open(sys.argv[1]))
i, p = d["stages"]["ingest"], d["stages"]["process"]
assert i["up"] and i["pid"] == int(sys.argv[2]), i
assert p["up"] and p["pid"] == int(sys.argv[3]) and not p["group"], p
assert d["rates"]["events_per_s"] > 0 and d["rates"]["records_per_s"] > 0, d["rates"]
assert d["freshness_s"] is not None and 0 <= d["freshness_s"] < 120, d["freshness_s"]
assert d["watermark_lag_s"] is not None and d["offsets_behind"] is not None
t = d["totals"]
assert t["silver"] > 0 and t["duplicate"] > 0 and t["late"] > 0 and t["dlq"] > 0, t
names = {x["name"]: x for x in d["tables"]}
assert names["silver_recentchange"]["rows"] > 0 and names["silver_recentchange"]["files"] > 0, names
print("running:", d["rates"], t)
EOF
"$BIN" "${D[@]}" status >s1.txt
grep -Eq "^ingest +up +$ingest_pid " s1.txt && grep -Eq "^process +up +$proc_pid " s1.txt &&
    grep -Eq '^silver_recentchange +[0-9,]+ +[0-9]+ +[0-9.]+ (B|KiB|MiB)$' s1.txt ||
    fail "status while running: $(cat s1.txt)"
ok "while running: both stages up with their pids, rates, freshness, outcome counts and tables"

# ---- 3. --watch in tmux ------------------------------------------------------
tmux -L "$sock" new-session -d -s st -x 110 -y 45 "$BIN --data $work/data status --watch --interval 1"
screen() { tmux -L "$sock" capture-pane -p -t st; }
for _ in $(seq 200); do
    screen >w1.txt 2>/dev/null || true
    grep -q '^process  *up' w1.txt && grep -q '^silver_recentchange' w1.txt && break
    sleep 0.1
done
grep -q '^process  *up' w1.txt && grep -q '^silver_recentchange' w1.txt || fail "watch screen: $(cat w1.txt)"
t1=$(awk '/^freshet status/ {print $4}' w1.txt)
for _ in $(seq 300); do
    screen >w2.txt 2>/dev/null || true
    t2=$(awk '/^freshet status/ {print $4}' w2.txt)
    [ -n "$t2" ] && [ "$t2" != "$t1" ] && break
    sleep 0.1
done
[ -n "$t2" ] && [ "$t2" != "$t1" ] || fail "the watch screen was not redrawn: $(cat w2.txt)"
[ "$(grep -c '^freshet status' w2.txt)" = 1 ] || fail "the redraw scrolled instead of redrawing in place: $(cat w2.txt)"
grep -q 'every 1 s · Ctrl-C to stop' w2.txt || fail "the watch screen does not say how to stop"
[ "$(grep -c . w2.txt)" -le 45 ] || fail "the watch screen does not fit 45 rows"
cp w2.txt watch-screen.txt
echo "--- the watch screen"; cat w2.txt
tmux -L "$sock" send-keys -t st C-c
for _ in $(seq 100); do tmux -L "$sock" has-session -t st 2>/dev/null || break; sleep 0.1; done
! tmux -L "$sock" has-session -t st 2>/dev/null || fail "Ctrl-C did not end status --watch"
ok "--watch redraws in place ($t1 then $t2), fits the screen, Ctrl-C ends it"

# ---- 4. the processor stopped ------------------------------------------------
kill -TERM "$proc_pid"; wait "$proc_pid" || fail "process exited $? on SIGTERM"
"$BIN" "${D[@]}" status --json >s2.json
"$BIN" "${D[@]}" tables --json >t2.json
python3 - s2.json t2.json "$proc_pid" <<'EOF' || fail "status after the processor stopped: $(cat s2.json)"
import json, sys
d, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
p = d["stages"]["process"]
assert not p["up"] and p["pid"] == int(sys.argv[3]), p
assert d["stages"]["ingest"]["up"], d["stages"]["ingest"]
mine = {x["name"]: (x["rows"], x["files"], x["bytes"]) for x in d["tables"]}
lake = {x["name"]: (x["records"], x["files"], x["bytes"]) for x in t["tables"]}
assert mine == lake, (mine, lake)
assert d["totals"]["silver"] == lake["silver_recentchange"][0], (d["totals"], lake["silver_recentchange"])
assert d["rates"]["records_per_s"] == 0, d["rates"]
print("tables:", mine)
EOF
"$BIN" "${D[@]}" status >s2.txt
grep -Eq "^process +down +$proc_pid +stopped" s2.txt || fail "status text after the processor stopped: $(cat s2.txt)"
ok "the processor stopped: down with its pid; rows, files and bytes equal tables --json; silver equals the lake's"

# ---- 5. everything stopped ---------------------------------------------------
kill -TERM "$ingest_pid"; wait "$ingest_pid" || fail "ingest exited $? on SIGTERM"
"$BIN" "${D[@]}" status --json >s3.json
[ "$(json s3.json 'not d["stages"]["ingest"]["up"] and not d["stages"]["process"]["up"] and d["rates"]["events_per_s"] == 0')" = True ] ||
    fail "status after everything stopped: $(cat s3.json)"
ok "everything stopped: both down, rates 0"

echo "$passed passed, 0 failed"
