#!/usr/bin/env bash
# group_metrics.sh — the scale-out mode is observable (issue 31, ADR 0042):
# shards and the finalizer over the embedded log (3 partitions), each with
# its own stats file, and `freshet serve` showing them as one group.
#
#   1. feed + ingest (log.partitions=3), then shards 0, 1, 2 and the
#      finalizer running, and serve. Once the shards have caught up with the
#      log, /metrics's group totals equal the lake's truth: records by
#      outcome against the log's end and the tables' row counts (`freshet
#      tables --json`, `freshet log list --json`), epochs against the
#      distinct (pipeline, epoch) markers in the snapshots; each total
#      equals the sum of its per-member series; every partition has its
#      series with role, partition and instance labels.
#   2. Debian's Prometheus (when installed) scrapes serve with the shipped
#      rules (deploy/alerts.yml): all six evaluate without errors in this
#      mode, each of their expressions gives at most one series, and the
#      Grafana dashboard's expressions are valid queries.
#   3. SIGKILL shard 1: its member_up is 0, the others stay 1, and the
#      process stage is down (freshet_stage_up{stage="process"} 0; through
#      Prometheus too, FreshetProcessorBehind goes pending). Restarted, it is
#      up again with its counters carried over. SIGTERM shard 2 (a clean
#      exit, as a revoke does): it is listed down and "closed", and the
#      stage is up again.
#   4. With KAFKA_MOCK (librdkafka's mock cluster, its own process): two
#      `freshet process --group` instances over a 4-partition topic; every
#      member's instance label is hostname:pid of the instance that runs it
#      (the finalizer's that of partition 0's owner), the totals equal the
#      log; one instance SIGKILLed: after the rebalance every member is up
#      again under the other instance's identity, counters carried over.
#
# Usage: group_metrics.sh [KAFKA_MOCK]
set -euo pipefail
MOCK=${1:-}
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
command -v curl >/dev/null || { echo "skip: curl missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-gmetrics.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    sleep 0.5
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
passed=0
fail() {
    echo "FAIL: $*"
    for f in *.log; do echo "--- $f"; tail -6 "$f"; done
    echo "$passed passed, 1 failed"
    exit 1
}
ok() { echo "ok: $*"; passed=$((passed + 1)); }

# ---------------------------------------------------------------- 1. setup
"$BIN" feed --listen 127.0.0.1:0 --rate 1500 --synthetic --seed 12 --count 2400 \
    --dup-rate 0.03 --malformed-rate 0.02 --late-rate 0.02 >feed.out 2>feed.log & pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || fail "feed did not start"
D=(--data "$work/data" --set process.trigger_ms=300 --set process.epoch_max_records=300
   --set process.idle_timeout_s=0)  # no idle epochs: the lake holds still once caught up
log_end() { "$BIN" "${D[@]}" log list --json | python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))'; }
"$BIN" "${D[@]}" --set log.partitions=3 ingest --source "$url" 2>ingest.log &
ing=$!; pids+=($ing)
prev=-1
for _ in $(seq 120); do
    sleep 0.5; end=$(log_end)
    [ "$end" = "$prev" ] && [ "$end" -gt 2000 ] && break
    prev=$end
done
kill -TERM "$ing"; wait "$ing" || true
total=$(log_end)
[ "$total" -gt 2000 ] || fail "only $total records in the log"

declare -A shard
start_shard() {  # start_shard N [--instance ID]
    local p=$1; shift
    "$BIN" "${D[@]}" process --partition "$p" "$@" 2>>"shard$p.log" &
    shard[$p]=$!; pids+=($!)
}
start_shard 0 --instance it-a:100
start_shard 1 --instance it-a:100
start_shard 2   # the default identity: hostname:pid
"$BIN" "${D[@]}" process --finalize --instance it-b:200 2>final.log & fin=$!; pids+=($fin)
"$BIN" "${D[@]}" serve --listen 127.0.0.1:0 >serve.out 2>serve.log & pids+=($!)
for _ in $(seq 100); do grep -q '^listening' serve.out 2>/dev/null && break; sleep 0.1; done
base=$(awk '/^listening/ {print $2; exit}' serve.out)
[ -n "$base" ] || fail "serve did not start"

