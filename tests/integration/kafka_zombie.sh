#!/usr/bin/env bash
# kafka_zombie.sh — a zombie under pause in the scale-out mode
# (docs/SCALEOUT.md, "Fencing"), against librdkafka's mock cluster in its own
# process (kafka_mock: topic recentchange, 6 partitions, loopback only):
#
#   freshet feed --synthetic -> freshet ingest into Kafka, still running
#   while two `freshet process --group` instances consume, each with its own
#   checkpoint directory (two machines that share only the lake):
#
#   0. a second live owner of partition 0 (another machine's `process
#      --partition 0`) meets the group's shard: one of them is fenced;
#   1. instance 1 and all its children (shards, and the finalizer if it has
#      partition 0) are SIGSTOPped, as a paused VM or container is;
#   2. past kafka.session_timeout_ms the group gives its partitions to
#      instance 2, whose new shards replay the lake's epochs and commit
#      further ones (the test waits until each moved shard's newest epoch in
#      the lake is past the one the paused shard had);
#   3. SIGCONT to the paused shards first (the worst order: they run before
#      their instance learns it lost its partitions): each tries to commit
#      its next epoch and is fenced by the epoch marker inside the catalog's
#      compare-and-swap, "epoch E was already committed by another owner of
#      pipeline freshet-pN", and exits;
#   4. SIGCONT to instance 1: it finds its assignment lost, rejoins the group
#      and gets partitions again;
#   5. the log drains; `freshet verify` passes and every table equals, row
#      for row (DuckDB, tests/interop/lake_compare.mjs), a control lake built
#      from the same topic by each shard once and the finalizer once;
#   6. the fenced owners' own checkpoint directories (their offsets WALs
#      still hold the plans the other owner beat) resume to the same epoch,
#      offset and operator state as a fresh owner that has only the lake.
#
# Usage: kafka_zombie.sh KAFKA_MOCK [SEED] [COUNT]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
MOCK=${1:?usage: kafka_zombie.sh KAFKA_MOCK [SEED] [COUNT]}
SEED=${2:-45}
COUNT=${3:-16000}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$MOCK" ] || { echo "skip: $MOCK is not built"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
command -v node >/dev/null || { echo "skip: node missing"; exit 77; }
[ -d "$SRC/tests/interop/node_modules/@duckdb/node-api" ] ||
    { echo "skip: @duckdb/node-api not installed (scripts/setup.sh --test)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-zombie.XXXXXX")
mock_pid=""; feed_pid=""; ing_pid=""; members=(); paused=()
cleanup() {
    for p in "${paused[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
    for p in "${members[@]}" $ing_pid; do kill -9 "$p" 2>/dev/null || true; done
    [ -n "$feed_pid" ] && kill -TERM "$feed_pid" 2>/dev/null || true
    [ -n "$mock_pid" ] && kill -TERM "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"

# shellcheck source=kafka_lib.sh
. "$SRC/tests/integration/kafka_lib.sh"
mock_start "$MOCK" --brokers 3 --partitions 6 --replication 3

# Event time at 20 events/s, sent at 80/s: the stream would last over three
# minutes, so epochs flow on every partition until step 5 stops it. (The
# mock keeps 5 MiB per partition: COUNT stays well below, because a shard
# that gets a partition it has no checkpoint for replays from offset 0.)
feed_flags=(--synthetic --seed "$SEED" --count "$COUNT" --start 2026-11-01T00:00:00Z --event-rate 20
    --dup-rate 0.02 --malformed-rate 0.01 --late-rate 0.01 --ooo-rate 0.05)
"$BIN" feed --listen 127.0.0.1:0 --rate 80 "${feed_flags[@]}" >feed.out 2>feed.log &
feed_pid=$!
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || { echo "feed did not start"; cat feed.log; exit 1; }

kafka=(--set log.backend=kafka --set "kafka.brokers=$brokers" --set log.partitions=6)
common=(--data "$work/data" "${kafka[@]}" --set process.trigger_ms=200
        --set process.epoch_max_records=100 --set kafka.session_timeout_ms=3000
        --set process.idle_timeout_s=0 --set process.maintain_every_epochs=15
        --set up.restart_min_ms=200)
log_end() { log_total "${common[@]}"; }
vjson() { "$BIN" "${common[@]}" verify --json 2>/dev/null || true; }
consumed() {
    vjson | python3 -c 'import json,sys; d = json.load(sys.stdin); print(d.get("consumed", d["cut"].get("consumed")))' 2>/dev/null || echo -1
}
shard_epoch() {  # the newest epoch of shard $1 in the lake (-1: none)
    vjson | python3 -c '
import json, re, sys
d = json.load(sys.stdin)
m = dict(re.findall(r"p(\d+):(-?\d+)", d["cut"]["source_offsets"] or ""))
print(m.get(sys.argv[1], -1))' "$1" 2>/dev/null || echo -1
}
member() {  # start instance $1 with its own checkpoint directory (its own machine)
    "$BIN" "${common[@]}" --set "process.checkpoint_dir=$work/ck-i$1" process --group 2>>"member$1.log" &
    members+=($!)
    echo "instance $1 started (pid $!)"
}
role() {  # the role of child process $1: the partition of a shard, or "gold"
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null |
        awk '{for (i = 1; i <= NF; i++) { if ($i == "--partition") print $(i + 1); if ($i == "--finalize") print "gold" }}'
}
exited() {  # process $1 is gone or a zombie its paused parent has not reaped
    local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo X)
    [ "$st" = Z ] || [ "$st" = X ]
}

