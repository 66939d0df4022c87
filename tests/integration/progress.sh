#!/usr/bin/env bash
# progress.sh — progress of long work (issue 32 item 4, core/progress.h) on
# real commands over a real lake: feed → ingest (20,000 events) on 127.0.0.1,
# then `process --once`, `verify`, `rebuild` and `compact`, and `ingest --file`
# of a dumped feed.
#   1. stderr not a terminal: progress lines "N of T UNIT (P%), R UNIT/s,
#      ETA E" with N never going back, T for process = the records in the
#      log, and a final "done, T UNIT in ..." line; `-q` prints none.
#   2. stderr a terminal (tmux, skipped when tmux is missing): one line
#      rewritten in place ("\r\e[K" redraws in the raw output), the pane
#      ends with the single final line.
# Loopback only. Usage: progress.sh
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-progress.XXXXXX")
pids=()
tsock="fr-progress-$$"
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    tmux -L "$tsock" kill-server 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
passed=0; failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
D="$work/data"
fr() { "$BIN" --data "$D" "$@"; }
fast=(--set general.progress_interval_ms=1)

"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 9 --count 20000 --start 2026-11-01T00:00:00Z \
    --event-rate 200 --close-at-end >feed.out 2>feed.log &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { echo "feed did not start"; exit 1; }
"$BIN" --data "$D" --set ingest.backoff_min_ms=50 ingest --source "$url" 2>ingest.log &
ip=$!
records() { fr log list --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(p["end_offset"] for p in (d if isinstance(d,list) else d.get("partitions",[]))))'; }
for _ in $(seq 300); do [ "$(records)" -ge 19900 ] && break; sleep 0.2; done
sleep 1
kill -TERM "$ip"; wait "$ip"
total=$(records)
echo "log records: $total"

# check LOG WHAT UNIT [TOTAL]: progress lines of WHAT in LOG
check() {
    python3 - "$@" <<'PY'
import re, sys
path, what, unit = sys.argv[1:4]
want_total = int(sys.argv[4]) if len(sys.argv) > 4 else None
num = lambda s: int(s.replace(",", ""))
pat = re.compile(what + r": info: ([\d,]+) of ([\d,]+) " + unit +
                 r" \(([\d.]+)%\), ([\d,]+) " + unit + r"/s, ETA (\S+)$")
fin = re.compile(what + r": info: done, ([\d,]+) " + unit + r" in \S+, [\d,]+ " + unit + "/s$")
lines = [l.rstrip("\n") for l in open(path)]
prog = [pat.search(l) for l in lines]
prog = [m for m in prog if m]
done = [fin.search(l) for l in lines]
done = [m for m in done if m]
errs = []
if not prog: errs.append("no progress line")
if len(done) != 1: errs.append(f"{len(done)} final lines")
prev = -1
for m in prog:
    d, t = num(m.group(1)), num(m.group(2))
    if d < prev: errs.append(f"done went back: {prev} -> {d}"); break
    if d > t: errs.append(f"done {d} beyond total {t}"); break
    prev = d
if want_total is not None and prog and num(prog[0].group(2)) != want_total:
    errs.append(f"total {prog[0].group(2)}, the log holds {want_total}")
if want_total is not None and done and num(done[0].group(1)) != want_total:
    errs.append(f"final {done[0].group(1)}, the log holds {want_total}")
print(f"{what}: {len(prog)} progress lines, last: {prog[-1].group(0) if prog else '-'}")
for e in errs: print("  " + e)
sys.exit(1 if errs else 0)
PY
}

fr "${fast[@]}" process --once 2>process.log
if check process.log process records "$total"; then ok "process --once: progress lines, total = the log's $total records"; else bad "process --once"; fi

# ingest --file: bytes of a plain file, its size as the total
"$BIN" feed --dump --synthetic --seed 9 --count 20000 >events.ndjson 2>dump.log
size=$(stat -c %s events.ndjson)
"$BIN" --data "$work/file-data" "${fast[@]}" ingest --file events.ndjson 2>file.log ||
    { bad "ingest --file failed"; tail -3 file.log; }
if check file.log ingest bytes "$size"; then ok "ingest --file: progress lines, total = the file's $size bytes"; else bad "ingest --file"; fi
fr "${fast[@]}" verify >verify.out 2>verify.log || { bad "verify failed"; cat verify.out; }
if check verify.log verify rows; then ok "verify: progress lines"; else bad "verify"; fi
fr "${fast[@]}" rebuild >rebuild.out 2>rebuild.log
if check rebuild.log rebuild rows; then ok "rebuild: progress lines"; else bad "rebuild"; fi
fr "${fast[@]}" compact >compact.out 2>compact.log
if check compact.log compact tables; then ok "compact: progress lines"; else bad "compact"; fi
fr "${fast[@]}" -q verify >/dev/null 2>verify-q.log || bad "verify -q failed"
fr "${fast[@]}" -q rebuild >/dev/null 2>rebuild-q.log || bad "rebuild -q failed"
if grep -Eq "of [0-9,]+ rows|done, " verify-q.log rebuild-q.log; then bad "-q printed progress"; else ok "-q: no progress lines"; fi

# ---- the terminal form, in tmux --------------------------------------------
if ! command -v tmux >/dev/null; then
    echo "skip: tmux not installed (terminal form not tested)"
else
    cat >tty.sh <<SH
#!/usr/bin/env bash
"$BIN" --data "$D" --set general.progress_interval_ms=1 rebuild >/dev/null
echo "exit \$?" >"$work/tty.rc"
SH
    chmod +x tty.sh
    tmux -L "$tsock" -f /dev/null new-session -d -x 160 -y 20 -s p "bash --norc --noprofile"
    tmux -L "$tsock" pipe-pane -t p -o "cat >>$work/tty.raw"
    tmux -L "$tsock" send-keys -t p "clear; $work/tty.sh" Enter
    for _ in $(seq 300); do [ -s tty.rc ] && break; sleep 0.2; done
    sleep 0.3
    tmux -L "$tsock" capture-pane -p -t p >tty.pane
    tmux -L "$tsock" kill-server
    if python3 - <<'PY'
import re, sys
raw = open("tty.raw", "rb").read().decode("utf-8", "replace")
pane = [l for l in open("tty.pane").read().splitlines() if l.strip()]
redraws = len(re.findall(r"\r\x1b\[Krebuild: [\d,]+ of [\d,]+ rows \([\d.]+%\), [\d,]+ rows/s, ETA \S+", raw))
finals = [l for l in pane if re.match(r"rebuild: done, [\d,]+ rows in \S+, [\d,]+ rows/s$", l)]
progress_in_pane = [l for l in pane if re.search(r" of [\d,]+ rows \(", l)]
print(f"tty: {redraws} in-place redraws, pane: {pane}")
errs = []
if open("tty.rc").read().strip() != "exit 0": errs.append("rebuild failed")
if redraws < 2: errs.append("fewer than 2 redraws")
if len(finals) != 1: errs.append("no single final line on screen")
if progress_in_pane: errs.append("progress lines left on screen (not rewritten in place)")
for e in errs: print("  " + e)
sys.exit(1 if errs else 0)
PY
    then ok "terminal: one line updated in place, the final line left on screen"; else bad "terminal form"; fi
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
