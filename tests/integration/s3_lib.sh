# s3_lib.sh — sourced by the S3 tests: moto's S3 server on loopback, the
# fault proxy in front of it, and copies of a lake's data files out of the
# bucket. The caller defines fail() and a pids array (killed at exit).
#   moto_start [proxy]   start moto (and the fault proxy); sets E (moto's
#       URL) and P (the proxy's), exports test credentials
#   s3_download TOOL TABLES_JSON LOCAL_ROOT BUCKET PREFIX OUT_DIR OUT_JSON
#       fetch every live data file that `freshet tables --json --files`
#       listed (by its s3://BUCKET/PREFIX/... path, or a local_path under
#       LOCAL_ROOT, the lake's local warehouse path) from BUCKET/PREFIX with s3_tool into OUT_DIR, and write the
#       listing with local_path pointing at the copies to OUT_JSON

s3_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

s3_wait_port() {
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
    fail "nothing listens on 127.0.0.1:$1"
}

moto_start() {
    local moto_port proxy_port here
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    moto_port=$(s3_free_port)
    python3 -m moto.server -H 127.0.0.1 -p "$moto_port" >moto.log 2>&1 &
    pids+=($!)
    s3_wait_port "$moto_port"
    E=http://127.0.0.1:$moto_port
    P=""
    if [ "${1:-}" = proxy ]; then
        proxy_port=$(s3_free_port)
        python3 "$here/s3_fault_proxy.py" "$proxy_port" "$moto_port" >proxy.log 2>&1 &
        pids+=($!)
        s3_wait_port "$proxy_port"
        P=http://127.0.0.1:$proxy_port
    fi
    export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing-secret-value
    unset AWS_SESSION_TOKEN
}

s3_download() {
    python3 - "$E" "$@" <<'PY'
import json, os, subprocess, sys
e, tool, src, root, bucket, prefix, out, dst_json = sys.argv[1:9]
t = json.load(open(src))
root = os.path.realpath(root)
n = 0
for tab in t["tables"]:
    for f in tab.get("data_files") or []:
        if f.get("local_path"):
            rel = os.path.relpath(f["local_path"], root)
        else:  # a bucket's file: its URI, s3://BUCKET/PREFIX/rel
            base = f"s3://{bucket}/{prefix}/"
            assert f["path"].startswith(base), (f["path"], base)
            rel = f["path"][len(base):]
        dst = os.path.join(out, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        subprocess.run([tool, "get", e, bucket, f"{prefix}/{rel}", dst], check=True)
        f["local_path"] = os.path.abspath(dst)
        n += 1
json.dump(t, open(dst_json, "w"))
print(f"downloaded {n} data files from the bucket")
PY
}