"$BIN" "${common[@]}" ingest --source "$url" 2>ingest.log &
ing_pid=$!
member 1; member 2
i1=${members[0]}

# Both instances own partitions and their shards have committed epochs.
ready=0
for _ in $(seq 240); do
    sleep 0.5
    kids=$( (pgrep -P "$i1" || true) | wc -l)
    ok=1
    for p in 0 1 2 3 4 5; do [ "$(shard_epoch "$p")" -ge 2 ] || ok=0; done
    if [ "$kids" -ge 3 ] && [ "$ok" = 1 ]; then ready=1; break; fi
done
[ "$ready" = 1 ] || { echo "FAIL: the two instances never both ran shards"; tail -n 5 member*.log; exit 1; }

# 0. A live second owner of partition 0 (another machine that believes it
# owns it: its own checkpoint directory, and a 1 s trigger, so the epochs
# it plans differ from the group's). It catches up from the lake, plans the
# next epoch, and one of the two owners is fenced at its commit; the
# loser's offsets WAL keeps a plan the lake contradicts (step 6).
"$BIN" "${common[@]}" --set "process.checkpoint_dir=$work/ck-x" --set process.trigger_ms=1000 \
    process --partition 0 2>x.log &
x_pid=$!
members+=("$x_pid")
for _ in $(seq 600); do kill -0 "$x_pid" 2>/dev/null || break; sleep 0.1; done
kill -TERM "$x_pid" 2>/dev/null || true
wait "$x_pid" || true
members=("${members[@]:0:2}")
x_fenced=$(cat x.log member*.log | grep -c 'already committed by another owner of pipeline freshet-p0 ' || true)
echo "a second owner of partition 0: fenced commits of freshet-p0: $x_fenced"
[ "$x_fenced" -ge 1 ] || { echo "FAIL: the two owners of partition 0 never met"; tail -n 5 x.log; exit 1; }

# 1. Pause instance 1 and every child of it at once (a paused VM).
kids=$(pgrep -P "$i1" || true)
declare -A was
shards=()
for k in $kids; do
    r=$(role "$k"); [ -n "$r" ] || continue
    was[$k]=$r
    [ "$r" = gold ] || shards+=("$k")
done
kill -STOP "$i1" $kids
paused=("$i1" $kids)
echo "instance 1 paused with its children: ${#shards[@]} shard(s) [$(for k in "${shards[@]}"; do printf 'p%s ' "${was[$k]}"; done)]$(for k in $kids; do [ "${was[$k]:-}" = gold ] && printf ' and the finalizer'; done)"
declare -A before
for k in "${shards[@]}"; do before[$k]=$(shard_epoch "${was[$k]}"); done

# 2. The group moves the paused instance's partitions; their new shards
# (on instance 2) commit the epoch after the one each paused shard had
# last committed, so whatever the paused shard commits next is fenced.
moved=0
for _ in $(seq 360); do
    sleep 0.5
    ok=1
    for k in "${shards[@]}"; do
        [ "$(shard_epoch "${was[$k]}")" -ge "$((before[$k] + 1))" ] || ok=0
    done
    if [ "$ok" = 1 ]; then moved=1; break; fi
