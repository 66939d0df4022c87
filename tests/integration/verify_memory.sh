#!/usr/bin/env bash
# verify_memory.sh — `freshet verify` holds its memory budget on a lake of
# 100,000 events: the synthetic feed's events (duplicates, late, malformed,
# out of order) are loaded straight into the log over two partitions by
# verify_tamper, processed in four epochs, then verified with
# --memory-mb 8. It must pass every check, split the key families into
# K > 1 passes, keep its own key memory under the budget, and keep its peak
# RSS (getrusage of the child, measured here, not by verify) within the
# budget plus a fixed allowance over the RSS of a run that loads nothing.
# ASan's quarantine keeps freed memory resident on purpose, so it is turned
# off for the measured runs. Usage: verify_memory.sh VERIFY_TAMPER_BINARY
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
TAMPER=${1:?usage: verify_memory.sh VERIFY_TAMPER_BINARY}
COUNT=${FR_VERIFY_COUNT:-100000}
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-verify-mem.XXXXXX")
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
cd "$work"

"$BIN" feed --dump --synthetic --seed 21 --count "$COUNT" --start 2026-11-01T00:00:00Z \
    --event-rate 50 --dup-rate 0.02 --late-rate 0.01 --late-ms 300000 --ooo-rate 0.05 \
    --malformed-rate 0.005 --malformed-kinds truncated,missing_meta_id,missing_wiki,namespace_string,meta_dt_not_date,type_invalid \
    >events.ndjson
"$TAMPER" load "$work/data" 2 $((COUNT / 2)) <events.ndjson
rm events.ndjson
"$BIN" --data "$work/data" --set process.epoch_max_records=$((COUNT / 4)) process --once 2>process.log

python3 - "$BIN" "$work/data" <<'PY'
import json, os, resource, subprocess, sys
binary, data = sys.argv[1], sys.argv[2]
env = dict(os.environ)
env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0").lstrip(":")

def run(args):
    """Run freshet in a fresh child; return (exit status, stdout, its peak RSS in KiB)."""
    pid = os.fork()
    if pid == 0:
        out = os.open("child.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.execve(binary, [binary, "--data", data] + args, env)
    _, status, ru = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), open("child.out").read(), ru.ru_maxrss

rc, _, base = run(["verify", "--help"])
assert rc == 0
rc, out, rss = run(["verify", "--json", "--memory-mb", "8"])
d = json.loads(out)
checks = {c["name"]: c for c in d["checks"]}
passes = {n: c["figures"].get("passes", 0) for n, c in checks.items()}
bronze = checks["bronze_count"]["figures"]["bronze_rows"]
print(f"lake: {bronze} bronze rows, {checks['silver_meta_id_unique']['figures']['silver_rows']} silver, "
      f"{checks['gold_epm_recomputed']['figures']['gold_rows']} + {checks['gold_top_recomputed']['figures']['gold_rows']} gold, "
      f"offsets {d['cut']['source_offsets']}")
print("passes:", ", ".join(f"{n}={k}" for n, k in passes.items() if k))
print(f"peak RSS {rss} KiB with --memory-mb 8 (a run that loads nothing: {base} KiB); "
      f"verify's own key memory peak {d['memory']['peak_bytes']} of {d['memory']['budget_bytes']} bytes")
ok = True
def need(cond, msg):
    global ok
    if not cond:
        ok = False
        print("FAIL:", msg)
need(rc == 0 and d["ok"], "verify did not pass: " + "; ".join(
    f"{n}: {c['detail']}" for n, c in checks.items() if c["status"] != "PASS"))
need(bronze >= 95000, f"the lake has only {bronze} bronze rows")
for name in ("bronze_positions_unique", "silver_meta_id_unique", "gold_epm_recomputed", "gold_top_recomputed"):
    need(passes[name] > 1, f"{name} ran in {passes[name]} pass(es), want K > 1")
need(d["memory"]["peak_bytes"] <= d["memory"]["budget_bytes"], "key memory passed the budget")
allowance = 16 * 1024  # KiB: Parquet pages and batches, file lists, table metadata, SQLite
need(rss <= base + 8 * 1024 + allowance,
     f"peak RSS {rss} KiB > {base} + 8 MiB budget + {allowance} KiB allowance")
print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
sys.exit(0 if ok else 1)
PY