# The series of /metrics as JSON {"name{labels}": value} for python below.
scrape() { curl -sf "${base}metrics" > metrics.txt && python3 - metrics.txt <<'PY'
import json, sys
out = {}
for line in open(sys.argv[1]):
    if line.startswith('#') or not line.strip():
        continue
    key, val = line.rsplit(' ', 1)
    out[key] = float(val)
json.dump(out, open('metrics.json', 'w'))
PY
}
# Caught up: no record behind, every record counted, the finalizer past the
# shards' newest epochs (its epoch count stops moving).
caught_up=0
for _ in $(seq 240); do
    scrape || { sleep 0.5; continue; }
    if python3 - "$total" <<'PY'
import json, sys
m = json.load(open('metrics.json'))
rec = sum(v for k, v in m.items() if k.startswith('freshet_process_records_total{'))
ups = [v for k, v in m.items() if k.startswith('freshet_process_member_up{')]
sys.exit(0 if rec == int(sys.argv[1]) and m.get('freshet_process_offsets_behind') == 0
         and len(ups) == 4 and all(ups) else 1)
PY
    then caught_up=1; break; fi
    sleep 0.5
done
[ "$caught_up" = 1 ] || fail "the shards did not catch up with the log ($total records); see metrics.txt"
# The finalizer consumes every shard epoch there is, then idles: wait until
# its checkpoint has every shard's newest epoch (the lake's truth below).
for _ in $(seq 120); do
    a=$(grep -c 'finalize: info: epoch' final.log || true); sleep 1.5
    b=$(grep -c 'finalize: info: epoch' final.log || true)
    [ "$a" = "$b" ] && [ "$b" -gt 0 ] && break
done
sleep 0.5
scrape || fail "scrape"
"$BIN" "${D[@]}" tables --json > tables.json
"$BIN" "${D[@]}" log list --json > log.json
python3 - "$(hostname)" "${shard[2]}" <<'PY' || fail "group totals against the lake"
import json, sys
host, pid2 = sys.argv[1], sys.argv[2]
m = json.load(open('metrics.json'))
tables = {t['name']: t for t in json.load(open('tables.json'))['tables']}
log_total = sum(p['end_offset'] for p in json.load(open('log.json')))
rows = {n: tables[n]['records'] for n in tables}
# epochs: distinct (pipeline, epoch) markers; shards mark bronze, the finalizer gold
marks = set()
for name in ('bronze_recentchange', 'gold_edits_per_minute'):
    for s in tables[name]['snapshots']:
        sm = s['summary']
        if 'freshet.pipeline-id' in sm:
            marks.add((sm['freshet.pipeline-id'], sm['freshet.epoch']))
shard_marks = {k for k in marks if not k[0].endswith('-gold')}
fin_marks = {k for k in marks if k[0].endswith('-gold')}
def rec(o):
    return m['freshet_process_records_total{outcome="%s"}' % o]
want = {
    'records (all outcomes) = log end': (sum(rec(o) for o in ('silver', 'duplicate', 'late', 'dlq')), log_total),
    'silver = silver_recentchange rows': (rec('silver'), rows['silver_recentchange']),
    'late = late_arrivals rows': (rec('late'), rows['late_arrivals']),
    'dlq = dlq rows': (rec('dlq'), rows['dlq']),
    'duplicate = bronze - silver - late rows': (rec('duplicate'), rows['bronze_recentchange'] - rows['silver_recentchange'] - rows['late_arrivals']),
    'epochs = distinct epoch markers in the lake': (m['freshet_process_epochs_total'], len(marks)),
}
def member_sum(name, role=None):
    return sum(v for k, v in m.items() if k.startswith(name + '{') and (role is None or 'role="%s"' % role in k))
