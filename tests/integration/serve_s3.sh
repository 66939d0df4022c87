#!/usr/bin/env bash
# serve_s3.sh — `freshet serve` over a lake whose warehouse is an S3 bucket
# (lake.warehouse = s3://lake/wh) on moto's S3 server on 127.0.0.1, serve
# reading it through the fault proxy (s3_fault_proxy.py). A short faulty
# synthetic log is processed into the bucket (as process_s3.sh does), then:
#   http    (curl) every data file /api/v1/tables lists, and a 1 MiB object
#           streamed in chunks, come back byte for byte as moto holds them
#           (fetched from moto with s3_tool, not through serve); single,
#           open, suffix and chunk-crossing ranges give 206 and exactly
#           their bytes; HEAD gives Content-Length and Accept-Ranges; a range
#           past the end is 416, a missing key 404; path escapes are 400 and
#           never reach the object outside the prefix; the store refusing is
#           502, unavailable 503 (Retry-After), a chunk failing mid-body
#           closes the connection; each is counted in /metrics;
#           then tests/interop/serve_s3_readers.mjs: icebird and hyparquet
#           read every table through /lake/ and count what DuckDB counts
#           over the data files downloaded from the bucket.
#   browser (Chromium) tests/browser/explorer_s3.mjs: the SQL explorer's
#           row counts over the S3 lake equal DuckDB's over the downloads.
# Usage: serve_s3.sh S3_TOOL [http|browser]. Exit 77 when moto, the npm
# readers or (browser) chromium are absent.
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
TOOL=${1:?usage: serve_s3.sh S3_TOOL [http|browser]}
MODE=${2:-http}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
python3 -c 'import moto.server' 2>/dev/null || { echo "skip: python3 moto is not installed"; exit 77; }
command -v node >/dev/null || { echo "skip: node is not installed"; exit 77; }
for pkg in @duckdb/node-api icebird hyparquet; do
    [ -d "$src/tests/interop/node_modules/$pkg" ] ||
        { echo "skip: tests/interop/node_modules/$pkg missing (scripts/setup.sh --test)"; exit 77; }
done
if [ "$MODE" = browser ]; then
    [ -x /usr/bin/chromium ] || { echo "skip: /usr/bin/chromium is missing"; exit 77; }
    [ -d "$src/tests/browser/node_modules/playwright-core" ] ||
        { echo "skip: tests/browser/node_modules missing (scripts/setup.sh --test)"; exit 77; }
    [ -f "$src/web/vendor/duckdb/duckdb-browser.mjs" ] ||
        { echo "skip: web/vendor is missing (scripts/setup.sh)"; exit 77; }
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-serve-s3.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
passed=0
fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "PASS $*"; passed=$((passed + 1)); }
# shellcheck source=s3_lib.sh
. "$here/s3_lib.sh"
moto_start proxy
curl -sf -X PUT "$E/lake" >/dev/null || fail "cannot create the bucket"

# ---- the lake: a short faulty log processed into the bucket ------------------
"$BIN" feed --dump --synthetic --seed 9 --count 3000 --start 2026-11-01T00:00:00Z --event-rate 4 \
    --dup-rate 0.03 --late-rate 0.02 --late-ms 300000 --malformed-rate 0.01 \
    --malformed-kinds truncated,missing_wiki,type_invalid >events.ndjson
