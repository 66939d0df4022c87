#!/usr/bin/env bash
# ingest_since.sh — `ingest --since`, retention gaps and the overlap rule,
# against a real `freshet feed` on 127.0.0.1 (issue 32, items 1 and 5):
#   A. --since mid-stream: the first record is at or after since, the log
#      holds exactly the feed's non-canary events from since on (its truth
#      file and, independently, `feed --dump`), no gap is reported; a second
#      `ingest --since` on that log is refused and leaves the log unchanged.
#   B. --since older than the feed's history (--history-from): a retention
#      gap "events between X and Y may be lost" with X = since and Y = the
#      first retained event, counted in ingest_retention_gaps_total
#      (scraped from `freshet serve`'s /metrics).
#   C. a resume older than the feed's history: the same report on resume.
#   D. the overlap rule: a recorded stream carrying an exact copy of an
#      event in the same millisecond keeps the copy (not a resume); resumes
#      (feed --overlap re-sends 10 events before the position on every
#      reconnect) still skip every re-delivered event, copy included.
# Loopback only. Usage: ingest_since.sh
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
DATA=${FR_SHARED_DIR:-/work/shared}/data/wikimedia
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-since.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
passed=0; failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

T0=2026-11-01T00:00:00Z
T0_MS=1793491200000
common_feed=(--synthetic --seed 5 --start "$T0" --event-rate 100 --canary-rate 0.01 --close-at-end)
extra=()
ing_flags=(--set ingest.backoff_min_ms=50 --set ingest.backoff_max_ms=200 --set ingest.stall_timeout_s=2
           --set ingest.status_interval_s=1)

start_feed() { # name, flags...: sets url
    local name=$1; shift
    "$BIN" feed --listen 127.0.0.1:0 "$@" --truth "$name.truth.json" >"$name.out" 2>"$name.log" &
    feed_pid=$!; pids+=("$feed_pid")
    url=""
    for _ in $(seq 100); do grep -q '^listening' "$name.out" 2>/dev/null && break; sleep 0.1; done
    url=$(awk '/^listening/ {print $2; exit}' "$name.out")
    [ -n "$url" ] || { echo "feed $name did not start"; cat "$name.log"; exit 1; }
}
stop_feed() { kill -TERM "$feed_pid"; wait "$feed_pid" || { echo "feed did not exit cleanly"; exit 1; }; }
log_end() {
    "$BIN" --data "$1" log list --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(p["end_offset"] for p in (d if isinstance(d,list) else d.get("partitions",[]))))'
}
run_ingest() { # data dir, log file, args...: runs until the log stops growing, then SIGTERM
    local data=$1 logf=$2; shift 2
    "$BIN" --data "$data" "${ing_flags[@]}" ${extra[@]+"${extra[@]}"} ingest "$@" 2>>"$logf" &
    local ip=$!
    local prev=-1 still=0 i
    for i in $(seq 60); do
        sleep 0.5
        kill -0 "$ip" 2>/dev/null || break
        local end; end=$(log_end "$data")
        if [ "$end" = "$prev" ] && [ "$end" != 0 ]; then still=$((still + 1)); else still=0; fi
        prev=$end
        [ "$still" -ge 4 ] && break
    done
    [ "$i" -lt 60 ] || bad "$data: the log was still growing after 30 s ($prev records)"
    kill -TERM "$ip" 2>/dev/null || true
    wait "$ip" || { echo "ingest exited with an error"; tail -5 "$logf"; return 1; }
}

# ---- A: --since mid-stream ------------------------------------------------
SINCE_A=$((T0_MS + 20000)) # position 2000 of 6000
start_feed a "${common_feed[@]}" --count 6000
run_ingest "$work/a" a.ingest.log --source "$url" --since "$SINCE_A"
stop_feed
"$BIN" feed --dump "${common_feed[@]}" --count 6000 >a.sent.ndjson
"$BIN" --data "$work/a" log dump --topic recentchange >a.log.ndjson
if python3 - "$SINCE_A" <<'PY'
import json, sys, datetime
since = int(sys.argv[1])
def ms(dt):
    return int(datetime.datetime.fromisoformat(dt.replace("Z", "+00:00")).timestamp() * 1000)