want['shard epochs = shard markers'] = (member_sum('freshet_process_member_epochs_total', 'shard'), len(shard_marks))
want['finalizer epochs = gold markers'] = (member_sum('freshet_process_member_epochs_total', 'finalizer'), len(fin_marks))
for o in ('silver', 'duplicate', 'late', 'dlq'):
    want['total %s = sum of members' % o] = (rec(o), sum(v for k, v in m.items() if k.startswith('freshet_process_member_records_total{outcome="%s"' % o)))
want['batch count = sum of member epochs'] = (m['freshet_process_batch_duration_seconds_count'], m['freshet_process_epochs_total'])
want['dedup keys = sum of members'] = (m['freshet_process_dedup_keys'], member_sum('freshet_process_member_dedup_keys'))
fresh = [v for k, v in m.items() if k.startswith('freshet_process_member_freshness_seconds{')]
want['freshness = the worst member'] = (m['freshet_process_freshness_seconds'], max(fresh))
wms = [v for k, v in m.items() if k.startswith('freshet_process_member_watermark_timestamp_seconds{')]
want['watermark = the lowest member'] = (m['freshet_process_watermark_timestamp_seconds'], min(wms))
labels = [
    'freshet_process_member_up{role="shard",partition="0",instance="it-a:100"}',
    'freshet_process_member_up{role="shard",partition="1",instance="it-a:100"}',
    'freshet_process_member_up{role="shard",partition="2",instance="%s:%s"}' % (host[:39 - len(pid2) - 1], pid2),
    'freshet_process_member_up{role="finalizer",instance="it-b:200"}',
]
for l in labels:
    want['series ' + l] = (m.get(l), 1)
want['stage up'] = (m['freshet_stage_up{stage="process"}'], 1)
bad = 0
for what, (got, exp) in want.items():
    good = got == exp
    bad += not good
    print('  %s %s: %s (want %s)' % ('ok' if good else 'FAIL', what, got, exp))
print('  %d epoch markers (%d shard, %d finalizer), %d records' % (len(marks), len(shard_marks), len(fin_marks), log_total))
sys.exit(1 if bad or len(shard_marks) < 6 or len(fin_marks) < 1 or rec('dlq') < 1 else 0)
PY
ok "group totals equal the lake's truth and the members' sums"
curl -sf "${base}api/v1/status" > status.json
python3 - <<'PY' || fail "status JSON members"
import json
p = json.load(open('status.json'))['stages']['process']
assert p['group'] is True and p['up'] is True and p['pid'] is None, p
ms = p['members']
assert [(x['role'], x['partition']) for x in ms] == [('shard', 0), ('shard', 1), ('shard', 2), ('finalizer', None)], ms
assert all(x['up'] and not x['closed'] for x in ms)
assert sum(x['metrics']['process_records_total']['silver'] for x in ms) == p['metrics']['process_records_total']['silver']
print('  status: %d members, all up' % len(ms))
PY
ok "/api/v1/status lists the members"

# ---------------------------------------------------------------- 2. Prometheus
have_prom=0
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
    have_prom=1
    free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
    target=$(echo "$base" | sed -E 's|^http://||; s|/$||')
    cp "$SRC/deploy/alerts.yml" alerts.yml
    cat >prom.yml <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [alerts.yml]
scrape_configs:
  - job_name: freshet
    static_configs:
      - targets: ["$target"]