"$BIN" feed --listen 127.0.0.1:0 --file events.ndjson --close-at-end >feed.out 2>feed.log &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' feed.out 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^listening/ {print $2; exit}' feed.out)
[ -n "$url" ] || fail "feed did not start"
"$BIN" --data d --set ingest.stall_timeout_s=5 ingest --source "$url" 2>ingest.log &
ing=$!
for _ in $(seq 600); do grep -q 'stream ended after' ingest.log && break; sleep 0.1; done
grep -q 'stream ended after' ingest.log || fail "ingest did not see the stream's end"
sleep 0.5 # the group commit (log.fsync_interval_ms)
kill -TERM "$ing"; wait "$ing" || true
s3set=(--data d --set lake.warehouse=s3://lake/wh --set s3.max_attempts=2 --set s3.retry_budget_ms=2000)
"$BIN" "${s3set[@]}" --set "s3.endpoint=$E" --set process.epoch_max_records=600 process --once \
    2>process.log || fail "process into the bucket: $(tail -3 process.log)"
[ "$(find d/lake -name '*.parquet' | wc -l)" = 0 ] || fail "data files were written to local disk"

# Objects of our own: 1 MiB of random bytes under the prefix (streamed in
# chunks), and one outside the prefix that no /lake/ URL may reach.
head -c 1048576 /dev/urandom >big.bin
curl -sf -X PUT -H "Content-Type: application/octet-stream" --data-binary @big.bin "$E/lake/wh/extra/big.bin" >/dev/null || fail "put big.bin"
echo "outside the warehouse prefix" >secret.txt
curl -sf -X PUT -H "Content-Type: application/octet-stream" --data-binary @secret.txt "$E/lake/secret.txt" >/dev/null || fail "put secret.txt"
curl -sf -X PUT -H "Content-Type: application/octet-stream" --data-binary @secret.txt "$E/lake/whx/secret.txt" >/dev/null || fail "put whx/secret.txt"

# ---- the data files, downloaded from moto (not through serve) ----------------
"$BIN" "${s3set[@]}" --set "s3.endpoint=$E" tables --json --files >tables.json ||
    fail "freshet tables over the bucket"
python3 - "$E" "$TOOL" <<'PY' || fail "downloading the bucket's data files"
import json, os, subprocess, sys
e, tool = sys.argv[1], sys.argv[2]
t = json.load(open("tables.json"))
root = os.path.realpath("d/lake/warehouse")
files = []
for tab in t["tables"]:
    for f in tab.get("data_files") or []:
        base = "s3://lake/wh/"  # a bucket's file is named by its URI (local_path null)
        rel = f["path"][len(base):] if f["path"].startswith(base) else os.path.relpath(f["local_path"], root)
        dst = os.path.join("bucket", rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        subprocess.run([tool, "get", e, "lake", f"wh/{rel}", dst], check=True)
        files.append({"table": tab["name"], "rel": rel, "local": os.path.abspath(dst),
                      "bytes": os.path.getsize(dst)})
json.dump(files, open("downloaded.json", "w"))
print(f"downloaded {len(files)} data files from the bucket")
PY

# ---- a warehouse serve cannot read: refused at once, saying what is missing --
if "$BIN" --data d --set lake.warehouse=s3://lake/wh --set s3.endpoint= serve --listen 127.0.0.1:0 \
    >bad.out 2>bad.log </dev/null; then fail "serve started without s3.endpoint"; fi
grep -q 's3.endpoint is not set' bad.log || fail "no clear refusal without s3.endpoint: $(tail -2 bad.log)"
if "$BIN" --data d --set lake.warehouse=gs://lake/wh serve --listen 127.0.0.1:0 \
    >bad.out 2>bad.log </dev/null; then fail "serve started on a gs:// warehouse"; fi
grep -q 's3://bucket/prefix' bad.log || fail "no clear refusal of gs://: $(tail -2 bad.log)"
pass "serve refuses at start a warehouse it cannot read (no s3.endpoint; not s3://)"

# ---- serve over the bucket, through the fault proxy --------------------------
"$BIN" "${s3set[@]}" --set "s3.endpoint=$P" serve --listen 127.0.0.1:0 >serve.out 2>serve.log &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' serve.out 2>/dev/null && break; sleep 0.1; done
base=$(awk '/^listening/ {print $2; exit}' serve.out)
[ -n "$base" ] || fail "serve did not start: $(tail -3 serve.log)"
base=${base%/}

if [ "$MODE" = browser ]; then
    node "$src/tests/browser/explorer_s3.mjs" "$base" "$work/downloaded.json" "$work/browser" ||
        fail "the explorer over the S3 lake"
    exit 0
fi

# ---- (a) curl ----------------------------------------------------------------
curl -sf "$base/api/v1/tables" >api.json || fail "/api/v1/tables over the bucket"
python3 - <<'PY' || fail "/api/v1/tables does not list the bucket's data files as /lake/ URLs"
import json
api = json.load(open("api.json"))
down = json.load(open("downloaded.json"))
urls = sorted(f["url"] for t in api["tables"] for f in t["files"])
want = sorted("/lake/" + d["rel"] for d in down)
assert urls == want, (urls[:3], want[:3])
assert all(t["metadata_url"] and t["metadata_url"].startswith("/lake/wiki/") for t in api["tables"]), \
    [t["metadata_url"] for t in api["tables"]]
print(len(urls), "files")
PY
pass "/api/v1/tables lists the bucket's $(python3 -c 'import json; print(len(json.load(open("downloaded.json"))))') data files as /lake/ URLs"

# Every data file, whole and as its last 8 bytes (what a Parquet reader
# asks first), equals moto's bytes.
n=0
while read -r rel local; do
    curl -sf "$base/lake/$rel" -o got.bin || fail "GET /lake/$rel"
    cmp -s got.bin "$local" || fail "/lake/$rel differs from the object in the bucket"
    curl -sf -H 'Range: bytes=-8' "$base/lake/$rel" -o tail.bin || fail "suffix range of /lake/$rel"
    tail -c 8 "$local" | cmp -s - tail.bin || fail "the last 8 bytes of /lake/$rel differ"
    n=$((n + 1))
done < <(python3 -c 'import json
for d in json.load(open("downloaded.json")): print(d["rel"], d["local"])')
[ "$n" -gt 6 ] || fail "only $n data files"
pass "$n data files through /lake/ equal the bucket's objects (whole, and their last 8 bytes)"

# The 1 MiB object, compared with what moto gives directly.
"$TOOL" get "$E" lake wh/extra/big.bin moto-big.bin || fail "s3_tool get big.bin"
cmp -s moto-big.bin big.bin || fail "moto does not hold what was put"
B="$base/lake/extra/big.bin"
code=$(curl -s -o got.bin -w '%{http_code}' "$B" || true)
[ "$code" = 200 ] && cmp -s got.bin moto-big.bin || fail "GET of the 1 MiB object: $code, or other bytes"
range_check() { # RANGE OFFSET LENGTH: 206, Content-Range and exactly those bytes
    curl -s -D h.txt -o part.bin -H "Range: bytes=$1" "$B" || fail "GET Range $1"
    grep -q '^HTTP/1.1 206' h.txt || fail "Range $1: $(head -1 h.txt)"
    grep -qi "^content-range: bytes $2-$(($2 + $3 - 1))/1048576" h.txt ||
        fail "Range $1: $(grep -i content-range h.txt)"
    cmp -s <(tail -c +$(($2 + 1)) moto-big.bin | head -c "$3") part.bin ||
        fail "Range $1: the bytes differ from moto's"
}
range_check 0-0 0 1
range_check 100-299999 100 299900        # crosses the 256 KiB chunk boundary
range_check 262140-262150 262140 11       # around the boundary
range_check 1000000- 1000000 48576        # open range to the end
range_check -5000 1043576 5000            # suffix
range_check 1048000-9999999 1048000 576   # clipped at the end
pass "ranges of the 1 MiB object (single, open, suffix, clipped, across chunks): 206 and exactly moto's bytes"

# 12 readers at once (more than the 4 workers and their 4 clients): each
# gets its own range, whole and right.
cpids=()
for i in $(seq 0 11); do
    curl -sf -H "Range: bytes=$((i * 80000))-$((i * 80000 + 299999))" "$B" -o "par$i.bin" & cpids+=($!)
done
for p in "${cpids[@]}"; do wait "$p" || fail "a concurrent range request failed"; done
for i in $(seq 0 11); do
    cmp -s <(tail -c +$((i * 80000 + 1)) moto-big.bin | head -c 300000) "par$i.bin" ||
        fail "concurrent range $i: the bytes differ from moto's"
done
pass "12 concurrent range requests (across chunks) each got exactly moto's bytes"

curl -sI "$B" >head.txt
grep -q '^HTTP/1.1 200' head.txt && grep -qi '^content-length: 1048576' head.txt &&
    grep -qi '^accept-ranges: bytes' head.txt || fail "HEAD: $(tr -d '\r' <head.txt | tr '\n' ' ')"
code=$(curl -s -D h.txt -o /dev/null -w '%{http_code}' -H 'Range: bytes=1048576-' "$B" || true)
[ "$code" = 416 ] && grep -qi '^content-range: bytes \*/1048576' h.txt || fail "range past the end: $code"
code=$(curl -s -o nf.json -w '%{http_code}' "$base/lake/wiki/no_such_table/data/x.parquet" || true)
[ "$code" = 404 ] && grep -q '"not_found"' nf.json || fail "a missing key: $code $(cat nf.json)"
etag=$(grep -i '^etag:' head.txt | cut -d' ' -f2- | tr -d '\r')
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$B" || true)
[ "$code" = 304 ] || fail "If-None-Match with the ETag: $code"
pass "HEAD (Content-Length, Accept-Ranges), 416 past the end, 404 for a missing key, 304 on the ETag"

# Path escapes: refused with 400, and the object outside the prefix is never sent.
for p in '../secret.txt' '..%2Fsecret.txt' '%2e%2e/secret.txt' 'extra/../../secret.txt' \
         '%2E%2E%2Fsecret.txt' 'x/..%5C..%5Csecret.txt' '.secret' '/secret.txt' \
         '%2Fsecret.txt' '../whx/secret.txt' 'extra/%00' 'extra//big.bin' './extra/big.bin'; do
    code=$(curl -s --path-as-is -o esc.out -w '%{http_code}' "$base/lake/$p" || true)
    [ "$code" = 400 ] || fail "/lake/$p answered $code, not 400"
    ! grep -q 'outside the warehouse prefix' esc.out || fail "/lake/$p sent the object outside the prefix"
done
pass "13 path escapes (.., encoded separators, dot segments, empty segments, NUL) refused with 400"

metric() { curl -sf "$base/metrics" | awk -v k="freshet_serve_lake_s3_failures_total{answer=\"$1\"}" '$1 == k {print $2}'; }
[ "$(metric 503)" = 0 ] && [ "$(metric 502)" = 0 ] && [ "$(metric aborted)" = 0 ] ||
    fail "failures counted before any: $(curl -sf "$base/metrics" | grep lake_s3)"
fault() { curl -sf "$P/__fault?$1" >/dev/null || fail "cannot set the fault rule $1"; }
fault 'mode=503&count=-1&method=HEAD'
code=$(curl -s -D h.txt -o err.json -w '%{http_code}' "$B" || true)
[ "$code" = 503 ] && grep -qi '^retry-after:' h.txt && grep -q '"unavailable"' err.json ||
    fail "the store unavailable: $code $(cat err.json)"
curl -sf "$P/__clear" >/dev/null
fault 'mode=403&count=1&method=HEAD'
code=$(curl -s -o err.json -w '%{http_code}' "$B" || true)
[ "$code" = 502 ] && grep -q '"bad_gateway"' err.json || fail "the store refusing: $code $(cat err.json)"
! grep -q 'testing-secret-value' err.json || fail "the secret is in the answer"
curl -sf "$P/__clear" >/dev/null
fault 'mode=503&count=-1&method=GET&match=big.bin'
rm -f short.bin; touch short.bin
code=$(curl -s -o short.bin -w '%{http_code}' "$B" || true)
curl -sf "$P/__clear" >/dev/null
[ "$(stat -c %s short.bin)" -lt 1048576 ] || fail "a failed chunk still gave the whole body ($code)"
[ "$(metric 503)" = 1 ] && [ "$(metric 502)" = 1 ] && [ "$(metric aborted)" = 1 ] ||
    fail "failures not counted: $(curl -sf "$base/metrics" | grep lake_s3)"
curl -sf "$B" -o got.bin && cmp -s got.bin moto-big.bin || fail "a read after the faults cleared"
pass "the store unavailable: 503 with Retry-After; refusing: 502 (no secret); a chunk failing mid-body: short body; each counted"

# ---- (b) icebird and hyparquet through /lake/, against DuckDB over the downloads
(cd "$src/tests/interop" && node serve_s3_readers.mjs "$base" s3://lake/wh "$work/downloaded.json") ||
    fail "icebird / hyparquet over serve's /lake/"
pass "icebird and hyparquet read the S3 lake through /lake/"
echo "serve_s3: $passed checks passed"
