#!/usr/bin/env bash
# verify_labels.sh — `freshet verify` checks gold_top_topics' labels
# (issue 33): the label of each gold row must be the one its top wiki's
# resolved silver_topics rows of the item hold in the newest labelled
# minute of the window (docs/ENRICH.md, "Labels").
#
# A lake processed with enrichment against `freshet feed`'s API fixture:
#   1. verify passes, gold_topics_recomputed with labels_expected > 0;
#   2. a copy whose gold row has another label (verify_tamper
#      relabel-topic) fails exactly gold_topics_recomputed, the message
#      naming the window, the item and both labels;
#   3. a copy whose gold row lost its label (unlabel-topic) passes and
#      counts it (label_missing=1): a row may lack its label by the
#      operator's label-bytes cap or a state saved before labels.
# Loopback only. Usage: verify_labels.sh VERIFY_TAMPER [SEED]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
TAMPER=${1:?usage: verify_labels.sh VERIFY_TAMPER [SEED]}
SEED=${2:-5}
COUNT=2000
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-vlabels.XXXXXX")
pids=""
cleanup() {
    for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "== $f"; tail -15 "$f"; done; exit 1; }
cd "$work"

er=4
start=$(date -u -d "-$((COUNT / er + 120)) sec" +%Y-%m-%dT%H:%M:%SZ)
"$BIN" feed --listen 127.0.0.1:0 --synthetic --seed "$SEED" --count "$COUNT" --rate 3000 \
    --event-rate "$er" --start "$start" >feed.out 2>feed.log & pids="$pids $!"
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || fail "feed did not start"
api=${url%/v2/stream/recentchange}
"$BIN" --data lake ingest --source "$url" 2>ingest.log & ing=$!
prev=-1
for _ in $(seq 300); do
    sleep 0.2
    end=$("$BIN" --data lake log list --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0)
    [ "$end" -ge "$COUNT" ] && [ "$end" = "$prev" ] && break
    prev=$end
done
kill -TERM "$ing"; wait "$ing" || fail "ingest did not stop cleanly"
"$BIN" --data lake --set enrich.enabled=1 --set "enrich.api_url=$api/api/{wiki}/w/api.php" \
    --set enrich.rate_per_s=0 --set process.epoch_max_records=500 process --once 2>process.log ||
    fail "process"

# 1. healthy
"$BIN" --data lake verify >verify.out 2>&1 || { cat verify.out; fail "verify of the healthy lake"; }
line=$(grep -E "^gold_topics_recomputed +PASS" verify.out) || { cat verify.out; fail "gold_topics_recomputed did not pass"; }
echo "$line"
echo "$line" | grep -Eq "labels_expected=[1-9]" || fail "no gold label was checked"
echo "$line" | grep -q "label_missing=0 " || echo "$line" | grep -q "label_missing=0$" ||
    fail "the healthy lake has gold rows without their label"

# 2. a wrong label fails, naming window and item (tampered copies are made
# in place: the catalog holds absolute locations)
cp -a lake pristine
"$TAMPER" relabel-topic lake >relabel.out 2>relabel.log || fail "relabel-topic: $(cat relabel.log)"
read -r _ us _ item < <(head -1 relabel.out)
win=$(python3 -c "import datetime,sys; print(datetime.datetime.fromtimestamp($us / 1e6, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M'))")
set +e; "$BIN" --data lake verify --json >relabel.json 2>relabel-verify.log; rc=$?; set -e
[ "$rc" != 0 ] || fail "verify passed a lake with a wrong gold label"
python3 - relabel.json "$item" "$win" <<'PY' || fail "verify did not fail the wrong label as expected"
import json, sys
d = json.load(open(sys.argv[1]))
item, win = sys.argv[2], sys.argv[3]
failing = sorted(c["name"] for c in d["checks"] if c["status"] == "FAIL")
assert failing == ["gold_topics_recomputed"], failing
c = [c for c in d["checks"] if c["name"] == "gold_topics_recomputed"][0]
detail = c.get("detail", "")
print("verify says:", detail)
assert item in detail and win in detail, (item, win, detail)
assert 'label "Tampered label"' in detail, detail
assert c["figures"]["mismatched"] == 1, c["figures"]
PY

# 3. a missing label is counted, not failed
rm -rf lake; cp -a pristine lake
"$TAMPER" unlabel-topic lake >unlabel.out 2>unlabel.log || fail "unlabel-topic: $(cat unlabel.log)"
"$BIN" --data lake verify >unlabel-verify.out 2>&1 || { cat unlabel-verify.out; fail "verify failed a gold row without its label"; }
grep -Eq "^gold_topics_recomputed +PASS .*label_missing=1( |$)" unlabel-verify.out ||
    { cat unlabel-verify.out; fail "the missing label was not counted"; }
echo "PASS verify_labels"