CONF
    promtool check config prom.yml >check.log 2>&1 || fail "promtool check config"
    pport=$(free_port)
    prom="http://127.0.0.1:$pport"
    prometheus --config.file=prom.yml --storage.tsdb.path="$work/tsdb" \
        --web.listen-address="127.0.0.1:$pport" 2>prometheus.log & pids+=($!)
    for _ in $(seq 100); do curl -sf "$prom/-/ready" >/dev/null 2>&1 && break; sleep 0.2; done
    curl -sf "$prom/-/ready" >/dev/null || fail "prometheus did not become ready"
    query() {  # query EXPR -> the JSON result list
        curl -sf --get --data-urlencode "query=$1" "$prom/api/v1/query" |
            python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["status"]=="success", d; print(json.dumps(d["data"]["result"]))'
    }
    wait_value() {  # wait_value SECONDS PYTHON-EXPR-OF-v EXPR: the first sample's value
        local secs=$1 cond=$2 expr=$3 v=""
        for _ in $(seq $((secs * 2))); do
            v=$(query "$expr" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["value"][1] if r else "")' || true)
            if [ -n "$v" ] && python3 -c "import sys; v=float(sys.argv[1]); sys.exit(0 if ($cond) else 1)" "$v"; then
                echo "  $expr = $v"; return 0
            fi
            sleep 0.5
        done
        echo "  $expr = '${v}' (wanted $cond)"; return 1
    }
    wait_value 60 'v == 4' 'count(freshet_process_member_up == 1)' || fail "four members up through Prometheus"
    wait_value 30 'v == 0' 'freshet_process_epochs_total - on (instance, job) sum by (instance, job) (freshet_process_member_epochs_total)' ||
        fail "the epochs total is not the members' sum in Prometheus"
    wait_value 30 'v == 1' 'freshet_stage_up{stage="process"}' || fail "stage up"
    # Every shipped rule healthy after a few evaluations, and its expression
    # one series at most per (instance, job), as with one processor.
    sleep 3
    curl -sf "$prom/api/v1/rules" > rules.json
    python3 - <<'PY' || fail "shipped rules in the group mode"
import json
groups = json.load(open('rules.json'))['data']['groups']
rules = [r for g in groups if g['name'] == 'freshet' for r in g['rules']]
bad = [(r['name'], r.get('lastError')) for r in rules if r.get('health') != 'ok']
assert len(rules) == 7, 'expected the 7 shipped rules (deploy/alerts.yml), got %d' % len(rules)
assert not bad, 'rules not healthy: %r' % bad
open('exprs.txt', 'w').write('\n'.join(r['query'].replace('\n', ' ') for r in rules) + '\n')
print('  shipped rules healthy: ' + ', '.join(r['name'] for r in rules))
PY
    python3 -c "
import json
d = json.load(open('$SRC/deploy/grafana-dashboard.json'))
for p in d['panels']:
    for t in p.get('targets', []):
        print(t['expr'].replace('\n', ' '))" >> exprs.txt
    n=0
    while IFS= read -r e; do
        [ -n "$e" ] || continue
        r=$(query "$e") || fail "query failed in the group mode: $e"
        python3 -c '
import json, sys
from collections import Counter
r = json.loads(sys.argv[1])
c = Counter((x["metric"].get("instance"), x["metric"].get("job"), x["metric"].get("outcome"), x["metric"].get("reason"), x["metric"].get("stage"), x["metric"].get("le"), x["metric"].get("alertname")) for x in r)
sys.exit(0 if all(v == 1 for v in c.values()) else 1)' "$r" || fail "more than one series per target for: $e ($r)"
        n=$((n + 1))
    done < exprs.txt
    ok "Prometheus: shipped rules healthy; $n rule and dashboard expressions evaluate, one series per target"
else
    echo "skip (part 2): prometheus is not installed (scripts/setup.sh --test)"
fi