truth = json.load(open("a.truth.json"))
tev = truth["events"]
want = [e[1] for e in tev if not (len(e) > 3 and "canary" in e[3:])]
dump = []
for line in open("a.sent.ndjson"):
    o = json.loads(line)
    if o["meta"].get("domain") != "canary" and ms(o["meta"]["dt"]) >= since:
        dump.append(o["meta"]["id"])
got = []
first = None
for line in open("a.log.ndjson"):
    r = json.loads(line)
    p = r["payload"] if isinstance(r["payload"], dict) else json.loads(r["payload"])
    got.append(p["meta"]["id"])
    t = ms(p["meta"]["dt"])
    first = t if first is None else min(first, t)
errs = []
if min(e[2] for e in tev) < since: errs.append("the feed sent an event before since")
if first is None or first < since: errs.append(f"first record {first} before since {since}")
if len(got) != len(want): errs.append(f"log holds {len(got)} records, the truth file {len(want)} non-canary events")
if sorted(got) != sorted(want): errs.append("log ids differ from the truth file's")
if sorted(got) != sorted(dump): errs.append(f"log ids differ from feed --dump's events at/after since ({len(dump)})")
print(f"A: since {since}, first record {first}, log {len(got)}, truth non-canary {len(want)} "
      f"(positions sent {truth['positions_sent']}, canaries {truth['summary']['canary']}), dump from since {len(dump)}")
for e in errs: print("  " + e)
sys.exit(1 if errs else 0)
PY
then ok "A: --since mid-stream: first record at/after since, count equals the truth file"
else bad "A: --since mid-stream"; fi
if grep -q 'may be lost' a.ingest.log; then bad "A: a gap was reported where the feed had the history"; else ok "A: no gap reported"; fi
before=$(log_end "$work/a")
set +e
"$BIN" --data "$work/a" ingest --source "$url" --since 1h 2>a.refuse.log
rc=$?
set -e
if [ "$rc" = 2 ] && grep -q "already holds records" a.refuse.log && [ "$(log_end "$work/a")" = "$before" ]; then
    ok "A: --since on a log with records is refused (exit 2), log unchanged"
else bad "A: --since on a non-empty log: exit $rc, $(cat a.refuse.log)"; fi

# ---- B: --since older than the feed's history -------------------------------
HIST_B=$((T0_MS + 30000))  # position 3000
SINCE_B=$((T0_MS + 10000))
start_feed b "${common_feed[@]}" --count 6000 --history-from "$HIST_B"
extra=(--set ingest.gap_tolerance_ms=2000)
run_ingest "$work/b" b.ingest.log --source "$url" --since "$SINCE_B"
extra=()
stop_feed
first_b=$(python3 -c 'import json; t=json.load(open("b.truth.json")); print(min(e[2] for e in t["events"]))')
from_b=$(python3 -c "import datetime,sys; print(datetime.datetime.fromtimestamp($SINCE_B/1000, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.')+'%03dZ' % ($SINCE_B%1000))")
to_b=$(python3 -c "import datetime,sys; print(datetime.datetime.fromtimestamp($first_b/1000, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.')+'%03dZ' % ($first_b%1000))")
if grep -q "events between $from_b and $to_b may be lost" b.ingest.log; then
    ok "B: gap reported: events between $from_b and $to_b may be lost"
else bad "B: no gap line for $from_b .. $to_b"; grep -i gap b.ingest.log | head -3; fi
# The metric, as Prometheus would scrape it.
"$BIN" --data "$work/b" serve --listen 127.0.0.1:0 >b.serve.out 2>b.serve.log &
serve_pid=$!; pids+=("$serve_pid")
for _ in $(seq 100); do grep -q '^listening' b.serve.out 2>/dev/null && break; sleep 0.1; done
surl=$(awk '/^listening/ {print $2; exit}' b.serve.out | sed 's|/$||')
metrics=$(curl -sf "$surl/metrics" || true)
kill -TERM "$serve_pid"; wait "$serve_pid" || true
gaps=$(printf '%s\n' "$metrics" | awk '$1=="freshet_ingest_retention_gaps_total" {print $2}')
gto=$(printf '%s\n' "$metrics" | awk '$1=="freshet_ingest_retention_gap_to_timestamp_seconds" {print $2}')
if [ "$gaps" = 1 ] && python3 -c "import sys; sys.exit(0 if abs(float('$gto') - $first_b/1000) < 0.002 else 1)"; then
    ok "B: metric freshet_ingest_retention_gaps_total 1, gap end $gto"
else bad "B: metric gaps_total '$gaps', gap end '$gto'"; fi

