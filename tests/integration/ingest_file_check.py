"""ingest_file_check.py — the oracle of tests/integration/ingest_file.sh.

expect FILE[@NAME]...  from the input files themselves (decompressed with
                     Python's gzip / the zstd CLI), the lines ingest --file
                     must store: (name, byte offset, payload bytes), plus the
                     counts it must report. Written to expect.json.
check DUMP... [--order]  compare `freshet log dump` output (one file per
                     partition) with expect.json: every expected line exactly
                     once, nothing else; --order: also in file order.
"""
import base64, gzip, json, os, subprocess, sys

MAX = 1048576

def raw(path):
    if path.endswith(".gz"):
        return gzip.open(path, "rb").read()
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-q", "-d", "-c", path], check=True, capture_output=True).stdout
    return open(path, "rb").read()

def lines_of(data):
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl
        line = data[pos:end]
        if line.endswith(b"\r"):
            line = line[:-1]
        yield pos, line
        pos = end + 1

def expect(paths):
    out, counts = [], dict(lines=0, canaries=0, oversize=0, empty=0, framing=0)
    for path in paths:
        # PATH@NAME: the file read as NAME (standard input is "-")
        path, _, name = path.partition("@")
        name = name or os.path.basename(path)
        for off, line in lines_of(raw(path)):
            counts["lines"] += 1
            if len(line) > MAX:
                counts["oversize"] += 1
                continue
            if line.strip(b" \t") == b"":
                counts["empty"] += 1
                continue
            if line.startswith(b"data:"):
                line = line[5:]
                if line.startswith(b" "):
                    line = line[1:]
                if not line:
                    counts["empty"] += 1
                    continue
            elif line.startswith((b":", b"event:", b"id:", b"retry:")):
                counts["framing"] += 1
                continue
            try:
                ev = json.loads(line)
                if isinstance(ev, dict) and isinstance(ev.get("meta"), dict) and ev["meta"].get("domain") == "canary":
                    counts["canaries"] += 1
                    continue
            except ValueError:
                pass
            out.append([name, off, base64.b64encode(line).decode()])
    json.dump({"records": out, "counts": counts}, open("expect.json", "w"))
    print(" ".join(f"{k}={v}" for k, v in counts.items()), f"records={len(out)}")

def payload_bytes(p):
    if isinstance(p, dict) and set(p) == {"base64"}:
        return base64.b64decode(p["base64"])
    if isinstance(p, str):
        return p.encode()
    return None  # an object: compare parsed

def same(got, want_b64):
    want = base64.b64decode(want_b64)
    b = payload_bytes(got)
    if b is not None:
        return b == want
    try:
        return json.loads(want) == got
    except ValueError:
        return False

def check(dumps, order):
    exp = json.load(open("expect.json"))["records"]
    want = {(n, o): p for n, o, p in exp}
    seen, bad = {}, 0
    for d in dumps:
        last = {}
        for text in open(d, encoding="utf-8"):
            rec = json.loads(text)
            pos = rec["headers"].get("file_pos")
            if pos is None:
                print("record without file_pos:", text[:200]); bad += 1; continue
            size, head, off, name = pos.split(" ", 3)
            key = (name, int(off))
            seen[key] = seen.get(key, 0) + 1
            if key not in want:
                print("unexpected record", key); bad += 1
            elif not same(rec["payload"], want[key]):
                print("payload differs at", key); bad += 1
            if order and name == last.get("name") and int(off) <= last["off"]:
                print("out of file order at", key); bad += 1
            last = {"name": name, "off": int(off)}
    dup = sum(1 for k, c in seen.items() if c > 1)
    missing = [k for k in want if k not in seen]
    print(f"expected {len(want)} records, log holds {sum(seen.values())}: "
          f"{len(missing)} missing, {dup} duplicated, {bad} wrong")
    if missing[:5]:
        print("first missing:", missing[:5])
    return 0 if not missing and not dup and not bad else 1

if __name__ == "__main__":
    if sys.argv[1] == "expect":
        expect(sys.argv[2:])
    else:
        args = [a for a in sys.argv[2:] if a != "--order"]
        sys.exit(check(args, "--order" in sys.argv))