# ---------------------------------------------------------------- 3. a member down
kill -9 "${shard[1]}"; wait "${shard[1]}" 2>/dev/null || true
member_state() {  # member_state -> "p0 p1 p2 fin stage" as 0/1 from /metrics
    scrape >/dev/null 2>&1 || { echo "scrape-failed"; return; }
    python3 -c '
import json
m = json.load(open("metrics.json"))
def up(part):
    for k, v in m.items():
        if k.startswith("freshet_process_member_up{") and part in k:
            return int(v)
    return "absent"
print(up("partition=\"0\""), up("partition=\"1\""), up("partition=\"2\""), up("role=\"finalizer\""), int(m.get("freshet_stage_up{stage=\"process\"}", -1)))'
}
wait_state() {  # wait_state WANT
    local s=""
    for _ in $(seq 60); do
        s=$(member_state); [ "$s" = "$1" ] && { echo "  members p0 p1 p2 finalizer, stage: $s"; return 0; }
        sleep 0.5
    done
    echo "  members p0 p1 p2 finalizer, stage: $s (wanted $1)"; return 1
}
wait_state "1 0 1 1 0" || fail "shard 1 SIGKILLed is not the only member down"
ok "SIGKILL shard 1: its member_up is 0, the others 1, the process stage down"
if [ "$have_prom" = 1 ]; then
    wait_value 30 'v == 0' 'freshet_process_member_up{partition="1"}' || fail "Prometheus: shard 1 up"
    wait_value 30 'v == 3' 'sum(freshet_process_member_up)' || fail "Prometheus: the others up"
    pending=""
    for _ in $(seq 60); do
        pending=$(curl -sf "$prom/api/v1/alerts" | python3 -c 'import json,sys
print(" ".join(sorted(a["labels"]["alertname"] + ":" + a["state"] for a in json.load(sys.stdin)["data"]["alerts"])))' || true)
        case " $pending " in *" FreshetProcessorBehind:"*) break ;; esac
        sleep 0.5
    done
    case " $pending " in *" FreshetProcessorBehind:"*) ;; *) fail "FreshetProcessorBehind is not active (alerts: $pending)" ;; esac
    echo "  alerts: $pending"
    ok "Prometheus: shard 1 down, three members up, FreshetProcessorBehind active"
fi
before=$(python3 -c 'import json; m=json.load(open("metrics.json")); print(int(m["freshet_process_member_epochs_total{role=\"shard\",partition=\"1\",instance=\"it-a:100\"}"]))')
start_shard 1 --instance it-a:101
wait_state "1 1 1 1 1" || fail "shard 1 restarted is not up"
after=$(python3 -c 'import json; m=json.load(open("metrics.json")); print(int(m["freshet_process_member_epochs_total{role=\"shard\",partition=\"1\",instance=\"it-a:101\"}"]))')
[ "$after" -ge "$before" ] || fail "shard 1's epochs went from $before to $after"
ok "shard 1 restarted: up, new instance label, epochs carried over ($before -> $after)"
kill -TERM "${shard[2]}"; wait "${shard[2]}" || fail "shard 2 did not exit cleanly on SIGTERM"
wait_state "1 1 0 1 1" || fail "shard 2 stopped cleanly: wanted it down and the stage up"
curl -sf "${base}api/v1/status" | python3 -c '
import json, sys
ms = json.load(sys.stdin)["stages"]["process"]["members"]
m2 = [x for x in ms if x["partition"] == 2][0]
assert m2["closed"] is True and m2["up"] is False, m2' || fail "shard 2 not shown closed"
ok "SIGTERM shard 2: listed down and closed; the stage stays up"

# ---------------------------------------------------------------- 4. --group
if [ -z "$MOCK" ] || [ ! -x "$MOCK" ]; then
    echo "skip (part 4): no kafka_mock (built with FR_KAFKA)"
    echo "$passed passed, 0 failed"
    exit 0
