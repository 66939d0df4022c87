#!/usr/bin/env bash
# objstore.sh — the S3 warehouse against moto's S3 server on 127.0.0.1.
#
#   1. objects: put/get/range/head/list (1105 keys, two pages)/delete,
#      create-only refusal, multipart above the threshold read back equal
#   2. faults from s3_fault_proxy.py in front of moto: 503, 500, a stall,
#      a dropped connection and a cut answer are retried and the object holds
#      its bytes exactly once; persistent 503s and stalls give a retriable
#      error after the last attempt; a part failing mid-multipart is retried,
#      or, when it keeps failing, the upload is aborted and nothing is left
#   3. a writer SIGKILLed mid-multipart leaves no visible object, and the
#      clean-up aborts its orphan upload
#   4. an Iceberg table created, appended to twice and read back through the
#      S3 adapter; its Parquet files downloaded and checked by hyparquet; a
#      commit whose metadata writes keep failing leaves the table where it
#      was, its replay commits once, and the orphan clean-up removes the
#      failed attempt's file
#   5. moto in its authenticating mode: our SigV4 is accepted with the right
#      key; a wrong secret, an unknown key id and a bad session token fail at
#      once with FR_ECREDENTIAL and a message without the secret
#
# Usage: objstore.sh path/to/s3_tool. Exit 77 when moto is not installed.
set -euo pipefail
tool=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)

python3 -c 'import moto.server' 2>/dev/null || {
    echo "skip: python3 moto is not installed (scripts/setup.sh --test installs python3-moto)"
    exit 77
}
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/frs3.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
wait_port() { # without sending a request (moto's auth mode counts requests)
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "FAIL: nothing listens on 127.0.0.1:$1"; exit 1
}
fail() { echo "FAIL: $*"; exit 1; }

moto_port=$(free_port)
python3 -m moto.server -H 127.0.0.1 -p "$moto_port" >"$work/moto.log" 2>&1 &
pids+=($!)
proxy_port=$(free_port)
python3 "$here/s3_fault_proxy.py" "$proxy_port" "$moto_port" >"$work/proxy.log" 2>&1 &
pids+=($!)
wait_port "$moto_port"
wait_port "$proxy_port"
E=http://127.0.0.1:$moto_port
P=http://127.0.0.1:$proxy_port
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing-secret-value
unset AWS_SESSION_TOKEN
rule() { curl -sf "$P/__fault?$1" >/dev/null || fail "cannot set fault rule $1"; }
clear_rule() { curl -sf "$P/__clear" >/dev/null; }

echo "== 1. objects"
"$tool" basic "$E" lake

echo "== 2. faults"
for mode in 503 500 stall drop; do
    rule "mode=$mode&count=2"
    "$tool" retry "$P" lake "retry/$mode" 2
done
rule "mode=cut&count=2&method=GET"
"$tool" retry "$P" lake retry/cut 2
clear_rule
rule "mode=503&count=-1"
"$tool" fail "$P" lake fail/503 | tee "$work/fail.txt"
grep -q 'HTTP 503 SlowDown' "$work/fail.txt" || fail "no clear 503 message"
rule "mode=stall&count=-1"
"$tool" fail "$P" lake fail/stall | tee "$work/fail.txt"
grep -q 'no byte moved' "$work/fail.txt" || fail "no clear stall message"
clear_rule
"$tool" orphans "$E" lake fail/ 0 # nothing half-written by the failed puts
rule "mode=503&count=2&match=partNumber%3D2"
"$tool" multipart "$P" lake mp/retried ok
rule "mode=drop&count=1&match=uploadId%3D"
"$tool" multipart "$P" lake mp/dropped ok
rule "mode=503&count=-1&match=partNumber%3D2"
"$tool" multipart "$P" lake mp/failed fail
clear_rule
"$tool" orphans "$E" lake mp/failed 0 # the client aborted its own upload
curl -sf "$P/__stats"; echo

echo "== 3. SIGKILL mid-multipart"
marker=$work/part1
"$tool" hang "$E" lake mp/killed "$marker" &
hang=$!
for _ in $(seq 300); do [ -f "$marker" ] && break; sleep 0.1; done
[ -f "$marker" ] || fail "the writer never sent its first part"
kill -9 "$hang"
wait "$hang" 2>/dev/null || true
"$tool" orphans "$E" lake mp/killed 1

echo "== 4. Iceberg table on S3"
"$tool" iceberg "$E" lake wh/prod "$work/data" "$work/out.parquet"
if [ -d "$src/tests/interop/node_modules/hyparquet" ] && command -v node >/dev/null; then
    node "$here/s3_parquet_check.mjs" "$src/tests/interop" 1500 "$work/out.parquet.0" "$work/out.parquet.1"
else
    echo "note: hyparquet not installed (scripts/setup.sh --test); independent read skipped"
fi

echo "== 4b. a lake commit failing on S3, then replayed"
"$tool" commit "$P" lake wh/commit "$work/data2" setup
rule "mode=503&count=-1&method=PUT&match=%2Fmetadata%2F"
"$tool" commit "$P" lake wh/commit "$work/data2" fail
clear_rule
"$tool" commit "$P" lake wh/commit "$work/data2" retry

echo "== 5. credentials against moto's authenticating mode"
auth_port=$(free_port)
INITIAL_NO_AUTH_ACTION_COUNT=3 python3 -m moto.server -H 127.0.0.1 -p "$auth_port" >"$work/moto-auth.log" 2>&1 &
pids+=($!)
wait_port "$auth_port"
A=http://127.0.0.1:$auth_port
read -r kid secret < <(python3 - "$A" <<'EOF'
import boto3, json, sys
iam = boto3.client("iam", endpoint_url=sys.argv[1], region_name="us-east-1",
                   aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
iam.create_user(UserName="freshet")
iam.put_user_policy(UserName="freshet", PolicyName="all", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
k = iam.create_access_key(UserName="freshet")["AccessKey"]
print(k["AccessKeyId"], k["SecretAccessKey"])
EOF
)
[ -n "$kid" ] || fail "could not create an IAM user in moto"
AWS_ACCESS_KEY_ID=$kid AWS_SECRET_ACCESS_KEY=$secret "$tool" retry "$A" authb ok 0
AWS_ACCESS_KEY_ID=$kid AWS_SECRET_ACCESS_KEY=wrong-secret-for-test "$tool" cred "$A" authb no1 | tee "$work/cred.txt"
grep -q SignatureDoesNotMatch "$work/cred.txt" || fail "wrong secret not reported"
if grep -q wrong-secret-for-test "$work/cred.txt"; then fail "the secret appeared in a message"; fi
AWS_ACCESS_KEY_ID=AKIAUNKNOWN000000000 AWS_SECRET_ACCESS_KEY=$secret "$tool" cred "$A" authb no2 | tee "$work/cred.txt"
grep -q InvalidAccessKeyId "$work/cred.txt" || fail "unknown key id not reported"
AWS_ACCESS_KEY_ID=$kid AWS_SECRET_ACCESS_KEY=$secret AWS_SESSION_TOKEN=not-a-valid-token "$tool" cred "$A" authb no3 | tee "$work/cred.txt"
if grep -q "$secret" "$work/cred.txt"; then fail "the secret appeared in a message"; fi
echo "objstore: all checks passed"
