#!/usr/bin/env bash
# prometheus.sh — Debian's Prometheus scraping a running freshet (ctest label
# integration). Skips (77) when prometheus or promtool is not installed
# (scripts/setup.sh --test installs them).
#
#   1. promtool check config / check rules on deploy/prometheus.yml and
#      deploy/alerts.yml; every freshet_ metric the rules and the Grafana
#      dashboard name exists in the metric table.
#   2. feed + ingest + process + serve on loopback; Prometheus on 127.0.0.1
#      (never 0.0.0.0) scraping serve every second, with the shipped rules
#      and a test rule that must fire (events received > 10).
#   3. Through Prometheus's HTTP API: freshet's series are there with sane
#      values, the shipped rules evaluate without error, the test alert fires.
# Prometheus's first sample is queryable after about 6 s (its scrape
# manager's first sync), so the waits below allow 60 s.
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
SRC=${FR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
    echo "skip: prometheus is not installed (apt-get install prometheus, or scripts/setup.sh --test)"
    exit 77
fi
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-prom.XXXXXX")
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
    for f in *.log; do echo "--- $f"; tail -8 "$f"; done
    echo "$passed passed, 1 failed"
    exit 1
}

# 1. The shipped files.
promtool check config "$SRC/deploy/prometheus.yml" >check.log 2>&1 || fail "promtool check config"
promtool check rules "$SRC/deploy/alerts.yml" >>check.log 2>&1 || fail "promtool check rules"
"$BIN" serve --metrics-markdown >metrics.md
for name in $(grep -oh 'freshet_[a-z_]*' "$SRC/deploy/alerts.yml" "$SRC/deploy/grafana-dashboard.json" | sort -u); do
    base=$(echo "$name" | sed -E 's/_(bucket|sum|count)$//')
    grep -q "\`$base\`" metrics.md || grep -q "\`$name\`" metrics.md ||
        fail "deploy/ names $name, which is not in the metric table"
done
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$SRC/deploy/grafana-dashboard.json" ||
    fail "grafana-dashboard.json is not JSON"
passed=$((passed + 1))

# 2. A pipeline and Prometheus.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed 4 --rate 200 --malformed-rate 0.02 \
    >feed.out 2>feed.log & pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || fail "feed did not start"
common=(--data "$work/data" --set process.trigger_ms=300)
"$BIN" "${common[@]}" ingest --source "$url" 2>ingest.log & pids+=($!)
"$BIN" "${common[@]}" process 2>process.log & pids+=($!)
"$BIN" "${common[@]}" serve --listen 127.0.0.1:0 >serve.out 2>serve.log & pids+=($!)
for _ in $(seq 100); do grep -q '^listening' serve.out 2>/dev/null && break; sleep 0.1; done
target=$(awk '/^listening/ {print $2; exit}' serve.out | sed -E 's|^http://||; s|/$||')
[ -n "$target" ] || fail "serve did not start"

cp "$SRC/deploy/alerts.yml" alerts.yml
cat >test-rules.yml <<'RULES'
groups:
  - name: freshet-test
    interval: 1s
    rules:
      - record: freshet:ingest_events:rate10s
        expr: rate(freshet_ingest_events_received_total[10s])
      - alert: FreshetTestEventsFlowing
        expr: freshet_ingest_events_received_total > 10
        labels:
          severity: test
RULES
cat >prom.yml <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [alerts.yml, test-rules.yml]
scrape_configs:
  - job_name: freshet
    static_configs:
      - targets: ["$target"]
CONF
promtool check config prom.yml >>check.log 2>&1 || fail "promtool check config (test config)"
pport=$(free_port)
prom="http://127.0.0.1:$pport"
prometheus --config.file=prom.yml --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="127.0.0.1:$pport" 2>prometheus.log & pids+=($!)
for _ in $(seq 100); do curl -sf "$prom/-/ready" >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf "$prom/-/ready" >/dev/null || fail "prometheus did not become ready"
passed=$((passed + 1))

# 3. Queries.
query() {  # query EXPR -> the first sample's value, or empty
    curl -sf --get --data-urlencode "query=$1" "$prom/api/v1/query" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
wait_true() {  # wait_true SECONDS PYTHON-EXPR-OF-v EXPR
    local secs=$1 cond=$2 expr=$3 v=""
    for _ in $(seq $((secs * 2))); do
        v=$(query "$expr" || true)
        if [ -n "$v" ] && python3 -c "import sys; v=float(sys.argv[1]); sys.exit(0 if ($cond) else 1)" "$v"; then
            echo "  $expr = $v"
            return 0
        fi
        sleep 0.5
    done
    echo "  $expr = '${v}' (wanted $cond)"
    return 1
}
wait_true 60 'v == 1' 'up{job="freshet"}' || fail "freshet is not scraped"
wait_true 30 'v > 10' 'freshet_ingest_events_received_total' || fail "no ingest events"
wait_true 30 'v == 1' 'freshet_stage_up{stage="ingest"}' || fail "ingest not up"
wait_true 30 'v == 1' 'freshet_stage_up{stage="process"}' || fail "process not up"
wait_true 30 'v >= 1' 'freshet_process_epochs_total' || fail "no epochs"
wait_true 30 'v > 0' 'freshet_process_records_total{outcome="silver"}' || fail "no silver records"
wait_true 30 'v > 0' 'sum(freshet_process_dlq_records_total)' || fail "no dlq records (malformed-rate 0.02)"
wait_true 30 '0 <= v < 600' 'freshet_process_freshness_seconds' || fail "freshness out of range"
wait_true 30 '0 < v < 10' 'freshet_process_trigger_interval_seconds' || fail "trigger interval"
wait_true 30 'v > 0' 'freshet_ingest_log_fsync_duration_seconds_count' || fail "no fsync observations"
wait_true 30 'v > 5' 'freshet:ingest_events:rate10s' || fail "events rate (recording rule)"
passed=$((passed + 1))

# The test alert fires; the shipped rules evaluate without errors.
firing=""
for _ in $(seq 60); do
    firing=$(curl -sf "$prom/api/v1/alerts" | python3 -c 'import json,sys
a=json.load(sys.stdin)["data"]["alerts"]
print(" ".join(x["labels"]["alertname"] for x in a if x["state"]=="firing"))' || true)
    case " $firing " in *" FreshetTestEventsFlowing "*) break ;; esac
    sleep 0.5
done
case " $firing " in *" FreshetTestEventsFlowing "*) ;; *) fail "the test alert did not fire (firing: $firing)" ;; esac
echo "  firing: $firing"
curl -sf "$prom/api/v1/rules" | python3 -c 'import json,sys
groups=json.load(sys.stdin)["data"]["groups"]
rules=[r for g in groups if g["name"]=="freshet" for r in g["rules"]]
bad=[(r["name"], r.get("lastError")) for r in rules if r.get("health") != "ok"]
assert len(rules) == 7, "expected the 7 shipped rules (deploy/alerts.yml), got %d" % len(rules)
assert not bad, "rules not healthy: %r" % bad
print("  shipped rules healthy: " + ", ".join(r["name"] for r in rules))' || fail "shipped rules"
passed=$((passed + 1))
echo "$passed passed, 0 failed"