fi
mkdir kafka && cd kafka
# shellcheck source=kafka_lib.sh
. "$SRC/tests/integration/kafka_lib.sh"
mock_start "$MOCK" --brokers 1 --partitions 4 --replication 1
pids+=("$mock_pid")
"$BIN" feed --listen 127.0.0.1:0 --rate 1500 --synthetic --seed 13 --count 1600 >feed.out 2>feed.log & pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
K=(--data "$work/kafka/data" --set log.backend=kafka --set "kafka.brokers=$brokers" --set log.partitions=4
   --set process.trigger_ms=300 --set kafka.session_timeout_ms=3000 --set process.idle_timeout_s=0
   --set up.restart_min_ms=200)
klog_end() { "$BIN" "${K[@]}" log list --json 2>/dev/null | python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo -1; }
"$BIN" "${K[@]}" ingest --source "$url" 2>ingest.log & ing=$!; pids+=($ing)
prev=-1
for _ in $(seq 120); do
    sleep 0.5; end=$(klog_end)
    [ "$end" = "$prev" ] && [ "$end" -gt 1000 ] && break
    prev=$end
done
kill -TERM "$ing"; wait "$ing" || true
ktotal=$(klog_end)
[ "$ktotal" -gt 1000 ] || fail "only $ktotal records in Kafka"
"$BIN" "${K[@]}" process --group 2>member1.log & g1=$!; pids+=($g1)
"$BIN" "${K[@]}" process --group 2>member2.log & g2=$!; pids+=($g2)
"$BIN" "${K[@]}" serve --listen 127.0.0.1:0 >serve.out 2>serve.log & pids+=($!)
for _ in $(seq 100); do grep -q '^listening' serve.out 2>/dev/null && break; sleep 0.1; done
kbase=$(awk '/^listening/ {print $2; exit}' serve.out)
[ -n "$kbase" ] || fail "serve (kafka) did not start"
host=$(hostname)
group_state() {  # group_state WANT_INSTANCES... -> 0 when every member is up under one of them and the records are all counted
    curl -sf "${kbase}api/v1/status" > kstatus.json 2>/dev/null || return 1
    python3 - "$ktotal" "$@" <<'PY'
import json, sys
total, want = int(sys.argv[1]), set(sys.argv[2:])
p = json.load(open('kstatus.json'))['stages']['process']
ms = p['members']
shards = sorted(m['partition'] for m in ms if m['role'] == 'shard')
fin = [m for m in ms if m['role'] == 'finalizer']
rec = sum(p['metrics']['process_records_total'].values()) if p['group'] else -1
ok = (shards == [0, 1, 2, 3] and len(fin) == 1 and all(m['up'] for m in ms) and
      {m['instance'] for m in ms} <= want and rec == total and
      fin[0]['instance'] == [m for m in ms if m['partition'] == 0][0]['instance'])
print(' '.join('%s%s@%s' % (m['role'][0], '' if m['partition'] is None else m['partition'], m['instance']) for m in ms), 'records', rec)
sys.exit(0 if ok else 1)
PY
}
s=""
for _ in $(seq 120); do s=$(group_state "$host:$g1" "$host:$g2") && break; sleep 0.5; done
group_state "$host:$g1" "$host:$g2" >/dev/null || fail "--group: members not all up under the instances' identities ($s)"
echo "  $s"
python3 -c 'import json; ms=json.load(open("kstatus.json"))["stages"]["process"]["members"]; assert len({m["instance"] for m in ms}) == 2, ms' ||
    fail "--group: the partitions are not spread over both instances"
ok "--group: every member up, labelled with its instance's hostname:pid; the totals equal the log ($ktotal)"
kill -9 "$g1"; wait "$g1" 2>/dev/null || true
s=""
for _ in $(seq 120); do s=$(group_state "$host:$g2") && break; sleep 0.5; done
group_state "$host:$g2" >/dev/null || fail "--group: after SIGKILL of the first instance, not every member up under the second ($s)"
echo "  $s"
ok "--group: the first instance SIGKILLed; after the rebalance every member is up under the second, every record counted once"
kill -TERM "$g2"; wait "$g2" || fail "--group instance did not exit cleanly"
echo "$passed passed, 0 failed"
