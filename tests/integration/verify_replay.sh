#!/usr/bin/env bash
# verify_replay.sh — `freshet verify` keeps passing on a lake that
# `freshet dlq replay` and `freshet rebuild` have changed, with the
# equations docs/DLQ.md and docs/REBUILD.md give it:
#   bronze == consumed − dlq + dlq_replays, a dead letter is in bronze only
#   once replayed, gold ends at the replay's or the rebuild's watermark, and
#   bronze rows a rebuild's tightened gate rejects are in no derived table.
# Events start 30 minutes ago so that events an hour ahead are dead letters
# (future_event), like oversize ones; raising both limits lets a replay land
# them. A dlq_replays emptied by hand must then fail bronze_count.
# Loopback only (no network at all). Usage: verify_replay.sh VERIFY_TAMPER_BINARY
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
TAMPER=${1:?usage: verify_replay.sh VERIFY_TAMPER_BINARY}
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-verify-replay.XXXXXX")
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
cd "$work"
data=$work/data
fr() { "$BIN" --data "$data" "$@"; }
raised=(--set process.max_future_s=7200 --set process.max_event_bytes=2097152)
check() { # LABEL EXPECTED-EXIT PYTHON-ASSERTIONS (d: the --json document, f(check, figure))
    set +e; fr verify --json >"$1.json" 2>"$1.err"; rc=$?; set -e
    python3 - "$1" "$2" "$rc" "$3" <<'PY'
import json, sys
label, want, rc, cond = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
d = json.load(open(f"{label}.json"))
c = {x["name"]: x for x in d["checks"]}
f = lambda name, key: c[name]["figures"][key]
failed = sorted(n for n, x in c.items() if x["status"] != "PASS")
ok = rc == want and eval(cond)
print(f"{'ok  ' if ok else 'FAIL'} {label}: exit {rc}, failed {failed}, watermark {d['cut']['watermark_us']}, "
      f"bronze {f('bronze_count', 'bronze_rows')} = {f('bronze_count', 'consumed')} consumed - "
      f"{f('bronze_count', 'dlq_rows')} dlq + {f('bronze_count', 'replayed_rows')} replayed")
for n in failed:
    print(f"       {n}: {c[n]['detail'][:160]}")
if not ok:
    print(f"       expected exit {want} and {cond}")
sys.exit(0 if ok else 1)
PY
}

start=$(date -u -d '-30 min' +%Y-%m-%dT%H:%M:%SZ)
"$BIN" feed --dump --synthetic --seed 9 --count 16000 --start "$start" --event-rate 20 \
    --dup-rate 0.02 --late-rate 0.01 --late-ms 300000 --ooo-rate 0.05 \
    --future-rate 0.004 --future-ms 3600000 \
    --malformed-rate 0.004 --malformed-kinds truncated,oversize --oversize-bytes 1100000 >events.ndjson
"$TAMPER" load "$data" 1 16000 <events.ndjson >/dev/null
fr --set process.epoch_max_records=4000 process --once 2>process.log
check processed 0 'not failed and f("bronze_count", "replayed_rows") == 0 and f("bronze_count", "dlq_rows") > 0'
wm0=$(python3 -c 'import json; print(json.load(open("processed.json"))["cut"]["watermark_us"])')

fr "${raised[@]}" dlq replay >replay.out 2>replay.log
grep -q 'landed [1-9]' replay.out || { echo "the replay landed nothing:"; cat replay.out; exit 1; }
check replayed 0 "not failed and f('bronze_count', 'replayed_rows') > 0 and d['cut']['watermark_us'] > $wm0 and f('gold_epm_recomputed', 'gold_rows') > 0"

cp -a "$data" "$work/pristine"
"$TAMPER" empty-replays "$data" >/dev/null
check empty-replays 1 'failed == ["bronze_count"]'
rm -rf "$data"; cp -a "$work/pristine" "$data"

fr "${raised[@]}" --set process.lateness_s=60 rebuild >rebuild1.out 2>rebuild1.log
check rebuilt-lateness 0 'not failed and f("silver_covers_bronze", "rebuild_rejected") == 0'
fr --set process.lateness_s=60 rebuild >rebuild2.out 2>rebuild2.log
check rebuilt-stricter 0 'not failed and 0 < f("silver_covers_bronze", "missing") <= f("silver_covers_bronze", "rebuild_rejected")'
echo "1 passed, 0 failed"
