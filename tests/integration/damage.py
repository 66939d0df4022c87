#!/usr/bin/env python3
"""damage.py — the damage table of docs/DAMAGE.md, as one data-driven test.

A small lake is built once (feed → ingest → process --once, three epochs,
then 1,000 more records in the log the processor has not read). Each case
in CASES copies it, damages one thing, and runs the commands the table
names. Every run must:

  * exit with the documented code (0 ok, 1 error; never a signal),
  * say what is damaged: its output matches the case's pattern (the file
    or the peer by name),
  * not crash (no sanitizer report), not hang (bounded by a timeout),
  * stay under RSS_BOUND_KIB of peak RSS (ru_maxrss of the child; this is
    the ASan build's, whose shadow memory and quarantine inflate it).

Where the table names a recovery (rebuild from bronze, restore from the
log, a checkpoint moved aside), the recovery runs and `freshet verify`
must then pass.

The S3 and REST cases (hostile peers) are in damage_peers.py; the peers
(moto, the fault proxies, fake catalogs) bind 127.0.0.1 only.

Usage: damage.py [CASE...]   (FR_BINARY: the freshet binary; KEEP=1 keeps the work dir)
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from fr_testlib import exit_on_failures, first_lines, remove_work, start_listening, synthetic_events

BIN = os.environ.get("FR_BINARY") or sys.exit("FR_BINARY must point at the freshet binary")
TIMEOUT_S = 120
RSS_BOUND_KIB = 256 * 1024
SANITIZER = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|SUMMARY: UndefinedBehavior")

failures = []


def run(args, data, want_rc, pattern=None, env=None, label=""):
    """Run freshet --data DATA ARGS; check exit code (None: 0 or 1), pattern,
    sanitizer, RSS. Returns (exit code, output)."""
    cmd = [BIN, "--data", data] + args
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + TIMEOUT_S
        status = None
        while status is None:
            pid, st, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                status, rss = st, ru.ru_maxrss
                break
            if time.monotonic() > deadline:
                p.kill()
                _, status, ru = os.wait4(p.pid, 0)
                rss = ru.ru_maxrss
                status = None
                break
            time.sleep(0.02)
        p.returncode = 0  # reaped above; keep Popen from waiting again
        out.seek(0)
        text = out.read().decode(errors="replace")
    what = f"{label}: freshet {' '.join(args[:3])}"
    problems = []
    if status is None:
        problems.append(f"hung (killed after {TIMEOUT_S} s)")
        rc = None
    elif os.WIFSIGNALED(status):
        rc = -os.WTERMSIG(status)
        problems.append(f"killed by signal {-rc}")
    else:
        rc = os.WEXITSTATUS(status)
        if rc != want_rc and not (want_rc is None and rc in (0, 1)):
            problems.append(f"exit {rc}, want {want_rc}")
    if SANITIZER.search(text):
        problems.append("sanitizer report")
    if pattern and not re.search(pattern, text):
        problems.append(f"output does not match /{pattern}/")
    if rss > RSS_BOUND_KIB:
        problems.append(f"peak RSS {rss} KiB > {RSS_BOUND_KIB} KiB")
    said = next((l for l in text.splitlines() if pattern and re.search(pattern, l)), None)
    said = said or next((l for l in text.splitlines() if "error" in l), "")
    said = re.sub(r"^\S+Z freshet\[\d+\] ", "", said)[:230]
    if problems:
        failures.append(f"{what}: {'; '.join(problems)}")
        print(f"FAIL {what}: {'; '.join(problems)} (rss {rss} KiB)\n" + "\n".join("     | " + l for l in text.splitlines()[-12:]))
    else:
        print(f"ok   {what}: exit {rc}, rss {rss // 1024} MiB  {said}")
    return rc, text


# ---- damage primitives ------------------------------------------------------

def newest(data, pattern):
    files = glob.glob(os.path.join(data, pattern))
    assert files, f"no file matches {pattern}"
    return max(files, key=lambda f: (os.path.getmtime(f), f))


def truncate(path, frac=0.5):
    size = os.path.getsize(path)
    os.truncate(path, int(size * frac))


def flip(path, at):
    """Flip bits of one byte; at < 0 counts from the end."""
    with open(path, "r+b") as f:
        size = os.path.getsize(path)
        pos = at if at >= 0 else size + at
        f.seek(pos)
        b = f.read(1)
        f.seek(pos)
        f.write(bytes([b[0] ^ 0x55]))


def flip_json_key(path, key):
    """Flip one byte of the value of "key" (its first digit or letter)."""
    text = open(path, "rb").read()
    m = re.search(rb'"' + key.encode() + rb'"\s*:\s*"?', text)
    assert m, f"{key} not in {path}"
    flip(path, m.end())


# ---- a Parquet page, found by reading the footer (Thrift compact protocol) ----

def _varint(b, i):
    v = shift = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return v, i


def _zz(v):
    return (v >> 1) ^ -(v & 1)


def _value(b, i, t):
    """One compact-protocol value of type t at b[i]: (value, next index)."""
    if t in (1, 2):
        return t == 1, i
    if t == 3:
        return b[i], i + 1
    if t in (4, 5, 6):
        v, i = _varint(b, i)
        return _zz(v), i
    if t == 7:
        return b[i:i + 8], i + 8
    if t == 8:
        n, i = _varint(b, i)
        return b[i:i + n], i + n
    if t in (9, 10):
        n, et = b[i] >> 4, b[i] & 15
        i += 1
        if n == 15:
            n, i = _varint(b, i)
        out = []
        for _ in range(n):
            if et in (1, 2):  # a bool in a list is one byte
                v, i = b[i] == 1, i + 1
            else:
                v, i = _value(b, i, et)
            out.append(v)
        return out, i
    if t == 11:
        n, i = _varint(b, i)
        if n == 0:
            return {}, i
        kt, vt = b[i] >> 4, b[i] & 15
        i += 1
        for _ in range(n):
            _, i = _value(b, i, kt)
            _, i = _value(b, i, vt)
        return {}, i
    if t == 12:
        out, fid = {}, 0
        while True:
            h = b[i]
            i += 1
            if h == 0:
                return out, i
            ft, delta = h & 15, h >> 4
            if delta:
                fid += delta
            else:
                v, i = _varint(b, i)
                fid = _zz(v)
            out[fid], i = _value(b, i, ft)
    raise ValueError(f"thrift type {t} at byte {i}")


def flip_page(path, column):
    """Flip one byte in the middle of the bytes of the first page of column
    (its dictionary page if it has one: the values), in row group 0. The
    page header and every offset stay intact."""
    data = open(path, "rb").read()
    flen = int.from_bytes(data[-8:-4], "little")
    meta, _ = _value(data, len(data) - 8 - flen, 12)
    for chunk in meta[4][0][1]:  # FileMetaData.row_groups[0].columns
        cmd = chunk[3]  # ColumnChunk.meta_data
        if cmd[3] == [column.encode()]:
            off = cmd.get(11, cmd[9])  # dictionary_page_offset, else data_page_offset
            page, body = _value(data, off, 12)  # PageHeader; body: its first byte
            flip(path, body + page[3] // 2)  # compressed_page_size
            return
    raise AssertionError(f"no column {column} in {path}")


# ---- the lake ---------------------------------------------------------------

def build_lake(work):
    """Three epochs in the lake, 1,000 more records in the log."""
    ev = os.path.join(work, "ev.ndjson")
    synthetic_events(BIN, ev, 5, 3000, "--late-ms", "300000", "--malformed-rate", "0.01",
                     "--malformed-kinds", "truncated,missing_wiki,namespace_string,type_invalid")
    first = os.path.join(work, "first.ndjson")
    first_lines(ev, first, 2000)
    data = os.path.join(work, "pristine")
    for part in (first, ev):  # the second run resumes after the first's last id
        ingest_file(work, data, part)
        if part == first:
            subprocess.run([BIN, "--data", data, "--set", "process.epoch_max_records=700",
                            "process", "--once"], check=True, stderr=subprocess.DEVNULL)
    rc, text = run(["verify"], data, 0, label="pristine")
    assert rc == 0, "the pristine lake does not verify"
    return data


def ingest_file(work, data, path):
    feed, url = start_listening([BIN, "feed", "--listen", "127.0.0.1:0", "--file", path, "--close-at-end"],
                                "feed", stderr=subprocess.DEVNULL)
    try:
        log = os.path.join(work, "ingest.log")
        with open(log, "w") as lf:
            ing = subprocess.Popen([BIN, "--data", data, "--set", "ingest.stall_timeout_s=5",
                                    "ingest", "--source", url], stderr=lf)
            for _ in range(600):
                if "stream ended after" in open(log).read():
                    break
                time.sleep(0.1)
            time.sleep(0.5)  # the group commit
            ing.send_signal(signal.SIGTERM)
            ing.wait(timeout=30)
    finally:
        feed.kill()
        feed.wait()


# ---- the cases --------------------------------------------------------------
# Each: (name, damage(d) -> None, [(args, exit code, pattern)], recovery or None).
# Patterns name the damaged file or peer. A recovery is a list of the same
# shape, run in order on the damaged copy; verify must pass after it.

BRONZE = "lake/warehouse/wiki/bronze_recentchange"
SILVER = "lake/warehouse/wiki/silver_recentchange"
SEG = "log/recentchange/0/00000000000000000000.seg"
V, T, C, P = ["verify"], ["tables"], ["compact"], ["process", "--once"]
I = ["--set", "ingest.stall_timeout_s=1", "--set", "ingest.backoff_max_ms=200", "ingest",
     "--source", "http://127.0.0.1:9/v2/stream/recentchange"]  # nothing listens: it opens the log first


def from_log(d):
    """Restore from the log: a new lake and checkpoint, every epoch again."""
    shutil.move(os.path.join(d, "lake"), os.path.join(d, "lake.damaged"))
    shutil.move(os.path.join(d, "process"), os.path.join(d, "process.damaged"))


def ck_aside(d):
    shutil.move(os.path.join(d, "process/freshet/checkpoint"), os.path.join(d, "checkpoint.damaged"))


def wal_aside(d):
    shutil.move(WAL(d), os.path.join(d, "offsets.wal.damaged"))


def hold_lock(d):
    """Another process holds catalog.db's write lock for the case's runs."""
    ready = os.path.join(d, "locked")
    code = ("import sqlite3,sys,time,os\n"
            "c=sqlite3.connect(sys.argv[1],isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE')\nopen(sys.argv[2],'w').close()\ntime.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-c", code, os.path.join(d, "lake/catalog.db"), ready])
    for _ in range(100):
        if os.path.exists(ready):
            break
        time.sleep(0.05)
    LOCKERS.append(p)


LOCKERS = []
WAL = lambda d: os.path.join(d, "process/freshet/offsets.wal")
MANIFEST = lambda d: newest(d, BRONZE + "/metadata/*-m0.avro")
MLIST = lambda d: newest(d, BRONZE + "/metadata/snap-*.avro")
META = lambda d: newest(d, BRONZE + "/metadata/0*.metadata.json")
SPQ = lambda d: newest(d, SILVER + "/data/*.parquet")
BPQ = lambda d: newest(d, BRONZE + "/data/*.parquet")

CASES = [
    ("manifest-truncated", lambda d: truncate(MANIFEST(d)),
     [(V, 1, r"manifest file://\S+-m0\.avro is \d+ bytes"), (T, 1, r"manifest file://\S+-m0\.avro"),
      (C, 1, r"manifest file://\S+-m0\.avro")],
     [(None, from_log), (P, 0, r"no checkpoint: starting at the beginning of the log"), (V, 0, None)]),
    ("manifest-bitflip", lambda d: flip(MANIFEST(d), os.path.getsize(MANIFEST(d)) // 2),
     [(V, 1, r"manifest file://\S+-m0\.avro"), (T, 1, r"manifest file://\S+-m0\.avro"),
      (C, 1, r"manifest file://\S+-m0\.avro")], None),
    ("manifest-list-truncated", lambda d: truncate(MLIST(d)),
     [(V, 1, r"manifest list file://\S+snap-\S+\.avro"), (T, 1, r"manifest list file://\S+snap-"),
      (P, 1, r"commit failed: .*manifest list file://\S+snap-"), (C, 1, r"manifest list file://\S+snap-")],
     [(None, from_log), (P, 0, r"no checkpoint: starting at the beginning of the log"), (V, 0, None)]),
    ("manifest-list-bitflip-sync", lambda d: flip(MLIST(d), -1),
     [(V, 1, r"manifest list file://\S+snap-"), (T, 1, r"manifest list file://\S+snap-"),
      (P, 1, r"manifest list file://\S+snap-")], None),
    ("metadata-truncated", lambda d: truncate(META(d)),
     [(V, 1, r"metadata file \S+\.metadata\.json does not parse"), (T, 1, r"\.metadata\.json does not parse"),
      (P, 1, r"\.metadata\.json does not parse")], None),
    ("metadata-bitflip-syntax", lambda d: flip(META(d), 0),
     [(V, 1, r"metadata file \S+\.metadata\.json does not parse"), (P, 1, r"\.metadata\.json does not parse")],
     None),
    ("metadata-bitflip-snapshot-id", lambda d: flip_json_key(META(d), "current-snapshot-id"),
     [(V, 1, r"\S+\.metadata\.json"), (T, 1, r"\S+\.metadata\.json"), (P, 1, r"\S+\.metadata\.json")], None),
    ("parquet-truncated", lambda d: truncate(SPQ(d)),
     [(V, 1, r"data file \S+silver_recentchange/data/\S+\.parquet is \d+ bytes"),
      (C, 1, r"silver_recentchange/data/\S+\.parquet")],
     [(["rebuild"], 0, r"rebuild"), (V, 0, None)]),
    ("parquet-bitflip-footer-length", lambda d: flip(SPQ(d), -6),
     [(V, 1, r"silver_recentchange/data/\S+\.parquet")],
     [(["rebuild"], 0, r"rebuild"), (V, 0, None)]),
    ("parquet-bitflip-data-page", lambda d: flip_page(SPQ(d), "title"),
     [(V, 1, r"page_checksums\s+FAIL .*silver_recentchange/data/\S+\.parquet: row group 0, column "
             r"'title', page 0 at byte \d+: CRC-32 of its \d+ bytes is [0-9a-f]{8}, the page header says")],
     [(["rebuild"], 0, r"rebuild"), (V, 0, None)]),
    ("parquet-missing", lambda d: os.unlink(SPQ(d)),
     [(V, 1, r"silver_recentchange/data/\S+\.parquet"), (C, 1, r"silver_recentchange/data/\S+\.parquet")],
     [(["rebuild"], 0, r"rebuild"), (V, 0, None)]),
    ("bronze-parquet-truncated", lambda d: truncate(BPQ(d)),
     [(V, 1, r"bronze_recentchange/data/\S+\.parquet is \d+ bytes"),
      (["rebuild"], 1, r"bronze_recentchange/data/\S+\.parquet")],
     [(None, from_log), (P, 0, r"no checkpoint: starting at the beginning of the log"), (V, 0, None)]),
    ("segment-truncated", lambda d: truncate(os.path.join(d, SEG)),
     [(P, 1, r"\S+\.seg: corrupt data at byte \d+"), (I, 1, r"\S+\.seg: .*acknowledged durable"),
      (["log", "dump", "--topic", "recentchange"], 1, r"\S+\.seg")], None),
    ("segment-bitflip", lambda d: flip(os.path.join(d, SEG), os.path.getsize(os.path.join(d, SEG)) // 2),
     [(P, 1, r"\S+\.seg: checksum mismatch at byte \d+"), (I, 1, r"\S+\.seg: checksum mismatch"),
      (["log", "dump", "--topic", "recentchange"], 1, r"\S+\.seg")], None),
    ("checkpoint-truncated", lambda d: truncate(os.path.join(d, "process/freshet/checkpoint")),
     [(P, 1, r"checkpoint in \S+ is damaged.*move \S+/checkpoint aside")],
     [(None, ck_aside), (P, 0, r"epoch 2 \(already in the lake"), (V, 0, None)]),
    ("checkpoint-bitflip", lambda d: flip(os.path.join(d, "process/freshet/checkpoint"), 40),
     [(P, 1, r"checkpoint in \S+ is damaged")],
     [(None, ck_aside), (P, 0, r"epoch 3:"), (V, 0, None)]),
    ("wal-truncated", lambda d: truncate(os.path.join(d, "process/freshet/offsets.wal")),
     [(P, 0, r"offsets\.wal: cut \d+ bytes of a torn or damaged tail"), (V, 0, None)], None),
    ("wal-bitflip-last", lambda d: flip(WAL(d), os.path.getsize(WAL(d)) - 6),
     [(P, 0, r"offsets\.wal: cut \d+ bytes of a torn or damaged tail"), (V, 0, None)], None),
    ("wal-bitflip", lambda d: flip(WAL(d), 30),
     [(P, 1, r"offsets\.wal: damaged entry at byte 0, and a whole entry follows at byte 36: not a torn "
             r"tail.*move \S+offsets\.wal aside"),
      (P, 1, r"offsets\.wal: damaged entry at byte 0")],
     [(None, wal_aside), (P, 0, r"epoch 3:"), (V, 0, None)]),
    ("catalog-truncated", lambda d: truncate(os.path.join(d, "lake/catalog.db")),
     [(V, 1, r"catalog \S+catalog\.db: .*malformed"), (T, 1, r"catalog\.db"), (P, 1, r"catalog\.db")], None),
    ("catalog-bitflip-header", lambda d: flip(os.path.join(d, "lake/catalog.db"), 3),
     [(V, 1, r"catalog \S+catalog\.db: .*not a database"), (P, 1, r"catalog\.db")], None),
    ("catalog-locked", hold_lock,
     [(P, 1, r"catalog \S+catalog\.db: .*database is locked"), (["rebuild"], 1, r"catalog\.db.*locked"),
      (V, 0, None)], None),
]


def main():
    only = set(sys.argv[1:])
    work = tempfile.mkdtemp(prefix="fr-damage.")
    try:
        pristine = build_lake(work)
        for name, damage, runs, recovery in CASES:
            if only and name not in only:
                continue
            d = os.path.join(work, name)
            shutil.copytree(pristine, d, symlinks=True)
            # The lake's metadata holds absolute paths: damage and run at the
            # pristine path (a symlink swap), as verify.sh restores copies.
            os.rename(pristine, pristine + ".keep")
            os.symlink(d, pristine)
            try:
                damage(pristine)
                for args, want, pattern in runs:
                    run(args, pristine, want, pattern, label=name)
                for LK in LOCKERS:
                    LK.kill()
                    LK.wait()
                LOCKERS.clear()
                for step in recovery or []:
                    if step[0] is None:
                        step[1](pristine)
                    else:
                        run(step[0], pristine, step[1], step[2], label=name + " (recovery)")
            finally:
                for LK in LOCKERS:
                    LK.kill()
                    LK.wait()
                LOCKERS.clear()
                os.unlink(pristine)
                os.rename(pristine + ".keep", pristine)
    finally:
        remove_work(work)
    exit_on_failures(failures, "damage checks")
    print("every damage case: the documented exit code, the file named, no crash, hang or RSS past the bound")


if __name__ == "__main__":
    main()
