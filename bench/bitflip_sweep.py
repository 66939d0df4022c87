#!/usr/bin/env python3
"""bitflip_sweep.py — how many single-bit flips in Iceberg's Avro and JSON
files `freshet verify` catches (issue 34; docs/DAMAGE.md, "Bit flips that
still decode").

Builds the small lake of tests/integration/damage.py (three epochs), then
for one manifest (bronze's newest *-m0.avro), one manifest list (bronze's
newest snap-*.avro) and one table metadata file (bronze's current
*.metadata.json) flips every Nth bit, one at a time, runs `freshet verify`
and restores the byte. A flip is caught when verify exits 1, missed when it
exits 0; anything else (a signal, a sanitizer report, a hang past 120 s) is
a crash and is listed. Each flip is placed in a region of its file (Avro:
the magic, each header metadata value by key, the sync markers, the
blocks' framing, the records; JSON: the value of the nearest key before
it), and the misses are counted per region; VERBOSE=1 lists each missed
flip with the bytes around it.

Usage: FR_BINARY=build/asan-ubsan/freshet bench/bitflip_sweep.py [--flips N] [--only manifest|list|metadata] [--json OUT]
(N: about how many flips per file, default 200). nice 19 it: it runs
verify 3 x N times.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import damage  # noqa: E402  (its build_lake; FR_BINARY is read there)
from fr_testlib import remove_work  # noqa: E402

BIN = os.environ["FR_BINARY"]
SAN = re.compile(r"ERROR: AddressSanitizer|runtime error:|SUMMARY: UndefinedBehavior")


def verify(data):
    try:
        p = subprocess.run([BIN, "--data", data, "verify"], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "crash", "hang"
    out = (p.stdout + p.stderr).decode(errors="replace")
    if p.returncode not in (0, 1) or SAN.search(out):
        return "crash", out[-300:]
    if p.returncode == 0:
        return "missed", ""
    fails = [l.split()[0] for l in out.splitlines() if " FAIL " in l]
    return "caught", ",".join(fails) or out.strip().splitlines()[-1][:120]


def _varint(b, i):
    v = shift = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return (v >> 1) ^ -(v & 1), i


def avro_regions(b):
    """[(start, end, name)] of an Avro object container: the magic, each
    header metadata value (by key), the header's framing, the sync markers,
    each block's framing (count, size) and its records."""
    out, i = [(0, 4, "magic")], 4
    while True:
        n, i = _varint(b, i)
        if n == 0:
            break
        if n < 0:
            n = -n
            _, i = _varint(b, i)
        for _ in range(n):
            kl, i = _varint(b, i)
            key = b[i:i + kl].decode(errors="replace")
            i += kl
            vl, j = _varint(b, i)
            out.append((j, j + vl, "header " + key))
            i = j + vl
    out.append((i, i + 16, "sync marker"))
    i += 16
    while i < len(b):
        s = i
        _, i = _varint(b, i)
        size, i = _varint(b, i)
        out.append((s, i, "block count and size"))
        out.append((i, i + size, "records"))
        out.append((i + size, i + size + 16, "sync marker"))
        i += size + 16
    return out


def region(raw, path, at):
    if path.endswith(".avro"):
        for s, e, name in avro_regions(raw):
            if s <= at < e:
                return name
        return "header framing"
    keys = [(m.start(), m.group(1)) for m in re.finditer(rb'"([A-Za-z0-9._-]+)"\s*:', raw)]
    inside = [k for s, k in keys if s <= at]
    return "json value of " + (inside[-1].decode() if inside else "(none)")


def sweep(data, path, flips):
    raw = open(path, "rb").read()
    bits = len(raw) * 8
    step = max(1, bits // flips)
    res = {"file": os.path.relpath(path, data), "bytes": len(raw), "step_bits": step,
           "caught": 0, "missed": 0, "crash": 0, "missed_at": [], "crashes": [], "caught_by": {},
           "missed_in": {}, "flips_in": {}}
    try:
        for bit in range(step // 2, bits, step):
            b = bytearray(raw)
            b[bit // 8] ^= 1 << (bit % 8)
            with open(path, "wb") as f:
                f.write(b)
            kind, why = verify(data)
            res[kind] += 1
            where = region(raw, path, bit // 8)
            res["flips_in"][where] = res["flips_in"].get(where, 0) + 1
            if kind == "missed":
                res["missed_in"][where] = res["missed_in"].get(where, 0) + 1
            if kind == "missed":
                at = bit // 8
                res["missed_at"].append((at, raw[max(0, at - 12):at + 12].decode("latin-1")))
            elif kind == "crash":
                res["crashes"].append((bit, why))
            else:
                res["caught_by"][why] = res["caught_by"].get(why, 0) + 1
    finally:
        with open(path, "wb") as f:
            f.write(raw)
    return res


def main():
    args = sys.argv[1:]
    flips, out_json, only = 200, None, None
    while args:
        if args[0] == "--flips":
            flips, args = int(args[1]), args[2:]
        elif args[0] == "--only":  # manifest, list or metadata
            only, args = args[1], args[2:]
        elif args[0] == "--json":
            out_json, args = args[1], args[2:]
        else:
            sys.exit(__doc__)
    work = tempfile.mkdtemp(prefix="fr-bitflip.")
    try:
        data = damage.build_lake(work)
        meta = os.path.join(data, "lake/warehouse/wiki/bronze_recentchange/metadata")
        newest = lambda pat: max(glob.glob(os.path.join(meta, pat)), key=os.path.getmtime)
        kinds = {"manifest": "*-m0.avro", "list": "snap-*.avro", "metadata": "0*.metadata.json"}
        files = [newest(p) for k, p in kinds.items() if only in (None, k)]
        results = [sweep(data, f, flips) for f in files]
        assert verify(data)[0] == "missed", "the restored lake does not verify"
    finally:
        remove_work(work)
    for r in results:
        n = r["caught"] + r["missed"] + r["crash"]
        print(f"{r['file']}: {r['bytes']} bytes, every {r['step_bits']}th bit: {n} flips, "
              f"caught {r['caught']} ({100.0 * r['caught'] / n:.0f} %), missed {r['missed']}, crashes {r['crash']}")
        for why, k in sorted(r["caught_by"].items(), key=lambda x: -x[1])[:6]:
            print(f"    caught {k:4d} by {why}")
        for where, k in sorted(r["flips_in"].items(), key=lambda x: -x[1]):
            print(f"    in {where}: {k} flips, missed {r['missed_in'].get(where, 0)}")
        if os.environ.get("VERBOSE"):
            for at, ctx in r["missed_at"]:
                print(f"    missed at byte {at:6d}: {ctx!r}")
        for bit, why in r["crashes"]:
            print(f"    CRASH at bit {bit}: {why}")
    if out_json:
        with open(out_json, "w") as f:
            json.dump(results, f, indent=1)
    sys.exit(1 if any(r["crash"] for r in results) else 0)


if __name__ == "__main__":
    main()
