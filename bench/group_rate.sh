#!/usr/bin/env bash
# group_rate.sh — how fast a consumer group commits through one REST catalog
# on S3 (issue 31, docs/SCALEOUT.md "Commit throughput"): the reference
# topology of tests/integration/scaleout_reference.sh without the kills.
#
#   librdkafka's mock cluster in its own process (3 brokers, 6 partitions)
#   <- freshet ingest <- freshet feed (COUNT synthetic events);
#   moto's S3 server behind two tests/integration/s3_fault_proxy.py (no
#   fault set: one counts the members' S3 requests, the other serve's);
#   freshet serve as the REST catalog, its metadata in the same bucket;
#   INSTANCES `freshet process --group` instances (no enrichment), trigger
#   100 ms, process.epoch_max_records=EPOCH_RECORDS (10), so that one epoch
#   is small and the figure is the commit path's.
#
# From the first member's start until the group has consumed the log:
# elapsed seconds, epochs committed (the members' "epoch N:" info lines),
# REST attempts lost, S3 requests in all and per epoch by kind, to
# OUT/group-rate.json and a line on stdout. Loopback only.
# usage: BIN=build/release/freshet bench/group_rate.sh [OUT] [COUNT] [INSTANCES]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
BIN=${BIN:-${FR_BUILD_DIR:-$root/build/release}/freshet}
MOCK=${MOCK:-$(dirname "$BIN")/kafka_mock}
OUT=${1:-$root/bench/out/group-rate}
COUNT=${2:-3000}
INSTANCES=${3:-3}
EPOCH_RECORDS=${EPOCH_RECORDS:-10}
[ -x "$BIN" ] || { echo "no freshet binary at $BIN" >&2; exit 2; }
[ -x "$MOCK" ] || { echo "no kafka_mock at $MOCK (build the tests)" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-group-rate.XXXXXX")
pids=(); members=(); mock_pid=""
cleanup() {
    for p in "${members[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    [ -n "$mock_pid" ] && kill -TERM "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "group_rate: $*" >&2; exit 1; }
cd "$work"
url_of() { for _ in $(seq 150); do grep -q '^listening' "$1" 2>/dev/null && break; sleep 0.1; done
           awk '/^listening/ {print $2; exit}' "$1"; }
# shellcheck source=../tests/integration/kafka_lib.sh
. "$root/tests/integration/kafka_lib.sh"
mock_start "$MOCK" --brokers 3 --partitions 6 --replication 3
# shellcheck source=../tests/integration/s3_lib.sh
. "$root/tests/integration/s3_lib.sh"
moto_start proxy
curl -sf -X PUT "$E/lake" >/dev/null || fail "cannot create the bucket"
s3=(--set lake.warehouse=s3://lake/wh --set "s3.endpoint=$P" --set s3.max_attempts=6)
# serve (the catalog) through a second counting proxy: its requests apart
sp_port=$(s3_free_port)
python3 "$root/tests/integration/s3_fault_proxy.py" "$sp_port" "${E##*:}" >proxy2.log 2>&1 & pids+=($!)
s3_wait_port "$sp_port"
SP=http://127.0.0.1:$sp_port
token=rate-$$
FRESHET_SERVE_API_TOKEN=$token "$BIN" --data "$work/catalog" \
    --set lake.warehouse=s3://lake/wh --set "s3.endpoint=$SP" --set s3.max_attempts=6 serve --listen 127.0.0.1:0 \
    >serve.out 2>serve.log & pids+=($!)
cat_url=$(url_of serve.out); cat_url=${cat_url%/}
[ -n "$cat_url" ] || fail "serve did not start"
kafka=(--set log.backend=kafka --set "kafka.brokers=$brokers" --set log.partitions=6)
export FRESHET_LAKE_CATALOG_TOKEN=$token
group=(--data "$work/inst" "${kafka[@]}" "${s3[@]}" --set "lake.catalog_uri=$cat_url/iceberg"
       --set process.trigger_ms=100 --set "process.epoch_max_records=$EPOCH_RECORDS"
       --set kafka.session_timeout_ms=3000 --set process.idle_timeout_s=0)
"$BIN" feed --listen 127.0.0.1:0 --rate 5000 --synthetic --seed 31 --count "$COUNT" \
    --start 2026-11-01T00:00:00Z --event-rate 20 >feed.out 2>feed.log & feed=$!
url=$(url_of feed.out)
[ -n "$url" ] || fail "feed did not start"
log_end() { log_total "${group[@]}"; }
"$BIN" "${group[@]}" ingest --source "$url" 2>ingest.log & ing=$!
log_settle 600
kill -TERM "$ing"; wait "$ing" || fail "ingest did not exit cleanly"
kill -TERM "$feed"; wait "$feed" || true
total=$(log_end)
# progress: verify straight to moto (not counted), every 3 s (it reads the
# whole lake: polled every second it was most of the requests)
consumed() {
    "$BIN" --data "$work/catalog" --set lake.warehouse=s3://lake/wh --set "s3.endpoint=$E" \
        verify --json 2>/dev/null |
        python3 -c 'import json,sys; d = json.load(sys.stdin); print(d.get("consumed", d["cut"].get("consumed")))' 2>/dev/null || echo -1
}
curl -sf "$P/__stats" >stats0.json; curl -sf "$SP/__stats" >sstats0.json
t0=$(date +%s.%N)
for i in $(seq "$INSTANCES"); do
    "$BIN" "${group[@]}" process --group 2>>"member$i.log" & members+=($!)
done
done_=0
for _ in $(seq 1200); do
    sleep 3
    if [ "$(consumed)" = "$total" ]; then done_=1; break; fi
done
t1=$(date +%s.%N)
curl -sf "$P/__stats" >stats1.json; curl -sf "$SP/__stats" >sstats1.json
[ "$done_" = 1 ] || fail "the group did not consume the log in an hour"
for p in "${members[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${members[@]}"; do wait "$p" || true; done
members=()
epochs=$(cat member*.log | grep -Ec '(process|finalize): info: epoch [0-9]+: ' || true)
lost=$(cat member*.log | grep -Ec 'REST commit attempt|lost the race' || true)
python3 - "$t0" "$t1" "$epochs" "$lost" "$total" "$INSTANCES" "$OUT/group-rate.json" <<'PY'
import json, sys
t0, t1, epochs, lost, total, inst, out = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
def delta(f0, f1):
    a, b = json.load(open(f0)), json.load(open(f1))
    kinds = {k: v - a["kinds"].get(k, 0) for k, v in b["kinds"].items() if v - a["kinds"].get(k, 0)}
    return b["requests"] - a["requests"], kinds, b["upstream_ms"] - a["upstream_ms"]
mreq, mkinds, mms = delta("stats0.json", "stats1.json")
sreq, skinds, sms = delta("sstats0.json", "sstats1.json")
el, e = t1 - t0, max(epochs, 1)
per = lambda kinds: {k: round(v / e, 2) for k, v in sorted(kinds.items())}
r = {"events": total, "instances": inst, "elapsed_s": round(el, 1), "epochs": epochs,
     "epochs_per_s": round(epochs / el, 2), "lost_attempts": lost, "s3_requests": mreq + sreq,
     "s3_requests_per_epoch": round((mreq + sreq) / e, 1),
     "members_per_epoch_by_kind": per(mkinds), "serve_per_epoch_by_kind": per(skinds),
     "upstream_ms_per_epoch": round((mms + sms) / e, 1)}
json.dump(r, open(out, "w"), indent=1)
print(f"group_rate: {epochs} epochs in {el:.1f} s ({epochs / el:.2f}/s), {lost} lost attempts, "
      f"{(mreq + sreq) / e:.1f} S3 requests per epoch ({mreq / e:.1f} members, {sreq / e:.1f} serve)")
print("members", json.dumps(r["members_per_epoch_by_kind"]))
print("serve  ", json.dumps(r["serve_per_epoch_by_kind"]))
PY
