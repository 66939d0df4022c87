#!/usr/bin/env bash
# terminal.sh — what a person sees in the terminal of `freshet demo`
# (issue 33, ADR 0055; ctest label integration).
#
# `freshet demo` runs on loopback ports of its own, as a person runs it
# (default verbosity), until it has printed six status lines (a minute at
# one every 10 s; waited for, bounded), then gets Ctrl-C (SIGINT). Checks:
#   - the lines printed in the first minute, counted from the first line's
#     own timestamp: at most 10 (the three "where to look" lines and six
#     status lines; the demo printed about 140 a minute before);
#   - the URLs line names the dashboard and the explorer at serve.listen,
#     and both answer 200 while the demo runs; the data line names the
#     data directory; the gold line says when windows settle;
#   - no per-epoch or per-stage line, and nothing that did not come through
#     freshet's logger (every line: time, freshet[pid], component, level),
#     so libmicrohttpd's own messages (e.g. "Closing connection") are gone;
#   - each status line counts the data-quality outcomes (duplicates, late,
#     dead letters) and its event total grows;
#   - the stop is two lines, and the exit status 0.
# Then `freshet -v demo` for two status lines: the per-epoch lines are back.
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-terminal.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 -- "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
fail() { echo "FAIL: $*"; echo "--- demo.out"; head -40 demo.out 2>/dev/null; echo "0 passed, 1 failed"; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
passed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }

# run_demo OUT NSTATUS [global options...]: demo until NSTATUS status lines, then SIGINT.
run_demo() {
    local out=$1 nstatus=$2; shift 2
    serve_port=$(free_port); feed_port=$(free_port)
    "$BIN" --data "$work/data-$out" --set serve.listen=127.0.0.1:$serve_port \
        --set demo.feed_listen=127.0.0.1:$feed_port --set demo.rate=100 "$@" demo >"$out" 2>&1 &
    demo_pid=$!; pids+=($demo_pid)
    for _ in $(seq 1500); do # at most 150 s
        [ "$(grep -c ' events: ' "$out" || true)" -ge "$nstatus" ] && break
        kill -0 "$demo_pid" 2>/dev/null || fail "demo exited early"
        sleep 0.1
    done
    [ "$(grep -c ' events: ' "$out" || true)" -ge "$nstatus" ] || fail "no $nstatus status lines within 150 s"
}

run_demo demo.out 6
# While it runs, the URLs it printed answer.
urls=$(grep -m1 ' demo: info: dashboard http://' demo.out) || fail "no dashboard/explorer line"
dash=$(sed -E 's/.*dashboard (http:[^ ]+) .*/\1/' <<<"$urls")
expl=$(sed -E 's/.*explorer (http:[^ ]+).*/\1/' <<<"$urls")
[ "$dash" = "http://127.0.0.1:$serve_port/" ] && [ "$expl" = "http://127.0.0.1:$serve_port/explorer" ] ||
    fail "the URLs line names $dash and $expl, serve listens on $serve_port"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$dash")" = 200 ] &&
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$expl")" = 200 ] || fail "the printed URLs do not answer 200"
ok "the URLs line names the dashboard and explorer, and both answer"
kill -INT "$demo_pid"
for _ in $(seq 300); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.1; done
set +e; wait "$demo_pid"; rc=$?; set -e
[ "$rc" = 0 ] || fail "demo exited $rc on Ctrl-C"
ok "demo stops with status 0 on Ctrl-C"

grep -q " demo: info: data $work/data-demo.out · stop with Ctrl-C" demo.out || fail "no data directory / how to stop line"
grep -q " demo: info: the first gold windows settle around [0-9:]* UTC" demo.out || fail "no gold settle line"
ok "the start says where the data is, how to stop and when gold settles"

# Every line through freshet's logger.
bad=$(grep -Ev '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z freshet\[[0-9]+\] [a-z]+: (error|warn|info|debug): ' demo.out || true)
[ -z "$bad" ] || fail "lines not from freshet's logger: $bad"
ok "every line has a time, the pid, a component and a level"
! grep -Eq 'epoch [0-9]+|started (feed|ingest|process|serve)|listening|Closing connection' demo.out ||
    fail "per-epoch, per-stage or library lines at default verbosity: $(grep -Em3 'epoch [0-9]+|started|listening|Closing' demo.out)"
ok "no per-epoch, per-stage or raw library lines"

# Lines per minute, from the lines' own timestamps.
per_min=$(python3 - demo.out <<'EOF'
import re, sys, datetime
ts = []
for line in open(sys.argv[1]):
    m = re.match(r'(\S+)Z ', line)
    ts.append(datetime.datetime.fromisoformat(m.group(1)))
print(sum(1 for t in ts if (t - ts[0]).total_seconds() < 60))
EOF
)
total=$(wc -l <demo.out)
echo "lines in the first minute: $per_min; in all: $total"
[ "$per_min" -le 10 ] || fail "$per_min lines in the first minute (at most 10 wanted)"
ok "$per_min lines in the first minute"

# The status lines count outcomes and move.
python3 - demo.out <<'EOF' || fail "status lines do not count the outcomes, or the totals do not grow"
import re, sys
lines = [l for l in open(sys.argv[1]) if ' events: ' in l]
pat = re.compile(r'ingest (up|DOWN) .* process (up|DOWN) .* freshness .* watermark lag .* behind .* '
                 r'([0-9,]+) events: ([0-9,]+) silver, ([0-9,]+) duplicates, ([0-9,]+) late, ([0-9,]+) dead letters')
ev = []
for l in lines:
    m = pat.search(l)
    assert m, l
    ev.append(int(m.group(3).replace(',', '')))
    dup, late, dlq = (int(m.group(i).replace(',', '')) for i in (5, 6, 7))
assert ev == sorted(ev) and ev[-1] > ev[0], ev
assert dup > 0 and late > 0 and dlq > 0, (dup, late, dlq)  # the demo feed makes all three
print('status lines:', len(lines), 'events', ev)
EOF
ok "each status line counts duplicates, late events and dead letters; the totals grow"
[ "$(grep -c ' demo: info: stop' demo.out)" = 2 ] || fail "the stop is not two lines"
ok "the stop is two lines"

# -v: the per-epoch lines are back.
run_demo demo-v.out 1 -v
kill -INT "$demo_pid"
for _ in $(seq 300); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.1; done
wait "$demo_pid" || true
grep -Eq 'process: info: epoch [0-9]+: ' demo-v.out && grep -q 'up: debug: started process' demo-v.out ||
    fail "-v does not show the per-epoch and per-stage lines"
ok "-v shows the per-epoch and per-stage lines ($(wc -l <demo-v.out) lines)"

echo "$passed passed, 0 failed"
