#!/usr/bin/env bash
# backfill.sh — `freshet backfill FILE` (ADR 0048) on a generated stream with
# duplicates, late, malformed, oversize and canary events:
#   1. --sequential into a control lake: exit 0, `verify` passes, bronze
#      and dlq together hold one row per line the import stored;
#   2. pipelined (the default), with small group commits and short epochs so
#      that the processor beside the import commits several epochs: every
#      table has the control's row count, `verify` passes;
#   3. SIGKILLed at random moments 3 times, then run to the end: the same
#      row counts, `verify` passes, and no processor child is left behind;
#   4. a re-run after success adds nothing.
# Loopback only (nothing listens). Usage: backfill.sh [SEED]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SEED=${1:-5}
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-backfill.XXXXXX")
bf_pid=""
cleanup() {
    [ -n "$bf_pid" ] && kill -9 "$bf_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
RANDOM=$SEED
fail() { echo "FAIL: $*"; exit 1; }

"$BIN" feed --dump --synthetic --seed "$SEED" --count 12000 --start 2026-11-01T00:00:00Z \
    --dup-rate 0.02 --late-rate 0.01 --late-ms 600000 --ooo-rate 0.02 --malformed-rate 0.01 \
    --canary-rate 0.005 >events.ndjson
# Slow group commits and short epochs: the import takes seconds, and the
# processor beside it commits epochs while it runs.
slow=(--set ingest.file_fsync_bytes=8192 --set process.trigger_ms=100
      --set process.epoch_max_records=1500)

"$BIN" --data ctl backfill --sequential events.ndjson >ctl.out 2>ctl.err ||
    fail "sequential backfill: $(tail -3 ctl.err)"
"$BIN" --data ctl verify >/dev/null 2>ctl.verify || fail "verify (control): $(tail -3 ctl.verify)"
stored=$(sed -n 's/.*end of input: [0-9]* lines read, \([0-9]*\) appended.*/\1/p' ctl.err)
rows=$(awk '$1 == "wiki.bronze_recentchange" || $1 == "wiki.dlq" {n += $2} END {print n}' ctl.out)
[ -n "$stored" ] && [ "$stored" = "$rows" ] || fail "bronze + dlq: $rows rows for $stored stored lines"
cat ctl.out

"$BIN" --data pip "${slow[@]}" backfill events.ndjson >pip.out 2>pip.err || fail "pipelined: $(tail -3 pip.err)"
epochs=$(grep -c 'process: info: epoch' pip.err || true)
beside=$(grep 'process: info: epoch' pip.err | grep -vc "freshet\[$(sed -n 's/.*freshet\[\([0-9]*\)\] backfill.*/\1/p' pip.err | head -1)\]" || true)
[ "$beside" -ge 2 ] || fail "the processor beside the import committed $beside epochs (of $epochs): not pipelined"
diff <(awk 'NR > 1 {print $1, $2}' ctl.out) <(awk 'NR > 1 {print $1, $2}' pip.out) ||
    fail "pipelined tables differ from the sequential control"
"$BIN" --data pip verify >/dev/null 2>pip.verify || fail "verify (pipelined): $(tail -3 pip.verify)"
echo "ok: pipelined, $beside of $epochs epochs committed beside the import; same rows as sequential"

for i in 1 2 3; do
    "$BIN" --data kill "${slow[@]}" backfill events.ndjson >/dev/null 2>>kill.err &
    bf_pid=$!
    sleep "$((1 + RANDOM % 2)).$(printf '%03d' $((RANDOM % 1000)))"
    kill -9 "$bf_pid" 2>/dev/null || true
    wait "$bf_pid" 2>/dev/null || true
    bf_pid=""
done
"$BIN" --data kill "${slow[@]}" backfill events.ndjson >kill.out 2>>kill.err || fail "after kills: $(tail -3 kill.err)"
diff <(awk 'NR > 1 {print $1, $2}' ctl.out) <(awk 'NR > 1 {print $1, $2}' kill.out) ||
    fail "after 3 SIGKILLs the tables differ from the control"
"$BIN" --data kill verify >/dev/null 2>kill.verify || fail "verify (killed): $(tail -3 kill.verify)"
for _ in $(seq 50); do
    pgrep -f -- "--data kill " >/dev/null || break
    sleep 0.1
done
pgrep -f -- "--data kill " >/dev/null && fail "a processor outlived its killed backfill"
echo "ok: 3 SIGKILLs, then the same rows as the control; no processor left behind"

"$BIN" --data kill backfill events.ndjson >again.out 2>again.err || fail "re-run: $(tail -3 again.err)"
grep -q 'end of input: .* 0 appended' again.err || fail "the re-run appended: $(grep 'end of input' again.err)"
diff <(awk 'NR > 1 {print $1, $2}' ctl.out) <(awk 'NR > 1 {print $1, $2}' again.out) ||
    fail "the re-run changed the tables"
echo "ok: a re-run adds nothing"
echo PASS
