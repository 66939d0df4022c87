#!/usr/bin/env python3
"""disk_full.py — a full disk at every stage (issue 34 item 3, docs/DAMAGE.md).

The data directory lives on a small tmpfs mounted for this test (root
only; skipped with exit 77 when mounting is not permitted; unmounted at
exit). For each stage — the processor's commit, compaction, rebuild and
dlq replay — and each amount of space left free (0 bytes up to more than
the stage needs, so the disk fills at a different step each time):

  1. the lake is restored to the stage's starting point and a filler file
     takes all but LEAVE bytes of the mount;
  2. the stage runs: it must succeed (exit 0) or stop with exit 1 and a
     clear error that says the disk is full (never a crash, hang, or
     another exit code);
  3. still full: no half-written file looks complete — every Parquet file
     the lake references ends in its footer magic and every metadata file
     it references parses — and `freshet verify` passes (the last commit
     stands whole);
  4. the filler is removed and the stage runs again: exit 0, verify
     passes, and the lake equals a control run's that never saw a full
     disk (rows of every table, dead letters replayed): nothing that was
     acknowledged is lost, nothing lands twice.

Ingest (stage "ingest"): the log fills the disk while ingest reads a feed.
Ingest is crash-only: it must exit 1 saying the disk is full, leave a log
that opens and reads cleanly, and, run again once space is freed, resume
from its last durable record so that the log holds every event a control
ingest on a roomy disk stored (by meta.id; a resume may repeat a few).
The log's own ENOSPC handling is unit-tested in tests/unit/test_log.c
(test_enospc, the model test's ENOSPC budget). Usage: disk_full.py [STAGE...]
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import damage  # noqa: E402  (run, ingest_file, failures)
from fr_testlib import (exit_on_failures, first_lines, remove_work, start_listening,  # noqa: E402
                        synthetic_events)

BIN = damage.BIN
MOUNT_BYTES = 48 << 20
LEAVES = [0, 4096, 16384, 65536, 262144, 1 << 20]
FULL = r"[Nn]o space left|FR_ENOSPC|disk is full|SQLITE_FULL|database or disk is full"
OLD = ["--set", "process.max_event_bytes=4096", "--set", "process.epoch_max_records=700"]
NEW = ["--set", "process.max_event_bytes=1048576", "--set", "process.epoch_max_records=700"]


def sh(*args):
    return subprocess.run(args, capture_output=True, text=True)


def figures(data, args):
    """What the lake holds, for comparing with the control run."""
    out = subprocess.run([BIN, "--data", data] + args + ["verify", "--json"], capture_output=True, text=True)
    try:
        d = json.loads(out.stdout)
    except ValueError:
        return {"verify failed": out.stderr.strip()[-300:]}
    c = {x["name"]: x["figures"] for x in d["checks"]}
    return {"ok": d["ok"], "consumed": d["cut"]["consumed"],
            "tables": {t["name"]: t["rows"] for t in d["cut"]["tables"]},
            "replayed": c["bronze_count"].get("replayed_rows")}


def referenced(data, args):
    out = subprocess.run([BIN, "--data", data] + args + ["tables", "--json", "--files"],
                         capture_output=True, text=True)
    files, metas = [], []
    try:
        t = json.loads(out.stdout)
    except ValueError:
        return None, out.stderr.strip()[-300:]
    for tab in t["tables"]:
        for f in tab.get("data_files") or []:
            files.append(f.get("local_path") or f["path"].replace("file://", ""))
        if tab.get("metadata_file"):
            metas.append(tab["metadata_file"].replace("file://", ""))
    return files, metas


def nothing_half_written(data, args, label):
    files, metas = referenced(data, args)
    if files is None:
        damage.failures.append(f"{label}: `freshet tables` fails on the full disk: {metas}")
        print(f"FAIL {label}: `freshet tables` fails on the full disk: {metas}")
        return
    bad = []
    for f in files:
        with open(f, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - 4))
            if size < 12 or fh.read(4) != b"PAR1":
                bad.append(f)
    for m in metas:
        try:
            json.load(open(m))
        except ValueError:
            bad.append(m)
    if not files:
        bad.append("(no data file referenced at all)")
    if bad:
        damage.failures.append(f"{label}: referenced files are incomplete: {bad[:3]}")
        print(f"FAIL {label}: referenced files are incomplete: {bad[:3]}")


def fill(mount, leave):
    st = os.statvfs(mount)
    free = st.f_bavail * st.f_frsize
    filler = os.path.join(mount, "filler")
    if free > leave:
        with open(filler, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, free - leave)
    return filler


def build(work, mount):
    """The log (3,000 events, oversize ones among them) and three starting points."""
    ev = os.path.join(work, "ev.ndjson")
    synthetic_events(BIN, ev, 21, 3000, "--malformed-rate", "0.02",
                     "--malformed-kinds", "truncated,missing_wiki,oversize", "--oversize-bytes", "6000")
    first = os.path.join(work, "first.ndjson")
    first_lines(ev, first, 2000)
    d = os.path.join(mount, "d")
    damage.ingest_file(work, d, first)
    damage.run(OLD + ["process", "--once"], d, 0, r"epoch 2:", label="setup")
    damage.ingest_file(work, d, ev)
    snaps = {}
    snaps["commit"] = os.path.join(work, "snap-commit")
    shutil.copytree(d, snaps["commit"], symlinks=True)
    damage.run(OLD + ["process", "--once"], d, 0, r"epoch 4:", label="setup")
    snaps["full"] = os.path.join(work, "snap-full")
    shutil.copytree(d, snaps["full"], symlinks=True)
    return d, snaps, ev


STAGES = [  # name, starting point, settings, command, pattern of a success
    ("commit", "commit", OLD, ["process", "--once"], r"epoch 4:"),
    ("compact", "full", OLD, ["compact", "--min-inputs", "2", "--no-expire", "--no-orphans"], r"compacted"),
    ("rebuild", "full", OLD, ["rebuild"], r"rebuild"),
    ("dlq-replay", "full", NEW, ["dlq", "replay", "--reason", "oversize"], r"landed"),
]


def feed_ingest(work, data, events, tag):
    """Serve events (closing at the end) and run ingest until the stream
    ends or ingest exits. Returns (exit code or None if it was stopped, log text)."""
    feed, url = start_listening([BIN, "feed", "--listen", "127.0.0.1:0", "--file", events, "--close-at-end"],
                                "feed", stderr=subprocess.DEVNULL)
    try:
        logf = os.path.join(work, f"ingest-{tag}.log")
        with open(logf, "w") as lf:
            ing = subprocess.Popen([BIN, "--data", data, "--set", "ingest.stall_timeout_s=5",
                                    "--set", "log.fsync_interval_ms=20", "ingest", "--source", url], stderr=lf)
            rc = None
            for _ in range(1200):
                if ing.poll() is not None:
                    rc = ing.returncode
                    break
                if "stream ended after" in open(logf).read():
                    time.sleep(0.5)  # the group commit
                    break
                time.sleep(0.1)
            if ing.poll() is None:
                ing.send_signal(signal.SIGTERM)
                ing.wait(timeout=30)
            elif rc is None:
                rc = ing.returncode
        return rc, open(logf).read()
    finally:
        feed.kill()
        feed.wait()


def log_ids(data):
    out = subprocess.run([BIN, "--data", data, "log", "dump", "--topic", "recentchange"],
                         capture_output=True, text=True)
    ids = []
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        payload = rec["payload"]
        try:
            ids.append((payload if isinstance(payload, dict) else json.loads(payload))["meta"]["id"])
        except (ValueError, KeyError, TypeError):
            ids.append(rec["payload"] if isinstance(rec["payload"], str) else json.dumps(rec["payload"]))
    return out.returncode, ids


def ingest_stage(work, mount, ev):
    ctl = os.path.join(work, "ingest-control")
    feed_ingest(work, ctl, ev, "control")
    rc, want = log_ids(ctl)
    assert rc == 0 and want, "the control ingest stored nothing"
    global_stops = 0
    for leave in (0, 65536, 1 << 20, 3 << 20):
        label = f"ingest, {leave} bytes free"
        d = os.path.join(mount, "ing")
        shutil.rmtree(d, ignore_errors=True)
        filler = fill(mount, leave)
        rc, text = feed_ingest(work, d, ev, f"full-{leave}")
        problems = []
        if rc == 1:
            global_stops += 1
            if not re.search(FULL, text):
                problems.append("exit 1 without saying the disk is full")
        elif rc is not None:
            problems.append(f"exit {rc}")
        if damage.SANITIZER.search(text):
            problems.append("sanitizer report")
        os.unlink(filler)
        drc, before = log_ids(d)
        if drc != 0:
            problems.append("the log left by the full disk does not read cleanly")
        rc2, text2 = feed_ingest(work, d, ev, f"resume-{leave}")
        if rc2 not in (None, 0):
            problems.append(f"the resumed ingest exited {rc2}")
        drc, got = log_ids(d)
        missing = set(want) - set(got)
        if drc != 0 or missing:
            problems.append(f"after resuming: {len(missing)} of the control's {len(want)} events missing")
        if problems:
            damage.failures.append(f"{label}: {'; '.join(problems)}")
            print(f"FAIL {label}: {'; '.join(problems)}\n" + "\n".join("     | " + l for l in text.splitlines()[-6:]))
        else:
            said = next((l for l in text.splitlines() if re.search(FULL, l)), "")
            said = re.sub(r"^\S+Z freshet\[\d+\] ", "", said)[:200]
            print(f"ok   {label}: exit {rc}, {len(before)} records before the wall; resumed to "
                  f"{len(got)} (control {len(want)}, none missing)  {said}")
        shutil.rmtree(d, ignore_errors=True)
    return global_stops


def restore(snap, d):
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(snap, d, symlinks=True)


def main():
    only = set(sys.argv[1:])
    if os.geteuid() != 0:
        print("skip: mounting a tmpfs needs root")
        sys.exit(77)
    work = tempfile.mkdtemp(prefix="fr-diskfull.")
    mount = os.path.join(work, "mnt")
    os.mkdir(mount)
    r = sh("mount", "-t", "tmpfs", "-o", f"size={MOUNT_BYTES}", "tmpfs", mount)
    if r.returncode != 0:
        print(f"skip: cannot mount a tmpfs here: {r.stderr.strip()}")
        shutil.rmtree(work, ignore_errors=True)
        sys.exit(77)
    stops = 0
    try:
        d, snaps, ev = build(work, mount)
        if not only or "ingest" in only:
            stops += ingest_stage(work, mount, ev)
        for name, start, conf, cmd, success in STAGES:
            args = conf + cmd
            if only and name not in only:
                continue
            restore(snaps[start], d)
            damage.run(args, d, 0, success, label=f"{name} control")
            want = figures(d, conf)
            for leave in LEAVES:
                label = f"{name}, {leave} bytes free"
                restore(snaps[start], d)
                filler = fill(mount, leave)
                rc, text = damage.run(args, d, None, None, label=label)
                if rc == 1:
                    stops += 1
                    if not re.search(FULL, text):
                        damage.failures.append(f"{label}: exit 1 without saying the disk is full")
                        print(f"FAIL {label}: exit 1 without saying the disk is full")
                elif rc != 0:
                    damage.failures.append(f"{label}: exit {rc}")
                # Still full: verify passes, or cannot even open the catalog
                # (SQLite needs room for its -shm) and says the disk is full.
                rc, text = damage.run(conf + ["verify"], d, None, None, label=label + ", still full")
                if rc == 1 and not re.search(FULL, text):
                    damage.failures.append(f"{label}: verify on the full disk: exit 1, not for the disk")
                    print(f"FAIL {label}: verify on the full disk: exit 1, not for the disk")
                os.unlink(filler)
                # What the stopped run left: the lake it references is whole.
                nothing_half_written(d, conf, label)
                damage.run(conf + ["verify"], d, 0, None, label=label + ", space freed, before resuming")
                damage.run(args, d, 0, None, label=label + ", space freed")
                got = figures(d, conf)
                if got != want:
                    damage.failures.append(f"{label}: after resuming {got}, control {want}")
                    print(f"FAIL {label}: after resuming\n  {got}\n  control {want}")
                else:
                    print(f"ok   {label}: resumed; the lake equals the control's")
    finally:
        sh("umount", "-l", mount)
        remove_work(work)
    exit_on_failures(damage.failures, "disk-full checks")
    if stops == 0:
        print("no run hit the full disk: the test proves nothing")
        sys.exit(1)
    print(f"disk full at every stage: {stops} runs stopped on it, each resumed to the control's lake")


if __name__ == "__main__":
    main()