# ---- C: a resume older than the feed's history -------------------------------
start_feed c1 "${common_feed[@]}" --count 3000
run_ingest "$work/c" c.ingest.log --source "$url"
stop_feed
HIST_C=$((T0_MS + 45000)) # position 4500; the log ends near position 2999
start_feed c2 "${common_feed[@]}" --count 6000 --history-from "$HIST_C"
"$BIN" --data "$work/c" --set ingest.gap_tolerance_ms=2000 "${ing_flags[@]}" ingest --source "$url" 2>>c.ingest.log &
ip=$!
for _ in $(seq 200); do [ "$(log_end "$work/c")" -ge 4400 ] && break; sleep 0.2; done
sleep 1
kill -TERM "$ip"; wait "$ip" || bad "C: ingest exited with an error"
stop_feed
# X: the last stored event (the resume position: its id minus the 1 ms rewind);
# Y: the first event of the first connection to the second feed.
fmt='import datetime,sys; t=int(sys.argv[1]); print(datetime.datetime.fromtimestamp(t//1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t%1000))'
from_c=$(python3 -c "$fmt" "$(python3 -c 'import json; t=json.load(open("c1.truth.json")); print(max(e[2] for e in t["events"]))')")
to_c=$(python3 -c "$fmt" "$(python3 -c 'import json; t=json.load(open("c2.truth.json")); c=t["connections"][0]; print([e[2] for e in t["events"] if e[0]==c["start"]][0])')")
if grep -q "retention gap: .* events between $from_c and $to_c may be lost" c.ingest.log; then
    ok "C: resume past the source's history reported: events between $from_c and $to_c may be lost"
else bad "C: no gap on resume"; grep -i "gap\|resuming" c.ingest.log | head -5; fi

# ---- D: the overlap rule --------------------------------------------------
# 40 recorded events; event 30 appears twice in a row: same bytes, same millisecond, same id.
python3 - "$DATA/gokulportfolio-sample_events.jsonl" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1], encoding="utf-8") if l.strip()][:40]
out = lines[:31] + [lines[30]] + lines[31:]
open("d.ndjson", "w", encoding="utf-8").write("".join(out))
PY
start_feed d --file d.ndjson --close-at-end --overlap 10
run_ingest "$work/d" d.ingest.log --source "$url"
stop_feed
"$BIN" --data "$work/d" log dump --topic recentchange >d.log.ndjson
# Every event sent on a connection after the first is a re-delivery of a stored one.
conns=$(python3 -c 'import json; t=json.load(open("d.truth.json")); c=t["connections"]; print(len(c), sum(x["sent"] for x in c[1:]))')
overlap=$(grep 'canaries dropped' d.ingest.log | tail -1 | sed -E 's/.* ([0-9]+) re-delivered.*/\1/')
if python3 - "$overlap" $conns <<'PY'
import json, sys, collections
skipped, nconns, resent = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def canon(s):
    return json.dumps(json.loads(s), sort_keys=True, ensure_ascii=False)
sent = collections.Counter(canon(l) for l in open("d.ndjson", encoding="utf-8") if l.strip())
logged = collections.Counter()
for line in open("d.log.ndjson", encoding="utf-8"):
    p = json.loads(line)["payload"]
    logged[canon(p if isinstance(p, str) else json.dumps(p))] += 1
copies = [k for k, n in sent.items() if n == 2]
print(f"D: {sum(sent.values())} events sent ({len(copies)} exact copy pair), log {sum(logged.values())}, "
      f"connections {nconns}, events sent on resumes {resent}, skipped as overlap {skipped}")
errs = []
if logged != sent: errs.append(f"log differs from the stream: missing {sum((sent - logged).values())}, extra {sum((logged - sent).values())}")
if len(copies) != 1 or logged[copies[0]] != 2: errs.append("the exact copy is not stored twice")
if nconns < 2 or resent == 0: errs.append("no resume happened")
# All of them are skipped (ingest may stop before reading the last
# connection's events: at most 11 fewer, the feed's 10 plus the rewound one).
if not (resent - 11 <= skipped <= resent): errs.append(f"{skipped} of {resent} re-sent events were skipped")
for e in errs: print("  " + e)
sys.exit(1 if errs else 0)
PY
then ok "D: the same-millisecond copy is kept; re-delivered events after each resume are skipped"
else bad "D: overlap rule"; fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