done
[ "$moved" = 1 ] || { echo "FAIL: the group did not move the paused instance's partitions"; tail -n 5 member2.log; exit 1; }
grep -q 'group: assigned 6 partition' member2.log ||
    { echo "FAIL: instance 2 never owned all 6 partitions"; exit 1; }
echo "instance 2 owns all 6 partitions; moved shards at epochs: $(for k in "${shards[@]}"; do printf 'p%s %s->%s ' "${was[$k]}" "${before[$k]}" "$(shard_epoch "${was[$k]}")"; done)"

# 3. The paused children resume first: each shard's next commit is fenced.
kill -CONT $kids
for k in "${shards[@]}"; do
    for _ in $(seq 600); do exited "$k" && break; sleep 0.1; done
    exited "$k" || { echo "FAIL: the resumed shard of partition ${was[$k]} (pid $k) kept running: never fenced"; tail -n 20 member1.log; exit 1; }
    line=$(grep "freshet\[$k\] process: error: epoch [0-9]* was already committed by another owner of pipeline freshet-p${was[$k]} " member1.log | head -1 || true)
    [ -n "$line" ] || { echo "FAIL: the resumed shard of partition ${was[$k]} exited without being fenced"; grep "freshet\[$k\]" member1.log | tail -n 5; exit 1; }
    echo "fenced: ${line#* process: error: }"
    commits=$(grep -E "freshet\[$k\] process: info: epoch [0-9]+: " member1.log |
        sed -E 's/.* process: info: epoch ([0-9]+): .*/\1/' | awk -v e="${before[$k]}" '$1 + 0 > e + 0' | head -1)
    [ -z "$commits" ] || { echo "FAIL: the paused shard of partition ${was[$k]} committed epoch $commits after its partition moved"; exit 1; }
done

# 4. The instance resumes: its assignment is lost, it rejoins.
a_before=$(grep -c 'group: assigned' member1.log || true)
kill -CONT "$i1"
paused=()
rejoined=0
for _ in $(seq 240); do
    sleep 0.5
    [ "$(grep -c 'group: assigned' member1.log || true)" -gt "$a_before" ] && { rejoined=1; break; }
done
[ "$rejoined" = 1 ] || { echo "FAIL: instance 1 did not rejoin the group"; tail -n 10 member1.log; exit 1; }
grep -q 'group: assignment of .* lost' member1.log ||
    { echo "FAIL: instance 1 did not report its lost assignment"; tail -n 10 member1.log; exit 1; }
echo "instance 1 rejoined: $(grep 'group: assigned' member1.log | tail -1 | sed 's/.*group: //')"

# 5. Stop the stream, then drain.
kill -TERM "$feed_pid"; wait "$feed_pid" || true
feed_pid=""
log_settle 360
kill -TERM "$ing_pid"; wait "$ing_pid" || { echo "FAIL: ingest did not exit cleanly"; tail -5 ingest.log; exit 1; }
ing_pid=""
total=$(log_end)
echo "log: $total records in 6 partitions"
done_=0
for _ in $(seq 360); do
    sleep 0.5
    if [ "$(consumed)" = "$total" ]; then done_=1; break; fi
done
[ "$done_" = 1 ] || { echo "FAIL: the shards did not consume the log (consumed $(consumed) of $total)"; tail -n 5 member*.log; exit 1; }
sleep 2  # the finalizer's last rounds
for p in "${members[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${members[@]}"; do
    wait "$p" || { echo "FAIL: an instance did not exit cleanly on SIGTERM"; tail -n 5 member*.log; exit 1; }
done
members=()
if grep -h ': error: ' member*.log x.log | grep -v 'already committed by another owner'; then
    echo "FAIL: an error other than fencing"; exit 1
fi
"$BIN" "${common[@]}" --set "process.checkpoint_dir=$work/ck-last" process --finalize --once 2>>final.log ||
    { echo "FAIL: the last finalize failed"; tail -5 final.log; exit 1; }
"$BIN" "${common[@]}" verify > verify.out 2>&1 || { echo "FAIL: freshet verify:"; cat verify.out; exit 1; }
tail -1 verify.out | sed 's/^/freshet verify: /'

# Control: the same topic, each shard once and the finalizer once.
ctl=(--data "$work/control" "${kafka[@]}" --set process.epoch_max_records=5000 --set process.idle_timeout_s=0)
for p in 0 1 2 3 4 5; do
    "$BIN" "${ctl[@]}" process --partition "$p" --once 2>>control.log || { echo "FAIL: control shard $p"; tail -5 control.log; exit 1; }
done
"$BIN" "${ctl[@]}" process --finalize --once 2>>control.log || { echo "FAIL: control finalize"; tail -5 control.log; exit 1; }
"$BIN" "${ctl[@]}" verify > control_verify.out 2>&1 || { echo "FAIL: verify on the control lake"; cat control_verify.out; exit 1; }
"$BIN" "${common[@]}" tables --json --files > group_tables.json
"$BIN" "${ctl[@]}" tables --json --files > control_tables.json
node "$SRC/tests/interop/lake_compare.mjs" group_tables.json control_tables.json

# 6. A fenced shard's checkpoint directory against a fresh owner's: the
# same epoch, next offset of its partition and operator state (the byte
# table is in src/pipeline/checkpoint.c; nparts may differ: a planned range
# names every partition, a range read back from the lake only the shard's).
ck_same() {
    python3 - "$@" <<'PY'
import struct, sys
def load(path):
    b = open(path, "rb").read()
    assert b[:4] == b"FRCK", path
    epoch, n = struct.unpack_from("<qI", b, 8)
    nxt = struct.unpack_from("<%dq" % n, b, 20)
    (ln,) = struct.unpack_from("<Q", b, 20 + 8 * n)
    state = b[28 + 8 * n: 28 + 8 * n + ln]
    return epoch, nxt, state
p = int(sys.argv[1])
a, b = load(sys.argv[2]), load(sys.argv[3])
na = a[1][p] if p < len(a[1]) else None
nb = b[1][p] if p < len(b[1]) else None
print("  epoch %d/%d, next offset %s/%s, state %d/%d bytes, equal: %s" %
      (a[0], b[0], na, nb, len(a[2]), len(b[2]), a[2] == b[2]))
sys.exit(0 if (a[0], na, a[2]) == (b[0], nb, b[2]) else 1)
PY
}
replaced=0
for dp in ck-x/0 $(for k in "${shards[@]}"; do echo "ck-i1/${was[$k]}"; done); do
    d=${dp%/*}; p=${dp#*/}
    [ -f "$d/freshet-p$p/checkpoint" ] || continue
    "$BIN" "${common[@]}" --set "process.checkpoint_dir=$work/$d" process --partition "$p" --once 2>"resume-$d-p$p.log" ||
        { echo "FAIL: shard $p from $d"; tail -5 "resume-$d-p$p.log"; exit 1; }
    [ -f "ck-fresh/freshet-p$p/checkpoint" ] ||
        "$BIN" "${common[@]}" --set "process.checkpoint_dir=$work/ck-fresh" process --partition "$p" --once 2>"fresh-p$p.log" ||
        { echo "FAIL: shard $p from an empty directory"; tail -5 "fresh-p$p.log"; exit 1; }
    n=$(grep -c 'WAL planned' "resume-$d-p$p.log" || true)
    replaced=$((replaced + n))
    echo "shard $p from $d ($n lost plan(s) replaced by the lake's range), against a fresh owner:"
    ck_same "$p" "$d/freshet-p$p/checkpoint" "ck-fresh/freshet-p$p/checkpoint" ||
        { echo "FAIL: shard $p: $d resumed to another state than the lake's"; grep -h 'WAL planned' "resume-$d-p$p.log" || true; exit 1; }
done
# A directory instance 1 got back after it rejoined had its lost plans
# replaced during the run already (and is checked above all the same).
during=$(cat member*.log x.log | grep -c 'WAL planned' || true)
echo "lost plans replaced by the lake's range: $during during the run, $replaced in step 6"
[ "$((replaced + during))" -ge 1 ] || { echo "FAIL: no owner's directory held a plan the lake contradicts: step 6 showed nothing"; exit 1; }
echo "PASS: a paused instance's shards are fenced, it rejoins, nothing lost or doubled (verify passes, tables = control)"
